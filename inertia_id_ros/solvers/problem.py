"""Typed problem and solution of inertial-parameter identification (qpsolvers-style).

The problem, in the normal-equation form a sliding window keeps::

    minimise    ||Y x - y||^2 + (x - prior)^T W (x - prior)
    subject to  J(theta_k) >= 0                  for every body k    (all methods but ``ols``)
                tr(J(theta_k) Q_k) >= 0           for bodies with a bounding ellipsoid Q_k
                x_i >= 0                          for i in ``nonnegative``

with ``||Y x - y||^2 = x^T G x - 2 m^T x + y^T y`` (``G = Y^T Y``: ``gram``, ``m = Y^T y``:
``moment``). ``x[:10 * n_bodies]`` are the bodies' ``theta`` stacked (conventions of
:mod:`inertia_id_ros.core.inertia`); the remaining entries are "extras" (F/T offset, friction, ...).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from inertia_id_ros.core.inertia import (
    N_BODY_PARAMS,
    PSEUDO_INERTIA_BASIS,
    ConsistencyReport,
    check_consistencies,
    theta_from_pseudo_inertia,
)
from inertia_id_ros.errors import ProblemError

CONSISTENCY_MARGIN = 1e-9
"""lambda_min(J) every method guarantees for its returned bodies (kg, kg*m^2): a margin above
:data:`inertia_id_ros.core.inertia.CONSISTENCY_TOLERANCE` so round-off never breaks consistency."""
AT_BOUND_FACTOR = 10.0
"""``λmin(J)`` up to this many times :data:`CONSISTENCY_MARGIN` is on the boundary."""


def on_consistency_bound(min_pseudo_inertia_eig: float) -> bool:
    """A body whose pseudo-inertia's smallest eigenvalue (kg m²) sits on the consistency
    boundary (within :data:`AT_BOUND_FACTOR` of the margin, not beyond it): the constraint, not
    the data, decided part of it."""
    return -CONSISTENCY_MARGIN <= min_pseudo_inertia_eig <= AT_BOUND_FACTOR * CONSISTENCY_MARGIN


def _as_float_array(name: str, value: Any, ndim: int) -> np.ndarray:
    try:
        array = np.array(value, dtype=float)
    except (TypeError, ValueError) as e:
        raise ProblemError(f"{name} must be a numeric array, got {type(value).__name__}") from e
    if array.ndim != ndim:
        raise ProblemError(f"{name} must have {ndim} dimension(s), got shape {array.shape}")
    if not np.all(np.isfinite(array)):
        raise ProblemError(f"{name} has non-finite entries")
    return array


@dataclass(eq=False)
class Problem:
    """Normal equations of ``||Y x - y||^2`` plus the prior, the constraints and names.

    Shapes (``p`` parameters): ``gram`` (p, p) ``= Y^T diag(w) Y``, ``moment`` (p,)
    ``= Y^T diag(w) y``,
    ``yty = y^T diag(w) y``, ``n_rows`` rows of ``Y`` (N). ``prior`` (p,) and ``prior_weight``
    (scalar, (p,) diagonal or (p, p) PSD matrix ``W``) add ``(x - prior)^T W (x - prior)``.
    ``bounding_ellipsoids[k]`` is ``None`` or the 4x4 ``Q_k`` of Wensing et al. 2017
    (``tr(J_k Q_k) >= 0`` iff the body's mass lies in the ellipsoid "on average"); see
    :func:`ellipsoid_matrix`. Arrays are copied; the gram matrix is symmetrised.
    """

    gram: np.ndarray
    moment: np.ndarray
    yty: float
    n_rows: int
    n_bodies: int
    nonnegative: tuple[int, ...] = ()
    prior: np.ndarray | None = None
    prior_weight: float | np.ndarray = 0.0
    bounding_ellipsoids: Sequence[np.ndarray | None] | None = None
    body_names: tuple[str, ...] | None = None
    param_names: tuple[str, ...] | None = None

    def __post_init__(self) -> None:
        gram = _as_float_array("gram", self.gram, 2)
        if gram.shape[0] != gram.shape[1]:
            raise ProblemError(f"gram must be square, got shape {gram.shape}")
        p = gram.shape[0]
        self.gram = 0.5 * (gram + gram.T)
        self.moment = _as_float_array("moment", self.moment, 1)
        if self.moment.shape != (p,):
            raise ProblemError(
                f"moment must have shape ({p},) like gram {gram.shape}, got {self.moment.shape}"
            )
        self.yty = float(_as_float_array("yty", self.yty, 0))
        if int(self.n_rows) != self.n_rows or self.n_rows < 0:
            raise ProblemError(f"n_rows must be a non-negative integer, got {self.n_rows!r}")
        self.n_rows = int(self.n_rows)
        if int(self.n_bodies) != self.n_bodies or self.n_bodies < 0:
            raise ProblemError(f"n_bodies must be a non-negative integer, got {self.n_bodies!r}")
        self.n_bodies = int(self.n_bodies)
        if N_BODY_PARAMS * self.n_bodies > p:
            raise ProblemError(
                f"n_bodies={self.n_bodies} needs at least "
                f"{N_BODY_PARAMS * self.n_bodies} parameters, gram has {p}"
            )
        nonnegative = tuple(sorted({int(i) for i in self.nonnegative}))
        if any(not 0 <= i < p for i in nonnegative):
            raise ProblemError(f"nonnegative indices {nonnegative} out of range [0, {p})")
        self.nonnegative = nonnegative
        self._check_prior(p)
        self._check_ellipsoids()
        if self.body_names is not None:
            self.body_names = tuple(self.body_names)
            if len(self.body_names) != self.n_bodies:
                raise ProblemError(
                    f"body_names has {len(self.body_names)} names for {self.n_bodies} bodies"
                )
        if self.param_names is not None:
            self.param_names = tuple(self.param_names)
            if len(self.param_names) != p:
                raise ProblemError(
                    f"param_names has {len(self.param_names)} names for {p} parameters"
                )

    def _check_prior(self, p: int) -> None:
        if self.prior is not None:
            self.prior = _as_float_array("prior", self.prior, 1)
            if self.prior.shape != (p,):
                raise ProblemError(f"prior must have shape ({p},), got {self.prior.shape}")
        weight = np.array(self.prior_weight, dtype=float)
        if not np.all(np.isfinite(weight)):
            raise ProblemError("prior_weight has non-finite entries")
        if weight.ndim == 0 or weight.shape == (p,):
            if np.any(weight < 0):
                raise ProblemError("prior_weight must be non-negative")
        elif weight.shape == (p, p):
            weight = 0.5 * (weight + weight.T)
            lowest = np.linalg.eigvalsh(weight)[0]
            if lowest < -1e-12 * max(1.0, np.abs(weight).max()):
                raise ProblemError(f"prior_weight matrix must be PSD (min eigenvalue {lowest:.3g})")
        else:
            raise ProblemError(
                f"prior_weight must be a scalar, ({p},) or ({p}, {p}), got shape {weight.shape}"
            )
        self.prior_weight = float(weight) if weight.ndim == 0 else weight
        if self.prior is None and np.any(weight != 0):
            raise ProblemError("prior_weight is non-zero but no prior is given")

    def _check_ellipsoids(self) -> None:
        if self.bounding_ellipsoids is None:
            return
        ellipsoids = list(self.bounding_ellipsoids)
        if len(ellipsoids) != self.n_bodies:
            raise ProblemError(
                f"bounding_ellipsoids has {len(ellipsoids)} entries for {self.n_bodies} bodies"
            )
        for k, q in enumerate(ellipsoids):
            if q is None:
                continue
            q = _as_float_array(f"bounding_ellipsoids[{k}]", q, 2)
            if q.shape != (4, 4) or not np.allclose(q, q.T):
                raise ProblemError(
                    f"bounding_ellipsoids[{k}] must be a symmetric 4x4 matrix, got shape {q.shape}"
                )
            q = 0.5 * (q + q.T)
            if (
                np.linalg.eigvalsh(-q[:3, :3])[0] <= 0
                or solid_ellipsoid_theta(q) @ np.einsum("iab,ba->i", PSEUDO_INERTIA_BASIS, q) <= 0
            ):
                raise ProblemError(
                    f"bounding_ellipsoids[{k}] is not a bounded ellipsoid (see ellipsoid_matrix)"
                )
            ellipsoids[k] = q
        self.bounding_ellipsoids = ellipsoids

    # ---- construction and accumulation -------------------------------------------------------

    @classmethod
    def from_regressor(
        cls,
        Y: np.ndarray,
        y: np.ndarray,
        n_bodies: int,
        weights: np.ndarray | None = None,
        **kwargs: Any,
    ) -> Problem:
        """Problem of ``||diag(w)^(1/2) (Y x - y)||^2`` from ``Y`` (N, p) and ``y`` (N,).

        ``weights`` (N,) are non-negative row weights (default 1); ``kwargs`` are the other fields.
        """
        Y = _as_float_array("Y", Y, 2)
        y = _as_float_array("y", y, 1)
        if y.shape[0] != Y.shape[0]:
            raise ProblemError(f"y has {y.shape[0]} rows but Y has {Y.shape[0]}")
        gram, moment, yty = _normal_equations(Y, y, weights)
        return cls(
            gram=gram, moment=moment, yty=yty, n_rows=Y.shape[0], n_bodies=n_bodies, **kwargs
        )

    def add_rows(self, Y: np.ndarray, y: np.ndarray, weights: np.ndarray | None = None) -> Problem:
        """New problem with the rows ``Y`` (N, p), ``y`` (N,) appended (weights as in
        :meth:`from_regressor`); constraints, prior and names are kept."""
        Y = _as_float_array("Y", Y, 2)
        y = _as_float_array("y", y, 1)
        if Y.shape[1] != self.n_params or y.shape[0] != Y.shape[0]:
            raise ProblemError(
                f"rows must be Y (N, {self.n_params}) and y (N,), got {Y.shape} and {y.shape}"
            )
        gram, moment, yty = _normal_equations(Y, y, weights)
        return self.replace(
            gram=self.gram + gram,
            moment=self.moment + moment,
            yty=self.yty + yty,
            n_rows=self.n_rows + Y.shape[0],
        )

    def remove_rows(
        self, Y: np.ndarray, y: np.ndarray, weights: np.ndarray | None = None
    ) -> Problem:
        """Inverse of :meth:`add_rows` (rows leaving a sliding window)."""
        Y = _as_float_array("Y", Y, 2)
        y = _as_float_array("y", y, 1)
        if Y.shape[1] != self.n_params or y.shape[0] != Y.shape[0]:
            raise ProblemError(
                f"rows must be Y (N, {self.n_params}) and y (N,), got {Y.shape} and {y.shape}"
            )
        if Y.shape[0] > self.n_rows:
            raise ProblemError(f"cannot remove {Y.shape[0]} rows from {self.n_rows}")
        gram, moment, yty = _normal_equations(Y, y, weights)
        return self.replace(
            gram=self.gram - gram,
            moment=self.moment - moment,
            yty=max(self.yty - yty, 0.0),
            n_rows=self.n_rows - Y.shape[0],
        )

    def __add__(self, other: Problem) -> Problem:
        """Merge the data (normal equations) of two problems with the same parameters; the
        constraints, prior and names are ``self``'s."""
        if not isinstance(other, Problem):
            return NotImplemented
        if other.n_params != self.n_params or other.n_bodies != self.n_bodies:
            raise ProblemError(
                f"cannot merge problems with (p, n_bodies) = "
                f"({self.n_params}, {self.n_bodies}) and "
                f"({other.n_params}, {other.n_bodies})"
            )
        return self.replace(
            gram=self.gram + other.gram,
            moment=self.moment + other.moment,
            yty=self.yty + other.yty,
            n_rows=self.n_rows + other.n_rows,
        )

    def replace(self, **changes: Any) -> Problem:
        """Copy with some fields changed (validated again)."""
        return dataclasses.replace(self, **changes)

    # ---- derived quantities ------------------------------------------------------------------

    @property
    def n_params(self) -> int:
        """p, the length of ``x``."""
        return self.gram.shape[0]

    @property
    def n_body_params(self) -> int:
        """``10 * n_bodies``."""
        return N_BODY_PARAMS * self.n_bodies

    @property
    def n_extras(self) -> int:
        """Entries of ``x`` after the bodies."""
        return self.n_params - self.n_body_params

    @property
    def weight_matrix(self) -> np.ndarray:
        """(p, p) ``W`` of the prior term (zeros when there is no prior)."""
        weight = np.asarray(self.prior_weight, dtype=float)
        if weight.ndim == 0:
            return float(weight) * np.eye(self.n_params)
        if weight.ndim == 1:
            return np.diag(weight)
        return weight

    @property
    def has_prior_term(self) -> bool:
        """Whether the objective has a non-zero prior term."""
        return self.prior is not None and bool(np.any(np.asarray(self.prior_weight) != 0))

    def quadratic(self) -> tuple[np.ndarray, np.ndarray, float]:
        """``(H, b, c)`` with objective ``x^T H x - 2 b^T x + c`` (``H = G + W``,
        ``b = m + W prior``, ``c = y^T y + prior^T W prior``)."""
        if not self.has_prior_term:
            return self.gram, self.moment, self.yty
        weight = self.weight_matrix
        weighted_prior = weight @ self.prior
        return (
            self.gram + weight,
            self.moment + weighted_prior,
            self.yty + float(self.prior @ weighted_prior),
        )

    def squared_residual(self, x: np.ndarray) -> float:
        """``||Y x - y||^2`` from the normal equations (clipped at 0 against round-off)."""
        x = np.asarray(x, dtype=float)
        return max(float(x @ self.gram @ x - 2.0 * self.moment @ x + self.yty), 0.0)

    def objective(self, x: np.ndarray) -> float:
        """``||Y x - y||^2 + (x - prior)^T W (x - prior)``."""
        value = self.squared_residual(x)
        if self.has_prior_term:
            d = np.asarray(x, dtype=float) - self.prior
            value += float(d @ self.weight_matrix @ d)
        return value

    def residual_rms(self, x: np.ndarray) -> float:
        """``sqrt(||Y x - y||^2 / n_rows)`` (0 for an empty problem)."""
        return float(np.sqrt(self.squared_residual(x) / self.n_rows)) if self.n_rows else 0.0

    def ellipsoid_rows(self) -> dict[int, np.ndarray]:
        """``{k: a_k}`` (10,) with ``tr(J(theta_k) Q_k) = a_k . theta_k``, bodies with an
        ellipsoid."""
        if self.bounding_ellipsoids is None:
            return {}
        return {
            k: np.einsum("iab,ba->i", PSEUDO_INERTIA_BASIS, q)
            for k, q in enumerate(self.bounding_ellipsoids)
            if q is not None
        }

    def warm_start(self, initvals: Solution | np.ndarray | None) -> np.ndarray | None:
        """The warm-start ``x`` (p,) from ``initvals`` (a previous :class:`Solution` or an
        array), checked against this problem; ``None`` without one."""
        if initvals is None:
            return None
        x = initvals.x if isinstance(initvals, Solution) else initvals
        x = _as_float_array("initvals", x, 1)
        if x.shape != (self.n_params,):
            raise ProblemError(f"initvals must have shape ({self.n_params},), got {x.shape}")
        return x

    def structure_key(self) -> tuple:
        """Hashable description of everything but the numbers (for caching compiled solvers)."""
        mask = tuple(k in self.ellipsoid_rows() for k in range(self.n_bodies))
        return (self.n_params, self.n_bodies, self.nonnegative, mask)


def _normal_equations(
    Y: np.ndarray, y: np.ndarray, weights: np.ndarray | None
) -> tuple[np.ndarray, np.ndarray, float]:
    if weights is None:
        return Y.T @ Y, Y.T @ y, float(y @ y)
    w = _as_float_array("weights", weights, 1)
    if w.shape != y.shape or np.any(w < 0):
        raise ProblemError(f"weights must be non-negative with shape {y.shape}, got {w.shape}")
    wy = w * y
    return Y.T @ (w[:, None] * Y), Y.T @ wy, float(y @ wy)


def ellipsoid_matrix(
    center: np.ndarray, semi_axes: np.ndarray, rotation: np.ndarray | None = None
) -> np.ndarray:
    """4x4 ``Q`` of the ellipsoid ``{p : |diag(1/semi_axes) R^T (p - center)| <= 1}`` (m, body
    frame); ``tr(J Q) >= 0`` is the bounding-ellipsoid constraint (Wensing et al. 2017)."""
    c = np.asarray(center, dtype=float).reshape(3)
    axes = np.asarray(semi_axes, dtype=float).reshape(3)
    if np.any(axes <= 0):
        raise ProblemError(f"semi_axes must be positive, got {axes}")
    r = np.eye(3) if rotation is None else np.asarray(rotation, dtype=float).reshape(3, 3)
    s = r @ np.diag(axes**-2.0) @ r.T  # (p - c)^T s (p - c) <= 1
    q = np.empty((4, 4))
    q[:3, :3] = -s
    q[:3, 3] = q[3, :3] = s @ c
    q[3, 3] = 1.0 - c @ s @ c
    return q


def solid_ellipsoid_theta(q: np.ndarray) -> np.ndarray:
    """``theta`` (10,) of a uniform solid ellipsoid of 1 kg filling the ellipsoid ``Q`` (4x4, as
    from :func:`ellipsoid_matrix`): ``Sigma_com = S^-1 / 5`` with ``S = -Q[:3, :3]``, COM
    ``c = S^-1 Q[:3, 3]``. Its ``J`` is positive definite and ``tr(J Q) = 2/5``."""
    s_inv = np.linalg.inv(-q[:3, :3])
    c = s_inv @ q[:3, 3]
    j = np.empty((4, 4))
    j[:3, :3] = s_inv / 5.0 + np.outer(c, c)
    j[:3, 3] = j[3, :3] = c
    j[3, 3] = 1.0
    return theta_from_pseudo_inertia(j)


# ---- solution --------------------------------------------------------------------------------


@dataclass(eq=False)
class Solution:
    """Result of :func:`inertia_id_ros.solvers.solve`.

    ``x`` (p,) all parameters; ``found`` whether the method met its stopping criteria (the
    returned ``x`` is usable either way); ``status`` the method's or back end's status string;
    ``iterations`` the back end's iteration count (0 for closed forms); ``solve_time`` wall time
    (s); ``objective`` the problem's objective at ``x``; ``residual_rms``
    ``= sqrt(||Y x - y||^2 / n_rows)``; ``min_eigs`` (n_bodies,) lambda_min of each body's
    pseudo-inertia; ``info`` method-specific diagnostics and warm-start data.
    """

    x: np.ndarray
    method: str
    n_bodies: int
    found: bool
    status: str
    iterations: int
    solve_time: float
    objective: float
    residual_rms: float
    min_eigs: np.ndarray
    message: str = ""
    info: dict[str, Any] = field(default_factory=dict)

    @property
    def bodies(self) -> np.ndarray:
        """(n_bodies, 10) view of ``x[:10 * n_bodies]``."""
        return self.x[: N_BODY_PARAMS * self.n_bodies].reshape(self.n_bodies, N_BODY_PARAMS)

    @property
    def extras(self) -> np.ndarray:
        """``x[10 * n_bodies:]``."""
        return self.x[N_BODY_PARAMS * self.n_bodies :]

    @property
    def consistency(self) -> list[ConsistencyReport]:
        """:func:`~inertia_id_ros.core.inertia.check_consistency` of each body."""
        return check_consistencies(self.bodies)

    @property
    def fully_consistent(self) -> bool:
        """All bodies pass :func:`~inertia_id_ros.core.inertia.check_consistency`."""
        return all(report.fully_consistent for report in self.consistency)


def body_min_eigs(x: np.ndarray, n_bodies: int) -> np.ndarray:
    """(n_bodies,) lambda_min of each body's pseudo-inertia ``J(theta_k)``."""
    if n_bodies == 0:
        return np.zeros(0)
    thetas = np.asarray(x, dtype=float)[: N_BODY_PARAMS * n_bodies].reshape(n_bodies, N_BODY_PARAMS)
    return np.linalg.eigvalsh(np.tensordot(thetas, PSEUDO_INERTIA_BASIS, axes=1))[:, 0]


_IDENTITY_THETA = np.array([1.0, 0, 0, 0, 2.0, 0, 2.0, 0, 0, 2.0])  # J(theta) = 1_4


def lift_to_margin(
    x: np.ndarray, problem: Problem, margin: float = CONSISTENCY_MARGIN
) -> np.ndarray:
    """Copy of ``x`` whose bodies have ``lambda_min(J) >= margin``: the round-off safeguard of the
    constrained methods. A body below the margin gets ``J + t D`` with ``D = 1_4``
    (``theta + t [1, 0, 0, 0, 2, 0, 2, 0, 0, 2]``) or, if it has a bounding ellipsoid, ``D`` the
    solid ellipsoid's pseudo-inertia (which keeps ``tr(J Q) >= 0``), and
    ``t = (margin - lambda_min(J)) / lambda_min(D)``."""
    x = np.array(x, dtype=float)
    n = problem.n_bodies
    if n == 0:
        return x
    shift = np.maximum(margin - body_min_eigs(x, n), 0.0)
    if not np.any(shift > 0):
        return x
    ellipsoids = problem.bounding_ellipsoids or [None] * n
    for k in np.flatnonzero(shift > 0).tolist():
        q = ellipsoids[k]
        direction = _IDENTITY_THETA if q is None else solid_ellipsoid_theta(q)
        scale = np.linalg.eigvalsh(np.tensordot(direction, PSEUDO_INERTIA_BASIS, axes=1))[0]
        x[N_BODY_PARAMS * k : N_BODY_PARAMS * (k + 1)] += shift[k] / scale * direction
    return x


def rounded_to_feasible(
    x: np.ndarray, problem: Problem, margin: float = CONSISTENCY_MARGIN
) -> np.ndarray:
    """Copy of a constrained method's ``x`` without its round-off: the ``nonnegative`` entries
    clipped at 0, then the bodies lifted to ``lambda_min(J) >= margin`` (:func:`lift_to_margin`)."""
    x = np.array(x, dtype=float)
    if problem.nonnegative:
        x[list(problem.nonnegative)] = np.maximum(x[list(problem.nonnegative)], 0.0)
    return lift_to_margin(x, problem, margin)


def make_solution(
    problem: Problem,
    x: np.ndarray,
    method: str,
    *,
    found: bool,
    status: str,
    iterations: int,
    started: float,
    finished: float,
    message: str = "",
    info: dict[str, Any] | None = None,
) -> Solution:
    """Assemble a :class:`Solution`, evaluating the objective, RMS residual and eigenvalues at ``x``
    (``started``/``finished``: ``time.perf_counter()`` around the solve)."""
    x = np.asarray(x, dtype=float)
    return Solution(
        x=x,
        method=method,
        n_bodies=problem.n_bodies,
        found=found,
        status=status,
        iterations=int(iterations),
        solve_time=finished - started,
        objective=problem.objective(x),
        residual_rms=problem.residual_rms(x),
        min_eigs=body_min_eigs(x, problem.n_bodies),
        message=message,
        info={} if info is None else info,
    )
