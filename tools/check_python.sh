#!/usr/bin/env bash
# Exits non-zero with one line when the interpreter cannot host tfa_explore.
py="$1"
if [ -z "$py" ] || ! command -v "$py" >/dev/null 2>&1; then
  echo "tfa_explore needs Python 3.9-3.11 (python3.11 recommended); none found. Install it or run: make PYTHON=/path/to/python3.11 ..." >&2
  exit 1
fi
version=$("$py" -c 'import sys; print("%d.%d" % sys.version_info[:2])')
case "$version" in
  3.9|3.10|3.11) exit 0 ;;
  *) echo "tfa_explore needs Python 3.9-3.11 (dm-reverb 0.14 has no wheels for $version); $py is $version. Run: make PYTHON=/path/to/python3.11 ..." >&2
     exit 1 ;;
esac
