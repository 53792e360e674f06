"""Link identification from a recording with data-chosen settings: what ``fit-links`` runs.

Steps, each choice made on the training recording only and reported:

1. accelerations: recorded ones when the recording has both velocities and accelerations, else
   the zero-phase derivative filter chosen by blocked cross-validation of the torques
   (:func:`~inertia_id_ros.chain.differentiation.select_differentiation`; recorded velocities are
   differentiated once, positions twice only without them), unless a filter is given;
2. the base's tilt: the direction of gravity in the chain's root frame, two angles (roll, pitch)
   minimising the consistent fit's torque residual (:func:`estimate_base_tilt`). A robot is never
   mounted exactly level: on the KUKA LWR4+ runs a tilt of about 1 degree is worth 10 % of the
   held-out RMS, which the unconstrained least squares absorbs into inconsistent links and the
   consistent fit cannot;
3. the delay of the torques behind the motion (:func:`estimate_torque_delay`): one time shift,
   within +-:data:`MAX_TORQUE_DELAY`, minimising the consistent fit's training torque residual
   (with the tilted gravity: the tilt's error would otherwise mask it).
   Torque sensors, their filters and the recording's stamps lag the joint encoders by a few
   milliseconds; unmodelled, the lag reads as friction and inertia errors that grow with the
   speed of the motion (on the KUKA LWR4+ runs: about 12 ms, worth 2 % of the held-out RMS of
   the faster run). Each effort sample is paired with the motion ``delay`` before its stamp
   (the derivative filter evaluated there; the noisy efforts are not resampled, which would
   smooth their noise and bias the residual toward fractional delays);
4. the width of the Coulomb sign ``tanh(dq / v)`` of every joint, by blocked cross-validation
   of the consistent fit (:func:`select_coulomb_velocity`): friction does not jump at zero
   velocity (pre-sliding), and with noisy velocities an exact sign flips at random near it;
5. weighting (``"channel"``): each joint's noise level from the residuals, iterated
   (:mod:`inertia_id_ros.core.weighting`); ``"none"``: unweighted;
6. prior strength: the weight of the pull toward the URDF by blocked cross-validation
   (:func:`~inertia_id_ros.chain.links.select_prior_weight`, descending the grid from the
   strongest weight: only the candidates evaluated are reported), unless given;
7. the fit (:func:`~inertia_id_ros.chain.links.fit_links`).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pinocchio as pin
from scipy.optimize import minimize, minimize_scalar

from inertia_id_ros.chain.differentiation import (
    SOURCE_POSITIONS,
    SOURCE_RECORDED,
    SOURCE_VELOCITIES,
    DifferentiationFilter,
    DifferentiationSelection,
    sample_period,
    select_differentiation,
)
from inertia_id_ros.chain.friction import smooth_sign
from inertia_id_ros.chain.links import (
    DEFAULT_PRIOR_WEIGHT,
    JointTorqueData,
    LinkFit,
    LinkModel,
    PriorWeightSelection,
    build_link_problem,
    fit_links,
    gravity_columns,
    link_channels,
    regression_system,
    select_prior_weight,
    time_blocks,
    with_gravity,
)
from inertia_id_ros.core.covariance import ChannelNormalEquations, channel_grams
from inertia_id_ros.core.filtering import derivatives_at_samples, joint_states_at
from inertia_id_ros.core.weighting import (
    check_weighting,
    iterate_channel_weights,
    weighted_normal_equations,
)
from inertia_id_ros.options import LINKS_DEFAULT_WEIGHTING as DEFAULT_WEIGHTING
from inertia_id_ros.solvers import Problem, Solution, solve

DEFAULT_TILT_SAMPLES = 2000
"""Samples (evenly strided) of the base-tilt and torque-delay searches. Two angles and one delay
are decided by the motion's span, not its density: on the KUKA run 1 (4961 samples), 2000 give
the tilt of all of them to 0.01 degrees and a delay as good on held-out runs (the benchmark
``benchmarks/bench_fit_links.py``)."""
MAX_TILT = 0.1
"""Largest base tilt searched (rad, about 6 degrees); beyond it the URDF's base is wrong."""


@dataclass(frozen=True)
class BaseTilt:
    """The base's tilt: ``roll``, ``pitch`` (rad) rotating the model's gravity ``gravity`` (3,)
    (m/s², root frame, after the tilt); ``rms`` (N·m) the consistent fit's training RMS with it
    and ``level_rms`` without."""

    roll: float
    pitch: float
    gravity: np.ndarray
    rms: float
    level_rms: float

    def as_json(self) -> dict:
        """``{"roll_rad", "pitch_rad", "gravity", "rms", "level_rms"}``."""
        return {
            "roll_rad": self.roll,
            "pitch_rad": self.pitch,
            "gravity": self.gravity.tolist(),
            "rms": self.rms,
            "level_rms": self.level_rms,
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

    def fit(angles: np.ndarray) -> tuple[Problem, np.ndarray, np.ndarray]:
        angles = np.clip(angles, -MAX_TILT, MAX_TILT)
        T = gravity_map(model, tilted_gravity(model, *angles))
        problem = build_link_problem(model, T.T @ gram @ T, T.T @ moment, yty, n_rows, prior_weight)
        solution = solve(
            problem, method=method, initvals=previous[-1] if previous else None, **solver_options
        )
        previous.append(solution)
        rms[tuple(angles)] = float(np.sqrt(problem.squared_residual(solution.x) / n_rows))
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
    roll, pitch = min(rms, key=rms.get)
    return BaseTilt(roll, pitch, tilted_gravity(model, roll, pitch), rms[roll, pitch], rms[level])


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


MAX_TORQUE_DELAY = 0.03
"""Largest delay (s) of the torques behind the motion searched, either sign; a longer one is a
clock or stamping fault to fix in the recording, not a sensor's filter."""
DELAY_GRID_STEPS = 6
"""The delay search's first grid has ``2 * DELAY_GRID_STEPS + 1`` points over +-MAX_TORQUE_DELAY
(at least one sample period apart); the best is refined (bounded Brent) to a tenth of a sample."""
SHIFT_GRID_STEPS = 3
"""The whole-shift delay search's first grid has ``2 * SHIFT_GRID_STEPS + 1`` shifts over
+-MAX_TORQUE_DELAY (at least one sample apart); the descent then walks one sample at a time
from the best (the training RMS varies smoothly with the shift: the best whole shift of a finer
grid, for fewer solves)."""


@dataclass(frozen=True)
class TorqueDelay:
    """The torques' delay behind the motion: ``delay`` (s, positive: the torque lags) with the
    consistent fit's training RMS ``rms`` (N·m), and ``zero_rms`` without a delay (both ``None``
    when the delay was given, not estimated)."""

    delay: float
    rms: float | None = None
    zero_rms: float | None = None

    def as_json(self) -> dict:
        """``{"delay_s", "rms", "zero_rms", "criterion"}``."""
        return {
            "delay_s": self.delay,
            "rms": self.rms,
            "zero_rms": self.zero_rms,
            "criterion": (
                "given" if self.rms is None else "training torque RMS of the consistent fit"
            ),
        }


class ShiftedTorquePairs:
    """Normal equations of the efforts at ``rows`` paired with the motion a whole number of
    samples earlier, for every such shift, from one regressor pass.

    ``Y`` (M, n, p): the regressor of the motion at samples ``first .. first + M - 1``;
    ``known`` (M, n) their known torques; ``measured`` (R, n) the measured torques at ``rows``
    (R,), an increasing arithmetic progression (step ``s``). :meth:`normal_equations` ``(k)``
    are those of ``Y[rows - k]`` against ``measured - known[rows - k]`` (effort ``i`` with the
    motion ``k`` samples before it), ``|k| <= max_shift``. The Gram matrices of shifts that
    differ by a multiple of ``s`` share all samples but a few at the ends: each residue class
    sums its common samples once and adds the end samples by cumulative sums, so a shift costs
    a product with the moment, not a pass over the rows' Gram matrix."""

    def __init__(
        self,
        Y: np.ndarray,
        known: np.ndarray,
        measured: np.ndarray,
        first: int,
        rows: np.ndarray,
        max_shift: int,
    ):
        rows = np.asarray(rows, dtype=int)
        steps = np.unique(np.diff(rows))
        if rows.size < 1 or steps.size > 1 or (steps.size and steps[0] < 1):
            raise ValueError("rows must be an increasing arithmetic progression")
        if rows[0] - max_shift < first or rows[-1] + max_shift > first + Y.shape[0] - 1:
            raise ValueError("the motion samples do not cover every shift of the rows")
        self.step = int(steps[0]) if steps.size else 1
        self.Y, self.known, self.measured = Y, known, measured
        self.first, self.rows, self.max_shift = int(first), rows, int(max_shift)
        self._classes: dict[int, tuple[int, np.ndarray, np.ndarray, np.ndarray]] = {}

    def _gram(self, samples: np.ndarray) -> np.ndarray:
        stacked = self.Y[samples].reshape(-1, self.Y.shape[2])
        return stacked.T @ stacked

    def _class_sums(self, residue: int) -> tuple[int, np.ndarray, np.ndarray, np.ndarray]:
        """``(start, core, head, tail)`` for the starts ``u_c = start + s c`` (``c = 0 ..
        C - 1``) of one residue class: ``gram(u_c) = core + head[c] + tail[c]``."""
        if residue not in self._classes:
            s, m, p = self.step, self.rows.size, self.Y.shape[2]
            start = self.rows[0] - self.max_shift + residue
            count = (self.rows[0] + self.max_shift - start) // s + 1
            index = start + s * np.arange(count - 1 + m) - self.first  # the class's samples
            ends = (
                np.einsum("knp,knq->kpq", self.Y[index[: count - 1]], self.Y[index[: count - 1]]),
                np.einsum("knp,knq->kpq", self.Y[index[m:]], self.Y[index[m:]]),
            )
            head, tail = np.zeros((count, p, p)), np.zeros((count, p, p))
            if count > 1:
                head[:-1] = np.cumsum(ends[0][::-1], axis=0)[::-1]  # samples c .. C-2
                tail[1:] = np.cumsum(ends[1], axis=0)  # samples m .. m + c - 1
            self._classes[residue] = (start, self._gram(index[count - 1 : m]), head, tail)
        return self._classes[residue]

    def normal_equations(self, shift: int) -> tuple[np.ndarray, np.ndarray, float, int]:
        """``(gram (p, p), moment (p,), yty, n_rows)`` with the motion ``shift`` samples before
        each effort (``|shift| <= max_shift``)."""
        if abs(shift) > self.max_shift:
            raise ValueError(f"shift {shift} beyond +-{self.max_shift}")
        motion = self.rows - shift - self.first
        if self.rows.size < 2 * self.max_shift // self.step + 1:  # no common part: directly
            gram = self._gram(motion)
        else:
            start, core, head, tail = self._class_sums((self.max_shift - shift) % self.step)
            c = (self.rows[0] - shift - start) // self.step
            gram = core + head[c] + tail[c]
        Y = self.Y[motion]
        y = self.measured - self.known[motion]
        return gram, np.einsum("knp,kn->p", Y, y), float(np.sum(y * y)), int(y.size)


def estimate_torque_delay(
    model: LinkModel,
    t: np.ndarray,
    q: np.ndarray,
    dq: np.ndarray | None,
    ddq: np.ndarray | None,
    effort: np.ndarray,
    differentiation: DifferentiationFilter,
    joint_names: Sequence[str] | None = None,
    method: str = "lmi",
    prior_weight: float = DEFAULT_PRIOR_WEIGHT,
    max_delay: float = MAX_TORQUE_DELAY,
    max_samples: int = DEFAULT_TILT_SAMPLES,
    **solver_options: object,
) -> TorqueDelay:
    """The delay (within +-``max_delay`` s) of ``effort`` behind the motion (``t`` (N,) s, ``q``,
    ``dq``, ``ddq`` (N, n) or ``None``) minimising the training torque RMS of the ``method`` fit
    (prior weight ``prior_weight``). Every candidate is scored on the same samples (at most
    ``max_samples``, evenly strided, of those ``max_delay`` plus the filter's half-width from
    either end), the motion at ``t - delay`` from ``differentiation`` (the efforts are not
    resampled).

    Search: whole sample periods first, on a grid (:data:`SHIFT_GRID_STEPS`) then by descent to
    the best whole shift near its best, each shift pairing the efforts with the motion that many
    samples earlier (one regressor pass serves them all, :class:`ShiftedTorquePairs`); then the
    vertex of the parabola through the best shift's score and its neighbours'. The scores at the
    best whole shift and at the vertex are then computed exactly (the motion at ``t - delay``,
    the regressor evaluated there) and the smaller wins; the reported ``rms`` is that exact
    score, ``zero_rms`` the score without delay (exact). Below two sample periods per
    ``max_delay`` the shifts are too coarse: every candidate is evaluated exactly
    (:func:`_torque_delay_exact`)."""
    t = np.asarray(t, dtype=float)
    reach = max_delay + differentiation.half_width
    inner = np.flatnonzero((t >= t[0] + reach) & (t <= t[-1] - reach))
    if inner.size < 2:
        raise ValueError(
            f"the recording ({t[-1] - t[0]:.3f} s) is too short to estimate the "
            f"torque delay over +-{max_delay} s; give the delay"
        )
    rows = inner[np.arange(0, inner.size, max(1, int(np.ceil(inner.size / max_samples))))]
    dt = sample_period(t)
    max_shift = int(np.floor(max_delay / dt + 1e-9))
    scorer = _DelayScorer(
        model,
        t,
        q,
        dq,
        ddq,
        effort,
        differentiation,
        joint_names,
        rows,
        method,
        prior_weight,
        solver_options,
    )
    if max_shift < 2:
        return _torque_delay_exact(scorer, max_delay, dt)
    first = max(0, int(rows[0]) - max_shift)
    motion = _motion_at(t, q, dq, ddq, differentiation, t[first : rows[-1] + max_shift + 1])
    ordered = model.in_joint_order(JointTorqueData(*motion, np.zeros_like(motion[0]), scorer.names))
    pairs = ShiftedTorquePairs(
        model.joint_torque_regressor(ordered.positions, ordered.velocities, ordered.accelerations),
        model.known_torques(ordered.accelerations),
        model.measured_torques(model.in_joint_order(scorer.effort_data()).efforts),
        first,
        rows,
        max_shift,
    )
    shifted: dict[int, float] = {}

    def shift_score(k: int) -> float:
        if k not in shifted:
            shifted[k] = scorer.score(*pairs.normal_equations(k))
        return shifted[k]

    step = max(1, int(round(max(max_delay / SHIFT_GRID_STEPS, dt) / dt)))
    grid = np.arange(-(max_shift // step), max_shift // step + 1) * step
    best = int(grid[np.argmin([shift_score(int(k)) for k in grid])])
    low, high = max(best - step, -max_shift), min(best + step, max_shift)
    for direction in (-1, 1):  # descend over whole shifts within a grid step of the best
        while low <= best + direction <= high and shift_score(best + direction) < shifted[best]:
            best += direction
    candidates = [best]
    if -max_shift < best < max_shift:
        below, at, above = (shift_score(best + d) for d in (-1, 0, 1))
        curvature = below - 2.0 * at + above
        if curvature > 0:
            offset = float(np.clip(0.5 * (below - above) / curvature, -0.5, 0.5))
            if abs(offset) >= 0.05:  # a tenth of a sample, as the exact search's tolerance
                candidates.append(best + offset)
    exact = {float(k * dt): scorer.exact(float(k * dt)) for k in candidates}
    delay = min(exact, key=exact.get)
    return TorqueDelay(delay, exact[delay], shift_score(0))


class _DelayScorer:
    """The torque-delay search's scoring: the ``method`` fit's training RMS on the samples
    ``rows``, solves warm-started from the previous one."""

    def __init__(
        self,
        model: LinkModel,
        t: np.ndarray,
        q: np.ndarray,
        dq: np.ndarray | None,
        ddq: np.ndarray | None,
        effort: np.ndarray,
        differentiation: DifferentiationFilter,
        joint_names: Sequence[str] | None,
        rows: np.ndarray,
        method: str,
        prior_weight: float,
        solver_options: dict,
    ):
        self.model, self.t, self.q, self.dq, self.ddq = model, t, q, dq, ddq
        self.differentiation, self.rows = differentiation, rows
        self.names = None if joint_names is None else tuple(joint_names)
        self.efforts = np.asarray(effort, dtype=float)[rows]
        self.method, self.prior_weight, self.solver_options = method, prior_weight, solver_options
        self.previous: Solution | None = None

    def effort_data(self) -> JointTorqueData:
        zeros = np.zeros_like(self.efforts)
        return JointTorqueData(zeros, zeros, zeros, self.efforts, self.names)

    def score(self, gram: np.ndarray, moment: np.ndarray, yty: float, n_rows: int) -> float:
        """The fit's training RMS (N·m) of these normal equations."""
        problem = build_link_problem(self.model, gram, moment, yty, n_rows, self.prior_weight)
        self.previous = solve(
            problem, method=self.method, initvals=self.previous, **self.solver_options
        )
        return float(np.sqrt(problem.squared_residual(self.previous.x) / n_rows))

    def exact(self, delay: float) -> float:
        """The score with the motion at ``t[rows] - delay`` (regressor evaluated there)."""
        motion = _motion_at(
            self.t, self.q, self.dq, self.ddq, self.differentiation, self.t[self.rows] - delay
        )
        channels = link_channels(self.model, JointTorqueData(*motion, self.efforts, self.names))
        return self.score(*channels.total())


def _motion_at(
    t: np.ndarray,
    q: np.ndarray,
    dq: np.ndarray | None,
    ddq: np.ndarray | None,
    differentiation: DifferentiationFilter,
    times: np.ndarray,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Positions, velocities, accelerations (M, n) at ``times`` (M,): the recorded ones linearly
    interpolated (:data:`SOURCE_RECORDED`), else the fit of ``differentiation``."""
    if differentiation.source == SOURCE_RECORDED:
        return tuple(
            np.column_stack([np.interp(times, t, c) for c in np.asarray(a, dtype=float).T])
            for a in (q, dq, ddq)
        )
    return joint_states_at(
        t,
        q,
        dq if differentiation.source == SOURCE_VELOCITIES else None,
        times,
        differentiation.half_width,
        differentiation.order,
    )


def _torque_delay_exact(scorer: _DelayScorer, max_delay: float, dt: float) -> TorqueDelay:
    """Every candidate delay evaluated exactly (:meth:`_DelayScorer.exact`): a grid over
    +-``max_delay`` at least a sample period ``dt`` apart, refined around its best (bounded
    Brent, to a tenth of a sample)."""
    scores: dict[float, float] = {}

    def rms(delay: float) -> float:
        scores[delay] = scorer.exact(delay)
        return scores[delay]

    step = max(max_delay / DELAY_GRID_STEPS, dt)
    grid = np.arange(-np.floor(max_delay / step), np.floor(max_delay / step) + 1) * step
    best = float(grid[np.argmin([rms(float(d)) for d in grid])])
    minimize_scalar(
        rms,
        bounds=(max(best - step, -max_delay), min(best + step, max_delay)),
        method="bounded",
        options={"xatol": 0.1 * dt},
    )
    delay = min(scores, key=scores.get)
    return TorqueDelay(float(delay), scores[delay], scores[0.0])


DEFAULT_COULOMB_VELOCITIES = (0.0, 0.01, 0.02, 0.05, 0.1)
"""Candidate widths (rad/s) of the Coulomb sign for :func:`select_coulomb_velocity`."""


@dataclass(frozen=True)
class CoulombVelocitySelection:
    """Blocked cross-validation of the Coulomb sign's width: ``cv_rms[i]`` (N·m) the held-out
    torque RMS with ``widths[i]`` (rad/s); ``best`` the smallest."""

    widths: np.ndarray
    cv_rms: np.ndarray
    best: float

    def as_json(self) -> dict:
        """``{"value", "criterion", "candidates": [{"width", "cv_rms"}]}``."""
        return {
            "value": self.best,
            "criterion": "5-fold blocked cross-validation of the torques (consistent fit)",
            "candidates": [
                {"width": float(w), "cv_rms": float(r)} for w, r in zip(self.widths, self.cv_rms)
            ],
        }


def with_coulomb_velocity(model: LinkModel, width: float) -> LinkModel:
    """A copy of ``model`` whose every joint's Coulomb sign is ``tanh(dq / width)`` (rad/s;
    0: exact sign)."""
    drives = [dataclasses.replace(d, coulomb_velocity=width) for d in model.drives]
    return LinkModel(model.model, drives, model.robot_joint_names)


@dataclass(frozen=True)
class CoulombWidthBlocks:
    """Per-joint normal equations (:func:`~inertia_id_ros.chain.links.link_channels`) of each
    contiguous time block of one recording (:func:`~inertia_id_ros.chain.links.time_blocks`),
    of the model's regressor extended by the Coulomb columns of every candidate width
    (``widths`` (W,) rad/s): ``blocks`` over ``p + W n_joints`` columns, ``columns[i]`` (p,) the
    ones making the regressor with ``widths[i]``. One regressor pass serves every width, fold
    and prior weight."""

    widths: np.ndarray
    blocks: tuple[ChannelNormalEquations, ...]
    columns: tuple[np.ndarray, ...]
    n_parameters: int
    """``p``: the first ``p`` columns make the regressor with the model's own drives."""

    def folds(self, width: float | None = None) -> list[ChannelNormalEquations]:
        """The blocks' normal equations with the Coulomb ``width`` (one of :attr:`widths`;
        ``None``: the model's own drives)."""
        if width is None:
            return [block.select(np.arange(self.n_parameters)) for block in self.blocks]
        index = int(np.flatnonzero(self.widths == width)[0])
        return [block.select(self.columns[index]) for block in self.blocks]


def coulomb_width_blocks(
    model: LinkModel, data: JointTorqueData, widths: Sequence[float] = (), n_folds: int = 5
) -> CoulombWidthBlocks:
    """:class:`CoulombWidthBlocks` of ``data`` for the candidate ``widths`` (rad/s) in
    ``n_folds`` blocks."""
    widths = np.asarray(widths, dtype=float)
    n, p = model.n_joints, model.n_parameters
    coulomb = np.array(
        [
            model.parameter_names.index(f"{joint}.coulomb")
            for joint, drive in zip(model.joint_names, model.drives)
            if "coulomb" in drive.terms
        ],
        dtype=int,
    )
    with_coulomb = [j for j, drive in enumerate(model.drives) if "coulomb" in drive.terms]
    columns = []
    for i in range(widths.size):
        selected = np.arange(p)
        selected[coulomb] = p + i * coulomb.size + np.arange(coulomb.size)
        columns.append(selected)
    blocks = []
    for rows in time_blocks(data.n_samples, n_folds):
        d = model.in_joint_order(data.subset(rows))
        Y, y = regression_system(model, d)
        extra = np.zeros((rows.size, n, widths.size * coulomb.size))
        for i, width in enumerate(widths):
            for c, j in enumerate(with_coulomb):
                extra[:, j, i * coulomb.size + c] = smooth_sign(d.velocities[:, j], width)
        blocks.append(
            ChannelNormalEquations.from_samples(
                np.concatenate([Y.reshape(rows.size, n, p), extra], axis=2), y.reshape(rows.size, n)
            )
        )
    return CoulombWidthBlocks(widths, tuple(blocks), tuple(columns), p)


def select_coulomb_velocity(
    model: LinkModel,
    data: JointTorqueData | None = None,
    widths: Sequence[float] = DEFAULT_COULOMB_VELOCITIES,
    method: str = "lmi",
    prior_weight: float = DEFAULT_PRIOR_WEIGHT,
    n_folds: int = 5,
    blocks: CoulombWidthBlocks | None = None,
    **solver_options: object,
) -> CoulombVelocitySelection:
    """The Coulomb sign's width (one for every joint) with the smallest held-out torque RMS over
    ``n_folds`` contiguous time blocks of ``data`` (the ``method`` fit with ``prior_weight`` on
    the other blocks). ``blocks``: :func:`coulomb_width_blocks` of ``data`` when already
    computed (then its widths are the candidates and ``data`` is not needed)."""
    if blocks is None:
        if data is None:
            raise ValueError("select_coulomb_velocity needs data or blocks")
        blocks = coulomb_width_blocks(model, data, widths, n_folds)
    squared = np.zeros(blocks.widths.size)
    n_samples = sum(block.n_samples for block in blocks.blocks)
    for i, width in enumerate(blocks.widths):
        candidate = with_coulomb_velocity(model, float(width))
        folds = blocks.folds(width)
        total = ChannelNormalEquations.summed(folds)
        previous = None
        for held_out in folds:
            gram, moment, yty, n_rows = total.total()
            out_gram, out_moment, out_yty, out_rows = held_out.total()
            problem = build_link_problem(
                candidate,
                gram - out_gram,
                moment - out_moment,
                yty - out_yty,
                n_rows - out_rows,
                prior_weight,
            )
            previous = solve(problem, method=method, initvals=previous, **solver_options)
            squared[i] += float(held_out.squared_residuals(previous.x).sum())
    cv_rms = np.sqrt(squared / (n_samples * model.n_joints))
    return CoulombVelocitySelection(blocks.widths, cv_rms, float(blocks.widths[np.argmin(cv_rms)]))


@dataclass(frozen=True)
class LinkIdentification:
    """Result of :func:`identify_links`: the ``fit``, the training ``data`` it was fitted to
    (derived velocities and accelerations), the derivative filter (``differentiation``) and how
    it and the prior weight were chosen (``None``: given)."""

    fit: LinkFit
    data: JointTorqueData
    differentiation: DifferentiationFilter
    filter_selection: DifferentiationSelection | None
    prior_selection: PriorWeightSelection | None
    weighting: str
    tilt: BaseTilt | None = None
    """The estimated base tilt (``None``: the model's gravity kept)."""
    model: LinkModel | None = None
    """The model fitted (with the tilted gravity and the chosen Coulomb width)."""
    coulomb_selection: CoulombVelocitySelection | None = None
    """How the Coulomb sign's width was chosen (``None``: given)."""
    delay: TorqueDelay = TorqueDelay(0.0)
    """The efforts' delay behind the motion, estimated or given (applied to the ``data``)."""

    def as_json(self) -> dict:
        """``{"differentiation", "prior_weight", "prior_weight_selection", "weighting", "gravity",
        "base_tilt", "coulomb_velocity_selection", "torque_delay"}`` for the result JSON
        (selections ``null`` when the value was given)."""
        differentiation = (
            self.filter_selection.as_json()
            if self.filter_selection is not None
            else self.differentiation.as_json()
        )
        prior = None
        if self.prior_selection is not None:
            evaluated = ~np.isnan(self.prior_selection.cv_rms)
            prior = {
                "criterion": "5-fold blocked cross-validation of the torques (consistent "
                "fit)"
                + (
                    ""
                    if evaluated.all()
                    else "; descent over the grid, only the candidates evaluated are listed"
                ),
                "grid": [float(w) for w in self.prior_selection.weights],
                "candidates": [
                    {"weight": float(w), "cv_rms": float(r)}
                    for w, r in zip(
                        self.prior_selection.weights[evaluated],
                        self.prior_selection.cv_rms[evaluated],
                    )
                ],
            }
        weights = self.fit.channel_weights
        weighting = {"kind": self.weighting}
        if weights is not None:
            weighting.update(weights.as_json(self.data.joint_names or self.fit.link_names))
        return {
            "differentiation": differentiation,
            "prior_weight": self.fit.prior_weight,
            "prior_weight_selection": prior,
            "weighting": weighting,
            "gravity": (
                None if self.model is None else np.asarray(self.model.model.gravity.linear).tolist()
            ),
            "base_tilt": None if self.tilt is None else self.tilt.as_json(),
            "coulomb_velocity_selection": (
                None if self.coulomb_selection is None else self.coulomb_selection.as_json()
            ),
            "torque_delay": self.delay.as_json(),
        }

    def summary_lines(self) -> list[str]:
        """What was chosen, in words (for stdout)."""
        lines = [f"accelerations: {self.differentiation.describe()}"]
        if self.filter_selection is not None:
            best = float(np.nanmin(self.filter_selection.cv_rms))
            scored = int(np.sum(~np.isnan(self.filter_selection.cv_rms)))
            lines[-1] += (
                f"; chosen by {self.filter_selection.n_folds}-fold cross-validation of "
                f"the torques over {scored} of "
                f"{len(self.filter_selection.candidates)} filters "
                f"(held-out RMS {best:.4f} N m)"
            )
        if self.differentiation.source != SOURCE_RECORDED:
            lines.append(
                f"  online, this filter delays every signal by "
                f"{self.differentiation.online_lag:.3f} s"
            )
        lines.append(f"torque delay: {1e3 * self.delay.delay:+.1f} ms behind the motion")
        if self.delay.rms is not None:
            lines[-1] += (
                f" (estimated: training RMS {self.delay.rms:.4f} N m, without "
                f"{self.delay.zero_rms:.4f})"
            )
        if self.tilt is not None:
            lines.append(
                f"base tilt: roll {np.degrees(self.tilt.roll):+.2f} deg, pitch "
                f"{np.degrees(self.tilt.pitch):+.2f} deg (training RMS "
                f"{self.tilt.rms:.4f} N m, level {self.tilt.level_rms:.4f}); gravity "
                "[" + ", ".join(f"{g:.3f}" for g in self.tilt.gravity) + "] m/s²"
            )
        if self.coulomb_selection is not None:
            lines.append(
                f"Coulomb sign: tanh(dq / {self.coulomb_selection.best:g} rad/s)"
                if self.coulomb_selection.best > 0
                else "Coulomb sign: exact"
            )
            widths = ", ".join(f"{w:g}" for w in self.coulomb_selection.widths)
            lines[-1] += (
                f" (chosen by 5-fold cross-validation over {widths} rad/s, held-out RMS "
                f"{float(np.min(self.coulomb_selection.cv_rms)):.4f} N m)"
            )
        how = (
            "given"
            if self.prior_selection is None
            else f"chosen by 5-fold cross-validation, held-out RMS "
            f"{float(np.nanmin(self.prior_selection.cv_rms)):.4f} N m over "
            f"{int(np.sum(~np.isnan(self.prior_selection.cv_rms)))} of "
            f"{self.prior_selection.weights.size} candidates"
        )
        lines.append(f"prior weight: {self.fit.prior_weight:.3g} ({how})")
        weights = self.fit.channel_weights
        if weights is None:
            lines.append("weighting: none (every joint's torque weighted alike)")
        else:
            names = self.data.joint_names or self.fit.link_names
            lines.append(
                "weighting: per joint, 1/sigma² from the residuals ("
                f"{weights.iterations} fits): "
                + ", ".join(f"{name} sigma {s:.3g}" for name, s in zip(names, weights.sigma))
            )
        return lines


def motion_samples(
    t: np.ndarray,
    q: np.ndarray,
    dq: np.ndarray | None,
    ddq: np.ndarray | None,
    differentiation: DifferentiationFilter,
    delay: float = 0.0,
) -> tuple[np.ndarray, tuple[np.ndarray, np.ndarray, np.ndarray]]:
    """``(keep (M,) indices into t, (q, dq, ddq) (M, n))``: the motion at ``t[keep] - delay``
    (s; the efforts at ``t[keep]`` lag it by ``delay``), from ``differentiation`` (zero-phase;
    velocities smoothed by the same filter; the samples within its half-width of either end
    dropped) or, for :data:`SOURCE_RECORDED`, the recorded signals (linearly interpolated)."""
    t = np.asarray(t, dtype=float)
    if differentiation.source == SOURCE_RECORDED:
        keep = np.flatnonzero((t - delay >= t[0]) & (t - delay <= t[-1]))
        if delay == 0.0:
            return keep, (np.asarray(q), np.asarray(dq), np.asarray(ddq))
        return keep, tuple(
            np.column_stack(
                [np.interp(t[keep] - delay, t, c) for c in np.asarray(a, dtype=float).T]
            )
            for a in (q, dq, ddq)
        )
    keep, positions, velocities, accelerations = derivatives_at_samples(
        t,
        q,
        dq if differentiation.source == SOURCE_VELOCITIES else None,
        differentiation.half_width,
        differentiation.order,
        delay=delay,
    )
    return keep, (np.asarray(q)[keep] if delay == 0.0 else positions, velocities, accelerations)


def derive_torque_data(
    t: np.ndarray,
    q: np.ndarray,
    dq: np.ndarray | None,
    effort: np.ndarray,
    differentiation: DifferentiationFilter,
    joint_names: Sequence[str] | None = None,
    delay: float = 0.0,
) -> JointTorqueData:
    """The samples of a recording (``t`` (N,) s, ``q``, ``dq`` or ``None``, ``effort`` (N, n))
    with velocities and accelerations from ``differentiation``, the efforts lagging the motion
    by ``delay`` s (:func:`motion_samples`)."""
    keep, motion = motion_samples(t, q, dq, None, differentiation, delay)
    return JointTorqueData(*motion, np.asarray(effort)[keep], joint_names)


def identify_links(
    model: LinkModel,
    t: np.ndarray,
    q: np.ndarray,
    dq: np.ndarray | None,
    ddq: np.ndarray | None,
    effort: np.ndarray,
    joint_names: Sequence[str] | None = None,
    method: str = "lmi",
    weighting: str = DEFAULT_WEIGHTING,
    prior_weight: float | None = None,
    differentiation: DifferentiationFilter | None = None,
    estimate_tilt: bool = True,
    select_coulomb: bool = True,
    torque_delay: float | None = None,
    bounding_ellipsoids: Sequence[np.ndarray | None] | None = None,
    **solver_options: object,
) -> LinkIdentification:
    """Identify ``model``'s links and drives from a recording (module docstring): ``t`` (N,) s,
    ``q`` (N, n), ``dq``, ``ddq`` (N, n) or ``None``, raw ``effort`` (N, n), columns in
    ``joint_names`` order (``None``: the model's). ``prior_weight`` ``None``: by
    cross-validation; ``differentiation`` ``None``: recorded accelerations if any, else by
    cross-validation; ``estimate_tilt``: estimate the base's tilt (else the model's gravity);
    ``select_coulomb``: choose the Coulomb sign's width (else the model's drives');
    ``torque_delay``: the efforts' delay behind the motion (s; ``None``: estimated, 0: none);
    ``bounding_ellipsoids``: per link ``None`` or its ``Q`` (4x4, link frame), constraining the
    final fit (the selections above are made without them)."""
    check_weighting(weighting)
    t = np.asarray(t, dtype=float)
    names = None if joint_names is None else tuple(joint_names)
    filter_selection = None
    if differentiation is None and dq is not None and ddq is not None:
        differentiation = DifferentiationFilter(SOURCE_RECORDED, sample_period=sample_period(t))
    if differentiation is None:
        filter_selection = select_differentiation(model, t, q, dq, effort, names)
        differentiation = filter_selection.chosen
    if differentiation.source == SOURCE_VELOCITIES and dq is None:
        differentiation = DifferentiationFilter(
            SOURCE_POSITIONS,
            differentiation.half_width,
            differentiation.order,
            differentiation.sample_period,
        )
    keep, motion = motion_samples(t, q, dq, ddq, differentiation)
    data = JointTorqueData(*motion, np.asarray(effort)[keep], names)
    tilt = None
    if estimate_tilt:
        tilt = estimate_base_tilt(
            model,
            data,
            method,
            DEFAULT_PRIOR_WEIGHT if prior_weight is None else prior_weight,
            **solver_options,
        )
        model = with_gravity(model, tilt.gravity)
    delay = TorqueDelay(0.0 if torque_delay is None else float(torque_delay))
    if torque_delay is None:
        delay = estimate_torque_delay(
            model,
            t,
            q,
            dq,
            ddq,
            effort,
            differentiation,
            names,
            method,
            DEFAULT_PRIOR_WEIGHT if prior_weight is None else prior_weight,
            **solver_options,
        )
    if delay.delay != 0.0:
        keep, motion = motion_samples(t, q, dq, ddq, differentiation, delay.delay)
        data = JointTorqueData(*motion, np.asarray(effort)[keep], names)
    coulomb_selection, width = None, None
    blocks = coulomb_width_blocks(model, data, DEFAULT_COULOMB_VELOCITIES if select_coulomb else ())
    if select_coulomb:
        coulomb_selection = select_coulomb_velocity(
            model,
            blocks=blocks,
            method=method,
            prior_weight=DEFAULT_PRIOR_WEIGHT if prior_weight is None else prior_weight,
            **solver_options,
        )
        width = coulomb_selection.best
        model = with_coulomb_velocity(model, width)
    folds = blocks.folds(width)
    channels = ChannelNormalEquations.summed(folds)
    prior_selection = None
    if prior_weight is None:
        channel_weights = None
        if weighting == "channel":  # the joints' noise levels from unconstrained fits

            def ols(weights: np.ndarray) -> np.ndarray:
                normal = weighted_normal_equations(channels, weights)
                return solve(build_link_problem(model, *normal, 0.0), method="ols").x

            channel_weights = iterate_channel_weights(channels, ols)[1].weights
        prior_selection = select_prior_weight(
            model,
            method=method,
            folds=folds,
            channel_weights=channel_weights,
            search="descent",
            **solver_options,
        )
        prior_weight = prior_selection.best
    fit = fit_links(
        model,
        data,
        method=method,
        prior_weight=prior_weight,
        weighting=weighting,
        channels=channels,
        bounding_ellipsoids=bounding_ellipsoids,
        **solver_options,
    )
    return LinkIdentification(
        fit,
        data,
        differentiation,
        filter_selection,
        prior_selection,
        weighting,
        tilt,
        model,
        coulomb_selection,
        delay,
    )
