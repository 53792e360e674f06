"""Link identification from a recording with data-chosen settings: what ``fit-links`` runs.

Steps, each choice made on the training recording only and reported:

1. accelerations: recorded ones when the recording has both velocities and accelerations, else
   the zero-phase derivative filter chosen by blocked cross-validation of the torques
   (:func:`~inertia_id_ros.chain.differentiation.select_differentiation`; recorded velocities are
   differentiated once, positions twice only without them), unless a filter is given;
2. weighting (``"channel"``): each joint's noise level from the residuals, iterated
   (:mod:`inertia_id_ros.core.weighting`); ``"none"``: unweighted;
3. prior strength: the weight of the pull toward the URDF by blocked cross-validation
   (:func:`~inertia_id_ros.chain.links.select_prior_weight`), unless given;
4. the fit (:func:`~inertia_id_ros.chain.links.fit_links`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from inertia_id_ros.chain.differentiation import (SOURCE_POSITIONS, SOURCE_RECORDED,
                                                  SOURCE_VELOCITIES, DifferentiationFilter,
                                                  DifferentiationSelection, sample_period,
                                                  select_differentiation)
from inertia_id_ros.chain.links import (JointTorqueData, LinkFit, LinkModel,
                                        PriorWeightSelection, build_link_problem, fit_links,
                                        link_channels, select_prior_weight)
from inertia_id_ros.core.filtering import derivatives_at_samples
from inertia_id_ros.core.weighting import check_weighting, iterate_channel_weights
from inertia_id_ros.solvers import solve

DEFAULT_WEIGHTING = "none"
"""Weighting of :func:`identify_links` and ``fit-links``: unweighted, because the joints'
weights did not predict held-out torques better in any measured case (KUKA runs 2 and 3
slightly worse, the simulated arm the same; ``benchmarks/differentiation.py``,
``benchmarks/kuka_lwr4.py``); ``"channel"`` (Gautier) is the option when the joints' noise
levels differ widely and the parameters, not the overall torque RMS, matter."""


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

    def as_json(self) -> dict:
        """``{"differentiation", "prior_weight", "prior_weight_selection", "weighting"}`` for the
        result JSON (selections ``null`` when the value was given)."""
        differentiation = (self.filter_selection.as_json() if self.filter_selection is not None
                           else self.differentiation.as_json())
        prior = None if self.prior_selection is None else {
            "criterion": "5-fold blocked cross-validation of the torques (consistent fit)",
            "candidates": [{"weight": float(w), "cv_rms": float(r)} for w, r in
                           zip(self.prior_selection.weights, self.prior_selection.cv_rms)]}
        weights = self.fit.channel_weights
        weighting = {"kind": self.weighting}
        if weights is not None:
            weighting.update(weights.as_json(self.data.joint_names or self.fit.link_names))
        return {"differentiation": differentiation, "prior_weight": self.fit.prior_weight,
                "prior_weight_selection": prior, "weighting": weighting}

    def summary_lines(self) -> list[str]:
        """What was chosen, in words (for stdout)."""
        lines = [f"accelerations: {self.differentiation.describe()}"]
        if self.filter_selection is not None:
            best = float(np.min(self.filter_selection.cv_rms))
            lines[-1] += (f"; chosen by {self.filter_selection.n_folds}-fold cross-validation of "
                          f"the torques over {len(self.filter_selection.candidates)} filters "
                          f"(held-out RMS {best:.4f} N m)")
        if self.differentiation.source != SOURCE_RECORDED:
            lines.append(f"  online, this filter delays every signal by "
                         f"{self.differentiation.online_lag:.3f} s")
        how = ("given" if self.prior_selection is None else
               f"chosen by 5-fold cross-validation, held-out RMS "
               f"{float(np.min(self.prior_selection.cv_rms)):.4f} N m")
        lines.append(f"prior weight: {self.fit.prior_weight:.3g} ({how})")
        weights = self.fit.channel_weights
        if weights is None:
            lines.append("weighting: none (every joint's torque weighted alike)")
        else:
            names = self.data.joint_names or self.fit.link_names
            lines.append("weighting: per joint, 1/sigma² from the residuals ("
                         f"{weights.iterations} fits): "
                         + ", ".join(f"{name} sigma {s:.3g}" for name, s in
                                     zip(names, weights.sigma)))
        return lines


def derive_torque_data(t: np.ndarray, q: np.ndarray, dq: np.ndarray | None,
                       effort: np.ndarray, differentiation: DifferentiationFilter,
                       joint_names: Sequence[str] | None = None) -> JointTorqueData:
    """The samples of a recording (``t`` (N,) s, ``q``, ``dq`` or ``None``, ``effort`` (N, n))
    with velocities and accelerations from ``differentiation`` (zero-phase; velocities smoothed
    by the same filter), the samples within its half-width of either end dropped."""
    keep, _, velocities, accelerations = derivatives_at_samples(
        t, q, dq if differentiation.source == SOURCE_VELOCITIES else None,
        differentiation.half_width, differentiation.order)
    return JointTorqueData(np.asarray(q)[keep], velocities, accelerations,
                           np.asarray(effort)[keep], joint_names)


def identify_links(model: LinkModel, t: np.ndarray, q: np.ndarray, dq: np.ndarray | None,
                   ddq: np.ndarray | None, effort: np.ndarray,
                   joint_names: Sequence[str] | None = None, method: str = "lmi",
                   weighting: str = DEFAULT_WEIGHTING, prior_weight: float | None = None,
                   differentiation: DifferentiationFilter | None = None,
                   **solver_options: object) -> LinkIdentification:
    """Identify ``model``'s links and drives from a recording (module docstring): ``t`` (N,) s,
    ``q`` (N, n), ``dq``, ``ddq`` (N, n) or ``None``, raw ``effort`` (N, n), columns in
    ``joint_names`` order (``None``: the model's). ``prior_weight`` ``None``: by
    cross-validation; ``differentiation`` ``None``: recorded accelerations if any, else by
    cross-validation."""
    check_weighting(weighting)
    t = np.asarray(t, dtype=float)
    names = None if joint_names is None else tuple(joint_names)
    filter_selection = None
    if differentiation is None and dq is not None and ddq is not None:
        differentiation = DifferentiationFilter(SOURCE_RECORDED, sample_period=sample_period(t))
    if differentiation is None:
        filter_selection = select_differentiation(model, t, q, dq, effort, names)
        differentiation = filter_selection.chosen
    if differentiation.source == SOURCE_RECORDED:
        data = JointTorqueData(q, dq, ddq, effort, names)
    else:
        if differentiation.source == SOURCE_VELOCITIES and dq is None:
            differentiation = DifferentiationFilter(SOURCE_POSITIONS, differentiation.half_width,
                                                    differentiation.order,
                                                    differentiation.sample_period)
        data = derive_torque_data(t, q, dq, effort, differentiation, names)
    channels = link_channels(model, data)
    prior_selection = None
    if prior_weight is None:
        channel_weights = None
        if weighting == "channel":  # the joints' noise levels from unconstrained fits
            def ols(gram: np.ndarray, moment: np.ndarray, yty: float, n_rows: int) -> np.ndarray:
                return solve(build_link_problem(model, gram, moment, yty, n_rows, 0.0),
                             method="ols").x
            channel_weights = iterate_channel_weights(channels, ols)[1].weights
        prior_selection = select_prior_weight(model, data, method=method,
                                              channel_weights=channel_weights, **solver_options)
        prior_weight = prior_selection.best
    fit = fit_links(model, data, method=method, prior_weight=prior_weight, weighting=weighting,
                    channels=channels, **solver_options)
    return LinkIdentification(fit, data, differentiation, filter_selection, prior_selection,
                              weighting)
