"""The calibrate-ft job called from Python (:mod:`inertia_id_ros.jobs.calibrate_ft`): iCub on
one sole with drifted leg and foot sensors, no IMU, and a Panda's wrist sensor; the calibration
file read back and applied by fit-whole-body and fit-payload; bad inputs refused."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from inertia_id_ros.core.robots import example_robot_urdf
from inertia_id_ros.errors import DataError, InputError
from inertia_id_ros.formats.ft_calibration import read_ft_calibration, write_ft_calibration
from inertia_id_ros.formats.source import LogSource
from inertia_id_ros.jobs.calibrate_ft import CalibrateFTOptions, calibrate_ft, calibrate_wrist_ft
from inertia_id_ros.jobs.fit_whole_body import FitWholeBodyOptions, fit_whole_body

ICUB = str(example_robot_urdf("icub"))
PANDA = str(example_robot_urdf("panda"))
DRIFTED = ("l_leg_ft_sensor", "l_foot_ft_sensor")
STANCE = CalibrateFTOptions(base="fixed", fixed_frame="l_sole", fixed_tilt=(0.03, -0.05))


@pytest.fixture(scope="module")
def stance(tmp_path_factory) -> tuple[Path, dict]:
    """12 s at 50 Hz of iCub on its left sole, its leg and foot sensors drifted, without the IMU
    keys: the NPZ and its data."""
    from inertia_id_ros.sim.ft_errors import apply_drift, draw_drift
    from inertia_id_ros.sim.whole_body_robots import icub_stance

    data = icub_stance(seed=3).record(12.0, 50.0)
    apply_drift(data, draw_drift(DRIFTED, np.random.default_rng(4)))
    for key in ("imu_frame", "imu_orientation", "imu_angular_velocity", "imu_linear_acceleration"):
        data.pop(key)
    path = tmp_path_factory.mktemp("stance") / "stance.npz"
    np.savez(path, **data)
    return path, data


def test_stance_sensors_calibrated_against_the_factory_with_fitted_offsets(stance, tmp_path):
    path, data = stance
    options = CalibrateFTOptions(**{**STANCE.__dict__, "sensors": DRIFTED, "holdout": 0.5})
    result = calibrate_ft(ICUB, LogSource(data=str(path)), options)
    assert result.estimate is not None and result.held_out is not None
    assert set(result.estimate) == set(DRIFTED) and not result.refused
    leg = result.estimate["l_leg_ft_sensor"]
    truth = data["true_ft_calibration"][list(data["ft_frames"]).index("l_leg_ft_sensor")]
    assert leg.matrix[0, 0] == pytest.approx(truth[0, 0], rel=0.15)  # the 2.65x fx undone
    assert result.held_out["l_leg_ft_sensor"].ratio[0] < 0.1
    for errors in result.held_out.values():
        assert np.all(errors.ratio < 0.6)
    assert result.document["held_out"]["l_foot_ft_sensor"]["ratio"][3] < 0.5
    assert any("held-out last 50 %" in line for line in result.summary)
    file = tmp_path / "cal.yaml"
    write_ft_calibration(file, result.calibration_file)
    read = read_ft_calibration(file)
    assert np.allclose(read["l_leg_ft_sensor"].matrix, leg.matrix)
    fit = fit_whole_body(
        ICUB,
        LogSource(data=str(path), ft_calibration=str(file)),
        FitWholeBodyOptions(
            base="fixed",
            fixed_frame="l_sole",
            fixed_tilt=(0.03, -0.05),
            filter_half_width=0.1,
            method="ols",
        ),
    )
    assert fit.estimate is not None  # the calibrated readings fit: the leg's error drops
    assert fit.document["residual_rms"] < 1.0


def test_bad_calibrations_and_sensors_are_refused(stance, tmp_path):
    path, _ = stance
    bad = tmp_path / "bad.yaml"
    bad.write_text(
        "ft_calibration:\n  sensors:\n    - {frame: l_leg_ft_sensor, matrix: [[1, 0]],\n"
        "       offset: [0, 0, 0, 0, 0, 0]}\n"
    )
    with pytest.raises(
        DataError, match="l_leg_ft_sensor: 'matrix': a calibration matrix must be 6x6"
    ):
        read_ft_calibration(bad)
    bad.write_text("joints: []\n")
    with pytest.raises(DataError, match="not an F/T calibration"):
        read_ft_calibration(bad)
    other = tmp_path / "other.yaml"
    write_ft_calibration(
        other,
        {
            "ft_calibration": {
                "sensors": [{"frame": "r_arm", "matrix": np.eye(6).tolist(), "offset": [0] * 6}]
            }
        },
    )
    options = FitWholeBodyOptions(base="fixed", fixed_frame="l_sole")
    with pytest.raises(DataError, match=r"names \['r_arm'\], not sensors of the recording"):
        fit_whole_body(ICUB, LogSource(data=str(path), ft_calibration=str(other)), options)
    with pytest.raises(InputError, match="calibrate-ft fits the readings as logged: remove"):
        calibrate_ft(ICUB, LogSource(data=str(path), ft_calibration=str(other)), STANCE)
    with pytest.raises(InputError, match="'r_arm_ft_sensor' is not an internal F/T sensor"):
        calibrate_ft(
            ICUB,
            LogSource(data=str(path)),
            CalibrateFTOptions(**{**STANCE.__dict__, "sensors": ("r_arm_ft_sensor",)}),
        )


def test_wrist_sensor_calibrated_against_a_known_payload(tmp_path):
    import json

    from inertia_id_ros.sim.ft_errors import draw_drift
    from inertia_id_ros.sim.payload import PayloadSimulator

    sim = PayloadSimulator.panda(seed=2)
    t = np.arange(0, 12.0, 0.01)
    rng = np.random.default_rng(0)
    q, dq = sim.measure_joints(t, rng)
    drift = draw_drift(["panda_link8"], rng)[0]
    logged = sim.measure_wrench(t, rng) @ drift.gain.T + drift.offset
    np.savez(
        tmp_path / "wrist.npz",
        t=t,
        joint_names=np.array(sim.joint_names),
        q=q,
        dq=dq,
        wrench=logged,
        wrench_frame=np.array("panda_link8"),
    )
    payload = tmp_path / "payload.json"
    body = {"name": "payload", "frame": "panda_link8", "theta": sim.true_theta.tolist()}
    payload.write_text(json.dumps({"bodies": [body]}))
    result = calibrate_wrist_ft(
        PANDA, "panda_link8", str(payload), LogSource(data=str(tmp_path / "wrist.npz"))
    )
    assert result.held_out is not None
    cal = result.estimate["panda_link8"]
    assert cal.matrix[0, 0] == pytest.approx(1 / 2.65, rel=0.05)
    assert np.all(result.held_out["panda_link8"].ratio[:3] < 0.5)


def test_the_command_writes_the_sensors_firmware_matrix_recalibrated(stance, tmp_path, capsys):
    from inertia_id_ros import cli
    from inertia_id_ros.formats.firmware_matrix import (
        FirmwareMatrix,
        firmware_matrix_text,
        read_firmware_matrix,
    )

    path, _ = stance
    full_scale = np.array([1500.0, 1500.0, 2000.0, 200.0, 200.0, 200.0])  # room for the fix
    current = tmp_path / "matrix_SN101.txt"
    current.write_bytes(
        firmware_matrix_text(FirmwareMatrix(0.5 * np.diag(full_scale) / 32767, full_scale)).encode()
    )
    out = tmp_path / "cal.yaml"
    arguments = ["calibrate-ft", "--urdf", ICUB, "--data", str(path), "--base", "fixed"]
    arguments += ["--fixed-frame", "l_sole", "--fixed-tilt", "0.03,-0.05", "--holdout", "0"]
    arguments += ["--sensors", "l_leg_ft_sensor", "--out", str(out)]
    assert cli.main([*arguments, "--firmware-matrix", f"l_leg_ft_sensor={current}"]) == 0
    written = tmp_path / "matrix_SN101_insitu.txt"
    assert str(written) in capsys.readouterr().out
    calibration = read_ft_calibration(out)["l_leg_ft_sensor"]
    composed = calibration.matrix @ read_firmware_matrix(current).matrix
    step = full_scale[:, None] / 32767 / 2**15  # one 1.15 step (N per count)
    assert np.all(np.abs(read_firmware_matrix(written).matrix - composed) <= 0.5 * step + 1e-15)
    assert cli.main([*arguments, "--firmware-matrix", f"r_leg_ft_sensor={current}"]) != 0
    assert "'r_leg_ft_sensor' is not among ['l_leg_ft_sensor']" in capsys.readouterr().err
