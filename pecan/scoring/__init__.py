"""Scoring poses with a trained checkpoint: every function `pecan predict`, `pecan score` and training's
evaluation share. What training shares with it (the checkpoint state and its pins, the evaluation loop,
device and process set-up, AMP) is one floor down, in ``pecan.engine``.

- ``checkpoint``: reading a checkpoint, the config scoring runs under, the model with its weights.
- ``shards``: the shard scoring run (`pecan predict`): scores.csv and metrics.
- ``report``: the per-split figures; ``sdf``: scored poses back as SDF (RDKit).
- ``poses``: `pecan score` (docking output in, scored SDF out); ``memory``: its in-memory graphs;
  ``invocation``: its command line checked before the model loads; ``pdbqt``, ``score_table``: Vina's PDBQT
  poses and docking scores from a CSV.

Importing the package loads none of them: each module is imported where it is used.
"""
