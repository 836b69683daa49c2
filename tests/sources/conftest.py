"""Real structure samples (tests/sources/data, README there) laid out as the readers' folders in tmp_path."""

from pathlib import Path

import pytest

DATA = Path(__file__).parent / "data"
POSE = DATA / "1h36_A_rec_1h36_r88_lig_tt_docked_0.sdf"
POCKET = DATA / "1h36_A_rec_pocket10_head.pdb"


@pytest.fixture
def real_pose_text():
    return POSE.read_text()


@pytest.fixture
def real_pocket_text():
    return POCKET.read_text()
