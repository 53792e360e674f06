"""The ``payload_torques`` mode without ROS: its parameters -> the session, the link model and
the excitation target; invalid values name their parameter."""

from __future__ import annotations

import numpy as np
import pytest

from inertia_id_ros import modes
from inertia_id_ros.core.robots import example_robot_urdf
from inertia_id_ros.errors import StartupError
from inertia_id_ros.modes.parameters import build_session, settings_from_parameters
from inertia_id_ros.online.payload_session import PayloadTorqueSession

PANDA_ARM = tuple(f"panda_joint{i}" for i in range(1, 8))
TORQUES = {
    "mode": "payload_torques",
    "urdf_path": str(example_robot_urdf("panda")),
    "torques_frame": "panda_link8",
}


@pytest.mark.parametrize(
    "overrides, parameter",
    [
        ({"torques_frame": ""}, "torques_frame"),
        ({"torques_change_threshold": 0.0}, "torques_change_threshold"),
        ({"torques_filter_half_width": -0.01}, "torques_filter_half_width"),
        ({"torques_links_result": "/nonexistent/links.json"}, "torques_links_result"),
        ({"torques_bounding_sphere": 0.0}, "torques_bounding_sphere"),
        ({"torques_bounding_box": [0.1, 0.1]}, "torques_bounding_box"),
    ],
)
def test_invalid_values_name_the_parameter(overrides, parameter):
    with pytest.raises(StartupError, match=f"'{parameter}'"):
        settings_from_parameters({**TORQUES, **overrides})


@pytest.mark.parametrize(
    "overrides, parameter",
    [
        ({"torques_frame": "no_such_frame"}, "torques_frame"),
        ({"torques_joints": ["panda_joint1", "nope"]}, "torques_joints"),
        ({"torques_joints": ["panda_finger_joint1"]}, "torques_joints"),  # does not move it
        ({"torques_torque_constants": [0.1, 0.2]}, "torques_torque_constants"),  # 2 for 7 joints
        ({"torques_gear_ratios": [100.0] * 7}, "torques_torque_constants"),  # without constants
    ],
)
def test_a_session_that_cannot_be_built_names_the_parameter(overrides, parameter):
    settings = settings_from_parameters({**TORQUES, **overrides})
    with pytest.raises(StartupError, match=f"'{parameter}'"):
        build_session(settings)


def test_a_links_result_that_is_not_one_names_the_parameter(tmp_path):
    path = tmp_path / "links.json"
    path.write_text('{"bodies": []}')
    settings = settings_from_parameters({**TORQUES, "torques_links_result": str(path)})
    with pytest.raises(StartupError, match="'torques_links_result'.*not a fit-links result"):
        build_session(settings)


def test_a_links_result_with_a_wide_filter_is_found_against_the_nodes_filter(tmp_path):
    """The node warns at start-up of a fit-links result differentiated much wider than
    ``torques_filter_half_width``; not without a result or with a filter as wide."""
    path = tmp_path / "links.json"
    path.write_text('{"bodies": [], "joints": [], "differentiation": {"half_width_s": 0.1255}}')
    settings = settings_from_parameters({**TORQUES, "torques_links_result": str(path)})
    findings = settings.mode_settings.link_model_findings()
    assert [(f.kind, f.subject) for f in findings] == [("link_filter", str(path))]
    assert (
        settings_from_parameters(
            {**TORQUES, "torques_links_result": str(path), "torques_filter_half_width": 0.1}
        ).mode_settings.link_model_findings()
        == []
    )
    assert settings_from_parameters(TORQUES).mode_settings.link_model_findings() == []


def test_the_defaults_give_the_arm_that_moves_the_frame_with_the_urdf_links():
    settings = settings_from_parameters(TORQUES)
    assert settings.weighting == "channel" == modes.get("payload_torques").default_weighting
    session = build_session(settings)
    assert isinstance(session, PayloadTorqueSession) and session.detector is not None
    estimator = session.estimator
    assert estimator.joint_names == PANDA_ARM
    assert estimator.config.frame == "panda_link8" and estimator.config.estimate_offset
    np.testing.assert_array_equal(estimator.links_x, estimator.links.prior)
    assert [d.effort_scale for d in estimator.links.drives] == [1.0] * 7
    target = modes.get("payload_torques").excitation(session, settings)
    assert (target.target, target.sensor_frame, target.joint_names) == (
        "payload",
        "panda_link8",
        PANDA_ARM,
    )


def test_motor_currents_scale_by_torque_constant_gear_ratio_and_sign():
    session = build_session(
        settings_from_parameters(
            {
                **TORQUES,
                "torques_torque_constants": [0.1] * 7,
                "torques_gear_ratios": [100.0] * 7,
                "torques_effort_signs": [1.0, -1.0, 1.0, 1.0, 1.0, 1.0, 1.0],
                "torques_detect_change": False,
                "torques_estimate_offset": False,
            }
        )
    )
    scales = [d.effort_scale for d in session.estimator.links.drives]
    assert scales == pytest.approx([10.0, -10.0, 10.0, 10.0, 10.0, 10.0, 10.0])
    assert session.detector is None and not session.estimator.config.estimate_offset


def test_bounding_ellipsoid_bounds_the_payload_by_its_sphere_or_box_about_the_frame():
    """The node's ``bounding_ellipsoid`` in this mode: the ellipsoid of ``torques_bounding_box``
    (else ``torques_bounding_sphere``) about ``torques_frame``; none without it."""
    from inertia_id_ros.offline.volumes import payload_volume

    assert (
        build_session(settings_from_parameters(TORQUES)).estimator.config.bounding_ellipsoid is None
    )
    sphere = build_session(
        settings_from_parameters(
            {**TORQUES, "bounding_ellipsoid": True, "torques_bounding_sphere": 0.15}
        )
    )
    assert np.allclose(
        sphere.estimator.config.bounding_ellipsoid, payload_volume(0.15).ellipsoid_matrix().ravel()
    )
    box = build_session(
        settings_from_parameters(
            {**TORQUES, "bounding_ellipsoid": True, "torques_bounding_box": [0.1, 0.05, 0.2]}
        )
    )
    assert np.allclose(
        box.estimator.config.bounding_ellipsoid,
        payload_volume(half_extents=[0.1, 0.05, 0.2]).ellipsoid_matrix().ravel(),
    )


def test_the_volume_names_its_parameter_in_findings():
    """The node's and replay's volume findings name the parameter, not a command-line option."""
    assert (
        settings_from_parameters(TORQUES).mode_settings.volume.source
        == "parameter torques_bounding_sphere"
    )
    assert (
        settings_from_parameters(
            {**TORQUES, "torques_bounding_box": [0.1, 0.05, 0.2]}
        ).mode_settings.volume.source
        == "parameter torques_bounding_box"
    )
