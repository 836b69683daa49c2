"""Slurm/flux host lists and Slurm's tasks-per-node notation, expanded by python-hostlist (no scontrol or
flux call). What stays here is the error a launcher's bad value becomes: a ValueError naming the value."""

from __future__ import annotations

import hostlist


def expand_hostlist(text: str) -> list[str]:
    """Expand a Slurm/flux (RFC 29) host list such as ``node[01-04,07],gpu3``, in order, duplicates kept."""
    try:
        hosts = hostlist.expand_hostlist(text.strip(), allow_duplicates=True)
    except hostlist.BadHostlist as err:
        raise ValueError(f"{err} in host list {text!r}") from None
    return [host.strip() for host in hosts if host.strip()]


def _expand_tasks_per_node(value: str, name: str) -> list[int]:
    """Expand Slurm's ``4(x2),3`` tasks-per-node notation to ``[4, 4, 3]``."""
    try:
        return hostlist.parse_slurm_tasks_per_node(",".join(item.strip() for item in value.split(",")))
    except hostlist.BadHostlist:
        raise ValueError(f"{name}={value!r} is not a Slurm tasks-per-node list") from None
