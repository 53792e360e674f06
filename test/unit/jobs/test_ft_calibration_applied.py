"""An F/T calibration file applied on every route: ``--ft-calibration`` on a file of the package's
layout, an input description's ``calibration`` key, ``validate``, ``replay`` and the node's
``ft_calibration_file`` (the online estimators); a file naming another sensor refused."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from inertia_id_ros.chain.ft_calibration import SensorCalibration
from inertia_id_ros.core.robots import example_robot_urdf
from inertia_id_ros.errors import DataError, InputError, StartupError
from inertia_id_ros.formats.ft_calibration import write_ft_calibration
from inertia_id_ros.formats.source import LogSource
from inertia_id_ros.jobs.fit_payload import FitPayloadOptions, fit_payload

PANDA = str(example_robot_urdf("panda"))
FRAME = "panda_link8"


@pytest.fixture(scope="module")
def wrist(tmp_path_factory) -> tuple[Path, float, Path, Path]:
    """12 s at 100 Hz of the Panda's wrist sensor with a drifted calibration (gains, coupling,
    offset): ``(NPZ, true mass, calibration file undoing the drift, input description of the
    NPZ applying it)``."""
    from inertia_id_ros.sim.ft_errors import draw_drift
    from inertia_id_ros.sim.payload import PayloadSimulator

    work = tmp_path_factory.mktemp("wrist")
    sim = PayloadSimulator.panda(seed=2)
    t = np.arange(0, 12.0, 0.01)
    rng = np.random.default_rng(0)
    q, dq = sim.measure_joints(t, rng)
    drift = draw_drift([FRAME], rng)[0]
    true_wrench = sim.measure_wrench(t, rng)
    logged = true_wrench @ drift.gain.T + drift.offset
    path = work / "wrist.npz"
    names = np.array(sim.joint_names)
    np.savez(path, t=t, joint_names=names, q=q, dq=dq, wrench=logged, wrench_frame=FRAME)
    inverse = np.linalg.inv(drift.gain)
    sensor = {"frame": FRAME, "matrix": inverse.tolist(), "offset": (-inverse @ drift.offset)}
    sensor["offset"] = sensor["offset"].tolist()
    calibration = work / "cal.yaml"
    write_ft_calibration(calibration, {"ft_calibration": {"sensors": [sensor]}})
    description = work / "wrist.yaml"
    description.write_text(
        "streams: {data: {file: wrist.npz, time: t, time_unit: s}}\n"
        "joints: {stream: data, position: {key: q, unit: rad}, velocity: {key: dq}}\n"
        f"ft_sensors: [{{frame: {FRAME}, stream: data, key: wrench, sign: keep,"
        " calibration: cal.yaml}]\n"
    )
    return path, float(sim.true_theta[0]), calibration, description


def test_the_flag_and_the_description_key_apply_the_same_calibration(wrist):
    path, mass, calibration, description = wrist
    options = FitPayloadOptions()
    drifted = fit_payload(PANDA, FRAME, LogSource(data=str(path)), options)
    flagged = fit_payload(
        PANDA, FRAME, LogSource(data=str(path), ft_calibration=str(calibration)), options
    )
    described = fit_payload(PANDA, FRAME, LogSource(input=str(description)), options)
    assert abs(drifted.estimate.theta[0] - mass) > 0.05 * mass  # the drift is visible
    assert flagged.estimate.theta[0] == pytest.approx(mass, rel=0.02)
    assert np.allclose(described.estimate.theta, flagged.estimate.theta, rtol=1e-9, atol=1e-12)
    assert any("calibration of" in f.message for f in described.findings)
    # --ft-calibration also applies to a description (here, over its own key: the same file)
    both = LogSource(input=str(description), ft_calibration=str(calibration))
    assert np.allclose(
        fit_payload(PANDA, FRAME, both, options).estimate.theta, flagged.estimate.theta
    )


def test_a_calibration_of_another_sensor_is_refused_naming_it(wrist, tmp_path):
    path, _, _, _ = wrist
    other = tmp_path / "other.yaml"
    sensor = {"frame": "r_wrist", "matrix": np.eye(6).tolist(), "offset": [0.0] * 6}
    write_ft_calibration(other, {"ft_calibration": {"sensors": [sensor]}})
    with pytest.raises(DataError, match=r"calibrates \['r_wrist'\], not F/T sensors"):
        fit_payload(PANDA, FRAME, LogSource(data=str(path), ft_calibration=str(other)))
    keyed = tmp_path / "keyed.yaml"
    keyed.write_text(
        f"streams: {{data: {{file: {path}, time: t, time_unit: s}}}}\n"
        "joints: {stream: data, position: {key: q, unit: rad}}\n"
        f"ft_sensors: [{{frame: {FRAME}, stream: data, key: wrench, calibration: {other}}}]\n"
    )
    with pytest.raises(DataError, match=f"no calibration of F/T sensor '{FRAME}'"):
        fit_payload(PANDA, FRAME, LogSource(input=str(keyed)))


def test_validate_and_replay_take_the_calibration(wrist, tmp_path, capsys):
    from inertia_id_ros import cli

    path, mass, calibration, description = wrist
    result = tmp_path / "fit.json"
    fit = ["fit-payload", "--urdf", PANDA, "--sensor-frame", FRAME, "--data", str(path)]
    assert cli.main([*fit, "--ft-calibration", str(calibration), "--json", str(result)]) == 0
    errors = {}
    for label, extra in (("raw", []), ("calibrated", ["--ft-calibration", str(calibration)])):
        out = tmp_path / f"{label}.json"
        arguments = ["validate", str(result), "--data", str(path), "--urdf", PANDA]
        assert cli.main([*arguments, *extra, "--json", str(out)]) == 0
        errors[label] = json.loads(out.read_text())["fit"]["rms"]
    assert errors["calibrated"] < 0.5 * errors["raw"]
    replayed = tmp_path / "replay.json"
    plain = tmp_path / "plain.yaml"
    plain.write_text(description.read_text().replace(", calibration: cal.yaml", ""))
    plain.write_text(plain.read_text().replace("file: wrist.npz", f"file: {path}"))
    arguments = ["replay", "--input", str(plain), "--urdf", PANDA, "--sensor-frame", FRAME]
    assert (
        cli.main([*arguments, "--ft-calibration", str(calibration), "--json", str(replayed)]) == 0
    )
    final = json.loads(replayed.read_text())["bodies"][0]["theta"][0]
    assert final == pytest.approx(mass, rel=0.05)
    capsys.readouterr()
    arguments[2] = str(description)  # calibrates as it loads: not twice
    assert cli.main([*arguments, "--ft-calibration", str(calibration)]) == 2
    assert "applied twice" in capsys.readouterr().err


def test_the_online_estimators_calibrate_each_reading_as_it_comes():
    from inertia_id_ros.core.kinematics import SensorKinematics
    from inertia_id_ros.core.robots import load_model
    from inertia_id_ros.online.payload_estimator import EstimatorConfig, PayloadEstimator

    rng = np.random.default_rng(1)
    matrix = np.eye(6) + 0.05 * rng.normal(size=(6, 6))
    calibration = SensorCalibration(FRAME, matrix, rng.normal(size=6))
    kinematics = SensorKinematics(load_model(PANDA), FRAME)
    readings, t = rng.normal(size=(20, 6)), 0.01 * np.arange(20)
    plain = PayloadEstimator(kinematics, EstimatorConfig(wrench_sign=-1.0))
    calibrated = PayloadEstimator(
        kinematics, EstimatorConfig(wrench_sign=-1.0, wrench_calibration=calibration)
    )
    plain.add_wrenches(t, calibration.before_sign(-1.0).apply(readings))
    calibrated.add_wrenches(t[:10], readings[:10])  # a batch
    for k in range(10, 20):  # and one at a time
        calibrated.add_wrench(t[k], readings[k])
    assert np.allclose(calibrated._wrenches["f"], plain._wrenches["f"], atol=1e-12)


def test_the_whole_body_node_reads_its_calibration_file(tmp_path):
    from inertia_id_ros.modes.base import read_ft_calibration_parameter

    file = tmp_path / "cal.yaml"
    sensor = {"frame": "l_leg_ft_sensor", "matrix": np.eye(6).tolist(), "offset": [1.0] * 6}
    write_ft_calibration(file, {"ft_calibration": {"sensors": [sensor]}})
    read = read_ft_calibration_parameter(
        "ft_calibration_file", str(file), ["l_leg_ft_sensor", "r_leg_ft_sensor"]
    )
    assert np.allclose(read["l_leg_ft_sensor"].offset, 1.0)
    assert read_ft_calibration_parameter("ft_calibration_file", "", ["l_leg_ft_sensor"]) == {}
    with pytest.raises(StartupError, match="'ft_calibration_file'.*not the node's F/T sensors"):
        read_ft_calibration_parameter("ft_calibration_file", str(file), ["r_leg_ft_sensor"])
    with pytest.raises(StartupError, match="'ft_calibration_file'.*cannot read"):
        read_ft_calibration_parameter(
            "ft_calibration_file", str(tmp_path / "missing.yaml"), ["l_leg_ft_sensor"]
        )


def test_calibrate_ft_refuses_a_description_that_already_calibrates(wrist):
    from inertia_id_ros.jobs.calibrate_ft import calibrate_ft

    _, _, _, description = wrist
    with pytest.raises(InputError, match="calibrate-ft fits the readings as logged"):
        calibrate_ft(PANDA, LogSource(input=str(description)))


def test_the_whole_body_estimator_calibrates_a_flipped_sensor_in_its_convention():
    from inertia_id_ros.core.whole_body_model import FTSensor, WholeBodyModel
    from inertia_id_ros.online.whole_body_config import WholeBodyEstimatorConfig
    from inertia_id_ros.online.whole_body_estimator import WholeBodyEstimator

    frames = ("l_leg_ft_sensor", "r_leg_ft_sensor")
    sensors = [
        FTSensor(frames[0], "internal", flip_wrench_sign=True),
        FTSensor(frames[1], "internal"),
    ]
    model = WholeBodyModel.from_urdf(str(example_robot_urdf("icub")), "fixed", sensors, None)
    rng = np.random.default_rng(2)
    calibration = SensorCalibration(
        frames[0], np.eye(6) + 0.1 * rng.normal(size=(6, 6)), rng.normal(size=6)
    )
    config = WholeBodyEstimatorConfig(ft_calibrations={frames[0]: calibration})
    estimator = WholeBodyEstimator(model, config)
    readings, t = rng.normal(size=(8, 6)), 0.01 * np.arange(8)
    estimator.add_wrenches(frames[0], t[:4], readings[:4])
    for k in range(4, 8):
        estimator.add_wrench(frames[0], t[k], readings[k])
    estimator.add_wrenches(frames[1], t, readings)
    # the model negates the flipped sensor's buffered readings: they are -(C (-r) + o)
    flipped = -calibration.apply(-readings)
    assert np.allclose(estimator._wrenches[0]["f"], flipped, atol=1e-12)
    assert np.allclose(estimator._wrenches[1]["f"], readings)  # not calibrated: as they come
    with pytest.raises(ValueError, match=r"\['r_arm_ft_sensor'\] are not F/T sensors"):
        WholeBodyEstimator(
            model, WholeBodyEstimatorConfig(ft_calibrations={"r_arm_ft_sensor": calibration})
        )
