"""Small dense linear-algebra helpers shared by the methods."""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
from scipy.linalg import lapack

DEFAULT_REGULARIZATION = 1e-8
"""Rank-deficient data: ``regularization * max_i H_ii`` times the squared distance to a
reference (the prior, else 0) along the numerical null space of ``H`` (eigenvalues below
:data:`NULL_SPACE_RCOND` ``* lambda_max`` of ``H`` scaled to a unit diagonal, see
:func:`regularize_null_space`) is added to the objective, so the optimum is unique
(the optimal fit closest to the reference) and iterative methods do not drift. Directions the data
determine are not biased."""
NULL_SPACE_RCOND = 1e-10


def cholesky(matrix: np.ndarray) -> np.ndarray | None:
    """Lower Cholesky factor of symmetric ``matrix`` (n, n), or ``None`` if it is not positive
    definite. LAPACK directly: at these sizes scipy's wrappers cost more than the factorisation."""
    factor, info = lapack.dpotrf(matrix, lower=True)
    return factor if info == 0 else None


def cholesky_solve(factor: np.ndarray, rhs: np.ndarray) -> np.ndarray:
    """``matrix^-1 rhs`` (rhs (n,) or (n, k)) from ``factor = cholesky(matrix)``."""
    solution, info = lapack.dpotrs(factor, rhs, lower=True)
    if info:
        raise ValueError(f"dpotrs: illegal argument {-info}")
    return solution


def psd_solve(matrix: np.ndarray, rhs: np.ndarray, rcond: float) -> tuple[np.ndarray, int]:
    """Minimum-norm solution of ``matrix @ x = rhs`` for symmetric PSD ``matrix`` (n, n).

    Eigenvalues below ``rcond * lambda_max`` count as zero. Returns ``(x, numerical rank)``.
    """
    eigvals, eigvecs = np.linalg.eigh(matrix)
    cutoff = rcond * max(eigvals[-1], 0.0) if eigvals.size else 0.0
    keep = eigvals > cutoff
    if not np.any(keep):
        return np.zeros(matrix.shape[0]), 0
    v = eigvecs[:, keep]
    return v @ ((v.T @ rhs) / eigvals[keep]), int(keep.sum())


def psd_sqrt_factor(
    matrix: np.ndarray, rhs: np.ndarray, rcond: float
) -> tuple[np.ndarray, np.ndarray]:
    """``(R, z)`` with ``x^T M x - 2 rhs^T x = |R x - z|^2 - |z|^2`` for symmetric PSD ``M`` (n, n).

    ``R = diag(sqrt(lambda)) V^T`` from ``M = V diag(lambda) V^T`` (eigenvalues below
    ``rcond * lambda_max`` dropped to 0) and ``z = diag(lambda^-1/2) V^T rhs`` (``rhs`` is assumed
    in the range of ``M``, as ``Y^T y`` is in that of ``Y^T Y``).
    """
    eigvals, eigvecs = np.linalg.eigh(matrix)
    cutoff = rcond * max(eigvals[-1], 0.0) if eigvals.size else 0.0
    keep = eigvals > cutoff
    root = np.where(keep, np.sqrt(np.where(keep, eigvals, 1.0)), 0.0)
    projected = eigvecs.T @ rhs
    z = np.where(keep, projected / np.where(keep, root, 1.0), 0.0)
    return root[:, None] * eigvecs.T, z


class Regularized(NamedTuple):
    """Objective ``x^T H x - 2 b^T x + c`` after :func:`regularize_null_space`."""

    hessian: np.ndarray
    rhs: np.ndarray
    constant_shift: float
    x_unconstrained: np.ndarray
    null_space_dim: int


def regularize_null_space(
    hessian: np.ndarray, rhs: np.ndarray, reference: np.ndarray, regularization: float
) -> Regularized:
    """Add ``eps |V^T (x - reference)|^2`` (``V``: an orthonormal basis of the null space of
    ``H``, ``eps = regularization * max_i H_ii``; see :data:`DEFAULT_REGULARIZATION`) and return
    the unconstrained minimiser.

    The null space is decided on ``S = D^-1/2 H D^-1/2`` (``D`` the diagonal of ``H``; its
    eigenvalues below :data:`NULL_SPACE_RCOND` ``* lambda_max(S)``), so that the rank does not
    depend on the parameters' units: one heavily weighted parameter (a prior that holds it) does
    not make the others' small but genuine curvature look null. A Cholesky factor of ``S`` with
    well-balanced pivots (``min L_ii^2 >= NULL_SPACE_RCOND max L_ii^2``) means no null space (the
    common, fast case); otherwise the eigendecomposition decides."""
    diagonal = np.diag(hessian)
    root = np.sqrt(np.where(diagonal > 0.0, diagonal, 1.0))
    scaled = hessian / np.outer(root, root)
    factor = cholesky(scaled)
    if factor is not None:
        pivots = np.diag(factor) ** 2
        if pivots.min() >= NULL_SPACE_RCOND * pivots.max():
            return Regularized(hessian, rhs, 0.0, cholesky_solve(factor, rhs / root) / root, 0)
    eigvals, eigvecs = np.linalg.eigh(scaled)
    null = eigvals <= NULL_SPACE_RCOND * max(eigvals[-1], 0.0)
    v = np.linalg.qr(eigvecs[:, null] / root[:, None])[0]  # S's null space in x's units
    epsilon = regularization * max(float(diagonal.max(initial=0.0)), 1e-300)
    projected_reference = v.T @ reference
    hessian = hessian + epsilon * (v @ v.T)
    rhs = rhs + epsilon * (v @ projected_reference)
    factor = cholesky(hessian)
    x = cholesky_solve(factor, rhs) if factor is not None else psd_solve(hessian, rhs, 0.0)[0]
    return Regularized(
        hessian, rhs, float(epsilon * projected_reference @ projected_reference), x, int(null.sum())
    )
