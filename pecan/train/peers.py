"""Which peer went away: each rank's heartbeat counter in the process group's store, read when a collective
fails so its message names the rank(s) and host(s) that stopped (see pecan.runtime.collectives.describe_failure).

Counters, not timestamps: hosts' clocks need not agree. A rank whose counter does not move for a few beats is
gone (dead, frozen or cut off). When the store itself no longer answers, the rank that hosts it is gone.
"""

from __future__ import annotations

import logging
import platform
import threading
import time
from typing import Optional

import torch.distributed as dist

from pecan.runtime import collectives

log = logging.getLogger(__name__)

BEAT_S = 1.0
PREFIX = "pecan/peer"


class PeerWatch:
    """This rank's heartbeat thread, and the judgement of which peers stopped beating."""

    def __init__(self, rank: int, world_size: int, store) -> None:
        self.rank, self.world_size, self.store = rank, world_size, store
        self._stop = threading.Event()
        store.set(f"{PREFIX}/{rank}/host", platform.node())
        store.add(f"{PREFIX}/{rank}/beat", 1)
        self._thread = threading.Thread(target=self._beat, name="pecan-peer-heartbeat", daemon=True)

    def start(self) -> "PeerWatch":
        """Begin beating and let failed collectives ask ``lost``."""
        self._thread.start()
        collectives.set_peer_reporter(self.lost)
        return self

    def _beat(self) -> None:
        while not self._stop.wait(BEAT_S):
            try:
                self.store.add(f"{PREFIX}/{self.rank}/beat", 1)
            except Exception:  # noqa: BLE001 - the store went away with its host; the failure names it
                return

    def _counts(self) -> dict[int, int]:
        return {r: int(self.store.add(f"{PREFIX}/{r}/beat", 0)) for r in range(self.world_size) if r != self.rank}

    def _host(self, rank: int) -> str:
        try:
            return self.store.get(f"{PREFIX}/{rank}/host").decode()
        except Exception:  # noqa: BLE001 - a rank that died before registering
            return "?"

    def lost(self, wait_s: float = 4 * BEAT_S) -> str:
        """'rank R (host H), ...' for the peers whose heartbeat did not move within ``wait_s``; '' if none."""
        before = self._counts()
        time.sleep(wait_s)
        after = self._counts()
        gone = [r for r in before if after[r] == before[r]]
        return ", ".join(f"rank {r} (host {self._host(r)})" for r in gone)

    def stop(self) -> None:
        """Stop beating (at the end of the run)."""
        self._stop.set()
        collectives.set_peer_reporter(None)


def start_peer_watch(world_size: int) -> Optional[PeerWatch]:
    """A PeerWatch on the default group's store for a multi-rank job (None otherwise or without a store)."""
    if world_size < 2 or not dist.is_initialized():
        return None
    try:
        store = dist.distributed_c10d._get_default_store()
        return PeerWatch(dist.get_rank(), world_size, store).start()
    except Exception as err:  # noqa: BLE001 - naming lost peers is a courtesy; training goes on without it
        log.warning("cannot watch peers' heartbeats (%s): a failed collective will not name the lost rank", err)
        return None
