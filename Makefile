# Every target sets up .venv first if needed (tools/setup_env.sh is idempotent).
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
SETUP_STAMP := $(VENV)/.mmdet_pu-setup
export OMP_NUM_THREADS ?= 2
# test workers (pytest-xdist): one per core by default, each pinned to its core (tests/conftest.py)
TEST_WORKERS ?= auto

.PHONY: setup demo demo-multi test lint bench clean

setup: $(SETUP_STAMP)

$(SETUP_STAMP): setup.cfg setup.py pyproject.toml tools/setup_env.sh
	PYTHON=$(PYTHON) VENV=$(VENV) bash tools/setup_env.sh
	touch $@

## The main job on built-in synthetic data: CE vs naive PU vs PU vs upper bound.
demo: setup
	$(PY) tools/demo.py --variant binary

## Multi-class demo: MultiPULoss (class priors estimated with tools/estimate_prior.py) vs CE.
demo-multi: setup
	$(PY) tools/demo.py --variant multi

## The test suite.
test: setup
	$(PY) -m pytest -q -n $(TEST_WORKERS) --dist loadfile --no-loadscope-reorder tests

## Style check of the code (setup.cfg [flake8]).
lint: setup
	$(PY) -m flake8 cellio mmdet_pu studies data_prep tools tests benchmarks configs

## Benchmarks of benchmarks/README.md.
bench: setup
	$(PY) benchmarks/run_all.py

clean:
	rm -rf work_dirs .pytest_cache
