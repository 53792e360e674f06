"""The online whole-body session on a fixed base (iCub on a stand) without an IMU: the clock is
the first live F/T sensor's stamps (or the joint states'), the base at rest and level; the same
rows and estimate as the offline fit; a stopped clock sensor hands the clock on."""

import numpy as np
import pytest

from inertia_id_ros.chain.whole_body_fit import fit_whole_body, normal_equations
from inertia_id_ros.core.base_motion import BaseMotion
from inertia_id_ros.core.filtering import local_polynomial_derivatives
from inertia_id_ros.core.inertia import check_consistency
from inertia_id_ros.core.robots import example_robot_urdf
from inertia_id_ros.core.whole_body_model import FTSensor, WholeBodyModel, WholeBodySamples
from inertia_id_ros.online.whole_body_config import WholeBodyEstimatorConfig
from inertia_id_ros.online.whole_body_estimator import WholeBodyEstimator
from inertia_id_ros.online.whole_body_session import whole_body_session
from inertia_id_ros.sim import whole_body_robots as wb

RATE = 200.0
SAMPLE_RATE = 100.0
HALF_WIDTH = 0.05
"""The session's default joint filter half-width (s), used offline too."""


@pytest.fixture(scope="module")
def stand():
    sim = wb.icub_fixed(seed=7)
    return sim, sim.record(3.0, RATE, with_effort=True)


def _model(sim, sensors=None, imu_frame=None, base="fixed"):
    sensors = sim.ft_sensors if sensors is None else sensors
    return WholeBodyModel.from_urdf(
        example_robot_urdf("icub"), base, [FTSensor(f, k) for f, k in sensors], imu_frame
    )


def _session(model, **kwargs):
    return whole_body_session(
        model, window_sec=30.0, max_input_rate_hz=RATE, sample_rate_hz=SAMPLE_RATE, **kwargs
    )


def _feed(session, data, start=0, stop=None, silent=(), imu=False, velocity=True):
    """Offer samples ``start:stop`` of a recording: joint states (efforts included, velocities
    when ``velocity``), the wrenches but the ``silent`` sensors', the IMU when ``imu``; returns
    the warnings."""
    warnings = []
    names = list(data["joint_names"])
    for i in range(start, stop or data["t"].size):
        t = data["t"][i]
        warnings.append(
            session.add_joint_state(
                t, names, data["q"][i], data["dq"][i] if velocity else None, data["effort"][i]
            )
        )
        if imu:
            warnings.append(
                session.add_imu(
                    t, data["imu_angular_velocity"][i], data["imu_linear_acceleration"][i]
                )
            )
        for k, frame in enumerate(map(str, data["ft_frames"])):
            if frame not in silent:
                warnings.append(session.add_wrench(frame, t, data["ft_wrench"][i, k], frame))
    return [w for w in warnings if w is not None]


def test_fixed_base_without_imu_gives_the_offline_rows_and_estimate(stand):
    """Samples at the F/T stamps (100 Hz of 200 Hz), positions differentiated online as offline:
    the window's normal equations are the offline rows' of the same stamps, and so is the
    estimate (every link consistent)."""
    sim, data = stand
    model = _model(sim)
    session = _session(model)
    assert _feed(session, data, velocity=False) == []
    stamps = []
    session.estimator.process(on_rows=lambda t, Y, y: stamps.extend(t))
    update = session.update(now=3.0)
    assert update.ok, update.message
    estimate = update.estimate
    stamps = np.array(stamps)
    assert estimate.n_samples == stamps.size > 0.9 * data["t"].size * SAMPLE_RATE / RATE
    assert session.estimator.sample_kind == "sample" and estimate.stopped_sensors == ()
    assert all(check_consistency(theta).fully_consistent for theta in estimate.thetas)
    assert set(estimate.offsets) == set(wb.ICUB_INTERNAL_SENSORS)

    fit = local_polynomial_derivatives(data["t"], data["q"], stamps, HALF_WIDTH)
    select = np.searchsorted(data["t"], stamps)
    samples = WholeBodySamples(
        fit[:, 0], fit[:, 1], fit[:, 2], BaseMotion.at_rest(stamps.size), data["ft_wrench"][select]
    )
    offline = normal_equations(model, samples)
    gram, moment, _, n_rows = session.estimator.window.normal_equations()
    assert n_rows == offline.n_rows
    assert np.allclose(gram, offline.gram, rtol=1e-6, atol=1e-9 * np.abs(offline.gram).max())
    assert np.allclose(moment, offline.moment, rtol=1e-6, atol=1e-9 * np.abs(offline.moment).max())
    reference = fit_whole_body(model, samples, "lmi")
    masses = estimate.thetas[:, 0]
    assert np.abs(masses - reference.thetas[:, 0]).max() < 1e-3 * masses.max()
    for frame, offset in reference.offsets.items():
        assert np.allclose(estimate.offsets[frame], offset, atol=1e-2)


def test_a_stopped_clock_sensor_hands_the_clock_on(stand):
    """The first F/T sensor (the clock) stops after 1 s: it is reported, its rows dropped, and
    the samples go on at the next sensor's stamps."""
    sim, data = stand
    session = _session(_model(sim))
    clock = str(data["ft_frames"][0])
    _feed(session, data, 0, 200)
    _feed(session, data, 200, silent=(clock,))
    update = session.update(now=3.0)
    assert update.ok, update.message
    stopped = [message for kind, message in update.warnings if kind == "sensor_stopped"]
    assert len(stopped) == 1 and clock in stopped[0]
    assert update.estimate.stopped_sensors == (clock,)
    assert update.estimate.n_samples > 0.8 * data["t"].size * SAMPLE_RATE / RATE
    assert session.estimator.dropped["missing_wrench"] > 0
    assert all(check_consistency(theta).fully_consistent for theta in update.estimate.thetas)
    # its rows are dropped, not zero-filled: the newest block (after the stop) has no rows in
    # the columns only they touch (the arm's links beyond it, its offset)
    groups = session.estimator.model.row_groups()
    own = groups[0][1]  # a fixed base has no base rows: the first group is the clock sensor's
    shared = np.concatenate([cols for _, cols in groups[1:]])
    only = np.setdiff1d(own, shared)
    gram = session.estimator.window.normal_equations(duration=0.9)[0]
    assert only.size and np.abs(gram[np.ix_(only, only)]).max() == 0.0
    assert np.abs(session.estimator.window.normal_equations()[0][np.ix_(only, only)]).max() > 0


def test_every_sensor_stopped_or_none_the_joint_states_are_the_clock(stand):
    """With efforts: no F/T sensor (the joint states' stamps are the samples), or every F/T
    sensor silent (all stopped: the joint states take over, only the torque rows stay)."""
    sim, data = stand
    session = _session(_model(sim, sensors=()), with_efforts=True)
    assert _feed(session, data, silent=tuple(wb.ICUB_INTERNAL_SENSORS)) == []
    update = session.update(now=3.0)
    assert update.ok, update.message
    assert update.estimate.n_samples > 0.9 * data["t"].size * SAMPLE_RATE / RATE
    assert all(check_consistency(theta).fully_consistent for theta in update.estimate.thetas)
    silent = _session(_model(sim), with_efforts=True)
    _feed(silent, data, silent=tuple(wb.ICUB_INTERNAL_SENSORS))
    update = silent.update(now=3.0)
    assert update.ok, update.message
    assert update.estimate.stopped_sensors == tuple(wb.ICUB_INTERNAL_SENSORS)
    assert update.estimate.n_samples > 0.7 * data["t"].size * SAMPLE_RATE / RATE


def test_fixed_base_with_an_imu_levels_the_base_from_its_specific_force(stand):
    """With the head IMU, the IMU's stamps are the samples and its specific force gives the
    base's gravity (here level, up to the IMU's noise and bias): the rows fit about as well as
    without it (the IMU's noise, and its differentiated gyro's, enter the base's acceleration)."""
    sim, data = stand
    model = _model(sim, imu_frame=sim.imu_frame)
    with_imu = _session(model)
    assert _feed(with_imu, data, imu=True) == []
    update = with_imu.update(now=3.0)
    assert update.ok, update.message
    assert with_imu.estimator.sample_kind == "imu"
    assert all(check_consistency(theta).fully_consistent for theta in update.estimate.thetas)
    n = 50
    base = model.base_motion_from_imu(
        data["q"][:n],
        data["dq"][:n],
        np.zeros((n, 32)),
        data["imu_angular_velocity"][:n],
        data["imu_linear_acceleration"][:n],
        np.zeros((n, 3)),
    )
    assert np.allclose(base.proper_acceleration.mean(axis=0), [0.0, 0.0, 9.81], atol=0.2)
    without = _session(_model(sim))
    _feed(without, data)
    reference = without.update(now=3.0).estimate
    assert update.estimate.residual_rms < 1.5 * reference.residual_rms


def test_bad_setups_and_inputs_are_refused(stand):
    sim, _ = stand
    with pytest.raises(ValueError, match="floating base needs an IMU"):
        WholeBodyEstimator(_model(sim, base="floating", sensors=[("l_sole", "contact")]))
    with pytest.raises(ValueError, match="no rows"):
        WholeBodyEstimator(_model(sim, sensors=[("r_sole", "contact")]))
    session = _session(_model(sim))
    kind, message = session.add_imu(0.0, np.zeros(3), np.array([0.0, 0.0, 9.81]))
    assert kind == "no_imu" and "without an IMU" in message


def test_wrenches_beyond_the_buffer_are_counted_as_overflow(stand):
    sim, data = stand
    estimator = WholeBodyEstimator(_model(sim), WholeBodyEstimatorConfig(max_pending_samples=10))
    for i in range(15):  # nothing processed: the 5 oldest are pushed out, unused
        estimator.add_wrench("l_arm_ft_sensor", data["t"][i], data["ft_wrench"][i, 0])
    assert estimator.dropped["overflow"] == 5
