"""Tare of the F/T offset and its reconciliation with the joint estimate, on simulated data."""

from __future__ import annotations

import numpy as np
import pytest

from helpers.estimators import T0, turn_joint_7
from inertia_id_ros.core.inertia import check_consistency, inertia_from_theta
from inertia_id_ros.errors import EstimateUnavailable, ProblemError
from inertia_id_ros.online.payload_estimator import PayloadEstimator
from inertia_id_ros.online.tare import (
    DEFAULT_OFFSET_DRIFT_RATE,
    Tare,
    tare_from_window,
    tare_offset,
    with_tare,
)
from inertia_id_ros.sim.payload import PayloadSimulator
from inertia_id_ros.solvers import Problem, solve


def feed(
    estimator: PayloadEstimator,
    sim: PayloadSimulator,
    start: float,
    seconds: float,
    rate: float,
    seed: int = 0,
) -> None:
    """``seconds`` of joint states and wrenches from ``start`` (s after T0), then process."""
    rng = np.random.default_rng(seed)
    t = start + np.arange(int(round(seconds * rate))) / rate
    q, dq, wrench = sim.measure(t, rng)
    for i in range(t.size):
        estimator.add_joint_state(T0 + t[i], sim.joint_names, q[i], dq[i])
        estimator.add_wrench(T0 + t[i], wrench[i], sim.sensor_frame)
    estimator.process()


def removed_payload_recording(
    sim: PayloadSimulator, seconds: float, rate: float, seed: int = 0
) -> tuple[np.ndarray, np.ndarray]:
    """Stamps and wrenches of the sensor without a payload: its offset and noise."""
    rng = np.random.default_rng(seed)
    t = T0 + np.arange(int(round(seconds * rate))) / rate
    return t, sim.true_offset + rng.normal(size=(t.size, 6)) * sim.wrench_noise_std


def test_a_tare_without_payload_is_the_mean_wrench():
    sim = PayloadSimulator.panda()
    t, f = removed_payload_recording(sim, 1.0, 1000.0)
    tare = tare_offset(t, f)
    assert tare.n_samples == 1000 and tare.t == t[-1]
    assert np.array_equal(tare.theta_known, np.zeros(10))
    assert np.allclose(tare.noise_std, sim.wrench_noise_std, rtol=0.1)
    assert np.allclose(tare.offset_std, sim.wrench_noise_std / np.sqrt(1000), rtol=0.1)
    assert np.all(np.abs(tare.offset - sim.true_offset) < 4 * tare.offset_std)


def test_a_tare_with_a_known_payload_while_moving():
    sim = PayloadSimulator.panda()
    estimator = PayloadEstimator(sim.kinematics)  # 16 columns: the offset's are ignored
    feed(estimator, sim, 0.0, 2.0, 500.0)
    tare = tare_from_window(estimator.window, sim.true_theta)
    assert tare.n_samples == len(estimator.window)
    assert np.linalg.norm(tare.offset[:3] - sim.true_offset[:3]) < 0.02
    assert np.linalg.norm(tare.offset[3:] - sim.true_offset[3:]) < 1e-3
    assert np.all(tare.noise_std < 1.2 * sim.wrench_noise_std)  # little model error
    wrong = tare_from_window(estimator.window, 1.1 * sim.true_theta)  # a 10 % heavier guess
    assert np.linalg.norm(wrong.offset[:3] - sim.true_offset[:3]) > 0.5


def test_a_fresh_tare_identifies_the_mass_from_a_motion_without_tilt():
    sim = PayloadSimulator.panda(trajectory=turn_joint_7)
    tare = tare_offset(*removed_payload_recording(sim, 1.0, 1000.0))  # then the payload goes on
    estimator = PayloadEstimator(sim.kinematics)
    feed(estimator, sim, 5.0, 10.0, 200.0)
    with pytest.raises(EstimateUnavailable, match="offset_not_identifiable"):
        estimator.solve()
    now = estimator.window.t_last
    problem = estimator.window.problem()
    mass, com, _ = inertia_from_theta(sim.true_theta)
    untared = solve(problem, "lmi").x
    assert abs(untared[0] - mass) > 0.05 * mass  # weight and offset confused
    x = solve(with_tare(problem, tare, now), "lmi").x
    assert check_consistency(x[:10]).fully_consistent
    assert abs(x[0] - mass) < 0.005 * mass
    assert np.linalg.norm(inertia_from_theta(x[:10])[1][:2] - com[:2]) < 0.002  # cz: no info
    assert np.linalg.norm(x[10:13] - sim.true_offset[:3]) < 0.1


def test_an_old_tare_yields_to_data_that_identify_the_offset():
    """The offset drifted by 0.3 N since a tare 10 minutes ago; the exciting motion identifies
    the offset. Weighted by its age the tare barely counts; weighted as if fresh it biases."""
    drift = np.array([0.3, -0.2, 0.1, 0.0, 0.0, 0.0])
    before = PayloadSimulator.panda()
    tare = tare_offset(*removed_payload_recording(before, 1.0, 1000.0))
    sim = PayloadSimulator.panda(offset=before.true_offset + drift)
    estimator = PayloadEstimator(sim.kinematics)
    feed(estimator, sim, 600.0, 10.0, 200.0)
    now = estimator.window.t_last
    age = now - tare.t  # about 10 min
    assert np.allclose(
        tare.offset_std_at(now), np.hypot(tare.offset_std, DEFAULT_OFFSET_DRIFT_RATE * age)
    )
    problem = estimator.window.problem()
    mass = sim.true_theta[0]
    aged = solve(with_tare(problem, tare, now), "lmi").x
    assert np.linalg.norm(aged[10:13] - sim.true_offset[:3]) < 0.05
    assert abs(aged[0] - mass) < 0.005 * mass
    as_if_fresh = solve(with_tare(problem, tare, tare.t), "lmi").x
    assert np.linalg.norm(as_if_fresh[10:13] - sim.true_offset[:3]) > 0.1


def test_with_tare_keeps_a_prior_on_theta_and_checks_the_problem():
    tare = Tare(
        offset=np.arange(6.0),
        offset_std=np.full(6, 0.01),
        noise_std=np.full(6, 0.1),
        n_samples=100,
        t=10.0,
        theta_known=np.zeros(10),
    )
    rng = np.random.default_rng(0)
    Y = rng.normal(size=(60, 16))
    problem = Problem.from_regressor(Y, rng.normal(size=60), n_bodies=1)
    tared = with_tare(problem, tare, 10.0, drift_rate=np.zeros(6))
    assert np.array_equal(tared.prior[10:], tare.offset) and not tared.prior[:10].any()
    assert np.allclose(tared.prior_weight[10:], 100.0) and not tared.prior_weight[:10].any()
    assert np.allclose(
        with_tare(
            problem, tare, 20.0, sigma=np.full(6, 0.2), drift_rate=np.full(6, 0.001)
        ).prior_weight[10:],
        200.0,
    )
    cad = Problem.from_regressor(
        Y,
        rng.normal(size=60),
        n_bodies=1,
        prior=np.r_[np.ones(10), np.zeros(6)],
        prior_weight=np.r_[np.full(10, 3.0), np.zeros(6)],
    )
    combined = with_tare(cad, tare, 10.0)
    assert np.array_equal(combined.prior[:10], np.ones(10))
    assert np.allclose(np.diag(combined.prior_weight), np.r_[np.full(10, 3.0), np.full(6, 100.0)])
    with pytest.raises(ProblemError, match="already weights the offsets"):
        with_tare(combined, tare, 10.0)
    with pytest.raises(ProblemError, match="estimate_offset=True"):
        with_tare(Problem.from_regressor(Y[:, :10], rng.normal(size=60), n_bodies=1), tare, 10.0)
    with pytest.raises(ValueError, match="sigma"):
        with_tare(problem, tare, 10.0, sigma=np.zeros(6))


def test_invalid_recordings_are_rejected():
    t, f = np.arange(5.0), np.zeros((5, 6))
    with pytest.raises(ValueError, match="f \\(N, 6\\)"):
        tare_offset(t, f[:, :3])
    with pytest.raises(ValueError, match="at least 2 samples"):
        tare_offset(t[:1], f[:1])
    with pytest.raises(ValueError, match="non-finite"):
        tare_offset(t, np.full((5, 6), np.nan))
    with pytest.raises(ValueError, match="needs its regressor rows"):
        tare_offset(t, f, theta_known=np.ones(10))
    with pytest.raises(ValueError, match="theta_known"):
        tare_offset(t, f, np.zeros((5, 6, 10)), theta_known=np.ones(9))
    with pytest.raises(ValueError, match="regressor rows Y"):
        tare_offset(t, f, np.zeros((5, 6, 4)), theta_known=np.ones(10))


def test_the_estimator_tares_without_payload_then_identifies_it_without_tilt():
    """The node's procedure: stream with the payload removed, tare (the window restarts), attach
    the payload; a motion that never tilts the sensor then identifies the mass."""
    sim = PayloadSimulator.panda(trajectory=turn_joint_7)
    estimator = PayloadEstimator(sim.kinematics)
    with pytest.raises(EstimateUnavailable, match="too_few_samples"):
        estimator.offset_tare.set(1.0)
    tare = _tare_without_the_payload(estimator, sim)
    assert estimator.offset_tare.current is tare and len(estimator.window) == 0  # restarted
    assert 450 <= tare.n_samples <= 510
    assert np.linalg.norm(tare.offset[:3] - sim.true_offset[:3]) < 0.02
    feed(estimator, sim, 2.0, 10.0, 200.0)
    estimate = estimator.solve()
    mass = sim.true_theta[0]
    assert check_consistency(estimate.theta).fully_consistent
    assert abs(estimate.mass - mass) < 0.005 * mass
    assert np.linalg.norm(estimate.sensor_offset[:3] - tare.offset[:3]) < 0.05
    estimator.offset_tare.clear()
    with pytest.raises(EstimateUnavailable, match="offset_not_identifiable"):
        estimator.solve()


def test_without_offset_estimation_the_tare_is_the_known_offset():
    from inertia_id_ros.online.payload_estimator import EstimatorConfig

    sim = PayloadSimulator.panda()
    estimator = PayloadEstimator(sim.kinematics, EstimatorConfig(estimate_offset=False))
    feed(estimator, sim, 0.0, 10.0, 200.0)
    mass, com, _ = inertia_from_theta(sim.true_theta)
    untared = estimator.solve()
    assert np.array_equal(untared.sensor_offset, np.zeros(6))
    assert np.linalg.norm(untared.com - com) > 0.005  # the offset's torque reads as a COM shift
    tare = estimator.offset_tare.set(2.0, theta_known=sim.true_theta)  # known payload: window kept
    assert len(estimator.window) > 1900
    tared = estimator.solve()
    assert np.array_equal(tared.sensor_offset, tare.offset)
    assert abs(tared.mass - mass) < 0.005 * mass
    assert np.linalg.norm(tared.com - com) < 0.001
    with pytest.raises(ValueError, match="positive"):
        estimator.offset_tare.set(0.0)


def test_a_noise_free_channel_does_not_make_the_tare_infinitely_certain():
    """A simulated sensor without noise (or a 3-axis cell's constant torques): the tare's noise is
    floored at a sensor's resolution and the solve with it works."""
    from inertia_id_ros.online.tare import NOISE_STD_FLOOR

    t = T0 + np.arange(100) / 100.0
    tare = tare_offset(t, np.tile([1.0, 2.0, 3.0, 0.0, 0.0, 0.0], (100, 1)))
    assert np.array_equal(tare.noise_std, NOISE_STD_FLOOR)
    assert np.all(tare.offset_std > 0)
    sim = PayloadSimulator.panda()
    estimator = PayloadEstimator(sim.kinematics)
    feed(estimator, sim, 0.0, 5.0, 200.0)
    estimator.offset_tare._tare = tare  # as offset_tare.set would leave it
    assert check_consistency(estimator.solve().theta).fully_consistent


def _tare_without_the_payload(estimator: PayloadEstimator, sim: PayloadSimulator) -> Tare:
    """Stream 2 s at 500 Hz of ``sim`` with its payload removed into ``estimator``, then tare
    over its last second."""
    t, wrench = removed_payload_recording(sim, 2.0, 500.0)
    q, dq = sim.measure_joints(t - T0, np.random.default_rng(3))
    for i in range(t.size):
        estimator.add_joint_state(t[i], sim.joint_names, q[i], dq[i])
        estimator.add_wrench(t[i], wrench[i], sim.sensor_frame)
    return estimator.offset_tare.set(1.0)


def test_an_old_tare_no_longer_replaces_the_tilts_and_a_clock_reset_keeps_its_age():
    from inertia_id_ros.online.payload_estimator import EstimatorConfig

    sim = PayloadSimulator.panda(trajectory=turn_joint_7)
    config = EstimatorConfig(tare_max_force_std=0.005)  # reached about 10 s after the tare
    estimator = PayloadEstimator(sim.kinematics, config)
    tare = _tare_without_the_payload(estimator, sim)
    feed(estimator, sim, 2.0, 4.0, 200.0)  # 4 s old: still known well enough
    assert abs(estimator.solve().mass - sim.true_theta[0]) < 0.01 * sim.true_theta[0]
    feed(estimator, sim, 6.0, 8.0, 200.0)  # 12 s old
    with pytest.raises(EstimateUnavailable, match="offset_not_identifiable"):
        estimator.solve()
    age = estimator.window.t_last - tare.t
    # the stamps restart 900 s earlier (a driver restart): after clock_jump_sec of them (dropped
    # until then) the estimator starts afresh; the tare stays, as old as it was
    from inertia_id_ros.errors import SampleRejected

    t = T0 - 886.0 + np.arange(600) / 200.0
    q, dq, wrench = sim.measure(t - T0 + 900.0, np.random.default_rng(4))
    for i in range(t.size):
        for add, args in (
            (estimator.add_joint_state, (sim.joint_names, q[i], dq[i])),
            (estimator.add_wrench, (wrench[i], sim.sensor_frame)),
        ):
            try:
                add(t[i], *args)
            except SampleRejected:
                assert t[i] - t[0] <= 1.0  # out_of_order until the reset
    estimator.process()
    assert estimator.clock_jumps == 1 and estimator.offset_tare.current is not None
    assert estimator.window.t_first - estimator.offset_tare.current.t == pytest.approx(age, abs=1.0)
