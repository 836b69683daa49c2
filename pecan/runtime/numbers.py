"""A number in a text field (an SD property, an INDEX column, a types-file field), read as written.

One rule for every reader (``pecan score``, ``pecan convert``, ``pecan sources``): the whole field, surrounding
white space aside, is one finite decimal number (``-9.1``, ``+7``, ``.5``, ``1e-3``). A minus written as the
Unicode minus sign (U+2212) or another dash (hyphen U+2010, non-breaking hyphen U+2011, figure dash U+2012, en
dash U+2013, em dash U+2014, horizontal bar U+2015, small and full-width hyphen-minus U+FE63, U+FF0D) is a minus,
as a word processor or a PDF copy writes it. Anything else is not a number: ``nan``, ``inf``, ``1,5``, ``1_000``,
``0x10``, an empty field and text around a number (``failed (code 2)``, ``-9.1 kcal/mol``); Python's ``float``
would take the first four and read ``−10.6`` as an error, and a first-number search takes ``2`` from the text.

The one structured text taken as a docking score is AutoDock Vina's result remark as Open Babel copies it into
an SD property (``VINA RESULT:    -9.1      0.000      0.000``: the energy, then two RMSDs), alone or as one line
among Vina's other remarks (``INTER + INTRA:``, ``NAME:``, ...): its energy is read.
"""

from __future__ import annotations

import math
import re

from pecan.runtime.errors import NotANumber

DASHES = "\u2212\u2010\u2011\u2012\u2013\u2014\u2015\ufe63\uff0d"
_AS_MINUS = str.maketrans({dash: "-" for dash in DASHES})
_NUMBER = r"[-+]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][-+]?[0-9]+)?"  # ASCII digits only
NUMBER = re.compile(_NUMBER)
VINA_RESULT = re.compile(rf"VINA RESULT:\s*({_NUMBER})\s+{_NUMBER}\s+{_NUMBER}")


def as_written(text) -> str:
    """``text`` without surrounding white space, every dash variant as '-'."""
    return str(text).strip().translate(_AS_MINUS)


def number_or_none(text) -> float | None:
    """The finite number the whole of ``text`` is, else None."""
    field = as_written(text)
    if not NUMBER.fullmatch(field):
        return None
    value = float(field)
    return value if math.isfinite(value) else None


def read_number(text, where: str) -> float:
    """The finite number the whole of ``text`` is; NotANumber naming ``where`` (file, record or line, field)."""
    value = number_or_none(text)
    if value is None:
        raise NotANumber(f"{where}: {str(text).strip()!r} is not a number")
    return value


def read_docking_score(text, where: str) -> float:
    """A docking score: one number (``read_number``), or Vina's result remark (its energy); NotANumber naming
    ``where`` and what the field holds instead."""
    value = number_or_none(text)
    if value is not None:
        return value
    remarks = [VINA_RESULT.fullmatch(as_written(line)) for line in str(text).splitlines()]
    remarks = [remark for remark in remarks if remark]
    if len(remarks) == 1:
        return read_number(remarks[0].group(1), where)
    raise NotANumber(
        f"{where}: {str(text).strip()!r} is not a number (a docking score is the whole field, one number; name "
        f"the SD property that holds only the score, or give the scores with --scores-csv)"
    )
