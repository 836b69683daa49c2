"""The HDF5 reader: shard reads at a chosen I/O level, with per-worker handle and decode caches.

What each level (``io_mode``) does is the table in ``pecan.data.io_modes``; this reader follows its flags.
The zero-HDF5 level, ``packed``, lives in ``pecan.data.packed``.
"""

from __future__ import annotations

import logging
from typing import Any, Optional

import numpy as np
import pandas as pd
import torch

from pecan.data import io_modes, layout, schema
from pecan.data.batch import GraphBatch, concat
from pecan.data.geometry import check_pose_features
from pecan.data.graph import AtomGraph, build_graph
from pecan.data.rotation import rotate_about_centroids
from pecan.data.sample import ProcessLocal, SampleTable, skip_or_raise
from pecan.data.settings import ReaderSettings
from pecan.runtime import tracing
from pecan.runtime.errors import DataError

log = logging.getLogger(__name__)


def graph_to_data(graph: AtomGraph, values: dict[str, np.ndarray]) -> GraphBatch:
    """One sample as a one-graph batch of the contract's fields (pecan.data.schema): the graph's arrays and the
    sample's per-graph ``values`` (SampleTable.sample_field_values)."""
    return GraphBatch(schema.tensors({**schema.graph_field_values(graph), **values}, num_graphs=1), 1)


def rotate_data(data: GraphBatch) -> GraphBatch:
    """Apply a random rigid rotation about the centroid (per-sample augmentation)."""
    data.pos = rotate_about_centroids(data.pos, torch.zeros(data.pos.size(0), dtype=torch.long), 1)
    return data


class H5PoseDataset(ProcessLocal, torch.utils.data.Dataset):
    """Pose graphs read from HDF5 shards; ``io_mode`` picks how much HDF5 work each sample costs."""

    def __init__(self, index: pd.DataFrame, settings: ReaderSettings = ReaderSettings()) -> None:
        self.mode = io_modes.get(settings.io_mode)
        if self.mode.packed:
            raise ValueError(f"io_mode {settings.io_mode!r} is not an HDF5 level ({', '.join(io_modes.H5_LEVELS)})")
        self.settings = settings
        self.table = SampleTable.from_index(index)
        self.skipped_at_build = 0  # bad samples are skipped as they are read, and counted there
        allowed = io_modes.decode_cache_allowed(settings.augment, settings.decode_cache)
        self.use_decode_cache = self.mode.decode_cache and allowed
        self._start_process_state()

    def __len__(self) -> int:
        return len(self.table)

    def _fresh_process_state(self) -> None:
        # Open HDF5 handles must never cross a fork or a pickle: each worker opens its own.
        self._handles: dict[int, Any] = {}
        self._decoded: dict[int, AtomGraph] = {}

    def __getstate__(self) -> dict:
        state = super().__getstate__()
        state["_handles"], state["_decoded"] = {}, {}
        return state

    def close(self) -> None:
        """Close every cached handle of this process."""
        for handle in self._handles.values():
            handle.close()
        self._handles.clear()

    # ------------------------------------------------------------------ reading

    def _open(self, shard_id: int):
        import h5py

        path = self.table.shards[shard_id]
        try:
            handle = h5py.File(path, "r", locking=False)
        except OSError as err:
            raise DataError(f"cannot open shard {path} as HDF5: {err}") from err
        self.counters.add("file_opens")
        self.counters.add("h5_file_opens")
        return handle

    def _handle(self, shard_id: int):
        if not self.mode.keeps_handles:
            return self._open(shard_id)
        handle = self._handles.get(shard_id)
        if handle is None:
            handle = self._handles[shard_id] = self._open(shard_id)
        return handle

    def _group_path(self, i: int) -> str:
        t = self.table
        return layout.sample_path(
            t.complex_id[i], t.pose_id[i], bool(t.is_crystal[i]), self.settings.pose_group, self.settings.crystal_group
        )

    def _read_attrs(self, group, i: int) -> tuple[float, np.ndarray]:
        """Label and interaction counts from HDF5 attributes (levels reopen and handle_cache)."""
        attrs = group.attrs
        values = {}
        for name in layout.POSE_ATTRS:
            if name in attrs:
                values[name] = layout.scalar(attrs, name, self.table.where(i))
                self.counters.add("attr_reads")
        if "label" in values:
            label = values["label"]
        elif "rmsd" in values:
            label = float(values["rmsd"] < self.settings.rmsd_threshold)
        else:
            label = float(self.table.label[i])  # the CSV supplied it
        features = np.array([values.get(n, 0.0) for n in layout.INTERACTION_ATTRS], dtype=np.float64)
        return label, check_pose_features(features, self.table.where(i))

    def _read_vdw(self, group) -> Optional[np.ndarray]:
        """The group's per-atom ``van_der_waals`` radii when the shard has them (FAST writes them)."""
        vdw = group.attrs.get(layout.VDW_ATTR)
        if vdw is not None:
            self.counters.add("attr_reads")
        return vdw

    def _read(self, i: int) -> tuple[np.ndarray, float, np.ndarray, Optional[np.ndarray]]:
        handle = self._handle(int(self.table.shard_id[i]))
        try:
            label, features = float(self.table.label[i]), self.table.pose_features[i]
            path = self._group_path(i)
            if not self.mode.attrs_from_index:
                group = handle.get(path)
                self.counters.add("h5_object_opens")
                if group is None:
                    raise DataError(f"{self.table.where(i)}: group '{path}' not found")
                label, features = self._read_attrs(group, i)
                dataset = group.get(layout.DATASET_NAME)
            else:
                dataset = handle.get(f"{path}/{layout.DATASET_NAME}")
            self.counters.add("h5_object_opens")
            if dataset is None:
                raise DataError(f"{self.table.where(i)}: dataset '{path}/{layout.DATASET_NAME}' not found")
            if self.mode.attrs_from_index:
                group = dataset.parent
                self.counters.add("h5_object_opens")
            vdw = self._read_vdw(group)
            atoms = layout.read_data(dataset, self.table.where(i))
            self.counters.add("dataset_reads")
            self.counters.add("bytes_read", atoms.nbytes)
            return atoms, label, features, vdw
        finally:
            if not self.mode.keeps_handles:
                handle.close()

    def _graph(self, i: int) -> tuple[AtomGraph, float, np.ndarray]:
        if self.use_decode_cache and i in self._decoded:
            return self._decoded[i], float(self.table.label[i]), self.table.pose_features[i]
        with tracing.span("pecan.io", "h5_read"):
            atoms, label, features, vdw = self._read(i)
        with tracing.span("pecan.graph", "build"):
            graph = build_graph(
                atoms,
                self.settings.pocket_radius,
                self.settings.edge_cutoff,
                self.table.where(i),
                self.settings.max_atoms,
                self.settings.max_edges,
                vdw=vdw,
            )
        if self.use_decode_cache:
            self._decoded[i] = graph
        return graph, label, features

    @tracing.traced("data", "item")
    def __getitem__(self, i: int) -> Optional[GraphBatch]:
        self._own_process()
        i = int(i)
        try:
            try:
                graph, label, features = self._graph(i)
            except DataError:
                raise
            except Exception as err:  # noqa: BLE001 - h5py/numpy errors of a corrupt shard must name the pose
                raise DataError(f"{self.table.where(i)}: unreadable ({type(err).__name__}: {err})") from err
        except DataError as err:
            skip_or_raise(err, self.settings.on_bad_sample)
            self.counters.add("skipped")
            return None
        self.counters.add("samples")
        values = {**self.table.sample_field_values(np.array([i])), "y": np.array([label]), "pose_features": features}
        data = graph_to_data(graph, values)
        return rotate_data(data) if self.settings.augment else data

    def __getitems__(self, indices: list[int]) -> GraphBatch:
        """A finished batch (bad samples dropped when skipping; none left: 0 graphs) carrying this worker's
        counter increments."""
        items = [d for d in (self[i] for i in indices) if d is not None]
        if items:
            with tracing.span("pecan.data", "collate", size=len(items)):
                batch = concat(items)
        else:
            batch = concat(items)  # every sample was skipped as bad: 0 graphs
        batch.io_counts = self.counters.take()
        return batch


# The PECAN code base's name of this class, kept for code that imports it.
Dataset_PDB = H5PoseDataset
