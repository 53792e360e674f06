"""``ols``: (weighted, prior-regularised) least squares from the normal equations.

``x = x_0 + H^+ (b - H x_0)`` with ``H = Y^T Y + W``, ``b = Y^T y + W prior`` and ``x_0`` the
prior (or 0): the minimiser of the objective closest (Euclidean) to the prior when ``H`` is
rank-deficient. Unconstrained: the bodies may be physically inconsistent.
"""

from __future__ import annotations

import time

import numpy as np

from inertia_id_ros.solvers._linalg import cholesky, cholesky_solve, psd_solve
from inertia_id_ros.solvers.problem import Problem, Solution, make_solution

DEFAULT_RCOND = 1e-12
"""Eigenvalues of ``H`` below ``rcond * lambda_max`` are treated as zero (unidentifiable)."""


def unconstrained_minimizer(
    problem: Problem, rcond: float = DEFAULT_RCOND
) -> tuple[np.ndarray, int]:
    """``(x, numerical rank of H)``: the objective's minimiser closest to the prior (or to 0).

    A prior weight whose smallest entry exceeds ``rcond * trace(H)`` (an upper bound of
    ``rcond * lambda_max``) makes ``H`` of full numerical rank: then a Cholesky solve, which gives
    the eigendecomposition's answer at a fraction of its cost."""
    hessian, rhs, _ = problem.quadratic()
    reference = problem.prior if problem.prior is not None else np.zeros(problem.n_params)
    residual = rhs - hessian @ reference
    weight = np.asarray(problem.prior_weight, dtype=float)
    if (
        problem.has_prior_term
        and weight.ndim < 2
        and float(np.min(weight)) > rcond * float(np.trace(hessian))
    ):
        factor = cholesky(hessian)
        if factor is not None:
            return reference + cholesky_solve(factor, residual), problem.n_params
    step, rank = psd_solve(hessian, residual, rcond)
    return reference + step, rank


def solve_ols(
    problem: Problem, initvals: Solution | np.ndarray | None = None, *, rcond: float = DEFAULT_RCOND
) -> Solution:
    """Closed-form least squares; ``initvals`` is validated but unused (nothing to warm-start)."""
    started = time.perf_counter()
    problem.warm_start(initvals)
    x, rank = unconstrained_minimizer(problem, rcond)
    return make_solution(
        problem,
        x,
        "ols",
        found=True,
        status="solved",
        iterations=0,
        started=started,
        finished=time.perf_counter(),
        message=f"rank {rank} of {problem.n_params}",
        info={"rank": rank},
    )
