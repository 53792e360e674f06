"""Active-set Newton method on the KKT conditions with low-rank duals (``lmi`` fast, first try).

For the reduced problem ``min 1/2 z^T P z - q^T z  s.t.  J_k(z) >= 0`` (no linear rows), write
each body's dual ``Z_k = V_k V_k^T`` (``V_k``: 4 x r_k; Burer-Monteiro). Stationarity gives
``z(V) = z_u + P^-1 C^T(Z) = z_u + P^-1 a(V)`` with ``a(V)_{k,i} = tr(V_k^T A_i V_k)``; the dual
problem becomes the unconstrained ``min_V phi(V) = 1/2 (q + a(V))^T P^-1 (q + a(V))``, whose
gradient is ``2 F`` with ``F_k = J_k(z(V)) V_k`` (complementarity) and whose Hessian is
``2 dF/dV``; with the columns ``v_c`` of all ``V_k`` (body ``b(c)``)::

    dF_c/dv_c' = delta_cc' J_b(c)(z) + 2 G_c (P^-1)_{b(c) b(c')} G_c'^T,
    G_c = [A_0 v_c .. A_9 v_c]  (4 x 10)

Levenberg-Marquardt on ``phi`` (``V_k -> V_k O`` leaves ``Z_k`` unchanged, so the Hessian is
singular along those directions). The ranks start as the number of negative eigenvalues of
``J_k(z_u)`` (or a previous solution's dual ranks); near a stationary point, a remaining negative
eigenvalue of some ``J_k`` is a descent direction of ``phi`` (a saddle), and a column along it
is added. A result is accepted only with a certificate: ``F = 0`` and every ``J_k(z) >= 0`` to
round-off (``Z_k >= 0`` by construction), i.e. the KKT conditions hold, so it is THE optimum.
Otherwise it returns ``None`` and the interior point takes over.
"""

from __future__ import annotations

import numpy as np
import scipy.linalg

from inertia_id_ros.inertia import PSEUDO_INERTIA_BASIS

_BASIS = PSEUDO_INERTIA_BASIS.reshape(10, 16)
_A = PSEUDO_INERTIA_BASIS  # (10, 4, 4)
FEASIBILITY_RTOL = 1e-9
"""Round-off allowance of the certificate: ``lambda_min(J_k) >= -FEASIBILITY_RTOL * |J_k|``."""
RESIDUAL_RTOL = 1e-11
"""Complementarity accepted when ``|J_k V_k| <= RESIDUAL_RTOL * |J_k| |V_k|`` overall."""
ESCAPE_CHECK_RTOL = 1e-4
ESCAPE_RTOL = 1e-6
"""Once ``|F|`` is below ``ESCAPE_CHECK_RTOL`` (relative), eigenvalues of the ``J_k`` below
``-ESCAPE_RTOL |J_k|`` say the rank guess is too small: columns are added along them."""


def _blocks(z: np.ndarray, n_bodies: int) -> np.ndarray:
    return (z[:10 * n_bodies].reshape(n_bodies, 10) @ _BASIS).reshape(n_bodies, 4, 4)


def _start(eigvals: np.ndarray, eigvecs: np.ndarray, ranks: np.ndarray, owner_blocks,
           seed: tuple[np.ndarray, np.ndarray] | None) -> tuple[np.ndarray, np.ndarray]:
    """``(owners (c,), v (c, 4))``: the eigenvectors ``u_c`` of the ``r_k`` smallest eigenvalues
    ``lambda_c`` of each ``J_k(z_u)`` scaled by ``sqrt(eta_c)``, ``eta`` from the linearised
    complementarity ``sum_c' a(u_c)^T (P^-1)_{b(c) b(c')} a(u_c') eta_c' = -lambda_c``; or, where
    ``seed`` (a previous dual's eigenpairs) has them, its ``r_k`` dominant factors."""
    owners = np.repeat(np.arange(ranks.size), ranks)
    if owners.size == 0:
        return owners, np.zeros((0, 4))
    slots = np.concatenate([np.arange(r) for r in ranks])
    u = eigvecs[owners, :, slots]
    a = np.einsum("cb,ibd,cd->ci", u, _A, u)
    coupling = np.einsum("ci,cidj,dj->cd", a, owner_blocks(owners), a)
    eta = np.linalg.lstsq(coupling, -eigvals[owners, slots], rcond=None)[0]
    v = np.sqrt(np.maximum(eta, 0.0))[:, None] * u
    if seed is not None:
        dual_eigvals, dual_eigvecs = seed
        weights = np.maximum(dual_eigvals[owners, 3 - slots], 0.0)
        seeded = weights > 0
        v[seeded] = (np.sqrt(weights)[:, None] * dual_eigvecs[owners, :, 3 - slots])[seeded]
    return owners, v


def solve_low_rank_kkt(P_factor: tuple, q: np.ndarray, z_unconstrained: np.ndarray,
                       n_bodies: int, warm_duals: np.ndarray | None = None,
                       max_iterations: int = 40,
                       max_escapes: int = 4) -> tuple[np.ndarray, np.ndarray, int] | None:
    """``(z, block duals (n, 4, 4), iterations)`` with a KKT certificate, or ``None``.

    ``P_factor``: ``scipy.linalg.cho_factor`` of ``P`` (d, d); ``q`` (d,);
    ``z_unconstrained = P^-1 q``; ``warm_duals``: a previous solution's block duals (their ranks
    and factors seed ``V``). Levenberg-Marquardt on ``phi(V) = 1/2 (q + a(V))^T P^-1 (q + a(V))``,
    the negated dual function at ``Z = V V^T`` (gradient ``2 F``, Hessian ``2 dF/dV``).
    """
    d = z_unconstrained.size
    nb = 10 * n_bodies
    body_columns = np.zeros((d, nb))
    body_columns[np.arange(nb), np.arange(nb)] = 1.0
    inverse_columns = scipy.linalg.cho_solve(P_factor, body_columns, check_finite=False)
    inverse = inverse_columns[:nb].reshape(n_bodies, 10, n_bodies, 10)

    eigvals, eigvecs = np.linalg.eigh(_blocks(z_unconstrained, n_bodies))
    ranks = np.minimum((eigvals < 0).sum(axis=1), 3)
    seed = None
    if warm_duals is not None and warm_duals.shape == (n_bodies, 4, 4):
        dual_eigvals, dual_eigvecs = np.linalg.eigh(warm_duals)
        significant = dual_eigvals > 1e-9 * max(dual_eigvals.max(), 1e-300)
        ranks = np.maximum(ranks, np.minimum(significant.sum(axis=1), 3))
        seed = (dual_eigvals, dual_eigvecs)

    def owner_blocks(owners: np.ndarray) -> np.ndarray:
        """(c, 10, c, 10) blocks ``(P^-1)_{b(c) b(c')}``."""
        return inverse[owners][:, :, owners]

    owners, v = _start(eigvals, eigvecs, ranks, owner_blocks, seed)
    if owners.size == 0:
        return None
    escapes = 0
    blocks_inverse, column_inverse, rows = _column_data(owners, inverse, inverse_columns)
    z, J, phi = _state(v, q, z_unconstrained, column_inverse, rows, n_bodies)
    damping = None
    for iterations in range(1, max_iterations + 1):
        count = owners.size
        J_owner = J[owners]
        F = np.einsum("cbd,cd->cb", J_owner, v).ravel()
        scale = np.sqrt(np.max(np.sum(J_owner * J_owner, axis=(1, 2)))) * np.linalg.norm(v)
        residual = np.linalg.norm(F) / max(scale, 1e-300)
        if residual <= ESCAPE_CHECK_RTOL:
            eigvals, eigvecs = np.linalg.eigh(J)
            size = np.abs(eigvals).max(axis=1, keepdims=True)
            if residual <= RESIDUAL_RTOL and np.all(eigvals >= -FEASIBILITY_RTOL * size):
                duals = np.zeros((n_bodies, 4, 4))
                np.add.at(duals, owners, np.einsum("cb,cd->cbd", v, v))
                return z, duals, iterations
            negative = eigvals < -ESCAPE_RTOL * size
            if np.any(negative) and escapes < max_escapes:
                escapes += 1
                owners, v = _escape(owners, v, negative, eigvals, eigvecs, inverse)
                blocks_inverse, column_inverse, rows = _column_data(owners, inverse,
                                                                    inverse_columns)
                z, J, phi = _state(v, q, z_unconstrained, column_inverse, rows, n_bodies)
                damping = None
                continue
            if residual <= RESIDUAL_RTOL:
                return None  # converged to a point that is not a certified optimum
        G = np.einsum("ibd,cd->cbi", _A, v)  # (c, 4, 10): G_c = [A_i v_c]_i
        left = (G @ blocks_inverse.reshape(count, 10, 10 * count)).reshape(count, 4, count, 10)
        hessian4 = 2.0 * np.swapaxes(left, 1, 2) @ np.swapaxes(G, 1, 2)[None]  # (c, c', 4, 4)
        hessian4[np.arange(count), np.arange(count)] += J_owner
        hessian = np.swapaxes(hessian4, 1, 2).reshape(4 * count, 4 * count)
        if damping is None:
            damping = 1e-6 * max(float(np.max(np.abs(np.diag(hessian)))), 1e-300)
        while True:
            try:
                step = np.linalg.solve(hessian + damping * np.eye(4 * count), -F)
            except np.linalg.LinAlgError:
                step = None
            if step is not None:
                trial = v + step.reshape(count, 4)
                z_trial, J_trial, phi_trial = _state(trial, q, z_unconstrained, column_inverse,
                                                     rows, n_bodies)
                if phi_trial <= phi:
                    v, z, J, phi = trial, z_trial, J_trial, phi_trial
                    damping /= 3.0
                    break
            damping *= 4.0
            if damping > 1e20 * max(scale, 1e-300):
                return None
    return None


def _column_data(owners: np.ndarray, inverse: np.ndarray,
                 inverse_columns: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(P^-1 blocks (10c, 10c), P^-1 columns (d, 10c), z rows (10c,))`` of the columns' bodies."""
    count = owners.size
    rows = (10 * owners[:, None] + np.arange(10)).ravel()
    return (inverse[owners][:, :, owners].reshape(10 * count, 10 * count),
            inverse_columns[:, rows], rows)


def _state(v: np.ndarray, q: np.ndarray, z_unconstrained: np.ndarray, column_inverse: np.ndarray,
           rows: np.ndarray, n_bodies: int) -> tuple[np.ndarray, np.ndarray, float]:
    """``(z(V), J(z(V)) (n, 4, 4), phi(V))`` with ``phi = 1/2 (q + a)^T z``."""
    a_columns = np.einsum("cb,ibd,cd->ci", v, _A, v).ravel()
    z = z_unconstrained + column_inverse @ a_columns
    return z, _blocks(z, n_bodies), 0.5 * (q @ z + a_columns @ z[rows])


def _escape(owners: np.ndarray, v: np.ndarray, negative: np.ndarray, eigvals: np.ndarray,
            eigvecs: np.ndarray, inverse: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Add a column along each eigenvector of a negative eigenvalue (a descent direction of
    ``phi`` at this saddle), scaled to minimise ``phi`` along it alone (linearisation)."""
    new_owners, new_slots = np.nonzero(negative)
    u = eigvecs[new_owners, :, new_slots]
    a = np.einsum("cb,ibd,cd->ci", u, _A, u)
    curvature = np.einsum("ci,cij,cj->c", a, inverse[new_owners, :, new_owners], a)
    eta = -eigvals[new_owners, new_slots] / np.maximum(curvature, 1e-300)
    order = np.argsort(np.concatenate([owners, new_owners]), kind="stable")
    return (np.concatenate([owners, new_owners])[order],
            np.concatenate([v, np.sqrt(eta)[:, None] * u])[order])
