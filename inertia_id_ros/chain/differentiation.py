"""The derivative filter of a joint-torque recording, chosen by cross-validation on its torques.

Accelerations are not measured: they come from a Savitzky–Golay (local polynomial) derivative,
centred on each sample (zero-phase: offline nothing is delayed). Recorded velocities are
differentiated once (:data:`SOURCE_VELOCITIES`); only without them are positions differentiated
twice (:data:`SOURCE_POSITIONS`), which amplifies the encoder noise by a further factor of the
bandwidth. The filter's width trades noise (too narrow: noisy accelerations in the regressor,
which biases least squares toward zero inertia) against distortion (too wide: the
accelerations' peaks are flattened, the inertias come out too large and the fit misses every
fast motion). The best width depends on the sample rate, the noise and how fast the robot
moves, so it is chosen on the training data (:func:`select_differentiation`): for each candidate
``(half_width, order)``, the torques of every contiguous time block are predicted by least
squares (regularised toward the URDF) fitted on the other blocks; the candidate with the
smallest held-out RMS wins (searched coarse to fine over the half-widths of each order, ranked
on every other sample of long recordings: :func:`select_differentiation`). Every candidate is
scored on the same samples (those a fit of the widest candidate covers on both sides), at most
:data:`DEFAULT_CV_SAMPLES` of them (evenly strided).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from inertia_id_ros.chain.links import JointTorqueData, LinkModel, regression_system
from inertia_id_ros.core.covariance import channel_grams
from inertia_id_ros.core.filtering import (
    RECORDED_GAP_STEPS,
    derivatives_at_samples,
    inside_segments,
    joint_states_at,
    local_polynomial_derivatives,
)
from inertia_id_ros.options import (
    DEFAULT_PRIOR_WEIGHT,
    PAYLOAD_TORQUES_HALF_WIDTH,
    PAYLOAD_TORQUES_MIN_SAMPLES,
)
from inertia_id_ros.solvers import Problem, solve

SOURCE_VELOCITIES = "velocities"
"""Accelerations from the recorded velocities, differentiated once."""
SOURCE_POSITIONS = "positions"
"""Velocities and accelerations from the positions, differentiated once and twice."""
SOURCE_RECORDED = "recorded"
"""Velocities and accelerations as recorded (nothing differentiated)."""
DEFAULT_HALF_WIDTH_SAMPLES = (2, 3, 5, 8, 12, 20, 32, 50, 80, 125, 200)
"""Candidate half-widths in sample periods (windows of 5 ... 401 samples)."""
DEFAULT_ORDERS = {SOURCE_VELOCITIES: (2, 3), SOURCE_POSITIONS: (2, 4)}
"""Candidate polynomial degrees by source. At the window's centre a degree-2 fit differentiates
once as a degree-1 fit does, and a degree-3 fit as degree 4 (and twice: 2 as 3, 4 as 5), so these
are the distinct pairs of a plain and a less distorting, noisier derivative."""
DEFAULT_CV_SAMPLES = 12000
"""Samples scored per candidate at most (evenly strided over the recording)."""
DEFAULT_FOLDS = 5
RANKING_STRIDE = 4
"""With at least ``RANKING_STRIDE * RANKING_MIN_SAMPLES`` samples scored, the candidates are
ranked on every ``RANKING_STRIDE``-th of them; each order's best is then scored on all. (The
ranking needs the motion's span, not its density: on the KUKA run 1 and the simulated Panda
arm at 100 Hz and 1 kHz, ranking on a quarter of the samples picks the filters that ranking on
half of them did.)"""
RANKING_MIN_SAMPLES = 1000
MAX_HALF_WIDTH = 0.2
"""Longest candidate half-width (s): wider windows flatten the accelerations of any arm motion."""


@dataclass(frozen=True)
class DifferentiationFilter:
    """A zero-phase local polynomial derivative: degree ``order`` over ``half_width`` s on each
    side of a sample, of ``source`` (:data:`SOURCE_VELOCITIES`, :data:`SOURCE_POSITIONS`;
    :data:`SOURCE_RECORDED`: none), for samples ``sample_period`` s apart (median)."""

    source: str
    half_width: float = 0.0
    order: int = 0
    sample_period: float = 0.0

    @property
    def window_samples(self) -> int:
        """Samples in the window at the median sample period (odd)."""
        if self.source == SOURCE_RECORDED or self.sample_period <= 0:
            return 0
        return 2 * samples_each_side(self.half_width, self.sample_period) + 1

    def gap(self, t: np.ndarray) -> float:
        """s: a step of the stamps ``t`` longer than this is a gap (between two runs) the
        filter never spans: its half-width; recorded signals', ``RECORDED_GAP_STEPS`` sample
        periods."""
        if self.source == SOURCE_RECORDED or self.half_width <= 0:
            return RECORDED_GAP_STEPS * sample_period(t)
        return self.half_width

    @property
    def online_lag(self) -> float:
        """Delay (s) of the same filter run online: a sample is filtered once the joint states
        reach ``half_width`` past it (the online estimators delay every signal by as much)."""
        return self.half_width

    def as_json(self) -> dict:
        """``{"source", "half_width_s", "order", "window_samples", "sample_period_s"}``."""
        return {
            "source": self.source,
            "half_width_s": self.half_width,
            "order": self.order,
            "window_samples": self.window_samples,
            "sample_period_s": self.sample_period,
        }

    def describe(self) -> str:
        """One line, e.g. ``'velocities differentiated once: Savitzky-Golay order 2, 41
        samples (+-0.020 s)'``."""
        if self.source == SOURCE_RECORDED:
            return "recorded velocities and accelerations (nothing differentiated)"
        how = (
            "velocities differentiated once"
            if self.source == SOURCE_VELOCITIES
            else "positions differentiated twice"
        )
        return (
            f"{how}: Savitzky-Golay order {self.order}, {self.window_samples} samples "
            f"(+-{self.half_width:.3f} s, zero-phase)"
        )


@dataclass(frozen=True)
class DifferentiationSelection:
    """Result of :func:`select_differentiation`: ``cv_rms[i]`` (N·m) the held-out torque RMS of
    ``candidates[i]`` (NaN: not evaluated); ``chosen`` the smallest; scored on ``n_samples``
    samples in ``n_folds`` blocks."""

    candidates: tuple[DifferentiationFilter, ...]
    cv_rms: np.ndarray
    chosen: DifferentiationFilter
    n_samples: int
    n_folds: int
    ranking_rms: np.ndarray | None = None
    """The held-out RMS (N·m) each candidate was ranked by, on ``n_ranking_samples`` of the
    samples (every ``RANKING_STRIDE``-th; NaN: not evaluated); ``None``: as ``cv_rms``."""
    n_ranking_samples: int | None = None

    def as_json(self) -> dict:
        """The chosen filter (:meth:`DifferentiationFilter.as_json`) with ``"selection"``: the
        criterion and every candidate's score."""
        out = self.chosen.as_json()
        evaluated = ~np.isnan(self.cv_rms)
        out["selection"] = {
            "criterion": f"{self.n_folds}-fold blocked cross-validation of the torques "
            "(least squares regularised toward the URDF)"
            + (
                ""
                if evaluated.all()
                else "; coarse-to-fine over the half-widths, "
                f"{int(evaluated.sum())} of {evaluated.size} candidates evaluated "
                "(only those listed)"
            ),
            "samples": self.n_samples,
            "candidates": [
                {
                    "half_width_s": c.half_width,
                    "order": c.order,
                    "window_samples": c.window_samples,
                    "cv_rms": float(r),
                }
                for c, r, e in zip(self.candidates, self.cv_rms, evaluated)
                if e
            ],
        }
        if self.ranking_rms is not None:
            ranked = ~np.isnan(self.ranking_rms)
            out["selection"]["criterion"] += (
                f"; ranked on {self.n_ranking_samples} of the samples, each order's best "
                "scored on all (those listed)"
            )
            out["selection"]["ranking"] = {
                "samples": self.n_ranking_samples,
                "candidates": [
                    {"half_width_s": c.half_width, "order": c.order, "cv_rms": float(r)}
                    for c, r, e in zip(self.candidates, self.ranking_rms, ranked)
                    if e
                ],
            }
        return out


def sample_period(t: np.ndarray) -> float:
    """Median spacing (s) of the stamps ``t`` (N,)."""
    return float(np.median(np.diff(np.asarray(t, dtype=float))))


def filter_for(
    t: np.ndarray, velocities: bool, half_width: float, order: int = 2
) -> DifferentiationFilter:
    """The filter of degree ``order`` over ``half_width`` (s) for samples stamped ``t`` (N,)
    (s): of the recorded velocities when ``velocities``, else of the positions."""
    return DifferentiationFilter(
        SOURCE_VELOCITIES if velocities else SOURCE_POSITIONS, half_width, order, sample_period(t)
    )


def payload_half_width(period: float) -> float:
    """The default half-width (s, to the ms above) of a payload-from-torques fit's
    differentiation, for joint states ``period`` s apart (:func:`sample_period`):
    :data:`~inertia_id_ros.options.PAYLOAD_TORQUES_HALF_WIDTH`, or
    :data:`~inertia_id_ros.options.PAYLOAD_TORQUES_MIN_SAMPLES` samples on each side and half a
    period (for the stamps' jitter) at a lower rate."""
    return max(
        PAYLOAD_TORQUES_HALF_WIDTH,
        float(np.ceil(1e3 * (PAYLOAD_TORQUES_MIN_SAMPLES + 0.5) * period - 1e-6)) / 1e3,
    )


def samples_each_side(half_width: float, period: float) -> int:
    """Joint states ``period`` s apart within ``half_width`` (s) on each side of a sample; a
    payload's filter spanning fewer than
    :data:`~inertia_id_ros.options.PAYLOAD_TORQUES_MIN_SAMPLES` leaves its accelerations
    noisy."""
    return int(np.floor(half_width / period + 1e-9))


def filter_candidates(
    t: np.ndarray,
    velocities: bool,
    half_width_samples: Sequence[int] = DEFAULT_HALF_WIDTH_SAMPLES,
    orders: Sequence[int] | None = None,
) -> list[DifferentiationFilter]:
    """Candidate filters for a recording stamped ``t`` (N,) (s): every ``order`` (default
    :data:`DEFAULT_ORDERS` of the source) with every
    half-width ``k`` (in median sample periods) with ``2 k >= order + 2``, at most
    :data:`MAX_HALF_WIDTH` and a quarter of the recording. The half-width is ``(k + 1/2)``
    periods, so that the window holds ``2 k + 1`` samples however the stamps jitter (up to half
    a period)."""
    dt = sample_period(t)
    span = float(t[-1] - t[0])
    source = SOURCE_VELOCITIES if velocities else SOURCE_POSITIONS
    orders = DEFAULT_ORDERS[source] if orders is None else orders
    return [
        DifferentiationFilter(source, (k + 0.5) * dt, order, dt)
        for k in half_width_samples
        for order in orders
        if 2 * k >= order + 2 and (k + 0.5) * dt <= min(MAX_HALF_WIDTH, span / 4)
    ]


def _derivatives_at(
    t: np.ndarray,
    q: np.ndarray,
    dq: np.ndarray | None,
    times: np.ndarray,
    candidate: DifferentiationFilter,
) -> tuple[np.ndarray, np.ndarray]:
    """Velocities and accelerations (M, n) at ``times`` of ``candidate``'s fit, as
    :func:`~inertia_id_ros.core.filtering.joint_states_at` computes them, without fitting the
    positions when velocities are recorded (the positions' fit is not used)."""
    if dq is None:
        fit = local_polynomial_derivatives(t, q, times, candidate.half_width, candidate.order, 2)
        return fit[:, 1], fit[:, 2]
    fit = local_polynomial_derivatives(t, dq, times, candidate.half_width, candidate.order, 1)
    return fit[:, 0], fit[:, 1]


def select_differentiation(
    model: LinkModel,
    t: np.ndarray,
    q: np.ndarray,
    dq: np.ndarray | None,
    effort: np.ndarray,
    joint_names: Sequence[str] | None = None,
    candidates: Sequence[DifferentiationFilter] | None = None,
    n_folds: int = DEFAULT_FOLDS,
    max_samples: int = DEFAULT_CV_SAMPLES,
    prior_weight: float = DEFAULT_PRIOR_WEIGHT,
    search: str = "coarse",
) -> DifferentiationSelection:
    """Choose the derivative filter of a recording by blocked cross-validation (module
    docstring). ``t`` (N,) stamps (s), ``q``, ``dq`` (recorded velocities or ``None``),
    ``effort`` (N, n) in ``joint_names`` order (``None``: the model's); ``candidates`` default
    :func:`filter_candidates`; the least squares are regularised toward the URDF with
    ``prior_weight`` per torque sample (:mod:`inertia_id_ros.chain.links`; unregularised, a fit on
    four blocks extrapolates wildly along what they do not identify, and that noise, not the
    filter, would decide). ``search``: ``"grid"`` scores every candidate; ``"coarse"`` (default)
    scores every other half-width of each order (and the widest), then descends from each
    order's best along its half-widths, scoring neighbours until both are worse: the grid's
    choice whenever each order's held-out RMS has a single minimum over the half-widths (as it
    varies smoothly with the width), for about a third fewer candidates; the others'
    ``cv_rms`` are NaN. From ``RANKING_STRIDE * RANKING_MIN_SAMPLES`` samples on, that search
    ranks on every ``RANKING_STRIDE``-th sample (``ranking_rms``) and only each order's best is
    scored on all samples (``cv_rms``; the smallest is chosen). Raises ``ValueError`` if the
    recording is too short."""
    t = np.asarray(t, dtype=float)
    if candidates is None:
        candidates = filter_candidates(t, dq is not None)
    candidates = tuple(candidates)
    if not candidates:
        raise ValueError(f"the recording ({t[-1] - t[0]:.3f} s) is too short for any filter")
    reach = max(c.half_width for c in candidates)
    interior = np.flatnonzero(inside_segments(t, t, reach, min(c.half_width for c in candidates)))
    rows = interior[:: max(1, int(np.ceil(interior.size / max_samples)))]
    if rows.size < 2 * n_folds:
        raise ValueError(f"{rows.size} samples cannot make {n_folds} folds")
    scorer = _HeldOutScorer(model, t, q, dq, effort, joint_names, n_folds, prior_weight)
    stride = (
        RANKING_STRIDE
        if search == "coarse" and rows.size >= RANKING_STRIDE * RANKING_MIN_SAMPLES
        else 1
    )
    ranking_rows = rows[::stride]
    scores = np.full(len(candidates), np.nan)  # of the ranking rows

    def score(i: int) -> float:
        if np.isnan(scores[i]):
            scores[i] = scorer.score(candidates[i], ranking_rows)
        return float(scores[i])

    ladders: dict[tuple[str, int], list[int]] = {}  # per source and order, by half-width
    for i in sorted(range(len(candidates)), key=lambda i: candidates[i].half_width):
        ladders.setdefault((candidates[i].source, candidates[i].order), []).append(i)
    if search == "grid":
        for i in range(len(candidates)):
            score(i)
    elif search == "coarse":
        _coarse_to_fine(list(ladders.values()), scores, score)
    else:
        raise ValueError(f"unknown search {search!r} (grid, coarse)")
    ranking = np.sqrt(scores)
    if stride == 1:
        cv_rms = ranking
    else:  # each order's best on every row decides
        cv_rms = np.full(len(candidates), np.nan)
        for ladder in ladders.values():
            best = min(ladder, key=lambda i: scores[i] if not np.isnan(scores[i]) else np.inf)
            cv_rms[best] = np.sqrt(scorer.score(candidates[best], rows))
    return DifferentiationSelection(
        candidates,
        cv_rms,
        candidates[int(np.nanargmin(cv_rms))],
        int(rows.size),
        n_folds,
        None if stride == 1 else ranking,
        None if stride == 1 else int(ranking_rows.size),
    )


def _coarse_to_fine(
    ladders: list[list[int]], scores: np.ndarray, score: Callable[[int], float]
) -> None:
    """The ``"coarse"`` search of :func:`select_differentiation`: on each ladder (candidates by
    half-width) every other one and the widest scored, then a descent from the best, scoring
    neighbours until both are worse (``score(i)`` memoises into ``scores``, NaN: not scored)."""
    for ladder in ladders:  # every other half-width and the widest
        for i in ladder[::2] + ladder[-1:]:
            score(i)
    for ladder in ladders:  # descend from each order's best until both neighbours score higher
        at = min(
            range(len(ladder)),
            key=lambda j: np.inf if np.isnan(scores[ladder[j]]) else scores[ladder[j]],
        )
        while True:
            steps = [j for j in (at - 1, at + 1) if 0 <= j < len(ladder)]
            if not steps:
                break
            j = min(steps, key=lambda j: score(ladder[j]))
            if score(ladder[j]) >= score(ladder[at]):
                break
            at = j


class _HeldOutScorer:
    """Blocked cross-validation of a derivative filter on a recording (``t`` (N,) s, ``q``, ``dq``
    or ``None``, ``effort`` (N, n) in ``names`` order): least squares regularised toward the URDF
    with ``prior_weight`` per torque sample, fitted on all blocks but one of ``n_folds``."""

    def __init__(
        self,
        model: LinkModel,
        t: np.ndarray,
        q: np.ndarray,
        dq: np.ndarray | None,
        effort: np.ndarray,
        names: Sequence[str] | None,
        n_folds: int,
        prior_weight: float,
    ) -> None:
        self.model, self.t, self.q, self.dq, self.effort = model, t, q, dq, effort
        self.names = None if names is None else tuple(names)
        self.n_folds, self.prior_weight = n_folds, prior_weight

    def score(self, candidate: DifferentiationFilter, rows: np.ndarray) -> float:
        """Mean squared held-out torque error (N·m)² on ``rows`` (velocities smoothed as
        with_derivatives does)."""
        model, t, q = self.model, self.t, self.q
        total_score = 0.0
        velocities, accelerations = _derivatives_at(t, q, self.dq, t[rows], candidate)
        data = JointTorqueData(
            np.asarray(q, dtype=float)[rows],
            velocities,
            accelerations,
            np.asarray(self.effort)[rows],
            self.names,
        )
        Y, y = regression_system(model, data)
        Y = Y.reshape(rows.size, model.n_joints, -1)
        y = y.reshape(rows.size, model.n_joints)
        folds: list[tuple[np.ndarray, np.ndarray, float, int]] = []
        for b in np.array_split(np.arange(rows.size), self.n_folds):  # zero columns skipped
            Yb, yb = Y[b[0] : b[-1] + 1], y[b[0] : b[-1] + 1]
            folds.append(
                (
                    channel_grams(Yb).sum(axis=0),
                    np.einsum("knp,kn->p", Yb, yb),
                    float(np.sum(yb * yb)),
                    yb.size,
                )
            )
        total_gram, total_moment, total_yty, total_rows = np.zeros(()), np.zeros(()), 0.0, 0
        for gram, moment, yty, n_rows in folds:
            total_gram, total_moment = total_gram + gram, total_moment + moment
            total_yty, total_rows = total_yty + yty, total_rows + n_rows
        for gram, moment, yty, n_rows in folds:
            training = Problem(
                gram=total_gram - gram,
                moment=total_moment - moment,
                yty=total_yty - yty,
                n_rows=total_rows - n_rows,
                n_bodies=model.n_joints,
                prior=model.prior,
                prior_weight=self.prior_weight * (total_rows - n_rows),
            )
            x = solve(training, method="ols").x
            total_score += max(float(x @ gram @ x - 2.0 * moment @ x + yty), 0.0)
        return total_score / (rows.size * model.n_joints)


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
        keep = np.flatnonzero(inside_segments(t, t - delay, 0.0, differentiation.gap(t)))
        if delay == 0.0:
            return keep, (np.asarray(q), np.asarray(dq), np.asarray(ddq))
        return keep, _interpolated(t, q, dq, ddq, t[keep] - delay)
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
    names = None if joint_names is None else tuple(joint_names)
    return JointTorqueData(*motion, np.asarray(effort)[keep], names)


def motion_at(
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
        return _interpolated(t, q, dq, ddq, times)
    return joint_states_at(
        t,
        q,
        dq if differentiation.source == SOURCE_VELOCITIES else None,
        times,
        differentiation.half_width,
        differentiation.order,
    )


def _interpolated(
    t: np.ndarray,
    q: np.ndarray,
    dq: np.ndarray | None,
    ddq: np.ndarray | None,
    times: np.ndarray,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The recorded positions, velocities, accelerations (N, n) at stamps ``t`` (N,) linearly
    interpolated at ``times`` (M,)."""
    q_at, dq_at, ddq_at = (
        np.column_stack([np.interp(times, t, c) for c in np.asarray(a, dtype=float).T])
        for a in (q, dq, ddq)
    )
    return q_at, dq_at, ddq_at
