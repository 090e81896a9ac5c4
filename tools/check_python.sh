#!/usr/bin/env bash
# Exits non-zero with one line when the interpreter cannot host tfa_explore.
py="$1"
hint="Install Python 3.11 or run: make PYTHON=/path/to/python3.11 ..."
if [ -z "$py" ] || ! command -v "$py" >/dev/null 2>&1; then
  echo "tfa_explore needs Python 3.9-3.11 (python3.11 recommended); '$py' was not found. $hint" >&2
  exit 1
fi
version=$("$py" -c 'import sys; print("%d.%d" % sys.version_info[:2])' 2>/dev/null)
case "$version" in
  3.9|3.10|3.11) ;;
  "") echo "tfa_explore needs Python 3.9-3.11; '$py' does not run. $hint" >&2
      exit 1 ;;
  *) echo "tfa_explore needs Python 3.9-3.11 (dm-reverb 0.14 has no wheels for $version); '$py' is Python $version. $hint" >&2
     exit 1 ;;
esac
if ! "$py" -c 'import venv, ensurepip' >/dev/null 2>&1; then
  echo "'$py' lacks the venv/ensurepip modules (on Debian/Ubuntu: apt-get install python${version}-venv)." >&2
  exit 1
fi
