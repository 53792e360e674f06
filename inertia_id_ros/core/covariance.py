"""Uncertainty of identified inertial parameters: covariance of ``x = [theta, extras]`` and of
derived quantities (COM, inertia about the COM), confidence ellipsoids.

Model (one sample ``i``, ``r`` channels: a wrench's 6 components): ``f_i = Y_i x + e_i`` with
``e_i`` zero-mean, independent across samples and channels, channel ``c`` of variance
``sigma_c^2``. The force and torque channels of an F/T sensor differ by orders of magnitude
(default simulator: 0.1 N vs 0.005 N m), so one pooled variance would misstate every parameter's
uncertainty (the mass, seen through the force rows, and the first moments, mostly through the
torque rows). The estimator minimises the *unweighted* ``||Y x - f||^2``; its covariance is the
sandwich ::

    Cov(x) = G^+ (sum_c sigma_c^2 G_c) G^+,    G_c = sum_i Y_i[c]^T Y_i[c],   G = sum_c G_c,

with ``sigma_c^2 = ||Y[c] x - f[c]||^2 / (N - p / r)`` the residual variance of channel ``c``
(:class:`ChannelNormalEquations` holds the per-channel normal equations; summed they are the
problem's). ``G^+`` is the pseudo-inverse on the *identifiable subspace*: the eigenvectors of the
Jacobi-scaled gram ``D G D`` (``D = diag(G)^(-1/2)``, so columns of different units compare) with
eigenvalues above ``rcond`` times the largest; directions below carry no variance and are counted
in :attr:`ParameterCovariance.rank`.

Constrained estimates (every method but ``ols``: ``J(theta) >= 0``): when the optimum lies on the
boundary of the PSD cone, ``J(theta)`` has (near-)zero eigenvalues with eigenvectors ``U``; to first
order the estimate is then the least-squares estimate constrained to ``U^T J(theta) U = 0``, a
linear constraint ``A x = 0`` (rows ``u_a^T A_i u_b``, ``A_i`` the
:data:`~inertia_id_ros.core.inertia.PSEUDO_INERTIA_BASIS`).
Its covariance is ``P Cov(x) P^T`` with ``P = 1 - G^+ A^T (A G^+ A^T)^+ A`` the projection of
the (``G``-metric) least squares onto the tangent of the active constraints: the directions that
would leave the cone carry no variance, the others keep theirs. This is local and costs
microseconds (a residual bootstrap re-solves the problem tens of times: too slow for an online
node at several Hz); its limit: when the truth itself lies on the boundary, the estimate sits on it
only part of the time, and the projected covariance understates the spread along the normal (the
tangent directions are right). Interior optima (any body with volume, ``lambda_min(J) > 0``) keep
the unconstrained covariance unchanged. Monte-Carlo check: ``test/unit/core/test_covariance.py``.

**Errors correlated in time** (``block_scores``): a model's error along a motion (the link
model a payload from joint torques subtracts, :mod:`inertia_id_ros.chain.payload_from_torques`) is
smooth, not white, and the sandwich above then understates the spread by far (on a simulated
Panda with its URDF's links 10 % off, a mass standard error of 0.2 % for an error of 50 %). Split
the samples into ``B`` consecutive blocks, longer than the error's correlation, and use the sums of
each block's scores ``s_b = sum_{i in b} Y_i^T (f_i - Y_i x)`` (p,) for the meat instead
(the cluster-robust sandwich)::

    Cov(x) = G^+ (B / (B - 1) sum_b s_b s_b^T) G^+

Unbiased for white noise too, but noisier (``B`` terms): use it where model error is expected.

Not modelled: noise correlated across channels or in time (e.g. by the derivative filter) unless
``block_scores`` are given, and errors in the regressor (joint-state noise) beyond their share of
the residual.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy as np
from scipy.spatial.transform import Rotation

from inertia_id_ros.core.inertia import (
    N_BODY_PARAMS,
    PSEUDO_INERTIA_BASIS,
    inertia_from_theta,
    inertia_to_msg_order,
    pseudo_inertia,
)

IDENTIFIABLE_RCOND = 1e-10
"""Eigenvalues of the Jacobi-scaled gram below this fraction of the largest span the
unidentifiable subspace (no variance is reported along it)."""
ACTIVE_EIG_REL_TOL = 1e-6
"""Eigenvalues of ``J(theta)`` at most this fraction of its largest are active constraints."""
_INERTIA_INDEX = {(0, 0): 4, (0, 1): 5, (1, 1): 6, (0, 2): 7, (1, 2): 8, (2, 2): 9}
"""``theta`` index of the entry ``(i, j)`` (``i <= j``) of the inertia about the origin."""
_MSG_ORDER = ((0, 0), (0, 1), (0, 2), (1, 1), (1, 2), (2, 2))
"""Entries ``(i, j)`` of a 3x3 inertia in ``geometry_msgs/Inertia`` order
``[ixx, ixy, ixz, iyy, iyz, izz]``."""


def _added(arrays: Iterable[np.ndarray]) -> np.ndarray:
    """The sum of equally shaped ``arrays``, added in order from zero (as ``sum`` does)."""
    total = np.zeros(())
    for array in arrays:
        total = total + array
    return total


@dataclass(frozen=True)
class ChannelNormalEquations:
    """Normal equations of each measurement channel separately, over ``n_samples`` samples of
    ``r`` channels and ``p`` parameters: ``gram`` (r, p, p) ``G_c = sum_i Y_i[c]^T Y_i[c]``,
    ``moment`` (r, p) ``Y[c]^T f[c]``, ``yty`` (r,) ``f[c]^T f[c]``. ``rows_per_channel`` (r,):
    a channel may be a group of rows sharing one noise variance (a whole-body sensor's three
    force rows), ``Y_i[c]`` then has that many rows per sample (``None``: one each)."""

    gram: np.ndarray
    moment: np.ndarray
    yty: np.ndarray
    n_samples: int
    rows_per_channel: np.ndarray | None = None

    @property
    def channel_rows(self) -> np.ndarray:
        """(r,) rows per sample of each channel (ones unless ``rows_per_channel``)."""
        if self.rows_per_channel is None:
            return np.ones(self.n_channels, dtype=int)
        return np.asarray(self.rows_per_channel, dtype=int)

    @classmethod
    def from_samples(cls, Y: np.ndarray, f: np.ndarray) -> ChannelNormalEquations:
        """From regressors ``Y`` (N, r, p) and measurements ``f`` (N, r) (views are fine); one
        pass over the data, as many flops as the stacked ``Y^T Y``."""
        Y = np.asarray(Y, dtype=float)
        f = np.asarray(f, dtype=float)
        if Y.ndim != 3 or f.shape != Y.shape[:2]:
            raise ValueError(f"need Y (N, r, p) and f (N, r), got {Y.shape} and {f.shape}")
        gram = channel_grams(Y)
        moment = np.einsum("ncp,nc->cp", Y, f)
        yty = np.einsum("nc,nc->c", f, f)
        return cls(gram=gram, moment=moment, yty=yty, n_samples=int(Y.shape[0]))

    @classmethod
    def summed(cls, parts: Sequence[ChannelNormalEquations]) -> ChannelNormalEquations:
        """The normal equations of the samples of all ``parts`` (same channels and parameters)."""
        return cls(
            gram=_added(part.gram for part in parts),
            moment=_added(part.moment for part in parts),
            yty=_added(part.yty for part in parts),
            n_samples=sum(part.n_samples for part in parts),
            rows_per_channel=parts[0].rows_per_channel,
        )

    def select(self, columns: Sequence[int] | np.ndarray) -> ChannelNormalEquations:
        """The normal equations of the regressor's ``columns`` (k,) alone: ``Y[c][:, columns]``."""
        columns = np.asarray(columns, dtype=int)
        return ChannelNormalEquations(
            gram=self.gram[:, columns[:, None], columns],
            moment=self.moment[:, columns],
            yty=self.yty,
            n_samples=self.n_samples,
            rows_per_channel=self.rows_per_channel,
        )

    @property
    def n_channels(self) -> int:
        """``r``, the rows per sample."""
        return self.gram.shape[0]

    @property
    def n_params(self) -> int:
        """``p``, the columns of the regressor."""
        return self.gram.shape[1]

    def total(self) -> tuple[np.ndarray, np.ndarray, float, int]:
        """``(Y^T Y (p, p), Y^T f (p,), f^T f, rows)`` of all channels stacked (the
        :class:`~inertia_id_ros.solvers.Problem` fields ``gram, moment, yty, n_rows``)."""
        return (
            self.gram.sum(axis=0),
            self.moment.sum(axis=0),
            float(self.yty.sum()),
            self.n_samples * int(self.channel_rows.sum()),
        )

    def squared_residuals(self, x: np.ndarray) -> np.ndarray:
        """(r,) ``||Y[c] x - f[c]||^2`` per channel (clipped at 0 against round-off)."""
        x = np.asarray(x, dtype=float)
        values = np.einsum("p,cpq,q->c", x, self.gram, x) - 2.0 * self.moment @ x + self.yty
        return np.clip(values, 0.0, None)


@dataclass(frozen=True)
class ParameterCovariance:
    """Covariance of an estimate ``x`` (p,) (``theta`` of each body, then the extras).

    ``matrix`` (p, p) (SI units of ``x`` squared); ``channel_variance`` (r,) residual variance of
    each channel (N^2, (N m)^2); ``rank``: dimension of the identifiable subspace (``p`` when all
    parameters are identifiable); ``condition_number`` of the Jacobi-scaled regressor (excitation:
    ``sqrt`` of the scaled gram's eigenvalue ratio, ``inf`` if rank-deficient);
    ``active_constraints``: independent constraint directions projected out (0 for an interior
    optimum).
    """

    matrix: np.ndarray
    channel_variance: np.ndarray
    rank: int
    condition_number: float
    active_constraints: int

    def theta(self, body: int = 0) -> np.ndarray:
        """(10, 10) covariance of body ``body``'s ``theta``."""
        s = slice(N_BODY_PARAMS * body, N_BODY_PARAMS * (body + 1))
        return self.matrix[s, s].copy()


def active_constraint_rows(theta: np.ndarray, rel_tol: float = ACTIVE_EIG_REL_TOL) -> np.ndarray:
    """(k, 10) rows ``a`` with ``a . delta = u_a^T J(delta) u_b`` for the eigenvectors ``u`` of
    ``J(theta)`` whose eigenvalues are at most ``rel_tol`` times the largest (all pairs
    ``a <= b``): ``a . delta = 0`` keeps the zero eigenvalues zero to first order. (0, 10) for an
    interior point."""
    eigenvalues, vectors = np.linalg.eigh(pseudo_inertia(theta))
    active = vectors[:, eigenvalues <= rel_tol * max(eigenvalues[-1], 0.0)]
    rows = [
        np.einsum("i,kij,j->k", active[:, a], PSEUDO_INERTIA_BASIS, active[:, b])
        for a in range(active.shape[1])
        for b in range(a, active.shape[1])
    ]
    return np.array(rows).reshape(-1, N_BODY_PARAMS)


def _pinv_psd(matrix: np.ndarray, rcond: float) -> tuple[np.ndarray, int, np.ndarray]:
    """Pseudo-inverse of a symmetric PSD matrix on the span of its eigenvalues above ``rcond``
    times the largest, that span's dimension, and the eigenvalues (ascending)."""
    eigenvalues, vectors = np.linalg.eigh(0.5 * (matrix + matrix.T))
    keep = eigenvalues > rcond * max(eigenvalues[-1], 0.0)
    kept = vectors[:, keep]
    return (kept / eigenvalues[keep]) @ kept.T, int(keep.sum()), eigenvalues


def block_scores(
    blocks: Sequence[ChannelNormalEquations], x: np.ndarray, weights: np.ndarray | None = None
) -> np.ndarray:
    """(B, p) each block's score ``s_b = sum_c w_c (Y_b[c]^T f_b[c] - G_b[c] x)`` at the estimate
    ``x`` (p,), from the normal equations of ``B`` consecutive blocks of samples (``weights``
    (r,): the channels' ``w_c``, default 1), for :func:`parameter_covariance`."""
    x = np.asarray(x, dtype=float)
    out = []
    for block in blocks:
        w = np.ones(block.n_channels) if weights is None else np.asarray(weights, dtype=float)
        out.append(w @ (block.moment - block.gram @ x))
    return np.array(out).reshape(len(out), x.size)


def parameter_covariance(
    channels: ChannelNormalEquations,
    x: np.ndarray,
    n_bodies: int = 1,
    constrained: bool = True,
    rcond: float = IDENTIFIABLE_RCOND,
    active_tol: float = ACTIVE_EIG_REL_TOL,
    weights: np.ndarray | None = None,
    scores: np.ndarray | None = None,
) -> ParameterCovariance:
    """Covariance of the least-squares estimate ``x`` (p,) of the problem ``channels`` (see the
    module docstring): per-channel residual variances, sandwich on the identifiable subspace and,
    if ``constrained`` (the method enforced ``J(theta_k) >= 0``), projected onto the tangent of
    the active constraints of each of the ``n_bodies`` bodies (``theta_k = x[10k:10k+10]``).

    ``weights`` (r,): the estimate minimised the weighted ``sum_c w_c ||Y[c] x - f[c]||^2``
    (:mod:`inertia_id_ros.core.weighting`); the sandwich follows it,
    ``G_w^+ (sum_c w_c^2 sigma_c^2 G_c) G_w^+`` with ``G_w = sum_c w_c G_c`` (with
    ``w_c = 1 / sigma_c^2`` this is ``G_w^+`` up to the weights' normalisation). ``scores``
    (B, p >= 2 blocks, :func:`block_scores`): the meat from consecutive blocks of samples instead
    of the channels' variances (errors correlated in time, see the module docstring)."""
    x = np.asarray(x, dtype=float)
    r, p = channels.n_channels, channels.n_params
    if x.shape != (p,):
        raise ValueError(f"x must have shape ({p},), got {x.shape}")
    rows = channels.channel_rows
    dof = max(channels.n_samples - p / rows.sum(), 1.0)
    variance = channels.squared_residuals(x) / (dof * rows)  # per row of each channel
    w = np.ones(r) if weights is None else np.asarray(weights, dtype=float)
    if w.shape != (r,):
        raise ValueError(f"weights must have shape ({r},), got {w.shape}")
    gram = channels.gram.sum(axis=0) if weights is None else np.tensordot(w, channels.gram, 1)
    diagonal = np.diag(gram)
    scale = 1.0 / np.sqrt(np.where(diagonal > 0, diagonal, 1.0))  # D
    scaled_gram = scale[:, None] * gram * scale
    inverse, rank, eigenvalues = _pinv_psd(scaled_gram, rcond)  # (D G D)^+
    if scores is None:
        meat = np.tensordot(w**2 * variance, channels.gram, axes=1)
    else:
        scores = np.asarray(scores, dtype=float)
        if scores.ndim != 2 or scores.shape[1] != p or scores.shape[0] < 2:
            raise ValueError(f"scores must have shape (B >= 2, {p}), got {scores.shape}")
        meat = scores.shape[0] / (scores.shape[0] - 1) * scores.T @ scores
    covariance = inverse @ (scale[:, None] * meat * scale) @ inverse  # scaled coordinates
    condition = (
        float(np.sqrt(eigenvalues[-1] / eigenvalues[0])) if eigenvalues[0] > 0 else float("inf")
    )
    n_active = 0
    if constrained:
        blocks = []
        for k in range(n_bodies):
            theta = x[N_BODY_PARAMS * k : N_BODY_PARAMS * (k + 1)]
            rows = active_constraint_rows(theta, active_tol)
            if rows.size:
                padded = np.zeros((rows.shape[0], p))
                padded[:, N_BODY_PARAMS * k : N_BODY_PARAMS * (k + 1)] = rows
                blocks.append(padded)
        if blocks:
            a = np.vstack(blocks) * scale  # constraint rows in scaled coordinates
            norms = np.linalg.norm(a, axis=1)
            a = a[norms > 0] / norms[norms > 0, None]
            gain, n_active, _ = _pinv_psd(a @ inverse @ a.T, 1e-9)
            projection = np.eye(p) - inverse @ a.T @ gain @ a
            covariance = projection @ covariance @ projection.T
    matrix = scale[:, None] * covariance * scale
    return ParameterCovariance(
        matrix=0.5 * (matrix + matrix.T),
        channel_variance=variance,
        rank=rank,
        condition_number=condition,
        active_constraints=n_active,
    )


# ---- derived quantities --------------------------------------------------------------------


def com_jacobian(theta: np.ndarray) -> np.ndarray:
    """(3, 10) ``d c / d theta`` of the COM ``c = h / m`` (m, body frame)."""
    t = np.asarray(theta, dtype=float)
    m = t[0]
    if not m > 0:
        raise ValueError(f"mass must be positive to define a centre of mass, got {m!r}")
    jacobian = np.zeros((3, N_BODY_PARAMS))
    jacobian[:, 0] = -t[1:4] / m**2
    jacobian[:, 1:4] = np.eye(3) / m
    return jacobian


def com_covariance(theta: np.ndarray, theta_covariance: np.ndarray) -> np.ndarray:
    """(3, 3) covariance of the COM (m^2, body frame) from ``theta``'s (10, 10), to first order."""
    jacobian = com_jacobian(theta)
    return jacobian @ np.asarray(theta_covariance, dtype=float) @ jacobian.T


def inertia_com_jacobian(theta: np.ndarray) -> np.ndarray:
    """(6, 10) derivative of the inertia about the COM, ``geometry_msgs/Inertia`` order
    ``[ixx, ixy, ixz, iyy, iyz, izz]``, with respect to ``theta``:
    ``I_com = I - (|h|^2 1 - h h^T) / m``."""
    t = np.asarray(theta, dtype=float)
    m, h = t[0], t[1:4]
    if not m > 0:
        raise ValueError(f"mass must be positive to define a centre of mass, got {m!r}")
    eye = np.eye(3)
    jacobian = np.zeros((6, N_BODY_PARAMS))
    for row, (i, j) in enumerate(_MSG_ORDER):
        jacobian[row, 0] = (h @ h * eye[i, j] - h[i] * h[j]) / m**2
        jacobian[row, 1:4] = -(2.0 * h * eye[i, j] - eye[i] * h[j] - h[i] * eye[j]) / m
        jacobian[row, _INERTIA_INDEX[(i, j)]] = 1.0
    return jacobian


def inertia_com_covariance(theta: np.ndarray, theta_covariance: np.ndarray) -> np.ndarray:
    """(6, 6) covariance of the inertia about the COM in ``geometry_msgs/Inertia`` order
    ((kg m^2)^2), to first order."""
    jacobian = inertia_com_jacobian(theta)
    return jacobian @ np.asarray(theta_covariance, dtype=float) @ jacobian.T


_FROBENIUS_WEIGHTS = np.array([1.0, 2.0, 2.0, 1.0, 2.0, 1.0])
"""Weights of the ``geometry_msgs/Inertia``-order entries in the 3x3 matrix's Frobenius norm
(each off-diagonal entry appears twice)."""


def inertia_com_norm_std(theta: np.ndarray, theta_covariance: np.ndarray) -> tuple[float, float]:
    """``(norm, std)`` (kg m^2): the Frobenius norm of the inertia about the COM of ``theta``
    (10,), and the root-sum-square of the standard errors of the 3x3 matrix's entries (first
    order, from ``theta_covariance`` (10, 10)): a scale of its uncertainty, not the standard
    error of the norm. Needs a positive mass."""
    inertia = inertia_to_msg_order(inertia_from_theta(theta)[2])
    variances = np.clip(np.diag(inertia_com_covariance(theta, theta_covariance)), 0.0, None)
    return (
        float(np.sqrt(_FROBENIUS_WEIGHTS @ inertia**2)),
        float(np.sqrt(_FROBENIUS_WEIGHTS @ variances)),
    )


# ---- ellipsoids ----------------------------------------------------------------------------


@dataclass(frozen=True)
class Ellipsoid:
    """``{center + rotation @ diag(semi_axes) @ u : |u| <= 1}``: ``center`` (3,) (m),
    ``rotation`` (3, 3) proper (det +1; its columns are the axes), ``semi_axes`` (3,) (m)."""

    center: np.ndarray
    rotation: np.ndarray
    semi_axes: np.ndarray

    @property
    def quaternion_xyzw(self) -> np.ndarray:
        """(4,) unit quaternion ``[x, y, z, w]`` of ``rotation`` (``geometry_msgs`` order)."""
        # not pinocchio's Quaternion(R): it leaks 80 bytes per call for a C-ordered R
        return Rotation.from_matrix(self.rotation).as_quat()


def proper_rotation(axes: np.ndarray) -> np.ndarray:
    """The orthonormal columns ``axes`` (3, 3), the last negated if needed so ``det = +1``."""
    rotation = np.array(axes, dtype=float)
    if np.linalg.det(rotation) < 0:
        rotation[:, 2] *= -1.0
    return rotation


def confidence_ellipsoid(
    center: np.ndarray, covariance: np.ndarray, n_sigma: float = 3.0
) -> Ellipsoid:
    """The ``n_sigma`` ellipsoid of a 3-D Gaussian (Mahalanobis distance ``n_sigma``; 3 sigma
    holds 97.1 % of the probability): axes the covariance's eigenvectors, semi-axes
    ``n_sigma sqrt(eigenvalue)``."""
    eigenvalues, vectors = np.linalg.eigh(np.asarray(covariance, dtype=float).reshape(3, 3))
    return Ellipsoid(
        center=np.asarray(center, dtype=float).reshape(3).copy(),
        rotation=proper_rotation(vectors),
        semi_axes=n_sigma * np.sqrt(np.clip(eigenvalues, 0.0, None)),
    )


SPARSE_GRAM_MIN_SAMPLES = 64
"""From this many samples on, :func:`channel_grams` skips each channel's all-zero columns."""


def channel_grams(Y: np.ndarray) -> np.ndarray:
    """(r, p, p) ``Y[:, c].T @ Y[:, c]`` of regressors ``Y`` (N, r, p) (a view is fine).

    From :data:`SPARSE_GRAM_MIN_SAMPLES` samples on, each channel's product skips the columns
    that are zero in every sample (a chain's joint torque depends neither on the links before
    the joint nor on the other joints' drives: about three quarters of the dense product's
    flops are zeros): the channel's other columns fall into contiguous runs, and the product
    is assembled from the runs' products (symmetric ones on the diagonal), taken on views
    without copies. The skipped entries are exactly zero either way. Fewer samples: one batched
    product (no per-channel overhead)."""
    Y = np.asarray(Y, dtype=float)
    n, r, p = Y.shape
    if n < SPARSE_GRAM_MIN_SAMPLES:
        return Y.transpose(1, 2, 0) @ Y.transpose(1, 0, 2)
    gram = np.zeros((r, p, p))
    used = np.any(Y != 0.0, axis=0)  # (r, p); NaN counts as used
    for c in range(r):
        columns = np.flatnonzero(used[c])
        if columns.size == 0:
            continue
        breaks = np.flatnonzero(np.diff(columns) > 1) + 1
        runs = [(int(run[0]), int(run[-1]) + 1) for run in np.split(columns, breaks)]
        for i, (a, b) in enumerate(runs):
            A = Y[:, c, a:b]
            gram[c, a:b, a:b] = A.T @ A
            for d, e in runs[i + 1 :]:
                block = A.T @ Y[:, c, d:e]
                gram[c, a:b, d:e] = block
                gram[c, d:e, a:b] = block.T
    return gram
