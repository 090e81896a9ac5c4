#!/usr/bin/env bash
# The package as `pip install` gives it: a wheel of this tree, installed with
# its pinned dependencies into a fresh venv, then run from outside the
# checkout. Checks: the wheel holds every shipped gin file and binary,
# `pip check` is clean, no file belongs to two installed distributions
# (tools/file_owners.py), and one shipped file of each loop (PPO, included by
# a user's file there; R2D2 with its Reverb replay) trains a few hundred env
# steps and saves a checkpoint.
# Usage: bash tools/wheel_check.sh   (or `make wheel-check`; CI runs it).
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON="${PYTHON:-$(command -v python3.11 || command -v python3)}"
work="$(mktemp -d "${TMPDIR:-/tmp}/tfa_explore_wheel.XXXXXX")"
trap 'rm -rf "$work"' EXIT

# The build runs on a copy, so the checkout gets no build/ or egg-info.
mkdir -p "$work/source"
tar --exclude=./.git --exclude=./.venv --exclude=./runs --exclude=./build \
    --exclude='*.egg-info' --exclude='__pycache__' -cf - . |
  tar -xf - -C "$work/source"
"$PYTHON" -m venv "$work/venv"
venv_python="$work/venv/bin/python"
"$venv_python" -m pip install --quiet --upgrade pip setuptools wheel
"$venv_python" -m pip wheel --quiet --no-deps -w "$work/wheels" "$work/source"
wheel="$(ls "$work"/wheels/tfa_explore-*.whl)"
"$venv_python" - "$wheel" <<'EOF'
import glob, os, sys, zipfile
names = zipfile.ZipFile(sys.argv[1]).namelist()
shipped = sorted(glob.glob(os.path.join('gin', '*', '*.gin')))
in_wheel = sorted(n.split('/share/tfa_explore/', 1)[1] for n in names
                  if '/share/tfa_explore/gin/' in n)
binaries = sorted(os.path.basename(p) for p in glob.glob('train/*.py'))
scripts = sorted(os.path.basename(n) for n in names if '.data/scripts/' in n)
missing = sorted(set(shipped) - set(in_wheel)) + sorted(
    set(binaries) - set(scripts))
if missing:
  sys.exit(f'wheel check: the wheel lacks {", ".join(missing)}')
print(f'wheel check: {os.path.basename(sys.argv[1])} holds '
      f'{len(in_wheel)} gin files and {len(scripts)} binaries')
EOF
# As the Makefile: pygame-ce alone owns the pygame module.
"$venv_python" -m pip install --quiet --no-deps "$work/source/tools/pygame_stub"
"$venv_python" -m pip install --quiet -c constraints.txt "$wheel"
"$venv_python" -m pip check
"$venv_python" tools/file_owners.py

elsewhere="$work/elsewhere"
mkdir -p "$elsewhere"
cd "$elsewhere"
"$venv_python" -c 'import tfa_explore, sys; p = tfa_explore.__file__; sys.exit(0 if "/site-packages/" in p else "imported from " + p); ' \
  || { echo 'wheel check: tfa_explore was not imported from the venv'; exit 1; }
run() {
  local name="$1"; shift
  "$work/venv/bin/train_eval.py" --root_dir="$elsewhere/$name" "$@" \
    2> "$elsewhere/$name.log" || {
      tail -n 40 "$elsewhere/$name.log"
      echo "wheel check: $name failed"; exit 1; }
  test -n "$(ls "$elsewhere/$name/checkpoints/"*.index 2>/dev/null)" || {
    tail -n 40 "$elsewhere/$name.log"
    echo "wheel check: $name saved no checkpoint"; exit 1; }
  echo "wheel check: $name trained and saved a checkpoint"
}
# A user's own file here includes a shipped one (found in the wheel's
# share/tfa_explore, as --gin_file finds the shipped files).
printf "include 'gin/ppo/cartpole.gin'\nNUM_ENV_STEPS = 512\n" > mine.gin
run ppo_cartpole --gin_file=mine.gin \
  --gin_bindings='on_policy.Settings.num_eval_episodes = 2'
run r2d2_stateless_cartpole --gin_file=gin/r2d2/stateless_cartpole.gin \
  --gin_bindings='NUM_ENV_STEPS = 600' \
  --gin_bindings='r2d2.Settings.min_size_to_sample = 20' \
  --gin_bindings='r2d2.Settings.envs_per_actor = 4' \
  --gin_bindings='r2d2.Settings.num_eval_episodes = 2'
echo 'wheel check: passed'
