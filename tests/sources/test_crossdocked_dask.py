"""`pecan sources crossdocked --engine dask`: the complexes read in chunks on a real 2-worker Dask cluster write
what one process writes (manifest, poses, pose table, crystals, splits, excluded.csv), merged in the order of
the types files whichever chunk finishes first."""

import shutil

import pytest

pytest.importorskip("rdkit", reason="needs the convert extra: pip install -e '.[convert]'")
from rdkit import Chem  # noqa: E402

from pecan.sources import crossdocked_jobs  # noqa: E402
from pecan.sources.crossdocked_run import CrossDockedOptions, read_crossdocked  # noqa: E402
from tests.same_outputs import same_outputs  # noqa: E402
from tests.sources.conftest import DATA, POCKET, POSE  # noqa: E402
from tests.sources.test_crossdocked import shifted, write_sdf_gz  # noqa: E402

TYPES = DATA / "crossdocked2020_changed_typeslines_excerpt.types"


def _miniature(root):
    """The real CrossDocked2020 lines' pockets laid out by name from one real pose and pocket."""
    pose = Chem.MolFromMolFile(str(POSE))
    for text in TYPES.read_text().splitlines():
        receptor, ligand = text.split()[3:5]
        (root / receptor).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(POCKET, root / receptor.replace("_rec_0.gninatypes", "_rec.pdb"))
        stem, _, _ = ligand.removesuffix(".gninatypes").rpartition("_")
        write_sdf_gz(root / f"{stem}.sdf.gz", [pose, shifted(pose, 1.0)])
    Chem.MolToPDBFile(pose, str(root / "CITN_KLEPN_8_446_0" / "5a1s_und_lig.pdb"))


def test_chunks_keep_the_plan_order_and_count_their_lines():
    entries = [type("C", (), {"poses": [0] * n})() for n in (3, 1, 2, 5, 4)]
    jobs = crossdocked_jobs.chunks(entries, None, None, len, size=2)
    assert [job.position for job in jobs] == [0, 1, 2]
    assert [crossdocked_jobs.chunk_cost(job) for job in jobs] == [4.0, 7.0, 4.0]


@pytest.mark.slow
@pytest.mark.multiprocess
def test_chunks_on_two_workers_write_what_one_process_writes(tmp_path, monkeypatch):
    pytest.importorskip("distributed", reason="needs the dist extra: pip install -e '.[dist]'")
    from tests.dask_cluster import cluster

    root = tmp_path / "root"
    _miniature(root)
    options = CrossDockedOptions(check_rmsd=True)
    one = tmp_path / "one"
    selection, poses, notes = read_crossdocked([TYPES], root, one, options)
    monkeypatch.setattr(crossdocked_jobs, "CHUNK_COMPLEXES", 1)  # 4 complexes, 4 jobs
    two = tmp_path / "two"
    with cluster(tmp_path) as (scheduler_file, _):
        engine = crossdocked_jobs.dask_engine(scheduler_file)
        spread, spread_poses, spread_notes = read_crossdocked([TYPES], root, two, options, engine)
    assert len(selection.rows) == 4 and spread.rows == selection.rows and spread.excluded == selection.excluded
    assert [note.replace(str(two), str(one)) for note in spread_notes] == notes and spread_poses.equals(poses)
    same_outputs(one, two)
