"""dftracer annotations; the only module that imports dftracer.

Annotations are no-ops (one boolean test) until ``setup(enabled=True, ...)`` succeeds. dftracer reads
``DFTRACER_ENABLE`` (and the data directory for POSIX tracing) when it is imported, so the import happens
inside ``setup`` after the variables are set; DataLoader workers re-run ``setup`` through ``WorkerInit`` so
spawned workers write their own files.

Categories: dftracer's AI categories where one exists (``AI_CATEGORIES``: compute/forward, backward, step;
data/item; dataloader/fetch; comm/all_reduce, all_gather, bcast, barrier; device/transfer;
pipeline/epoch, train, evaluate; checkpoint/capture, restart), PECAN's own beneath ``pecan.*``
(``PECAN_SPANS``). Every event carries the rank, and the epoch and step where the process knows them.
"""

from __future__ import annotations

import atexit
import functools
import logging
import os
import time
from collections.abc import Callable
from contextlib import nullcontext
from pathlib import Path
from typing import Any

log = logging.getLogger(__name__)

# dftracer.python.ai ProfileCategory values used here (a test checks them against the installed package).
AI_CATEGORIES = ("compute", "data", "dataloader", "comm", "device", "checkpoint", "pipeline")
PECAN_SPANS = {
    ("pecan.setup", "index"): "build or load the split indexes (rank 0)",
    ("pecan.setup", "packs"): "validate, build or locate the packs",
    ("pecan.setup", "model"): "build, compile and wrap the model",
    ("pecan.io", "h5_read"): "HDF5 reads of one sample",
    ("pecan.graph", "build"): "pocket selection and edges of one sample",
    ("pecan.io", "pack_gather"): "gather one batch from the memory-mapped packs",
    ("pecan.data", "collate"): "samples to one Batch",
    ("pecan.data", "batch"): "one whole batch in a loader worker (its busy time)",
    ("pecan.loader", "handover"): "restore a worker's batch in the main process",
    ("pecan.eval", "eval_forward"): "evaluation forward of one batch",
}

# Variables dftracer's native library parses at start-up; an empty value makes some of them fail.
_CHECKED_ENV = (
    "DFTRACER_DATA_DIR",
    "DFTRACER_LOG_FILE",
    "DFTRACER_ENABLE",
    "DFTRACER_INC_METADATA",
    "DFTRACER_INIT",
    "DFTRACER_LOG_LEVEL",
    "DFTRACER_TRACE_COMPRESSION",
    "DFTRACER_BIND_SIGNALS",
    "DFTRACER_TIME_METRIC",
)
_BOOLEAN_ENV = ("DFTRACER_ENABLE", "DFTRACER_INC_METADATA", "DFTRACER_TRACE_COMPRESSION", "DFTRACER_BIND_SIGNALS")
_CHOICE_ENV = {
    "DFTRACER_INIT": ("PRELOAD", "FUNCTION"),
    "DFTRACER_LOG_LEVEL": ("DEBUG", "INFO", "WARN", "ERROR"),
    "DFTRACER_TIME_METRIC": ("NS", "US", "MS", "SEC"),
}

_state: dict[str, Any] = {
    "enabled": False,
    "logger": None,
    "instance": None,
    "dir": None,
    "rank": 0,
    "context": {"rank": 0},
    "typed_context": ({"rank": (0, 0)}, {}, {}),
    "requested": False,
    "available": None,
    "posix": None,
    "ignored_env": [],
}


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


def clean_environment(environ: dict | None = None) -> list[str]:
    """Drop empty or malformed DFTRACER_* variables with a warning (they would crash or mislead the
    tracer); returns the names dropped."""
    environ = os.environ if environ is None else environ
    dropped = []
    for name in _CHECKED_ENV:
        if name not in environ:
            continue
        value = environ[name].strip()
        problem = None
        if not value:
            problem = "is empty"
        elif name in _BOOLEAN_ENV and value not in ("0", "1"):
            problem = f"is {value!r}, not 0 or 1"
        elif name in _CHOICE_ENV and value.upper() not in _CHOICE_ENV[name]:
            problem = f"is {value!r}, not one of {', '.join(_CHOICE_ENV[name])}"
        if problem:
            log.warning("environment variable %s %s; ignored", name, problem)
            del environ[name]
            dropped.append(name)
    return dropped


def setup(
    enabled: bool,
    trace_dir: str | os.PathLike,
    rank: int = 0,
    tag: str = "rank",
    data_dir: str | os.PathLike | None = None,
) -> bool:
    """Initialise tracing for this process; returns whether traces will actually be written.

    ``data_dir`` turns on dftracer's POSIX (file-I/O) events for files under it (trace.posix).
    """
    _state["context"] = {"rank": rank}
    _state["typed_context"] = _typed(_state["context"])
    _state["requested"] = _state["requested"] or enabled
    if not enabled:
        return False
    if _state["enabled"]:
        return True
    _state["ignored_env"] = clean_environment()
    _state["available"] = native_available()
    if not _state["available"]:
        log.warning(
            "trace.enabled is true but the native dftracer library is missing "
            "(pip install '.[trace-native]'); tracing is off"
        )
        return False
    os.environ["DFTRACER_ENABLE"] = "1"
    os.environ.setdefault("DFTRACER_INC_METADATA", "1")
    if data_dir is not None:
        os.environ["DFTRACER_DATA_DIR"] = str(Path(data_dir).resolve())
    data_dirs = os.environ.get("DFTRACER_DATA_DIR")
    try:
        from dftracer.python import dftracer
    except (ImportError, OSError) as err:  # found but not loadable (a broken build): a warning, not the run
        log.warning("trace.enabled is true but the native dftracer library is missing (%s); tracing is off", err)
        os.environ.pop("DFTRACER_ENABLE", None)
        _state["available"] = False
        return False

    trace_dir = Path(trace_dir)
    trace_dir.mkdir(parents=True, exist_ok=True)
    log_file = trace_dir / f"pecan-{tag}{rank}-pid{os.getpid()}"
    instance = dftracer.initialize_log(logfile=str(log_file), data_dir=data_dirs, process_id=rank)
    _state.update(
        enabled=True, logger=instance.logger, instance=instance, dir=str(trace_dir), rank=rank, posix=data_dirs
    )
    atexit.register(finalize)
    return True


def status() -> dict[str, Any]:
    """Tracing as this process ran it, for runs.jsonl: requested, native library available, active."""
    return {
        "requested": bool(_state["requested"]),
        "available": _state["available"],
        "active": bool(_state["enabled"]),
        "dir": _state["dir"],
        "posix_data_dir": _state["posix"],
        "ignored_env": list(_state["ignored_env"]),
    }


def finalize() -> None:
    """Flush and close this process's trace file (safe to call twice)."""
    if _state["enabled"] and _state["instance"] is not None:
        _state["instance"].finalize()
    _state.update(enabled=False, instance=None, logger=None)


def set_context(**values: Any) -> None:
    """Arguments every later event of this process carries (epoch, step); no-op when tracing is off."""
    if _state["enabled"]:
        _state["context"].update(values)
        _state["typed_context"] = _typed(_state["context"])


def set_recording(on: bool) -> None:
    """Switch event recording on or off in a process whose tracer is set up (a benchmark times the same work
    with and without events); a process without a tracer stays without one."""
    _state["enabled"] = bool(on) and _state["instance"] is not None


_KEY = 0  # dftracer's TagType.KEY: the argument is a key of the event (a test checks the installed value)


def _typed(values: dict[str, Any], base: tuple[dict, dict, dict] = ({}, {}, {})) -> tuple[dict, dict, dict]:
    """Event arguments split by type the way the native logger takes them, (ints, floats, strings), on
    top of ``base`` (the process context, split once per ``set_context``)."""
    ints, floats, strings = dict(base[0]), dict(base[1]), dict(base[2])
    for key, value in values.items():
        if isinstance(value, int):
            ints[key] = (_KEY, int(value))
        elif isinstance(value, float):
            floats[key] = (_KEY, value)
        else:
            strings[key] = (_KEY, str(value))
    return ints, floats, strings


class Event:
    """One complete event, written to the native logger on exit with the process context and its own
    arguments. It calls the native library directly: dftracer's Python ``dft_fn`` wrapper costs several
    times the native call per event (BENCHMARKS.md, tracing overhead)."""

    __slots__ = ("args", "category", "context", "name", "start")

    def __init__(self, category: str, name: str, args: dict[str, Any]) -> None:
        self.category, self.name, self.args, self.start = category, name, args, 0
        self.context = _state["typed_context"]  # the context as it was when the span began

    def update(self, args: dict[str, Any]) -> Event:
        """Add arguments known only inside the span (sizes, atoms)."""
        self.args.update(args)
        return self

    def __enter__(self) -> Event:
        logger = _state["logger"]
        if logger is not None:
            self.start = logger.get_time()
            logger.enter_event()
        return self

    def __exit__(self, *exc: object) -> bool:
        logger = _state["logger"]
        if logger is not None:  # None: finalized inside the span; the event is dropped, not half-written
            end = logger.get_time()
            ints, floats, strings = _typed(self.args, self.context)
            logger.log_event(
                self.name,
                self.category,
                self.start,
                end - self.start,
                int_args=ints,
                float_args=floats,
                string_args=strings,
            )
            logger.exit_event()
        return False


def span(category: str, name: str, **args: Any):
    """Context manager that records one event when tracing is on, else a null context."""
    if not _state["enabled"]:
        return nullcontext()
    return Event(category, name, args)


def now() -> int:
    """The tracer's clock (its time unit), for events logged after the fact; 0 when off."""
    return _state["logger"].get_time() if _state["enabled"] else 0


def log_span(category: str, name: str, start: int, duration: int, **args: Any) -> None:
    """Record an event whose start (``now()`` units) and duration were measured by the caller."""
    if not _state["enabled"]:
        return
    ints, floats, strings = _typed(args, _state["typed_context"])
    _state["logger"].log_event(
        name, category, int(start), max(int(duration), 0), int_args=ints, float_args=floats, string_args=strings
    )


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


class BusyDataset:
    """Wraps a dataset whose ``__getitems__`` returns a Batch: times each batch in the worker (a
    ``pecan.data/batch`` event with its size and atoms) and adds the nanoseconds to the batch's I/O counters
    at ``busy_index``, so loader worker busy time reaches the epoch report without another channel."""

    def __init__(self, dataset: Any, busy_index: int) -> None:
        self.dataset, self.busy_index = dataset, busy_index

    def __len__(self) -> int:
        return len(self.dataset)

    def __getattr__(self, name: str) -> Any:
        if name in ("dataset", "busy_index"):  # not yet set while unpickling
            raise AttributeError(name)
        return getattr(self.dataset, name)

    def __getitems__(self, indices: list[int]):
        """The wrapped dataset's batch, with this call's duration counted."""
        start = time.perf_counter_ns()
        with span("pecan.data", "batch", size=len(indices)) as event:
            batch = self.dataset.__getitems__(indices)
            if event is not None and getattr(batch, "x", None) is not None:
                event.update(args={"atoms": int(batch.x.shape[0])})
        batch.io_counts[self.busy_index] += time.perf_counter_ns() - start
        return batch

    def __getitem__(self, index: int):
        return self.__getitems__([index])


class WorkerInit:
    """DataLoader ``worker_init_fn``: per-worker tracer (its own file) and finalize at worker exit."""

    def __init__(self, trace_dir: str | None, rank: int, data_dir: str | None = None) -> None:
        self.trace_dir, self.rank, self.data_dir = trace_dir, rank, data_dir

    def __call__(self, worker_id: int) -> None:
        # A forked worker inherits an initialised tracer, which writes its own file after fork;
        # a spawned worker starts with none and must initialise (and register finalize) here.
        if not self.trace_dir:
            return
        if _state["enabled"]:
            _state["context"] = {"rank": self.rank}
            set_context(worker=worker_id)
            return
        setup(True, self.trace_dir, self.rank, tag=f"rank{self.rank}-worker{worker_id}-", data_dir=self.data_dir)
        set_context(worker=worker_id)
