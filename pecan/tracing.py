"""dftracer annotations; the only module that imports dftracer.

Annotations are no-ops (one boolean test) until ``setup(enabled=True, ...)`` succeeds. dftracer reads
``DFTRACER_ENABLE`` when it is imported, so the import happens inside ``setup`` after the variable is set;
DataLoader workers re-run ``setup`` through ``worker_init`` so spawned workers write their own files.

Categories and names follow dftracer's ``ai`` layout: data/item, dataloader/fetch, compute/forward,
compute/backward, compute/step, pipeline/epoch, pipeline/evaluate, checkpoint/capture.
"""
from __future__ import annotations

import atexit
import functools
import logging
import os
from contextlib import nullcontext
from pathlib import Path
from typing import Any, Callable, Iterator, Optional

log = logging.getLogger(__name__)

_state: dict[str, Any] = {"enabled": False, "dft_fn": None, "instance": None, "dir": None, "rank": 0}


def is_enabled() -> bool:
    """True once a real tracer has been initialised in this process."""
    return bool(_state["enabled"])


def native_available() -> bool:
    """Whether the native dftracer library (not just the pure-Python API) can be imported."""
    try:
        import importlib.util

        return importlib.util.find_spec("dftracer.dftracer") is not None
    except (ImportError, ValueError):
        return False


def setup(enabled: bool, trace_dir: str | os.PathLike, rank: int = 0, tag: str = "rank") -> bool:
    """Initialise tracing for this process; returns whether traces will actually be written."""
    if not enabled:
        return False
    if _state["enabled"]:
        return True
    if not native_available():
        log.warning("trace.enabled is true but the native dftracer library is missing "
                    "(pip install '.[trace-native]'); tracing is off")
        return False
    os.environ["DFTRACER_ENABLE"] = "1"
    os.environ.setdefault("DFTRACER_INC_METADATA", "1")
    from dftracer.python import dft_fn, dftracer

    trace_dir = Path(trace_dir)
    trace_dir.mkdir(parents=True, exist_ok=True)
    log_file = trace_dir / f"pecan-{tag}{rank}-pid{os.getpid()}"
    instance = dftracer.initialize_log(logfile=str(log_file), data_dir=None, process_id=rank)
    _state.update(enabled=True, dft_fn=dft_fn, instance=instance, dir=str(trace_dir), rank=rank)
    atexit.register(finalize)
    return True


def finalize() -> None:
    """Flush and close this process's trace file (safe to call twice)."""
    if _state["enabled"] and _state["instance"] is not None:
        _state["instance"].finalize()
    _state.update(enabled=False, instance=None)


def span(category: str, name: str, **args: Any):
    """Context manager that records one event when tracing is on, else a null context."""
    if not _state["enabled"]:
        return nullcontext()
    event = _state["dft_fn"](cat=category, name=name)
    if args:
        event.update(args=args)
    return event


def traced(category: str, name: str) -> Callable:
    """Decorator form of ``span`` (the check happens per call, so it may be applied at import time)."""

    def decorate(function: Callable) -> Callable:
        @functools.wraps(function)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            if not _state["enabled"]:
                return function(*args, **kwargs)
            with span(category, name):
                return function(*args, **kwargs)

        return wrapper

    return decorate


def iterate(iterable, category: str, name: str) -> Iterator:
    """Wrap an iterator so the wait for each item is one event (e.g. dataloader/fetch)."""
    iterator = iter(iterable)
    while True:
        with span(category, name):
            try:
                item = next(iterator)
            except StopIteration:
                return
        yield item


class WorkerInit:
    """DataLoader ``worker_init_fn``: per-worker tracer (its own file) and finalize at worker exit."""

    def __init__(self, trace_dir: Optional[str], rank: int) -> None:
        self.trace_dir, self.rank = trace_dir, rank

    def __call__(self, worker_id: int) -> None:
        # A forked worker inherits an initialised tracer, which writes its own file after fork;
        # a spawned worker starts with none and must initialise (and register finalize) here.
        if not self.trace_dir or _state["enabled"]:
            return
        setup(True, self.trace_dir, self.rank, tag=f"rank{self.rank}-worker{worker_id}-")
