"""The `pecan` command: `pecan SUBCOMMAND [options]`, also `python -m pecan`.

Each subcommand lives in its own module with ``main(argv, prog) -> int`` and is imported only when it is
run, so `pecan --help` stays fast and a command's optional dependencies (RDKit for convert, Vina for
redock) are needed only by that command. To add one: a module under ``pecan/commands`` and a row here.
"""

from __future__ import annotations

import importlib
import logging
import os
import sys

# name -> (module with main(argv, prog), one-line help). Order is the order of `pecan --help`.
COMMANDS: dict[str, tuple[str, str]] = {
    "train": ("pecan.commands.train", "train a model from a YAML config (same as python main_app.py CONFIG)"),
    "predict": ("pecan.commands.predict", "score docked poses in shards with a checkpoint (no YAML needed)"),
    "score": ("pecan.commands.score", "score a receptor + SDF of poses (or a manifest); poses back as SDF"),
    "runs": ("pecan.commands.runs", "compare, plot, report or trace run directories (pecan runs --help)"),
    "convert": ("pecan.commands.convert", "docking output listed in a manifest CSV -> shards (convert extra)"),
    "pack": ("pecan.commands.pack", "build the packs of a run's shards ahead of time"),
    "synth": ("pecan.commands.synth", "write a deterministic synthetic data set (shards + index CSV)"),
    "config": ("pecan.commands.config", "print the resolved config of CONFIG, or --keys: every key with its doc"),
    "redock": ("pecan.commands.redock", "redock crystal ligands with AutoDock Vina into poses convert reads"),
    "sources": ("pecan.commands.sources", "PDBbind folders or CrossDocked2020 types files -> redock/convert manifests"),
}


QUICK_EXIT = ("score",)
"""Commands whose process ends without the interpreter's teardown (``run``)."""


def usage() -> str:
    """The top-level help text: every subcommand with its one-line help."""
    width = max(len(name) for name in COMMANDS)
    rows = "\n".join(f"  {name:<{width}}  {text}" for name, (_, text) in COMMANDS.items())
    return f"usage: pecan SUBCOMMAND [options]   (pecan SUBCOMMAND --help for its options)\n\nsubcommands:\n{rows}\n"


def main(argv=None) -> int:
    """Dispatch to a subcommand; no subcommand or --help prints the list."""
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv or argv[0] in ("-h", "--help", "help"):
        print(usage(), end="")
        return 0
    name, rest = argv[0], argv[1:]
    if name not in COMMANDS:
        print(f"pecan: unknown subcommand {name!r}; valid: {', '.join(COMMANDS)}\n\n{usage()}", file=sys.stderr, end="")
        return 2
    module = importlib.import_module(COMMANDS[name][0])
    return module.main(rest, prog=f"pecan {name}")


def run() -> None:
    """The `pecan` process (console script and ``python -m pecan``): ``main``, then exit with its code.

    After `pecan score`, whose outputs are committed (written, closed and renamed) before ``main`` returns,
    the interpreter's teardown is skipped: stdout, stderr and the logs are flushed, then ``os._exit``.
    Clearing the modules of torch, pandas, RDKit and ProLIF takes ~1 s, a fifth of a 1,000-pose screen's
    wall time; no command here leaves work to an exit handler."""
    code = main()
    if sys.argv[1:2] and sys.argv[1] in QUICK_EXIT:
        logging.shutdown()
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except (OSError, ValueError):  # a closed pipe: nothing more can reach it
                pass
        os._exit(code)
    sys.exit(code)
