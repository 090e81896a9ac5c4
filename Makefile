# Two commands for a fresh machine: `make train` and `make test`.
# Both create .venv (with Python 3.9-3.11) and install tfa_explore into it.
PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV := .venv
VPY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
TRAIN_GIN ?= gin/rnd_ppo/mountaincar.gin
TRAIN_DIR ?= runs/$(basename $(subst /,_,$(subst gin/,,$(TRAIN_GIN))))
PYTEST_ARGS ?=
# pytest-xdist workers; TEST_WORKERS=0 runs the tests in one process.
TEST_WORKERS ?= 2
# VERBOSE=1: the binaries print everything TensorFlow and its libraries do.
VERBOSE ?=

.PHONY: train test test-fast wheel-check install clean-venv

install: $(STAMP)

# pygame-ce alone owns the pygame module: an empty pygame 2.1.3 stands in
# for tf-agents' unused requirement (tools/pygame_stub/setup.py), and
# pygame-ce is reinstalled in case an older venv had both write pygame/.
$(STAMP): setup.py constraints.txt tools/pygame_stub/setup.py
	@bash tools/check_python.sh "$(PYTHON)"
	@test -x $(VPY) || $(PYTHON) -m venv $(VENV)
	$(VPY) -m pip install --quiet --upgrade pip
	$(VPY) -m pip install --quiet --force-reinstall --no-deps ./tools/pygame_stub
	$(VPY) -m pip install --quiet -c constraints.txt -e '.[test,ray,bsuite]'
	$(VPY) -m pip install --quiet --force-reinstall --no-deps -c constraints.txt pygame-ce
	$(VPY) tools/file_owners.py
	@touch $(STAMP)

# Default training job; TensorBoard logs under runs/ (tensorboard --logdir runs).
# `make train VERBOSE=1` passes --verbose (TensorFlow's logs, for debugging).
train: $(STAMP)
	$(VPY) train/train_eval.py --root_dir=$(TRAIN_DIR) --gin_file=$(TRAIN_GIN)$(if $(filter-out 0 false no,$(VERBOSE)), --verbose)

# Everything: unit tests, whole runs (marked integration) and learning
# tests (marked slow).
test: $(STAMP)
	$(VPY) -m pytest tests -n $(TEST_WORKERS) --dist worksteal $(PYTEST_ARGS)

# Unit tests only, for iterating.
test-fast: $(STAMP)
	$(VPY) -m pytest tests -m "not slow and not integration" -n $(TEST_WORKERS) --dist worksteal $(PYTEST_ARGS)

# The wheel in a fresh venv, run from outside the checkout (tools/wheel_check.sh).
wheel-check:
	PYTHON=$(PYTHON) bash tools/wheel_check.sh

clean-venv:
	rm -rf $(VENV)
