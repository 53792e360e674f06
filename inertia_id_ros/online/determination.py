"""How well the data behind a payload estimate excite each parameter, in plain words.

Each parameter's standard deviation (from the estimate's covariance) is compared with the scale of
its group: the mass with ``m``; the first moments ``m c`` with ``m * max(|c|, 1 cm)``; the inertia
entries about the sensor frame with the largest diagonal entry. A parameter whose relative standard
deviation exceeds the threshold is "not yet identifiable", and the message says which motion
excites it.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from inertia_id_ros.core.inertia import THETA_NAMES

MOTION_HINTS = {
    "m": "tilt the sensor so that gravity acts along different sensor axes",
    "mcx": "tilt the sensor about its y and z axes",
    "mcy": "tilt the sensor about its x and z axes",
    "mcz": "tilt the sensor about its x and y axes",
    "Ixx": "rotate the wrist about x (angular accelerations about x)",
    "Iyy": "rotate the wrist about y (angular accelerations about y)",
    "Izz": "rotate the wrist about z (angular accelerations about z)",
    "Ixy": "rotate the wrist about axes between x and y",
    "Ixz": "rotate the wrist about axes between x and z",
    "Iyz": "rotate the wrist about axes between y and z",
}
"""The motion that excites each parameter of ``theta`` (sensor-frame axes)."""

DEFAULT_MAX_RELATIVE_STD = 0.1
"""Relative standard deviation above which a parameter counts as not yet identifiable."""

MIN_LEVER = 0.01
"""m (1 cm): the smallest lever arm used to scale the first moments."""


@dataclass(frozen=True)
class ExcitationReport:
    """``well_excited`` when every parameter's relative std is below ``max_relative_std``;
    ``relative_std`` per name of ``THETA_NAMES``; ``message`` one plain sentence."""

    well_excited: bool
    message: str
    relative_std: dict[str, float]
    worst: str
    max_relative_std: float


def parameter_scales(theta: np.ndarray) -> np.ndarray:
    """(10,) scale of each entry of ``theta`` (kg, kg m, kg m^2), see the module docstring."""
    t = np.asarray(theta, dtype=float)
    mass = max(abs(t[0]), 1e-9)
    lever = max(float(np.linalg.norm(t[1:4])) / mass, MIN_LEVER)
    inertia = max(abs(t[4]), abs(t[6]), abs(t[9]), 1e-12)
    return np.array([mass] + [mass * lever] * 3 + [inertia] * 6)


def excitation_report(
    theta: np.ndarray, covariance: np.ndarray, max_relative_std: float = DEFAULT_MAX_RELATIVE_STD
) -> ExcitationReport:
    """Relative standard deviations of ``theta`` (10,) from its ``covariance`` (10, 10)."""
    std = np.sqrt(np.clip(np.diag(np.asarray(covariance, dtype=float)), 0.0, None))
    relative = std / parameter_scales(theta)
    relative_std = {name: float(r) for name, r in zip(THETA_NAMES, relative)}
    worst = THETA_NAMES[int(np.argmax(relative))]
    if relative_std[worst] > max_relative_std:
        message = (
            f"{worst} is not yet identifiable (±{100 * relative_std[worst]:.0f} %): "
            f"{MOTION_HINTS[worst]}"
        )
        return ExcitationReport(False, message, relative_std, worst, max_relative_std)
    message = (
        f"well excited: every parameter within ±{100 * relative_std[worst]:.1f} % "
        f"(largest: {worst})"
    )
    return ExcitationReport(True, message, relative_std, worst, max_relative_std)
