"""Weighted least squares by channel: Gautier's noise weighting, iterated from the residuals.

Rows of a regression come in channels (a joint's torque, an F/T component, a whole-body
problem's joint torques and contact wrenches): ``f_i[c] = Y_i[c] x + e_i[c]`` with ``e[c]`` of
its own variance ``sigma_c^2``. Least squares weighted by ``w_c = 1 / sigma_c^2`` is the best
linear unbiased estimate; unweighted, the noisiest channel dominates the fit (Gautier &
Poignet 2001, "Extended Kalman filtering and weighted least squares dynamic identification of
robot"). The variances are unknown: estimate them from the residuals of the current fit, refit
with the new weights, repeat until they settle (:func:`iterate_channel_weights`). The helper
takes the per-channel normal equations
(:class:`~inertia_id_ros.core.covariance.ChannelNormalEquations`) and a ``fit`` callback, so every
problem (links, payload, whole body; offline or one window online) uses it the same way.

Scale: weights are normalised to a mean of 1 over the rows (``sum_c n w_c = n r``), so the
weighted problem keeps the units of the unweighted one and a prior weight per row keeps its
meaning. ``groups`` pools channels that share a variance (e.g. the three force channels of an
F/T sensor); so does a channel of several rows
(:attr:`~inertia_id_ros.core.covariance.ChannelNormalEquations.rows_per_channel`: a whole-body
problem's per-sensor force or torque rows).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from inertia_id_ros.core.covariance import ChannelNormalEquations
from inertia_id_ros.options import WEIGHTINGS

DEFAULT_MAX_ITERATIONS = 4
"""Refits at most (the weights usually settle to 1 % in two or three)."""
DEFAULT_WEIGHT_RTOL = 0.01
"""The weights have settled when none changes by more than this fraction."""
VARIANCE_FLOOR = 1e-4
"""A channel's variance is at least this fraction of the largest (weights at most 1e4 apart): a
channel fitted almost exactly would otherwise get a weight that swamps the others' and the
problem's conditioning."""

Fit = Callable[[np.ndarray], np.ndarray]
"""``fit(weights (r,)) -> x (p,)``: solve the problem with channel ``c``'s rows weighted by
``weights[c]`` (its normal equations: :func:`weighted_normal_equations`; a prior given in
rows' units, such as an F/T tare, scales with its channel's weight)."""


@dataclass(frozen=True)
class ChannelWeights:
    """Weights of the rows of each channel: ``weights`` (r,) (mean 1 over the rows), ``sigma``
    (r,) the residual standard deviation of each channel (its units) that gave them, the
    ``iterations`` (fits) it took and whether they ``converged``."""

    weights: np.ndarray
    sigma: np.ndarray
    iterations: int
    converged: bool

    def as_json(self, channel_names: Sequence[str]) -> dict:
        """``{"weights": {name: w}, "sigma": {name: sigma}, "iterations", "converged"}``."""
        names = list(channel_names)
        return {
            "weights": dict(zip(names, self.weights.tolist())),
            "sigma": dict(zip(names, self.sigma.tolist())),
            "iterations": self.iterations,
            "converged": self.converged,
        }


def check_weighting(weighting: str) -> str:
    """``weighting`` if it is one of :data:`WEIGHTINGS`, else ``ValueError``."""
    if weighting not in WEIGHTINGS:
        raise ValueError(f"weighting must be one of {WEIGHTINGS}, got {weighting!r}")
    return weighting


def weighted_normal_equations(
    channels: ChannelNormalEquations, weights: np.ndarray | None
) -> tuple[np.ndarray, np.ndarray, float, int]:
    """``(Y^T W Y (p, p), Y^T W f (p,), f^T W f, rows)`` with ``W`` the rows' weights: channel
    ``c``'s rows weighted by ``weights[c]`` (``None``: unweighted,
    :meth:`ChannelNormalEquations.total`)."""
    if weights is None:
        return channels.total()
    w = np.asarray(weights, dtype=float)
    if w.shape != (channels.n_channels,):
        raise ValueError(f"weights must have shape ({channels.n_channels},), got {w.shape}")
    return (
        np.tensordot(w, channels.gram, axes=1),
        w @ channels.moment,
        float(w @ channels.yty),
        channels.n_samples * int(channels.channel_rows.sum()),
    )


def weights_from_residuals(
    channels: ChannelNormalEquations, x: np.ndarray, groups: Sequence[int] | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """``(weights (r,), sigma (r,))``: each channel's residual standard deviation per row at
    ``x`` (pooled within ``groups``: (r,) labels, channels with the same label share one
    variance) and the weights ``1 / sigma^2`` normalised to a mean of 1 over the rows."""
    squares = channels.squared_residuals(np.asarray(x, dtype=float))
    rows = channels.channel_rows
    labels = np.arange(channels.n_channels) if groups is None else np.asarray(groups)
    if labels.shape != (channels.n_channels,):
        raise ValueError(f"groups must have shape ({channels.n_channels},), got {labels.shape}")
    variance = np.empty(channels.n_channels)
    for label in np.unique(labels):
        members = labels == label
        variance[members] = squares[members].sum() / (
            rows[members].sum() * max(channels.n_samples, 1)
        )
    floor = VARIANCE_FLOOR * max(float(variance.max()), np.finfo(float).tiny)
    variance = np.maximum(variance, floor)
    weights = 1.0 / variance
    return weights / np.average(weights, weights=rows), np.sqrt(variance)


def iterate_channel_weights(
    channels: ChannelNormalEquations,
    fit: Fit,
    groups: Sequence[int] | None = None,
    max_iterations: int = DEFAULT_MAX_ITERATIONS,
    rtol: float = DEFAULT_WEIGHT_RTOL,
    initial: np.ndarray | None = None,
) -> tuple[np.ndarray, ChannelWeights]:
    """Iteratively reweighted least squares over channels: fit with the current weights (first
    ``initial``, default unweighted), reweight by the residual variances
    (:func:`weights_from_residuals`), until no weight changes by more than ``rtol`` (relative) or
    after ``max_iterations`` fits. Returns ``(x, weights)``: the last fit, made with
    ``weights.weights``."""
    if max_iterations < 1:
        raise ValueError(f"max_iterations must be >= 1, got {max_iterations}")
    weights = np.ones(channels.n_channels) if initial is None else np.asarray(initial, dtype=float)
    iteration = 0
    while True:
        iteration += 1
        x = np.asarray(fit(weights), dtype=float)
        new, sigma = weights_from_residuals(channels, x, groups)
        settled = bool(np.all(np.abs(new - weights) <= rtol * weights))
        if settled or iteration >= max_iterations:
            return x, ChannelWeights(weights, sigma, iteration, settled)
        weights = new
