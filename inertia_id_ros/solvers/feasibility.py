"""Feasibility of an estimate (Sousa & Cortesao 2014): per-body reports and the nearest
physically consistent parameters in a given metric (an SDP, solved by cvxpy/Clarabel)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from inertia_id_ros.core.inertia import (
    CONSISTENCY_TOLERANCE,
    N_BODY_PARAMS,
    ConsistencyReport,
    check_consistencies,
)
from inertia_id_ros.errors import ProblemError
from inertia_id_ros.solvers.lmi import solve_lmi
from inertia_id_ros.solvers.problem import Problem


def check(
    x: np.ndarray, n_bodies: int, tol: float = CONSISTENCY_TOLERANCE
) -> list[ConsistencyReport]:
    """:func:`~inertia_id_ros.core.inertia.check_consistency` of each body of ``x`` (p,)."""
    x = np.asarray(x, dtype=float).ravel()
    if x.size < N_BODY_PARAMS * n_bodies:
        raise ProblemError(
            f"x has {x.size} entries, {n_bodies} bodies need {N_BODY_PARAMS * n_bodies}"
        )
    return check_consistencies(x[: N_BODY_PARAMS * n_bodies], tol)


def metric_matrix(metric: float | np.ndarray | None, n_params: int) -> np.ndarray:
    """(p, p) PSD metric from ``None`` (identity), a scalar, a (p,) diagonal or a (p, p) matrix."""
    if metric is None:
        return np.eye(n_params)
    m = np.asarray(metric, dtype=float)
    if m.ndim == 0:
        return float(m) * np.eye(n_params)
    if m.shape == (n_params,):
        return np.diag(m)
    if m.shape == (n_params, n_params):
        return 0.5 * (m + m.T)
    raise ProblemError(
        f"metric must be None, a scalar, ({n_params},) or ({n_params}, "
        f"{n_params}), got shape {m.shape}"
    )


def closest_feasible(
    x: np.ndarray,
    n_bodies: int,
    metric: float | np.ndarray | None = None,
    *,
    nonnegative: tuple[int, ...] = (),
    bounding_ellipsoids: Sequence[np.ndarray | None] | None = None,
    backend: str = "cvxpy",
) -> np.ndarray:
    """``argmin_x' (x' - x)^T M (x' - x)`` s.t. ``J(theta_k') >= 0`` (and the optional
    ``nonnegative`` / ellipsoid constraints): the SDP is the ``lmi`` problem with ``Y^T Y = M``,
    ``Y^T y = M x``. Metric ``M`` as in :func:`metric_matrix` (identity by default; mixing kg and
    kg*m^2, so pass one that reflects the parameters' scales). Returns ``x'`` (p,) with
    ``lambda_min(J) >= CONSISTENCY_MARGIN``."""
    x = np.asarray(x, dtype=float).ravel()
    gram = metric_matrix(metric, x.size)
    problem = Problem(
        gram=gram,
        moment=gram @ x,
        yty=float(x @ gram @ x),
        n_rows=1,
        n_bodies=n_bodies,
        nonnegative=nonnegative,
        prior=x,
        bounding_ellipsoids=bounding_ellipsoids,
    )
    return solve_lmi(problem, backend=backend).x
