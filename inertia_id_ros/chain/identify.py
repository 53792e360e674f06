"""Link identification from a recording with data-chosen settings: what ``fit-links`` runs.

Steps, each choice made on the training recording only and reported:

1. accelerations: recorded ones when the recording has both velocities and accelerations, else
   the zero-phase derivative filter chosen by blocked cross-validation of the torques
   (:func:`~inertia_id_ros.chain.differentiation.select_differentiation`; recorded velocities are
   differentiated once, positions twice only without them), unless a filter is given;
2. the base's tilt (:func:`~inertia_id_ros.chain.base_tilt.estimate_base_tilt`), kept level
   unless the motion tells it from the joints' zero offsets
   (:func:`~inertia_id_ros.chain.base_tilt.tilt_separation`);
3. the delay of the torques behind the motion
   (:func:`~inertia_id_ros.chain.torque_delay.estimate_torque_delay`), with the tilted gravity;
4. the width of the Coulomb sign ``tanh(dq / v)`` of every joint
   (:func:`~inertia_id_ros.chain.coulomb_width.select_coulomb_velocity`);
5. weighting (``"channel"``): each joint's noise level from the residuals, iterated
   (:mod:`inertia_id_ros.core.weighting`); ``"none"``: unweighted;
6. prior strength: the weight of the pull toward the URDF by blocked cross-validation
   (:func:`~inertia_id_ros.chain.link_fit.select_prior_weight`, descending the grid from the
   strongest weight: only the candidates evaluated are reported), unless given;
7. the fit (:func:`~inertia_id_ros.chain.link_fit.fit_links`).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from inertia_id_ros.chain.base_tilt import BaseTilt, estimate_base_tilt, tilt_separation
from inertia_id_ros.chain.coulomb_width import (
    DEFAULT_COULOMB_VELOCITIES,
    CoulombVelocitySelection,
    coulomb_width_blocks,
    select_coulomb_velocity,
    with_coulomb_velocity,
)
from inertia_id_ros.chain.differentiation import (
    SOURCE_POSITIONS,
    SOURCE_RECORDED,
    SOURCE_VELOCITIES,
    DifferentiationFilter,
    DifferentiationSelection,
    motion_samples,
    sample_period,
    select_differentiation,
)
from inertia_id_ros.chain.link_fit import (
    LinkFit,
    PriorWeightSelection,
    build_link_problem,
    fit_links,
    select_prior_weight,
)
from inertia_id_ros.chain.links import JointTorqueData, LinkModel, with_gravity
from inertia_id_ros.chain.stillness import JointMotion, joint_motions
from inertia_id_ros.chain.torque_delay import TorqueDelay, estimate_torque_delay
from inertia_id_ros.core.covariance import ChannelNormalEquations
from inertia_id_ros.core.weighting import (
    check_weighting,
    iterate_channel_weights,
    weighted_normal_equations,
)
from inertia_id_ros.options import DEFAULT_PRIOR_WEIGHT
from inertia_id_ros.options import LINKS_DEFAULT_WEIGHTING as DEFAULT_WEIGHTING
from inertia_id_ros.solvers import solve

PRIOR_MASS_FACTOR = 3.0
"""A link mass more than this factor from its prior's (either way) is far from it: the
cross-validated prior weight is not kept for less than :data:`PRIOR_GUARD_GAIN` of held-out
gain (:class:`PriorGuard`), and the fit's check warns about it."""
PRIOR_GUARD_GAIN = 0.01
"""The held-out gain (a share of the held-out RMS) a prior weight moving a mass
:data:`PRIOR_MASS_FACTOR` from its prior must bring to be kept."""
PRIOR_MASS_FLOOR = 1e-3
"""Prior masses below this (kg) are no mass: such links are not compared with their prior."""


@dataclass(frozen=True)
class PriorGuard:
    """The cross-validated prior weight ``chosen`` set aside for the larger ``kept``: with it
    link ``link``'s mass went ``ratio`` times from its prior's (either way) for a held-out gain of
    ``gain`` (a share of the held-out RMS at ``kept``, under :data:`PRIOR_GUARD_GAIN`)."""

    chosen: float
    kept: float
    link: str
    ratio: float
    gain: float

    def as_json(self) -> dict[str, float | str]:
        """The figures."""
        return {
            "cross_validated": self.chosen,
            "kept": self.kept,
            "link": self.link,
            "mass_ratio": self.ratio,
            "held_out_gain": self.gain,
            "mass_factor": PRIOR_MASS_FACTOR,
        }

    def line(self) -> str:
        """In words, for the summary."""
        return (
            f"  kept the larger prior weight {self.kept:.3g}: cross-validation's "
            f"{self.chosen:.3g} moved link {self.link!r}'s mass {self.ratio:.1f} x from its "
            f"prior for {100 * self.gain:.2f} % of held-out gain (under "
            f"{100 * PRIOR_GUARD_GAIN:g} %)"
        )


def prior_mass_ratios(model: LinkModel, x: np.ndarray) -> np.ndarray:
    """(links,) :func:`mass_ratios` of the links' masses in ``x`` to their prior's."""
    priors = model.link_parameters(model.prior)[:, 0]
    return mass_ratios(model.link_parameters(x)[:, 0], priors)


def mass_ratios(masses: np.ndarray, priors: np.ndarray) -> np.ndarray:
    """(k,) how many times each of ``masses`` (kg) is from its prior's in ``priors``, either way
    (``inf``: not positive; 1: a prior under :data:`PRIOR_MASS_FLOOR`)."""
    ratios = np.ones(len(masses))
    for k, (mass, prior) in enumerate(zip(masses, priors)):
        if prior >= PRIOR_MASS_FLOOR:
            ratios[k] = max(mass / prior, prior / mass) if mass > 0 else np.inf
    return ratios


@dataclass(frozen=True)
class LinkIdentification:
    """Result of :func:`identify_links`: the ``fit``, the training ``data`` it was fitted to
    (derived velocities and accelerations), the derivative filter (``differentiation``) and how
    it and the prior weight were chosen (``None``: given)."""

    fit: LinkFit
    data: JointTorqueData
    differentiation: DifferentiationFilter
    filter_selection: DifferentiationSelection | None
    prior_selection: PriorWeightSelection | None
    weighting: str
    tilt: BaseTilt | None = None
    """The estimated base tilt (``None``: not estimated; kept level when the motion does not
    tell it from the joints' zero offsets, :attr:`BaseTilt.kept_level`)."""
    model: LinkModel | None = None
    """The model fitted (with the tilted gravity and the chosen Coulomb width)."""
    coulomb_selection: CoulombVelocitySelection | None = None
    """How the Coulomb sign's width was chosen (``None``: given)."""
    delay: TorqueDelay = TorqueDelay(0.0)
    """The efforts' delay behind the motion, estimated or given (applied to the ``data``)."""
    motions: tuple[JointMotion, ...] = ()
    """How much each of the model's joints moved against its noise
    (:func:`~inertia_id_ros.chain.stillness.joint_motions`; empty: not judged)."""
    prior_guard: PriorGuard | None = None
    """The cross-validated prior weight set aside for a larger one (``None``: kept)."""

    def as_json(self) -> dict:
        """``{"differentiation", "prior_weight", "prior_weight_selection", "weighting", "gravity",
        "base_tilt", "coulomb_velocity_selection", "torque_delay"}`` for the result JSON
        (selections ``null`` when the value was given)."""
        differentiation = (
            self.filter_selection.as_json()
            if self.filter_selection is not None
            else self.differentiation.as_json()
        )
        prior = None
        if self.prior_selection is not None:
            evaluated = ~np.isnan(self.prior_selection.cv_rms)
            prior = {
                "criterion": "5-fold blocked cross-validation of the torques (consistent "
                "fit)"
                + (
                    ""
                    if evaluated.all()
                    else "; descent over the grid, only the candidates evaluated are listed"
                ),
                "grid": [float(w) for w in self.prior_selection.weights],
                "candidates": [
                    {"weight": float(w), "cv_rms": float(r)}
                    for w, r in zip(
                        self.prior_selection.weights[evaluated],
                        self.prior_selection.cv_rms[evaluated],
                    )
                ],
            }
        weights = self.fit.channel_weights
        weighting = {"kind": self.weighting}
        if weights is not None:
            weighting.update(weights.as_json(self.data.joint_names or self.fit.link_names))
        return {
            "differentiation": differentiation,
            "prior_weight": self.fit.prior_weight,
            "prior_weight_selection": prior,
            "prior_weight_guard": None if self.prior_guard is None else self.prior_guard.as_json(),
            "weighting": weighting,
            "gravity": (
                None if self.model is None else np.asarray(self.model.model.gravity.linear).tolist()
            ),
            "base_tilt": None if self.tilt is None else self.tilt.as_json(),
            "coulomb_velocity_selection": (
                None if self.coulomb_selection is None else self.coulomb_selection.as_json()
            ),
            "torque_delay": self.delay.as_json(),
        }

    def summary_lines(self) -> list[str]:
        """What was chosen, in words (for stdout)."""
        lines = [f"accelerations: {self.differentiation.describe()}"]
        if self.filter_selection is not None:
            best = float(np.nanmin(self.filter_selection.cv_rms))
            scored = int(np.sum(~np.isnan(self.filter_selection.cv_rms)))
            lines[-1] += (
                f"; chosen by {self.filter_selection.n_folds}-fold cross-validation of "
                f"the torques over {scored} of "
                f"{len(self.filter_selection.candidates)} filters "
                f"(held-out RMS {best:.4f} N m)"
            )
        if self.differentiation.source != SOURCE_RECORDED:
            lines.append(
                f"  online, this filter delays every signal by "
                f"{self.differentiation.online_lag:.3f} s"
            )
        lines.append(f"torque delay: {1e3 * self.delay.delay:+.1f} ms behind the motion")
        if self.delay.rms is not None:
            lines[-1] += (
                f" (estimated: training RMS {self.delay.rms:.4f} N m, without "
                f"{self.delay.zero_rms:.4f})"
            )
        if self.tilt is not None:
            lines.append(_tilt_line(self.tilt))
        if self.coulomb_selection is not None:
            lines.append(
                f"Coulomb sign: tanh(dq / {self.coulomb_selection.best:g} rad/s)"
                if self.coulomb_selection.best > 0
                else "Coulomb sign: exact"
            )
            widths = ", ".join(f"{w:g}" for w in self.coulomb_selection.widths)
            lines[-1] += (
                f" (chosen by 5-fold cross-validation over {widths} rad/s, held-out RMS "
                f"{float(np.min(self.coulomb_selection.cv_rms)):.4f} N m)"
            )
        how = (
            "given"
            if self.prior_selection is None
            else f"chosen by 5-fold cross-validation, held-out RMS "
            f"{float(np.nanmin(self.prior_selection.cv_rms)):.4f} N m over "
            f"{int(np.sum(~np.isnan(self.prior_selection.cv_rms)))} of "
            f"{self.prior_selection.weights.size} candidates"
        )
        lines.append(f"prior weight: {self.fit.prior_weight:.3g} ({how})")
        if self.prior_guard is not None:
            lines.append(self.prior_guard.line())
        weights = self.fit.channel_weights
        if weights is None:
            lines.append("weighting: none (every joint's torque weighted alike)")
        else:
            names = self.data.joint_names or self.fit.link_names
            lines.append(
                "weighting: per joint, 1/sigma² from the residuals ("
                f"{weights.iterations} fits): "
                + ", ".join(f"{name} sigma {s:.3g}" for name, s in zip(names, weights.sigma))
            )
        return lines


def _tilt_line(tilt: BaseTilt) -> str:
    """The base tilt found, in words: kept level (and why) when the motion does not tell it
    from the joints' zero offsets."""
    found = (
        f"roll {np.degrees(tilt.roll):+.2f} deg, pitch {np.degrees(tilt.pitch):+.2f} deg "
        f"(training RMS {tilt.rms:.4f} N m, level {tilt.level_rms:.4f})"
    )
    separation = tilt.separation
    if tilt.kept_level and separation is not None and separation.like_an_offset:
        return (
            f"base tilt: kept level; the fit's best tilt, {found}, is not told apart from a "
            f"zero offset of joint {separation.twin!r} on this motion ("
            f"{100 * separation.share:.2g} % of its information left with the joints' offsets "
            "free): move the first joints more to measure a tilt"
        )
    if tilt.kept_level and separation is not None:
        return (
            f"base tilt: kept level; the fit's best tilt, {found}, is within "
            f"{separation.t:.1f} standard errors of level (the joints' offsets free)"
        )
    return f"base tilt: {found}; gravity [" + ", ".join(f"{g:.3f}" for g in tilt.gravity) + "] m/s²"


@dataclass(frozen=True)
class _Recording:
    """A recording's stamps ``t`` (N,) s, ``q``, ``dq``, ``ddq`` (N, n; ``dq``, ``ddq`` may be
    ``None``), raw ``effort`` (N, n), its columns' ``names`` (``None``: the model's joints)."""

    t: np.ndarray
    q: np.ndarray
    dq: np.ndarray | None
    ddq: np.ndarray | None
    effort: np.ndarray
    names: tuple[str, ...] | None

    def data(self, differentiation: DifferentiationFilter, delay: float = 0.0) -> JointTorqueData:
        """The samples with the motion from ``differentiation``, the efforts ``delay`` s behind it
        (:func:`~inertia_id_ros.chain.differentiation.motion_samples`)."""
        keep, motion = motion_samples(self.t, self.q, self.dq, self.ddq, differentiation, delay)
        return JointTorqueData(*motion, np.asarray(self.effort)[keep], self.names)

    def motions(self, joints: Sequence[str]) -> tuple[JointMotion, ...]:
        """How much each of ``joints`` (names of the recording's columns) moved against its
        noise."""
        names = list(self.names) if self.names is not None else list(joints)
        columns = [names.index(joint) for joint in joints]
        return joint_motions(self.t, np.asarray(self.q, dtype=float)[:, columns], joints)

    def torque_delay(
        self,
        model: LinkModel,
        differentiation: DifferentiationFilter,
        method: str,
        prior_weight: float,
        solver_options: dict[str, Any],
    ) -> TorqueDelay:
        """The efforts' delay behind the motion
        (:func:`~inertia_id_ros.chain.torque_delay.estimate_torque_delay`)."""
        return estimate_torque_delay(
            model,
            self.t,
            self.q,
            self.dq,
            self.ddq,
            self.effort,
            differentiation,
            self.names,
            method,
            prior_weight,
            **solver_options,
        )


def identify_links(
    model: LinkModel,
    t: np.ndarray,
    q: np.ndarray,
    dq: np.ndarray | None,
    ddq: np.ndarray | None,
    effort: np.ndarray,
    joint_names: Sequence[str] | None = None,
    method: str = "lmi",
    weighting: str = DEFAULT_WEIGHTING,
    prior_weight: float | None = None,
    differentiation: DifferentiationFilter | None = None,
    estimate_tilt: bool = True,
    select_coulomb: bool = True,
    torque_delay: float | None = None,
    bounding_ellipsoids: Sequence[np.ndarray | None] | None = None,
    **solver_options: Any,
) -> LinkIdentification:
    """Identify ``model``'s links and drives from a recording (module docstring): ``t`` (N,) s,
    ``q`` (N, n), ``dq``, ``ddq`` (N, n) or ``None``, raw ``effort`` (N, n), columns in
    ``joint_names`` order (``None``: the model's). ``prior_weight`` ``None``: by
    cross-validation; ``differentiation`` ``None``: recorded accelerations if any, else by
    cross-validation; ``estimate_tilt``: estimate the base's tilt (else the model's gravity);
    ``select_coulomb``: choose the Coulomb sign's width (else the model's drives');
    ``torque_delay``: the efforts' delay behind the motion (s; ``None``: estimated, 0: none);
    ``bounding_ellipsoids``: per link ``None`` or its ``Q`` (4x4, link frame), constraining the
    final fit (the selections above are made without them)."""
    check_weighting(weighting)
    names = None if joint_names is None else tuple(joint_names)
    recording = _Recording(np.asarray(t, dtype=float), q, dq, ddq, effort, names)
    differentiation, filter_selection = _differentiation_of(model, recording, differentiation)
    data = recording.data(differentiation)
    selection_weight = DEFAULT_PRIOR_WEIGHT if prior_weight is None else prior_weight
    tilt = None
    if estimate_tilt:
        model, tilt = _tilted(model, data, method, selection_weight, solver_options)
    delay = TorqueDelay(0.0 if torque_delay is None else float(torque_delay))
    if torque_delay is None:
        delay = recording.torque_delay(
            model, differentiation, method, selection_weight, solver_options
        )
    if delay.delay != 0.0:
        data = recording.data(differentiation, delay.delay)
    blocks = coulomb_width_blocks(model, data, DEFAULT_COULOMB_VELOCITIES if select_coulomb else ())
    coulomb_selection = None
    if select_coulomb:
        coulomb_selection = select_coulomb_velocity(
            model, blocks=blocks, method=method, prior_weight=selection_weight, **solver_options
        )
        model = with_coulomb_velocity(model, coulomb_selection.best)
    folds = blocks.folds(None if coulomb_selection is None else coulomb_selection.best)
    channels = ChannelNormalEquations.summed(folds)
    prior_selection = None
    if prior_weight is None:
        prior_selection = _choose_prior(model, folds, channels, weighting, method, solver_options)
        prior_weight = prior_selection.best

    options = dict(method=method, weighting=weighting, channels=channels, **solver_options) | {
        "bounding_ellipsoids": bounding_ellipsoids
    }
    fit = fit_links(model, data, prior_weight=prior_weight, **options)
    guard = None if prior_selection is None else _prior_guard(model, fit, prior_selection)
    if guard is not None:
        fit = fit_links(model, data, prior_weight=guard.kept, **options)
    return LinkIdentification(
        fit,
        data,
        differentiation,
        filter_selection,
        prior_selection,
        weighting,
        tilt,
        model,
        coulomb_selection,
        delay,
        recording.motions(model.joint_names),
        guard,
    )


def _tilted(
    model: LinkModel,
    data: JointTorqueData,
    method: str,
    prior_weight: float,
    solver_options: dict[str, Any],
) -> tuple[LinkModel, BaseTilt]:
    """The base's tilt (:func:`~inertia_id_ros.chain.base_tilt.estimate_base_tilt`, judged by
    :func:`~inertia_id_ros.chain.base_tilt.tilt_separation`) and ``model`` under its gravity,
    or level when the motion does not tell the tilt from the joints' zero offsets."""
    tilt = estimate_base_tilt(model, data, method, prior_weight, **solver_options)
    tilt = dataclasses.replace(tilt, separation=tilt_separation(model, data, tilt))
    return (model if tilt.kept_level else with_gravity(model, tilt.gravity)), tilt


def _prior_guard(
    model: LinkModel, fit: LinkFit, selection: PriorWeightSelection
) -> PriorGuard | None:
    """The larger prior weight to keep when the cross-validated one (``fit``'s) moves a link's
    mass more than :data:`PRIOR_MASS_FACTOR` from its prior for less than
    :data:`PRIOR_GUARD_GAIN` of held-out gain: the largest evaluated weight within that gain
    (``None``: the chosen weight stands)."""
    ratios = prior_mass_ratios(model, fit.x)
    worst = int(np.argmax(ratios))
    if not ratios[worst] > PRIOR_MASS_FACTOR:
        return None
    best = float(np.nanmin(selection.cv_rms))
    close = (selection.weights > fit.prior_weight) & (
        selection.cv_rms <= best * (1.0 + PRIOR_GUARD_GAIN)
    )
    if not close.any():
        return None
    kept = int(np.flatnonzero(close)[np.argmax(selection.weights[close])])
    gain = 1.0 - best / float(selection.cv_rms[kept])
    return PriorGuard(
        fit.prior_weight,
        float(selection.weights[kept]),
        model.link_names[worst],
        float(ratios[worst]),
        gain,
    )


def _differentiation_of(
    model: LinkModel, recording: _Recording, given: DifferentiationFilter | None
) -> tuple[DifferentiationFilter, DifferentiationSelection | None]:
    """The derivative filter of ``recording`` and how it was chosen (``None``: not chosen): the
    ``given`` one, else the recorded velocities and accelerations when both are, else by
    cross-validation (:func:`~inertia_id_ros.chain.differentiation.select_differentiation`);
    a filter of the velocities falls back to the positions without recorded velocities."""
    differentiation, selection = given, None
    t, dq = recording.t, recording.dq
    if differentiation is None and dq is not None and recording.ddq is not None:
        differentiation = DifferentiationFilter(SOURCE_RECORDED, sample_period=sample_period(t))
    if differentiation is None:
        selection = select_differentiation(
            model, t, recording.q, dq, recording.effort, recording.names
        )
        differentiation = selection.chosen
    if differentiation.source == SOURCE_VELOCITIES and dq is None:
        differentiation = DifferentiationFilter(
            SOURCE_POSITIONS,
            differentiation.half_width,
            differentiation.order,
            differentiation.sample_period,
        )
    return differentiation, selection


def _choose_prior(
    model: LinkModel,
    folds: list[ChannelNormalEquations],
    channels: ChannelNormalEquations,
    weighting: str,
    method: str,
    solver_options: dict[str, Any],
) -> PriorWeightSelection:
    """The prior weight by blocked cross-validation over ``folds`` (descending the grid); with
    ``weighting="channel"`` the fits weighted by the joints' noise levels from unconstrained
    fits to all of ``channels``."""
    channel_weights = None
    if weighting == "channel":  # the joints' noise levels from unconstrained fits

        def ols(weights: np.ndarray) -> np.ndarray:
            normal = weighted_normal_equations(channels, weights)
            return solve(build_link_problem(model, *normal, 0.0), method="ols").x

        channel_weights = iterate_channel_weights(channels, ols)[1].weights
    return select_prior_weight(
        model,
        method=method,
        folds=folds,
        channel_weights=channel_weights,
        search="descent",
        **solver_options,
    )
