"""`pecan convert` (pecan/commands/convert.py), deprecated (a warning on every run; removed in the next release)."""

import pathlib
import sys

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))  # run from a checkout without installing
from pecan.commands.convert import main  # noqa: E402

if __name__ == "__main__":
    print(
        "warning: scripts/convert_structures.py is deprecated (removed in the next release): use "
        "`pecan convert` "
        "(the same options)",
        file=sys.stderr,
    )
    sys.exit(main(prog="python scripts/convert_structures.py"))
