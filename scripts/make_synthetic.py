"""`pecan synth` (pecan/commands/synth.py), deprecated (a warning on every run; removed in the next release)."""

import pathlib
import sys

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))  # run from a checkout without installing
from pecan.commands.synth import main  # noqa: E402

if __name__ == "__main__":
    print(
        "warning: scripts/make_synthetic.py is deprecated (removed in the next release): use "
        "`pecan synth` "
        "(the same options)",
        file=sys.stderr,
    )
    sys.exit(main(prog="python scripts/make_synthetic.py"))
