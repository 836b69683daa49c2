"""scripts/mutation.sh names functions and methods by mutmut's names (``module.x_function*``,
``module.xǁClassǁmethod*``): each must still exist, or a rename leaves that part of the mutation run empty."""

import importlib
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
TARGET = re.compile(r"([A-Za-z_][\w.]*?)\.x(?:_([A-Za-z_]\w*?)|ǁ(\w+)ǁ(\w+?))\*")


def targets() -> list[tuple[str, str, str]]:
    """(module, class or '', function) of every mutmut name in the script, wildcards (``module.*``) left out."""
    text = (ROOT / "scripts" / "mutation.sh").read_text()
    return [(m[0], m[2] or "", m[3] or m[1]) for m in TARGET.findall(text)]


def test_every_named_function_and_method_exists():
    found = targets()
    assert len(found) > 20 and any(cls for _, cls, _ in found)  # the pattern reads the script
    missing = []
    for module, cls, name in found:
        owner = importlib.import_module(module)
        if cls:
            owner = getattr(owner, cls, None)
        if not callable(getattr(owner, name, None)):
            missing.append(f"{module}.{cls + '.' if cls else ''}{name}")
    assert missing == []
