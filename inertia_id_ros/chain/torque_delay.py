"""The delay of a chain's joint torques behind its motion, from the torques.

One time shift, within +-:data:`MAX_TORQUE_DELAY`, minimising the consistent fit's training
torque residual (:func:`estimate_torque_delay`; with the tilted gravity, :mod:`.base_tilt`: the
tilt's error would otherwise mask it). Torque sensors, their filters and the recording's stamps
lag the joint encoders by a few milliseconds; unmodelled, the lag reads as friction and inertia
errors that grow with the speed of the motion (on the KUKA LWR4+ runs: about 12 ms, worth 2 % of
the held-out RMS of the faster run). Each effort sample is paired with the motion ``delay``
before its stamp (the derivative filter evaluated there; the noisy efforts are not resampled,
which would smooth their noise and bias the residual toward fractional delays).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
from scipy.optimize import minimize_scalar

from inertia_id_ros.chain.base_tilt import DEFAULT_TILT_SAMPLES
from inertia_id_ros.chain.differentiation import DifferentiationFilter, motion_at, sample_period
from inertia_id_ros.chain.link_fit import build_link_problem
from inertia_id_ros.chain.links import JointTorqueData, LinkModel, link_channels
from inertia_id_ros.core.filtering import inside_segments
from inertia_id_ros.options import DEFAULT_PRIOR_WEIGHT
from inertia_id_ros.solvers import Solution, solve

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
    (:func:`_torque_delay_exact`), as they are on several runs (the samples by their gaps
    left out)."""
    t = np.asarray(t, dtype=float)
    reach = max_delay + differentiation.half_width
    inner = np.flatnonzero(inside_segments(t, t, reach, differentiation.gap(t)))
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
    if max_shift < 2 or np.any(np.diff(inner) != 1):  # several runs: shifts are not uniform
        return _torque_delay_exact(scorer, max_delay, dt)
    pairs = scorer.shifted_pairs(max(0, int(rows[0]) - max_shift), max_shift)
    shifted: dict[int, float] = {}

    def shift_score(k: int) -> float:
        if k not in shifted:
            shifted[k] = scorer.score(*pairs.normal_equations(k))
        return shifted[k]

    step = max(1, int(round(max(max_delay / SHIFT_GRID_STEPS, dt) / dt)))
    candidates = _whole_shift_candidates(shift_score, max_shift, step)
    exact = {float(k * dt): scorer.exact(float(k * dt)) for k in candidates}
    delay = min(exact, key=exact.__getitem__)
    return TorqueDelay(delay, exact[delay], shift_score(0))


def _whole_shift_candidates(
    shift_score: Callable[[int], float], max_shift: int, step: int
) -> list[float]:
    """The delays (in samples) to score exactly: the best whole shift within +-``max_shift`` by
    ``shift_score`` (memoised; a grid ``step`` apart, then a descent one sample at a time within
    a grid step of its best) and, unless it is at the end, the vertex of the parabola through
    its score and its neighbours' when that is at least a tenth of a sample away."""
    grid = np.arange(-(max_shift // step), max_shift // step + 1) * step
    best = int(grid[np.argmin([shift_score(int(k)) for k in grid])])
    low, high = max(best - step, -max_shift), min(best + step, max_shift)
    for direction in (-1, 1):  # descend over whole shifts within a grid step of the best
        while low <= best + direction <= high and shift_score(best + direction) < shift_score(best):
            best += direction
    candidates: list[float] = [best]
    if -max_shift < best < max_shift:
        below, at, above = (shift_score(best + d) for d in (-1, 0, 1))
        curvature = below - 2.0 * at + above
        if curvature > 0:
            offset = float(np.clip(0.5 * (below - above) / curvature, -0.5, 0.5))
            if abs(offset) >= 0.05:  # a tenth of a sample, as the exact search's tolerance
                candidates.append(best + offset)
    return candidates


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

    def shifted_pairs(self, first: int, max_shift: int) -> ShiftedTorquePairs:
        """:class:`ShiftedTorquePairs` of the efforts at ``rows`` and the motion from sample
        ``first`` to ``max_shift`` samples past the last row."""
        t, model = self.t, self.model
        times = t[first : self.rows[-1] + max_shift + 1]
        width = self.differentiation.half_width
        inside = inside_segments(t, times, width, self.differentiation.gap(t))
        q, dq, ddq = (np.zeros((times.size, np.shape(self.q)[1])) for _ in range(3))
        for value, part in zip(
            (q, dq, ddq),
            motion_at(t, self.q, self.dq, self.ddq, self.differentiation, times[inside]),
        ):
            value[inside] = part  # the rest (by a gap between runs) is paired with no row
        ordered = model.in_joint_order(JointTorqueData(q, dq, ddq, np.zeros_like(q), self.names))
        zeros = np.zeros_like(self.efforts)
        efforts = JointTorqueData(zeros, zeros, zeros, self.efforts, self.names)
        return ShiftedTorquePairs(
            model.joint_torque_regressor(
                ordered.positions, ordered.velocities, ordered.accelerations
            ),
            model.known_torques(ordered.accelerations),
            model.measured_torques(model.in_joint_order(efforts).efforts),
            first,
            self.rows,
            max_shift,
        )

    def score(self, gram: np.ndarray, moment: np.ndarray, yty: float, n_rows: int) -> float:
        """The fit's training RMS (N·m) of these normal equations."""
        problem = build_link_problem(self.model, gram, moment, yty, n_rows, self.prior_weight)
        self.previous = solve(
            problem, method=self.method, initvals=self.previous, **self.solver_options
        )
        return float(np.sqrt(problem.squared_residual(self.previous.x) / n_rows))

    def exact(self, delay: float) -> float:
        """The score with the motion at ``t[rows] - delay`` (regressor evaluated there)."""
        motion = motion_at(
            self.t, self.q, self.dq, self.ddq, self.differentiation, self.t[self.rows] - delay
        )
        channels = link_channels(self.model, JointTorqueData(*motion, self.efforts, self.names))
        return self.score(*channels.total())


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
    delay = min(scores, key=scores.__getitem__)
    return TorqueDelay(float(delay), scores[delay], scores[0.0])
