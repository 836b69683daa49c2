"""Rebuild studies/corpus/ (inputs, provenance, exclusions, protein clusters, folds, the redocking manifest)
from clones of two public repositories of crystal complexes.

    python -m studies.corpus.prepare DOCKING_GIT_DIR CORESET_GIT_DIR [--crop 16] [--folds 5] [--limit N]

Sources (every file's repository, commit and path go to sources.csv):
- rgCarmen/docking, ``data_sets/posebusters_benchmark_set/<ID_LIG>/`` and ``data_sets/astex_diverse_set/<ID_LIG>/``:
  ``<ID_LIG>_protein.pdb`` and the crystal ligand ``<ID_LIG>_ligand.sdf`` (bond orders from the source).
- caiocrocha/pdbbind-coreset-2013, ``pdbbind-2019.chemflow/DockFlow/qvina_ex8_1/<pdbid>/``: the CASF-2013 core
  set as PDBQT (``receptor.pdbqt``, crystal ligand ``ligand.pdbqt``); elements from the AutoDock types and the
  ligand's bond orders perceived by Open Babel from the crystal geometry, as studies/realdock does.

Receptor rules: whole residues within ``--crop`` A of the crystal ligand; waters dropped; the first alternate
location only; crystallisation additives and buffers (``ADDITIVES``) dropped; metal ions and every other
hetero group (cofactors) kept; a hetero group with an atom within 1.5 A of the ligand (a copy or alternate of
the ligand itself) dropped; hydrogens added by Open Babel where the source has none. Ligand rules: RDKit must
sanitise it, no radicals, at least ``MIN_HEAVY_ATOMS`` heavy atoms. A PDB entry in several sources is kept once
(PoseBusters, then Astex, then the core set). Reserved external test proteins are removed by name and by
sequence (clusters.py); everything left out is in excluded.csv with its reason.
"""

from __future__ import annotations

import argparse
import csv
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

from pecan.sources import reserved
from studies.corpus import clusters
from studies.realdock.prepare import git_show, pdb_lines, perceive, resolve, xyz

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]

DOCKING_REPOSITORY = "rgCarmen/docking"
CORESET_REPOSITORY = "caiocrocha/pdbbind-coreset-2013"
SETS = (("posebusters", "data_sets/posebusters_benchmark_set"), ("astex", "data_sets/astex_diverse_set"))
CORESET_DIR = "pdbbind-2019.chemflow/DockFlow/qvina_ex8_1"
MIN_HEAVY_ATOMS = 6
# Never train, tune or select on these (the project's reserved external test proteins). The PDB entries of the
# sources known to be of them; their binding chains are the references of the sequence screen, which removes
# every complex with a chain >= RESERVED_IDENTITY identical to one of them.
RESERVED = {"TYK2", "thrombin", "MCL1", "PTP1B", "HIF-2alpha", "PDE2A"}
RESERVED_ENTRIES = reserved.RESERVED_ENTRIES  # the product's table: one list for every reader and study
RESERVED_IDENTITY, CLUSTER_IDENTITY, MIN_COVERAGE = 0.40, 0.30, 0.5
WATERS = {"HOH", "WAT", "DOD", "H2O", "TIP", "TIP3", "SOL"}
ADDITIVES = set(
    "GOL EDO PEG PG4 PGE 1PE P6G 2PE DMS SO4 PO4 ACT ACY FMT MPD BME TRS EPE MES CL IOD NO3 IMD NH4 BR SCN "
    "PEO DIO ETF MRD BU3 CIT FLC TAR MLI SUC GLC SIN PGO PGR 12P 15P XPE CXS HEZ IPA EOH MOH BTB PPI".split()
)
METALS = {"ZN", "MG", "MN", "CA", "FE", "FE2", "CO", "NI", "CU", "CU1", "NA", "K", "CD", "HG"}
ONE_LETTER = dict(
    zip(
        "ALA ARG ASN ASP CYS GLN GLU GLY HIS ILE LEU LYS MET PHE PRO SER THR TRP TYR VAL MSE HID HIE HIP CYX".split(),
        "ARNDCQEGHILKMFPSTWYVMHHHC",
    )
)


def residue_key(line: str) -> str:
    """Residue name, chain, number and insertion code of a PDB record."""
    return line[17:27]


def records(text: str) -> list[str]:
    """ATOM/HETATM records: waters dropped, first alternate location only (its flag cleared)."""
    kept = []
    for line in text.splitlines():
        if not line.startswith(("ATOM", "HETATM")) or line[17:20].strip() in WATERS:
            continue
        if len(line) > 16 and line[16] not in (" ", "A"):
            continue
        kept.append(line[:16] + " " + line[17:])
    return kept


def binding_chains(lines: list[str], ligand: np.ndarray, radius: float = 8.0) -> dict[str, str]:
    """chain -> one-letter sequence of every chain with an amino-acid atom within ``radius`` of the ligand."""
    protein = [line for line in lines if line[17:20] in ONE_LETTER]
    if not protein:
        return {}
    near = (np.linalg.norm(xyz(protein)[:, None] - ligand[None], axis=2) < radius).any(1)
    chains = {line[21] for line, flag in zip(protein, near) if flag}
    sequences: dict[str, list[str]] = {}
    seen = set()
    for line in protein:
        key = residue_key(line)
        if line[21] in chains and key not in seen:
            seen.add(key)
            sequences.setdefault(line[21], []).append(ONE_LETTER[line[17:20]])
    return {chain: "".join(letters) for chain, letters in sequences.items() if len(letters) >= 20}


def cropped_receptor(lines: list[str], ligand: np.ndarray, radius: float) -> tuple[list[str], list[str]]:
    """Whole residues within ``radius`` under the receptor rules; also the hetero groups kept."""
    points = xyz(lines)
    distances = np.linalg.norm(points[:, None] - ligand[None], axis=2).min(1)
    keys = [residue_key(line) for line in lines]
    near, clash = set(), set()
    for line, key, distance in zip(lines, keys, distances):
        if distance < radius:
            near.add(key)
        if line.startswith("HETATM") and distance < 1.5:
            clash.add(key)
    hetero = {key for line, key in zip(lines, keys) if line.startswith("HETATM")}
    dropped = clash | {key for key in hetero if key[:3].strip() in ADDITIVES}
    kept = [line for line, key in zip(lines, keys) if key in near and key not in dropped]
    return kept, sorted({key[:3].strip() for key in hetero & near - dropped})


def heavy_records(lines: list[str]) -> list[tuple[str, ...]]:
    """The heavy atoms' names, residues and coordinates (what a rebuild must reproduce; Open Babel re-aligns
    some atom names, so they are compared stripped)."""
    return [
        (line[12:16].strip(), line[17:20].strip(), line[21:27], line[30:54])
        for line in lines
        if line.startswith(("ATOM", "HETATM")) and line[76:78].strip() != "H"
    ]


def write_receptor(lines: list[str], out: Path) -> None:
    """The cropped receptor; hydrogens added by Open Babel when it has none. Open Babel places a few arginine
    hydrogens differently from run to run, so an existing receptor with the same heavy atoms is kept (the
    redocking's record keys hash the receptor file)."""
    text = "\n".join(lines) + "\nEND\n"
    if any(line[76:78].strip() == "H" for line in lines):
        write_if_changed(out, text)
        return
    if out.exists() and heavy_records(out.read_text().splitlines()) == heavy_records(lines):
        return
    with tempfile.TemporaryDirectory() as tmp:
        bare = Path(tmp) / "bare.pdb"
        bare.write_text(text)
        protonated = Path(tmp) / "protonated.pdb"
        subprocess.run(["obabel", str(bare), "-h", "-O", str(protonated)], check=True, capture_output=True)
        # Atom records only: Open Babel's header names the temporary file and its CONECT records add nothing.
        atoms = [line for line in protonated.read_text().splitlines() if line.startswith(("ATOM", "HETATM"))]
        write_if_changed(out, "\n".join(atoms) + "\nEND\n")


def ligand_problem(sdf: Path) -> tuple[str, object]:
    """('', molecule) for a usable crystal ligand, else (reason, None)."""
    from rdkit import Chem

    mol = Chem.MolFromMolFile(str(sdf))
    if mol is None:
        return "RDKit cannot sanitise the crystal ligand", None
    if any(atom.GetNumRadicalElectrons() for atom in mol.GetAtoms()):
        return "the crystal ligand has a radical", None
    if mol.GetNumHeavyAtoms() < MIN_HEAVY_ATOMS:
        return f"fewer than {MIN_HEAVY_ATOMS} heavy atoms (an RMSD under 2 A is met by almost any placement)", None
    return "", mol


def rotatable_bonds(mol) -> int:
    """RDKit's strict rotatable-bond count (orders the redocking: quick complexes first)."""
    from rdkit.Chem import rdMolDescriptors

    return int(rdMolDescriptors.CalcNumRotatableBonds(mol))


def candidates(docking_dir: Path, coreset_dir: Path) -> list[dict]:
    """Every complex of the three sources, PoseBusters first (the order decides which copy of an entry stays)."""
    found = []
    commit = resolve(docking_dir)
    for source, folder in SETS:
        listing = subprocess.run(
            ["git", "-C", str(docking_dir), "ls-tree", "-d", "--name-only", commit, folder + "/"],
            check=True,
            capture_output=True,
            text=True,
        ).stdout.split()
        for path in sorted(listing):
            name = path.rsplit("/", 1)[-1]
            found.append(
                {
                    "complex_id": name.lower(),
                    "pdbid": name[:4].lower(),
                    "source": source,
                    "repository": DOCKING_REPOSITORY,
                    "commit": commit,
                    "git_dir": docking_dir,
                    "receptor_source": f"{path}/{name}_protein.pdb",
                    "ligand_source": f"{path}/{name}_ligand.sdf",
                    "ligand_name": name.split("_", 1)[1] if "_" in name else "",
                }
            )
    commit = resolve(coreset_dir)
    listing = subprocess.run(
        ["git", "-C", str(coreset_dir), "ls-tree", "-d", "--name-only", commit, CORESET_DIR + "/"],
        check=True,
        capture_output=True,
        text=True,
    ).stdout.split()
    for path in sorted(listing):
        pdbid = path.rsplit("/", 1)[-1].lower()
        found.append(
            {
                "complex_id": pdbid,
                "pdbid": pdbid,
                "source": "coreset2013",
                "repository": CORESET_REPOSITORY,
                "commit": commit,
                "git_dir": coreset_dir,
                "receptor_source": f"{path}/receptor.pdbqt",
                "ligand_source": f"{path}/ligand.pdbqt",
                "ligand_name": "",
            }
        )
    return found


def same_content(a: Path, b: Path) -> bool:
    """Equal files, ignoring an SDF's title and program/date lines (Open Babel writes its temporary file's name
    and the time into them)."""
    lines_a, lines_b = a.read_text().splitlines(), b.read_text().splitlines()
    if a.suffix == ".sdf":
        lines_a, lines_b = lines_a[2:], lines_b[2:]
    return lines_a == lines_b


def settle(new: Path, final: Path) -> None:
    """Move ``new`` onto ``final`` atomically, unless ``final`` already has the same content (a rebuild then
    leaves it untouched, so a redocking reading it meanwhile never sees a half-written file)."""
    if final.exists() and same_content(new, final):
        new.unlink()
    else:
        os.replace(new, final)


def write_if_changed(path: Path, text: str) -> None:
    """``text`` into ``path`` through settle()."""
    new = path.with_name("new." + path.name)
    new.write_text(text)
    settle(new, path)


def read_inputs(entry: dict, out: Path) -> tuple[list[str], str, str]:
    """The receptor's records, '' and how the ligand's bond orders were found (the ligand written to
    out/ligand.sdf), or ([], reason, '')."""
    git_dir, commit = entry["git_dir"], entry["commit"]
    try:
        receptor_text = git_show(git_dir, commit, entry["receptor_source"])
        ligand_text = git_show(git_dir, commit, entry["ligand_source"])
    except subprocess.CalledProcessError:
        return [], "a source file is missing from the repository snapshot", ""
    if entry["source"] != "coreset2013":
        write_if_changed(out / "ligand.sdf", ligand_text)
        return records(receptor_text), "", "from the source"
    lines = records("\n".join(pdb_lines(receptor_text, keep_hydrogens=True)))
    new = out / "new.ligand.sdf"  # Open Babel picks the format by the extension
    # With the polar hydrogens first: they fix the tautomer (an aromatic NH); charged groups often fail to
    # sanitise that way, and then the heavy atoms alone decide.
    reason = ""
    for how, keep in (("perceived with polar hydrogens", True), ("perceived from heavy atoms", False)):
        try:
            reason = perceive(pdb_lines(ligand_text, keep_hydrogens=keep), new)
        except subprocess.CalledProcessError:
            reason = "Open Babel cannot read the ligand"
        if not reason:
            settle(new, out / "ligand.sdf")
            return lines, "", how
    new.unlink(missing_ok=True)
    return lines, reason, ""


def prepare_one(entry: dict, crop: float, corpus: Path) -> dict:
    """Inputs of one complex into inputs/<id>/; the row of sources.csv, or one with a 'reason'."""
    out = corpus / "inputs" / entry["complex_id"]
    out.mkdir(parents=True, exist_ok=True)
    lines, reason, bond_orders = read_inputs(entry, out)
    mol = None
    if not reason:
        reason, mol = ligand_problem(out / "ligand.sdf")
    if not reason and not lines:
        reason = "the receptor has no ATOM/HETATM records"
    if reason:
        for path in out.iterdir():
            path.unlink()
        out.rmdir()
        return {"complex_id": entry["complex_id"], "source": entry["source"], "reason": reason}
    ligand = mol.GetConformer().GetPositions()
    receptor, hetero = cropped_receptor(lines, ligand, crop)
    write_receptor(receptor, out / "receptor.pdb")
    return {
        **{k: entry[k] for k in ("complex_id", "pdbid", "source", "repository", "commit")},
        **{k: entry[k] for k in ("receptor_source", "ligand_source")},
        "receptor_atoms_kept": len(receptor),
        "bond_orders": bond_orders,
        "hetero_kept": " ".join(hetero),
        "ligand_heavy_atoms": mol.GetNumHeavyAtoms(),
        "rotatable_bonds": rotatable_bonds(mol),
        "chains": binding_chains(lines, ligand),
    }


def write_csv(path: Path, rows: list[dict], columns: list[str]) -> None:
    """A CSV with exactly ``columns``."""
    with open(path, "w", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=columns, extrasaction="ignore")
        writer.writeheader()
        writer.writerows(rows)


def screen_and_cluster(kept: list[dict], excluded: list[dict], n_folds: int, corpus: Path) -> list[dict]:
    """Remove the reserved proteins (by entry and by sequence), cluster the rest, assign folds."""
    fasta = corpus / "sequences.fasta"
    fasta.write_text(
        "".join(f">{row['complex_id']}|{chain}\n{seq}\n" for row in kept for chain, seq in row["chains"].items())
    )
    hits = clusters.search(fasta)
    references = {
        f"{row['complex_id']}|{chain}": RESERVED_ENTRIES[row["pdbid"]]
        for row in kept
        if row["pdbid"] in RESERVED_ENTRIES
        for chain in row["chains"]
    }
    matches = clusters.reserved_matches(hits, references, RESERVED_IDENTITY, MIN_COVERAGE)
    left = []
    for row in kept:
        if row["pdbid"] in RESERVED_ENTRIES:
            reason = f"reserved test protein {RESERVED_ENTRIES[row['pdbid']]} (PDB entry named as one)"
        elif row["complex_id"] in matches:
            protein, chain, identity = matches[row["complex_id"]]
            reason = f"reserved test protein {protein}: a binding chain {identity:.0%} identical to {chain}"
        elif not row["chains"]:
            reason = "no protein chain of >= 20 residues within 8 A of the ligand (cannot be clustered)"
        else:
            left.append(row)
            continue
        excluded.append({"complex_id": row["complex_id"], "source": row["source"], "reason": reason})
    cluster_of = clusters.single_linkage([r["complex_id"] for r in left], hits, CLUSTER_IDENTITY, MIN_COVERAGE)
    fold_of = clusters.assign_folds(cluster_of, n_folds)
    for row in left:
        row["cluster"] = cluster_of[row["complex_id"]]
        row["fold"] = fold_of[row["cluster"]]
    return left


def main(argv=None) -> int:
    """Write inputs/, sources.csv, excluded.csv, sequences.fasta, clusters.csv and manifest.csv."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("docking_git_dir", type=Path, help="clone of rgCarmen/docking")
    parser.add_argument("coreset_git_dir", type=Path, help="clone of caiocrocha/pdbbind-coreset-2013")
    parser.add_argument("--crop", type=float, default=16.0, help="receptor crop radius (A)")
    parser.add_argument("--folds", type=int, default=5, help="cluster-split folds")
    parser.add_argument("--limit", type=int, default=0, help="only the first N candidates (a quick check)")
    parser.add_argument("--out", type=Path, default=HERE, help="the corpus directory (default: this folder)")
    args = parser.parse_args(argv)
    if args.limit and args.out.resolve() == HERE:
        parser.error("--limit writes a partial corpus: give it an --out other than studies/corpus")
    corpus = args.out.resolve()
    entries = candidates(args.docking_git_dir, args.coreset_git_dir)
    entries = entries[: args.limit] if args.limit else entries
    kept, excluded, seen = [], [], {}
    for k, entry in enumerate(entries, start=1):
        if entry["pdbid"] in seen:
            reason = f"PDB entry {entry['pdbid']} already in the corpus as {seen[entry['pdbid']]}"
            excluded.append({"complex_id": entry["complex_id"], "source": entry["source"], "reason": reason})
            continue
        row = prepare_one(entry, args.crop, corpus)
        if "reason" in row:
            excluded.append(row)
        else:
            kept.append(row)
            seen[entry["pdbid"]] = entry["complex_id"]
        if k % 50 == 0:
            print(f"prepared {k}/{len(entries)} candidates ({len(kept)} kept)", flush=True)
    left = screen_and_cluster(kept, excluded, args.folds, corpus)
    for row in kept:
        if row not in left:
            target = corpus / "inputs" / row["complex_id"]
            for path in target.iterdir():
                path.unlink()
            target.rmdir()
    sources = [*SOURCE_COLUMNS]
    write_csv(corpus / "sources.csv", left, sources)
    write_csv(
        corpus / "excluded.csv", sorted(excluded, key=lambda r: r["complex_id"]), ["complex_id", "source", "reason"]
    )
    write_csv(corpus / "clusters.csv", left, ["complex_id", "cluster", "fold"])
    order = sorted(left, key=lambda r: (r["rotatable_bonds"], r["ligand_heavy_atoms"], r["complex_id"]))
    manifest = [
        {
            "complex_id": r["complex_id"],
            "receptor": f"inputs/{r['complex_id']}/receptor.pdb",
            "crystal_ligand": f"inputs/{r['complex_id']}/ligand.sdf",
            "family": r["cluster"],
            "fold": r["fold"],
            "source": r["source"],
        }
        for r in order
    ]
    write_csv(
        corpus / "manifest.csv", manifest, ["complex_id", "receptor", "crystal_ligand", "family", "fold", "source"]
    )
    n_clusters = len({r["cluster"] for r in left})
    print(f"{len(left)} complexes in {n_clusters} clusters, {len(excluded)} excluded (see excluded.csv)")
    return 0


SOURCE_COLUMNS = (
    "complex_id",
    "pdbid",
    "source",
    "repository",
    "commit",
    "receptor_source",
    "ligand_source",
    "receptor_atoms_kept",
    "bond_orders",
    "hetero_kept",
    "ligand_heavy_atoms",
    "rotatable_bonds",
)

if __name__ == "__main__":
    sys.exit(main())
