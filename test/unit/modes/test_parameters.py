"""The node's parameters without processes: start-up validation, the session they build, and
run-time changes (``inertia_id_ros.modes.parameters`` imports no rclpy)."""

from __future__ import annotations

import json
import math

import pytest

from helpers.paths import REPO
from inertia_id_ros.core.robots import example_robot_urdf
from inertia_id_ros.errors import InertiaIdError, StartupError
from inertia_id_ros.modes.parameters import (
    MAX_UPDATE_RATE_HZ,
    PARAMETERS,
    RUNTIME_PARAMETERS,
    build_session,
    settings_from_parameters,
    validate_change,
)
from inertia_id_ros.online.link_session import LinkSession
from inertia_id_ros.online.payload_session import PayloadSession

PANDA = str(example_robot_urdf("panda"))
PAYLOAD = {"urdf_path": PANDA, "sensor_frame": "panda_link8"}
LINKS = {"mode": "links", "urdf_path": PANDA, "joints": ["panda_joint1", "panda_joint2"]}


@pytest.mark.parametrize(
    "overrides, parameter",
    [
        ({"window_sec": 0.0}, "window_sec"),
        ({"window_sec": -3.0}, "window_sec"),
        ({"window_sec": math.nan}, "window_sec"),
        ({"window_sec": 1e7}, "window_sec"),  # more memory than allowed
        ({"update_rate_hz": 0.0}, "update_rate_hz"),
        ({"update_rate_hz": 2 * MAX_UPDATE_RATE_HZ}, "update_rate_hz"),
        ({"warning_period_sec": -1.0}, "warning_period_sec"),
        ({"max_input_rate_hz": 0.0}, "max_input_rate_hz"),
        ({"qos_depth": 0}, "qos_depth"),
        ({"method": "magic"}, "method"),
        ({"solver_options": "{nope: 1}"}, "solver_options"),
        ({"solver_options": "[1, 2]"}, "solver_options"),
        ({"wrench_limits": [100.0, 100.0]}, "wrench_limits"),
        ({"wrench_limits": [100.0, 100.0, 100.0, 10.0, 10.0, -1.0]}, "wrench_limits"),
        ({"mode": "magic"}, "mode"),
        ({"sensor_frame": ""}, "sensor_frame"),
        ({"payload_change_threshold": 0.0}, "payload_change_threshold"),
        ({"mode": "links", "joints": None}, "joints"),  # no joints, no chain config
        ({"mode": "links", "joints": ["panda_joint1"], "prior_weight": -1.0}, "prior_weight"),
        ({"coulomb_velocity": -0.1}, "coulomb_velocity"),
        ({"no_such_parameter": 1}, "no_such_parameter"),
        ({"bounding_ellipsoid": True, "method": "manifold"}, "bounding_ellipsoid"),
        ({"payload_bounding_sphere": 0.0}, "payload_bounding_sphere"),
        ({"payload_bounding_box": [0.1, 0.1]}, "payload_bounding_box"),
        ({"payload_bounding_box": [0.1, 0.1, -0.1]}, "payload_bounding_box"),
        ({"excite_dry_run_speed_scale": 1.5}, "excite_dry_run_speed_scale"),
        ({"excite_collision_margin": 0.0}, "excite_collision_margin"),
        ({"design_time_limit_sec": -1.0}, "design_time_limit_sec"),
    ],
)
def test_invalid_startup_parameters_name_the_parameter(overrides, parameter):
    with pytest.raises(StartupError, match=f"'{parameter}'") as raised:
        settings_from_parameters({**PAYLOAD, **overrides})
    assert isinstance(raised.value, InertiaIdError)


@pytest.mark.parametrize(
    "overrides, parameter",
    [
        ({"sensor_frame": "no_such_frame"}, "sensor_frame"),
        ({"urdf_path": "/nonexistent/robot.urdf"}, "urdf_path"),
        ({"urdf_path": "", "robot_description": "<robot"}, "robot_description"),
        ({"urdf_path": ""}, "urdf_path"),
        ({**LINKS, "joints": ["panda_joint1", "nope"]}, "joints"),
        ({**LINKS, "joints": None, "chain_config": "/nonexistent/chain.yaml"}, "chain_config"),
    ],
)
def test_a_session_that_cannot_be_built_names_the_parameter(overrides, parameter):
    settings = settings_from_parameters({**PAYLOAD, **overrides})
    with pytest.raises(StartupError, match=f"'{parameter}'"):
        build_session(settings)


def test_valid_parameters_build_each_mode_with_the_node_defaults():
    payload = build_session(settings_from_parameters(PAYLOAD))
    assert isinstance(payload, PayloadSession) and payload.detector is not None
    assert payload.estimator.config.window_sec == 10.0 and payload.estimator.config.method == "lmi"
    links = build_session(settings_from_parameters(LINKS))
    assert isinstance(links, LinkSession)
    assert links.estimator.link_model.joint_names == ("panda_joint1", "panda_joint2")
    chain = build_session(
        settings_from_parameters(
            {"mode": "links", "chain_config": str(REPO / "config" / "go1_front_left_leg.yaml")}
        )
    )
    assert chain.estimator.actuators is not None and chain.estimator.link_model.n_joints == 3


def test_every_parameter_has_a_description_and_runtime_ones_are_listed():
    assert all(p.description for p in PARAMETERS)
    assert set(RUNTIME_PARAMETERS) == {"method", "solver_options", "window_sec", "update_rate_hz"}


@pytest.mark.parametrize(
    "change, reason",
    [
        ({"sensor_frame": "panda_link7"}, "read-only"),
        ({"window_sec": 0.0}, "window_sec must be"),
        ({"window_sec": math.inf}, "window_sec must be"),
        ({"update_rate_hz": -1.0}, "update_rate_hz must be"),
        ({"update_rate_hz": 1000.0}, "<= 100"),
        ({"method": "magic"}, "unknown method"),
        ({"solver_options": "{nope: 1}"}, "do not apply"),
        ({"method": "ols", "solver_options": "{tol: 1.0e-9}"}, "do not apply"),  # lmi's option
        ({"window_sec": 1e7}, "GiB"),
    ],
)
def test_invalid_runtime_changes_are_refused_with_the_reason(change, reason):
    settings = settings_from_parameters({**PAYLOAD, "solver_options": "{tol: 1.0e-9}"})
    with pytest.raises(ValueError, match=reason):
        validate_change(settings, change, (6, 16))


def test_a_valid_runtime_change_gives_the_new_settings_without_side_effects():
    settings = settings_from_parameters(PAYLOAD)
    new = validate_change(
        settings,
        {"method": "manifold", "solver_options": "", "window_sec": 20.0, "update_rate_hz": 5.0},
        (6, 16),
    )
    assert (new.method, new.solver_options, new.window_sec, new.update_rate_hz) == (
        "manifold",
        {},
        20.0,
        5.0,
    )
    assert settings.method == "lmi" and settings.window_sec == 10.0  # unchanged
    numbers = validate_change(settings, {"solver_options": "{tol: 1e-9}"}, (6, 16))
    assert numbers.solver_options == {"tol": 1e-9}  # YAML 1.1 reads 1e-9 as a string


def test_bounding_ellipsoid_bounds_the_payload_by_its_sphere_or_box_and_the_links_by_the_urdf():
    import numpy as np

    from inertia_id_ros.offline.volumes import payload_volume
    from inertia_id_ros.options import DEFAULT_PAYLOAD_RADIUS

    assert (
        build_session(settings_from_parameters(PAYLOAD)).estimator.config.bounding_ellipsoid is None
    )
    sphere = build_session(settings_from_parameters({**PAYLOAD, "bounding_ellipsoid": True}))
    assert np.allclose(
        sphere.estimator.config.bounding_ellipsoid,
        payload_volume(DEFAULT_PAYLOAD_RADIUS).ellipsoid_matrix().ravel(),
    )
    box = build_session(
        settings_from_parameters(
            {
                **PAYLOAD,
                "bounding_ellipsoid": True,
                "payload_bounding_sphere": 0.2,
                "payload_bounding_box": [0.1, 0.05, 0.2],
            }
        )
    )
    assert np.allclose(
        box.estimator.config.bounding_ellipsoid,
        payload_volume(half_extents=[0.1, 0.05, 0.2]).ellipsoid_matrix().ravel(),
    )
    links = build_session(
        settings_from_parameters(
            {
                **LINKS,
                "joints": [f"panda_joint{j}" for j in range(1, 8)],
                "bounding_ellipsoid": True,
            }
        )
    )
    # the Panda's first two links' URDF inertials leave their collision boxes: no yardstick
    assert [q is not None for q in links.estimator.config.bounding_ellipsoids] == [
        False,
        False,
        True,
        True,
        True,
        True,
        True,
    ]
    chain = build_session(
        settings_from_parameters(
            {  # the URDF named by the chain config
                "mode": "links",
                "chain_config": str(REPO / "config" / "go1_front_left_leg.yaml"),
                "bounding_ellipsoid": True,
            }
        )
    )
    assert all(q is not None for q in chain.estimator.config.bounding_ellipsoids)


def test_a_run_time_switch_to_a_method_that_cannot_take_the_ellipsoids_is_refused():
    settings = settings_from_parameters({**PAYLOAD, "bounding_ellipsoid": True})
    with pytest.raises(ValueError, match="'manifold' cannot take bounding ellipsoids"):
        validate_change(settings, {"method": "manifold"}, (6, 16))
    assert validate_change(settings, {"method": "pointmass"}, (6, 16)).method == "pointmass"


def test_what_a_method_needs_of_the_session_is_its_modes():
    """The node's ~/identify and run-time method changes ask the mode
    (``Mode.check_session_method``): cad_prior needs a payload's CAD values, not a chain's."""
    from inertia_id_ros import modes

    values = {"urdf_path": PANDA, "sensor_frame": "panda_link8", "payload_prior": "none"}
    settings = settings_from_parameters(values)
    session = build_session(settings)
    payload = modes.get("payload")
    with pytest.raises(ValueError, match="needs the payload's CAD values"):
        payload.check_session_method(session, "cad_prior")
    payload.check_session_method(session, "lmi")
    with pytest.raises(ValueError, match="needs the payload's CAD values"):
        validate_change(settings, {"method": "cad_prior"}, (6, 16), session)
    assert validate_change(settings, {"method": "cad_prior"}, (6, 16)).method == "cad_prior"
    links = settings_from_parameters(
        {"mode": "links", "urdf_path": PANDA, "joints": ["panda_joint2"]}
    )
    chain = build_session(links)
    modes.get("links").check_session_method(chain, "cad_prior")  # the URDF's links: the prior
    assert validate_change(links, {"method": "cad_prior"}, (1, 14), chain).method == "cad_prior"


def test_the_links_modes_excitation_target_carries_its_chain_configs_coupling(tmp_path):
    from inertia_id_ros import modes
    from inertia_id_ros.chain.actuators import ChainConfig

    joints = ("panda_joint5", "panda_joint6", "panda_joint7")
    path = tmp_path / "wrist.yaml"
    coupling = {"joints": list(joints[1:]), "matrix": [[1.0, 0.0], [0.5, 1.0]]}
    ChainConfig(joints, robot="panda", coupling=coupling).save(path)
    links = modes.get("links")
    settings = settings_from_parameters({"mode": "links", "chain_config": str(path)})
    target = links.excitation(build_session(settings), settings)
    assert target.target == "links" and target.joint_names == joints
    assert target.coupling is not None and target.coupling.coupled == ("panda_joint7",)
    plain = settings_from_parameters(LINKS)
    assert links.excitation(build_session(plain), plain).coupling is None


def test_a_known_body_calibrates_the_payload_modes_sensor_online(tmp_path):
    """``wrench_calibration_online_body``: a result JSON whose body is in the sensor frame."""
    body = tmp_path / "body.json"
    theta = [1.5, 0.05, -0.03, 0.1, 0.01, 0.0, 0.01, 0.0, 0.0, 0.01]
    body.write_text(json.dumps({"bodies": [{"frame": "panda_link8", "theta": theta}]}))
    values = {**PAYLOAD, "wrench_calibration_online_body": str(body)}
    estimator = build_session(settings_from_parameters(values)).estimator
    assert estimator.ft_calibrator is not None and estimator.ft_calibrator.frames == (
        "panda_link8",
    )
    assert estimator.ft_calibrator.config.kind == "gains" and estimator.config.calibration_body
    with pytest.raises(StartupError, match="'wrench_calibration_online_body': x: cannot read"):
        build_session(settings_from_parameters({**values, "wrench_calibration_online_body": "x"}))
