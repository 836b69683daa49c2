"""Release tooling for the shipped model (not part of the installed package): slimming a trained checkpoint to
what scoring reads, with portable paths (``release.checkpoint``), and writing its model card (``release.card``).
studies/corpus/ship.py builds pecan/pretrained/ with them; tests/release/ tests them as product."""
