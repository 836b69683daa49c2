"""PECAN: EGNN protein-ligand pose classification on HDF5 shards, built for HPC file systems."""

from setuptools import find_packages, setup

setup(
    name="pecan",
    version="0.1.0",
    description="E(n)-equivariant GNN training for docked pose classification on HPC clusters",
    packages=find_packages(include=["pecan", "pecan.*", "model", "model.*"]),
    py_modules=["main_app"],
    # The shipped pretrained model, its card and its description (pecan score's default checkpoint and weight).
    package_data={"pecan.pretrained": ["*.pt", "*.md", "*.json"]},
    python_requires=">=3.9",
    install_requires=[
        "torch>=2.4",
        "torch-geometric>=2.5",
        "h5py>=3.8",
        "pyyaml>=6",
        "pandas>=1.5",
        "numpy>=1.23",
        "pydftracer>=2.0",
        "tqdm>=4.60",
        # Slurm/flux host lists and tasks-per-node (pecan/engine/hostlist.py).
        "python-hostlist>=1.23",
        # Physical cores (pecan/engine/distributed.py physical_cores).
        "psutil>=5.9",
    ],
    extras_require={
        "trace-native": ["dftracer>=2.0"],
        "pyg-ext": ["torch-scatter", "torch-sparse"],
        "dev": ["pytest>=7", "pytest-xdist>=3.5", "ruff==0.17.6"],
        "plots": ["matplotlib>=3.5", "tensorboard>=2.10"],
        # Structure conversion (pecan convert); never imported by training.
        "convert": ["rdkit>=2023.9", "prolif>=2.0"],
        # Redocking crystal complexes (pecan redock); PDB receptors also need Open Babel's obabel command.
        "dock": ["vina>=1.2.5", "meeko>=0.5", "rdkit>=2023.9"],
        "mutation": ["mutmut>=3.3,<4"],
        # The parallel-file-system stand-in of benchmarks/slowfs.py (also needs libfuse3: Debian fuse3).
        "bench": ["mfusepy>=3.1"],
        # pecan redock --engine dask: jobs on a running Dask cluster (pure-Python wheels, no MPI library).
        "dist": ["distributed>=2024.1"],
    },
    entry_points={"console_scripts": ["pecan=pecan.cli:run"]},
)
