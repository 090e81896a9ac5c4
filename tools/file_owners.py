#!/usr/bin/env python3
"""Fails when two installed distributions own the same file.

`pip check` compares requirements only: two distributions that install
the same module (pygame and pygame-ce both write site-packages/pygame/)
pass it, and whichever was installed last silently wins; uninstalling
either then breaks the other. Each distribution's RECORD lists the files
it installed; a path in two RECORDs with different contents (hashes) is
such a clash. The same contents twice is not: tensorflow and tensorboard
both declare the `tensorboard` console script, and write the same file.

  python tools/file_owners.py   # exit 1 and one line per clash, else 0
"""

import collections
from importlib import metadata
import os
import sys
from typing import Dict, Iterable, List, Sequence

# Written by the installer for each distribution, or regenerated: never
# two owners of one module.
_IGNORED_SUFFIXES = ('.pyc',)


def shared_files(distributions: Iterable[metadata.Distribution]
                 ) -> Dict[str, List[str]]:
  """{installed path: names of the distributions whose RECORD lists it},
  for every path that distributions list with different hashes (or
  without one)."""
  owners = collections.defaultdict(dict)  # path: {name: hash}
  for distribution in distributions:
    name = distribution.metadata['Name']
    for file in distribution.files or ():
      if str(file).endswith(_IGNORED_SUFFIXES):
        continue
      path = os.path.normpath(str(file.locate()))
      owners[path][name] = file.hash.value if file.hash else None
  return {path: sorted(hashes) for path, hashes in sorted(owners.items())
          if len(hashes) > 1 and (None in hashes.values() or
                                  len(set(hashes.values())) > 1)}


def clash_lines(shared: Dict[str, Sequence[str]]) -> List[str]:
  """One line per group of distributions sharing files."""
  by_owners = collections.defaultdict(list)
  for path, names in shared.items():
    by_owners[tuple(names)].append(path)
  return [f'{" and ".join(names)} install {len(paths)} of the same files '
          f'with different contents, e.g. {paths[0]}'
          for names, paths in sorted(by_owners.items())]


def main() -> int:
  lines = clash_lines(shared_files(metadata.distributions()))
  for line in lines:
    print(f'file owners: {line}', file=sys.stderr)
  if lines:
    return 1
  print('file owners: no file belongs to two installed distributions')
  return 0


if __name__ == '__main__':
  sys.exit(main())
