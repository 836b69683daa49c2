"""pecan.runtime.keywords.same_named and the settings objects built with it (index settings, pack parameters)."""

import argparse
from dataclasses import dataclass

import pytest

from pecan.config import DataConfig
from pecan.data.index import IndexSettings, build_index
from pecan.data.loader import pack_params
from pecan.runtime.keywords import same_named


@dataclass
class Pair:
    width: int
    depth: int = 0


def test_same_named_takes_attributes_by_name_and_applies_changes():
    args = argparse.Namespace(width=3, depth=5, unrelated="x")
    assert same_named(args, Pair) == {"width": 3, "depth": 5}
    assert same_named(args, ("depth",), width=9) == {"depth": 5, "width": 9}
    assert same_named(argparse.Namespace(width=3), Pair, depth=7) == {"width": 3, "depth": 7}


def test_same_named_refuses_a_name_the_source_lacks():
    with pytest.raises(AttributeError, match="depth"):
        same_named(argparse.Namespace(width=3), Pair)


def test_index_settings_come_from_the_data_section():
    data = DataConfig(pose_group="p", crystal_group="c", use_crystal=False, rmsd_threshold=1.5, label_source="rmsd")
    assert IndexSettings.from_data(data) == IndexSettings("p", "c", False, 1.5, "error", False, "rmsd", "error")
    scoring = IndexSettings.from_data(data, use_crystal=True, labels_optional=True)
    assert (scoring.use_crystal, scoring.labels_optional, scoring.rmsd_threshold) == (True, True, 1.5)
    assert scoring.labels() == {"labels_optional": True, "label_source": "rmsd", "label_conflict": "error"}


def test_pack_params_are_the_data_sections_graph_keys():
    data = DataConfig(pocket_radius=7.0, edge_cutoff=3.5, max_atoms=100, max_edges=2000)
    params = pack_params(data)
    assert (params.pocket_radius, params.edge_cutoff, params.max_atoms, params.max_edges) == (7.0, 3.5, 100, 2000)
    assert (params.pose_group, params.crystal_group) == (data.pose_group, data.crystal_group)


def test_build_index_takes_settings_or_their_fields_not_both(tmp_path):
    settings = IndexSettings("p", "c", True, 2.0)
    with pytest.raises(TypeError, match="not both \\(rmsd_threshold\\)"):
        build_index([], [], str(tmp_path), settings, index_prefix="x", rmsd_threshold=3.0)
