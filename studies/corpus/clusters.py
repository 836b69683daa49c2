"""Protein clusters of the corpus: all-against-all sequence search (MMseqs2), single-linkage clusters at an
identity threshold, the reserved-protein screen and cluster-balanced folds.

Single linkage (connected components of "shares >= threshold identity over >= min_coverage of the shorter
chain") is what makes the split safe: two complexes in different clusters never have a pair of binding chains
that similar, so no test cluster shares that identity with a training cluster. A set-cover clustering
(MMseqs2's own ``cluster``) does not give that guarantee; the search does, and it is exact enough at this size.
"""

from __future__ import annotations

import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Hit:
    """One aligned pair of chains: ``identity`` and ``coverage`` (of the shorter chain) as fractions."""

    query: str
    target: str
    identity: float
    coverage: float


def chain_complex(chain_id: str) -> str:
    """``<complex>|<chain>`` -> complex."""
    return chain_id.split("|", 1)[0]


def search(fasta: Path, sensitivity: float = 7.5) -> list[Hit]:
    """All-against-all MMseqs2 search of the chains in ``fasta`` (every hit, e-value <= 1e-3)."""
    if shutil.which("mmseqs") is None:
        raise RuntimeError("sequence clustering needs MMseqs2's mmseqs (apt-get install mmseqs2)")
    lengths = {}
    name = None
    for line in fasta.read_text().splitlines():
        if line.startswith(">"):
            name = line[1:].strip()
            lengths[name] = 0
        elif name is not None:
            lengths[name] += len(line.strip())
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "hits.m8"
        subprocess.run(
            [
                "mmseqs",
                "easy-search",
                str(fasta),
                str(fasta),
                str(out),
                str(Path(tmp) / "work"),
                "-s",
                str(sensitivity),
                "-e",
                "1e-3",
                "--threads",
                "2",
                "--format-output",
                "query,target,fident,alnlen",
                "-v",
                "1",
            ],
            check=True,
            capture_output=True,
        )
        hits = []
        for line in out.read_text().splitlines():
            query, target, identity, length = line.split("\t")
            shorter = max(min(lengths[query], lengths[target]), 1)
            hits.append(Hit(query, target, float(identity), int(length) / shorter))
    return hits


def single_linkage(complexes: list[str], hits: list[Hit], identity: float, coverage: float) -> dict[str, str]:
    """complex -> cluster name (the cluster's first complex in sorted order) over the hits that pass both
    thresholds; a complex without any passing hit is its own cluster."""
    parent = {c: c for c in complexes}

    def root(c: str) -> str:
        while parent[c] != c:
            parent[c] = parent[parent[c]]
            c = parent[c]
        return c

    for hit in hits:
        a, b = chain_complex(hit.query), chain_complex(hit.target)
        if a in parent and b in parent and hit.identity >= identity and hit.coverage >= coverage:
            ra, rb = root(a), root(b)
            if ra != rb:
                parent[max(ra, rb)] = min(ra, rb)
    members: dict[str, list[str]] = {}
    for c in complexes:
        members.setdefault(root(c), []).append(c)
    return {c: min(group) for group in members.values() for c in group}


def reserved_matches(
    hits: list[Hit], references: dict[str, str], identity: float, coverage: float
) -> dict[str, tuple[str, str, float]]:
    """complex -> (reserved protein, reference chain, identity) for every complex with a chain that aligns to a
    reference chain (``references``: chain id -> protein name) at or above both thresholds (the best match)."""
    found: dict[str, tuple[str, str, float]] = {}
    for hit in hits:
        if hit.target not in references or hit.identity < identity or hit.coverage < coverage:
            continue
        complex_id = chain_complex(hit.query)
        if complex_id not in found or hit.identity > found[complex_id][2]:
            found[complex_id] = (references[hit.target], hit.target, hit.identity)
    return found


def assign_folds(clusters: dict[str, str], n_folds: int) -> dict[str, int]:
    """cluster -> fold: largest clusters first, each into the fold with the fewest complexes so far (ties: the
    lowest fold), so folds are balanced in complexes and every cluster lies in exactly one fold."""
    sizes: dict[str, int] = {}
    for cluster in clusters.values():
        sizes[cluster] = sizes.get(cluster, 0) + 1
    load = [0] * n_folds
    folds = {}
    for cluster in sorted(sizes, key=lambda c: (-sizes[c], c)):
        fold = min(range(n_folds), key=lambda k: (load[k], k))
        folds[cluster] = fold
        load[fold] += sizes[cluster]
    return folds
