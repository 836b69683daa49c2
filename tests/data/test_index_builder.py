"""The index builder (pecan.data.index.IndexBuilder): one object, built from its own settings and sources, runs
every step of an index build in one order, and no module outside pecan/data/index*.py sequences the steps."""

from __future__ import annotations

import ast
import logging
from pathlib import Path

import pandas as pd
import pytest

from pecan.config import DataConfig
from pecan.data import index as idx
from pecan.data import layout
from pecan.data.index import DataError, IndexBuilder, IndexSettings, Sources
from pecan.data.loader import load_split_indexes
from tests.shards import write_dataset, write_shard

ROOT = Path(__file__).resolve().parents[2]
# The builder and the modules of its steps; only these may import and call the steps.
BUILDER_MODULES = {"index", "index_rows", "index_derived", "index_columns", "validation", "targets"}
STEP_MODULES = {f"pecan.data.{name}" for name in BUILDER_MODULES - {"index_columns"}}
# What a caller may take from them: the builder, its settings and sources, and the errors it raises.
ENTRY_POINTS = {"IndexBuilder", "Sources", "IndexSettings", "DataError", "IndexUnreadable"}
GROUPS = (layout.DEFAULT_POSE_GROUP, layout.DEFAULT_CRYSTAL_GROUP)


# ---------------------------------------------------------------------------- the only sequencer


def step_imports(path: Path, module: str) -> list[str]:
    """``path:line name`` for each import in ``path`` (function-local ones included) of a step of the index
    build (anything of STEP_MODULES but ENTRY_POINTS, or one of those modules itself)."""
    found = []
    package = module.rpartition(".")[0]
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found += [f"{path}:{node.lineno} {a.name}" for a in node.names if a.name in STEP_MODULES]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join(parts + ([base] if base else []))
            for alias in node.names:
                if f"{base}.{alias.name}" in STEP_MODULES or (base in STEP_MODULES and alias.name not in ENTRY_POINTS):
                    found.append(f"{path}:{node.lineno} {base}.{alias.name}")
    return found


def callers(root: Path) -> dict[str, Path]:
    """Every module of pecan/ outside the builder's own, main_app.py and the benchmarks: dotted name -> file."""
    files = [*sorted((root / "pecan").rglob("*.py")), *sorted((root / "benchmarks").glob("*.py")), root / "main_app.py"]
    modules = {}
    for path in (p for p in files if p.exists()):
        parts = list(path.relative_to(root).with_suffix("").parts)
        if parts[:2] == ["pecan", "data"] and parts[-1] in BUILDER_MODULES:
            continue
        modules[".".join(parts)] = path
    return modules


def sequencers(root: Path) -> list[str]:
    """The imports of index-build steps by modules other than the builder's."""
    return [hit for module, path in callers(root).items() for hit in step_imports(path, module)]


def test_no_caller_outside_the_builder_imports_a_step():
    assert callers(ROOT), "no caller found: the scan looks in the wrong place"
    assert sequencers(ROOT) == []


def test_the_check_sees_a_step_imported_in_any_form(tmp_path):
    (tmp_path / "pecan" / "data").mkdir(parents=True)
    (tmp_path / "pecan" / "train").mkdir()
    (tmp_path / "pecan" / "data" / "index.py").write_text("from pecan.data.validation import validate_index\n")
    allowed = "from pecan.data.index import IndexBuilder, IndexSettings, DataError\n"
    (tmp_path / "pecan" / "train" / "ok.py").write_text(allowed)
    (tmp_path / "pecan" / "train" / "a.py").write_text("def f():\n    from pecan.data.index import derive_index\n")
    (tmp_path / "pecan" / "train" / "b.py").write_text("from pecan.data import targets\n")
    (tmp_path / "pecan" / "data" / "loader.py").write_text("from .index_rows import normalise\n")
    (tmp_path / "main_app.py").write_text("import pecan.data.validation\n")
    found = sorted(hit.split(" ")[1] for hit in sequencers(tmp_path))
    assert found == [
        "pecan.data.index.derive_index",
        "pecan.data.index_rows.normalise",
        "pecan.data.targets",
        "pecan.data.validation",
    ]


# ---------------------------------------------------------------------------- the builder on tiny shards


def test_from_data_builds_the_loader_s_split(tmp_path):
    write_dataset(tmp_path / "data", n_shards=2, n_complexes=3)
    cfg = DataConfig(data_dir=str(tmp_path / "data"), train_csvs=["index.csv"], val_fraction=0.34, split_seed=2)
    builder = IndexBuilder.from_data(cfg)
    assert builder.settings == IndexSettings.from_data(cfg)
    assert builder.sources == Sources(["index.csv"], [], "pecan")
    train, val = builder.training()
    assert not set(train["complex_id"]) & set(val["complex_id"])
    assert len(train) + len(val) == 2 * 3 * 4 and len(val) > 0
    expected_train, expected_val = load_split_indexes(cfg)
    assert train.equals(expected_train) and val.equals(expected_val)


def test_index_derives_from_the_shards_when_the_csv_cannot_be_read_and_reuses_it(tmp_path, monkeypatch, caplog):
    shards, _ = write_dataset(tmp_path / "data")
    builder = IndexBuilder(
        IndexSettings(*GROUPS, True, 2.0),
        Sources(["missing.csv"], [str(s) for s in shards], "tiny"),
        data_dir=str(tmp_path / "data"),
        index_dir=str(tmp_path / "idx"),
    )
    with caplog.at_level(logging.WARNING, logger="pecan.data.index"):
        first = builder.index()
    assert "deriving the index from data.train_fns/val_fns instead" in caplog.text
    assert (tmp_path / "idx" / "tiny_all.csv").exists() and len(first) == 2 * 2 * 4
    walks = []
    real = idx.derive_index
    monkeypatch.setattr(idx, "derive_index", lambda *a, **k: walks.append(1) or real(*a, **k))
    assert builder.index().equals(first) and walks == []


def test_training_needs_both_classes_unless_allowed(tmp_path, caplog):
    write_shard(tmp_path / "far.hdf5", n_complexes=2, n_poses=3, crystal=False, rmsds=[4.0, 5.0, 6.0])
    builder = IndexBuilder(IndexSettings(*GROUPS, False, 2.0), Sources([], ["far.hdf5"]), str(tmp_path))
    train, _ = builder.splits()  # the split alone (packing, scoring) asks nothing of the classes
    assert set(train["label"]) == {0}
    with pytest.raises(DataError, match="single-class training set.*data.allow_single_class: true"):
        builder.training()
    allowed = IndexBuilder(builder.settings, builder.sources, str(tmp_path), allow_single_class=True)
    with caplog.at_level(logging.WARNING, logger="pecan.data.index"):
        allowed.training()
    assert "allowed by data.allow_single_class" in caplog.text


def test_validation_sources_give_their_own_index_and_shared_complexes_are_named(tmp_path, caplog):
    write_shard(tmp_path / "a.hdf5", n_complexes=2, n_poses=3, rmsds=[0.5, 3.0, 4.0])
    write_shard(tmp_path / "b.hdf5", n_complexes=1, n_poses=3, rmsds=[0.5, 3.0, 4.0])
    builder = IndexBuilder(
        IndexSettings(*GROUPS, True, 2.0),
        Sources([], ["a.hdf5"]),
        str(tmp_path),
        val_sources=Sources([], ["b.hdf5"], "pecan_val"),
        write_csv=False,
    )
    with caplog.at_level(logging.WARNING, logger="pecan.data.index"):
        train, val = builder.training()
    assert set(train["shard"]) == {str(tmp_path / "a.hdf5")} and set(val["shard"]) == {str(tmp_path / "b.hdf5")}
    assert "1 complex(es) appear in both training and validation data (e.g. c000)" in caplog.text
    assert not list(tmp_path.glob("*.csv")), "write_csv=False writes no derived index"


def test_for_test_scores_docked_poses_without_labels(tmp_path):
    write_shard(tmp_path / "s.hdf5", n_complexes=1, n_poses=3)
    counts = {name: 0.0 for name in layout.INTERACTION_ATTRS}
    poses = [f"c000_pose{p}" for p in range(3)]
    rows = pd.DataFrame({"shard": "s.hdf5", "pdbid": "c000", "poseid": poses, "is_crystal": 0, **counts})
    rows.to_csv(tmp_path / "new.csv", index=False)  # no label, no rmsd: poses to score
    cfg = DataConfig(data_dir=str(tmp_path), test_csvs=["new.csv"], index_prefix="run")
    builder = IndexBuilder.for_test(cfg)
    assert builder.sources.prefix == "run_test" and not builder.settings.use_crystal
    index = builder.index()
    assert len(index) == 3 and index["label"].isna().all()
