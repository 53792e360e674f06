"""Excitation report: which parameter the data do not yet determine, and the motion that would."""

from __future__ import annotations

import numpy as np

from inertia_id_ros.core.inertia import THETA_NAMES, theta_from_inertia
from inertia_id_ros.online.determination import MOTION_HINTS, excitation_report, parameter_scales

THETA = theta_from_inertia(1.5, np.array([0.03, -0.02, 0.07]), np.diag([2.2e-3, 2.9e-3, 2.6e-3]))


def test_a_well_determined_estimate_is_well_excited():
    covariance = np.diag((1e-3 * parameter_scales(THETA)) ** 2)
    report = excitation_report(THETA, covariance)
    assert report.well_excited and "well excited" in report.message
    assert max(report.relative_std.values()) < 2e-3


def test_the_worst_parameter_is_named_with_the_motion_that_excites_it():
    std = 1e-3 * parameter_scales(THETA)
    std[THETA_NAMES.index("Ixx")] = 0.5 * parameter_scales(THETA)[4]  # ±50 %
    report = excitation_report(THETA, np.diag(std**2))
    assert not report.well_excited and report.worst == "Ixx"
    assert report.message.startswith("Ixx is not yet identifiable (±50 %)")
    assert MOTION_HINTS["Ixx"] in report.message and "about x" in report.message


def test_first_moments_of_a_centred_payload_are_scaled_by_a_minimum_lever():
    centred = theta_from_inertia(1.0, np.zeros(3), np.eye(3) * 1e-3)
    scales = parameter_scales(centred)
    assert np.allclose(scales[1:4], 1.0 * 0.01)
