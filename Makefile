# Two commands stay true on a fresh machine: `make demo` and `make test`.
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
CONSTRAINTS := constraints-cpu.txt

.PHONY: venv demo test test-fast mutation mutation-results clean-demo

$(PY):
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -c $(CONSTRAINTS) -e '.[dev,trace-native]'

venv: $(PY)

# Generates the demo shards on first use (data/demo, not committed), then trains.
demo: $(PY)
	$(PY) scripts/make_synthetic.py --config configs/demo.yaml --shards 4 --complexes-per-shard 12
	$(PY) -u main_app.py configs/demo.yaml $(ARGS)

test: $(PY)
	$(PY) -m pytest -q tests

# The fast path still runs one 2-rank DDP test (marker ddp_smoke), so DDP bugs are caught here too.
test-fast: $(PY)
	$(PY) -m pytest -q tests -m "(not slow and not multiprocess) or ddp_smoke"

# Mutation testing of the core functions (slow; not part of `make test`). Configured in setup.cfg [mutmut];
# results in docs/mutation-report.md. Narrow it with MUTANTS='pecan.train.metrics.*', widen MUTATION_JOBS.
MUTATION_JOBS ?= 2
MUTANTS ?= \
	'pecan.data.graph.*' \
	'pecan.data.index.x__label_from*' 'pecan.data.index.x_normalise*' 'pecan.data.index.x_read_index_csv*' \
	'pecan.data.index.x__attr*' 'pecan.data.index.x__pose_row*' 'pecan.data.index.x__complex_rows*' \
	'pecan.data.index.x_derive_index*' 'pecan.data.index.x_build_index*' 'pecan.data.index.x_split_by_complex*' \
	'pecan.data.packed.x_gather_batch*' 'pecan.data.packed.x_to_batch*' \
	'pecan.data.sampler.*' \
	'pecan.train.metrics.*' \
	'pecan.train.checkpoint.*' \
	'pecan.train.trainer.xǁTrainerǁtrain_step*' 'pecan.train.trainer.xǁTrainerǁkeep_in_step*' \
	'pecan.train.trainer.xǁTrainerǁforward_loss*' 'pecan.train.trainer.xǁTrainerǁpredict*' \
	'pecan.train.trainer.xǁTrainerǁevaluate*' 'pecan.train.trainer.xǁTrainerǁmaybe_resume*' \
	'model.egnn.xǁEGNNLayerǁforward*' 'model.egnn.xǁEGNNLayerǁmessage*' 'model.egnn.xǁEGNNLayerǁaggregate*' \
	'model.egnn.xǁGaussianDistanceExpansionǁforward*' 'model.egnn.x_ligand_pool*' \
	'pecan.config.x__coerce*' 'pecan.config.x__build_section*' 'pecan.config.x_from_dict*' \
	'pecan.config.x_parse_override*' 'pecan.config.x_load*' 'pecan.config.x_env_flag*' 'pecan.config.x_validate*'

mutation: $(PY)
	$(PY) -m pip install -q -c $(CONSTRAINTS) 'mutmut>=3.3,<4'
	PYTHONPATH= OMP_NUM_THREADS=1 $(VENV)/bin/mutmut run --max-children $(MUTATION_JOBS) $(MUTANTS)
	$(VENV)/bin/mutmut results

mutation-results: $(PY)
	$(VENV)/bin/mutmut results

clean-demo:
	rm -rf data/demo runs/demo
