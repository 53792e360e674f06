"""rviz markers of an identified body and its uncertainty (``visualization_msgs/MarkerArray``).

:func:`estimate_markers` draws, in the body's frame (the estimate's ``frame_id``, e.g. the F/T
sensor frame; ``frame_locked`` so they follow it), four markers of namespace ``ns``:

- id 0 ``SPHERE``: the centre of mass;
- id 1 ``SPHERE`` scaled into the COM's ``n_sigma`` confidence ellipsoid: axes the eigenvectors of
  the COM covariance (``J_c Cov(theta) J_c^T``, ``c = h / m``,
  :func:`inertia_id_ros.core.covariance.com_covariance`), full lengths
  ``2 n_sigma sqrt(eigenvalue)``;
- id 2 ``SPHERE`` scaled into the equivalent uniform-density solid ellipsoid: same mass and inertia
  about the COM, axes the principal axes, semi-axes from the principal moments
  (``I_a = m (b^2 + c^2) / 5`` ... so ``a^2 = 5 (I_b + I_c - I_a) / (2 m)``);
- id 3 ``TEXT_VIEW_FACING``: ``"<label>: m = 1.503 ± 0.002 kg"`` above the COM (followed by
  ``" (at_bound)"`` for a body on the consistency boundary).

Colours say how well each quantity is known, green (relative std <= :data:`GOOD_RELATIVE_STD`)
through yellow to red (>= :data:`BAD_RELATIVE_STD`), log scale: the equivalent ellipsoid by the
inertia about the COM (``sqrt(trace Cov(I_com)) / |I_com|_F``), the COM sphere and ellipsoid by the
COM's largest std relative to the body's size (its equivalent ellipsoid's largest semi-axis, at
least :data:`MIN_BODY_SIZE`), the label by the mass.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from builtin_interfaces.msg import Time
from std_msgs.msg import ColorRGBA
from visualization_msgs.msg import Marker, MarkerArray

from inertia_id_ros.core.covariance import (
    Ellipsoid,
    com_covariance,
    confidence_ellipsoid,
    inertia_com_norm_std,
    proper_rotation,
)
from inertia_id_ros.core.inertia import check_consistency, inertia_from_theta
from inertia_id_ros.ros.conversions import seconds_to_stamp
from inertia_id_ros.solvers.problem import on_consistency_bound

MARKERS_TOPIC = "/inertia_id/markers"
"""Topic ``config/inertia_id.rviz`` displays."""
NODE_MARKERS_TOPIC = "~/markers"
"""The node's markers topic, relative to its name (:data:`MARKERS_TOPIC` under the default
name)."""
COM_ID, COM_ELLIPSOID_ID, INERTIA_ELLIPSOID_ID, LABEL_ID = range(4)
"""Marker ids within the namespace."""
GOOD_RELATIVE_STD = 0.02
"""Relative standard deviation drawn green."""
BAD_RELATIVE_STD = 0.5
"""Relative standard deviation drawn red (and above)."""
MIN_BODY_SIZE = 0.01
"""Smallest body size (m) the COM's uncertainty is compared with."""
MIN_SCALE = 1e-4
"""Smallest marker extent (m): rviz does not draw markers of zero scale."""
COM_DIAMETER = 0.012
"""Diameter of the COM sphere (m)."""
TEXT_HEIGHT = 0.025
"""Height of the label's capital letters (m)."""


def equivalent_ellipsoid(theta: np.ndarray) -> Ellipsoid:
    """The uniform-density solid ellipsoid with ``theta``'s mass, COM and inertia about the COM
    (m, body frame): axes the principal axes (eigenvectors of ``I_com``), semi-axis ``k``
    ``sqrt(5 (I_i + I_j - I_k) / (2 m))`` from the principal moments (clipped at 0: a
    consistent ``theta`` meets the triangle inequalities)."""
    mass, com, inertia_com = inertia_from_theta(theta)
    moments, axes = np.linalg.eigh(inertia_com)
    squared = 5.0 * (moments.sum() - 2.0 * moments) / (2.0 * mass)
    return Ellipsoid(
        center=com, rotation=proper_rotation(axes), semi_axes=np.sqrt(np.clip(squared, 0.0, None))
    )


def confidence_color(relative_std: float, alpha: float = 1.0) -> ColorRGBA:
    """Green at ``relative_std <= GOOD_RELATIVE_STD``, yellow half-way (log scale), red at
    ``>= BAD_RELATIVE_STD`` (and for NaN)."""
    if not np.isfinite(relative_std) or relative_std <= 0:
        fraction = 0.0 if relative_std == 0 else 1.0
    else:
        fraction = float(
            np.clip(
                np.log(relative_std / GOOD_RELATIVE_STD)
                / np.log(BAD_RELATIVE_STD / GOOD_RELATIVE_STD),
                0.0,
                1.0,
            )
        )
    return ColorRGBA(
        r=float(min(1.0, 2.0 * fraction)),
        g=float(min(1.0, 2.0 * (1.0 - fraction))),
        b=0.0,
        a=float(alpha),
    )


def format_with_std(value: float, std: float) -> str:
    """``"1.503 ± 0.002"``: ``std`` to two significant digits, ``value`` to the same decimal."""
    if not std > 0 or not np.isfinite(std):
        return f"{value:.4g}"
    decimals = max(0, 1 - int(np.floor(np.log10(std))))
    return f"{value:.{decimals}f} ± {std:.{decimals}f}"


def _ellipsoid_marker(ellipsoid: Ellipsoid, marker: Marker) -> Marker:
    marker.type = Marker.SPHERE
    marker.pose.position.x, marker.pose.position.y, marker.pose.position.z = (
        float(v) for v in ellipsoid.center
    )
    q = ellipsoid.quaternion_xyzw
    (
        marker.pose.orientation.x,
        marker.pose.orientation.y,
        marker.pose.orientation.z,
        marker.pose.orientation.w,
    ) = (float(v) for v in q)
    marker.scale.x, marker.scale.y, marker.scale.z = (
        float(max(2.0 * a, MIN_SCALE)) for a in ellipsoid.semi_axes
    )
    return marker


def _theta_and_covariance(estimate: Any) -> tuple[np.ndarray, np.ndarray]:
    theta = np.asarray(estimate.theta, dtype=float).reshape(10)
    covariance = np.asarray(estimate.covariance, dtype=float).reshape(10, 10)
    return theta, covariance


def estimate_markers(
    estimate: Any,
    frame_id: str | None = None,
    stamp: Time | float | None = None,
    ns: str = "inertia_id",
    label: str | None = None,
    n_sigma: float = 3.0,
) -> MarkerArray:
    """The markers of an estimate (see the module docstring).

    ``estimate``: an :class:`~inertia_id_ros.online.payload_estimator.Estimate` or an
    ``InertialParameters`` message (anything with ``theta`` (10,) and ``covariance`` (10, 10) or
    (100,)), mass > 0. ``frame_id`` (default: the message's ``header.frame_id``; required for an
    ``Estimate``) and ``stamp`` (``builtin_interfaces/Time`` or seconds; default: the message's
    stamp, or the estimate's ``t_last``) go into every header; ``label`` (default: the message's
    ``body_name``, else ``"payload"``) starts the text.
    """
    header = getattr(estimate, "header", None)
    if frame_id is None:
        if header is None:
            raise ValueError("frame_id is required for an Estimate (the frame of its theta)")
        frame_id = header.frame_id
    if stamp is None:
        stamp = header.stamp if header is not None else float(estimate.t_last)
    if not isinstance(stamp, Time):
        stamp = seconds_to_stamp(float(stamp))
    label = label or getattr(estimate, "body_name", "") or "payload"
    theta, covariance = _theta_and_covariance(estimate)
    mass, com, inertia_com = inertia_from_theta(theta)

    body = equivalent_ellipsoid(theta)
    com_cov = com_covariance(theta, covariance)
    com_ellipsoid = confidence_ellipsoid(com, com_cov, n_sigma)
    body_size = max(float(body.semi_axes.max()), MIN_BODY_SIZE)
    com_relative = float(np.sqrt(max(np.linalg.eigvalsh(com_cov)[-1], 0.0))) / body_size
    inertia_norm, inertia_std = inertia_com_norm_std(theta, covariance)
    inertia_relative = inertia_std / inertia_norm if inertia_norm > 0 else float("inf")
    mass_std = float(np.sqrt(max(covariance[0, 0], 0.0)))

    def marker(marker_id: int) -> Marker:
        m = Marker(ns=ns, id=marker_id, action=Marker.ADD, frame_locked=True)
        m.header.frame_id = frame_id
        m.header.stamp = stamp
        m.pose.orientation.w = 1.0
        return m

    com_marker = _ellipsoid_marker(
        Ellipsoid(com, np.eye(3), np.full(3, COM_DIAMETER / 2)), marker(COM_ID)
    )
    com_marker.color = confidence_color(com_relative, 1.0)
    com_ellipsoid_marker = _ellipsoid_marker(com_ellipsoid, marker(COM_ELLIPSOID_ID))
    com_ellipsoid_marker.color = confidence_color(com_relative, 0.5)
    body_marker = _ellipsoid_marker(body, marker(INERTIA_ELLIPSOID_ID))
    body_marker.color = confidence_color(inertia_relative, 0.35)
    text = marker(LABEL_ID)
    text.type = Marker.TEXT_VIEW_FACING
    text.pose.position.x, text.pose.position.y = float(com[0]), float(com[1])
    text.pose.position.z = float(com[2] + max(body_size, COM_DIAMETER) + TEXT_HEIGHT)
    text.scale.z = TEXT_HEIGHT
    text.color = confidence_color(mass_std / mass, 1.0)
    text.text = f"{label}: m = {format_with_std(mass, mass_std)} kg" + (
        " (at_bound)"
        if on_consistency_bound(check_consistency(theta).min_pseudo_inertia_eig)
        else ""
    )
    return MarkerArray(markers=[com_marker, com_ellipsoid_marker, body_marker, text])
