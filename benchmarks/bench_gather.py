"""Micro-benchmarks behind three data-path choices (each printed side by side, medians of repeats):

handover  a worker handing over one flat buffer vs 12 tensors of the same bytes per batch (WireBatch)
views     the packed gather over plain ndarray views of the mapping vs np.memmap slices
grouped   per-sample slices + one vectorised shift (pecan) vs grouping the batch by pack and fancy-indexing

  python -m benchmarks.bench_gather --data /tmp/pecan-bench-gather
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import torch

from pecan.config import DataConfig
from pecan.data import packed
from pecan.data.loader import load_split_indexes, prepare_packs
from pecan.synthetic import ensure_dataset

ROOT = Path(__file__).resolve().parents[1]

BUFFER_BYTES = 1_300_000  # about one batch of 32 packed samples


class Handover(torch.utils.data.Dataset):
    """Returns BUFFER_BYTES per batch as ``pieces`` tensors."""

    def __init__(self, pieces: int, batches: int) -> None:
        self.pieces, self.batches = pieces, batches

    def __len__(self) -> int:
        return self.batches

    def __getitem__(self, index: int):
        if self.pieces == 1:
            return torch.zeros(BUFFER_BYTES, dtype=torch.uint8)
        return [torch.zeros(BUFFER_BYTES // self.pieces, dtype=torch.uint8) for _ in range(self.pieces)]


def handover(repeats: int) -> None:
    """ms per batch through one persistent worker."""
    for pieces in (1, 12):
        loader = torch.utils.data.DataLoader(
            Handover(pieces, 200), batch_size=None, num_workers=1, persistent_workers=True
        )
        for _ in loader:
            pass
        times = []
        for _ in range(repeats):
            start = time.perf_counter()
            for _ in loader:
                pass
            times.append((time.perf_counter() - start) / 200 * 1e3)
        print(f"handover  {pieces:>2} tensor(s)/batch: {statistics.median(times):.2f} ms per batch")


def memmap_pack(path: Path) -> dict:
    """map_pack without the plain-ndarray conversion (np.memmap slices)."""
    header = packed.read_header(path)
    mapped = np.memmap(path, dtype=np.uint8, mode="r")
    out = {}
    for name, spec in header["arrays"].items():
        start = header["data_start"] + spec["offset"]
        dtype = np.dtype(spec["dtype"])
        count = int(np.prod(spec["shape"])) if spec["shape"] else 1
        out[name] = mapped[start : start + count * dtype.itemsize].view(dtype).reshape(spec["shape"])
    return out


def ranges(starts: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """Concatenated aranges [s, s + c)."""
    block_start = np.cumsum(counts) - counts
    return np.repeat(starts - block_start, counts) + np.arange(int(counts.sum()))


def grouped_gather(packs, pack_ids, local_ids) -> dict:
    """The alternative: group the batch by pack, fancy-index each group, restore the order."""
    order = np.argsort(pack_ids, kind="stable")
    splits = np.flatnonzero(np.diff(pack_ids[order])) + 1
    pieces = {k: [] for k in ("x", "pos", "edge_src", "edge_dst", "edge_type")}
    atom_counts = np.empty(len(local_ids), dtype=np.int64)
    edge_counts = np.empty(len(local_ids), dtype=np.int64)
    for members in np.split(order, splits):
        pack, local = packs[pack_ids[members[0]]], local_ids[members]
        a0, e0 = pack["atom_offsets"][local], pack["edge_offsets"][local]
        atom_counts[members] = pack["atom_offsets"][local + 1] - a0
        edge_counts[members] = pack["edge_offsets"][local + 1] - e0
        rows, edges = ranges(a0, atom_counts[members]), ranges(e0, edge_counts[members])
        for key in pieces:
            pieces[key].append(pack[key][rows if key in ("x", "pos") else edges])
    grouped = {k: np.concatenate(v) for k, v in pieces.items()}
    if len(splits):
        at = np.empty_like(atom_counts)
        at[order] = np.cumsum(atom_counts[order]) - atom_counts[order]
        et = np.empty_like(edge_counts)
        et[order] = np.cumsum(edge_counts[order]) - edge_counts[order]
        rows, edges = ranges(at, atom_counts), ranges(et, edge_counts)
        grouped = {k: v[rows] if k in ("x", "pos") else v[edges] for k, v in grouped.items()}
    shift = np.repeat(np.cumsum(atom_counts) - atom_counts, edge_counts)
    return {
        "x": grouped["x"],
        "pos": grouped["pos"],
        "edge_type": grouped["edge_type"],
        "atom_counts": atom_counts,
        "edge_index": np.stack([grouped["edge_src"] + shift, grouped["edge_dst"] + shift]),
    }


def rate(gather, packs, pack_ids, local_ids, batch: int, repeats: int) -> float:
    """Median samples/s of ``gather`` over the given samples."""
    rates = []
    for _ in range(repeats):
        start = time.perf_counter()
        for k in range(0, len(local_ids), batch):
            gather(packs, pack_ids[k : k + batch], local_ids[k : k + batch])
        rates.append(len(local_ids) / (time.perf_counter() - start))
    return statistics.median(rates)


def gathers(args) -> None:
    """views and grouped comparisons on one packed data set."""
    ensure_dataset(args.data, n_shards=10, complexes_per_shard=40, pocket_atoms=(420, 560), seed=2, progress=False)
    cfg = DataConfig(data_dir=args.data, train_csvs=["index.csv"], val_fraction=0.0)
    index, _ = load_split_indexes(cfg)
    dataset = packed.PackedDataset(index, prepare_packs(cfg, [index]))
    views = [packed.map_pack(p) for p in dataset.pack_paths]
    memmaps = [memmap_pack(p) for p in dataset.pack_paths]
    rng = np.random.default_rng(0)
    chosen = rng.choice(len(dataset), size=min(4000, len(dataset)), replace=False)
    pack_ids, local_ids = dataset.pack_id[chosen], dataset.local_id[chosen]
    reference = packed.gather_batch(views, pack_ids[:32], local_ids[:32])
    check = grouped_gather(views, pack_ids[:32], local_ids[:32])
    assert all(np.array_equal(reference[k], check[k]) for k in reference), "gathers disagree"
    rate(packed.gather_batch, views, pack_ids, local_ids, 32, 1)  # touch every page once
    for label, packs in (("ndarray views", views), ("np.memmap slices", memmaps)):
        samples_per_s = rate(packed.gather_batch, packs, pack_ids, local_ids, 32, args.repeats)
        print(f"views     {label:<17} batch 32: {samples_per_s:9.0f} samples/s")
    one_pack = np.flatnonzero(dataset.pack_id == 0)[:640]
    for label, ids in (
        ("global shuffle", (pack_ids, local_ids)),
        ("one pack", (dataset.pack_id[one_pack], dataset.local_id[one_pack])),
    ):
        for name, gather in (("per-sample slices", packed.gather_batch), ("grouped fancy-index", grouped_gather)):
            print(
                f"grouped   {label:<15} {name:<20} batch 32: "
                f"{rate(gather, views, ids[0], ids[1], 32, args.repeats):9.0f} samples/s"
            )


def main(argv=None) -> int:
    """Run the three comparisons."""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", default=str(Path(tempfile.gettempdir()) / "pecan-bench-gather"))
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args(argv)
    torch.set_num_threads(1)
    handover(args.repeats)
    gathers(args)
    return 0


if __name__ == "__main__":
    sys.exit(main())
