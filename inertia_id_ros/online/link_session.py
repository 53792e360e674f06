"""The links session: a chain's links and joint drives from joint states with efforts
(:class:`LinkSession`, the rules of :mod:`~inertia_id_ros.online.session`), and the factory the
node and ``inertia-id replay`` build it with (:func:`link_session`)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from inertia_id_ros.chain.actuators import ActuatorConfig
from inertia_id_ros.chain.links import LinkModel
from inertia_id_ros.online.estimator import window_capacities
from inertia_id_ros.online.link_estimator import LinkEstimate, LinkEstimator, LinkEstimatorConfig
from inertia_id_ros.online.session import Session
from inertia_id_ros.online.solving import ellipsoid_values
from inertia_id_ros.options import DEFAULT_PRIOR_WEIGHT


class LinkSession(Session[LinkEstimator, LinkEstimate]):
    """A chain's links and joint drives from joint states with efforts: a consistent
    :class:`~inertia_id_ros.online.link_estimator.LinkEstimate` per update, with the
    base-parameter rank and what the data cannot identify."""

    def _summary(self, estimate: LinkEstimate) -> str:
        unidentifiable = " ".join(estimate.unidentifiable)
        return (
            f"{estimate.method}: {len(estimate.link_names)} links and "
            f"{len(estimate.drives)} joint drives from {estimate.n_samples} samples, "
            f"residual RMS {estimate.residual_rms:.4g} N m, base-parameter rank "
            f"{estimate.rank}; unidentifiable (the prior decides): "
            f"{unidentifiable or 'none'}"
        )

    def _estimate_diagnostics(self, estimate: LinkEstimate) -> tuple[dict[str, str], str]:
        return {
            "base_parameter_rank": str(estimate.rank),
            "unidentifiable": " ".join(estimate.unidentifiable),
        }, ""


def link_session(
    link_model: LinkModel,
    actuators: Mapping[str, ActuatorConfig] | None = None,
    *,
    window_sec: float = 10.0,
    method: str = "lmi",
    solver_options: Mapping[str, Any] | None = None,
    prior_weight: float = DEFAULT_PRIOR_WEIGHT,
    max_input_rate_hz: float = 1000.0,
    weighting: str = LinkEstimatorConfig.weighting,
    bounding_ellipsoids: Sequence[np.ndarray | None] | None = None,
) -> LinkSession:
    """The links session the node runs for its parameters of the same names;
    ``bounding_ellipsoids`` per link ``None`` or its ``Q`` (4x4, link frame), or ``None``."""
    config = LinkEstimatorConfig(
        window_sec=window_sec,
        method=method,
        solver_options=dict(solver_options or {}),
        prior_weight=prior_weight,
        weighting=weighting,
        bounding_ellipsoids=ellipsoid_values(bounding_ellipsoids),
        **window_capacities(window_sec, max_input_rate_hz),
    )
    return LinkSession(LinkEstimator(link_model, config, actuators), max_input_rate_hz)
