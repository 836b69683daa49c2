"""Vector arithmetic for ``contacts``: RDKit ``Point3D``'s float64 operations, in its order, over arrays.

ProLIF measures with ``rdkit.Geometry.Point3D``; its decisions at a limit depend on the last bit, so every
function here performs the same IEEE operations in the same order as the ``Point3D`` method it stands for
(tests/convert/test_contacts.py compares them bit for bit): a length is the square root of x*x + y*y + z*z,
a direction is each component divided by that length, and an angle is the dot product over the square root
of the product of both squared lengths, clipped to [-1, 1], through the C library's ``acos``.
"""

from __future__ import annotations

import math

import numpy as np

HALF_PI = math.pi / 2
# Rounding differences of the cheaper arithmetic are ~1e-12 A; closer to a limit than this, decide as ProLIF.
DECISION_MARGIN = 1e-7


# ---------------------------------------------------------------------------- Point3D arithmetic


def squared_length(v: np.ndarray) -> np.ndarray:
    return v[..., 0] * v[..., 0] + v[..., 1] * v[..., 1] + v[..., 2] * v[..., 2]


def length(v: np.ndarray) -> np.ndarray:
    return np.sqrt(squared_length(v))


def unit(v: np.ndarray) -> np.ndarray:
    return v / length(v)[..., None]


def dot(u: np.ndarray, v: np.ndarray) -> np.ndarray:
    return u[..., 0] * v[..., 0] + u[..., 1] * v[..., 1] + u[..., 2] * v[..., 2]


def cross(u: np.ndarray, v: np.ndarray) -> np.ndarray:
    return np.stack(
        [
            u[..., 1] * v[..., 2] - u[..., 2] * v[..., 1],
            (-u[..., 0]) * v[..., 2] + u[..., 2] * v[..., 0],
            u[..., 0] * v[..., 1] - u[..., 1] * v[..., 0],
        ],
        axis=-1,
    )


def angles(u: np.ndarray, v: np.ndarray) -> np.ndarray:
    """Angles (radians) between vectors [c, 3], bit for bit as RDKit's ``Point3D.AngleTo``."""
    cosine = np.clip(dot(u, v) / np.sqrt(squared_length(u) * squared_length(v)), -1.0, 1.0)
    # math.acos is the C library's acos, which RDKit calls; numpy's arccos may differ in the last bit.
    return np.array([math.acos(c) for c in cosine.tolist()], dtype=np.float64)


def fold_ring_angle(angle: np.ndarray) -> np.ndarray:
    """An angle to a ring normal folded into [0, pi/2] as ProLIF folds it (a normal's sign is arbitrary)."""
    folded = np.where(angle > HALF_PI, HALF_PI - np.fmod(angle, HALF_PI), angle)
    return np.where(angle >= math.pi, np.fmod(angle, HALF_PI), folded)


def within(value: np.ndarray, limits: tuple[float, float]) -> np.ndarray:
    return (limits[0] <= value) & (value <= limits[1])


def ring_frames(coords: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Centroids [..., 3] and (unnormalised) normals [..., 3] of rings given as matched atoms [..., n, 3]."""
    total = coords[..., 0, :]
    for k in range(1, coords.shape[-2]):  # one atom after another, as numpy's mean over the atoms adds them
        total = total + coords[..., k, :]
    centroid = total / coords.shape[-2]
    normal = cross(unit(coords[..., 0, :] - centroid), unit(coords[..., 1, :] - centroid))
    return centroid, normal


# ---------------------------------------------------------------------------- geometry over poses


def pairs_within(ligand: np.ndarray, receptor: np.ndarray, limit: float):
    """(pose, ligand match, receptor match) indices with |ligand - receptor| <= limit.

    ligand [p, l, 3], receptor [m, 3].
    """
    if not ligand.shape[1] or not len(receptor):
        return (np.zeros(0, dtype=np.int64),) * 3
    return np.nonzero(length(ligand[:, :, None, :] - receptor[None, None, :, :]) <= limit)


def in_reach(receptor: np.ndarray, ligand: np.ndarray, limit: float) -> np.ndarray:
    """Mask of receptor points [m, 3] inside the box of ligand points [..., 3] widened by ``limit``: the others
    are farther than ``limit`` from every ligand point."""
    points = ligand.reshape(-1, 3)
    if not len(points):
        return np.zeros(len(receptor), dtype=bool)
    reach = limit + DECISION_MARGIN
    return ((receptor >= points.min(0) - reach) & (receptor <= points.max(0) + reach)).all(1)


def hbond_geometry(acceptor, donor, hydrogen, limits) -> np.ndarray:
    """Whether the angle at the hydrogen between its donor and the acceptor is within ``limits`` ([c, 3] each)."""
    return within(angles(unit(donor - hydrogen), unit(acceptor - hydrogen)), limits)


def xbond_geometry(acceptor, neighbour, donor, halogen, at_halogen, at_acceptor) -> np.ndarray:
    """Whether the angles at the halogen (donor, acceptor) and at the acceptor (halogen, neighbour) are in range."""
    keep = within(angles(unit(donor - halogen), unit(acceptor - halogen)), at_halogen)
    return keep & within(angles(unit(halogen - acceptor), unit(neighbour - acceptor)), at_acceptor)


def stacking_geometry(lc, ln, rc, rn, rule: tuple) -> np.ndarray:
    """Whether ring pairs (ligand centroid, normal, receptor centroid, normal; [c, 3] each) stack under a rule."""
    _, plane_limits, axis_limits, radius = rule
    keep = within(fold_ring_angle(angles(ln, rn)), plane_limits)
    axis_ligand = within(fold_ring_angle(angles(ln, unit(rc - lc))), axis_limits)
    keep &= axis_ligand | within(fold_ring_angle(angles(rn, unit(lc - rc))), axis_limits)
    if radius is None or not keep.any():
        return keep
    k = np.nonzero(keep)[0]
    gap = intersect_distance(ln[k], lc[k], rn[k], rc[k]) - radius
    close = np.abs(gap) <= DECISION_MARGIN
    keep[k] = gap <= 0
    keep[k[close]] = [planes_meet_near(ln[q], lc[q], rn[q], rc[q], radius) for q in k[close]]
    return keep


def intersect_distance(n1, c1, n2, c2) -> np.ndarray:
    """Distance from the line where two ring planes meet to the nearer centroid, in closed form ([c] values)."""
    direction = cross(n1, n2)
    volume = squared_length(direction)[:, None]  # the determinant of the rows n1, n2, n1 x n2
    point = (dot(n1, c1)[:, None] * cross(n2, direction) + dot(n2, c2)[:, None] * cross(direction, n1)) / volume
    direction = unit(direction)
    closest = point + direction * dot(direction, c1 - point)[:, None]
    return np.minimum(length(c1 - closest), length(c2 - closest))


def planes_meet_near(n1, c1, n2, c2, radius: float) -> bool:
    """``intersect_distance`` <= radius for one ring pair, with ProLIF's arithmetic (a LAPACK solve)."""
    direction = cross(n1, n2)
    system = np.array([n1, n2, direction])
    if np.linalg.det(system) == 0:
        return False
    offsets = np.array([[dot(n1, c1)], [dot(n2, c2)], [0.0]])
    point = np.linalg.solve(system, offsets).T[0]
    direction = direction / length(direction)
    closest = point + direction * dot(direction, c1 - point)
    return bool(min(length(c1 - closest), length(c2 - closest)) <= radius)
