"""``pointmass``: each body as non-negative point masses on a grid (Ayusawa & Nakamura).

Body ``k`` is ``theta_k = Phi_k w_k`` with ``w_k >= 0`` (kg) the masses at grid points ``p_j`` of
an axis-aligned box (body frame, m); column ``j`` of ``Phi_k`` is the ``theta`` of a unit point
mass at ``p_j``: ``[1, p, |p|^2 - px^2, -px py, |p|^2 - py^2, -px pz, -py pz, |p|^2 - pz^2]``.
``x = M v`` with ``v = [w_1 .. w_n, extras]`` is linear, so the problem is the QP::

    minimise 1/2 v^T (M^T H M + eps 1_w) v - (M^T b)^T v   s.t.  w >= 0, constraints on x

solved by OSQP (``formulation="dense"``). With many bodies ``M^T H M`` is a dense matrix of
(bodies x points)^2 entries; the ``"lifted"`` formulation keeps ``x`` as a variable instead::

    minimise 1/2 [x; w]^T diag(H, eps 1) [x; w] - b^T x   s.t.  x_bodies = Phi w, w >= 0, ...

whose matrices grow with p^2 + 10 (bodies x points) only (``"auto"``: lifted from
:data:`LIFTED_FROM_WEIGHTS` weights). Warm start: a previous ``pointmass`` solution of a problem with the same
structure and grid carries its OSQP solver (``info["osqp"]``), which is updated with the new
matrices and resumes from its last iterate, duals and step size. A sum
of point masses is a physical body: consistent by construction (a body whose weights are all zero
is lifted to the margin). The grid restricts the representable inertias to mass inside the box.
"""

from __future__ import annotations

import time
from typing import Sequence

import numpy as np
import scipy.sparse

from inertia_id_ros.core.inertia import inertia_from_theta
from inertia_id_ros.solvers.problem import (
    CONSISTENCY_MARGIN,
    Problem,
    Solution,
    initial_x,
    lift_to_margin,
    make_solution,
)
from inertia_id_ros.errors import ProblemError, SolverError

Box = tuple[np.ndarray, np.ndarray]
DEFAULT_HALF_EXTENT = 0.25
"""Half side (m) of the default box centred at the body frame's origin (no prior, no ``boxes``)."""
LIFTED_FROM_WEIGHTS = 400
"""``formulation="auto"`` lifts from this many point-mass weights (about 6 bodies at 4^3 points)."""
FORMULATIONS = ("auto", "dense", "lifted")
PRIOR_BOX_SIGMAS = 3.0
"""A box from the prior spans this many standard deviations of its mass distribution per axis."""


def point_mass_thetas(points: np.ndarray) -> np.ndarray:
    """(10, K) ``theta`` of unit point masses at ``points`` (K, 3) (body frame, m)."""
    px, py, pz = points.T
    sq = px ** 2 + py ** 2 + pz ** 2
    return np.array([np.ones_like(px), px, py, pz, sq - px ** 2, -px * py, sq - py ** 2,
                     -px * pz, -py * pz, sq - pz ** 2])


def grid_points(box: Box, per_axis: int) -> np.ndarray:
    """(per_axis^3, 3) points of a regular grid spanning ``box = (min (3,), max (3,))``, corners
    included."""
    low, high = (np.asarray(b, dtype=float).reshape(3) for b in box)
    axes = [np.linspace(lo, hi, per_axis) for lo, hi in zip(low, high)]
    return np.stack(np.meshgrid(*axes, indexing="ij"), axis=-1).reshape(-1, 3)


def box_from_theta(theta: np.ndarray, min_half_extent: float) -> Box | None:
    """Box ``c +/- max(PRIOR_BOX_SIGMAS * sqrt(Sigma_com_ii / m), min_half_extent)`` around the COM
    ``c`` of a consistent ``theta`` (``Sigma_com = tr(I_com)/2 1 - I_com``); ``None`` if
    ``m <= 0``."""
    if not theta[0] > 0:
        return None
    mass, com, i_com = inertia_from_theta(theta)
    sigma_com = 0.5 * np.trace(i_com) * np.eye(3) - i_com
    half = np.maximum(PRIOR_BOX_SIGMAS * np.sqrt(np.maximum(np.diag(sigma_com), 0.0) / mass),
                      min_half_extent)
    return com - half, com + half


def _dense_upper_csc(matrix: np.ndarray) -> scipy.sparse.csc_matrix:
    """Upper triangle of a dense (n, n) matrix as CSC with every entry stored (explicit zeros
    too), so that a later ``OSQP.update(Px=...)`` keeps the sparsity pattern."""
    n = matrix.shape[0]
    rows = np.concatenate([np.arange(j + 1) for j in range(n)])
    cols = np.repeat(np.arange(n), np.arange(1, n + 1))
    indptr = np.concatenate([[0], np.cumsum(np.arange(1, n + 1))])
    return scipy.sparse.csc_matrix((matrix[rows, cols], rows, indptr), shape=(n, n))


QP = tuple[scipy.sparse.csc_matrix, np.ndarray, scipy.sparse.csc_matrix, np.ndarray, np.ndarray]


def _ridge(diagonal: np.ndarray, ridge: float) -> float:
    """``eps_w = ridge * max(diag(M^T H M)[weights])`` (floored above 0)."""
    return ridge * max(float(np.max(diagonal, initial=0.0)), 1e-300)


def _dense_qp(problem: Problem, M: np.ndarray, hessian: np.ndarray, rhs: np.ndarray,
              n_weights: int, ridge: float) -> QP:
    """OSQP data ``(P upper, q, A, l, u)`` in ``v = [w, extras]``."""
    P = M.T @ hessian @ M
    P[np.diag_indices(n_weights)] += _ridge(np.diag(P)[:n_weights], ridge)
    q = -(M.T @ rhs)
    rows = [np.eye(P.shape[0])[:n_weights]]
    rows += [M[i] for i in problem.nonnegative]  # entries of x: extras or body entries
    rows += [a @ M[10 * k:10 * k + 10] for k, a in problem.ellipsoid_rows().items()]
    A = np.vstack(rows)
    return (_dense_upper_csc(P), q, scipy.sparse.csc_matrix(A), np.zeros(A.shape[0]),
            np.full(A.shape[0], np.inf))


def _lifted_qp(problem: Problem, M: np.ndarray, hessian: np.ndarray, rhs: np.ndarray,
               n_weights: int, ridge: float) -> QP:
    """OSQP data ``(P upper, q, A, l, u)`` in ``[x, w]``: ``x_bodies - Phi w = 0``, ``w >= 0``."""
    p, nb = problem.n_params, problem.n_body_params
    phi = M[:nb, :n_weights]
    diagonal = np.einsum("ik,ij,jk->k", phi, hessian[:nb, :nb], phi)
    upper = _dense_upper_csc(hessian)
    P = scipy.sparse.csc_matrix(
        (np.concatenate([upper.data, np.full(n_weights, _ridge(diagonal, ridge))]),
         np.concatenate([upper.indices, p + np.arange(n_weights)]),
         np.concatenate([upper.indptr, upper.indptr[-1] + 1 + np.arange(n_weights)])),
        shape=(p + n_weights, p + n_weights))
    q = np.concatenate([-rhs, np.zeros(n_weights)])
    identity = scipy.sparse.identity(p + n_weights, format="csr")
    blocks = [scipy.sparse.hstack([identity[:nb, :p], -scipy.sparse.csr_matrix(phi)]),
              identity[p:]]
    blocks += [identity[[i]] for i in problem.nonnegative]
    for k, a in problem.ellipsoid_rows().items():
        row = np.zeros((1, p + n_weights))
        row[0, 10 * k:10 * k + 10] = a
        blocks.append(scipy.sparse.csr_matrix(row))
    A = scipy.sparse.vstack(blocks, format="csc")
    lower = np.zeros(A.shape[0])
    upper_bounds = np.full(A.shape[0], np.inf)
    upper_bounds[:nb] = 0.0
    return P, q, A, lower, upper_bounds


def _boxes(problem: Problem, boxes: Sequence[Box] | None, min_half_extent: float,
           default_half_extent: float) -> list[Box]:
    if boxes is not None:
        if len(boxes) != problem.n_bodies:
            raise ProblemError(f"pointmass: boxes has {len(boxes)} entries for "
                               f"{problem.n_bodies} bodies")
        checked = []
        for k, (low, high) in enumerate(boxes):
            low = np.asarray(low, dtype=float).reshape(3)
            high = np.asarray(high, dtype=float).reshape(3)
            if np.any(high < low):
                raise ProblemError(f"pointmass: boxes[{k}] has max < min ({low}, {high})")
            checked.append((low, high))
        return checked
    default = (-default_half_extent * np.ones(3), default_half_extent * np.ones(3))
    result = []
    for k in range(problem.n_bodies):
        box = None
        if problem.prior is not None:
            box = box_from_theta(problem.prior[10 * k:10 * k + 10], min_half_extent)
        result.append(default if box is None else box)
    return result


def solve_pointmass(problem: Problem, initvals: Solution | np.ndarray | None = None, *,
                    boxes: Sequence[Box] | None = None, points_per_axis: int = 4,
                    min_half_extent: float = 0.02,
                    default_half_extent: float = DEFAULT_HALF_EXTENT, ridge: float = 1e-6,
                    eps: float = 1e-7, max_iterations: int = 20000,
                    margin: float = CONSISTENCY_MARGIN, formulation: str = "auto") -> Solution:
    """Point-mass QP with OSQP.

    ``boxes``: per body ``(min (3,), max (3,))`` in the body frame (m); default from the prior
    (see :func:`box_from_theta`, at least ``min_half_extent``) or a cube of half side
    ``default_half_extent`` at the origin. ``points_per_axis``: grid resolution (``^3`` points per
    body). ``ridge``: ``eps_w = ridge * max(diag(M^T H M))`` makes the weights unique.
    ``eps``/``max_iterations``: OSQP's absolute/relative tolerance and iteration limit.
    ``formulation``: one of :data:`FORMULATIONS` (see the module docstring).
    """
    import osqp

    started = time.perf_counter()
    x0 = initial_x(problem, initvals)
    n, nb, p = problem.n_bodies, problem.n_body_params, problem.n_params
    if points_per_axis < 2:
        raise ProblemError(f"pointmass: points_per_axis must be >= 2, got {points_per_axis}")
    box_list = _boxes(problem, boxes, min_half_extent, default_half_extent)
    K = points_per_axis ** 3
    n_weights, n_extras = n * K, p - nb
    M = np.zeros((p, n_weights + n_extras))
    for k, box in enumerate(box_list):
        points = grid_points(box, points_per_axis)
        M[10 * k:10 * k + 10, K * k:K * (k + 1)] = point_mass_thetas(points)
    M[nb:, n_weights:] = np.eye(n_extras)
    if formulation not in FORMULATIONS:
        raise ProblemError(f"pointmass: formulation must be one of {FORMULATIONS}, "
                           f"got {formulation!r}")
    lifted = formulation == "lifted" or (formulation == "auto" and n_weights >= LIFTED_FROM_WEIGHTS)
    hessian, rhs, _ = problem.quadratic()
    if lifted:
        P_upper, q, A, lower, upper = _lifted_qp(problem, M, hessian, rhs, n_weights, ridge)
    else:
        P_upper, q, A, lower, upper = _dense_qp(problem, M, hessian, rhs, n_weights, ridge)
    signature = (problem.structure_key(), points_per_axis, lifted,
                 tuple(tuple(np.concatenate(box)) for box in box_list))
    previous = initvals.info.get("osqp") if isinstance(initvals, Solution) else None
    try:
        if previous is not None and previous[0] == signature:
            solver = previous[1]  # keeps its last iterate, duals and step size: a warm start
            solver.update(Px=P_upper.data, q=q)
        else:
            solver = osqp.OSQP()
            solver.setup(P_upper, q, A, lower, upper, eps_abs=eps, eps_rel=eps,
                         max_iter=max_iterations, polishing=True, verbose=False)
            if x0 is not None:
                guess = np.zeros(P_upper.shape[0])
                if lifted:
                    guess[:p] = x0
                else:
                    guess[n_weights:] = x0[nb:]
                solver.warm_start(x=guess)
        result = solver.solve(raise_error=False)
    except (ValueError, RuntimeError) as e:
        raise SolverError(f"pointmass: OSQP failed: {e}") from e
    status = str(result.info.status)
    if result.x is None or not np.all(np.isfinite(result.x)):
        raise SolverError(f"pointmass: OSQP returned no solution (status {status!r})")
    if lifted:  # [x, w] -> v = [w, extras]
        v = np.concatenate([result.x[p:], result.x[nb:p]])
    else:
        v = result.x.copy()
    v[:n_weights] = np.maximum(v[:n_weights], 0.0)
    x = M @ v
    if problem.nonnegative:
        x[list(problem.nonnegative)] = np.maximum(x[list(problem.nonnegative)], 0.0)
    x = lift_to_margin(x, problem, margin)
    found = status in ("solved", "solved inaccurate")
    return make_solution(problem, x, "pointmass", found=found, status=status,
                         iterations=int(result.info.iter), started=started,
                         finished=time.perf_counter(), message=f"OSQP: {status}",
                         info={"weights": v[:n_weights].reshape(n, K), "boxes": box_list,
                               "osqp": (signature, solver)})
