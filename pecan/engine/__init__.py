"""What training and scoring share, one floor below both: neither imports the other.

- ``state``: the typed checkpoint (``CheckpointState``: what the trainer writes and every reader takes
  fields from, with its format version); ``checkpoint``: the file I/O (atomic save, safe load, wrapper
  prefixes, RNG states).
- ``pins``: what a checkpoint pins for scoring (sample settings, trained/validated complexes, the
  training-data record).
- ``harness``: the run harness every command that runs a job goes through (process set-up, per-rank logs,
  signals, exit code, clean-up).
- ``launchers``: rank discovery (no torch import); ``distributed``: process-group and device set-up, thread
  planning; ``hostlist``: Slurm and Flux host lists.
- ``amp``: the autocast choice; ``evaluate``: the evaluation loop; ``metrics``: ROC AUC and the ranking
  figures.

Importing the package loads none of them.
"""
