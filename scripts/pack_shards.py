"""`pecan pack` (pecan/commands/pack.py), kept so that existing command lines keep working."""

import pathlib
import sys

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))  # run from a checkout without installing
from pecan.commands.pack import main  # noqa: E402

if __name__ == "__main__":
    sys.exit(main(prog="python scripts/pack_shards.py"))
