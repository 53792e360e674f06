"""Inertial-parameter conventions and the physical-consistency check.

A rigid body's inertial parameters are the 10-vector (SI units, about the body frame's origin)::

    theta = [m, m*cx, m*cy, m*cz, Ixx, Ixy, Iyy, Ixz, Iyz, Izz]

which is the order of pinocchio's ``Inertia.toDynamicParameters()``. ``I`` (3x3) is the rotational
inertia about the frame origin; ``I_com`` the one about the centre of mass (COM):
``I = I_com + m (|c|^2 1 - c c^T)``.

The pseudo-inertia (Wensing, Kim, Slotine 2017) is the 4x4 matrix::

    J(theta) = [[Sigma, h], [h^T, m]],   Sigma = tr(I)/2 * 1 - I,   h = m c

``theta`` could come from a real body (a non-negative mass density) iff ``J(theta) >= 0``
(full physical consistency); it implies ``m >= 0``, ``I_com >= 0`` and the triangle inequalities.
Inertia "about the COM" as six numbers follows ``geometry_msgs/Inertia``:
``[ixx, ixy, ixz, iyy, iyz, izz]``.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

THETA_NAMES = ("m", "mcx", "mcy", "mcz", "Ixx", "Ixy", "Iyy", "Ixz", "Iyz", "Izz")
"""Names of the 10 entries of ``theta``, in order."""
N_BODY_PARAMS = len(THETA_NAMES)
"""Parameters of one rigid body (10)."""

CONSISTENCY_TOLERANCE = 1e-10
"""Default absolute tolerance (SI: kg*m^2 for J's eigenvalues) of :func:`check_consistency`."""


def _basis() -> np.ndarray:
    """(10, 4, 4) matrices ``A_i`` with ``J(theta) = sum_i theta_i A_i``."""
    basis = np.zeros((10, 4, 4))
    basis[0, 3, 3] = 1.0
    for k in range(3):  # h = m c
        basis[1 + k, k, 3] = basis[1 + k, 3, k] = 1.0
    # Sigma = tr(I)/2 1 - I with I = [[Ixx, Ixy, Ixz], [Ixy, Iyy, Iyz], [Ixz, Iyz, Izz]]
    for idx, (r, c) in zip((4, 6, 9), ((0, 0), (1, 1), (2, 2))):  # Ixx, Iyy, Izz
        basis[idx, :3, :3] = 0.5 * np.eye(3)
        basis[idx, r, c] -= 1.0
    for idx, (r, c) in zip((5, 7, 8), ((0, 1), (0, 2), (1, 2))):  # Ixy, Ixz, Iyz
        basis[idx, r, c] = basis[idx, c, r] = -1.0
    return basis


PSEUDO_INERTIA_BASIS: np.ndarray = _basis()
"""(10, 4, 4): ``pseudo_inertia(theta) == np.tensordot(theta, PSEUDO_INERTIA_BASIS, 1)``."""
PSEUDO_INERTIA_BASIS.setflags(write=False)


def inertia_matrix(theta: np.ndarray) -> np.ndarray:
    """3x3 rotational inertia about the frame origin (kg*m^2) from ``theta`` (10,)."""
    t = np.asarray(theta, dtype=float)
    return np.array([[t[4], t[5], t[7]], [t[5], t[6], t[8]], [t[7], t[8], t[9]]])


def pseudo_inertia(theta: np.ndarray) -> np.ndarray:
    """4x4 pseudo-inertia ``J`` of ``theta`` (10,); linear in ``theta``."""
    return np.tensordot(np.asarray(theta, dtype=float), PSEUDO_INERTIA_BASIS, axes=1)


def theta_from_pseudo_inertia(J: np.ndarray) -> np.ndarray:
    """Inverse of :func:`pseudo_inertia`: ``theta`` (10,) from a symmetric 4x4 ``J``."""
    J = 0.5 * (np.asarray(J, dtype=float) + np.asarray(J, dtype=float).T)
    sigma = J[:3, :3]
    inertia = np.trace(sigma) * np.eye(3) - sigma
    h = J[:3, 3]
    return np.array(
        [
            J[3, 3],
            h[0],
            h[1],
            h[2],
            inertia[0, 0],
            inertia[0, 1],
            inertia[1, 1],
            inertia[0, 2],
            inertia[1, 2],
            inertia[2, 2],
        ]
    )


def theta_from_inertia(mass: float, com: np.ndarray, inertia_com: np.ndarray) -> np.ndarray:
    """``theta`` (10,) from mass (kg), COM (3,) (m, body frame) and 3x3 inertia about the COM."""
    c = np.asarray(com, dtype=float).reshape(3)
    i_com = np.asarray(inertia_com, dtype=float).reshape(3, 3)
    inertia = i_com + mass * (c @ c * np.eye(3) - np.outer(c, c))
    h = mass * c
    return np.array(
        [
            mass,
            h[0],
            h[1],
            h[2],
            inertia[0, 0],
            inertia[0, 1],
            inertia[1, 1],
            inertia[0, 2],
            inertia[1, 2],
            inertia[2, 2],
        ]
    )


def inertia_from_theta(theta: np.ndarray) -> tuple[float, np.ndarray, np.ndarray]:
    """``(mass, com (3,), inertia about the COM (3,3))`` from ``theta``; raises if ``m <= 0``."""
    t = np.asarray(theta, dtype=float)
    mass = float(t[0])
    if not mass > 0.0:
        raise ValueError(f"mass must be positive to define a centre of mass, got {mass!r}")
    c = t[1:4] / mass
    i_com = inertia_matrix(t) - mass * (c @ c * np.eye(3) - np.outer(c, c))
    return mass, c, i_com


def inertia_to_msg_order(inertia_com: np.ndarray) -> np.ndarray:
    """3x3 inertia -> ``[ixx, ixy, ixz, iyy, iyz, izz]`` (``geometry_msgs/Inertia`` order)."""
    i = np.asarray(inertia_com, dtype=float)
    return np.array([i[0, 0], i[0, 1], i[0, 2], i[1, 1], i[1, 2], i[2, 2]])


def inertia_from_msg_order(six: np.ndarray) -> np.ndarray:
    """``[ixx, ixy, ixz, iyy, iyz, izz]`` -> symmetric 3x3 inertia."""
    ixx, ixy, ixz, iyy, iyz, izz = np.asarray(six, dtype=float)
    return np.array([[ixx, ixy, ixz], [ixy, iyy, iyz], [ixz, iyz, izz]])


@dataclass(frozen=True)
class ConsistencyReport:
    """Which physical-consistency conditions ``theta`` meets (see :func:`check_consistency`).

    ``fully_consistent`` is the one that matters (``m > 0`` and ``J >= 0``); the others say which
    weaker condition broke, so a failure message names it.
    """

    fully_consistent: bool
    min_pseudo_inertia_eig: float
    positive_mass: bool
    inertia_positive_definite: bool
    triangle_inequalities: bool
    tolerance: float
    problems: tuple[str, ...] = field(default=())

    def __bool__(self) -> bool:
        return self.fully_consistent


def check_consistency(theta: np.ndarray, tol: float = CONSISTENCY_TOLERANCE) -> ConsistencyReport:
    """Check the physical consistency of one body's ``theta`` (10,).

    Conditions, each with absolute tolerance ``tol`` (kg*m^2 for inertias and J's eigenvalues):

    - positive mass: ``m > tol`` (kg);
    - inertia about the COM positive definite: its eigenvalues ``> -tol``;
    - triangle inequalities of the principal moments about the COM: ``Ia + Ib >= Ic - tol``;
    - full consistency: ``m > tol`` and ``lambda_min(J(theta)) >= -tol``.
    """
    return check_consistencies(np.reshape(theta, (1, N_BODY_PARAMS)), tol)[0]


def check_consistencies(
    thetas: np.ndarray, tol: float = CONSISTENCY_TOLERANCE
) -> list[ConsistencyReport]:
    """:func:`check_consistency` of each of ``thetas`` (N, 10), the eigenvalues of all bodies
    computed at once (a humanoid's 39 links in under a sixth of the time of one at a time)."""
    t = np.asarray(thetas, dtype=float).reshape(-1, N_BODY_PARAMS)
    finite = np.isfinite(t).all(axis=1)
    t = np.where(finite[:, None], t, 0.0)
    min_eigs = np.linalg.eigvalsh(np.tensordot(t, PSEUDO_INERTIA_BASIS, axes=1))[:, 0]
    masses = t[:, 0]
    positive_masses = masses > tol
    m = np.where(positive_masses, masses, 1.0)[:, None, None]
    c = t[:, 1:4, None] / m  # (N, 3, 1)
    inertias = t[:, [4, 5, 7, 5, 6, 8, 7, 8, 9]].reshape(-1, 3, 3)
    shift = (c * c).sum(axis=1, keepdims=True) * np.eye(3) - c * np.swapaxes(c, 1, 2)
    moments_com = np.linalg.eigvalsh(inertias - m * shift)
    reports = []
    for min_eig, positive_mass, moments, theta, ok in zip(
        min_eigs.tolist(), positive_masses.tolist(), moments_com, t, finite.tolist()
    ):
        if not ok:
            reports.append(
                ConsistencyReport(
                    False, float("nan"), False, False, False, tol, ("theta has non-finite entries",)
                )
            )
            continue
        problems: list[str] = []
        if not positive_mass:
            problems.append(f"mass {theta[0]:.6g} kg is not positive")
            pd, triangle = False, False
        else:
            pd = bool(moments[0] > -tol)
            if not pd:
                problems.append(
                    f"inertia about the COM is not positive definite (eigenvalues {moments})"
                )
            a, b, c_ = moments
            triangle = bool(a + b >= c_ - tol)
            if not triangle:
                problems.append(f"triangle inequality broken: {a:.6g} + {b:.6g} < {c_:.6g}")
        psd = min_eig >= -tol
        if not psd:
            problems.append(
                f"pseudo-inertia not positive semidefinite (min eigenvalue {min_eig:.3g})"
            )
        reports.append(
            ConsistencyReport(
                positive_mass and psd, min_eig, positive_mass, pd, triangle, tol, tuple(problems)
            )
        )
    return reports
