"""Primal-dual interior-point method for the LMI-constrained least squares (``lmi`` fast).

Reduced problem, after the unconstrained parameters are eliminated (Schur complement)::

    minimise    1/2 z^T P z - q^T z
    subject to  S_k = J(z[10k:10k+10]) in S^4_+     (one 4x4 PSD block per body)
                s = G z >= 0                        (ellipsoid rows and non-negative entries)

Mehrotra predictor-corrector with Nesterov-Todd scaling and an infeasible start (the slacks
``S, s`` are iterates with primal residual ``S - C(z)``), as in Vandenberghe's "The CVXOPT linear
and quadratic cone program solvers" (2010), specialised to 4x4 blocks (batched numpy). With
``C(z) = (J(theta_k))_k, G z`` and duals ``(Z, w)``: the KKT conditions are
``P z - q - C^T(Z, w) = 0``, ``S = C(z)``, ``S Z = 0``, ``s w = 0``. The Newton system reduces to
``(P + C^T W C) dz = rhs`` with ``W(X) = W_nt^-1 X W_nt^-1`` (blocks) and ``w / s`` (rows).

Size: solve_cone_qp is one interior-point loop of about 140 lines; split, each iteration's state
(scaling, factor, residuals, directions) would pass between the steps in a dozen arguments.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from inertia_id_ros.core.inertia import PSEUDO_INERTIA_BASIS
from inertia_id_ros.solvers._linalg import cholesky, cholesky_solve

_BASIS = PSEUDO_INERTIA_BASIS.reshape(10, 16)  # J(theta).ravel() = theta @ _BASIS
_STEP_FRACTION = 0.99
NEAR_TOLERANCE = 100.0
"""When round-off stops the iterations (a factorisation fails), the result counts as solved if
the stopping criteria hold with ``NEAR_TOLERANCE * tol``."""


@dataclass
class ConeProblem:
    """Reduced problem data: ``P`` (d, d) PSD, ``q`` (d,), ``n_blocks`` bodies in ``z[:10 n]``,
    ``rows`` (m, d) linear inequalities ``rows @ z >= 0``."""

    P: np.ndarray
    q: np.ndarray
    n_blocks: int
    rows: np.ndarray

    @property
    def degree(self) -> int:
        """Barrier degree: 4 per block plus one per row."""
        return 4 * self.n_blocks + self.rows.shape[0]

    def blocks(self, z: np.ndarray) -> np.ndarray:
        """(n, 4, 4) pseudo-inertias ``J(theta_k)`` of ``z``."""
        n = self.n_blocks
        return (z[: 10 * n].reshape(n, 10) @ _BASIS).reshape(n, 4, 4)

    def adjoint(self, blocks: np.ndarray, row_duals: np.ndarray) -> np.ndarray:
        """``C^T(Z, w)`` (d,): ``tr(A_i Z_k)`` on the bodies' entries plus ``rows^T w``."""
        n = self.n_blocks
        out = self.rows.T @ row_duals
        out[: 10 * n] += (blocks.reshape(n, 16) @ _BASIS.T).ravel()
        return out


@dataclass
class IPResult:
    """Interior-point outcome: primal ``z``, duals ``(Z, w)``, convergence flag and counters."""

    z: np.ndarray
    block_duals: np.ndarray
    row_duals: np.ndarray
    converged: bool
    status: str
    iterations: int
    gap: float


_Direction = tuple[
    np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray, float
]
"""A search direction of :func:`solve_cone_qp`: ``(dz, dS, ds, dZ, dw, dS_scaled, dZ_scaled,
step limit)``."""


def _block_step_limit(lam: np.ndarray, d_scaled: np.ndarray) -> float:
    """Largest ``a`` with ``diag(lam_k) + a d_k >= 0`` for every block: ``lam`` (b, 4),
    ``d_scaled`` (b, 4, 4) (primal and dual directions stacked)."""
    if lam.size == 0:
        return np.inf
    r = 1.0 / np.sqrt(lam)
    lowest = np.linalg.eigvalsh(r[:, :, None] * d_scaled * r[:, None, :])[:, 0].min()
    return -1.0 / lowest if lowest < 0 else np.inf


def _row_step_limit(value: np.ndarray, step: np.ndarray) -> float:
    """Largest ``a`` with ``value + a step >= 0`` (1-D arrays)."""
    negative = step < 0
    return float(np.min(-value[negative] / step[negative])) if np.any(negative) else np.inf


def _block_index(n: int) -> tuple[np.ndarray, np.ndarray]:
    """Row/column indices (n, 10, 10) of the bodies' diagonal blocks in a (d, d) matrix."""
    base = 10 * np.arange(n)[:, None, None]
    rows = base + np.arange(10)[None, :, None]
    cols = base + np.arange(10)[None, None, :]
    return np.broadcast_to(rows, (n, 10, 10)), np.broadcast_to(cols, (n, 10, 10))


def _transpose(blocks: np.ndarray) -> np.ndarray:
    return np.swapaxes(blocks, 1, 2)


def solve_cone_qp(
    problem: ConeProblem,
    z0: np.ndarray,
    block_duals0: np.ndarray | None,
    row_duals0: np.ndarray | None,
    *,
    z_unconstrained: np.ndarray,
    tol: float,
    max_iterations: int,
    warm: bool,
) -> IPResult:
    """Run the interior-point method from ``z0`` (d,) and optional duals.

    ``z0`` may violate the constraints (infeasible start): the slacks start at ``C(z0)`` shifted
    into the interior. Stops when the duality gap ``<S, Z> + s.w`` is ``<= tol`` times the
    objective's excess over its unconstrained minimum (at ``z_unconstrained``; floored at
    ``tol**1.5`` times that minimum's magnitude) and the primal/dual residuals are ``<= tol``
    relative (see :data:`NEAR_TOLERANCE`), or after ``max_iterations``. ``warm``: ``z0`` and the
    duals are a previous
    solution's (smaller interior shifts).
    """
    n, m = problem.n_blocks, problem.rows.shape[0]
    P, q, rows = problem.P, problem.q, problem.rows
    nu = problem.degree
    z = z0.copy()
    S, s = _interior_slacks(problem.blocks(z), rows @ z, warm)
    Z, w = _interior_duals(problem, S, s, block_duals0, row_duals0, warm)
    block_rows, block_cols = _block_index(n)
    eye4 = np.eye(4)
    q_norm = 1.0 + np.linalg.norm(q)
    Pz_u = P @ z_unconstrained
    f_min = 0.5 * z_unconstrained @ Pz_u - q @ z_unconstrained
    gap_floor = tol**1.5 * abs(f_min)
    status, converged, gap = "max_iterations", False, np.inf
    iterations = 0
    for iterations in range(max_iterations + 1):
        Cz, Gz = problem.blocks(z), rows @ z
        rp_blocks, rp_rows = S - Cz, s - Gz
        Pz = P @ z
        rd = Pz - q - problem.adjoint(Z, w)
        gap = float(np.vdot(S, Z) + s @ w)
        excess = 0.5 * z @ Pz - q @ z - f_min
        primal_scale = 1.0 + np.sqrt(np.vdot(Cz, Cz) + Gz @ Gz)
        primal_residual = np.sqrt(np.vdot(rp_blocks, rp_blocks) + rp_rows @ rp_rows)
        dual_residual = np.linalg.norm(rd)
        if (
            gap <= tol * excess + gap_floor
            and primal_residual <= tol * primal_scale
            and dual_residual <= tol * q_norm
        ):
            status, converged = "solved", True
            break
        # round-off may end the iterations just short of tol: accept NEAR_TOLERANCE * tol then
        nearly = (
            gap <= NEAR_TOLERANCE * (tol * excess + gap_floor)
            and primal_residual <= NEAR_TOLERANCE * tol * primal_scale
            and dual_residual <= NEAR_TOLERANCE * tol * q_norm
        )
        if iterations == max_iterations:
            break
        mu = gap / nu
        try:  # Nesterov-Todd scaling: R^-1 S R^-T = R^T Z R = diag(lam)
            factors = np.linalg.cholesky(np.concatenate([S, Z]))
            Ls, Lz = factors[:n], factors[n:]
            U, lam, Vt = np.linalg.svd(_transpose(Lz) @ Ls)
        except np.linalg.LinAlgError:
            status, converged = ("solved", True) if nearly else ("numerical_limit", False)
            break
        inv_sqrt_lam = 1.0 / np.sqrt(lam)
        R = Ls @ (_transpose(Vt) * inv_sqrt_lam[:, None, :])
        Rit = Lz @ (U * inv_sqrt_lam[:, None, :])  # R^-T
        Ri = _transpose(Rit)
        Winv = Rit @ Ri
        kron = (Winv[:, :, None, :, None] * Winv[:, None, :, None, :]).reshape(n, 16, 16)
        if m:
            w_over_s = w / s
            K = P + (rows.T * w_over_s) @ rows
        else:
            w_over_s = w
            K = P.copy()
        K[block_rows, block_cols] += _BASIS @ kron @ _BASIS.T
        factor = cholesky(K)
        if factor is None:
            status, converged = ("solved", True) if nearly else ("numerical_limit", False)
            break
        lam_sum = lam[:, :, None] + lam[:, None, :]
        Wrp_blocks = Winv @ rp_blocks @ Winv
        rp_rows_scaled = w_over_s * rp_rows
        lam2 = np.concatenate([lam, lam])

        def direction(c_blocks: np.ndarray, c_rows: np.ndarray) -> _Direction:
            T_blocks = Rit @ (2.0 * c_blocks / lam_sum) @ Ri
            T_rows = c_rows / s
            rhs = -rd + problem.adjoint(T_blocks + Wrp_blocks, T_rows + rp_rows_scaled)
            dz = cholesky_solve(factor, rhs)
            dS = problem.blocks(dz) - rp_blocks
            dZ = T_blocks - Winv @ dS @ Winv
            dS_scaled = Ri @ dS @ Rit  # R^-1 dS R^-T
            dZ_scaled = _transpose(R) @ dZ @ R
            limit = _block_step_limit(lam2, np.concatenate([dS_scaled, dZ_scaled]))
            if m:
                ds = rows @ dz - rp_rows
                dw = T_rows - w_over_s * ds
                limit = min(limit, _row_step_limit(s, ds), _row_step_limit(w, dw))
            else:
                ds = dw = rp_rows
            return dz, dS, ds, dZ, dw, dS_scaled, dZ_scaled, limit

        lam_sq = lam * lam
        dz, dS, ds, dZ, dw, dS_a, dZ_a, limit = direction(-lam_sq[:, :, None] * eye4, -s * w)
        alpha = min(1.0, limit)
        mu_affine = (
            np.vdot(S + alpha * dS, Z + alpha * dZ) + (s + alpha * ds) @ (w + alpha * dw)
        ) / nu
        sigma = float(np.clip(mu_affine / mu, 0.0, 1.0) ** 3) if mu > 0 else 0.0
        product = dS_a @ dZ_a
        c_blocks = (sigma * mu - lam_sq)[:, :, None] * eye4 - 0.5 * (product + _transpose(product))
        c_rows = sigma * mu - s * w - ds * dw
        dz, dS, ds, dZ, dw, _, _, limit = direction(c_blocks, c_rows)
        alpha = min(1.0, _STEP_FRACTION * limit)
        z += alpha * dz
        S = S + alpha * dS
        Z = Z + alpha * dZ
        S = 0.5 * (S + _transpose(S))
        Z = 0.5 * (Z + _transpose(Z))
        if m:
            s = s + alpha * ds
            w = w + alpha * dw
    return IPResult(
        z=z,
        block_duals=Z,
        row_duals=w,
        converged=converged,
        status=status,
        iterations=iterations,
        gap=gap,
    )


def _interior_slacks(
    blocks: np.ndarray, values: np.ndarray, warm: bool
) -> tuple[np.ndarray, np.ndarray]:
    """Slacks ``C(z0)`` shifted so each block's / row's smallest value is a fraction of its size."""
    if blocks.shape[0]:
        eigs = np.linalg.eigvalsh(blocks)
        size = np.maximum(np.abs(eigs).max(axis=1), 1e-6)
        target = (1e-4 if warm else 1e-1) * size
        shift = np.maximum(target - eigs[:, 0], 0.0)
        blocks = blocks + shift[:, None, None] * np.eye(4)
    if values.size:
        size = np.maximum(np.abs(values), 1e-6)
        values = np.maximum(values, (1e-4 if warm else 1e-1) * size)
    return blocks, values


def _interior_duals(
    problem: ConeProblem,
    S: np.ndarray,
    s: np.ndarray,
    block_duals: np.ndarray | None,
    row_duals: np.ndarray | None,
    warm: bool,
) -> tuple[np.ndarray, np.ndarray]:
    """Dual starting point: the previous duals made interior, else ``zeta 1`` with ``zeta``
    such that ``<S, Z>`` matches the objective curvature over the primal shift."""
    n, m = problem.n_blocks, problem.rows.shape[0]
    curvature = max(np.trace(problem.P) / max(problem.P.shape[0], 1), 1e-300)
    if warm and block_duals is not None and block_duals.shape == (n, 4, 4):
        eigs = np.linalg.eigvalsh(block_duals) if n else np.zeros((0, 4))
        size = np.maximum(np.abs(eigs).max(axis=1, initial=0.0), 1e-12 * curvature)
        shift = np.maximum(1e-4 * size - eigs[:, 0], 0.0) if n else np.zeros(0)
        Z = block_duals + shift[:, None, None] * np.eye(4)
    else:
        scale = np.linalg.eigvalsh(S)[:, -1] if n else np.zeros(0)
        Z = (curvature * np.maximum(scale, 1e-6))[:, None, None] * np.eye(4)
    if warm and row_duals is not None and row_duals.shape == (m,):
        w = np.maximum(row_duals, 1e-4 * np.maximum(np.abs(row_duals).max(initial=0.0), 1e-12))
    else:
        w = curvature * np.maximum(s, 1e-6)
    return Z, w
