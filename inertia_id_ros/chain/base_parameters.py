"""Numerical base parameters of a joint-torque regressor: which combinations of the links' and
drives' parameters (:mod:`inertia_id_ros.chain.links`) the data determine (pivoted QR of the
stacked regressor, or of a factor of its normal equations)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy as np
import scipy.linalg

from inertia_id_ros.chain.links import (
    CHUNK_SAMPLES,
    JointTorqueData,
    LinkModel,
    as_runs,
    regression_system,
)
from inertia_id_ros.core.covariance import ChannelNormalEquations

DEFAULT_RANK_TOLERANCE = 1e-8
"""Default relative tolerance of :func:`base_parameters`: a pivoted-QR diagonal ``|R_ii|`` below
``tolerance * |R_00|`` counts as zero."""

DEFAULT_GRAM_RANK_TOLERANCE = 1e-6
"""Default relative tolerance of :func:`base_parameters_from_gram` (see there why larger)."""


@dataclass(frozen=True)
class BaseParameters:
    """Numerical base parameters of a stacked regressor ``Y`` (QR with column pivoting).

    With ``Y P = Q R`` and ``rank`` r, the columns ``independent`` (r,) of ``Y`` are a basis and the
    others depend on them: ``Y[:, dependent] = Y[:, independent] @ combination``. The base
    parameters, which the data determine, are ``x[independent] + combination @ x[dependent]``
    (:meth:`from_standard`). Every column of :attr:`null_space` changes ``x`` without changing any
    torque of the data. ``unidentifiable`` lists the standard parameters that the data cannot fix
    individually (a nonzero component in the null space); ``no_effect`` those that do not act on
    any torque at all.
    """

    names: tuple[str, ...]
    rank: int
    independent: np.ndarray
    dependent: np.ndarray
    combination: np.ndarray
    null_space: np.ndarray
    unidentifiable: tuple[str, ...]
    no_effect: tuple[str, ...]

    def from_standard(self, x: np.ndarray) -> np.ndarray:
        """(rank,) base parameters of the standard parameters ``x`` (p,)."""
        x = np.asarray(x, dtype=float)
        return x[self.independent] + self.combination @ x[self.dependent]

    def expressions(self, digits: int = 4) -> list[str]:
        """Each base parameter as text, e.g. ``'link2.Izz + 0.16*link2.m'``."""
        return [
            " ".join([self.names[i]] + _terms(row, self.names, self.dependent, digits))
            for i, row in zip(self.independent, self.combination)
        ]

    def null_directions(self, digits: int = 4) -> list[str]:
        """Each direction ``e_dep - Σ_k combination[k, dep] e_indep_k`` that leaves all torques
        unchanged, as text: ``'link1.Ixx - 1*link1.Iyy'``."""
        return [
            " ".join([self.names[j]] + _terms(-column, self.names, self.independent, digits))
            for j, column in zip(self.dependent, self.combination.T)
        ]


def _terms(
    coefficients: np.ndarray, names: Sequence[str], index: np.ndarray, digits: int
) -> list[str]:
    """``'+ c*name'`` for each coefficient above ``10^-digits`` in magnitude (the parameter
    ``names[index[k]]`` for ``coefficients[k]``)."""
    terms = []
    for k in np.flatnonzero(np.abs(coefficients) > 10.0**-digits):
        c = float(coefficients[k])
        terms.append(f"{'+' if c > 0 else '-'} {abs(c):.{digits}g}*{names[index[k]]}")
    return terms


def base_parameters(
    model: LinkModel,
    data: JointTorqueData | Iterable[JointTorqueData],
    tolerance: float = DEFAULT_RANK_TOLERANCE,
) -> BaseParameters:
    """Numerical base parameters of the regressor of ``data`` (see :class:`BaseParameters`).

    The rank counts pivoted-QR diagonals ``|R_ii| > tolerance * |R_00|`` of the unscaled stacked
    regressor (torques in N·m, parameters in SI units).
    """
    R, _ = _factor(model, data, with_channels=False)
    return _base_parameters_of_factor(model.parameter_names, R, tolerance, leak_tolerance=1e-9)


def base_parameters_and_channels(
    model: LinkModel,
    data: JointTorqueData | Iterable[JointTorqueData],
    tolerance: float = DEFAULT_RANK_TOLERANCE,
) -> tuple[BaseParameters, ChannelNormalEquations]:
    """:func:`base_parameters` of ``data`` and its
    :func:`~inertia_id_ros.chain.links.link_channels`, in one pass over the samples."""
    R, channels = _factor(model, data, with_channels=True)
    bp = _base_parameters_of_factor(model.parameter_names, R, tolerance, leak_tolerance=1e-9)
    assert channels is not None
    return bp, channels


def _factor(
    model: LinkModel, data: JointTorqueData | Iterable[JointTorqueData], with_channels: bool
) -> tuple[np.ndarray, ChannelNormalEquations | None]:
    """``R`` (p, p) of the QR factorisation of the stacked regressor of ``data`` (accumulated
    in blocks) and, ``with_channels``, its normal equations per joint."""
    p, n = model.n_parameters, model.n_joints
    R = np.zeros((0, p))
    parts = []
    for run in as_runs(data):
        for start in range(0, run.n_samples, CHUNK_SAMPLES):
            Y, y = regression_system(model, run.subset(slice(start, start + CHUNK_SAMPLES)))
            R = scipy.linalg.qr(np.vstack([R, Y]), mode="r")[0][:p]
            if with_channels:
                parts.append(
                    ChannelNormalEquations.from_samples(Y.reshape(-1, n, p), y.reshape(-1, n))
                )
    if R.shape[0] == 0:
        raise ValueError("base_parameters needs at least one sample")
    return R, ChannelNormalEquations.summed(parts) if with_channels else None


def base_parameters_from_gram(
    names: Sequence[str], gram: np.ndarray, tolerance: float = DEFAULT_GRAM_RANK_TOLERANCE
) -> BaseParameters:
    """:func:`base_parameters` from the normal equations ``gram = Y^T Y`` (p, p) alone (a sliding
    window's), ``names`` (p,) naming the parameters.

    ``R = Λ^½ V^T`` from ``gram = V Λ V^T`` is a factor with ``R^T R = gram``, so ``Y = U R`` with
    ``U`` of orthonormal columns and pivoted QR of ``R`` takes the decisions it takes on ``Y``.
    Forming ``Y^T Y`` squares the condition number: singular values below ``sqrt(eps) |R_00|``
    (about 1e-8 relative) are round-off, hence the larger default ``tolerance``; for the same
    reason a parameter counts as unidentifiable when its component in the null space exceeds 1e-5
    (round-off puts up to about 1e-7 there).
    """
    gram = np.asarray(gram, dtype=float)
    if gram.ndim != 2 or gram.shape != (len(names), len(names)):
        raise ValueError(
            f"gram must be ({len(names)}, {len(names)}) for the {len(names)} "
            f"names, got {gram.shape}"
        )
    eigenvalues, vectors = np.linalg.eigh(0.5 * (gram + gram.T))
    R = np.sqrt(np.clip(eigenvalues, 0.0, None))[:, None] * vectors.T
    return _base_parameters_of_factor(tuple(names), R, tolerance, leak_tolerance=1e-5)


def _base_parameters_of_factor(
    names: Sequence[str], R: np.ndarray, tolerance: float, leak_tolerance: float
) -> BaseParameters:
    """:class:`BaseParameters` of any ``Y`` with ``Y^T Y = R^T R`` (``R`` (k, p), k >= p); a
    parameter whose unit vector has a component above ``leak_tolerance`` in the null space is
    unidentifiable."""
    names = tuple(names)
    p = len(names)
    R, perm = scipy.linalg.qr(R, mode="r", pivoting=True)
    diag = np.abs(np.diag(R))
    rank = int(np.sum(diag > tolerance * diag[0])) if diag[0] > 0 else 0
    independent, dependent = perm[:rank], perm[rank:]
    combination = scipy.linalg.solve_triangular(R[:rank, :rank], R[:rank, rank:p])
    null_space = np.zeros((p, p - rank))
    null_space[dependent, np.arange(p - rank)] = 1.0
    null_space[independent, :] = -combination
    # a parameter is individually identifiable iff e_i is orthogonal to the null space
    basis = np.linalg.qr(null_space)[0] if p > rank else np.zeros((p, 0))
    leak = np.linalg.norm(basis, axis=1)
    unidentifiable = tuple(names[i] for i in range(p) if leak[i] > leak_tolerance)
    column_norms = np.linalg.norm(R, axis=0)[np.argsort(perm)]
    no_effect = tuple(names[i] for i in range(p) if column_norms[i] <= tolerance * diag[0])
    return BaseParameters(
        names, rank, independent, dependent, combination, null_space, unidentifiable, no_effect
    )
