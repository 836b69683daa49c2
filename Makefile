# Two commands stay true on a fresh machine: `make demo` and `make test`.
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
CONSTRAINTS := constraints-cpu.txt

.PHONY: venv demo test test-fast clean-demo

$(PY):
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -c $(CONSTRAINTS) -e '.[dev,trace-native,convert]'

venv: $(PY)

# Generates the demo shards on first use (data/demo, not committed), then trains.
demo: $(PY)
	$(PY) scripts/make_synthetic.py --config configs/demo.yaml --shards 4 --complexes-per-shard 12
	$(PY) -u main_app.py configs/demo.yaml $(ARGS)

test: $(PY)
	$(PY) -m pytest -q tests

test-fast: $(PY)
	$(PY) -m pytest -q tests -m "not slow and not multiprocess"

clean-demo:
	rm -rf data/demo runs/demo
