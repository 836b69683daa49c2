"""`pecan convert` starts without torch: the command, the conversion and its worker processes import none of it
(torch's import is most of a converter process's start-up: ~1.6 s each, the main process and every worker)."""

import sys

import pytest

pytest.importorskip("rdkit", reason="needs the convert extra: pip install -e '.[convert]'")
pytest.importorskip("prolif", reason="needs the convert extra: pip install -e '.[convert]'")

from tests.procs import run_checked  # noqa: E402


def test_the_converter_and_its_workers_import_no_torch():
    code = (
        "import sys, pecan.commands.convert, pecan.convert.run, pecan.convert.complexes\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] == 'torch'))\n"
    )
    assert run_checked([sys.executable, "-c", code], timeout=120).stdout.strip() == "[]"
