"""Slurm/flux host lists and tasks-per-node notation, expanded without calling scontrol or flux."""

from __future__ import annotations

import re


def _split_top_level(text: str, source: str) -> list[str]:
    """Split on commas that are not inside brackets; unbalanced brackets are an error."""
    parts, depth, start = [], 0, 0
    for index, char in enumerate(text):
        if char == "[":
            depth += 1
            if depth > 1:
                raise ValueError(f"nested '[' in host list {source!r}")
        elif char == "]":
            depth -= 1
            if depth < 0:
                raise ValueError(f"unmatched ']' in host list {source!r}")
        elif char == "," and depth == 0:
            parts.append(text[start:index])
            start = index + 1
    if depth != 0:
        raise ValueError(f"unmatched '[' in host list {source!r}")
    parts.append(text[start:])
    return [part.strip() for part in parts if part.strip()]


def _expand_range(item: str, source: str) -> list[str]:
    """Expand one bracket entry: '7', '01-04' (zero padding kept from the lower bound)."""
    if "-" not in item:
        if not item.isdigit():
            raise ValueError(f"bad range {item!r} in host list {source!r}")
        return [item]
    low, _, high = item.partition("-")
    if not (low.isdigit() and high.isdigit()) or int(high) < int(low):
        raise ValueError(f"bad range {item!r} in host list {source!r}")
    width = len(low) if low.startswith("0") else 0
    return [str(number).zfill(width) for number in range(int(low), int(high) + 1)]


def _expand_host(pattern: str, source: str) -> list[str]:
    """Expand every bracket group of one host pattern, left to right (cartesian product)."""
    opening = pattern.find("[")
    if opening < 0:
        return [pattern]
    closing = pattern.index("]", opening)
    prefix, body, rest = pattern[:opening], pattern[opening + 1 : closing], pattern[closing + 1 :]
    values = [value for item in body.split(",") for value in _expand_range(item.strip(), source)]
    tails = _expand_host(rest, source)
    return [prefix + value + tail for value in values for tail in tails]


def expand_hostlist(hostlist: str) -> list[str]:
    """Expand a Slurm/flux (RFC 29) host list such as ``node[01-04,07],gpu3`` in order."""
    return [
        host for pattern in _split_top_level(hostlist.strip(), hostlist) for host in _expand_host(pattern, hostlist)
    ]


def _expand_tasks_per_node(value: str, name: str) -> list[int]:
    """Expand Slurm's ``4(x2),3`` tasks-per-node notation to ``[4, 4, 3]``."""
    counts: list[int] = []
    for item in value.split(","):
        match = re.fullmatch(r"\s*(\d+)(?:\(x(\d+)\))?\s*", item)
        if match is None:
            raise ValueError(f"{name}={value!r} is not a Slurm tasks-per-node list")
        counts.extend([int(match.group(1))] * int(match.group(2) or 1))
    return counts
