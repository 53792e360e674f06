"""Drive gains calibrated in situ with a known load (Gautier & Briot, IROS 2011).

An arm that logs motor currents ``i`` (N, n) (A) rather than joint torques: joint ``j``'s torque
is ``k_j i_j`` with an unknown current-to-torque gain ``k_j`` (N·m/A at the joint). An unloaded
and a loaded run (any motions; several pairs at once) give, per sample and joint::

    unloaded:  Y_links theta_links + Y_drives d                          - i_j k_j = -tau_known
    loaded:    Y_links theta_links + Y_drives d + Y_p theta_p            - i_j k_j = -tau_known

``Y_links``, ``Y_drives``: :class:`~inertia_id_ros.chain.links.LinkModel`'s regressor (links'
``theta`` and drive terms: friction, offsets, armature); ``Y_p``: the regressor of a rigid
payload at a frame (:class:`~inertia_id_ros.chain.payload_from_torques.PayloadTorqueModel`);
``tau_known`` the drives' fixed terms. Every row is homogeneous in the unknowns
``x = [theta_links (10 n), theta_p (10), d, k (n)]`` (:attr:`DriveGainModel.parameter_names`):
only the payload's weighed mass ``m`` sets their scale.

Formulation: the known mass enters as a prior on ``theta_p``'s mass entry alone, with a weight
:data:`MASS_PRIOR_WEIGHT` times the largest diagonal entry of the normal equations (it holds the
mass to about 1e-8 of itself), so that the consistent solvers keep every body, the payload's
included, physically consistent (``J(theta) >= 0``) with ``theta_p`` whole; the gains are kept
nonnegative. The standard errors come from the system with ``m`` substituted (its column moved
to the right-hand side), robust to the model's error along the motion (the scores of
:data:`ERROR_BLOCKS` blocks of each run,
:func:`~inertia_id_ros.core.covariance.parameter_covariance`). The measured currents are the
gains' regressor: their noise would bias the gains toward zero (errors in variables); the fit
takes each joint's current noise variance (its residual over its gain squared) out of its gain's
diagonal entry of the normal equations and refits (:data:`NOISE_ITERATIONS` times).

Identifiability: a gain is fixed only through the payload's torque on its joint. A joint the
payload barely loads along the motion (its wrench has little moment about the joint's axis) has a
gain the links' parameters absorb: :func:`fit_drive_gains` flags a gain as not determined when
it leaves the identifiable subspace (:data:`NULL_SPACE_TOLERANCE`) or its standard error exceeds
:data:`MAX_GAIN_RELATIVE_STD` of it, and reports the payload's torque RMS on that joint instead of
a number.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

import numpy as np

from inertia_id_ros.chain.links import JointTorqueData, LinkModel
from inertia_id_ros.chain.payload_from_torques import PayloadTorqueModel
from inertia_id_ros.core.covariance import (
    ChannelNormalEquations,
    block_scores,
    parameter_covariance,
)
from inertia_id_ros.solvers import Problem, Solution, solve

ERROR_BLOCKS = 10
"""Each run is split into this many consecutive blocks for the standard errors."""

MASS_PRIOR_WEIGHT = 1e4
"""Weight of the known payload mass, relative to the largest diagonal entry of the normal
equations."""

LINK_PRIOR_WEIGHT = 1e-6
"""Pull of the links toward the URDF's inertials, relative to the largest diagonal entry of the
normal equations: it only settles combinations the data leave free (too weak to move a gain)."""

MAX_GAIN_RELATIVE_STD = 0.05
"""A gain whose standard error exceeds this fraction of it is reported as not determined."""

NULL_SPACE_TOLERANCE = 1e-3
"""A gain whose unit direction has more than this share (norm) outside the identifiable subspace
of the Jacobi-scaled normal equations is not determined."""

NOISE_ITERATIONS = 3
"""Refits with the currents' noise taken out of the gains' columns (errors in variables)."""

_CHUNK = 2000  # samples per chunk when accumulating the normal equations


@dataclass(frozen=True)
class RunPair:
    """An ``unloaded`` and a ``loaded`` run (joint states with raw currents as efforts, A) and
    the payload's weighed ``mass`` (kg) in the loaded run."""

    unloaded: JointTorqueData
    loaded: JointTorqueData
    mass: float

    def __post_init__(self) -> None:
        if not self.mass > 0:
            raise ValueError(f"the payload's weighed mass must be > 0 kg, got {self.mass!r}")


class DriveGainModel:
    """The rows of the module docstring for ``links``'s chain (its efforts taken as raw
    currents: every ``effort_scale`` ignored) with ``n_payloads`` payloads at ``frame`` (one per
    run pair: ``theta_p`` of pair ``k`` after the links')."""

    def __init__(self, links: LinkModel, frame: str, n_payloads: int = 1) -> None:
        self.links = links
        self.payload = PayloadTorqueModel(links, frame, estimate_offsets=False)
        n = links.n_joints
        self.n_links = 10 * n
        self.n_payloads = n_payloads
        names = list(links.parameter_names[: self.n_links])
        for k in range(n_payloads):
            names += [f"{name}{k + 1}" for name in self.payload.parameter_names]
        names += list(links.parameter_names[self.n_links :])
        names += [f"{joint}.gain" for joint in links.joint_names]
        self.parameter_names: tuple[str, ...] = tuple(names)
        self.n_parameters = len(names)
        self.mass_indices = [self.n_links + 10 * k for k in range(n_payloads)]
        self.gain_slice = slice(self.n_parameters - n, self.n_parameters)
        self.drive_slice = slice(self.n_links + 10 * n_payloads, self.n_parameters - n)

    def payload_theta(self, x: np.ndarray, k: int) -> np.ndarray:
        """(10,) payload ``k``'s ``theta`` in ``x``."""
        return np.asarray(x)[self.mass_indices[k] : self.mass_indices[k] + 10]

    def regressor(self, run: JointTorqueData, payload: int | None) -> tuple[np.ndarray, np.ndarray]:
        """``(Y (N, n, p), f (N, n))`` of the rows of ``run`` (carrying payload ``payload``,
        ``None``: unloaded)."""
        d = self.links.in_joint_order(run)
        n = self.links.n_joints
        Y = np.zeros((d.n_samples, n, self.n_parameters))
        Y[:, :, : self.n_links] = self.links.link_regressor(
            d.positions, d.velocities, d.accelerations
        )
        if payload is not None:
            start = self.mass_indices[payload]
            Y[:, :, start : start + 10] = self.payload.regressor(
                d.positions, d.velocities, d.accelerations
            )
        Y[:, :, self.drive_slice] = self.links.drive_regressor(d.velocities, d.accelerations)
        Y[:, :, self.gain_slice] = -d.efforts[:, :, None] * np.eye(n)
        return Y, -self.links.known_torques(d.accelerations)

    def blocks(self, pairs: Sequence[RunPair]) -> list[ChannelNormalEquations]:
        """Normal equations per joint of :data:`ERROR_BLOCKS` consecutive blocks of every run."""
        out = []
        for k, pair in enumerate(pairs):
            for run, loaded in ((pair.unloaded, None), (pair.loaded, k)):
                for indices in np.array_split(np.arange(run.n_samples), ERROR_BLOCKS):
                    parts = [
                        ChannelNormalEquations.from_samples(
                            *self.regressor(run.subset(indices[s : s + _CHUNK]), loaded)
                        )
                        for s in range(0, indices.size, _CHUNK)
                    ]
                    if parts:
                        out.append(ChannelNormalEquations.summed(parts))
        if not out:
            raise ValueError("no samples in the runs")
        return out

    def payload_torque_rms(self, pairs: Sequence[RunPair], x: np.ndarray) -> np.ndarray:
        """(n,) RMS (N·m) over the loaded runs of each joint's torque from its payload in
        ``x``."""
        squares, count = np.zeros(self.links.n_joints), 0
        for k, pair in enumerate(pairs):
            theta_p = self.payload_theta(x, k)
            d = self.links.in_joint_order(pair.loaded)
            tau = self.payload.regressor(d.positions, d.velocities, d.accelerations) @ theta_p
            squares += (tau**2).sum(axis=0)
            count += d.n_samples
        return np.sqrt(squares / max(count, 1))


def _substituted(block: ChannelNormalEquations, index: int, value: float) -> ChannelNormalEquations:
    """``block`` with parameter ``index`` known as ``value``: its column moved to the
    right-hand side and dropped (the later parameters' indices go down by one)."""
    keep = np.delete(np.arange(block.n_params), index)
    column = block.gram[:, :, index]
    moment = block.moment - value * column
    yty = block.yty - 2 * value * block.moment[:, index] + value**2 * block.gram[:, index, index]
    return ChannelNormalEquations(
        gram=block.gram[:, keep][:, :, keep],
        moment=moment[:, keep],
        yty=yty,
        n_samples=block.n_samples,
    )


@dataclass(frozen=True)
class DriveGainFit:
    """Result of :func:`fit_drive_gains`: ``gains`` (n,) N·m/A at the joint (in
    ``joint_names`` order), their standard errors ``gain_std`` (n,), ``determined`` (n,) whether
    the data fix each gain, ``payload_torque_rms`` (n,) the payload's torque RMS on each joint
    (N·m), ``payload_thetas`` (P, 10) of each pair's payload about and in ``frame``,
    ``links_x`` the links' and drives' parameters (:attr:`LinkModel.parameter_names` order,
    torques in N·m), the ``solution``, the ``residual_rms`` (N·m, in torque through the
    gains)."""

    joint_names: tuple[str, ...]
    frame: str
    gains: np.ndarray
    gain_std: np.ndarray
    determined: np.ndarray
    payload_torque_rms: np.ndarray
    payload_thetas: np.ndarray
    links_x: np.ndarray
    solution: Solution
    residual_rms: float

    def undetermined_reasons(self) -> list[str]:
        """One sentence per gain the data do not determine."""
        return [
            f"{joint}: not determined by this motion: the payload adds {rms:.3g} N·m of "
            "torque RMS there"
            + ("" if not np.isfinite(std) else f" (the gain's standard error would be {std:.2g})")
            for joint, ok, rms, std in zip(
                self.joint_names, self.determined, self.payload_torque_rms, self.gain_std
            )
            if not ok
        ]


def fit_drive_gains(
    links: LinkModel, frame: str, pairs: Sequence[RunPair], method: str = "lmi"
) -> DriveGainFit:
    """The gains of ``links``'s joints, jointly with the links, drives (the terms ``links``'s
    drives estimate) and each pair's payload at ``frame`` (its mass known), from run ``pairs``
    (module docstring); ``method`` of :func:`~inertia_id_ros.solvers.solve`. Raises
    ``ValueError`` for no pairs."""
    if not pairs:
        raise ValueError("no run pairs")
    model = DriveGainModel(links, frame, len(pairs))
    blocks = model.blocks(pairs)
    channels = ChannelNormalEquations.summed(blocks)
    gram, moment, yty, n_rows = channels.total()
    p = model.n_parameters
    scale = float(np.max(np.diag(gram)))
    masses = [pair.mass for pair in pairs]
    prior = np.zeros(p)
    prior[: model.n_links] = links.prior[: model.n_links]
    prior[model.mass_indices] = masses
    weight = np.zeros(p)
    weight[: model.n_links] = LINK_PRIOR_WEIGHT * scale
    weight[model.mass_indices] = MASS_PRIOR_WEIGHT * scale
    nonnegative = tuple(i + 10 * len(pairs) for i in links.nonnegative) + tuple(
        range(*model.gain_slice.indices(p))
    )
    problem = Problem(
        gram=gram,
        moment=moment,
        yty=yty,
        n_rows=n_rows,
        n_bodies=links.n_joints + len(pairs),
        nonnegative=nonnegative,
        prior=prior,
        prior_weight=weight,
        body_names=(*links.link_names, *(f"payload{k + 1}" for k in range(len(pairs)))),
        param_names=model.parameter_names,
    )
    solution = solve(problem, method=method)
    for _ in range(NOISE_ITERATIONS):  # the currents' noise out of the gains' columns
        variance = _current_noise_variance(model, channels, solution.x)
        corrected = [_without_current_noise(model, b, variance) for b in blocks]
        gram = ChannelNormalEquations.summed(corrected).total()[0]
        solution = solve(replace(problem, gram=gram), method=method, initvals=solution)
    x = np.asarray(solution.x, dtype=float).copy()
    x[model.mass_indices] = masses
    return _gain_fit(model, pairs, corrected, channels, x, solution)


def _current_noise_variance(
    model: DriveGainModel, channels: ChannelNormalEquations, x: np.ndarray
) -> np.ndarray:
    """(n,) each joint's current noise variance (A²) at the estimate ``x``: its residual
    variance (N·m)² over its gain squared (the torque model's error counted as current noise:
    an upper bound)."""
    gains = np.abs(np.asarray(x)[model.gain_slice])
    residual = channels.squared_residuals(x) / max(channels.n_samples, 1)
    return residual / np.maximum(gains, 1e-12) ** 2


def _without_current_noise(
    model: DriveGainModel, block: ChannelNormalEquations, variance: np.ndarray
) -> ChannelNormalEquations:
    """``block`` with each joint's current noise (``variance`` (n,) A²) taken out of its gain's
    diagonal entry (the measured currents are the gains' regressor: their noise would bias the
    gains toward zero), at most half of that entry."""
    gram = block.gram.copy()
    for j, index in enumerate(range(*model.gain_slice.indices(model.n_parameters))):
        gram[j, index, index] -= min(block.n_samples * variance[j], 0.5 * gram[j, index, index])
    return replace(block, gram=gram)


def _gain_fit(
    model: DriveGainModel,
    pairs: Sequence[RunPair],
    blocks: list[ChannelNormalEquations],
    channels: ChannelNormalEquations,
    x: np.ndarray,
    solution: Solution,
) -> DriveGainFit:
    """:func:`fit_drive_gains`'s result at ``x``: standard errors and determination."""
    reduced = blocks
    for index in reversed(model.mass_indices):
        reduced = [_substituted(b, index, float(x[index])) for b in reduced]
    total = ChannelNormalEquations.summed(reduced)
    x_reduced = np.delete(x, model.mass_indices)
    covariance = parameter_covariance(
        total,
        x_reduced,
        n_bodies=0,
        constrained=False,
        scores=block_scores(reduced, x_reduced),
    )
    n = model.links.n_joints
    gains = x[model.gain_slice]
    gain_std = np.sqrt(np.clip(np.diag(covariance.matrix)[-n:], 0.0, None))
    gram = total.total()[0]
    diagonal = np.sqrt(np.clip(np.diag(gram), 1e-300, None))
    scaled = gram / np.outer(diagonal, diagonal)
    eigenvalues, vectors = np.linalg.eigh(scaled)
    null = vectors[:, eigenvalues <= eigenvalues[-1] * 1e-10]
    outside = np.linalg.norm(null[-n:], axis=1) if null.size else np.zeros(n)
    thetas = np.array([model.payload_theta(x, k) for k in range(model.n_payloads)])
    determined = (outside <= NULL_SPACE_TOLERANCE) & (
        gain_std <= MAX_GAIN_RELATIVE_STD * np.abs(gains)
    )
    gain_std = np.where(outside <= NULL_SPACE_TOLERANCE, gain_std, np.inf)
    links_x = np.concatenate([x[: model.n_links], x[model.drive_slice]])
    residual = channels.squared_residuals(x).sum() / (channels.n_samples * channels.n_channels)
    return DriveGainFit(
        model.links.joint_names,
        model.payload.frame,
        gains.copy(),
        gain_std,
        determined,
        model.payload_torque_rms(pairs, x),
        thetas,
        links_x,
        solution,
        float(np.sqrt(max(residual, 0.0))),
    )


STANDSTILL_VELOCITY = 0.01
"""rad/s: every joint slower than this is at standstill (for :func:`standstill_ratios`)."""

STANDSTILL_DURATION = 0.5
"""s: the shortest standstill :func:`standstill_ratios` uses."""


def standstill_ratios(
    t: np.ndarray, q: np.ndarray, torque: np.ndarray, current: np.ndarray
) -> np.ndarray:
    """(n,) each joint's median ratio of the controller's target ``torque`` (N, n) (N·m) to its
    target ``current`` (N, n) (A) over the samples where every joint (positions ``q`` (N, n) at
    stamps ``t`` (N,)) has stood still (:data:`STANDSTILL_VELOCITY`) for
    :data:`STANDSTILL_DURATION` s at least and the current is above 5 % of its largest there;
    NaN for a joint without such samples: the controller's own gain."""
    t = np.asarray(t, dtype=float)
    velocity = np.gradient(np.asarray(q, dtype=float), t, axis=0)
    still = np.all(np.abs(velocity) < STANDSTILL_VELOCITY, axis=1)
    keep = np.zeros_like(still)
    start = None
    for k, flag in enumerate(np.append(still, False)):
        if flag and start is None:
            start = k
        elif not flag and start is not None:
            if t[k - 1] - t[start] >= STANDSTILL_DURATION:
                keep[start:k] = True
            start = None
    out = np.full(q.shape[1], np.nan)
    for j in range(q.shape[1]):
        i = np.asarray(current, dtype=float)[keep, j]
        tau = np.asarray(torque, dtype=float)[keep, j]
        large = np.abs(i) > 0.05 * np.max(np.abs(i), initial=0.0)
        if np.any(large):
            out[j] = float(np.median(tau[large] / i[large]))
    return out
