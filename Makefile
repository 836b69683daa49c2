# Two commands stay true on a fresh machine: `make demo` and `make test`.
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
CONSTRAINTS := constraints-cpu.txt

.PHONY: venv demo lint test test-fast mutation mutation-results clean-demo

$(PY):
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -c $(CONSTRAINTS) -e '.[dev,trace-native,plots,convert,dock,dist,bench]'

venv: $(PY)

# A shortcut: the app generates the demo shards on first use (configs/demo.yaml's synthetic section).
demo: $(PY)
	$(PY) -u main_app.py configs/demo.yaml $(ARGS)

# Lint first (ruff.toml: pycodestyle, pyflakes, import order; and the formatter's check), then every test,
# with the slowest listed at the end. Tests run in TEST_WORKERS processes (pytest-xdist; "auto": one per
# core); TEST_WORKERS=0 runs them in this process.
TEST_WORKERS ?= auto
lint: $(PY)
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .

test: lint
	$(PY) -m pytest -q -n $(TEST_WORKERS) --dist worksteal --durations=15 tests

# The fast path still runs one 2-rank DDP test (marker ddp_smoke), so DDP bugs are caught here too.
test-fast: lint
	$(PY) -m pytest -q -n $(TEST_WORKERS) --dist worksteal tests -m "(not slow and not multiprocess) or ddp_smoke"

# Mutation testing of the core functions (slow; not part of `make test`): setup.cfg [mutmut] holds the
# config, scripts/mutation.sh the functions per module; results in docs/mutation-report.md.
# One module: make mutation MODULES=metrics
MUTATION_JOBS ?= 2
MODULES ?=
mutation: $(PY)
	$(PY) -m pip install -q -c $(CONSTRAINTS) 'mutmut>=3.3,<4'
	MUTMUT=$(VENV)/bin/mutmut MUTATION_JOBS=$(MUTATION_JOBS) bash scripts/mutation.sh $(MODULES)
	$(VENV)/bin/mutmut results

mutation-results: $(PY)
	$(VENV)/bin/mutmut results

clean-demo:
	rm -rf data/demo runs/demo
