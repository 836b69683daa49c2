"""Real read-only and full file systems for storage tests (needs root and mount; callers skip otherwise)."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest


def _mount(*args: str) -> None:
    result = subprocess.run(["mount", *args], capture_output=True, text=True, timeout=30)
    if result.returncode != 0:
        pytest.skip(
            f"cannot mount ({' '.join(args)}): {result.stderr.strip() or result.returncode}; "
            "storage tests need root and mount"
        )


class Mounts:
    """Mount points made by a test, unmounted (innermost first) by its finalizer."""

    def __init__(self) -> None:
        self.points: list[Path] = []

    def read_only(self, source: Path, target: Path) -> Path:
        """A read-only view of ``source`` at ``target``: writes there raise EROFS."""
        target.mkdir(parents=True, exist_ok=True)
        _mount("--bind", str(source), str(target))
        self.points.append(target)
        _mount("-o", "remount,ro,bind", str(target))
        return target

    def tmpfs(self, target: Path, size: str = "64k") -> Path:
        """A tiny tmpfs at ``target``: writes past ``size`` raise ENOSPC."""
        target.mkdir(parents=True, exist_ok=True)
        _mount("-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(target))
        self.points.append(target)
        return target

    def unmount_all(self) -> None:
        """Unmount everything this test mounted (lazily if busy)."""
        while self.points:
            point = self.points.pop()
            if subprocess.run(["umount", str(point)], capture_output=True, timeout=30).returncode != 0:
                subprocess.run(["umount", "-l", str(point)], capture_output=True, timeout=30)
