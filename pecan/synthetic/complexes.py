"""Docked poses, interaction counts, scores and whole complexes (no file I/O)."""

from __future__ import annotations

import numpy as np

from pecan.synthetic.chemistry import (
    FAR_RMSD,
    HALOGEN,
    INTERACTION_CUTOFFS,
    INTERACTION_NAMES,
    MIN_CONTACT,
    NEAR_NATIVE_FRACTION,
    PDBID_ALPHABET,
    PDBID_SPACE,
    TRANSLATION_TRIES,
    SyntheticComplex,
    _random_units,
    _rotation_matrices,
    _squared_distances,
    _unit,
)
from pecan.synthetic.molecules import _make_ligand, _make_pocket

# ---------------------------------------------------------------- poses


def _target_rmsds(rng, n_poses):
    near = rng.random(n_poses) < rng.uniform(*NEAR_NATIVE_FRACTION)
    return np.where(near, rng.uniform(0.25, 2.0, n_poses), rng.uniform(2.0, FAR_RMSD, n_poses))


def _twist_and_turn(ligand, bonds, torsions, axis, angle):
    """Apply per-pose tail torsions, then a rigid rotation about the crystal centroid."""
    n_poses = len(angle)
    xyz = np.broadcast_to(ligand.xyz, (n_poses, *ligand.xyz.shape)).copy()
    rows = np.arange(n_poses)
    for step in range(bonds.shape[1]):
        child = bonds[:, step]
        origin = xyz[rows, ligand.parent[child]]
        rotation = _rotation_matrices(_unit(xyz[rows, child] - origin), torsions[:, step])
        moved = (xyz - origin[:, None]) @ rotation.transpose(0, 2, 1) + origin[:, None]
        xyz = np.where(ligand.subtree[child][..., None], moved, xyz)
    centre = ligand.xyz.mean(0)
    rotation = _rotation_matrices(axis, angle)
    return (xyz - centre) @ rotation.transpose(0, 2, 1) + centre


def _docked_ligands(rng, ligand, targets, pocket_xyz):
    """Ligand coordinates (n_poses, n, 3) whose RMSD to the crystal equals `targets`."""
    n_poses, max_steps = len(targets), 3
    if len(ligand.rotatable):
        bonds = ligand.rotatable[rng.integers(0, len(ligand.rotatable), (n_poses, max_steps))]
    else:
        bonds = np.zeros((n_poses, 0), int)
    used = np.arange(bonds.shape[1]) < rng.integers(0, max_steps + 1, n_poses)[:, None]
    torsion_draw = rng.uniform(-1.0, 1.0, bonds.shape) * used
    axis, turn_draw = _random_units(rng, (n_poses,)), rng.random(n_poses)
    directions = _random_units(rng, (n_poses, TRANSLATION_TRIES))
    radius = np.sqrt(((ligand.xyz - ligand.xyz.mean(0)) ** 2).sum(1).mean())
    scale = np.ones(n_poses)
    for _ in range(10):
        torsions = scale[:, None] * torsion_draw * np.minimum(np.pi, targets / 1.5)[:, None]
        angle = scale * turn_draw * np.minimum(np.pi, targets / radius)
        xyz = _twist_and_turn(ligand, bonds, torsions, axis, angle)
        squared = ((xyz - ligand.xyz) ** 2).sum(-1).mean(1)
        # leave room for a translation to make up the rest of the target
        overshoot = squared > (0.9 * targets) ** 2
        if not overshoot.any():
            break
        scale[overshoot] *= 0.5
    # |d + s u|^2 averaged over atoms equals target^2 for this shift s along each direction u
    along = ((xyz - ligand.xyz).mean(1)[:, None] * directions).sum(-1)
    room = (targets**2 - squared)[:, None]
    shift = np.maximum(-along + np.sqrt(np.maximum(along**2 + room, 0.0)), 0.0)
    moves = shift[..., None] * directions
    best = _fewest_clashes(xyz, moves, pocket_xyz)
    return xyz + moves[np.arange(n_poses), best][:, None]


def _fewest_clashes(xyz, moves, pocket_xyz, probes=8):
    """Index of the move per pose that overlaps the protein least, as a docking search would."""
    # a handful of spread-out ligand atoms ranks the candidate moves well enough
    probe_xyz = xyz[:, :: max(1, xyz.shape[1] // probes)]
    placed = probe_xyz[:, None] + moves[:, :, None]
    clashes = (_squared_distances(placed, pocket_xyz) < MIN_CONTACT**2).sum((-1, -2))
    return clashes.argmin(1)


def _pair_masks(ligand_atoms, pocket_atoms):
    """(5, n_ligand, n_pocket) bool masks of atom pairs that can form each interaction."""
    lig, pro = ligand_atoms, pocket_atoms

    def pairs(a, b):
        return a.astype(bool)[:, None] & b.astype(bool)[None, :]

    hbond = pairs(lig.field("donor"), pro.field("acceptor")) | pairs(lig.field("acceptor"), pro.field("donor"))
    salt = pairs(lig.field("formal_charge") > 0, pro.field("formal_charge") < 0) | pairs(
        lig.field("formal_charge") < 0, pro.field("formal_charge") > 0
    )
    masks = [
        hbond,
        pairs(lig.hydrophobic, pro.hydrophobic),
        pairs(lig.field("element") == HALOGEN, pro.field("acceptor")),
        salt,
        pairs(lig.aromatic, pro.aromatic),
    ]
    return np.stack(masks)


def _interaction_counts(ligand_xyz, pocket_xyz, masks):
    """(n_poses, 5) pair counts in INTERACTION_NAMES order."""
    n_poses = len(ligand_xyz)
    d2 = _squared_distances(ligand_xyz, pocket_xyz).reshape(n_poses, -1)
    # few pairs are in range, so test the interaction types on those alone
    pose, pair = np.nonzero((d2 < INTERACTION_CUTOFFS.max() ** 2) & (d2 >= MIN_CONTACT**2))
    in_reach = d2[pose, pair] < INTERACTION_CUTOFFS[:, None] ** 2
    hits = masks.reshape(len(masks), -1)[:, pair] & in_reach
    return np.stack([np.bincount(pose, weights=row, minlength=n_poses) for row in hits], 1)


def _scores(rng, best, rmsd):
    """Vina-like kcal/mol: worse with RMSD, noisy enough that ranking by score is imperfect."""
    score = best + 0.45 * np.minimum(rmsd, 8.0) + rng.normal(0.0, 0.9, len(rmsd))
    return np.clip(score, -14.0, -1.0)


# ---------------------------------------------------------------- complexes


def complex_id_for(index, seed=0):
    """Deterministic PDB-like code (digit 1-9 + 3 base-36 characters) for global complex `index`."""
    if not 0 <= index < PDBID_SPACE:
        raise ValueError(f"complex index {index} outside 0..{PDBID_SPACE - 1}")
    # an affine map with a multiplier coprime to 2 and 3 is a bijection on PDBID_SPACE
    code = (104729 * index + 7919 * seed + 1013) % PDBID_SPACE
    chars = []
    for _ in range(3):
        code, digit = divmod(code, 36)
        chars.append(PDBID_ALPHABET[digit])
    return str(code + 1) + "".join(reversed(chars))


def _uniform_int(rng, bounds):
    return int(rng.integers(bounds[0], bounds[1] + 1))


def generate_complex(
    index, seed=0, poses_per_complex=(10, 30), pocket_atoms=(300, 900), ligand_atoms=(15, 60), rmsd_threshold=2.0
):
    """Build complex number `index` of the data set drawn with `seed` (no file I/O)."""
    rng = np.random.default_rng([seed, index])
    ligand = _make_ligand(rng, _uniform_int(rng, ligand_atoms))
    pocket_xyz, pocket = _make_pocket(rng, ligand, _uniform_int(rng, pocket_atoms))
    n_poses = _uniform_int(rng, poses_per_complex)
    docked = _docked_ligands(rng, ligand, _target_rmsds(rng, n_poses), pocket_xyz)
    # attributes are computed from the float32 coordinates that land in the file
    ligand_xyz = np.concatenate([ligand.xyz[None], docked]).astype(np.float32)
    geometry = ligand_xyz.astype(np.float64)
    rmsd = np.sqrt(((geometry - geometry[0]) ** 2).sum(-1).mean(1))
    counts = _interaction_counts(ligand_xyz, pocket_xyz.astype(np.float32), _pair_masks(ligand.atoms, pocket))
    affinity, score = _affinity_and_scores(rng, len(ligand.xyz), rmsd)
    arrays = _pose_arrays(ligand, pocket_xyz, pocket, ligand_xyz)
    attrs = [_pose_attrs(rmsd[k], score[k], counts[k], rmsd_threshold) for k in range(len(rmsd))]
    attrs[0]["rmsd"], attrs[0]["label"] = 0.0, 1
    # docking programs list poses best score first
    order = 1 + np.argsort(score[1:], kind="stable")
    return SyntheticComplex(
        complex_id=complex_id_for(index, seed),
        affinity=affinity,
        crystal=arrays[0],
        crystal_attrs=attrs[0],
        poses=arrays[order],
        pose_attrs=[attrs[k] for k in order],
        n_ligand_atoms=len(ligand.xyz),
    )


def _affinity_and_scores(rng, n_ligand, rmsd):
    """pK that grows with ligand size, and scores for the crystal (rmsd[0]) and docked poses."""
    affinity = float(np.clip(2.5 + 0.09 * n_ligand + rng.normal(0.0, 1.2), 2.0, 11.0))
    best = -(0.85 * affinity + 2.0) + rng.normal(0.0, 0.6)
    crystal = best + rng.normal(0.0, 0.3)
    return affinity, np.concatenate([[crystal], _scores(rng, best, rmsd[1:])])


def _pose_arrays(ligand, pocket_xyz, pocket, ligand_xyz):
    """(n_poses, n_atoms, 22) float32: ligand rows, then the shared pocket rows."""
    template = np.concatenate(
        [
            np.concatenate([ligand.xyz, ligand.atoms.features(+1)], 1),
            np.concatenate([pocket_xyz, pocket.features(-1)], 1),
        ]
    ).astype(np.float32)
    arrays = np.broadcast_to(template, (len(ligand_xyz), *template.shape)).copy()
    arrays[:, : len(ligand.xyz), :3] = ligand_xyz
    return arrays


def _pose_attrs(rmsd, score, counts, rmsd_threshold):
    attrs = {"rmsd": float(rmsd), "score": float(score), "label": int(rmsd < rmsd_threshold)}
    attrs.update({name: float(value) for name, value in zip(INTERACTION_NAMES, counts)})
    return attrs
