"""``manifold``: Levenberg-Marquardt on a consistent-by-construction parametrisation
(Traversaro, Brossette, Escande, Nori 2016).

Each body is ``theta = pi(mu, c, Q, l)`` with mass ``m = mu^2`` (kg), COM ``c`` (3,) (m, body
frame), principal axes ``Q`` in SO(3) and second moments of the mass distribution about the COM
along them ``L = l^2`` (3,) (kg*m^2)::

    Sigma_com = Q diag(L) Q^T
    I_com = tr(Sigma_com) 1 - Sigma_com = Q diag(Ly+Lz, Lx+Lz, Lx+Ly) Q^T
    theta = [m, m c, I_com + m (|c|^2 1 - c c^T)]

so ``J(theta) = [[1, c], [0, 1]]^T-congruent to diag(Sigma_com, m) >= 0`` for every parameter value
and no expression divides by ``m`` (a massless body is ``mu = 0``). ``Q`` is updated by the
retraction ``Q <- Q exp([omega]x)``. Free extras enter linearly; non-negative ones as ``s^2``.
Every iterate is consistent, so a run capped by ``max_iterations``/``max_time`` still returns a
valid estimate. Gauss-Newton matrix ``T^T H T`` with the analytic Jacobian ``T = dx/dphi``, plus
the (non-negative part of the) exact curvature of the squared coordinates.
Bounding ellipsoids are not supported (use ``lmi`` or ``pointmass``).
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np

from inertia_id_ros.core.inertia import (
    N_BODY_PARAMS,
    PSEUDO_INERTIA_BASIS,
    theta_from_pseudo_inertia,
)
from inertia_id_ros.errors import ProblemError
from inertia_id_ros.solvers._linalg import DEFAULT_REGULARIZATION, regularize_null_space
from inertia_id_ros.solvers.problem import (
    CONSISTENCY_MARGIN,
    Problem,
    Solution,
    lift_to_margin,
    make_solution,
)

_SYM_INDEX = ((0, 0), (0, 1), (1, 1), (0, 2), (1, 2), (2, 2))  # theta[4:] order
_SKEW = np.array(
    [
        [[0, 0, 0], [0, 0, -1], [0, 1, 0]],
        [[0, 0, 1], [0, 0, 0], [-1, 0, 0]],
        [[0, -1, 0], [1, 0, 0], [0, 0, 0]],
    ],
    dtype=float,
)  # [e_j]x
_MOMENT_TO_INERTIA = np.array([[0, 1, 1], [1, 0, 1], [1, 1, 0]], dtype=float)  # d = M L
_MASS_FLOOR = 1e-12  # kg: initialisation only (COM of a near-massless body is set to 0)
_START_MASS = 1e-6  # kg: smallest starting mass
_START_INTERIOR = 1e-4  # smallest starting second moment relative to the body's largest
_SCALE_FLOOR = 1e-6  # Marquardt scaling: smallest diagonal relative to the largest


def _entries(sym: np.ndarray) -> np.ndarray:
    """``[..., 3, 3]`` symmetric -> ``[..., 6]`` in theta's inertia order."""
    return np.stack([sym[..., i, j] for i, j in _SYM_INDEX], axis=-1)


class _Bodies:
    """Parameters of ``n`` bodies: ``mu`` (n,), ``c`` (n, 3), ``Q`` (n, 3, 3), ``l`` (n, 3)
    (``root_moments``: ``L = l^2``)."""

    def __init__(
        self, mu: np.ndarray, c: np.ndarray, Q: np.ndarray, root_moments: np.ndarray
    ) -> None:
        self.mu, self.c, self.Q, self.l = mu, c, Q, root_moments

    @classmethod
    def from_thetas(cls, thetas: np.ndarray) -> _Bodies:
        """Starting parameters from consistent ``thetas`` (n, 10): near-massless bodies get
        ``c = 0``, and masses / second moments are floored slightly above 0."""
        n = thetas.shape[0]
        mass = np.maximum(thetas[:, 0], _MASS_FLOOR)
        c = np.where(thetas[:, :1] > _MASS_FLOOR, thetas[:, 1:4] / mass[:, None], 0.0)
        inertia = np.zeros((n, 3, 3))
        for idx, (i, j) in enumerate(_SYM_INDEX):
            inertia[:, i, j] = inertia[:, j, i] = thetas[:, 4 + idx]
        cc = np.einsum("ni,nj->nij", c, c)
        shift = mass[:, None, None] * (np.einsum("ni,ni->n", c, c)[:, None, None] * np.eye(3) - cc)
        i_com = inertia - shift
        sigma_com = 0.5 * np.trace(i_com, axis1=1, axis2=2)[:, None, None] * np.eye(3) - i_com
        moments, Q = np.linalg.eigh(sigma_com)
        Q[:, :, 2] *= np.sign(np.linalg.det(Q))[:, None]  # proper rotations
        # squared coordinates at 0 are stationary points: start slightly inside
        moments = np.maximum(
            moments, _START_INTERIOR * moments.max(axis=1, keepdims=True) + _MASS_FLOOR
        )
        return cls(np.sqrt(np.maximum(mass, _START_MASS)), c, Q, np.sqrt(moments))

    def thetas(self) -> np.ndarray:
        """(n, 10) ``theta`` of each body."""
        m = self.mu**2
        d = (self.l**2) @ _MOMENT_TO_INERTIA.T
        i_com = np.einsum("nij,nj,nkj->nik", self.Q, d, self.Q)
        c = self.c
        parallel = np.einsum("ni,ni->n", c, c)[:, None, None] * np.eye(3) - np.einsum(
            "ni,nj->nij", c, c
        )
        inertia = i_com + m[:, None, None] * parallel
        return np.concatenate([m[:, None], m[:, None] * c, _entries(inertia)], axis=1)

    def jacobian(self) -> np.ndarray:
        """(n, 10, 10) ``d theta / d(mu, c, omega, l)`` (omega: rotation increment, ``Q``'s
        frame)."""
        n = self.mu.shape[0]
        m, c, Q = self.mu**2, self.c, self.Q
        out = np.zeros((n, 10, 10))
        parallel = np.einsum("ni,ni->n", c, c)[:, None, None] * np.eye(3) - np.einsum(
            "ni,nj->nij", c, c
        )
        out[:, 0, 0] = 2.0 * self.mu
        out[:, 1:4, 0] = 2.0 * self.mu[:, None] * c
        out[:, 4:, 0] = 2.0 * self.mu[:, None] * _entries(parallel)
        eye = np.eye(3)
        for j in range(3):
            out[:, 1 + j, 1 + j] = m
            d_parallel = (
                2.0 * c[:, j, None, None] * eye
                - eye[j][None, :, None] * c[:, None, :]
                - c[:, :, None] * eye[j][None, None, :]
            )
            out[:, 4:, 1 + j] = m[:, None] * _entries(d_parallel)
        d = (self.l**2) @ _MOMENT_TO_INERTIA.T
        for j in range(3):  # d I_com / d omega_j = Q ([e_j]x D - D [e_j]x) Q^T
            commutator = _SKEW[j][None] * d[:, None, :] - d[:, :, None] * _SKEW[j][None]
            out[:, 4:, 4 + j] = _entries(Q @ commutator @ np.swapaxes(Q, 1, 2))
        for j in range(3):  # d d / d l_j = 2 l_j M[:, j]
            dd = 2.0 * self.l[:, j, None] * _MOMENT_TO_INERTIA[:, j][None, :]
            out[:, 4:, 7 + j] = _entries(np.einsum("nij,nj,nkj->nik", Q, dd, Q))
        return out

    def squared_curvature(self, body_gradient: np.ndarray) -> np.ndarray:
        """(n, 10) exact second-derivative terms of the squared coordinates: ``m = mu^2`` and
        ``L = l^2`` enter ``theta`` affinely, so ``d^2 f / d mu^2`` gains ``2 g . d theta / d m``
        and
        ``d^2 f / d l_j^2`` gains ``2 g . d theta / d L_j`` (``g`` (n, 10): ``df/dtheta``). Without
        them Gauss-Newton's curvature vanishes at the boundary ``mu = 0`` or ``l_j = 0``."""
        n = self.mu.shape[0]
        c = self.c
        parallel = np.einsum("ni,ni->n", c, c)[:, None, None] * np.eye(3) - np.einsum(
            "ni,nj->nij", c, c
        )
        d_mass = np.concatenate([np.ones((n, 1)), c, _entries(parallel)], axis=1)
        out = np.zeros((n, 10))
        out[:, 0] = 2.0 * np.einsum("ni,ni->n", body_gradient, d_mass)
        for j in range(3):
            d_inertia = _entries(
                np.einsum("nij,j,nkj->nik", self.Q, _MOMENT_TO_INERTIA[:, j], self.Q)
            )
            out[:, 7 + j] = 2.0 * np.einsum("ni,ni->n", body_gradient[:, 4:], d_inertia)
        return out

    def retract(self, step: np.ndarray) -> _Bodies:
        """Parameters moved by ``step`` (n, 10) = (d mu, d c, omega, d l)."""
        omega = step[:, 4:7]
        angle = np.linalg.norm(omega, axis=1)
        K = np.einsum("nj,jab->nab", omega, _SKEW)
        safe = np.where(angle > 1e-12, angle, 1.0)
        a = np.where(angle > 1e-12, np.sin(angle) / safe, 1.0)
        b = np.where(angle > 1e-12, (1.0 - np.cos(angle)) / safe**2, 0.5)
        rotation = np.eye(3) + a[:, None, None] * K + b[:, None, None] * (K @ K)
        return _Bodies(
            self.mu + step[:, 0], self.c + step[:, 1:4], self.Q @ rotation, self.l + step[:, 7:10]
        )


def _project_consistent(thetas: np.ndarray) -> np.ndarray:
    """Clip each ``J(theta)``'s negative eigenvalues to 0 (Frobenius projection; initialisation)."""
    J = np.tensordot(thetas, PSEUDO_INERTIA_BASIS, axes=1)
    eigvals, eigvecs = np.linalg.eigh(J)
    J = np.einsum("nij,nj,nkj->nik", eigvecs, np.maximum(eigvals, 0.0), eigvecs)
    return np.array([theta_from_pseudo_inertia(j) for j in J])


@dataclass
class _Objective:
    """``x^T H x - 2 b^T x + c`` (the regularised problem's objective, ``hessian``, ``rhs``,
    ``constant``) over ``x`` assembled from the bodies (``n_bodies``, the first ``n_body``
    entries) and the extras, those in ``squared`` entering as their square."""

    hessian: np.ndarray
    rhs: np.ndarray
    constant: float
    n_bodies: int
    squared: np.ndarray

    def x(self, bodies: _Bodies, extras: np.ndarray) -> np.ndarray:
        """(p,) the parameters of ``bodies`` and ``extras``."""
        return np.concatenate([bodies.thetas().ravel(), np.where(self.squared, extras**2, extras)])

    def value(self, x: np.ndarray) -> float:
        """The objective at ``x`` (p,)."""
        return float(x @ self.hessian @ x - 2.0 * self.rhs @ x + self.constant)

    def gauss_newton(
        self, bodies: _Bodies, extras: np.ndarray, x: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``(gradient, matrix, scale)`` in the parametrisation's coordinates at ``x`` (of
        ``bodies``, ``extras``): the Gauss-Newton matrix ``T^T H T`` plus the non-negative part
        of the exact curvature, and its Marquardt scaling (its diagonal, floored)."""
        n, p = self.n_bodies, self.hessian.shape[0]
        nb = N_BODY_PARAMS * n
        T = np.zeros((p, p))
        for k, block in enumerate(bodies.jacobian()):
            T[10 * k : 10 * k + 10, 10 * k : 10 * k + 10] = block
        T[nb:, nb:] = np.diag(np.where(self.squared, 2.0 * extras, 1.0))
        x_gradient = self.hessian @ x - self.rhs
        gradient = T.T @ x_gradient
        matrix = T.T @ self.hessian @ T
        curvature = np.concatenate(
            [
                bodies.squared_curvature(x_gradient[:nb].reshape(n, N_BODY_PARAMS)).ravel(),
                np.where(self.squared, 2.0 * x_gradient[nb:], 0.0),
            ]
        )
        matrix[np.diag_indices(p)] += np.maximum(curvature, 0.0)
        diagonal = np.diag(matrix)
        scale = np.maximum(diagonal, _SCALE_FLOOR * max(float(np.max(diagonal)), 1e-300))
        return gradient, matrix, scale

    def damped_step(
        self,
        bodies: _Bodies,
        extras: np.ndarray,
        value: float,
        gradient: np.ndarray,
        matrix: np.ndarray,
        scale: np.ndarray,
        damping: float,
        nu: float,
    ) -> tuple[_Trial | None, float, float]:
        """Levenberg-Marquardt's step from ``bodies``, ``extras`` (objective ``value``;
        :meth:`gauss_newton`'s ``gradient``, ``matrix``, ``scale``): the ``damping`` raised (by
        ``nu``, doubling) until the step lowers the objective, then lowered (Nielsen's update).
        ``(trial, damping, nu)``; ``trial`` ``None`` once the damping exceeds 1e16."""
        nb = N_BODY_PARAMS * self.n_bodies
        while True:
            step = np.linalg.solve(matrix + damping * np.diag(scale), -gradient)
            trial_bodies = bodies.retract(step[:nb].reshape(self.n_bodies, N_BODY_PARAMS))
            trial_extras = extras + step[nb:]
            trial_x = self.x(trial_bodies, trial_extras)
            trial_value = self.value(trial_x)
            predicted = -(step @ gradient) - 0.5 * step @ matrix @ step
            ratio = (value - trial_value) / predicted if predicted > 0 else -1.0
            if ratio > 0:
                damping *= max(1.0 / 3.0, 1.0 - (2.0 * ratio - 1.0) ** 3)
                return (trial_bodies, trial_extras, trial_x, trial_value), damping, 2.0
            damping *= nu
            nu *= 2.0
            if damping > 1e16:
                return None, damping, nu


_Trial = tuple[_Bodies, np.ndarray, np.ndarray, float]
"""An accepted Levenberg-Marquardt step: the bodies, extras, parameters ``x`` and objective."""


def _check_supported(problem: Problem) -> None:
    """Raise :class:`ProblemError` for bounding ellipsoids or non-negative body entries."""
    if problem.bounding_ellipsoids is not None and problem.ellipsoid_rows():
        raise ProblemError(
            "manifold does not support bounding ellipsoids; use 'lmi' or 'pointmass'"
        )
    nb = problem.n_body_params
    body_nonneg = [i for i in problem.nonnegative if i < nb and i % N_BODY_PARAMS != 0]
    if body_nonneg:
        raise ProblemError(
            f"manifold: nonnegative body entries {body_nonneg} are not supported "
            "(masses are non-negative by construction)"
        )


def solve_manifold(
    problem: Problem,
    initvals: Solution | np.ndarray | None = None,
    *,
    max_iterations: int = 200,
    max_time: float | None = None,
    tol: float = 1e-12,
    regularization: float = DEFAULT_REGULARIZATION,
    margin: float = CONSISTENCY_MARGIN,
) -> Solution:
    """Levenberg-Marquardt from ``initvals`` (else the least-squares estimate projected onto
    consistency). Stops when the relative objective decrease of an accepted step is below ``tol``,
    the gradient vanishes, or after ``max_iterations`` / ``max_time`` seconds (``found`` False
    then; the estimate is still consistent). ``regularization``: see
    :data:`._linalg.DEFAULT_REGULARIZATION` (rank-deficient data)."""
    started = time.perf_counter()
    _check_supported(problem)
    n, nb, p = problem.n_bodies, problem.n_body_params, problem.n_params
    hessian, rhs, constant = problem.quadratic()
    reference = problem.prior if problem.prior is not None else np.zeros(p)
    regularized = regularize_null_space(hessian, rhs, reference, regularization)
    constant += regularized.constant_shift
    x0 = problem.warm_start(initvals)
    if x0 is None:
        x0 = regularized.x_unconstrained
    bodies = _Bodies.from_thetas(_project_consistent(x0[:nb].reshape(n, N_BODY_PARAMS)))
    squared = np.zeros(p - nb, dtype=bool)
    squared[[i - nb for i in problem.nonnegative if i >= nb]] = True
    extras = np.where(squared, np.sqrt(np.maximum(x0[nb:], 0.0)), x0[nb:])
    objective = _Objective(regularized.hessian, regularized.rhs, constant, n, squared)
    x = objective.x(bodies, extras)
    value = objective.value(x)
    value_floor = 1e-14 * max(constant, 1e-300)  # objective scale where a perfect fit stops
    damping, nu = 1e-3, 2.0
    status, found, iterations = "max_iterations", False, 0
    for iterations in range(1, max_iterations + 1):
        gradient, gauss_newton, scale = objective.gauss_newton(bodies, extras, x)
        if np.linalg.norm(gradient / np.sqrt(scale)) ** 2 <= tol * max(value, value_floor):
            status, found = "solved", True
            break
        trial, damping, nu = objective.damped_step(
            bodies, extras, value, gradient, gauss_newton, scale, damping, nu
        )
        if trial is None:
            status, found = "stalled", True
            break
        decrease = value - trial[3]
        bodies, extras, x, value = trial
        if decrease <= tol * max(value, value_floor):
            status, found = "solved", True
            break
        if max_time is not None and time.perf_counter() - started > max_time:
            status = "max_time"
            break
    x = lift_to_margin(x, problem, margin)
    return make_solution(
        problem,
        x,
        "manifold",
        found=found,
        status=status,
        iterations=iterations,
        started=started,
        finished=time.perf_counter(),
        message=f"Levenberg-Marquardt: {status}",
        info={"damping": damping},
    )
