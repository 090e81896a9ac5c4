"""The user's pages and gin files keep the shape WORKSPACE.md gives them.

docs/*.md and README.md are what a user reads, and the comments of the gin
files are the record of a run: no commit hashes and no issue numbers in
either (the measured history with both lives in benchmarks/results/).
Every gin line fits in 100 characters. Plain text checks, no TensorFlow:
this runs in well under a second.
"""

import glob
import os
import re

from absl.testing import absltest

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
USER_PAGES = sorted(glob.glob(os.path.join(REPO_ROOT, 'docs', '*.md')) +
                    [os.path.join(REPO_ROOT, 'README.md')])
GIN_FILES = sorted(glob.glob(os.path.join(REPO_ROOT, 'gin', '**', '*.gin'),
                             recursive=True))
MAX_GIN_LINE = 100

# A short or full commit hash (a link target such as
# r2d2_eval_curves_6624795.png is not matched: `_` is a word character).
COMMIT_HASH = re.compile(r'\b[0-9a-f]{7,40}\b')
# "issue 31", "Issue 31's", "issues 13", "issue #5", also across a line break.
ISSUE_NUMBER = re.compile(r'\bissues?\s+#?\d+', re.IGNORECASE)
# "#31" on its own (not a markdown anchor or a URL fragment).
HASH_NUMBER = re.compile(r'(?<![\w&/])#\d+\b')


def _relative(path):
  return os.path.relpath(path, REPO_ROOT)


def _lab_notebook_marks(text):
  """(line number, matched text) of every hash or issue number in text."""
  matches = sorted((match.start(), match.group())
                   for pattern in (COMMIT_HASH, ISSUE_NUMBER, HASH_NUMBER)
                   for match in pattern.finditer(text))
  return [(text.count('\n', 0, start) + 1, ' '.join(found.split()))
          for start, found in matches]


def _gin_comments(text):
  """text with everything but gin comments blanked, line for line.

  A comment starts at a `#` outside a quoted string and runs to the end of
  its line; blanked lines keep their place, so line numbers still match.
  """
  comments = []
  for line in text.split('\n'):
    quote = None
    comment = ''
    for index, char in enumerate(line):
      if quote:
        if char == quote:
          quote = None
      elif char in '\'"':
        quote = char
      elif char == '#':
        comment = line[index:]
        break
    comments.append(comment)
  return '\n'.join(comments)


def _read(path):
  with open(path, encoding='utf-8') as f:
    return f.read()


class UserPagesTest(absltest.TestCase):

  def test_pages_exist(self):
    names = {_relative(path) for path in USER_PAGES}
    self.assertContainsSubset({'README.md', 'docs/performance.md'}, names)

  def test_no_commit_hashes_or_issue_numbers(self):
    found = []
    for path in USER_PAGES:
      for line, mark in _lab_notebook_marks(_read(path)):
        found.append(f'{_relative(path)}:{line}: {mark}')
    self.assertEmpty(found, 'Commit hashes and issue numbers belong in '
                     'benchmarks/results/, not in a user page:\n' +
                     '\n'.join(found))

  def test_the_patterns_catch_what_they_should(self):
    text = ('at commit 3c06df7, then\nafter issue\n31 and Issue 13, '
            'issue #5, #17; not r2d2.md#results, 1,000 or curves_6624795.png')
    self.assertEqual(
        [mark for _, mark in _lab_notebook_marks(text)],
        ['3c06df7', 'issue 31', 'Issue 13', 'issue #5', '#5', '#17'])


class GinFilesTest(absltest.TestCase):

  def test_gin_files_exist(self):
    self.assertNotEmpty(GIN_FILES)

  def test_every_line_fits(self):
    long_lines = []
    for path in GIN_FILES:
      for number, line in enumerate(_read(path).splitlines(), start=1):
        if len(line) > MAX_GIN_LINE:
          long_lines.append(f'{_relative(path)}:{number}: {len(line)} chars')
    self.assertEmpty(long_lines, f'gin lines over {MAX_GIN_LINE} characters '
                     '(one short "paper: X" or "ours: why" comment per '
                     'value; a longer reason goes on the agent\'s docs '
                     'page):\n' + '\n'.join(long_lines))

  def test_no_commit_hashes_or_issue_numbers_in_comments(self):
    found = []
    for path in GIN_FILES:
      for line, mark in _lab_notebook_marks(_gin_comments(_read(path))):
        found.append(f'{_relative(path)}:{line}: {mark}')
    self.assertEmpty(found, 'A gin comment gives the unit and source of a '
                     'value ("paper: X", "ours: why"); the trials, with their '
                     'commits and issues, belong in benchmarks/results/:\n' +
                     '\n'.join(found))

  def test_only_comments_are_read(self):
    text = ("BSUITE_ID = 'bsuite/#17'  # issue 31\n"
            "x = 1234567\n"
            "# at commit 3c06df7\n"
            'y = "a # b"  # #5')
    self.assertEqual(_gin_comments(text).split('\n'),
                     ['# issue 31', '', '# at commit 3c06df7', '# #5'])
    self.assertEqual(
        _lab_notebook_marks(_gin_comments(text)),
        [(1, 'issue 31'), (3, '3c06df7'), (4, '#5')])


if __name__ == '__main__':
  absltest.main()
