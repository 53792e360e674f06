"""The node's whole_body mode parameters without processes: the configs build a session; bad
input names the item."""

from __future__ import annotations

import pytest

from helpers.paths import REPO
from inertia_id_ros.core.robots import example_robot_urdf
from inertia_id_ros.errors import StartupError
from inertia_id_ros.modes.parameters import (
    build_session,
    parameters_from_file,
    settings_from_parameters,
)
from inertia_id_ros.online.whole_body_session import WholeBodySession


def _config(name: str, robot: str) -> dict:
    values = parameters_from_file(REPO / "config" / name)
    return {**values, "urdf_path": str(example_robot_urdf(robot))}


ICUB = _config("icub_whole_body.yaml", "icub")
STAND = _config("icub_fixed.yaml", "icub")


@pytest.mark.parametrize(
    "name, robot, n_sensors, n_bodies",
    [
        ("icub_whole_body.yaml", "icub", 7, 39),
        ("go1_whole_body.yaml", "go1", 4, 39),
        ("icub_suspended.yaml", "icub", 7, 39),
        ("icub_fixed.yaml", "icub", 6, 38),  # on a stand, the root's placeholder is the world's
        ("icub_stance.yaml", "icub", 4, 39),
    ],
)  # rooted at the sole: the root link moves, a body
def test_whole_body_configs_build_a_session(name, robot, n_sensors, n_bodies):
    values = _config(name, robot)
    session = build_session(settings_from_parameters(values))
    assert isinstance(session, WholeBodySession)
    estimator = session.estimator
    assert len(estimator.sensor_frames) == n_sensors
    assert estimator.config.max_sample_rate_hz == 50.0 and estimator.config.window_sec == 60.0
    assert len(estimator.model.bodies) == n_bodies
    assert (estimator.model.imu_frame is None) == (not values["imu_topic"])


@pytest.mark.parametrize(
    "overrides, item",
    [
        ({"ft_types": ["internal"] * 6 + ["wrist"]}, "'wrist'"),
        ({"ft_types": ["internal"] * 6}, "'ft_types'"),
        ({"ft_topics": ICUB["ft_topics"][:-1] + [""]}, "'l_sole' has no topic"),
        ({"imu_frame": ""}, "'imu_frame'"),
        ({"ft_frames": None}, "'ft_frames'"),
        ({"base": "wheeled"}, "'base'"),
        ({"sample_rate_hz": 0.0}, "'sample_rate_hz'"),
        ({"weighting": "joint"}, "'weighting': unknown weighting 'joint'"),
        ({"input_path": "zero_copy"}, "'input_path': unknown input path 'zero_copy'"),
        ({"ft_flip_wrench_sign": ["r_elbow"]}, "'ft_flip_wrench_sign': 'r_elbow' is not one of"),
    ],
)
def test_bad_whole_body_parameters_name_the_item(overrides, item):
    with pytest.raises(StartupError, match=item):
        settings_from_parameters({**ICUB, **overrides})


@pytest.mark.parametrize(
    "values, item",
    [
        ({**ICUB, "imu_topic": ""}, "'imu_topic' is required with base 'floating'"),
        ({**STAND, "imu_topic": "/imu"}, "'imu_frame' is required with an imu_topic"),
        ({**STAND, "ft_frames": None, "ft_topics": None, "ft_types": None}, "'ft_frames'"),
        (
            {
                **STAND,
                "ft_frames": ["l_sole"],
                "ft_topics": ["/l_sole/wrench"],
                "ft_types": ["contact"],
            },
            "'ft_types': a fixed base has rows only from internal",
        ),
        ({**STAND, "base": "tripod"}, "'base': 'tripod' is not one of"),
    ],
)
def test_bad_fixed_base_parameters_name_the_item(values, item):
    with pytest.raises(StartupError, match=item):
        settings_from_parameters(values)


def test_a_fixed_base_takes_an_imu_or_the_efforts_alone():
    session = build_session(
        settings_from_parameters({**STAND, "imu_topic": "/imu", "imu_frame": "imu_frame"})
    )
    assert session.estimator.model.imu_frame == "imu_frame"
    session = build_session(
        settings_from_parameters(
            {**STAND, "ft_frames": None, "ft_topics": None, "ft_types": None, "use_efforts": True}
        )
    )
    assert session.estimator.sensor_frames == () and session.estimator.config.with_efforts
    suspended = _config("icub_suspended.yaml", "icub")
    session = build_session(settings_from_parameters({**suspended, "imu_topic": ""}))
    assert session.estimator.model.imu_frame is None


def test_sensors_reporting_the_opposite_wrench_are_flipped():
    """``ft_flip_wrench_sign``: the real iCub's child_to_parent sensors."""
    flipped = ["l_arm_ft_sensor", "r_leg_ft_sensor"]
    session = build_session(settings_from_parameters({**ICUB, "ft_flip_wrench_sign": flipped}))
    sensors = session.estimator.model.sensors
    assert [s.frame for s in sensors if s.flip_wrench_sign] == flipped


@pytest.mark.parametrize(
    "overrides, item",
    [
        ({"imu_frame": "no_imu_here"}, "parameter 'imu_frame': frame 'no_imu_here'"),
        ({"ft_frames": ICUB["ft_frames"][:-1] + ["l_toe"]}, "parameter 'ft_frames': frame 'l_toe'"),
        ({"urdf_path": "/nonexistent.urdf"}, "parameter 'urdf_path'"),
    ],
)
def test_frames_not_in_the_urdf_name_the_item(overrides, item):
    settings = settings_from_parameters({**ICUB, **overrides})
    with pytest.raises(StartupError, match=item):
        build_session(settings)


def test_a_robot_description_builds_the_session_and_leaves_no_file(tmp_path, monkeypatch):
    import tempfile

    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    xml = example_robot_urdf("go1").read_text()
    values = {**_config("go1_whole_body.yaml", "go1"), "urdf_path": "", "robot_description": xml}
    session = build_session(settings_from_parameters(values))
    assert len(session.estimator.sensor_frames) == 4
    assert list(tmp_path.iterdir()) == []


STANCE = _config("icub_stance.yaml", "icub")


def test_a_fixed_base_at_a_urdf_frame_with_its_tilt_reaches_the_model_and_the_session():
    """config/icub_stance.yaml (rooted at ``l_sole``, tilt from the IMU) and the tilt given."""
    session = build_session(settings_from_parameters(STANCE))
    model, config = session.estimator.model, session.estimator.config
    assert (model.base, model.fixed_frame, model.imu_frame) == ("fixed", "l_sole", "imu_frame")
    assert config.imu_tilt == "correct"
    session = build_session(
        settings_from_parameters({**STANCE, "fixed_tilt": [0.03, -0.05], "imu_tilt": "check"})
    )
    assert session.estimator.model.fixed_tilt == pytest.approx((0.03, -0.05))
    assert session.estimator.config.imu_tilt == "check"
    level = build_session(settings_from_parameters({**STANCE, "imu_topic": "", "imu_frame": ""}))
    assert level.estimator.model.fixed_tilt == (0.0, 0.0)
    assert level.estimator.model.imu_frame is None


@pytest.mark.parametrize(
    "values, item",
    [
        (
            {**ICUB, "fixed_frame": "l_sole"},
            "'fixed_frame' applies to base 'fixed', not 'floating'",
        ),
        ({**ICUB, "fixed_tilt": [0.1, 0.0]}, "'fixed_tilt' applies to base 'fixed'"),
        ({**STANCE, "fixed_tilt": [0.1]}, "'fixed_tilt' must be two finite angles"),
        ({**STANCE, "fixed_tilt": [0.1, float("nan")]}, "'fixed_tilt' must be two finite angles"),
        ({**STANCE, "imu_tilt": "guess"}, "'imu_tilt': 'guess' is not one of"),
        ({**ICUB, "ft_estimate_offset": ["l_toe"]}, "'ft_estimate_offset': 'l_toe' is not one of"),
    ],
)
def test_bad_fixed_frame_tilt_and_offset_parameters_name_the_item(values, item):
    with pytest.raises(StartupError, match=item):
        settings_from_parameters(values)


def test_a_fixed_frame_not_in_the_urdf_names_the_item():
    settings = settings_from_parameters({**STANCE, "fixed_frame": "l_toe"})
    with pytest.raises(StartupError, match="parameter 'fixed_frame': .*'l_toe'"):
        build_session(settings)


def test_contact_sensors_listed_in_ft_estimate_offset_have_their_offsets_estimated():
    default = build_session(settings_from_parameters(ICUB)).estimator.model
    assert "l_sole" not in default.offset_sensors  # a contact sensor: no offset by default
    session = build_session(settings_from_parameters({**ICUB, "ft_estimate_offset": ["l_sole"]}))
    model = session.estimator.model
    assert set(model.offset_sensors) == set(default.offset_sensors) | {"l_sole"}


def test_bounding_ellipsoids_bound_the_links_whose_urdf_volume_holds_their_inertial():
    assert (
        build_session(settings_from_parameters(STAND)).estimator.config.bounding_ellipsoids is None
    )
    session = build_session(settings_from_parameters({**STAND, "bounding_ellipsoid": True}))
    ellipsoids = session.estimator.config.bounding_ellipsoids
    assert len(ellipsoids) == len(session.estimator.model.bodies)
    bounded = [q for q in ellipsoids if q is not None]
    assert bounded and all(len(q) == 16 for q in bounded)


def test_the_calibration_file_reaches_the_session_and_a_foreign_sensor_is_refused(tmp_path):
    import numpy as np

    from inertia_id_ros.formats.ft_calibration import write_ft_calibration

    file = tmp_path / "cal.yaml"
    sensor = {"frame": "l_leg_ft_sensor", "matrix": (2.0 * np.eye(6)).tolist(), "offset": [0] * 6}
    write_ft_calibration(file, {"ft_calibration": {"sensors": [sensor]}})
    session = build_session(settings_from_parameters({**ICUB, "ft_calibration_file": str(file)}))
    calibrations = session.estimator.config.ft_calibrations
    assert list(calibrations) == ["l_leg_ft_sensor"]
    assert np.allclose(calibrations["l_leg_ft_sensor"].matrix, 2.0 * np.eye(6))
    sensor["frame"] = "l_hand_ft_sensor"
    write_ft_calibration(file, {"ft_calibration": {"sensors": [sensor]}})
    with pytest.raises(StartupError, match=r"'ft_calibration_file': .* calibrates \['l_hand"):
        build_session(settings_from_parameters({**ICUB, "ft_calibration_file": str(file)}))


def test_online_calibration_parameters_build_the_calibrator_or_name_the_item():
    """``ft_calibration_online``: internal sensors only; ``ft_calibration_online_kind``."""
    values = {**ICUB, "ft_calibration_online": ["l_leg_ft_sensor"]}
    calibrator = build_session(settings_from_parameters(values)).estimator.ft_calibrator
    assert calibrator is not None and calibrator.frames == ("l_leg_ft_sensor",)
    assert calibrator.config.kind == "full"
    assert build_session(settings_from_parameters(ICUB)).estimator.ft_calibrator is None
    with pytest.raises(StartupError, match="'ft_calibration_online': 'l_sole' is not one of"):
        settings_from_parameters({**ICUB, "ft_calibration_online": ["l_sole"]})
    with pytest.raises(StartupError, match="'ft_calibration_online_kind': 'diagonal'"):
        settings_from_parameters({**values, "ft_calibration_online_kind": "diagonal"})
