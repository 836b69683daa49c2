"""The io_mode policy table (pecan.data.io_modes) and that it is the only place that knows the level names."""

import re
from pathlib import Path

import pytest

from pecan.data import io_modes
from pecan.engine.distributed import plan_threads

ROOT = Path(__file__).resolve().parents[2]


def test_levels_in_order_and_their_flags():
    assert io_modes.NAMES == ("reopen", "handle_cache", "hoist", "decode_cache", "packed")
    assert io_modes.H5_LEVELS == io_modes.NAMES[:-1]
    flags = {m.name: (m.keeps_handles, m.attrs_from_index, m.decode_cache) for m in io_modes.MODES}
    assert flags == {
        "reopen": (False, False, False),
        "handle_cache": (True, False, False),
        "hoist": (True, True, False),
        "decode_cache": (True, True, True),
        "packed": (False, True, False),
    }
    assert [io_modes.uses_packs(n) for n in io_modes.NAMES] == [False] * 4 + [True]


def test_unknown_level_lists_the_valid_ones():
    with pytest.raises(ValueError, match="'nvme' is not one of reopen, handle_cache, hoist, decode_cache, packed"):
        io_modes.get("nvme")


def test_auto_workers_follow_the_table():
    assert io_modes.auto_workers("packed", 7) == 0 and io_modes.auto_workers("hoist", 7) == 7
    assert plan_threads(2, -1, "packed", environ={}).num_workers == 0


def test_no_other_module_compares_level_names():
    pattern = re.compile(r"""(==|!=|\bin)\s*\(?\s*["'](reopen|handle_cache|hoist|decode_cache|packed)["']""")
    offenders = [
        str(path.relative_to(ROOT))
        for path in (ROOT / "pecan").rglob("*.py")
        if path.name != "io_modes.py" and pattern.search(path.read_text())
    ]
    assert offenders == []
