# Two commands stay true on a fresh machine: `make demo` and `make test`.
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
CONSTRAINTS := constraints-cpu.txt

.PHONY: venv demo test test-fast clean-demo

$(PY):
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -c $(CONSTRAINTS) -e '.[dev,trace-native,plots,convert]'

venv: $(PY)

# A shortcut: the app generates the demo shards on first use (configs/demo.yaml's synthetic section).
demo: $(PY)
	$(PY) -u main_app.py configs/demo.yaml $(ARGS)

test: $(PY)
	$(PY) -m pytest -q tests

test-fast: $(PY)
	$(PY) -m pytest -q tests -m "not slow and not multiprocess"

clean-demo:
	rm -rf data/demo runs/demo
