"""Semismooth Newton (primal-dual active-set) method on the KKT conditions (``lmi`` fast).

Reduced problem ``min 1/2 z^T P z - q^T z  s.t.  J_k(z) >= 0`` (``z[:10n]``, the bodies) and
``z_e >= 0`` (``z[10n:]``, the bounded extras); no other linear rows, ``P`` positive definite.
``J: R^10 -> S^4`` is a bijection, so stationarity ``g = P z - q = C^T(Z, u)`` fixes each body's
dual, ``Z_k = J(G^-1 g_k)`` (``G_ij = tr(A_i A_j)``), and each extra's, ``u_e = g_e``.
With ``Pi`` the projection onto the PSD cone (eigenvalues clipped at 0), the other KKT
conditions ``J_k >= 0, Z_k >= 0, J_k Z_k = 0`` are (Moreau) the natural residual::

    F_k(z) = J_k(z) - Pi(W_k) = 0,    W_k = J_k(z) - sigma_k Z_k = J(w_k),
    w_k = z_k - sigma_k G^-1 (P z - q)_k        (sigma_k = 10 / tr(G^-1 P_kk) > 0)

``Pi`` is strongly semismooth: with ``W = Q diag(lam) Q^T``,
``dPi(W)[H] = Q (Omega o Q^T H Q) Q^T``, ``Omega_ab = (lam_a+ + lam_b+) / (|lam_a| + |lam_b|)``
(1 on the primal face, 0 on the dual face, in between across). In ``theta`` coordinates, with
``U_k`` (10, 16) the rows ``vec(Q_k^T A_i Q_k)`` and ``R_k = U_k diag(Omega_k) U_k^T``
(``0 <= R_k <= G``), Newton's equation times ``G`` is::

    G dz_k - R_k dw_k = -B vec(F_k),    dw_k = dz_k - sigma_k G^-1 (P dz)_k   (B: rows vec(A_i))

An extra is a 1x1 block of the same form (``G = 1``, ``A = 1``): ``F_e = z_e - max(v_e, 0)``,
``v_e = z_e - tau_e g_e`` (``tau_e = 1 / P_ee``), ``dF_e = dz_e - [v_e > 0] dv_e``. The whole
matrix is nonsingular whenever ``P > 0`` (similar to ``I - M + M P^`` with ``0 <= M <= I``,
``P^ > 0``). Each step re-decides every body's face and every bound (no rank guesses: a
primal-dual active-set method, Hintermueller, Ito, Kunisch 2002); convergence is quadratic near a
strictly complementary optimum. Nonmonotone Armijo backtracking on ``|F|^2`` globalises it (the
Newton direction has slope ``-2 |F|^2``; the sufficient decrease is measured from the largest of
the last :data:`NONMONOTONE_MEMORY` merits, Grippo, Lampariello, Lucidi 1986: ``|F|^2`` has kinks
where an eigenvalue or a ``v_e`` changes sign, along which monotone steps crawl). At ``F = 0``,
``Pi(W_k) >= 0`` and ``Z_k = -W_k- / sigma_k >= 0`` have ``Pi(W_k) Z_k = 0`` exactly and satisfy
stationarity (likewise ``max(v_e, 0)`` and ``u_e = max(-v_e, 0) / tau_e``): a KKT certificate,
so the result is THE optimum. Otherwise (no convergence, stalling) ``None``: the interior point
takes over.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
from scipy.linalg import lapack

from inertia_id_ros.core.inertia import PSEUDO_INERTIA_BASIS

_BASIS = PSEUDO_INERTIA_BASIS.reshape(10, 16)  # vec(J(theta)) = theta @ _BASIS
_GRAM = _BASIS @ _BASIS.T  # G_ij = tr(A_i A_j)
_GRAM_INV = np.linalg.inv(_GRAM)
_THETA = _GRAM_INV @ _BASIS  # theta(J) = _THETA @ vec(J)
MAX_ITERATIONS = 30
STALL_ITERATIONS = 3
"""Give up (the interior point takes over) after this many consecutive steps that each leave
``|F|`` above 90 % of the line search's reference (damped steps: ill-conditioned data, nearly
degenerate optimum)."""
NONMONOTONE_MEMORY = 3
"""Merits (``|F|^2`` of the last iterates) the line search's reference is the largest of."""
NEAR_TOLERANCE = 100.0
"""When round-off stops the line search, ``|F_k| <= NEAR_TOLERANCE * tol * |J_k|`` is accepted."""
FLOOR_RTOL = 1e-13
"""Round-off allowance of the returned eigenvalue floor, relative to the largest eigenvalue."""
_ARMIJO = 1e-4
_MIN_STEP = 1e-6


class NewtonResult(NamedTuple):
    """``z`` (d,) the projected primal (``lambda_min(J_k(z)) >= floor``, ``z[10n:] >= 0``),
    ``block_duals`` (n, 4, 4) the PSD duals, ``row_duals`` (d - 10n,) the bounds' duals
    (``>= 0``), ``iterations`` Newton steps."""

    z: np.ndarray
    block_duals: np.ndarray
    row_duals: np.ndarray
    iterations: int


def _eigh(W: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``np.linalg.eigh`` of (n, 4, 4); one block through LAPACK directly (half the cost)."""
    if W.shape[0] == 1:
        lam, Q, info = lapack.dsyevd(W[0])
        if info:
            raise np.linalg.LinAlgError(f"dsyevd failed (info {info})")
        return lam[None], Q[None]
    return np.linalg.eigh(W)


def _floored(size: np.ndarray) -> np.ndarray:
    """``size`` (k,) squared magnitudes floored at ``1e-24`` times their largest (and 1e-300)."""
    return np.maximum(size, max(1e-24 * size.max(initial=0.0), 1e-300))


class _State(NamedTuple):
    """The natural residual at an iterate ``z``: ``W_k``'s eigenvalues ``lam`` (n, 4) and
    vectors ``Q`` (n, 4, 4), ``v`` (m,), ``F`` (n, 16), ``F_e`` (m,), the squared residuals
    ``residual`` (n + m,) and the floored squared sizes ``size`` (n + m,) they are relative
    to."""

    lam: np.ndarray
    Q: np.ndarray
    v: np.ndarray
    F: np.ndarray
    F_e: np.ndarray
    residual: np.ndarray
    size: np.ndarray

    def converged(self, relative: float) -> bool:
        """Every residual within ``relative`` of its size."""
        return bool((self.residual / self.size).max(initial=0.0) <= relative * relative)


class _NaturalResidual:
    """The natural residual ``F(z)`` of the KKT conditions and its Newton steps (module
    docstring) for ``P`` (d, d) PD, ``q`` (d,), bodies in ``z[:10 n_bodies]``, bounded extras
    after; ``sigma`` (n,) and ``tau`` (m,) the step scales (positive)."""

    def __init__(
        self, P: np.ndarray, q: np.ndarray, n_bodies: int, sigma: np.ndarray, tau: np.ndarray
    ) -> None:
        n, nb, d = n_bodies, 10 * n_bodies, P.shape[0]
        m = d - nb
        diagonal = np.arange(n)
        P_rows = P[:nb].reshape(n, 10, d)
        self.n, self.nb, self.d, self.sigma, self.tau = n, nb, d, sigma, tau
        # w = z - sigma G^-1 (P z - q) = w_rows z + w_shift; vec(W_k) = B^T w_k
        self.w_rows = -(sigma[:, None, None] * _GRAM_INV) @ P_rows  # (n, 10, d)
        self.w_rows[:, :, :nb].reshape(n, 10, n, 10)[diagonal, :, diagonal, :] += np.eye(10)
        w_shift = (sigma[:, None] * q[:nb].reshape(n, 10)) @ _GRAM_INV
        self.w_map = (_BASIS.T @ self.w_rows).reshape(16 * n, d)
        self.w_map_shift = (w_shift @ _BASIS).ravel()
        # v = z_e - tau (P z - q)_e = v_rows z + v_shift
        self.v_rows = -tau[:, None] * P[nb:]
        self.v_rows[:, nb:][np.diag_indices(m)] += 1.0
        self.v_shift = tau * q[nb:]
        self.jacobian_base = np.zeros((d, d))  # rows of G dz_k and dz_e
        self.jacobian_base[:nb, :nb].reshape(n, 10, n, 10)[diagonal, :, diagonal, :] = _GRAM
        self.jacobian_base[nb:, nb:][np.diag_indices(m)] = 1.0

    @classmethod
    def of(cls, P: np.ndarray, q: np.ndarray, n_bodies: int) -> _NaturalResidual | None:
        """The residual of the problem ``P``, ``q``; ``None`` when a step scale is not positive
        (``P`` not positive definite on a body or an extra)."""
        n, nb = n_bodies, 10 * n_bodies
        diagonal = np.arange(n)
        P_rows = P[:nb].reshape(n, 10, P.shape[0])
        sigma = 10.0 / np.einsum(
            "ij,nij->n",
            _GRAM_INV,
            P_rows[:, :, :nb].reshape(n, 10, n, 10)[diagonal, :, diagonal, :],
        )
        tau = 1.0 / np.diagonal(P)[nb:]
        if not (np.all(sigma > 0) and np.all(tau > 0)):
            return None
        return cls(P, q, n_bodies, sigma, tau)

    def state(self, z: np.ndarray) -> _State:
        """The residual at ``z`` (d,)."""
        n, nb = self.n, self.nb
        J = z[:nb].reshape(n, 10) @ _BASIS
        lam, Q = _eigh((self.w_map @ z + self.w_map_shift).reshape(n, 4, 4))
        F = J.reshape(n, 4, 4) - (Q * np.maximum(lam, 0.0)[:, None, :]) @ Q.transpose(0, 2, 1)
        F = F.reshape(n, 16)
        v = self.v_rows @ z + self.v_shift
        z_e = z[nb:]
        F_e = z_e - np.maximum(v, 0.0)
        residual = np.concatenate([np.einsum("ni,ni->n", F, F), F_e * F_e])
        size = np.concatenate(
            [_floored(np.einsum("ni,ni->n", J, J)), _floored(np.maximum(z_e * z_e, v * v))]
        )
        return _State(lam, Q, v, F, F_e, residual, size)

    def direction(self, state: _State) -> np.ndarray | None:
        """Newton step ``dz`` (d,) at ``state`` (``None``: singular matrix)."""
        n, nb, d = self.n, self.nb, self.d
        lam, Q, v = state.lam, state.Q, state.v
        K = (Q[:, :, None, :, None] * Q[:, None, :, None, :]).reshape(n, 16, 16)
        U = _BASIS @ K  # (n, 10, 16): U[k, i] = vec(Q_k^T A_i Q_k)
        positive, magnitude = np.maximum(lam, 0.0), np.abs(lam)
        omega = (positive[:, :, None] + positive[:, None, :]) / np.maximum(
            magnitude[:, :, None] + magnitude[:, None, :], 1e-300
        )
        R = (U * omega.reshape(n, 1, 16)) @ U.transpose(0, 2, 1)
        # (G - R_k) dz_k + R_k [sigma G^-1 P dz]_k = G dz_k - R_k [dw]_k = -B vec(F_k),
        # dz_e - [v_e > 0] dv_e = -F_e
        jacobian = self.jacobian_base.copy()
        jacobian[:nb] -= (R @ self.w_rows).reshape(nb, d)
        jacobian[nb:] -= (v > 0.0)[:, None] * self.v_rows
        rhs = -np.concatenate([(state.F @ _BASIS.T).ravel(), state.F_e])
        _, _, dz, info = lapack.dgesv(jacobian, rhs, overwrite_a=True, overwrite_b=True)
        return None if info else dz

    def result(self, state: _State, floor: float, iterations: int) -> NewtonResult:
        """The certified result at ``state``: ``Pi(W_k)`` with eigenvalues raised to ``floor``
        (and :data:`FLOOR_RTOL`), ``max(v_e, 0)``, the duals."""
        n, lam, Q, v = self.n, state.lam, state.Q, state.v
        lifted = np.maximum(lam, floor + FLOOR_RTOL * np.maximum(lam.max(axis=1, keepdims=True), 0))
        positive = (Q * lifted[:, None, :]) @ Q.transpose(0, 2, 1)
        duals = (Q * (np.minimum(lam, 0.0) / -self.sigma[:, None])[:, None, :]) @ Q.transpose(
            0, 2, 1
        )
        z = np.concatenate([(positive.reshape(n, 16) @ _THETA.T).ravel(), np.maximum(v, 0.0)])
        return NewtonResult(
            z=z, block_duals=duals, row_duals=np.maximum(-v, 0.0) / self.tau, iterations=iterations
        )


def solve_newton_kkt(
    P: np.ndarray,
    q: np.ndarray,
    z0: np.ndarray,
    n_bodies: int,
    *,
    tol: float,
    floor: float = 0.0,
    max_iterations: int = MAX_ITERATIONS,
) -> NewtonResult | None:
    """Semismooth Newton from ``z0`` (d,) on ``P`` (d, d) PD, ``q`` (d,), bodies in
    ``z[:10 n_bodies]`` and bounded extras ``z[10 n_bodies:] >= 0``; a certified
    :class:`NewtonResult` once every ``|F_k| <= tol |J_k(z)|`` (Frobenius) and every
    ``|F_e| <= tol max(|z_e|, |v_e|)`` (then one more full step, kept if every ratio stays
    within ``NEAR_TOLERANCE * tol``), else ``None``.

    The returned ``J_k`` are ``Pi(W_k)`` with eigenvalues raised to ``floor`` plus a round-off
    allowance (:data:`FLOOR_RTOL` times the largest), so ``lambda_min(J_k) >= floor`` survives
    the conversion to ``theta``; the returned extras are ``max(v_e, 0)``.
    """
    system = _NaturalResidual.of(P, q, n_bodies)
    if system is None:
        return None
    z = np.array(z0, dtype=float)
    state = system.state(z)
    iterations = stalled = 0
    merits: list[float] = []
    while not state.converged(tol):
        if iterations == max_iterations or stalled == STALL_ITERATIONS:
            return None
        iterations += 1
        dz = system.direction(state)
        if dz is None:
            return None
        merit, alpha = state.residual.sum(), 1.0
        merits.append(merit)
        reference = max(merits[-NONMONOTONE_MEMORY:])
        trial: _State | None
        while True:  # Armijo: d|F|^2 / d alpha = -2 |F|^2 along the Newton direction
            trial = system.state(z + alpha * dz)
            if trial.residual.sum() <= reference - 2.0 * _ARMIJO * alpha * merit:
                break
            alpha *= 0.5
            if alpha < _MIN_STEP:  # round-off floor (or a failure)
                if state.converged(NEAR_TOLERANCE * tol):
                    trial = None
                    break
                return None
        if trial is None:
            break
        z = z + alpha * dz
        state = trial
        stalled = stalled + 1 if state.residual.sum() > 0.81 * reference else 0
    # one more full step, kept within the round-off allowance: near the solution it costs little
    # and pins the directions P barely determines (there |F| at its round-off floor, about
    # eps cond(P) |J|, allows a large error in z)
    dz = system.direction(state)
    if dz is not None:
        last = system.state(z + dz)
        if (last.residual / last.size).max(initial=0.0) <= (NEAR_TOLERANCE * tol) ** 2:
            z = z + dz
            state = last
            iterations += 1
    return system.result(state, floor, iterations)
