"""Progress that suits where it goes: a tqdm bar on a terminal, a plain line every N seconds elsewhere.

A batch system's log file is not a terminal: a bar's carriage-return frames pile up there and glue the
next line to a cleared bar, so off a terminal a line such as
``epoch 3: 40/100 batch (40%) | 12.5 batch/s | ETA 0:00:05`` is written every ``every_s`` seconds
instead (through the ``pecan`` logger when logging is set up, else to stderr), never a ``\\r``.
Modes: ``auto`` (bar when stderr is a terminal, else lines), ``bar``, ``lines``, ``off``; ``True`` and
``False`` (older configs, and callers that only know "show it or not") mean ``auto`` and ``off``.
"""

from __future__ import annotations

import logging
import math
import sys
import time
from typing import Any, Callable, Iterable, Iterator, Optional, Union

MODES = ("auto", "bar", "lines", "off")
Mode = Union[str, bool, None]

log = logging.getLogger("pecan.progress")


def resolve_mode(setting: Mode, stream: Any = None) -> str:
    """'bar', 'lines' or 'off' for a setting (a MODES name or a bool); auto asks whether ``stream``
    (default stderr, where the bar would go) is a terminal."""
    if setting is None or setting is False or setting == "off":
        return "off"
    if setting is True or setting == "auto":
        stream = sys.stderr if stream is None else stream
        isatty = getattr(stream, "isatty", None)
        return "bar" if isatty is not None and isatty() else "lines"
    if setting in ("bar", "lines"):
        return str(setting)
    raise ValueError(f"progress mode must be one of {', '.join(MODES)}, got {setting!r}")


def format_duration(seconds: float) -> str:
    """H:MM:SS for an ETA; '?' when it cannot be known yet."""
    if seconds is None or not math.isfinite(seconds) or seconds < 0:
        return "?"
    whole = int(round(seconds))
    return f"{whole // 3600}:{whole // 60 % 60:02d}:{whole % 60:02d}"


def emit(line: str) -> None:
    """Write one progress line: through logging when it is set up (so it is formatted like the rest of
    the run's log), else straight to stderr."""
    if log.hasHandlers():
        log.info("%s", line)
    else:
        print(line, file=sys.stderr, flush=True)


class Progress:
    """Counts work done out of ``total``; shows it as a bar, as periodic lines, or not at all.

    ``extra`` returns more text for a line (the trainer adds samples/s, loss and the run's ETA); it is
    called only when a line is written, so anything it reads from the device costs nothing in between.
    """

    def __init__(
        self,
        total: Optional[int],
        desc: str,
        unit: str = "it",
        mode: Mode = "auto",
        every_s: float = 30.0,
        extra: Optional[Callable[["Progress"], str]] = None,
        close_line: bool = True,
        clock: Callable[[], float] = time.monotonic,
        heartbeat: bool = False,
        already_done: int = 0,
    ) -> None:
        self.total, self.desc, self.unit, self.every_s = total, desc, unit, every_s
        self.mode, self.extra, self.close_line, self.clock = resolve_mode(mode), extra, close_line, clock
        # Work finished by an earlier run (a resumed redock): counted in the total done, never in the rate.
        self.already_done = already_done
        self.done, self.lines_written = already_done, 0
        self.started = self.last_line = clock()
        self.done_at_last_line = -1
        self.bar = None
        self._stop = None
        if self.mode == "bar":
            from tqdm import tqdm

            self.bar = tqdm(total=total, desc=desc, unit=unit, leave=False, initial=already_done)
        elif self.mode == "lines" and heartbeat and math.isfinite(every_s) and every_s > 0:
            self._start_heartbeat()

    def _start_heartbeat(self) -> None:
        """A line every ``every_s`` even while one unit of work takes longer (a batch log that says nothing
        for minutes looks like a hung job)."""
        import threading

        self._stop = threading.Event()

        def beat() -> None:
            while not self._stop.wait(self.every_s / 4):
                if self.clock() - self.last_line >= self.every_s:
                    self.write_line()

        threading.Thread(target=beat, name="pecan-progress", daemon=True).start()

    def elapsed(self) -> float:
        """Seconds since the start."""
        return self.clock() - self.started

    def rate(self) -> float:
        """Units per second done by this run (work finished before it, ``already_done``, left out)."""
        return (self.done - self.already_done) / max(self.elapsed(), 1e-9)

    def eta(self) -> float:
        """Seconds left at this run's rate so far (inf before any work, or without a total)."""
        if self.done <= self.already_done or not self.total:
            return math.inf
        return max(self.total - self.done, 0) / self.rate()

    def update(self, n: int = 1) -> None:
        """``n`` more units done; writes a line when ``every_s`` has passed since the last one."""
        self.done += n
        if self.bar is not None:
            self.bar.update(n)
        elif self.mode == "lines" and self.clock() - self.last_line >= self.every_s:
            self.write_line()

    def line(self) -> str:
        """The text of one progress line."""
        elapsed = max(self.elapsed(), 1e-9)
        of = f"/{self.total}" if self.total else ""
        share = f" ({self.done / self.total:.0%})" if self.total else ""
        rate = self.rate()
        # A rate below 0.1/s reads better as seconds per unit (a redocked complex takes minutes).
        speed = f"{rate:.1f} {self.unit}/s" if rate >= 0.1 or rate == 0 else f"{1 / rate:.0f} s/{self.unit}"
        text = f"{self.desc}: {self.done}{of} {self.unit}{share} | {speed}"
        text += f" | ETA {format_duration(self.eta())}" if self.total else f" | {format_duration(elapsed)}"
        return text + (self.extra(self) if self.extra is not None else "")

    def write_line(self) -> None:
        """Write a line now."""
        emit(self.line())
        self.last_line = self.clock()
        self.done_at_last_line = self.done
        self.lines_written += 1

    def close(self) -> None:
        """Remove the bar; in lines mode, a last line unless ``close_line`` is off or the last line written
        already showed the final count."""
        if self._stop is not None:
            self._stop.set()
        if self.bar is not None:
            self.bar.close()
            self.bar = None
        elif (
            self.mode == "lines"
            and self.close_line
            and self.done > self.already_done
            and self.done != self.done_at_last_line
        ):
            self.write_line()

    def __enter__(self) -> "Progress":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


def track(
    iterable: Iterable,
    desc: str,
    unit: str = "it",
    mode: Mode = "auto",
    total: Optional[int] = None,
    every_s: float = 30.0,
    close_line: bool = True,
) -> Iterator:
    """Yield from ``iterable`` while showing its progress (the counterpart of ``tqdm(iterable)``)."""
    if total is None and hasattr(iterable, "__len__"):
        total = len(iterable)  # type: ignore[arg-type]
    with Progress(total, desc, unit, mode, every_s, close_line=close_line) as progress:
        for item in iterable:
            yield item
            progress.update()
