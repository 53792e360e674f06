"""The base's tilt: the direction of gravity in a chain's root frame, from its joint torques.

Two angles (roll, pitch) minimising the consistent fit's torque residual
(:func:`estimate_base_tilt`). A robot is never mounted exactly level: on the KUKA LWR4+ runs a
tilt of about 1 degree is worth 10 % of the held-out RMS, which the unconstrained least squares
absorbs into inconsistent links and the consistent fit cannot. The torques are linear in the
gravity (a base acceleration), so the regressor is evaluated once for every tilt
(:func:`gravity_normal_equations`).

A tilt is reported only where the motion separates it from the joints' zero offsets
(:func:`tilt_separation`): when joint 1 hardly turns, a pitch of the base changes the torques as
a zero offset of joint 2 does, and the search would report one for the other. The tilt's
standard errors are taken with every joint's zero offset and every parameter of the links and
drives free (the Schur complement of the linearised torques, each joint's rows weighted by its
residual); a tilt within :data:`~inertia_id_ros.core.significance.IDENTIFIED_T` standard errors
of level, or whose information the offsets take more than :data:`TILT_SEPARATION` of, is not
told apart from them, and :func:`~inertia_id_ros.chain.identify.identify_links` keeps the base
level.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pinocchio as pin
from scipy.optimize import minimize

from inertia_id_ros.chain.link_fit import build_link_problem
from inertia_id_ros.chain.links import (
    JointTorqueData,
    LinkModel,
    gravity_columns,
    regression_system,
    with_gravity,
)
from inertia_id_ros.core.covariance import channel_grams
from inertia_id_ros.core.significance import IDENTIFIED_T
from inertia_id_ros.options import DEFAULT_PRIOR_WEIGHT
from inertia_id_ros.solvers import Problem, solve

DEFAULT_TILT_SAMPLES = 2000
"""Samples (evenly strided) of the base-tilt and torque-delay searches. Two angles and one delay
are decided by the motion's span, not its density: on the KUKA run 1 (4961 samples), 2000 give
the tilt of all of them to 0.01 degrees and a delay as good on held-out runs (the benchmark
``benchmarks/bench_fit_links.py``)."""
MAX_TILT = 0.1
"""Largest base tilt searched (rad, about 6 degrees); beyond it the URDF's base is wrong."""


TILT_SEPARATION = 0.05
"""A tilt whose information (the smallest eigenvalue of its normal equations) the joints' zero
offsets take all but this share of is not told apart from them: on a motion whose first joint
turns, the share is 0.3 or more; with the first joint still, a pitch is a zero offset of the
second joint and the share under 1e-3."""


SEPARATION_SAMPLES = 1000
"""Samples (evenly spread) :func:`tilt_separation` linearises the torques at."""


@dataclass(frozen=True)
class TiltSeparation:
    """Whether the motion tells a base tilt from the joints' zero offsets: the standard error
    ``std`` (rad) of the tilt's size with every joint's zero offset free (``inf``: not
    determined) and ``std_without_offsets`` with them known; ``share``: the share of the
    tilt's information the offsets leave (0..1); ``t``: how many standard errors the tilt lies
    from level (offsets free); ``twin``: the joint whose zero offset most resembles the tilt;
    ``separable``: the tilt is reported (module docstring)."""

    std: float
    std_without_offsets: float
    share: float
    t: float
    twin: str
    separable: bool

    @property
    def like_an_offset(self) -> bool:
        """The joints' zero offsets take the tilt's information (else, not separable, the tilt
        is within :data:`~inertia_id_ros.core.significance.IDENTIFIED_T` standard errors of
        level)."""
        return self.share < TILT_SEPARATION

    def as_json(self) -> dict:
        """The figures, angles in degrees (``null``: not determined)."""
        return {
            "separable": self.separable,
            "std_deg": float(np.degrees(self.std)) if np.isfinite(self.std) else None,
            "std_without_offsets_deg": float(np.degrees(self.std_without_offsets))
            if np.isfinite(self.std_without_offsets)
            else None,
            "information_share": self.share,
            "t": self.t,
            "twin_joint": self.twin,
        }


@dataclass(frozen=True)
class BaseTilt:
    """The base's tilt: ``roll``, ``pitch`` (rad) rotating the model's gravity ``gravity`` (3,)
    (m/s², root frame, after the tilt); ``rms`` (N·m) the consistent fit's training RMS with it
    and ``level_rms`` without; ``x`` the fit's parameters at it; ``separation`` whether the
    motion tells it from the joints' zero offsets (``None``: not judged)."""

    roll: float
    pitch: float
    gravity: np.ndarray
    rms: float
    level_rms: float
    x: np.ndarray | None = None
    separation: TiltSeparation | None = None

    @property
    def kept_level(self) -> bool:
        """The motion does not tell the tilt from the joints' zero offsets: the base is kept
        level."""
        return self.separation is not None and not self.separation.separable

    def as_json(self) -> dict:
        """``{"roll_rad", "pitch_rad", "gravity", "rms", "level_rms", "kept_level",
        "separation"}`` (the tilt found, whether kept or not)."""
        return {
            "roll_rad": self.roll,
            "pitch_rad": self.pitch,
            "gravity": self.gravity.tolist(),
            "rms": self.rms,
            "level_rms": self.level_rms,
            "kept_level": self.kept_level,
            "separation": None if self.separation is None else self.separation.as_json(),
        }


def tilted_gravity(model: LinkModel, roll: float, pitch: float) -> np.ndarray:
    """(3,) the model's gravity (root frame) rotated by ``roll`` about x, then ``pitch`` about y
    (rad): the gravity of the base tilted by the opposite rotation."""
    return pin.rpy.rpyToMatrix(roll, pitch, 0.0) @ np.asarray(model.model.gravity.linear)


def gravity_normal_equations(
    model: LinkModel, data: JointTorqueData
) -> tuple[np.ndarray, np.ndarray, float, int]:
    """Normal equations ``(gram (P, P), moment (P,), yty, n_rows)`` of the regressor extended by
    gravity: ``E = [Y_0, G_x, G_y, G_z]`` with ``Y_0`` the model's regressor of ``data``
    without gravity and ``G_a`` the links' mass and first-moment columns of the regressor at
    rest under unit gravity along the root frame's axis ``a``, so that the regressor under any
    gravity ``g`` (m/s², root frame) is ``Y(g) = E @`` :func:`gravity_map` ``(model, g)`` (the
    torques are linear in the gravity, a base acceleration)."""
    weightless = with_gravity(model, np.zeros(3))
    parts = []
    for start in range(0, data.n_samples, _GRAVITY_CHUNK):
        chunk = model.in_joint_order(data.subset(slice(start, start + _GRAVITY_CHUNK)))
        Y, y = regression_system(weightless, chunk)
        unit = model.gravity_columns_at_rest(chunk.positions)
        parts.append((np.hstack([Y] + [unit[:, a].reshape(Y.shape[0], -1) for a in range(3)]), y))
    gram = sum(
        channel_grams(E.reshape(-1, model.n_joints, E.shape[1])).sum(axis=0) for E, _ in parts
    )  # per joint: the zero columns skipped
    moment = sum(E.T @ y for E, y in parts)
    yty = float(sum(y @ y for _, y in parts))
    return gram, moment, yty, data.n_samples * model.n_joints


_GRAVITY_CHUNK = 2000  # samples per block of gravity_normal_equations


def gravity_map(model: LinkModel, gravity: np.ndarray) -> np.ndarray:
    """(P, p) ``T`` with ``Y(gravity) = E @ T`` for the extended regressor ``E`` of
    :func:`gravity_normal_equations` (``gravity`` (3,) m/s², root frame)."""
    p, columns = model.n_parameters, gravity_columns(model)
    T = np.zeros((p + 3 * columns.size, p))
    T[np.arange(p), np.arange(p)] = 1.0
    for a, g in enumerate(np.asarray(gravity, dtype=float)):
        T[p + a * columns.size + np.arange(columns.size), columns] = g
    return T


def tilted_gravity_jacobian(model: LinkModel, roll: float, pitch: float) -> np.ndarray:
    """(3, 2) derivative of :func:`tilted_gravity` (m/s² per rad) by ``roll`` and ``pitch``."""
    g0 = np.asarray(model.model.gravity.linear)
    Rx = pin.rpy.rpyToMatrix(roll, 0.0, 0.0)
    Ry = pin.rpy.rpyToMatrix(0.0, pitch, 0.0)
    return np.column_stack(
        [Ry @ Rx @ np.cross([1.0, 0.0, 0.0], g0), Ry @ np.cross([0.0, 1.0, 0.0], Rx @ g0)]
    )


def estimate_base_tilt(
    model: LinkModel,
    data: JointTorqueData,
    method: str = "lmi",
    prior_weight: float = DEFAULT_PRIOR_WEIGHT,
    max_samples: int = DEFAULT_TILT_SAMPLES,
    **solver_options: object,
) -> BaseTilt:
    """The base tilt (roll, pitch within +-:data:`MAX_TILT` rad) minimising the training torque
    RMS of the ``method`` fit (prior weight ``prior_weight``) on at most ``max_samples`` samples of
    ``data``. The regressor is evaluated once: every tilt's normal equations follow from
    :func:`gravity_normal_equations`; every solve is warm-started from the previous one.

    Search, in two steps: quasi-Newton (L-BFGS-B from level) on the fit's objective (training
    residual plus prior term), whose gradient is exact and cheap (at the fit's optimum ``x`` it is
    the residual's derivative by the tilt with ``x`` held: the constraints do not depend on the
    tilt); then, as the prior term moves that optimum a little, the training RMS is fitted by a
    quadratic in the angles on six tilts :data:`TILT_POLISH_STEP` about it, and its vertex is
    kept if it scores best."""
    rows = np.arange(0, data.n_samples, max(1, int(np.ceil(data.n_samples / max_samples))))
    gram, moment, yty, n_rows = gravity_normal_equations(model, data.subset(rows))
    columns = gravity_columns(model)
    p = model.n_parameters
    previous: list = []
    rms: dict[tuple[float, float], float] = {}
    solutions: dict[tuple[float, float], np.ndarray] = {}

    def fit(angles: np.ndarray) -> tuple[Problem, np.ndarray, np.ndarray]:
        angles = np.clip(angles, -MAX_TILT, MAX_TILT)
        T = gravity_map(model, tilted_gravity(model, *angles))
        problem = build_link_problem(model, T.T @ gram @ T, T.T @ moment, yty, n_rows, prior_weight)
        solution = solve(
            problem, method=method, initvals=previous[-1] if previous else None, **solver_options
        )
        previous.append(solution)
        rms[tuple(angles)] = float(np.sqrt(problem.squared_residual(solution.x) / n_rows))
        solutions[tuple(angles)] = np.asarray(solution.x, dtype=float)
        return problem, solution.x, T

    def objective(angles: np.ndarray) -> tuple[float, np.ndarray]:
        problem, x, T = fit(angles)
        slope = gram @ (T @ x) - moment  # Y(g) x = E T x: the residual's slope in E's columns
        by_gravity = np.array(
            [
                2.0 * x[columns] @ slope[p + a * columns.size : p + (a + 1) * columns.size]
                for a in range(3)
            ]
        )
        return (
            problem.objective(x) / n_rows,
            by_gravity @ tilted_gravity_jacobian(model, *angles) / n_rows,
        )

    level = (0.0, 0.0)
    result = minimize(
        objective,
        np.zeros(2),
        jac=True,
        method="L-BFGS-B",
        bounds=[(-MAX_TILT, MAX_TILT)] * 2,
        options={"ftol": 1e-12, "gtol": 1e-9, "maxfun": 30},
    )
    centre = np.clip(result.x, -MAX_TILT, MAX_TILT)
    fit(centre)
    offsets = TILT_POLISH_STEP * np.array([[1, 0], [-1, 0], [0, 1], [0, -1], [1, 1]])
    for offset in offsets:
        fit(centre + offset)
    vertex = _quadratic_vertex(
        offsets,
        [rms[tuple(np.clip(centre + o, -MAX_TILT, MAX_TILT))] for o in offsets],
        rms[tuple(centre)],
    )
    if vertex is not None:
        fit(centre + vertex)
    if level not in rms:
        fit(np.zeros(2))
    best = min(rms, key=rms.__getitem__)
    return BaseTilt(*best, tilted_gravity(model, *best), rms[best], rms[level], solutions[best])


TILT_POLISH_STEP = 2e-3
"""Spacing (rad) of the tilts about the objective's optimum whose training RMS the base-tilt
search fits by a quadratic (:func:`estimate_base_tilt`)."""


def _quadratic_vertex(
    offsets: np.ndarray, values: Sequence[float], at_zero: float
) -> np.ndarray | None:
    """The minimum (2,) of the quadratic in two variables through ``values`` at ``offsets``
    (5, 2) and ``at_zero`` at the origin; ``None`` if it has none (not convex)."""
    A = np.column_stack(
        [
            offsets[:, 0] ** 2,
            offsets[:, 0] * offsets[:, 1],
            offsets[:, 1] ** 2,
            offsets[:, 0],
            offsets[:, 1],
        ]
    )
    a, b, c, d, e = np.linalg.solve(A, np.asarray(values) - at_zero)
    hessian = np.array([[2 * a, b], [b, 2 * c]])
    if np.linalg.eigvalsh(hessian)[0] <= 0:
        return None
    return np.linalg.solve(hessian, -np.array([d, e]))


def tilt_separation(
    model: LinkModel, data: JointTorqueData, tilt: BaseTilt, max_samples: int = SEPARATION_SAMPLES
) -> TiltSeparation:
    """Whether the motion of ``data`` (at most ``max_samples`` samples) tells ``tilt`` (with its
    fit's ``x``) apart from the joints' zero offsets (module docstring): the torques linearised
    in the tilt's angles (:func:`tilted_gravity_jacobian` through the gravity columns), in each
    joint's position (pinocchio's RNEA derivatives of the fitted links) and in ``x`` (the
    regressor), each joint's rows divided by its residual's RMS."""
    if tilt.x is None:
        raise ValueError("tilt_separation needs the tilt's fit (BaseTilt.x)")
    x = tilt.x
    rows = np.arange(0, data.n_samples, max(1, int(np.ceil(data.n_samples / max_samples))))
    chunk = model.in_joint_order(data.subset(rows))
    tilted = with_gravity(model, tilt.gravity)
    Y, y = regression_system(tilted, chunk)
    n, N = model.n_joints, rows.size
    residual = (y - Y @ x).reshape(N, n)
    sigma = np.sqrt(np.maximum(np.mean(residual**2, axis=0), 1e-12))
    unit = model.gravity_columns_at_rest(chunk.positions)  # (N, 3, n, 4n)
    by_gravity = np.einsum("iajk,k->ija", unit, x[gravity_columns(model)])  # (N, n, 3)
    by_angles = by_gravity @ tilted_gravity_jacobian(model, tilt.roll, tilt.pitch)  # (N, n, 2)
    by_offsets = _position_derivatives(tilted, x, chunk)  # (N, n, n)
    weight = (1.0 / sigma)[None, :, None]
    T = (by_angles * weight).reshape(-1, 2)
    by_offset = (by_offsets * weight).reshape(-1, n)
    X = (Y.reshape(N, n, -1) * weight).reshape(N * n, -1)
    both = _residual_columns(np.hstack([T, by_offset]), X)
    left, offsets = both[:, :2], both[:, 2:]
    angles = np.array([tilt.roll, tilt.pitch])
    size = float(np.linalg.norm(angles))
    direction = angles / size if size > 0 else np.array([1.0, 0.0])
    scale = float(np.trace(left.T @ left))
    known = _size_variance(left.T @ left, direction, scale)
    variances = np.array(
        [_size_variance(_gram_without(left, offsets[:, [j]]), direction, scale) for j in range(n)]
    )
    twin = model.joint_names[int(np.argmax(variances))]
    variance = _size_variance(_gram_without(left, offsets), direction, scale)
    share = float(known / variance)
    t = float(size / np.sqrt(variance))
    separable = t >= IDENTIFIED_T and share >= TILT_SEPARATION
    return TiltSeparation(
        float(np.sqrt(variance)), float(np.sqrt(known)), share, t, twin, bool(separable)
    )


def _gram_without(A: np.ndarray, B: np.ndarray) -> np.ndarray:
    """The Gram matrix of the columns of ``A`` less their projection on those of ``B``."""
    left = _residual_columns(A, B)
    return left.T @ left


def _size_variance(information: np.ndarray, direction: np.ndarray, scale: float) -> float:
    """The variance (rad²) of the tilt's size along ``direction`` (2,) (a unit vector) from its
    ``information`` (2, 2), the tilt's direction about the vertical held (a zero offset of a
    vertical first joint turns it: the information across is then nil); ``inf`` when the
    information along it is under 1e-10 of ``scale`` (the information with the offsets
    known)."""
    along = float(direction @ information @ direction)
    return 1.0 / along if along > 1e-10 * scale else float("inf")


def _residual_columns(A: np.ndarray, B: np.ndarray) -> np.ndarray:
    """The columns of ``A`` less their least-squares projection on the columns of ``B`` (on the
    eigenvectors of ``B``'s column-scaled Gram matrix above 1e-12 of its largest eigenvalue)."""
    norms = np.linalg.norm(B, axis=0)
    scaled = B / np.where(norms > 0, norms, 1.0)
    eigenvalues, vectors = np.linalg.eigh(scaled.T @ scaled)
    keep = eigenvalues > 1e-12 * max(float(eigenvalues[-1]), 1e-300)
    basis = scaled @ (vectors[:, keep] / np.sqrt(eigenvalues[keep]))
    return A - basis @ (basis.T @ A)


def _position_derivatives(model: LinkModel, x: np.ndarray, data: JointTorqueData) -> np.ndarray:
    """(N, n, n) ``d tau / d q`` of the links of ``x`` at ``data``'s samples (pinocchio's RNEA
    derivatives; the drive terms do not depend on the positions): column ``j`` is what a zero
    offset of joint ``j`` does to every joint's torque."""
    robot = model.model.copy()
    for j, theta in enumerate(model.link_parameters(x), start=1):
        robot.inertias[j] = pin.Inertia.FromDynamicParameters(theta)
    work = robot.createData()
    q = model.configuration(data.positions)
    out = np.empty((data.n_samples, model.n_joints, model.n_joints))
    for k in range(data.n_samples):
        pin.computeRNEADerivatives(robot, work, q[k], data.velocities[k], data.accelerations[k])
        out[k] = work.dtau_dq
    return out
