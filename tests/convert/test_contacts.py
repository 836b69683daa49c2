"""ContactCounter gives InteractionCounter's (ProLIF's) counts, type by type, on ProLIF's bundled complexes,
on moved copies of their poses and on poses placed exactly on the limits."""

import itertools
import math
from collections import Counter

import numpy as np
import pytest

pytest.importorskip("rdkit", reason="needs the convert extra: pip install -e '.[convert]'")
pytest.importorskip("prolif", reason="needs the convert extra: pip install -e '.[convert]'")

from rdkit import Chem  # noqa: E402
from rdkit.Geometry import Point3D  # noqa: E402

from pecan.convert import chemistry as chem  # noqa: E402
from pecan.convert import contact_geometry as geo  # noqa: E402
from pecan.convert.complexes import with_hydrogens  # noqa: E402
from pecan.convert.contacts import ContactCounter, topology_signature  # noqa: E402
from pecan.convert.examples import prolif_data  # noqa: E402
from pecan.convert.interactions import InteractionCounter  # noqa: E402

# ProLIF's small test molecules, placed to make (or just miss) one interaction: ligand, receptor, the count
# it lands in, and whether ProLIF finds it.
FRAGMENT_PAIRS = [
    ("cation", "anion", "sbond", True),
    ("anion", "cation", "sbond", True),
    ("cation_false", "anion", "sbond", True),
    ("donor", "acceptor", "num_hbonds", True),
    ("acceptor", "donor", "num_hbonds", True),
    ("acceptor_false", "donor", "num_hbonds", False),
    ("xbond_donor", "xbond_acceptor", "habond", True),
    ("xbond_acceptor", "xbond_donor", "habond", True),
    ("xbond_donor", "xbond_acceptor_false_axd", "habond", False),
    ("xbond_donor", "xbond_acceptor_false_xar", "habond", False),
    ("facetoface", "benzene", "pbond", True),
    ("edgetoface", "benzene", "pbond", True),
    ("benzene", "edgetoface", "pbond", True),
    ("chlorine", "benzene", "hpbond", False),
    ("cation", "benzene", "pbond", False),
    ("ligand", "benzene", "hpbond", False),
]


def converter_pocket(receptor_path, molecules):
    """The pocket as the converter cuts it: whole residues within 8 A of any of the molecules."""
    receptor = chem.read_receptor(receptor_path)
    return chem.pocket_submol(receptor, [chem.heavy_positions(m) for m in molecules], 8.0)


def compare(pocket, molecules) -> Counter:
    """Every molecule's five counts from both counters, one by one and as one batch; ProLIF's summed."""
    reference, counter = InteractionCounter(pocket), ContactCounter(pocket)
    expected = [reference.counts(m) for m in molecules]
    for k, (mol, want) in enumerate(zip(molecules, expected)):
        assert counter.counts(mol) == want, f"molecule {k}"
    assert counter.counts_many(molecules) == expected
    totals = Counter()
    for want in expected:
        totals.update(want)
    return totals


def moved(mol, rotation: np.ndarray, shift: np.ndarray):
    """A copy of ``mol`` rotated about its centroid and shifted."""
    xyz = mol.GetConformer().GetPositions()
    centre = xyz.mean(0)
    return with_positions(mol, (xyz - centre) @ rotation.T + centre + shift)


def with_positions(mol, xyz: np.ndarray):
    """A copy of ``mol`` at the given coordinates."""
    copy = Chem.Mol(mol)
    conformer = copy.GetConformer()
    for k, point in enumerate(xyz):
        conformer.SetAtomPosition(k, Point3D(*point))
    return copy


def random_rotation(rng, max_degrees: float) -> np.ndarray:
    """A rotation about a random axis by up to ``max_degrees``."""
    axis = rng.normal(size=3)
    axis /= np.linalg.norm(axis)
    angle = math.radians(rng.uniform(-max_degrees, max_degrees))
    k = np.array([[0, -axis[2], axis[1]], [axis[2], 0, -axis[0]], [-axis[1], axis[0], 0]])
    return np.eye(3) + math.sin(angle) * k + (1 - math.cos(angle)) * k @ k


@pytest.fixture(scope="module")
def vina():
    """ProLIF's Vina example: pocket and the crystal ligand plus nine poses, with hydrogens."""
    data = prolif_data() / "vina"
    poses = chem.read_ligands(data / "vina_output.sdf")
    crystal = chem.read_ligands(data / "lig.pdb")[0]
    pocket = converter_pocket(data / "rec.pdb", [crystal, *poses])
    return pocket, [with_hydrogens(m) for m in [crystal, *poses]]


# ---------------------------------------------------------------------------- arithmetic


def test_vector_arithmetic_is_point3d_bit_for_bit():
    rng = np.random.default_rng(0)
    u, v = rng.normal(size=(3000, 3)) * 10, rng.normal(size=(3000, 3)) * 10
    v[:1000] = u[:1000] * rng.uniform(0.5, 2, size=(1000, 1)) + rng.normal(size=(1000, 3)) * 1e-9  # near-parallel
    v[1000:1100] = -u[1000:1100]
    found = geo.angles(u, v)
    unit, cross = geo.unit(v - u), geo.cross(u, v)
    length = geo.length(u - v)
    for k in range(len(u)):
        p, q = Point3D(*u[k]), Point3D(*v[k])
        assert found[k] == p.AngleTo(q)
        assert tuple(unit[k]) == tuple(p.DirectionVector(q))
        assert tuple(cross[k]) == tuple(p.CrossProduct(q))
        assert length[k] == p.Distance(q)


def test_ring_frames_and_folding_follow_prolif():
    from prolif.utils import angle_between_limits, get_centroid, get_ring_normal_vector

    rng = np.random.default_rng(1)
    for size in (5, 6):
        rings = rng.normal(size=(200, size, 3)) * 20
        centroids, normals = geo.ring_frames(rings)
        for ring, centroid, normal in zip(rings, centroids, normals):
            assert tuple(centroid) == tuple(get_centroid(ring))
            assert tuple(normal) == tuple(get_ring_normal_vector(Point3D(*centroid), ring))
    values = np.concatenate([rng.uniform(0, math.pi, 2000), [0.0, math.pi / 2, math.pi, math.radians(90 - 35)]])
    for limits in [(0.0, math.radians(35)), (math.radians(50), math.radians(90))]:
        folded = geo.within(geo.fold_ring_angle(values), limits)
        assert list(folded) == [angle_between_limits(a, *limits, ring=True) for a in values]


def test_plane_intersection_closed_form_agrees_with_the_solve():
    rng = np.random.default_rng(2)
    n1, n2 = rng.normal(size=(300, 3)), rng.normal(size=(300, 3))
    c1, c2 = rng.normal(size=(300, 3)) * 5, rng.normal(size=(300, 3)) * 5
    closed = geo.intersect_distance(n1, c1, n2, c2)
    for k in range(300):
        for radius in (closed[k] * (1 - 1e-9), closed[k] * (1 + 1e-9)):
            assert geo.planes_meet_near(n1[k], c1[k], n2[k], c2[k], radius) == (closed[k] <= radius)


# ---------------------------------------------------------------------------- ProLIF's complexes


def test_vina_poses_and_crystal(vina):
    pocket, molecules = vina
    totals = compare(pocket, molecules)
    assert totals["num_hbonds"] > 0 and totals["hpbond"] > 0 and totals["pbond"] > 0
    assert len({topology_signature(m) for m in molecules[1:]}) == 1  # the poses share one topology


def test_implicit_hbond_complex():
    data = prolif_data() / "implicitHbond"
    poses = chem.read_ligands(data / "1.D_protonated.sdf")
    crystal = chem.read_ligands(data / "1.D.sdf")[0]
    pocket = converter_pocket(data / "receptor.pdb", [crystal, *poses])
    totals = compare(pocket, [with_hydrogens(m) for m in [crystal, *poses]])
    assert totals["num_hbonds"] > 0 and totals["pbond"] > 0


@pytest.mark.slow
def test_md_frames_of_prolif_trajectory():
    import MDAnalysis as mda
    import prolif

    universe = mda.Universe(prolif.datafiles.TOP, prolif.datafiles.TRAJ)
    ligand_atoms, protein_atoms = universe.select_atoms("resname LIG"), universe.select_atoms("protein")
    frames = []
    for _ in universe.trajectory[::50]:
        frames.append(Chem.Mol(prolif.Molecule.from_mda(ligand_atoms)))
        protein = Chem.Mol(prolif.Molecule.from_mda(protein_atoms))
    pocket = chem.pocket_submol(protein, [chem.heavy_positions(frames[-1])], 8.0)
    compare(pocket, frames[-1:])  # the last frame's protein with its own ligand
    totals = compare(chem.pocket_submol(protein, [chem.heavy_positions(m) for m in frames], 8.0), frames)
    assert totals["num_hbonds"] > 0 and totals["hpbond"] > 0


def fragment(name: str, residue: str = ""):
    """One of ProLIF's small test molecules (with hydrogens); as a receptor it gets a residue of its own."""
    mol = Chem.MolFromMol2File(str(prolif_data() / f"{name}.mol2"), removeHs=False)
    if residue:
        for atom in mol.GetAtoms():
            atom.SetMonomerInfo(
                Chem.AtomPDBResidueInfo(f" {atom.GetSymbol():<3}", residueName=residue, residueNumber=7)
            )
    return mol


@pytest.mark.parametrize("ligand,receptor,attr,found", FRAGMENT_PAIRS)
def test_prolif_fragment_pairs(ligand, receptor, attr, found):
    totals = compare(fragment(receptor, residue="REC"), [fragment(ligand)])
    assert (totals[attr] > 0) == found


def test_receptor_residue_with_the_ligands_id_is_skipped():
    pocket = fragment("anion", residue="UNL")
    for atom in pocket.GetAtoms():
        atom.GetPDBResidueInfo().SetResidueNumber(1)
    ligand = fragment("cation")
    assert ContactCounter(pocket).counts(ligand) == InteractionCounter(pocket).counts(ligand)
    assert ContactCounter(fragment("anion", residue="REC")).counts(ligand)["sbond"] == 1.0


# ---------------------------------------------------------------------------- moved poses


@pytest.mark.slow
def test_moved_vina_poses(vina):
    pocket, molecules = vina
    rng = np.random.default_rng(3)
    copies = [
        moved(mol, random_rotation(rng, 25), rng.normal(size=3) * 0.7) for mol in molecules[1:] for _ in range(12)
    ]
    totals = compare(pocket, copies)
    assert totals["num_hbonds"] > 0 and totals["hpbond"] > 0 and totals["pbond"] > 0


def pinned(mol, atom: int, target: np.ndarray, distance: float):
    """``mol`` shifted along the line from its atom to ``target`` so that the two are ``distance`` apart."""
    xyz = mol.GetConformer().GetPositions()
    offset = target - xyz[atom]
    return with_positions(mol, xyz + offset * (1 - distance / np.linalg.norm(offset)))


@pytest.mark.slow
def test_poses_pinned_on_the_limits(vina):
    """Atom pairs (any atoms and the counted groups' anchors) put exactly on 3.5, 4.5, 6.0 A, and ring
    centroid pairs on 5.5 and 6.5 A: the float64 arithmetic decides each such pose."""
    pocket, molecules = vina
    pocket_xyz = pocket.GetConformer().GetPositions()
    rng = np.random.default_rng(4)
    copies = []
    for mol in molecules[1:4]:
        xyz = mol.GetConformer().GetPositions()
        distance = np.linalg.norm(xyz[:, None] - pocket_xyz[None], axis=-1)
        for limit in (3.5, 4.5, 6.0):
            atoms, targets = np.nonzero(np.abs(distance - limit) < 0.8)
            for k in rng.choice(len(atoms), size=min(6, len(atoms)), replace=False):
                copies.append(pinned(mol, atoms[k], pocket_xyz[targets[k]], limit))
    counter = ContactCounter(pocket)
    centroids = counter.pocket.groups["rings"][0]
    residue = counter._topology(topology_signature(molecules[1]), molecules[1])[0]
    for mol in molecules[1:]:
        xyz = mol.GetConformer().GetPositions()
        for atoms in residue.groups["rings"]:
            ring_centroids, _ = geo.ring_frames(xyz[atoms])
            for ring_centroid in ring_centroids:
                gaps = np.linalg.norm(centroids - ring_centroid, axis=1)
                for target in centroids[np.abs(gaps - 6.0) < 1.5]:
                    for limit in (5.5, 6.5):
                        shift = (target - ring_centroid) * (1 - limit / np.linalg.norm(target - ring_centroid))
                        copies.append(with_positions(mol, xyz + shift))
    assert len(copies) > 30
    totals = compare(pocket, copies)
    assert totals["num_hbonds"] > 0 and totals["hpbond"] > 0 and totals["pbond"] > 0


def exactly_apart(mol, atom: int, target: np.ndarray, distance: float):
    """``mol`` moved so that its atom sits exactly ``distance`` from ``target`` along a coordinate axis (the
    float64 difference is exact, so every counter computes exactly ``distance``); None if no axis allows it."""
    xyz = mol.GetConformer().GetPositions()
    for axis, sign in itertools.product(range(3), (1.0, -1.0)):
        offset = np.zeros(3)
        offset[axis] = sign * distance
        point = target + offset
        if ((point - target) == offset).all():
            placed = xyz + (point - xyz[atom])
            placed[atom] = point
            return with_positions(mol, placed)
    return None


class CountingTree:
    """A KD-tree proxy that counts ``query_ball_point`` calls (the exact path of the 6 A residue search)."""

    def __init__(self, tree) -> None:
        self.tree, self.calls = tree, 0

    def query_ball_point(self, *args, **kwargs):
        self.calls += 1
        return self.tree.query_ball_point(*args, **kwargs)


@pytest.mark.slow
def test_poses_exactly_on_the_limits(vina):
    """Anchor pairs exactly 3.5 A (hydrogen bonds) and 4.5 A (hydrophobic) apart count, as ProLIF counts
    them; ring atoms exactly 6.0 A from atoms of residues with rings."""
    pocket, molecules = vina
    counter = ContactCounter(pocket)
    groups, pose = counter.pocket.groups, molecules[1]
    ligand = counter._topology(topology_signature(pose), pose)[0].groups
    anchors = [  # (ligand atoms, receptor points, limit)
        (ligand["hydrophobic"][:, 0], groups["hydrophobic"][0][:, 0], 4.5),
        (ligand["hbond_acceptor"][:, 0], groups["hbond_donor"][0][:, 0], 3.5),
        (ligand["hbond_donor"][:, 0], groups["hbond_acceptor"][0][:, 0], 3.5),
    ]
    ring_residues = np.isin(counter.pocket.atom_residue, groups["rings"][2])
    ring_atoms = np.unique(np.concatenate([atoms.reshape(-1) for atoms in ligand["rings"]]))
    anchors.append((ring_atoms, counter.pocket.xyz[ring_residues], 6.0))
    copies, rng = [], np.random.default_rng(5)
    for mol in molecules[1:]:
        xyz = mol.GetConformer().GetPositions()
        for atoms, points, limit in anchors:
            gaps = np.linalg.norm(xyz[atoms][:, None] - points[None], axis=-1)
            pairs = np.argwhere(np.abs(gaps - limit) < 1.0)
            for a, b in pairs[rng.permutation(len(pairs))[:3]]:
                copies.append(exactly_apart(mol, atoms[a], points[b], limit))
    copies = [c for c in copies if c is not None]
    assert len(copies) > 50
    totals = compare(pocket, copies)
    assert totals["num_hbonds"] > 0 and totals["hpbond"] > 0 and totals["pbond"] > 0


def test_residue_search_on_the_cutoff(vina):
    """A point exactly 6.0 A from a residue's nearest atom finds it, through the pocket tree's own query."""
    counter = ContactCounter(vina[0])
    pocket = counter.pocket
    pocket.tree = CountingTree(pocket.tree)
    checked = 0
    for slot in range(0, len(pocket.slots), 7):
        atoms = pocket.xyz[pocket.residue_atoms[slot]]
        for axis, sign in itertools.product(range(3), (1.0, -1.0)):
            offset = np.zeros(3)
            offset[axis] = sign * 6.0
            point = atoms[0] + offset
            if ((point - atoms[0]) != offset).any() or np.linalg.norm(atoms[1:] - point, axis=1).min() < 6.01:
                continue
            for gap, found, exact in ((0.0, True, True), (5e-8, False, True), (1e-6, False, False)):
                calls = pocket.tree.calls
                far = point + offset / 6.0 * gap
                assert counter.near(far[None, None], np.array([0]), np.array([slot]))[0] == found
                assert (pocket.tree.calls > calls) == exact
            checked += 1
            break
    assert checked >= 3


def test_batches_and_topology_changes(vina):
    pocket, molecules = vina
    counter = ContactCounter(pocket)
    poses = molecules[1:]
    one_by_one = [counter.counts(m) for m in poses]
    coords = [m.GetConformer().GetPositions() for m in poses]
    assert ContactCounter(pocket).counts_for_coords(poses[0], coords) == one_by_one
    charged = Chem.Mol(poses[0])
    nitrogen = next(a for a in charged.GetAtoms() if a.GetSymbol() == "N" and a.GetTotalNumHs() == 0)
    nitrogen.SetFormalCharge(1)
    charged.UpdatePropertyCache(strict=False)
    assert topology_signature(charged) != topology_signature(poses[0])
    other = with_hydrogens(chem.read_ligands(prolif_data() / "implicitHbond/1.D_protonated.sdf")[0])
    mixed = [poses[1], charged, other, poses[2], poses[1]]
    reference = InteractionCounter(pocket)
    assert counter.counts_many(mixed) == [reference.counts(m) for m in mixed]
