"""Benchmarks, run from the repository root as modules (``python -m benchmarks.bench_loader ...``); their JSON
outputs live beside them and BENCHMARKS.md gives the command behind each figure."""
