"""Where a rank's epoch time goes: phase clocks (CUDA events or host time), the timed batch fetch, memory."""

from __future__ import annotations

import resource
import time
from contextlib import contextmanager
from typing import Iterator

import torch

from pecan.report import PHASE_EVENTS
from pecan.runtime import tracing


class PhaseTimer:
    """Seconds per phase; on CUDA, event pairs read once per epoch instead of a sync per step."""

    def __init__(self, device: torch.device) -> None:
        self.cuda = device.type == "cuda"
        self.seconds: dict[str, float] = {}
        self.events: dict[str, list] = {}

    @contextmanager
    def phase(self, name: str) -> Iterator[None]:
        """Time the enclosed block under ``name``."""
        if self.cuda:
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            yield
            end.record()
            self.events.setdefault(name, []).append((start, end))
            if tracing.is_enabled():
                # Traced runs only: wait for the phase's kernels so the enclosing event (host clock) ends
                # when the device work does and agrees with the CUDA-event figure; untraced runs never sync.
                torch.cuda.synchronize()
        else:
            t0 = time.perf_counter()
            yield
            self.seconds[name] = self.seconds.get(name, 0.0) + time.perf_counter() - t0

    @contextmanager
    def span(self, phase: str, **args) -> Iterator[None]:
        """Time the block under ``phase`` and trace it as that phase's event (report.PHASE_EVENTS)."""
        with tracing.span(*PHASE_EVENTS[phase], **args), self.phase(phase):
            yield

    def add(self, name: str, seconds: float) -> None:
        """Add host-measured seconds."""
        self.seconds[name] = self.seconds.get(name, 0.0) + seconds

    def totals(self) -> dict[str, float]:
        """Seconds per phase (synchronises CUDA once)."""
        out = dict(self.seconds)
        if self.events:
            torch.cuda.synchronize()
            for name, pairs in self.events.items():
                out[name] = out.get(name, 0.0) + sum(s.elapsed_time(e) for s, e in pairs) / 1000.0
        return out


def peak_rss_mb() -> float:
    """Peak resident memory of this process (Linux reports KiB; psutil's memory_info has no peak on Linux)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def timed_fetch(loader, timer: PhaseTimer) -> Iterator:
    """The loader's batches; each wait is data_wait_s and one dataloader/fetch event (the clock runs inside
    the event, so the tracer's own cost is not charged to the data wait)."""
    iterator = iter(loader)
    while True:
        with tracing.span(*PHASE_EVENTS["data_wait_s"]):
            start = time.perf_counter()
            batch = next(iterator, None)
            timer.add("data_wait_s", time.perf_counter() - start)
        if batch is None:
            return
        yield batch


def cuda_peak_mb(device: torch.device) -> float:
    """Peak CUDA memory allocated on ``device`` so far (0 on CPU)."""
    return torch.cuda.max_memory_allocated(device) / 2**20 if device.type == "cuda" else 0.0


def timed_backward(loss: torch.Tensor, timer: PhaseTimer, grad_clock=None) -> None:
    """Backward; with DDP on CPU the wait for the last gradient all-reduce is split off as grad_comm_s
    (see distributed.GradCommClock) and traced as comm/all_reduce right after the compute/backward event.
    A failure of DDP's gradient all-reduce is a CollectiveFailed naming the lost peer."""
    from pecan.runtime.collectives import guarded

    if grad_clock is None:
        with timer.span("backward_s"), guarded("all_reduce", "gradients"):
            loss.backward()
        return
    start, trace_start = time.perf_counter(), tracing.now()
    with guarded("all_reduce", "gradients"):
        loss.backward()
    end = time.perf_counter()
    wait = grad_clock.exposed_wait(end)
    timer.add("backward_s", end - start - wait)
    timer.add("grad_comm_s", wait)
    units = (tracing.now() - trace_start) / max(end - start, 1e-12)  # tracer units per second
    compute_units = round((end - start - wait) * units)
    tracing.log_span(*PHASE_EVENTS["backward_s"], trace_start, compute_units)
    tracing.log_span(*PHASE_EVENTS["grad_comm_s"], trace_start + compute_units, round(wait * units), what="gradients")
