"""Semismooth Newton (primal-dual active-set) method on the KKT conditions (``lmi`` fast).

Reduced problem ``min 1/2 z^T P z - q^T z  s.t.  J_k(z) >= 0`` (bodies only, no linear rows;
``P`` positive definite). ``J: R^10 -> S^4`` is a bijection, so stationarity
``g = P z - q = C^T(Z)`` fixes each body's dual: ``Z_k = J(G^-1 g_k)``, ``G_ij = tr(A_i A_j)``.
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

whose matrix is nonsingular whenever ``P > 0`` (similar to ``I - M + M P^`` with
``0 <= M <= I``, ``P^ > 0``). Each step re-decides every body's face (no rank guesses: a
primal-dual active-set method, Hintermueller, Ito, Kunisch 2002); convergence is quadratic near a
strictly complementary optimum. Armijo backtracking on ``|F|^2`` globalises it (the Newton
direction has slope ``-2 |F|^2``). At ``F = 0``, ``Pi(W_k) >= 0`` and ``Z_k = -W_k- / sigma_k >= 0``
have ``Pi(W_k) Z_k = 0`` exactly and satisfy stationarity: a KKT certificate, so the result is
THE optimum. Otherwise (no convergence, stalling) ``None``: the interior point takes over.
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
"""Give up (the interior point takes over) after this many consecutive steps that each reduce
``|F|`` by less than 10 % (damped steps: ill-conditioned data, nearly degenerate optimum)."""
NEAR_TOLERANCE = 100.0
"""When round-off stops the line search, ``|F_k| <= NEAR_TOLERANCE * tol * |J_k|`` is accepted."""
FLOOR_RTOL = 1e-13
"""Round-off allowance of the returned eigenvalue floor, relative to the largest eigenvalue."""
_ARMIJO = 1e-4
_MIN_STEP = 1e-6


class NewtonResult(NamedTuple):
    """``z`` (10n,) the projected primal (``lambda_min(J_k(z)) >= floor``), ``block_duals``
    (n, 4, 4) the PSD duals, ``iterations`` Newton steps."""

    z: np.ndarray
    block_duals: np.ndarray
    iterations: int


def _eigh(W: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``np.linalg.eigh`` of (n, 4, 4); one block through LAPACK directly (half the cost)."""
    if W.shape[0] == 1:
        lam, Q, info = lapack.dsyevd(W[0])
        if info:
            raise np.linalg.LinAlgError(f"dsyevd failed (info {info})")
        return lam[None], Q[None]
    return np.linalg.eigh(W)


def solve_newton_kkt(P: np.ndarray, q: np.ndarray, z0: np.ndarray, n_bodies: int, *,
                     tol: float, floor: float = 0.0,
                     max_iterations: int = MAX_ITERATIONS) -> NewtonResult | None:
    """Semismooth Newton from ``z0`` (10n,) on ``P`` (10n, 10n) PD, ``q`` (10n,); a certified
    :class:`NewtonResult` once every ``|F_k| <= tol |J_k(z)|`` (Frobenius), else ``None``.

    The returned ``J_k`` are ``Pi(W_k)`` with eigenvalues raised to ``floor`` plus a round-off
    allowance (:data:`FLOOR_RTOL` times the largest), so ``lambda_min(J_k) >= floor`` survives
    the conversion to ``theta``.
    """
    n, d = n_bodies, 10 * n_bodies
    diagonal = np.arange(n)
    P_rows = P.reshape(n, 10, d)
    sigma = 10.0 / np.einsum("ij,nij->n", _GRAM_INV, P_rows.reshape(n, 10, n, 10)[diagonal, :,
                                                                                    diagonal, :])
    if not np.all(sigma > 0):
        return None
    # w = z - sigma G^-1 (P z - q) = w_rows z + w_shift; vec(W_k) = B^T w_k
    w_rows = -(sigma[:, None, None] * _GRAM_INV) @ P_rows  # (n, 10, d)
    w_rows.reshape(n, 10, n, 10)[diagonal, :, diagonal, :] += np.eye(10)
    w_shift = (sigma[:, None] * q.reshape(n, 10)) @ _GRAM_INV
    w_map = (_BASIS.T @ w_rows).reshape(16 * n, d)
    w_map_shift = (w_shift @ _BASIS).ravel()
    gram_blocks = np.zeros((n, 10, n, 10))
    gram_blocks[diagonal, :, diagonal, :] = _GRAM
    gram_blocks = gram_blocks.reshape(d, d)

    def state(z: np.ndarray):
        """``(lam, Q, F, |F_k|^2, |J_k|^2)`` at ``z``."""
        J = z.reshape(n, 10) @ _BASIS
        lam, Q = _eigh((w_map @ z + w_map_shift).reshape(n, 4, 4))
        F = J.reshape(n, 4, 4) - (Q * np.maximum(lam, 0.0)[:, None, :]) @ Q.transpose(0, 2, 1)
        F = F.reshape(n, 16)
        return lam, Q, F, np.einsum("ni,ni->n", F, F), np.einsum("ni,ni->n", J, J)

    def converged(relative: float) -> bool:
        scale = np.maximum(size, max(1e-24 * size.max(), 1e-300))
        return (residual / scale).max() <= relative * relative

    z = np.array(z0, dtype=float)
    lam, Q, F, residual, size = state(z)
    iterations = stalled = 0
    while not converged(tol):
        if iterations == max_iterations or stalled == STALL_ITERATIONS:
            return None
        iterations += 1
        K = (Q[:, :, None, :, None] * Q[:, None, :, None, :]).reshape(n, 16, 16)
        U = _BASIS @ K  # (n, 10, 16): U[k, i] = vec(Q_k^T A_i Q_k)
        positive, magnitude = np.maximum(lam, 0.0), np.abs(lam)
        omega = ((positive[:, :, None] + positive[:, None, :])
                 / np.maximum(magnitude[:, :, None] + magnitude[:, None, :], 1e-300))
        R = (U * omega.reshape(n, 1, 16)) @ U.transpose(0, 2, 1)
        # Newton: (G - R_k) dz_k + R_k [sigma G^-1 P dz]_k = G dz_k - R_k [dw]_k = -B vec(F_k)
        jacobian = gram_blocks - (R @ w_rows).reshape(d, d)
        _, _, dz, info = lapack.dgesv(jacobian, -(F @ _BASIS.T).ravel(), overwrite_a=True)
        if info:
            return None
        merit, alpha = residual.sum(), 1.0
        while True:  # Armijo: d|F|^2 / d alpha = -2 |F|^2 along the Newton direction
            trial = state(z + alpha * dz)
            if trial[3].sum() <= (1.0 - 2.0 * _ARMIJO * alpha) * merit:
                break
            alpha *= 0.5
            if alpha < _MIN_STEP:  # round-off floor (or a failure)
                if converged(NEAR_TOLERANCE * tol):
                    trial = None
                    break
                return None
        if trial is None:
            break
        z = z + alpha * dz
        lam, Q, F, residual, size = trial
        stalled = stalled + 1 if residual.sum() > 0.81 * merit else 0
    lifted = np.maximum(lam, floor + FLOOR_RTOL * np.maximum(lam.max(axis=1, keepdims=True), 0))
    positive = (Q * lifted[:, None, :]) @ Q.transpose(0, 2, 1)
    duals = (Q * (np.minimum(lam, 0.0) / -sigma[:, None])[:, None, :]) @ Q.transpose(0, 2, 1)
    return NewtonResult(z=(positive.reshape(n, 16) @ _THETA.T).ravel(), block_duals=duals,
                        iterations=iterations)
