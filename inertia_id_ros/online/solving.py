"""The one solve path of the online estimators: solver errors as
:class:`~inertia_id_ros.errors.EstimateUnavailable`, channel-weighted solves, bounding ellipsoids
as a config holds them, and the physical-consistency check between a solver and a published
estimate."""

from __future__ import annotations

from collections.abc import Callable, Hashable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any, Generic, TypeVar

import numpy as np

from inertia_id_ros.core.covariance import ChannelNormalEquations
from inertia_id_ros.core.inertia import ConsistencyReport, check_consistencies
from inertia_id_ros.core.weighting import iterate_channel_weights
from inertia_id_ros.errors import EstimateUnavailable, ProblemError, SolverError
from inertia_id_ros.solvers import Problem, Solution, ellipsoids_for
from inertia_id_ros.solvers import solve as solve_problem

SOLVE_FAILURES = ("solver_failed", "inconsistent")
"""Reasons of :class:`~inertia_id_ros.errors.EstimateUnavailable` that are failures of a solve
(reported as errors), unlike waiting for data (``too_few_samples``,
``offset_not_identifiable``)."""


def ellipsoid_value(q: Any, name: str = "bounding_ellipsoid") -> tuple[float, ...]:
    """A bounding ellipsoid's 4x4 ``Q`` as a config holds it: row by row (16 floats); ValueError
    naming it ``name`` if it is not 4x4."""
    flat = np.asarray(q, dtype=float).reshape(-1)
    if flat.size != 16:
        raise ValueError(f"{name} must be a 4x4 matrix (16 values), got {flat.size} values")
    return tuple(float(v) for v in flat)


def ellipsoid_values(
    ellipsoids: Sequence[Any] | None,
) -> tuple[tuple[float, ...] | None, ...] | None:
    """Per-body bounding ellipsoids (each ``None`` or its 4x4 ``Q``) as a config holds them:
    ``Q`` row by row (16 floats, :func:`ellipsoid_value`) or ``None``; ValueError for a ``Q``
    that is not 4x4."""
    if ellipsoids is None:
        return None
    return tuple(
        None if q is None else ellipsoid_value(q, f"bounding_ellipsoids[{k}]")
        for k, q in enumerate(ellipsoids)
    )


def ellipsoid_matrices(
    values: Sequence[tuple[float, ...] | None] | None, method: str
) -> list[np.ndarray | None] | None:
    """The 4x4 ``Q`` of :func:`ellipsoid_values`' ``values`` for a solve with ``method``
    (``None`` for ``ols``: unconstrained)."""
    if values is None:
        return None
    return ellipsoids_for(method, [None if q is None else np.reshape(q, (4, 4)) for q in values])


T = TypeVar("T")


class KeptForPeriod(Generic[T]):
    """A costly by-product of a solve (e.g. the identifiability of a window's Gram matrix)
    recomputed at most every ``period_sec`` of sample time: :meth:`get` returns the kept value
    while its ``key`` (which window: generation, duration) is unchanged and the newest stamp
    ``t`` (s) lies within ``period_sec`` of the one it was computed at, else ``compute()``'s.
    Not thread-safe (a session's solves run one at a time)."""

    def __init__(self, period_sec: float) -> None:
        self.period_sec = float(period_sec)
        self._kept: tuple[Hashable, float, T] | None = None

    def get(self, key: Hashable, t: float, compute: Callable[[], T]) -> T:
        """The kept value for ``key`` at ``t`` (s), or ``compute()``'s, then kept."""
        kept = self._kept
        if kept is not None and kept[0] == key and 0.0 <= t - kept[1] < self.period_sec:
            return kept[2]
        value = compute()
        self._kept = (key, t, value)
        return value


def check_bodies(bodies: Mapping[str, np.ndarray], method: str) -> list[ConsistencyReport]:
    """The :func:`~inertia_id_ros.core.inertia.check_consistency` reports of ``bodies`` (name ->
    theta (10,)); raises :class:`EstimateUnavailable` (``inconsistent``) naming every body that
    is not fully physically consistent. The one check between a solver and a published
    estimate."""
    reports = check_consistencies(np.array(list(bodies.values())))
    problems = [
        f"{name}: {'; '.join(report.problems)}"
        for name, report in zip(bodies, reports)
        if not report.fully_consistent
    ]
    if problems:
        raise EstimateUnavailable(
            "inconsistent",
            f"method {method!r} returned a physically "
            f"inconsistent estimate: {' | '.join(problems)}",
        )
    return reports


@contextmanager
def solver_failures(method: str) -> Iterator[None]:
    """Any failure of a solve with ``method`` in the block (the problem, the options, bad option
    values, the back end) raised as :class:`EstimateUnavailable` (``solver_failed``): the one
    mapping of solver errors for every estimator."""
    try:
        yield
    except (ProblemError, SolverError, TypeError, ValueError) as e:
        raise EstimateUnavailable("solver_failed", f"method {method!r}: {e}") from e


def solve_or_fail(
    problem: Problem, method: str, initvals: Any, options: Mapping[str, Any]
) -> Solution:
    """``solvers.solve(problem, method, initvals, **options)``; a failure is
    :class:`EstimateUnavailable` (``solver_failed``, :func:`solver_failures`)."""
    with solver_failures(method):
        return solve_problem(problem, method, initvals=initvals, **options)


def solve_weighted(
    channels: ChannelNormalEquations,
    build: Callable[[np.ndarray | None], Problem],
    method: str,
    initvals: Any,
    options: Mapping[str, Any],
    weighting: str,
    initial_weights: np.ndarray | None = None,
) -> tuple[Solution, np.ndarray | None]:
    """:func:`solve_or_fail` of the problem ``build(weights)`` makes of the normal equations of
    ``channels`` with channel ``c``'s rows weighted by ``weights[c]``
    (:func:`~inertia_id_ros.core.weighting.weighted_normal_equations`): unweighted
    (``weighting="none"``, ``weights`` ``None``), or weighted by each channel's inverse residual
    variance, iterated (:func:`~inertia_id_ros.core.weighting.iterate_channel_weights`, each
    solve warm-started from the previous), from ``initial_weights`` (C,) when given (a previous
    solve's: the iteration then usually stops after one fit). Returns
    ``(solution, weights (C,) or None)``."""
    if weighting == "none":
        return solve_or_fail(build(None), method, initvals, options), None
    solutions: list[Solution] = []

    def fit(weights: np.ndarray) -> np.ndarray:
        start = solutions[-1] if solutions else initvals
        solutions.append(solve_or_fail(build(weights), method, start, options))
        return np.asarray(solutions[-1].x)

    if initial_weights is not None and np.shape(initial_weights) != (channels.n_channels,):
        initial_weights = None  # another set of channels
    _, weights = iterate_channel_weights(channels, fit, initial=initial_weights)
    return solutions[-1], weights.weights


def residual_rms(channels: ChannelNormalEquations, x: np.ndarray) -> float:
    """Root mean square of the residuals of ``x`` over every row of ``channels``, unweighted
    (the channels' units, e.g. N and N m mixed)."""
    return float(
        np.sqrt(channels.squared_residuals(x).sum() / (channels.n_samples * channels.n_channels))
    )
