"""``cad_prior``: among the least-squares-optimal parameters, the consistent one closest to the
prior (Gautier & Venture 2013, posed as an SDP on the null-space coordinates; cvxpy/Clarabel).

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

import numpy as np

from inertia_id_ros.solvers._linalg import psd_sqrt_factor
from inertia_id_ros.solvers.lmi import constraints_hold, consistency_constraints, solve_lmi
from inertia_id_ros.solvers.problem import (
    CONSISTENCY_MARGIN,
    Problem,
    Solution,
    initial_x,
    lift_to_margin,
    make_solution,
)
from inertia_id_ros.errors import ProblemError, SolverError


def _constraints(problem: Problem, x) -> list:
    return consistency_constraints(x, problem.n_bodies, problem.ellipsoid_rows(),
                                   problem.nonnegative)


def solve_cad_prior(problem: Problem, initvals: Solution | np.ndarray | None = None, *,
                    rcond: float = 1e-10, residual_slack: float = 1e-4, tol: float = 1e-8,
                    margin: float = CONSISTENCY_MARGIN) -> Solution:
    """Consistent least-squares parameters closest to ``problem.prior`` (required).

    ``rcond``: eigenvalues of ``Y^T Y`` below ``rcond * lambda_max`` span the null space;
    ``residual_slack``: relative residual allowance of the relaxed problem; ``tol``: Clarabel's
    tolerances. ``initvals`` is validated but unused (Clarabel has no warm start).
    """
    import cvxpy as cp

    started = time.perf_counter()
    initial_x(problem, initvals)
    if problem.prior is None:
        raise ProblemError("cad_prior needs problem.prior (the CAD parameters)")
    p = problem.n_params
    weight = problem.weight_matrix if problem.has_prior_term else np.eye(p)
    root_w, _ = psd_sqrt_factor(weight, np.zeros(p), 0.0)
    eigvals, eigvecs = np.linalg.eigh(problem.gram)
    keep = eigvals > rcond * max(eigvals[-1], 0.0)
    x_ls = eigvecs[:, keep] @ ((eigvecs[:, keep].T @ problem.moment) / eigvals[keep])
    null_space = eigvecs[:, ~keep]
    options = {"tol_gap_abs": tol, "tol_gap_rel": tol, "tol_feas": tol}
    iterations = 0
    try:
        if null_space.shape[1]:
            z = cp.Variable(null_space.shape[1])
            model = cp.Problem(
                cp.Minimize(cp.sum_squares(root_w @ (x_ls + null_space @ z - problem.prior))),
                _constraints(problem, x_ls + null_space @ z))
            model.solve(solver="CLARABEL", **options)
            iterations += int(model.solver_stats.num_iters or 0)
            feasible = model.status in (cp.OPTIMAL, cp.OPTIMAL_INACCURATE) and z.value is not None
        else:  # the least-squares set is the point x_ls
            feasible = constraints_hold(problem, x_ls)
        if feasible:
            status = "solved" if not null_space.shape[1] or model.status == cp.OPTIMAL \
                else "solved_inaccurate"
            x_value = x_ls + null_space @ z.value if null_space.shape[1] else x_ls
        else:
            best = solve_lmi(problem.replace(prior=None, prior_weight=0.0), backend="fast")
            f_consistent = problem.squared_residual(best.x)
            root_g, target = psd_sqrt_factor(problem.gram, problem.moment, 0.0)
            offset = problem.yty - float(target @ target)
            bound = (1.0 + residual_slack) * f_consistent + 1e-9 * max(problem.yty, 1e-300)
            unit = 1.0 / np.sqrt(bound)  # the residual constraint normalised to "<= 1"
            xv = cp.Variable(p)
            model = cp.Problem(
                cp.Minimize(cp.sum_squares(root_w @ (xv - problem.prior))),
                [cp.sum_squares(unit * root_g @ xv - unit * target) <= 1.0 - offset / bound]
                + _constraints(problem, xv))
            model.solve(solver="CLARABEL", **options)
            iterations += int(model.solver_stats.num_iters or 0)
            if xv.value is None:
                raise SolverError(f"cad_prior: relaxed SDP returned no solution ({model.status})")
            status = "solved_relaxed" if model.status == cp.OPTIMAL else f"relaxed_{model.status}"
            x_value = xv.value
    except (cp.error.SolverError, ArithmeticError) as e:
        raise SolverError(f"cad_prior: Clarabel failed: {e}") from e
    x_value = np.array(x_value, dtype=float)
    if problem.nonnegative:
        x_value[list(problem.nonnegative)] = np.maximum(x_value[list(problem.nonnegative)], 0.0)
    x_value = lift_to_margin(x_value, problem, margin)
    return make_solution(problem, x_value, "cad_prior", found=status.startswith("solved"),
                         status=status, iterations=iterations, started=started,
                         finished=time.perf_counter(),
                         message=f"null space dimension {null_space.shape[1]}",
                         info={"null_space_dim": int(null_space.shape[1])})
