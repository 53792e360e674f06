"""The node's whole_body mode parameters without processes: the configs build a session; bad
input names the item."""

from __future__ import annotations

import pytest
import yaml

from helpers.paths import REPO
from inertia_id_ros.core.robots import example_robot_urdf
from inertia_id_ros.errors import StartupError
from inertia_id_ros.online.session import WholeBodySession
from inertia_id_ros.ros.parameters import build_session, settings_from_parameters, validate_change


def _config(name: str, robot: str) -> dict:
    values = yaml.safe_load((REPO / "config" / name).read_text())["inertia_id"]["ros__parameters"]
    return {**values, "urdf_path": str(example_robot_urdf(robot))}


ICUB = _config("icub_whole_body.yaml", "icub")
STAND = _config("icub_fixed.yaml", "icub")


@pytest.mark.parametrize("name, robot, n_sensors, n_bodies", [
    ("icub_whole_body.yaml", "icub", 7, 39), ("go1_whole_body.yaml", "go1", 4, 39),
    ("icub_suspended.yaml", "icub", 7, 39),
    ("icub_fixed.yaml", "icub", 6, 38)])  # on a stand, the root's placeholder is the world's
def test_whole_body_configs_build_a_session(name, robot, n_sensors, n_bodies):
    session = build_session(settings_from_parameters(_config(name, robot)))
    assert isinstance(session, WholeBodySession)
    estimator = session.estimator
    assert len(estimator.sensor_frames) == n_sensors
    assert estimator.config.max_sample_rate_hz == 50.0 and estimator.config.window_sec == 60.0
    assert len(estimator.model.bodies) == n_bodies
    assert (estimator.model.imu_frame is None) == (estimator.model.base == "fixed")


@pytest.mark.parametrize("overrides, item", [
    ({"ft_types": ["internal"] * 6 + ["wrist"]}, "'wrist'"),
    ({"ft_types": ["internal"] * 6}, "'ft_types'"),
    ({"ft_topics": ICUB["ft_topics"][:-1] + [""]}, "'l_sole' has no topic"),
    ({"imu_frame": ""}, "'imu_frame'"),
    ({"ft_frames": None}, "'ft_frames'"),
    ({"base": "wheeled"}, "'base'"),
    ({"method": "manifold"}, "'method'"),
    ({"sample_rate_hz": 0.0}, "'sample_rate_hz'"),
    ({"method": "cad_prior"}, "'method': 'cad_prior' does not solve whole-body"),
    ({"weighting": "joint"}, "'weighting': unknown weighting 'joint'"),
    ({"ft_flip_wrench_sign": ["r_elbow"]}, "'ft_flip_wrench_sign': 'r_elbow' is not one of"),
])
def test_bad_whole_body_parameters_name_the_item(overrides, item):
    with pytest.raises(StartupError, match=item):
        settings_from_parameters({**ICUB, **overrides})


@pytest.mark.parametrize("values, item", [
    ({**ICUB, "imu_topic": ""}, "'imu_topic' is required with base 'floating'"),
    ({**STAND, "imu_topic": "/imu"}, "'imu_frame' is required with an imu_topic"),
    ({**STAND, "ft_frames": None, "ft_topics": None, "ft_types": None}, "'ft_frames'"),
    ({**STAND, "ft_frames": ["l_sole"], "ft_topics": ["/l_sole/wrench"],
      "ft_types": ["contact"]}, "'ft_types': a fixed base has rows only from internal"),
    ({**STAND, "base": "tripod"}, "'base': 'tripod' is not one of"),
])
def test_bad_fixed_base_parameters_name_the_item(values, item):
    with pytest.raises(StartupError, match=item):
        settings_from_parameters(values)


def test_a_fixed_base_takes_an_imu_or_the_efforts_alone():
    session = build_session(settings_from_parameters(
        {**STAND, "imu_topic": "/imu", "imu_frame": "imu_frame"}))
    assert session.estimator.model.imu_frame == "imu_frame"
    session = build_session(settings_from_parameters(
        {**STAND, "ft_frames": None, "ft_topics": None, "ft_types": None, "use_efforts": True}))
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


@pytest.mark.parametrize("overrides, item", [
    ({"imu_frame": "no_imu_here"}, "parameter 'imu_frame': frame 'no_imu_here'"),
    ({"ft_frames": ICUB["ft_frames"][:-1] + ["l_toe"]}, "parameter 'ft_frames': frame 'l_toe'"),
    ({"urdf_path": "/nonexistent.urdf"}, "parameter 'urdf_path'"),
])
def test_frames_not_in_the_urdf_name_the_item(overrides, item):
    settings = settings_from_parameters({**ICUB, **overrides})
    with pytest.raises(StartupError, match=item):
        build_session(settings)


@pytest.mark.parametrize("method", ["cad_prior", "manifold"])
def test_a_run_time_method_the_whole_body_problem_cannot_take_is_refused(method):
    settings = settings_from_parameters(ICUB)
    with pytest.raises(ValueError, match=f"{method!r} does not solve whole-body problems"):
        validate_change(settings, {"method": method}, (1, 1))
    assert validate_change(settings, {"method": "ols"}, (1, 1)).method == "ols"


def test_a_robot_description_builds_the_session_and_leaves_no_file(tmp_path, monkeypatch):
    import tempfile

    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    xml = example_robot_urdf("go1").read_text()
    values = {**_config("go1_whole_body.yaml", "go1"), "urdf_path": "", "robot_description": xml}
    session = build_session(settings_from_parameters(values))
    assert len(session.estimator.sensor_frames) == 4
    assert list(tmp_path.iterdir()) == []
