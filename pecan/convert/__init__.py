"""Convert receptor PDBs, crystal ligands and docking poses into PECAN shards (RDKit + ProLIF).

Needs the optional extra: ``pip install -e '.[convert]'``. The training path never imports this package.
"""
