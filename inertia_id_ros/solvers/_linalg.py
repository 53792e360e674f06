"""Small dense linear-algebra helpers shared by the methods."""

from __future__ import annotations

import numpy as np


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


def psd_sqrt_factor(matrix: np.ndarray, rhs: np.ndarray,
                    rcond: float) -> tuple[np.ndarray, np.ndarray]:
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
