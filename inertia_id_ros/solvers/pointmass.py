"""``pointmass``: each body as non-negative point masses placed where its mass is (Ayusawa &
Nakamura).

Body ``k`` is ``theta_k = Phi_k w_k`` with ``w_k >= 0`` (kg) the masses at points ``p_j`` (body
frame, m); column ``j`` of ``Phi_k`` is the ``theta`` of a unit point mass at ``p_j``:
``[1, p, |p|^2 - px^2, -px py, |p|^2 - py^2, -px pz, -py pz, |p|^2 - pz^2]``. A sum of point
masses is a physical body: consistent by construction. The QP, in the variables ``(w, x)``::

    minimise 1/2 x^T H x - b^T x + 1/2 r |w|^2   s.t.  x_body_k = Phi_k w_k,  w >= 0,
                                                       constraints on x

(``H``, ``b`` of :meth:`~inertia_id_ros.solvers.problem.Problem.quadratic`; ``r`` a tiny ridge
making the weights unique) is solved by OSQP in whitened coordinates (see :class:`_PointQP`).

Placement (the approximation improves as the points surround the mass): a lattice of
``points_per_axis^3`` points fills the box ``c +/- a_i v_i`` along the principal axes ``v_i`` of
a reference body's mass distribution (COM ``c``, second moments ``lambda_i`` per kg), with
``a_i = spread sqrt(5 lambda_i)`` (``sqrt(5 lambda)`` is the semi-axis of the uniform solid
ellipsoid with those moments). The reference is the warm start's body, else the unconstrained
(least-squares) estimate when the data determine the body, else the prior's body, else a cube at
the origin. Each refinement places the lattice around the previous solution, which is then
representable (odd ``points_per_axis``: its axis points and centre carry it), so the objective
never increases; refinements stop when it improves by less than ``refine_tol``.

Diagnostic: ``info["approximation_gap"]``, the excess of the squared residual over the best
consistent fit's in residual variances (``sigma^2`` of the unconstrained fit per row; compared
with the unconstrained fit first, with ``lmi`` only when that exceeds ``limit_threshold``), and
``info["approximation_limited"]`` when it exceeds ``limit_threshold``: the points, not the data,
limit the fit (add points, widen ``spread``, or use ``lmi``).

Warm start: a previous ``pointmass`` solution of a problem with the same structure carries its
OSQP solver (``info["osqp"]``), which is updated with the new matrices and point positions and
resumes from its last iterate, duals and step size; its bodies are the reference.
``boxes`` replaces the placement by a regular grid in fixed boxes (no refinement).
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import scipy.sparse

from inertia_id_ros.core.inertia import N_BODY_PARAMS, pseudo_inertia
from inertia_id_ros.errors import ProblemError, SolverError
from inertia_id_ros.solvers.lmi import solve_lmi
from inertia_id_ros.solvers.problem import (
    CONSISTENCY_MARGIN,
    Problem,
    Solution,
    make_solution,
    rounded_to_feasible,
)

Box = tuple[np.ndarray, np.ndarray]
DEFAULT_HALF_EXTENT = 0.25
"""Half side (m) of the cube at the body frame's origin placing the points of a body that has no
reference (no warm start, not determined by the data, no prior)."""
MAX_HALF_EXTENT = 2.0
"""A reference body whose COM is farther (m) from the origin is not used for placement."""


def point_mass_thetas(points: np.ndarray) -> np.ndarray:
    """(10, K) ``theta`` of unit point masses at ``points`` (K, 3) (body frame, m)."""
    px, py, pz = points.T
    sq = px**2 + py**2 + pz**2
    return np.array(
        [
            np.ones_like(px),
            px,
            py,
            pz,
            sq - px**2,
            -px * py,
            sq - py**2,
            -px * pz,
            -py * pz,
            sq - pz**2,
        ]
    )


def grid_points(box: Box, per_axis: int) -> np.ndarray:
    """(per_axis^3, 3) points of a regular grid spanning ``box = (min (3,), max (3,))``, corners
    included."""
    low, high = (np.asarray(b, dtype=float).reshape(3) for b in box)
    axes = [np.linspace(lo, hi, per_axis) for lo, hi in zip(low, high)]
    return np.stack(np.meshgrid(*axes, indexing="ij"), axis=-1).reshape(-1, 3)


def mass_ellipsoid(theta: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
    """``(c (3,), lambda (3,), V (3, 3))`` of a body with ``m > 0``: COM (m) and the eigenvalues
    (m^2, clipped at 0) and eigenvectors (columns) of its second moments about the COM per kg,
    ``J[:3, :3] / m - c c^T``; ``None`` if ``m <= 0`` or the COM is not finite."""
    if not theta[0] > 0:
        return None
    J = pseudo_inertia(theta)
    com = J[:3, 3] / theta[0]
    if not np.all(np.isfinite(com)):
        return None
    moments, axes = np.linalg.eigh(J[:3, :3] / theta[0] - np.outer(com, com))
    return com, np.maximum(moments, 0.0), axes


def lattice_points(
    theta: np.ndarray,
    per_axis: int,
    spread: float,
    min_half_extent: float,
    max_half_extent: float = MAX_HALF_EXTENT,
) -> np.ndarray | None:
    """(per_axis^3, 3) lattice around the mass of ``theta`` (see the module docstring): half
    extents ``clip(spread sqrt(5 lambda_i), min_half_extent, max_half_extent)`` (m) along the
    principal axes; ``None`` if ``theta`` has no usable mass distribution (``m <= 0`` or the COM
    farther than ``max_half_extent`` from the origin)."""
    ellipsoid = mass_ellipsoid(theta)
    if ellipsoid is None or np.linalg.norm(ellipsoid[0]) > max_half_extent:
        return None
    com, moments, axes = ellipsoid
    half = np.clip(spread * np.sqrt(5.0 * moments), min_half_extent, max_half_extent)
    unit = grid_points((-np.ones(3), np.ones(3)), per_axis)
    return com + (unit * half) @ axes.T


def _checked_boxes(problem: Problem, boxes: Sequence[Box]) -> list[Box]:
    if len(boxes) != problem.n_bodies:
        raise ProblemError(
            f"pointmass: boxes has {len(boxes)} entries for {problem.n_bodies} bodies"
        )
    checked = []
    for k, (low, high) in enumerate(boxes):
        low = np.asarray(low, dtype=float).reshape(3)
        high = np.asarray(high, dtype=float).reshape(3)
        if np.any(high < low):
            raise ProblemError(f"pointmass: boxes[{k}] has max < min ({low}, {high})")
        checked.append((low, high))
    return checked


def _unconstrained(problem: Problem, rcond: float) -> tuple[np.ndarray, np.ndarray, int]:
    """The minimum-norm minimiser ``x`` (p,) of the objective without constraints, per body
    whether the data (and prior) determine it (no null-space direction touches it), and the
    rank of the objective's Hessian."""
    hessian, rhs, _ = problem.quadratic()
    eigvals, eigvecs = np.linalg.eigh(hessian)
    keep = eigvals > rcond * max(eigvals[-1], 0.0)
    x = eigvecs[:, keep] @ ((eigvecs[:, keep].T @ rhs) / eigvals[keep])
    null = eigvecs[:, ~keep]
    determined = np.array(
        [
            np.linalg.norm(null[N_BODY_PARAMS * k : N_BODY_PARAMS * (k + 1)]) < 1e-6
            for k in range(problem.n_bodies)
        ]
    )
    return x, determined, int(np.sum(keep))


@dataclass(frozen=True)
class _Lattice:
    """How :func:`solve_pointmass` places a body's points about its mass: ``per_axis`` points
    along each principal axis, ``spread`` and ``min_half_extent`` (m) of
    :func:`lattice_points`."""

    per_axis: int
    spread: float
    min_half_extent: float

    def about(self, theta: np.ndarray) -> np.ndarray | None:
        """:func:`lattice_points` of ``theta`` (10,)."""
        return lattice_points(theta, self.per_axis, self.spread, self.min_half_extent)


def _reference_points(
    problem: Problem,
    x0: np.ndarray | None,
    x_free: np.ndarray,
    determined: np.ndarray,
    lattice: _Lattice,
    default_half_extent: float,
) -> tuple[list[np.ndarray], list[str]]:
    """Per body the first placement and what it came from (``"warm_start"``,
    ``"unconstrained"``, ``"prior"``, ``"default"``)."""
    points, sources = [], []
    for k in range(problem.n_bodies):
        body = slice(N_BODY_PARAMS * k, N_BODY_PARAMS * (k + 1))
        candidates = [
            ("warm_start", None if x0 is None else x0[body]),
            ("unconstrained", x_free[body] if determined[k] else None),
            ("prior", None if problem.prior is None else problem.prior[body]),
        ]
        for source, theta in candidates:
            placed = None if theta is None else lattice.about(theta)
            if placed is not None:
                break
        else:
            source = "default"
            placed = grid_points(
                (-default_half_extent * np.ones(3), default_half_extent * np.ones(3)),
                lattice.per_axis,
            )
        points.append(placed)
        sources.append(source)
    return points, sources


class _PointQP:
    """The QP of one placement structure in whitened coordinates: ``x = x_c + S z`` with
    ``S = V diag(max(lambda, floor))^(-1/2)`` (``H = V diag(lambda) V^T``, ``floor = rcond
    lambda_max``), so that the objective is ``1/2 |z|^2`` up to a constant on the data's range
    (first-order methods converge in the flat directions of poorly exciting data too). OSQP is
    set up once, then updated with new point positions and data (every structural entry of ``P``
    and ``A`` is stored, zeros included, so updates keep the sparsity pattern)."""

    def __init__(self, problem: Problem, n_points: int, eps: float, max_iterations: int) -> None:
        import osqp

        n, p = problem.n_bodies, problem.n_params
        self.n_weights = n * n_points
        self.n_points = n_points
        nw = self.n_weights
        size = nw + p
        p_mask = np.zeros((size, size), dtype=bool)
        p_mask[np.diag_indices(nw)] = True
        p_mask[nw:, nw:] = np.triu(np.ones((p, p), dtype=bool))
        self._n_ellipsoids = len(problem.ellipsoid_rows())
        self.n_rows = N_BODY_PARAMS * n + nw + len(problem.nonnegative) + self._n_ellipsoids
        a_mask = np.zeros((self.n_rows, size), dtype=bool)
        for k in range(n):
            a_mask[
                N_BODY_PARAMS * k : N_BODY_PARAMS * (k + 1), n_points * k : n_points * (k + 1)
            ] = True  # Phi_k
        a_mask[: N_BODY_PARAMS * n, nw:] = True  # S_body z
        a_mask[N_BODY_PARAMS * n : N_BODY_PARAMS * n + nw, :nw] = np.eye(nw, dtype=bool)
        a_mask[N_BODY_PARAMS * n + nw :, nw:] = True  # nonnegative entries, ellipsoids
        self._p_pattern = _csc_pattern(p_mask)
        self._a_pattern = _csc_pattern(a_mask)
        self.solver = osqp.OSQP()
        self._eps, self._max_iterations = eps, max_iterations
        self._set_up = False

    @classmethod
    def reused(
        cls,
        initvals: Solution | np.ndarray | None,
        problem: Problem,
        per_axis: int,
        eps: float,
        max_iterations: int,
    ) -> tuple[tuple[object, int], _PointQP]:
        """``(signature, qp)``: the QP of a previous solution ``initvals`` (its
        ``info["osqp"]``) when it has ``problem``'s structure and ``per_axis``, else a new one."""
        signature = (problem.structure_key(), per_axis)
        previous = initvals.info.get("osqp") if isinstance(initvals, Solution) else None
        if previous is not None and previous[0] == signature:
            return signature, previous[1]
        return signature, cls(problem, per_axis**3, eps, max_iterations)

    def solve(
        self,
        problem: Problem,
        points: list[np.ndarray],
        x_center: np.ndarray,
        ridge: float,
        rcond: float,
    ) -> tuple[np.ndarray, np.ndarray, str, int]:
        """``(x (p,), w (n, K), status, iterations)`` for the points (n arrays (K, 3));
        ``x_center`` (p,) the origin of the whitened coordinates."""
        nw, K, nb = self.n_weights, self.n_points, problem.n_body_params
        hessian, rhs, _ = problem.quadratic()
        eigvals, eigvecs = np.linalg.eigh(hessian)
        scale = np.maximum(eigvals, max(rcond * eigvals[-1], 1e-300)) ** -0.5
        S = eigvecs * scale
        size = nw + problem.n_params
        P = np.zeros((size, size))
        P[nw:, nw:] = S.T @ hessian @ S
        P[np.diag_indices(nw)] = ridge
        q = np.concatenate([np.zeros(nw), S.T @ (hessian @ x_center - rhs)])
        A = np.zeros((self.n_rows, size))
        for k, placed in enumerate(points):
            A[N_BODY_PARAMS * k : N_BODY_PARAMS * (k + 1), K * k : K * (k + 1)] = point_mass_thetas(
                placed
            )
        A[:nb, nw:] = -S[:nb]  # Phi w - S_body z = x_center_body
        A[nb : nb + nw, :nw] = np.eye(nw)
        lower = np.concatenate([x_center[:nb], np.zeros(nw)])
        rows = [S[i] for i in problem.nonnegative]  # S_i z >= -x_center_i
        lower = np.concatenate([lower, [-x_center[i] for i in problem.nonnegative]])
        for k, a in problem.ellipsoid_rows().items():  # a S_body z >= -a x_center_body
            body = slice(N_BODY_PARAMS * k, N_BODY_PARAMS * (k + 1))
            rows.append(a @ S[body])
            lower = np.append(lower, -a @ x_center[body])
        if rows:
            A[nb + nw :, nw:] = np.array(rows)
        upper = np.concatenate([x_center[:nb], np.full(self.n_rows - nb, np.inf)])
        try:
            if self._set_up:
                self.solver.update(
                    Px=_csc_values(P, self._p_pattern),
                    q=q,
                    Ax=_csc_values(A, self._a_pattern),
                    l=lower,
                    u=upper,
                )
            else:
                self.solver.setup(
                    _csc(P, self._p_pattern),
                    q,
                    _csc(A, self._a_pattern),
                    lower,
                    upper,
                    eps_abs=self._eps,
                    eps_rel=self._eps,
                    max_iter=self._max_iterations,
                    polishing=True,
                    verbose=False,
                )
                self._set_up = True
            result = self.solver.solve(raise_error=False)
        except (ValueError, RuntimeError) as e:
            raise SolverError(f"pointmass: OSQP failed: {e}") from e
        status = str(result.info.status)
        if result.x is None or not np.all(np.isfinite(result.x)):
            raise SolverError(f"pointmass: OSQP returned no solution (status {status!r})")
        weights = np.maximum(result.x[:nw], 0.0).reshape(problem.n_bodies, K)
        x = x_center + S @ result.x[nw:]
        # the bodies exactly as their point masses (consistent by construction)
        x[:nb] = np.concatenate(
            [point_mass_thetas(placed) @ w for placed, w in zip(points, weights)]
        )
        return x, weights, status, int(result.info.iter)


def _csc_pattern(mask: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, tuple[int, int]]:
    """(rows, cols, indptr, shape) of the structural entries of ``mask`` in CSC order."""
    cols, rows = np.nonzero(mask.T)
    indptr = np.concatenate([[0], np.cumsum(np.bincount(cols, minlength=mask.shape[1]))])
    return rows, cols, indptr, mask.shape


def _csc_values(matrix: np.ndarray, pattern: tuple) -> np.ndarray:
    rows, cols, _, _ = pattern
    return matrix[rows, cols]


def _csc(matrix: np.ndarray, pattern: tuple) -> scipy.sparse.csc_matrix:
    rows, _, indptr, shape = pattern
    return scipy.sparse.csc_matrix((_csc_values(matrix, pattern), rows, indptr), shape=shape)


def solve_pointmass(
    problem: Problem,
    initvals: Solution | np.ndarray | None = None,
    *,
    boxes: Sequence[Box] | None = None,
    points_per_axis: int = 5,
    spread: float = 1.5,
    refinements: int = 4,
    refine_tol: float = 1e-6,
    min_half_extent: float = 0.005,
    default_half_extent: float = DEFAULT_HALF_EXTENT,
    rcond: float = 1e-10,
    ridge: float = 1e-8,
    eps: float = 1e-6,
    max_iterations: int = 20000,
    limit_threshold: float = 4.0,
    margin: float = CONSISTENCY_MARGIN,
) -> Solution:
    """Point-mass QP with OSQP, points placed adaptively (see the module docstring).

    ``points_per_axis``: lattice resolution (``^3`` points per body; odd keeps every placed
    reference representable). ``spread``: lattice half extent per ``sqrt(5 lambda)`` (> 0.78 for
    the same); ``min_half_extent`` (m) its smallest half extent. ``refinements``: re-placements
    at most; ``refine_tol``: relative objective decrease below which they stop.
    ``boxes``: per body ``(min (3,), max (3,))`` (body frame, m): a fixed regular grid instead.
    ``default_half_extent``: half side (m) of the cube of a body without reference.
    ``rcond``: relative eigenvalue below which the unconstrained fit has a null space.
    ``ridge``: ``r`` (the objective is about ``1/2 |z|^2``: units of the squared residual).
    ``eps``/``max_iterations``: OSQP's absolute and relative tolerance and iteration limit.
    ``limit_threshold``: approximation gap (in residual variances) above which
    ``info["approximation_limited"]`` is set.
    """
    started = time.perf_counter()
    x0 = problem.warm_start(initvals)
    _check_placement(points_per_axis, spread, refinements)
    x_free, determined, rank = _unconstrained(problem, rcond)
    lattice = _Lattice(points_per_axis, spread, min_half_extent)
    if boxes is not None:
        points = [grid_points(box, points_per_axis) for box in _checked_boxes(problem, boxes)]
        sources, refinements = ["boxes"] * problem.n_bodies, 0
    else:
        points, sources = _reference_points(
            problem, x0, x_free, determined, lattice, default_half_extent
        )
    signature, qp = _PointQP.reused(initvals, problem, points_per_axis, eps, max_iterations)
    best, iterations, placements = _placed_solve(
        qp, problem, points, x_free, ridge, rcond, refinements, refine_tol, lattice
    )
    value, x, weights, status, points = best
    x = rounded_to_feasible(x, problem, margin)
    gap, limited = _approximation_gap(problem, x, x_free, rank, limit_threshold)
    found = status in ("solved", "solved inaccurate")
    message = f"OSQP: {status}, {placements} placement(s)" + (
        f"; the point approximation limits the fit (gap {gap:.3g} residual variances)"
        if limited
        else ""
    )
    return make_solution(
        problem,
        x,
        "pointmass",
        found=found,
        status=status,
        iterations=iterations,
        started=started,
        finished=time.perf_counter(),
        message=message,
        info={
            "weights": weights,
            "points": points,
            "placement": sources,
            "placements": placements,
            "approximation_gap": gap,
            "approximation_limited": limited,
            "osqp": (signature, qp),
        },
    )


def _check_placement(points_per_axis: int, spread: float, refinements: int) -> None:
    """Raise :class:`ProblemError` unless ``points_per_axis >= 2``, ``spread > 0`` and
    ``refinements >= 0`` (:func:`solve_pointmass`)."""
    if points_per_axis < 2:
        raise ProblemError(f"pointmass: points_per_axis must be >= 2, got {points_per_axis}")
    if not spread > 0 or refinements < 0:
        raise ProblemError(
            f"pointmass: need spread > 0 and refinements >= 0, got {spread}, {refinements}"
        )


_Placed = tuple[float, np.ndarray, np.ndarray, str, list[np.ndarray]]
"""A placement's solve: ``(objective, x, weights, OSQP status, points)``."""


def _placed_solve(
    qp: _PointQP,
    problem: Problem,
    points: list[np.ndarray],
    x_free: np.ndarray,
    ridge: float,
    rcond: float,
    refinements: int,
    refine_tol: float,
    lattice: _Lattice,
) -> tuple[_Placed, int, int]:
    """The point QP solved on ``points``, then on points re-placed about each solution's bodies
    (``lattice.about(theta)``: a body's new points, ``None``: keep its old) while the objective
    falls by more than ``refine_tol`` (relative), at most ``refinements`` times: the best solve,
    the OSQP iterations and the placements."""
    iterations, placements = 0, 0
    best: _Placed | None = None
    while True:
        x, weights, status, used = qp.solve(problem, points, x_free, ridge, rcond)
        iterations, placements = iterations + used, placements + 1
        value = problem.objective(x)
        if best is not None and not value < best[0] * (1.0 - refine_tol):
            break
        best = (value, x, weights, status, points)
        if placements > refinements:
            break
        moved = [
            lattice.about(x[N_BODY_PARAMS * k : N_BODY_PARAMS * (k + 1)])
            for k in range(problem.n_bodies)
        ]
        points = [old if new is None else new for old, new in zip(points, moved)]
    return best, iterations, placements


def _approximation_gap(
    problem: Problem, x: np.ndarray, x_free: np.ndarray, rank: int, threshold: float
) -> tuple[float, bool]:
    """(gap, limited): ``(f(x) - f_best) / sigma^2`` with ``f`` the objective, ``f_best`` the
    unconstrained minimum or, when the gap to it exceeds ``threshold``, the ``lmi`` optimum;
    ``sigma^2`` the unconstrained fit's squared residual per degree of freedom (``nan`` without
    residual degrees of freedom)."""
    dof = problem.n_rows - rank
    if dof <= 0:
        return float("nan"), False
    sigma2 = max(
        problem.squared_residual(x_free) / dof, 1e-12 * problem.yty / problem.n_rows, 1e-300
    )
    gap = (problem.objective(x) - problem.objective(x_free)) / sigma2
    if gap > threshold:
        gap = (problem.objective(x) - solve_lmi(problem, backend="fast").objective) / sigma2
    return float(gap), bool(gap > threshold)
