"""The inputs benchmarks/e2e.py builds and the checks of each step's output: a check returns (counts, problems)."""

from __future__ import annotations

import gzip
import json
import shutil
from collections import defaultdict
from pathlib import Path

import numpy as np
import pandas as pd

ROOT = Path(__file__).resolve().parents[1]
CORPUS = ROOT / "studies" / "corpus"
SAMPLES = ROOT / "tests" / "sources" / "data"
CD_TYPES = SAMPLES / "crossdocked2020_changed_typeslines_excerpt.types"
CD_POSE = SAMPLES / "1h36_A_rec_1h36_r88_lig_tt_docked_0.sdf"
CD_POCKET = SAMPLES / "1h36_A_rec_pocket10_head.pdb"
# Fold 0 of the miniature: one pocket folder trains, the other is tested.
CD_FOLDS = {"CITN_KLEPN_8_446_0": "train0", "CP2B6_HUMAN_20_491_peripheralCM5_0": "test0"}
# The crystal ligands the types lines' complexes name, one per pocket folder.
CD_CRYSTALS = {"CITN_KLEPN_8_446_0": "5a1s_und_lig.pdb", "CP2B6_HUMAN_20_491_peripheralCM5_0": "5ufg_cm5_lig.pdb"}
# Folders the PDBbind reader must leave out, and the reason it must give.
EXCLUDED = {
    "1oyt": "reserved test protein: thrombin",  # a listed PDB entry
    "2qbq": "reserved test protein: PTP1B",  # no listed entry: the name index's UniProt ID
    "9zzz": "missing file: 9zzz_ligand.sdf or 9zzz_ligand.mol2",
}
NAME_INDEX = "# PDB code, release year, Uniprot ID, protein name\n2qbq  2007  P18031  PTP1B\n"


def table(path: Path) -> pd.DataFrame:
    """A CSV with every column as text."""
    return pd.read_csv(path, dtype=str, keep_default_na=False)


def quickest_corpus(count: int) -> list[str]:
    """The ``count`` corpus complexes redocked quickest (studies/corpus/docked/redock.csv), one per PDB code."""
    redock = pd.read_csv(CORPUS / "docked" / "redock.csv")
    redock = redock[redock["status"] == "ok"].sort_values("seconds", kind="stable")
    codes = redock["complex_id"].str.split("_").str[0]
    return list(redock["complex_id"][~codes.duplicated()].head(count))


def corpus_inputs(ids: list[str], work: Path) -> Path:
    """Where the complexes' ``inputs/<id>/receptor.pdb`` and ``ligand.sdf`` are: the unpacked corpus, else the
    files extracted from its archive (digests checked) into ``work``."""
    if all((CORPUS / "inputs" / c / "ligand.sdf").is_file() for c in ids):
        return CORPUS
    from studies import archive

    archive.verify("corpus")
    wanted = {f"inputs/{c}/{name}" for c in ids for name in ("receptor.pdb", "ligand.sdf")}
    archive.extract(archive.archive_path("corpus", "inputs"), work, ["inputs"], keep=wanted.__contains__)
    return work


def build_pdbbind_folder(folder: Path, ids: list[str], work: Path) -> tuple[dict, list[str]]:
    """``<code>/<code>_protein.pdb`` and ``_ligand.sdf`` of each complex, ``index/INDEX_general_PL_name.2020``, and
    the folders the reader must exclude (``EXCLUDED``)."""
    source = corpus_inputs(ids, work / "extracted")
    missing = [c for c in ids if not (source / "inputs" / c / "ligand.sdf").is_file()]
    if missing:
        return {}, [f"corpus inputs missing for {missing}: run `python -m studies.archive unpack corpus`"]
    for complex_id in ids:
        code = complex_id.split("_")[0]
        (folder / code).mkdir(parents=True, exist_ok=True)
        shutil.copy(source / "inputs" / complex_id / "receptor.pdb", folder / code / f"{code}_protein.pdb")
        shutil.copy(source / "inputs" / complex_id / "ligand.sdf", folder / code / f"{code}_ligand.sdf")
    for code in EXCLUDED:
        (folder / code).mkdir(exist_ok=True)
    shutil.copy(source / "inputs" / ids[0] / "receptor.pdb", folder / "9zzz" / "9zzz_protein.pdb")
    (folder / "index").mkdir(exist_ok=True)
    (folder / "index" / "INDEX_general_PL_name.2020").write_text(NAME_INDEX)
    return {"complexes": len(ids), "folders": len(ids) + len(EXCLUDED)}, []


def sources(out: Path, ids: list[str]):
    """`pecan sources pdbbind`: a manifest of every complex, and each folder of ``EXCLUDED`` with its reason."""

    def check():
        manifest, excluded = table(out / "manifest.csv"), table(out / "excluded.csv")
        problems = []
        if sorted(manifest["complex_id"]) != sorted(c.split("_")[0] for c in ids):
            problems.append(f"manifest complexes {list(manifest['complex_id'])}")
        reasons = dict(zip(excluded["complex_id"], excluded["reason"]))
        problems += [
            f"{c}: excluded as {reasons.get(c)!r}, not {r!r}" for c, r in EXCLUDED.items() if reasons.get(c) != r
        ]
        return {"complexes": len(manifest), "excluded": len(excluded)}, problems

    return check


def redocked(docked: Path, ids: list[str], compare_to: Path | None = None):
    """`pecan redock`: every complex docked, poses for each, no failures; with ``compare_to``, the same output as
    that folder's but for the seconds each complex took."""

    def check():
        redock, failures = table(docked / "redock.csv"), table(docked / "failures.csv")
        poses = redock["poses"].replace("", "0").astype(int)
        problems = [f"failures: {list(failures['complex_id'])}"] if len(failures) else []
        if len(redock) != len(ids) or (poses == 0).any():
            problems.append(f"redock.csv: {dict(zip(redock['complex_id'], poses))}")
        counts = {"complexes": len(redock), "poses": int(poses.sum()), "failures": len(failures)}
        if compare_to is not None:
            from benchmarks.bench_ranks import redock_differences

            different, receptors = redock_differences(compare_to, docked)
            problems += different
            counts |= {"same_as_2ranks": not problems, "receptors_differing_in_h_positions": receptors}
        return counts, problems

    return check


def converted(shards: Path, docked: Path, compare_to: Path | None):
    """`pecan convert`: every docked pose (and each crystal pose) in the index, no failures; with ``compare_to``,
    the same output as that folder's."""

    def check():
        index, failures = pd.read_csv(shards / "converted_all.csv"), table(shards / "failures.csv")
        expected = int(table(docked / "redock.csv")["poses"].replace("", "0").astype(int).sum())
        docked_poses = int((index["is_crystal"] == 0).sum())
        counts = {"shards": len(list(shards.glob("*.hdf5"))), "docked_poses": docked_poses}
        counts |= {"crystal_poses": int(index["is_crystal"].sum()), "failures": len(failures)}
        problems = [f"failures: {failures.to_dict('records')}"] if len(failures) else []
        if docked_poses != expected:
            problems.append(f"{docked_poses} docked poses in the index, {expected} redocked")
        if compare_to is not None:
            from benchmarks.bench_ranks import differences

            problems += differences(compare_to, shards)
            counts["same_as_2ranks"] = not problems
        return counts, problems

    return check


def trained(run: Path, epochs: int):
    """Training: an epoch record per epoch and checkpoints/best.pt."""

    def check():
        records = [json.loads(line) for line in (run / "epochs.jsonl").read_text().splitlines() if line.strip()]
        records = [r for r in records if "event" not in r]
        problems = [] if (run / "checkpoints" / "best.pt").is_file() else ["no checkpoints/best.pt"]
        if len(records) != epochs:
            problems.append(f"{len(records)} epoch records, {epochs} epochs asked")
        last = records[-1] if records else {}
        auc = last.get("val_auc")
        counts = {"epochs": len(records), "samples_per_epoch": last.get("samples")}
        return counts | {"val_auc": None if auc is None else round(auc, 3)}, problems

    return check


def score_argv(docked: Path, code: str, run: Path, out: Path) -> list[str]:
    """`pecan score` of one redocked complex's poses with the run's best checkpoint."""
    row = table(docked / "manifest.csv").set_index("complex_id").loc[code]
    files = {k: str((docked / row[k]).resolve()) for k in ("receptor", "poses", "crystal_ligand")}
    argv = ["score", str(run / "checkpoints" / "best.pt"), "--receptor", files["receptor"], "--poses", files["poses"]]
    return argv + ["--crystal", files["crystal_ligand"], "--out", str(out), "--no-progress"]


def scored(out: Path, docked: Path, code: str):
    """`pecan score`: a scored record and a CSV row per pose, and the metrics file."""

    def check():
        from rdkit import Chem

        poses = len(Chem.SDMolSupplier(str(docked / "poses" / f"{code}.sdf")))
        records, scores = len(Chem.SDMolSupplier(str(out))), pd.read_csv(out.with_suffix(".csv"))
        metrics = out.with_suffix(".metrics.json")
        problems = [] if records == len(scores) == poses else [f"{poses} poses, {records} scored, {len(scores)} rows"]
        problems += [] if metrics.is_file() else [f"no {metrics.name}"]
        top1 = json.loads(metrics.read_text()).get("top1") if metrics.is_file() else None
        return {"poses": poses, "scored": records, "top1": top1}, problems

    return check


def _moved_sdf(mol, distances: list[float], toward) -> bytes:
    """Copies of ``mol`` translated by each distance along the unit vector ``toward`` (RMSD = the distance)."""
    from rdkit import Chem
    from rdkit.Geometry import Point3D

    blocks = []
    for distance in distances:
        copy = Chem.Mol(mol)
        conformer = copy.GetConformer()
        for k, xyz in enumerate(conformer.GetPositions() + distance * toward):
            conformer.SetAtomPosition(k, Point3D(*xyz))
        blocks.append(Chem.MolToMolBlock(copy) + "$$$$\n")
    return gzip.compress("".join(blocks).encode())


def _toward_pocket(mol) -> np.ndarray:
    """The unit vector from the pose's centre to the sample pocket's: moved along it, a pose keeps receptor atoms
    around it (the sample pocket is 36 atoms on one side of the ligand)."""
    lines = [line for line in CD_POCKET.read_text().splitlines() if line.startswith(("ATOM", "HETATM"))]
    pocket = np.array([[float(line[c : c + 8]) for c in (30, 38, 46)] for line in lines])
    direction = pocket.mean(axis=0) - mol.GetConformer().GetPositions().mean(axis=0)
    return direction / np.linalg.norm(direction)


def lay_out_crossdocked(root: Path, types_dir: Path) -> tuple[dict, list[str]]:
    """The real types lines' files, in CrossDocked2020's layout: each receptor the real pocket, each record ``k`` of
    a poses file the real pose moved by the RMSD its line gives (the crystal ligand, in each pocket folder, is the
    pose unmoved); the lines split into fold 0's train and test files by pocket folder."""
    from rdkit import Chem

    pose = Chem.MolFromMolFile(str(CD_POSE))
    toward, shifts, folds = _toward_pocket(pose), defaultdict(dict), defaultdict(list)
    for line in CD_TYPES.read_text().splitlines():
        rmsd, receptor, ligand = line.split()[2:5]
        folder = receptor.split("/")[0]
        stem, _, record = ligand.removesuffix(".gninatypes").rpartition("_")
        shifts[stem][int(record)] = float(rmsd)
        folds[CD_FOLDS[folder]].append(line + "\n")
        (root / folder).mkdir(parents=True, exist_ok=True)
        shutil.copy(CD_POCKET, root / receptor.replace("_rec_0.gninatypes", "_rec.pdb"))
    for stem, by_record in shifts.items():
        records = [by_record.get(k, 0.0) for k in range(max(by_record) + 1)]
        (root / f"{stem}.sdf.gz").write_bytes(_moved_sdf(pose, records, toward))
    for folder, crystal in CD_CRYSTALS.items():
        Chem.MolToPDBFile(pose, str(root / folder / crystal))
    types_dir.mkdir(parents=True, exist_ok=True)
    for fold, lines in folds.items():
        (types_dir / f"it2_tt_v1.1_0_{fold}.types").write_text("".join(lines))
    return {"types_lines": sum(map(len, folds.values())), "pose_files": len(shifts), "pockets": len(CD_CRYSTALS)}, []


def crossdocked_sources(out: Path):
    """`pecan sources crossdocked --check-rmsd`: every line a pose, every recomputed RMSD the types file's, the
    fold files' split, nothing excluded."""

    def check():
        manifest, poses, excluded = (
            table(out / "manifest.csv"),
            pd.read_csv(out / "poses.csv"),
            table(out / "excluded.csv"),
        )
        lines = len(CD_TYPES.read_text().splitlines())
        agree = int(((poses["rmsd"] - poses["recomputed_rmsd"]).abs() <= 0.5).sum())
        split = {part: len(table(out / "splits" / f"fold0_{part}.csv")) for part in ("train", "test")}
        counts = {"complexes": len(manifest), "poses": len(poses), "rmsd_agree": agree, "excluded": len(excluded)}
        problems = [] if len(poses) == agree == lines else [f"{lines} lines, {len(poses)} poses, {agree} RMSDs agree"]
        problems += [f"excluded: {excluded.to_dict('records')}"] if len(excluded) else []
        problems += [] if split == {"train": 2, "test": 2} else [f"fold 0 split {split}"]
        return counts | {f"fold0_{k}": v for k, v in split.items()}, problems

    return check


def crossdocked_converted(out: Path, shards: Path):
    """`pecan convert` of the CrossDocked manifest: every pose in the index, its RMSD the types file's."""

    def check():
        index, failures = pd.read_csv(shards / "converted_all.csv"), table(shards / "failures.csv")
        types_rmsd = pd.read_csv(out / "poses.csv").set_index("pose_id")["rmsd"]
        docked = index[index["is_crystal"] == 0].set_index("poseid")
        gap = (docked["rmsd"] - types_rmsd.reindex(docked.index)).abs()
        counts = {"shards": len(list(shards.glob("*.hdf5"))), "docked_poses": len(docked)}
        counts |= {"rmsd_agree": int((gap < 1e-3).sum()), "failures": len(failures)}
        problems = (
            [] if len(docked) == len(types_rmsd) == counts["rmsd_agree"] else [f"index vs types: {gap.to_dict()}"]
        )
        return counts, problems + ([f"failures: {failures.to_dict('records')}"] if len(failures) else [])

    return check


def fold_index_csvs(out: Path, shards: Path) -> tuple[dict, list[str]]:
    """Fold 0's train and test index CSVs in the shards folder: the index rows of each split's complexes."""
    index, counts = pd.read_csv(shards / "converted_all.csv"), {}
    for part in ("train", "test"):
        ids = set(table(out / "splits" / f"fold0_{part}.csv")["complex_id"])
        rows = index[index["pdbid"].isin(ids)]
        rows.to_csv(shards / f"fold0_{part}_index.csv", index=False)
        counts[f"{part}_rows"] = len(rows)
    return counts, [] if all(counts.values()) else [f"an empty split: {counts}"]


def predicted(scores: Path, index_csv: Path):
    """`pecan predict`: a score per docked pose of the test fold (crystal poses are not scored), the metrics file."""

    def check():
        rows, index = pd.read_csv(scores), pd.read_csv(index_csv)
        expected, metrics = int((index["is_crystal"] == 0).sum()), scores.with_suffix(".metrics.json")
        problems = [] if len(rows) == expected else [f"{len(rows)} scores for {expected} docked poses"]
        problems += [] if metrics.is_file() else [f"no {metrics.name}"]
        top1 = json.loads(metrics.read_text()).get("top1") if metrics.is_file() else None
        return {"poses": len(rows), "complexes": rows["complex_id"].nunique(), "top1": top1}, problems

    return check
