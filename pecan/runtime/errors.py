"""Error classes every layer raises, and the exit code each one means; imports nothing of PECAN's.

A leaf module, so that data, config, training and scoring can all raise and catch the same classes
without importing each other. Each class names what went wrong in its message (file, group, pose, key).
"""

from __future__ import annotations


class ConfigError(ValueError):
    """A configuration value is missing, unknown or of the wrong type."""


class DataError(ValueError):
    """Bad input data: the message names the file, group or pose."""


class NotANumber(DataError):
    """A text field that should hold one number does not (``pecan.runtime.numbers``): the message names the
    file, the record or line, the field and the text as written."""


class IndexUnreadable(DataError):
    """An index CSV that cannot be read at all (missing, no permission, not a file): the one case in which
    the index is derived from the shard list instead."""


class StorageError(OSError):
    """A write failed; the message names the path and the reason ("disk full" for ENOSPC)."""


class NoWritableLocation(OSError):
    """Every directory of the chain refused the write; the message lists each reason."""


class OutDirInUse(RuntimeError):
    """Another live run holds the out_dir lock."""


class OutDirUnusable(OSError):
    """train.out_dir cannot hold a run (it is a file, or its file system is read-only); names path and errno."""


class CollectiveFailed(RuntimeError):
    """A collective failed or timed out: names the collective, the rank and the peers that went away."""


class RanksDisagree(RuntimeError):
    """The ranks of one run hold different model weights (different code, or lost sync): names the ranks."""


class ConversionError(ValueError):
    """A complex or pose cannot be converted; the message is the reason listed in failures.csv."""


class RedockError(ValueError):
    """A complex cannot be redocked (receptor or ligand preparation, docking); the message is the reason
    listed in the redock failures.csv."""


# Exit codes of the `pecan` command and main_app.py, chosen by exception type (first match wins, so a
# subclass must come before its base). 2: the invocation or the run directory is wrong (fix the command
# or config); 1: the data or the storage failed while running.
EXIT_CODES: tuple[tuple[type[BaseException], int], ...] = (
    (ConfigError, 2),
    (OutDirInUse, 2),
    (OutDirUnusable, 2),
    (DataError, 1),
    (ConversionError, 1),
    (RedockError, 1),
    (StorageError, 1),
    (NoWritableLocation, 1),
    (FileNotFoundError, 1),
    (FloatingPointError, 1),
    (CollectiveFailed, 1),
    (RanksDisagree, 1),
)


def exit_code(err: BaseException) -> int | None:
    """The exit code for an expected error, or None when the error is a bug (let it raise)."""
    for error_type, code in EXIT_CODES:
        if isinstance(err, error_type):
            return code
    return None


def expected_error_code(err: Exception) -> int:
    """Log an expected error (pecan.runtime.errors.EXIT_CODES) and return its exit code; anything else is a bug and
    is raised again with its traceback."""
    import logging

    code = exit_code(err)
    if code is None:
        raise err
    logging.getLogger("pecan").error("%s", err)
    return code
