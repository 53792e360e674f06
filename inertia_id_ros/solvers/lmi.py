"""``lmi``: least squares subject to LMI physical consistency (Wensing, Kim, Slotine 2017).

    minimise ||Y x - y||^2 + (x - prior)^T W (x - prior)
    s.t.     J(theta_k) >= 0,  tr(J(theta_k) Q_k) >= 0 (bounding ellipsoids),
             x_i >= 0 (i in nonnegative)

Back ends (option ``backend``):

- ``"fast"`` (default): if the unconstrained minimiser is feasible it is the optimum and is
  returned at once; otherwise the unconstrained parameters are eliminated (Schur complement) and
  the small problem on the bodies (and constrained extras) is solved by (1) a semismooth Newton
  (primal-dual active-set) method on the KKT conditions (:mod:`._lmi_active_set`; accepted only
  with a KKT certificate; takes non-negative extras, not ellipsoid rows or non-negative body
  entries), else (2) a specialised primal-dual interior-point method (:mod:`._lmi_fast`). Both
  are warm-started from ``initvals``: the Newton method from its ``x`` (then, if that fails,
  from the unconstrained minimiser), the interior point from its ``x`` and duals
  (``info["duals"]``).
- ``"cvxpy"``: the reference. The problem is built once per structure
  (:meth:`Problem.structure_key`) with cvxpy Parameters (DPP) as
  ``sum_squares(R @ x - z)`` with ``R^T R = Y^T Y + W`` and ``R^T z = Y^T y + W prior``, cached,
  and solved with Clarabel.
- ``"cvxpy_per_solve"``: the same model built from scratch on every call (for benchmarks).

Every backend returns bodies with ``lambda_min(J) >= margin`` (the Newton method raises the
eigenvalues itself; a final lift, see :func:`.problem.lift_to_margin`, guards against round-off).
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections import OrderedDict
from dataclasses import dataclass
from typing import Any

import numpy as np

from inertia_id_ros.core.inertia import N_BODY_PARAMS, PSEUDO_INERTIA_BASIS
from inertia_id_ros.errors import ProblemError, SolverError
from inertia_id_ros.solvers._linalg import (
    DEFAULT_REGULARIZATION,
    cholesky,
    cholesky_solve,
    psd_solve,
    psd_sqrt_factor,
    regularize_null_space,
)
from inertia_id_ros.solvers._lmi_active_set import NewtonResult, solve_newton_kkt
from inertia_id_ros.solvers._lmi_fast import ConeProblem, IPResult, solve_cone_qp
from inertia_id_ros.solvers.ols import DEFAULT_RCOND
from inertia_id_ros.solvers.problem import (
    CONSISTENCY_MARGIN,
    Problem,
    Solution,
    lift_to_margin,
    make_solution,
    rounded_to_feasible,
)

BACKENDS = ("fast", "cvxpy", "cvxpy_per_solve")
_BASIS = PSEUDO_INERTIA_BASIS.reshape(10, 16)  # vec(J(theta)) = theta @ _BASIS
ACTIVE_SET_MAX_BODIES = 12
"""The semismooth Newton method is tried up to this many bodies; beyond, the interior point goes
first (whole-body problems: a dense nonsymmetric Newton system per step and more steps; on the
39-link iCub the interior point is about twice as fast, cold and warm)."""
FAST_TOL = 1e-10
CLARABEL_TOL = 1e-9
"""Default tolerances (Clarabel tends to report "inaccurate" below 1e-9 on these problems)."""


def solve_lmi(
    problem: Problem,
    initvals: Solution | np.ndarray | None = None,
    *,
    backend: str = "fast",
    tol: float | None = None,
    max_iterations: int = 60,
    regularization: float = DEFAULT_REGULARIZATION,
    margin: float = CONSISTENCY_MARGIN,
    use_active_set: bool = True,
    solver: str = "CLARABEL",
    solver_options: dict[str, Any] | None = None,
) -> Solution:
    """Solve the LMI-constrained problem.

    ``tol``: relative tolerance of the gap and residuals (the Newton method: of its natural
    residual; default :data:`FAST_TOL` for the fast backend, :data:`CLARABEL_TOL` for
    Clarabel's gap/feasibility tolerances);
    ``max_iterations``: interior-point iterations; ``regularization``: fast backend, see
    :data:`._linalg.DEFAULT_REGULARIZATION`; ``margin``: guaranteed lambda_min(J) (kg*m^2);
    ``use_active_set``: fast backend, try the semismooth Newton method of
    :mod:`._lmi_active_set` before the interior point (up to :data:`ACTIVE_SET_MAX_BODIES`);
    ``solver``/``solver_options``: cvxpy backends. ``initvals`` warm-starts the fast backend
    (Clarabel has no warm start: ignored by the cvxpy backends).
    """
    started = time.perf_counter()
    x0 = problem.warm_start(initvals)
    if backend == "fast":
        duals = initvals.info.get("duals") if isinstance(initvals, Solution) else None
        return _solve_fast(
            problem,
            x0,
            duals,
            started,
            tol=FAST_TOL if tol is None else tol,
            max_iterations=max_iterations,
            regularization=regularization,
            margin=margin,
            use_active_set=use_active_set,
        )
    if backend in ("cvxpy", "cvxpy_per_solve"):
        return _solve_cvxpy(
            problem,
            started,
            backend=backend,
            tol=CLARABEL_TOL if tol is None else tol,
            margin=margin,
            solver=solver,
            solver_options=solver_options or {},
            max_iterations=max_iterations,
        )
    raise ProblemError(f"lmi: unknown backend {backend!r}; available: {BACKENDS}")


# ---- fast ----------------------------------------------------------------------------------


def _min_eigs(x: np.ndarray, n_bodies: int) -> np.ndarray:
    """(n_bodies,) lambda_min of each body's pseudo-inertia (:func:`.problem.body_min_eigs`
    without its generality: this is on the fast path)."""
    thetas = x[: N_BODY_PARAMS * n_bodies].reshape(n_bodies, N_BODY_PARAMS)
    blocks = (thetas @ _BASIS).reshape(-1, 4, 4)
    return np.linalg.eigvalsh(blocks)[:, 0]


def constraints_hold(problem: Problem, x: np.ndarray) -> bool:
    """``J(theta_k) >= 0``, ellipsoid and non-negativity constraints hold at ``x`` (exactly)."""
    if problem.n_bodies and _min_eigs(x, problem.n_bodies).min() < 0.0:
        return False
    if problem.nonnegative and x[list(problem.nonnegative)].min() < 0.0:
        return False
    return all(a @ x[10 * k : 10 * k + 10] >= 0.0 for k, a in problem.ellipsoid_rows().items())


def _symmetric_inverse_apply(matrix: np.ndarray, rhs: np.ndarray) -> np.ndarray:
    """``matrix^+ rhs`` for symmetric PSD ``matrix``; Cholesky when possible."""
    factor = cholesky(matrix)
    if factor is not None:
        return cholesky_solve(factor, rhs)
    if rhs.ndim == 1:
        return psd_solve(matrix, rhs, DEFAULT_RCOND)[0]
    return np.column_stack([psd_solve(matrix, col, DEFAULT_RCOND)[0] for col in rhs.T])


@dataclass
class _Reduction:
    """Elimination of the unconstrained entries ``u`` of ``x``: ``x_u = base - gain @ x_c``."""

    constrained: np.ndarray
    free: np.ndarray
    base: np.ndarray
    gain: np.ndarray

    def expand(self, z: np.ndarray, n_params: int) -> np.ndarray:
        x = np.empty(n_params)
        x[self.constrained] = z
        x[self.free] = self.base - self.gain @ z
        return x


def _reduce(
    problem: Problem, hessian: np.ndarray, rhs: np.ndarray
) -> tuple[ConeProblem, _Reduction]:
    """Schur complement on the constrained entries (bodies, non-negative extras):
    ``P = H_cc - H_cu H_uu^-1 H_uc``, ``q = b_c - H_cu H_uu^-1 b_u`` (objective halved)."""
    p, nb = problem.n_params, problem.n_body_params
    is_constrained = np.zeros(p, dtype=bool)
    is_constrained[:nb] = True
    is_constrained[list(problem.nonnegative)] = True
    constrained, free = np.flatnonzero(is_constrained), np.flatnonzero(~is_constrained)
    c = constrained.size
    if free.size:
        order = np.concatenate([constrained, free])
        H, b = hessian[order][:, order], rhs[order]
        gain = _symmetric_inverse_apply(H[c:, c:], H[c:, :c])
        base = _symmetric_inverse_apply(H[c:, c:], b[c:])
        P = H[:c, :c] - H[:c, c:] @ gain
        P = 0.5 * (P + P.T)
        q = b[:c] - H[:c, c:] @ base
    else:
        P, q, gain, base = hessian, rhs, np.zeros((0, c)), np.zeros(0)
    ellipsoids = problem.ellipsoid_rows()
    rows = np.zeros((len(ellipsoids) + len(problem.nonnegative), c))
    for row, (k, a) in zip(rows, ellipsoids.items()):
        row[10 * k : 10 * k + 10] = a
    if problem.nonnegative:
        rows[
            np.arange(len(ellipsoids), rows.shape[0]),
            np.searchsorted(constrained, problem.nonnegative),
        ] = 1.0
    return (
        ConeProblem(P=P, q=q, n_blocks=problem.n_bodies, rows=rows),
        _Reduction(constrained=constrained, free=free, base=base, gain=gain),
    )


def _solve_fast(
    problem: Problem,
    x0: np.ndarray | None,
    duals: tuple | None,
    started: float,
    *,
    tol: float,
    max_iterations: int,
    regularization: float,
    margin: float,
    use_active_set: bool,
) -> Solution:
    hessian, rhs, _ = problem.quadratic()
    reference = problem.prior if problem.prior is not None else np.zeros(problem.n_params)
    regularized = regularize_null_space(hessian, rhs, reference, regularization)
    hessian, rhs = regularized.hessian, regularized.rhs
    x_unconstrained = regularized.x_unconstrained
    null_dim = regularized.null_space_dim
    if constraints_hold(problem, x_unconstrained):
        x = lift_to_margin(x_unconstrained, problem, margin)
        return make_solution(
            problem,
            x,
            "lmi",
            found=True,
            status="solved",
            iterations=0,
            started=started,
            finished=time.perf_counter(),
            message="unconstrained optimum is feasible",
            info={"backend": "fast", "active": False, "null_space_dim": null_dim},
        )
    cone, reduction = _reduce(problem, hessian, rhs)
    z_unconstrained = x_unconstrained[reduction.constrained]
    z_start = x0[reduction.constrained] if x0 is not None else z_unconstrained
    block_duals, row_duals = duals if duals is not None else (None, None)
    newton = None
    if use_active_set and _newton_applies(problem, cone):
        # from the warm start, then (a poor warm start) from the unconstrained minimiser
        starts = (z_start, z_unconstrained) if x0 is not None else (z_unconstrained,)
        newton = _newton(cone, problem.n_bodies, starts, tol, margin)
    if newton is not None:
        z, block_duals, row_duals, iterations = newton
        algorithm, status, found, gap = "active_set", "solved", True, 0.0
    else:
        result = _interior_point(
            cone, z_start, block_duals, row_duals, z_unconstrained, tol, max_iterations, x0
        )
        z, block_duals, row_duals = result.z.copy(), result.block_duals, result.row_duals
        algorithm, status, found, gap = (
            "interior_point",
            result.status,
            result.converged,
            result.gap,
        )
        iterations = result.iterations
    x = reduction.expand(_made_feasible(z, problem, reduction, margin), problem.n_params)
    return make_solution(
        problem,
        x,
        "lmi",
        found=found,
        status=status,
        iterations=iterations,
        started=started,
        finished=time.perf_counter(),
        message=f"{algorithm}: {status}, gap {gap:.3g}",
        info={
            "backend": "fast",
            "active": True,
            "algorithm": algorithm,
            "gap": gap,
            "null_space_dim": null_dim,
            "duals": (block_duals, row_duals),
        },
    )


def _newton_applies(problem: Problem, cone: ConeProblem) -> bool:
    """The semismooth Newton method takes the reduced problem: bounds on extras only
    (``z[10n:] >= 0``), no ellipsoid rows or bounded body entries, at most
    :data:`ACTIVE_SET_MAX_BODIES` bodies."""
    n_body = problem.n_body_params
    bounds_on_extras_only = (
        cone.rows.shape[0] == len(problem.nonnegative)
        and min(problem.nonnegative, default=n_body) >= n_body
    )
    return bounds_on_extras_only and problem.n_bodies <= ACTIVE_SET_MAX_BODIES


def _newton(
    cone: ConeProblem,
    n_bodies: int,
    starts: tuple[np.ndarray, ...],
    tol: float,
    margin: float,
) -> NewtonResult | None:
    """The first certified semismooth Newton result from ``starts`` in turn (``None``: none)."""
    for z0 in starts:
        try:
            newton = solve_newton_kkt(cone.P, cone.q, z0, n_bodies, tol=tol, floor=margin)
        except (np.linalg.LinAlgError, FloatingPointError, ValueError):
            newton = None
        if newton is not None:
            return newton
    return None


def _interior_point(
    cone: ConeProblem,
    z_start: np.ndarray,
    block_duals: np.ndarray | None,
    row_duals: np.ndarray | None,
    z_unconstrained: np.ndarray,
    tol: float,
    max_iterations: int,
    x0: np.ndarray | None,
) -> IPResult:
    """:func:`._lmi_fast.solve_cone_qp` from ``z_start`` and the duals (warm when there is a warm
    start ``x0``); raises :class:`SolverError` when it fails."""
    try:
        return solve_cone_qp(
            cone,
            z_start,
            block_duals,
            row_duals,
            z_unconstrained=z_unconstrained,
            tol=tol,
            max_iterations=max_iterations,
            warm=x0 is not None,
        )
    except (np.linalg.LinAlgError, FloatingPointError, ValueError) as e:
        raise SolverError(f"lmi fast interior point failed: {e}") from e


def _made_feasible(
    z: np.ndarray, problem: Problem, reduction: _Reduction, margin: float
) -> np.ndarray:
    """``z`` (the reduced solution, modified) with every body's ``lambda_min(J) >= margin`` and
    the non-negative entries clipped at zero."""
    n_body = problem.n_body_params
    if _min_eigs(z, problem.n_bodies).min(initial=np.inf) < margin:
        z[:n_body] = lift_to_margin(z[:n_body], problem, margin)
    if problem.nonnegative:
        nonnegative_positions = np.searchsorted(reduction.constrained, problem.nonnegative)
        z[nonnegative_positions] = np.maximum(z[nonnegative_positions], 0.0)
    return z


# ---- cvxpy ---------------------------------------------------------------------------------


@dataclass
class _CvxpyModel:
    """A compiled DPP model: ``problem`` with Parameters ``R`` (p, p), ``z`` (p,) and one
    ``a_k`` (10,) per bounding ellipsoid (``a_k . theta_k = tr(J_k Q_k)``)."""

    problem: Any
    x: Any
    R: Any
    z: Any
    ellipsoid_rows: dict[int, Any]


_MODEL_CACHE: OrderedDict[tuple, _CvxpyModel] = OrderedDict()
_MODEL_CACHE_SIZE = 16
_MODEL_LOCK = threading.Lock()


def consistency_constraints(
    x: Any, n_bodies: int, ellipsoid_rows: dict[int, Any], nonnegative: tuple[int, ...]
) -> list:
    """cvxpy constraints on the expression ``x`` (p,): ``J(theta_k) >> 0`` per body,
    ``a_k . theta_k >= 0`` (``ellipsoid_rows``: arrays or Parameters) and ``x_i >= 0``."""
    import cvxpy as cp

    basis = PSEUDO_INERTIA_BASIS.reshape(10, 16).T
    constraints = []
    for k in range(n_bodies):
        theta = x[N_BODY_PARAMS * k : N_BODY_PARAMS * (k + 1)]
        constraints.append(cp.reshape(basis @ theta, (4, 4), order="C") >> 0)
    for k, a in ellipsoid_rows.items():
        constraints.append(a @ x[N_BODY_PARAMS * k : N_BODY_PARAMS * (k + 1)] >= 0)
    if nonnegative:
        constraints.append(x[list(nonnegative)] >= 0)
    return constraints


def build_cvxpy_model(structure: Problem) -> _CvxpyModel:
    """DPP model of ``structure``'s problem class (its numbers are set per solve)."""
    import cvxpy as cp

    p = structure.n_params
    x = cp.Variable(p, name="x")
    R = cp.Parameter((p, p), name="R")
    z = cp.Parameter(p, name="z")
    ellipsoid_rows = {k: cp.Parameter(10, name=f"a_{k}") for k in structure.ellipsoid_rows()}
    constraints = consistency_constraints(
        x, structure.n_bodies, ellipsoid_rows, structure.nonnegative
    )
    model = cp.Problem(cp.Minimize(cp.sum_squares(R @ x - z)), constraints)
    return _CvxpyModel(problem=model, x=x, R=R, z=z, ellipsoid_rows=ellipsoid_rows)


def cached_cvxpy_model(problem: Problem) -> _CvxpyModel:
    """The cached DPP model for ``problem.structure_key()`` (built on first use)."""
    key = problem.structure_key()
    with _MODEL_LOCK:
        model = _MODEL_CACHE.get(key)
        if model is None:
            model = build_cvxpy_model(problem)
            _MODEL_CACHE[key] = model
            while len(_MODEL_CACHE) > _MODEL_CACHE_SIZE:
                _MODEL_CACHE.popitem(last=False)
        else:
            _MODEL_CACHE.move_to_end(key)
        return model


def _solve_cvxpy(
    problem: Problem,
    started: float,
    *,
    backend: str,
    tol: float,
    margin: float,
    solver: str,
    solver_options: dict[str, Any],
    max_iterations: int,
) -> Solution:
    import cvxpy as cp

    model = cached_cvxpy_model(problem) if backend == "cvxpy" else build_cvxpy_model(problem)
    hessian, rhs, _ = problem.quadratic()
    R, z = psd_sqrt_factor(hessian, rhs, DEFAULT_RCOND)
    options = dict(solver_options)
    if solver == "CLARABEL":
        options = {
            "tol_gap_abs": tol,
            "tol_gap_rel": tol,
            "tol_feas": tol,
            "max_iter": max_iterations,
            **options,
        }
    with _MODEL_LOCK if backend == "cvxpy" else contextlib.nullcontext():
        model.R.value = R
        model.z.value = z
        for k, a in problem.ellipsoid_rows().items():
            model.ellipsoid_rows[k].value = a
        try:
            model.problem.solve(solver=solver, **options)
        except (cp.error.SolverError, ValueError, ArithmeticError) as e:
            raise SolverError(f"lmi {backend}: {solver} failed: {e}") from e
        status = str(model.problem.status)
        value = model.x.value
        stats = model.problem.solver_stats
        iterations = int(stats.num_iters or 0) if stats is not None else 0
        is_dpp = model.problem.is_dpp()
    if value is None:
        raise SolverError(f"lmi {backend}: {solver} returned no solution (status {status})")
    x = rounded_to_feasible(value, problem, margin)
    return make_solution(
        problem,
        x,
        "lmi",
        found=status == cp.OPTIMAL,
        status=status,
        iterations=iterations,
        started=started,
        finished=time.perf_counter(),
        message=f"{solver} via cvxpy ({backend})",
        info={"backend": backend, "is_dpp": is_dpp},
    )
