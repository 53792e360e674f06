"""``cad_prior``: identification with CAD values as the prior, in one of two forms.

**Prior strength from the data** (default, ``prior_std`` given and the problem without a prior
term of its own): the maximum a posteriori estimate with the CAD values as a Gaussian prior::

    minimise  ||Y x - y||^2 + (sigma^2 / prior_std^2) sum_k d_k(theta_k - prior_k)^2
    s.t.      consistency constraints (solved by ``lmi``)

with ``d_k(dtheta)^2 = tr(J_k^-1 dJ J_k^-1 dJ) / 4`` the affine-invariant (Fisher) metric of the
pseudo-inertia at the prior ``J_k = J(prior_k)`` (the local form of the entropic divergence of
Lee, Wensing & Park 2020; ``d = eps`` when the body is scaled by ``1 + eps``; a COM shift counts
relative to the body's size), ``sigma^2`` the noise variance per row estimated from the
unconstrained fit (``||Y x_ls - y||^2 / (N - rank)``) and ``prior_std`` the CAD values' relative
uncertainty. Rich data outweigh the prior; in the directions the data barely excite, the prior
decides. The extras (F/T offset, ...) have no prior. ``info``: ``sigma2``, ``prior_scale``
(``sigma^2 / prior_std^2``).

**Least-squares set** (``prior_std=None``, or a problem with its own prior weight ``W``): among
the least-squares-optimal parameters, the consistent one closest to the prior (Gautier & Venture
2013, posed as an SDP on the null-space coordinates; cvxpy/Clarabel).

With ``Y^T Y = V diag(lambda) V^T``, the least-squares optimal set is ``x_ls + N z`` (``x_ls``
the minimum-norm solution, ``N`` the eigenvectors with ``lambda <= rcond * lambda_max``: the
unidentifiable directions). The method solves::

    minimise_z  (x - prior)^T W (x - prior),  x = x_ls + N z
    s.t.        J(theta_k(x)) >= 0, ellipsoids, non-negativity

(``W`` the problem's prior weight, identity if it has none). When no point of the least-squares set
is consistent (noise on the identifiable combinations), it solves instead, lexicographically::

    minimise (x - prior)^T W (x - prior)   s.t.  ||Y x - y||^2 <= (1 + residual_slack) f_c + a,
                                                 consistency constraints

with ``f_c`` the best consistent residual (``lmi`` on the data alone) and ``a`` a round-off
allowance; ``status`` says which (``"solved"`` / ``"solved_relaxed"``). The prior term is not
part of the fit here: the prior only selects among (near-)optimal fits.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

import numpy as np

from inertia_id_ros.core.inertia import N_BODY_PARAMS, PSEUDO_INERTIA_BASIS, pseudo_inertia
from inertia_id_ros.errors import ProblemError, SolverError
from inertia_id_ros.solvers._linalg import psd_sqrt_factor
from inertia_id_ros.solvers.lmi import consistency_constraints, constraints_hold, solve_lmi
from inertia_id_ros.solvers.problem import (
    CONSISTENCY_MARGIN,
    Problem,
    Solution,
    make_solution,
    rounded_to_feasible,
)

if TYPE_CHECKING:
    import cvxpy as cp

DEFAULT_PRIOR_STD = 0.2
"""Relative uncertainty of CAD inertial parameters (a CAD model misses fasteners, cables, glue
and density variations: typically 10-30 %)."""


METRIC_EIGENVALUE_FLOOR = 1e-4
"""Eigenvalues of ``J(prior)`` below this fraction of the largest are raised to it before the
metric is taken: a degenerate or inconsistent prior body gives a finite, weaker metric."""


def pseudo_inertia_metric(theta: np.ndarray) -> np.ndarray:
    """(10, 10) ``F`` with ``dtheta^T F dtheta = tr(J^-1 dJ J^-1 dJ) / 4`` at ``theta`` (10,)
    (``J = J(theta)``, eigenvalues floored at :data:`METRIC_EIGENVALUE_FLOOR` times the largest;
    ``dJ = J(dtheta)``): the affine-invariant metric of the pseudo-inertia, scaled so that
    ``theta -> (1 + eps) theta`` has length ``eps``. Zeros for a body without mass or moments."""
    eigvals, eigvecs = np.linalg.eigh(pseudo_inertia(theta))
    if not eigvals[-1] > 0:
        return np.zeros((N_BODY_PARAMS, N_BODY_PARAMS))
    J_inv = (eigvecs / np.maximum(eigvals, METRIC_EIGENVALUE_FLOOR * eigvals[-1])) @ eigvecs.T
    half = np.einsum("ab,ibc->iac", J_inv, PSEUDO_INERTIA_BASIS)  # J^-1 B_i
    metric = np.einsum("iab,jba->ij", half, half) / 4.0
    return 0.5 * (metric + metric.T)


def _map_estimate(
    problem: Problem,
    prior: np.ndarray,
    initvals: Solution | np.ndarray | None,
    prior_std: float,
    rcond: float,
    margin: float,
    started: float,
) -> Solution:
    """The maximum a posteriori form (see the module docstring) about ``problem.prior``
    (``prior``)."""
    p, n = problem.n_params, problem.n_bodies
    eigvals, eigvecs = np.linalg.eigh(problem.gram)
    keep = eigvals > rcond * max(eigvals[-1], 0.0)
    x_ls = eigvecs[:, keep] @ ((eigvecs[:, keep].T @ problem.moment) / eigvals[keep])
    dof = problem.n_rows - int(np.sum(keep))
    sigma2 = (
        problem.squared_residual(x_ls) / dof if dof > 0 else problem.yty / max(problem.n_rows, 1)
    )
    sigma2 = max(sigma2, 1e-12 * problem.yty / max(problem.n_rows, 1), 1e-300)
    weight = np.zeros((p, p))
    for k in range(n):
        body = slice(N_BODY_PARAMS * k, N_BODY_PARAMS * (k + 1))
        weight[body, body] = pseudo_inertia_metric(prior[body])
    scale = sigma2 / prior_std**2
    posterior = problem.replace(prior_weight=scale * weight)
    solution = solve_lmi(posterior, initvals, backend="fast", margin=margin)
    return make_solution(
        posterior,
        solution.x,
        "cad_prior",
        found=solution.found,
        status=solution.status,
        iterations=solution.iterations,
        started=started,
        finished=time.perf_counter(),
        message=f"prior strength sigma^2/prior_std^2 = {scale:.3g} "
        f"(sigma^2 = {sigma2:.3g} per row, prior_std {prior_std:g})",
        info={**solution.info, "sigma2": sigma2, "prior_scale": scale, "prior_std": prior_std},
    )


def _constraints(problem: Problem, x: cp.Expression) -> list[cp.Constraint]:
    return consistency_constraints(
        x, problem.n_bodies, problem.ellipsoid_rows(), problem.nonnegative
    )


def solve_cad_prior(
    problem: Problem,
    initvals: Solution | np.ndarray | None = None,
    *,
    prior_std: float | None = DEFAULT_PRIOR_STD,
    rcond: float = 1e-10,
    residual_slack: float = 1e-4,
    tol: float = 1e-8,
    margin: float = CONSISTENCY_MARGIN,
) -> Solution:
    """Consistent parameters with ``problem.prior`` (required) as the CAD prior (see the module
    docstring for the two forms).

    ``prior_std``: relative uncertainty of the CAD values (> 0) for the maximum a posteriori
    form; ``None``: the least-squares-set form. ``rcond``: eigenvalues of ``Y^T Y`` below
    ``rcond * lambda_max`` span the null space; ``residual_slack``: relative residual allowance
    of the relaxed least-squares-set problem; ``tol``: Clarabel's tolerances. ``initvals`` warm-
    starts the maximum a posteriori form (the least-squares-set form validates it only).
    """
    import cvxpy as cp

    started = time.perf_counter()
    problem.warm_start(initvals)
    if problem.prior is None:
        raise ProblemError("cad_prior needs problem.prior (the CAD parameters)")
    if prior_std is not None:
        if not (np.isfinite(prior_std) and prior_std > 0):
            raise ProblemError(f"cad_prior: prior_std must be > 0, got {prior_std!r}")
        if not problem.has_prior_term:
            return _map_estimate(
                problem, problem.prior, initvals, float(prior_std), rcond, margin, started
            )
    p = problem.n_params
    weight = problem.weight_matrix if problem.has_prior_term else np.eye(p)
    root_w, _ = psd_sqrt_factor(weight, np.zeros(p), 0.0)
    eigvals, eigvecs = np.linalg.eigh(problem.gram)
    keep = eigvals > rcond * max(eigvals[-1], 0.0)
    x_ls = eigvecs[:, keep] @ ((eigvecs[:, keep].T @ problem.moment) / eigvals[keep])
    null_space = eigvecs[:, ~keep]
    options = {"tol_gap_abs": tol, "tol_gap_rel": tol, "tol_feas": tol}
    try:
        x_value, status, iterations = _in_least_squares_set(
            problem, root_w, x_ls, null_space, options
        )
        if x_value is None:
            x_value, status, more = _near_least_squares_set(
                problem, root_w, residual_slack, options
            )
            iterations += more
    except (cp.error.SolverError, ArithmeticError) as e:
        raise SolverError(f"cad_prior: Clarabel failed: {e}") from e
    x_value = rounded_to_feasible(x_value, problem, margin)
    return make_solution(
        problem,
        x_value,
        "cad_prior",
        found=status.startswith("solved"),
        status=status,
        iterations=iterations,
        started=started,
        finished=time.perf_counter(),
        message=f"null space dimension {null_space.shape[1]}",
        info={"null_space_dim": int(null_space.shape[1])},
    )


def _in_least_squares_set(
    problem: Problem,
    root_w: np.ndarray,
    x_ls: np.ndarray,
    null_space: np.ndarray,
    options: dict[str, float],
) -> tuple[np.ndarray | None, str, int]:
    """``(x, status, iterations)``: the consistent point of the least-squares set ``x_ls +
    null_space z`` closest to the prior (in the metric ``root_w^T root_w``), ``x`` ``None`` if
    the set holds none; Clarabel's iterations."""
    import cvxpy as cp

    if not null_space.shape[1]:  # the least-squares set is the point x_ls
        return (x_ls if constraints_hold(problem, x_ls) else None), "solved", 0
    z = cp.Variable(null_space.shape[1])
    model = cp.Problem(
        cp.Minimize(cp.sum_squares(root_w @ (x_ls + null_space @ z - problem.prior))),
        _constraints(problem, x_ls + null_space @ z),
    )
    model.solve(solver="CLARABEL", **options)
    iterations = int(model.solver_stats.num_iters or 0)
    if model.status not in (cp.OPTIMAL, cp.OPTIMAL_INACCURATE) or z.value is None:
        return None, str(model.status), iterations
    status = "solved" if model.status == cp.OPTIMAL else "solved_inaccurate"
    return x_ls + null_space @ z.value, status, iterations


def _near_least_squares_set(
    problem: Problem, root_w: np.ndarray, residual_slack: float, options: dict[str, float]
) -> tuple[np.ndarray, str, int]:
    """``(x, status, iterations)``: the consistent point closest to the prior among those whose
    residual is within ``residual_slack`` (relative) of the smallest consistent one."""
    import cvxpy as cp

    best = solve_lmi(problem.replace(prior=None, prior_weight=0.0), backend="fast")
    f_consistent = problem.squared_residual(best.x)
    root_g, target = psd_sqrt_factor(problem.gram, problem.moment, 0.0)
    offset = problem.yty - float(target @ target)
    bound = (1.0 + residual_slack) * f_consistent + 1e-9 * max(problem.yty, 1e-300)
    unit = 1.0 / np.sqrt(bound)  # the residual constraint normalised to "<= 1"
    xv = cp.Variable(problem.n_params)
    model = cp.Problem(
        cp.Minimize(cp.sum_squares(root_w @ (xv - problem.prior))),
        [cp.sum_squares(unit * root_g @ xv - unit * target) <= 1.0 - offset / bound]
        + _constraints(problem, xv),
    )
    model.solve(solver="CLARABEL", **options)
    if xv.value is None:
        raise SolverError(f"cad_prior: relaxed SDP returned no solution ({model.status})")
    status = "solved_relaxed" if model.status == cp.OPTIMAL else f"relaxed_{model.status}"
    return xv.value, status, int(model.solver_stats.num_iters or 0)
