"""F/T sensors calibrated online, while identifying (:mod:`inertia_id_ros.online.ft_calibrator`):
a drifted iCub leg sensor against the URDF's links, a drifted wrist sensor against a known body;
the calibration published with its standard errors, applied only when it predicts held-out
readings better, every estimate consistent; bad settings refused."""

from __future__ import annotations

import numpy as np
import pytest

from inertia_id_ros.core.inertia import check_consistency
from inertia_id_ros.core.robots import example_robot_urdf, load_model
from inertia_id_ros.errors import StartupError
from inertia_id_ros.online.ft_calibrator import OnlineCalibrationConfig
from inertia_id_ros.sim.ft_errors import apply_drift, draw_drift

LEG = "l_leg_ft_sensor"
WRIST = "panda_link8"


def _run(session, t, feed, until):
    """Feed the samples of each second up to ``until`` s (``feed(session, index)``) and update
    after each; the updates."""
    updates = []
    for second in range(int(until)):
        index = np.flatnonzero((t >= second) & (t < second + 1))
        feed(session, index)
        updates.append(session.update(now=float(t[index[-1]])))
    return updates


@pytest.fixture(scope="module")
def icub_run():
    """iCub on its left sole, 20 s at 100 Hz, its left leg sensor drifted (gains 0.6-0.9, its fx
    read 2.65 x, cross-coupling, offset), calibrated online: ``(session, updates, truth)``."""
    from inertia_id_ros.core.whole_body_model import FTSensor, WholeBodyModel
    from inertia_id_ros.online.whole_body_session import whole_body_session
    from inertia_id_ros.sim import whole_body_robots as wb

    sim = wb.icub(seed=5)
    data = sim.record(20.0, 100.0)
    drift = draw_drift([LEG], np.random.default_rng(4))[0]
    apply_drift(data, [drift])
    model = WholeBodyModel.from_urdf(
        example_robot_urdf("icub"),
        "floating",
        [FTSensor(f, k) for f, k in sim.ft_sensors],
        sim.imu_frame,
    )
    session = whole_body_session(
        model,
        window_sec=30.0,
        max_input_rate_hz=100.0,
        sample_rate_hz=50.0,
        online_calibration=OnlineCalibrationConfig((LEG,)),
    )
    names, frames = list(data["joint_names"]), list(map(str, data["ft_frames"]))

    def feed(session, i):
        session.add_joint_states(data["t"][i], names, data["q"][i], data["dq"][i])
        session.add_imus(
            data["t"][i],
            data["imu_angular_velocity"][i],
            data["imu_linear_acceleration"][i],
            ["imu_frame"] * i.size,
        )
        for k, frame in enumerate(frames):
            session.add_wrenches(frame, data["t"][i], data["ft_wrench"][i, k], [frame] * i.size)

    return session, _run(session, data["t"], feed, 20), np.linalg.inv(drift.gain)


def test_a_drifted_leg_sensor_is_calibrated_online_against_the_urdf(icub_run):
    session, updates, truth = icub_run
    refits = [c for u in updates for c in u.calibrations]
    assert [c.frame for c in refits] == [LEG] * len(refits) and len(refits) >= 2
    first = refits[0]
    assert first.applied and np.mean(first.held_out.ratio) < 0.3  # the drift undone
    assert any(kind == "ft_calibration_applied" for u in updates for kind, _ in u.warnings)
    in_use = session.estimator.ft_calibrator.in_use[LEG].matrix
    moving = [0, 1, 3, 4, 5]  # fz barely varies (the weight): its gain trades with the offset
    assert np.allclose(np.diag(in_use)[moving], np.diag(truth)[moving], rtol=0.05)
    assert np.max(np.abs(in_use - truth)[:, moving]) < 0.06
    latest = refits[-1].calibration  # the truth within its (correlation-widened) errors
    assert np.all(np.abs(latest.matrix - truth) < 5.0 * latest.matrix_std)
    assert np.all(first.calibration.matrix_std > 0) and np.all(first.calibration.offset_std > 0)
    later = refits[-1]
    assert not later.applied  # a refit no better than the one in use is not applied
    assert session.estimator.ft_calibrator.applied == 1
    values = session.diagnostics().values
    assert values["ft_calibration.applied"] == "1"
    assert float(values[f"ft_calibration.{LEG}.held_out_ratio"]) > 0.9


def test_every_estimate_stays_consistent_while_calibrating(icub_run):
    _, updates, _ = icub_run
    estimates = [u.estimate for u in updates if u.ok]
    assert estimates and updates[-1].ok
    for estimate in estimates:
        assert all(check_consistency(theta).fully_consistent for theta in estimate.thetas)


def test_a_wrist_sensor_is_calibrated_online_against_a_known_body():
    from inertia_id_ros.core.kinematics import SensorKinematics
    from inertia_id_ros.online.payload_session import payload_session
    from inertia_id_ros.sim.payload import PayloadSimulator

    sim = PayloadSimulator.panda(seed=2)
    t = np.arange(0.0, 16.0, 0.005)
    rng = np.random.default_rng(0)
    q, dq = sim.measure_joints(t, rng)
    drift = draw_drift([WRIST], rng)[0]
    logged = sim.measure_wrench(t, rng) @ drift.gain.T + drift.offset
    session = payload_session(
        SensorKinematics(load_model(example_robot_urdf("panda")), WRIST),
        max_input_rate_hz=200.0,
        online_calibration=OnlineCalibrationConfig((WRIST,), kind="gains"),
        calibration_body=sim.true_theta.tolist(),
    )

    def feed(session, i):
        session.add_joint_states(t[i], sim.joint_names, q[i], dq[i])
        session.add_wrenches(t[i], logged[i], [WRIST] * i.size)

    updates = _run(session, t, feed, 16)
    applied = [c for u in updates for c in u.calibrations if c.applied]
    assert applied and np.mean(applied[0].held_out.ratio) < 0.3
    in_use = session.estimator.ft_calibrator.in_use[WRIST]
    forces = slice(0, 3)  # one rigid body: its torques follow its forces (see the node's docs)
    truth = np.diag(np.linalg.inv(drift.gain))
    assert np.allclose(np.diag(in_use.matrix)[forces], truth[forces], rtol=0.01)
    final = updates[-1]
    assert final.ok and final.estimate.theta[0] == pytest.approx(sim.true_theta[0], rel=0.02)


def test_bad_online_calibration_settings_are_refused(tmp_path):
    from inertia_id_ros.core.whole_body_model import FTSensor, WholeBodyModel
    from inertia_id_ros.modes.payload import _online_calibration
    from inertia_id_ros.online.whole_body_session import whole_body_session

    with pytest.raises(ValueError, match="at least one F/T sensor"):
        OnlineCalibrationConfig(())
    with pytest.raises(ValueError, match="kind"):
        OnlineCalibrationConfig((LEG,), kind="diagonal")
    model = WholeBodyModel.from_urdf(
        example_robot_urdf("icub"),
        "fixed",
        [FTSensor(LEG, "internal"), FTSensor("l_sole", "contact")],
    )
    with pytest.raises(ValueError, match=r"\['l_sole'\] are not internal F/T sensors"):
        whole_body_session(model, online_calibration=OnlineCalibrationConfig(("l_sole",)))
    result = tmp_path / "body.json"
    result.write_text(
        '{"bodies": [{"frame": "panda_hand", "theta": [1.0, 0, 0, 0, 0, 0, 0, 0, 0, 0]}]}'
    )

    class Own:
        sensor_frame = WRIST
        wrench_calibration_online_body = str(result)
        wrench_calibration_online_kind = "full"

    with pytest.raises(
        StartupError, match="'wrench_calibration_online_body'.*not the sensor's 'panda_link8'"
    ):
        _online_calibration(Own())  # type: ignore[arg-type]


def test_a_refit_becomes_a_message_with_its_standard_errors(icub_run):
    from inertia_id_ros.ros.conversions import ft_calibration_to_msg

    session, _, _ = icub_run
    refit = session.estimator.ft_calibrator.latest[LEG]
    msg = ft_calibration_to_msg(refit)
    assert msg.header.frame_id == LEG
    assert np.allclose(np.reshape(msg.matrix, (6, 6)), refit.calibration.matrix)
    assert np.allclose(np.reshape(msg.matrix_std, (6, 6)), refit.calibration.matrix_std)
    assert np.allclose(msg.held_out_rms, refit.held_out.calibrated)
    assert msg.num_samples == refit.calibration.n_samples and msg.applied == refit.applied
