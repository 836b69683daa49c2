"""`pecan pack` (pecan/commands/pack.py), deprecated (a warning on every run; removed in the next release)."""

import pathlib
import sys

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))  # run from a checkout without installing
from pecan.commands.pack import main  # noqa: E402

if __name__ == "__main__":
    print(
        "warning: scripts/pack_shards.py is deprecated (removed in the next release): use "
        "`pecan pack` "
        "(the same options)",
        file=sys.stderr,
    )
    sys.exit(main(prog="python scripts/pack_shards.py"))
