"""PayloadEstimator: end-to-end accuracy on simulated data, input validation, identifiability."""

from __future__ import annotations

import numpy as np
import pytest

from helpers.estimators import solve_while_feeding
from inertia_id_ros.core.inertia import check_consistency, inertia_from_theta
from inertia_id_ros.errors import EstimateUnavailable, SampleRejected
from inertia_id_ros.online.change_detection import window_residual_sigma
from inertia_id_ros.online.estimator import PROCESS_CHUNK
from inertia_id_ros.online.payload_estimator import EstimatorConfig, PayloadEstimator
from inertia_id_ros.sim.payload import PayloadSimulator

RATE = 200.0  # Hz, reduced for speed
T0 = 1.7e9  # s, first stamp (a ROS epoch stamp: float64 resolves 0.24 us there)


@pytest.fixture(scope="module")
def sim() -> PayloadSimulator:
    return PayloadSimulator.panda()


def feed(
    estimator: PayloadEstimator,
    sim: PayloadSimulator,
    duration: float,
    seed: int = 0,
    velocities: bool = True,
    sign: float = 1.0,
) -> None:
    """Joint states at RATE; wrenches at RATE on their own clock, 1.3 ms later with jitter."""
    rng = np.random.default_rng(seed)
    t_joint = np.arange(0.0, duration, 1.0 / RATE)
    t_wrench = t_joint + 0.0013 + rng.uniform(0.0, 1e-3, t_joint.size)
    q, dq = sim.measure_joints(t_joint, rng)
    wrench = sim.measure_wrench(t_wrench, rng)
    for i in range(t_joint.size):
        estimator.add_joint_state(
            T0 + t_joint[i], sim.joint_names, q[i], dq[i] if velocities else None
        )
        estimator.add_wrench(T0 + t_wrench[i], sign * wrench[i], sim.sensor_frame)


def errors(estimate, sim: PayloadSimulator) -> dict[str, float]:
    mass, com, inertia = inertia_from_theta(sim.true_theta)
    return {
        "mass": abs(estimate.mass - mass) / mass,
        "com": float(np.linalg.norm(estimate.com - com)),
        "inertia": float(np.linalg.norm(estimate.inertia_com - inertia) / np.linalg.norm(inertia)),
        "force_offset": float(np.linalg.norm(estimate.sensor_offset[:3] - sim.true_offset[:3])),
    }


@pytest.mark.parametrize("velocities", [True, False])
def test_thirty_seconds_of_the_default_panda_trajectory_identify_the_payload(sim, velocities):
    estimator = PayloadEstimator(sim.kinematics, EstimatorConfig(window_sec=40.0))
    feed(estimator, sim, 30.0, velocities=velocities)
    assert estimator.process() > 0.99 * 30.0 * RATE
    estimate = estimator.solve()
    error = errors(estimate, sim)
    assert error["mass"] < 0.005 and error["com"] < 0.002
    assert error["inertia"] < 0.10 and error["force_offset"] < 0.1
    assert check_consistency(estimate.theta).fully_consistent
    assert estimate.offset_identifiable and estimate.method == "lmi"
    assert estimate.n_samples == len(estimator.window)
    assert T0 < estimate.t_first < T0 + 0.1 and estimate.t_last > T0 + 29.9
    assert estimate.residual_rms < 0.1 and estimate.solve_time > 0
    cov = estimate.covariance
    assert cov.shape == (10, 10) and np.allclose(cov, cov.T)
    assert np.linalg.eigvalsh(cov)[0] > -1e-15
    assert abs(estimate.mass - sim.true_theta[0]) < 5 * estimate.theta_std[0]


def test_sign_flipped_sensor_and_sub_window(sim):
    config = EstimatorConfig(wrench_sign=-1.0)
    estimator = PayloadEstimator(sim.kinematics, config)
    feed(estimator, sim, 20.0, seed=1, sign=-1.0)
    estimator.process()
    assert estimator.window.t_last - estimator.window.t_first <= 10.0  # window_sec
    whole = estimator.solve()
    assert errors(whole, sim)["mass"] < 0.01
    recent = estimator.solve(duration=5.0)
    assert abs(recent.n_samples - 5.0 * RATE) <= 2 and recent.t_first >= whole.t_last - 5.0
    assert errors(recent, sim)["mass"] < 0.02


def test_without_offset_estimation_the_offset_is_zero():
    sim = PayloadSimulator.panda(offset=np.zeros(6), seed=1)
    estimator = PayloadEstimator(sim.kinematics, EstimatorConfig(estimate_offset=False))
    feed(estimator, sim, 10.0)
    estimator.process()
    estimate = estimator.solve()
    assert np.array_equal(estimate.sensor_offset, np.zeros(6))
    assert errors(estimate, sim)["mass"] < 0.005


def test_too_few_samples_and_reset(sim):
    estimator = PayloadEstimator(sim.kinematics, EstimatorConfig(min_samples=500))
    feed(estimator, sim, 1.0)
    estimator.process()
    with pytest.raises(EstimateUnavailable) as why:
        estimator.solve()
    assert why.value.reason == "too_few_samples" and "500" in why.value.message
    estimator.reset()
    stats = estimator.stats()
    assert stats.window_samples == 0 and stats.pending == 0 and not stats.received


def test_a_motion_that_keeps_the_sensor_orientation_makes_the_offset_unidentifiable():
    """Only joint 7 turns, about the vertical axis through the flange: gravity stays fixed in the
    sensor frame, so the weight and the force offset cannot be told apart."""
    from helpers.estimators import turn_joint_7

    sim = PayloadSimulator.panda(trajectory=turn_joint_7)
    estimator = PayloadEstimator(sim.kinematics)
    feed(estimator, sim, 10.0)
    estimator.process()
    assert estimator.orientation_spread_deg()[1] < 0.1
    with pytest.raises(EstimateUnavailable) as why:
        estimator.solve()
    assert why.value.reason == "offset_not_identifiable"
    assert "orientation with respect to gravity" in why.value.message


@pytest.fixture
def estimator(sim) -> PayloadEstimator:
    estimator = PayloadEstimator(sim.kinematics)
    estimator.add_joint_state(1.0, sim.joint_names, np.zeros(7))
    estimator.add_wrench(1.0, np.zeros(6), sim.sensor_frame)
    return estimator


def rejected(call, *args) -> str:
    with pytest.raises(SampleRejected) as why:
        call(*args)
    return why.value.reason


def test_each_bad_joint_state_is_rejected_with_its_reason(estimator, sim):
    names, q = list(sim.joint_names), np.zeros(7)
    add = estimator.add_joint_state
    nan = q.copy()
    nan[3] = np.nan
    assert rejected(add, 2.0, names, nan) == "non_finite"
    assert rejected(add, np.inf, names, q) == "non_finite"
    assert rejected(add, 2.0, names, q, np.full(7, np.inf)) == "non_finite"
    assert rejected(add, 2.0, names, q[:6]) == "length_mismatch"
    assert rejected(add, 2.0, names, q, np.zeros(2)) == "length_mismatch"
    assert rejected(add, 2.0, names + ["ghost"], np.zeros(8)) == "unknown_joint"
    assert rejected(add, 2.0, names[:6], q[:6]) == "missing_joint"
    assert rejected(add, 2.0, names[:6] + names[:1], q) == "duplicate_joint"
    assert rejected(add, 0.5, names, q) == "out_of_order"
    assert rejected(add, 1.0, names, q) == "duplicate_stamp"
    assert estimator.dropped == {
        "non_finite": 3,
        "length_mismatch": 2,
        "unknown_joint": 1,
        "missing_joint": 1,
        "duplicate_joint": 1,
        "out_of_order": 1,
        "duplicate_stamp": 1,
    }
    # extra joints of the model and any name order are fine; the values are mapped by name
    extra = ["panda_finger_joint1"] + names[::-1]
    estimator.add_joint_state(2.0, extra, np.r_[0.01, np.arange(7.0)[::-1]], np.r_[0.0, q])
    assert np.array_equal(estimator._joints["q"][-1], np.arange(7.0))
    assert estimator.received["joint_state"] == 12 and estimator.processed["joint_state"] == 2


def test_unknown_joints_can_be_ignored(sim):
    estimator = PayloadEstimator(sim.kinematics, EstimatorConfig(ignore_unknown_joints=True))
    estimator.add_joint_state(1.0, list(sim.joint_names) + ["ghost"], np.zeros(8))
    assert estimator.processed["joint_state"] == 1


def test_each_bad_wrench_is_rejected_with_its_reason(estimator, sim):
    add = estimator.add_wrench
    assert rejected(add, 2.0, [0, 0, np.nan, 0, 0, 0], sim.sensor_frame) == "non_finite"
    assert rejected(add, np.nan, np.zeros(6), sim.sensor_frame) == "non_finite"
    assert rejected(add, 2.0, np.zeros(5), sim.sensor_frame) == "length_mismatch"
    assert rejected(add, 2.0, np.zeros(6), "world") == "wrong_frame"
    assert rejected(add, 0.5, np.zeros(6), sim.sensor_frame) == "out_of_order"
    assert rejected(add, 1.0, np.zeros(6), sim.sensor_frame) == "duplicate_stamp"
    add(2.0, np.zeros(6))  # no frame_id: not checked
    assert estimator.stats().pending == 2
    lenient = PayloadEstimator(sim.kinematics, EstimatorConfig(check_wrench_frame=False))
    lenient.add_wrench(1.0, np.zeros(6), "world")
    renamed = PayloadEstimator(sim.kinematics, EstimatorConfig(wrench_frame_id="ft_sensor"))
    renamed.add_wrench(1.0, np.zeros(6), "ft_sensor")


def test_wrenches_reaching_a_channel_limit_are_rejected_as_saturated(sim):
    limits = (100.0, 100.0, 200.0, 8.0, 8.0, np.inf)  # no limit on tz
    estimator = PayloadEstimator(sim.kinematics, EstimatorConfig(wrench_limits=limits))
    estimator.add_wrench(1.0, [99.9, -99.9, 150.0, 7.9, 0.0, 1e6], sim.sensor_frame)
    with pytest.raises(SampleRejected, match="saturated") as why:
        estimator.add_wrench(2.0, [0.0, 0.0, -200.0, 0.0, 8.5, 0.0], sim.sensor_frame)
    assert "fz = -200 (limit 200)" in why.value.message and "ty = 8.5" in why.value.message
    assert "fx" not in why.value.message
    assert estimator.dropped == {"saturated": 1} and estimator.stats().pending == 1
    estimator.add_wrench(2.0, np.zeros(6), sim.sensor_frame)  # the stamp was not taken
    for bad in ((100.0,) * 5, (100.0, 100.0, 0.0, 8.0, 8.0, 8.0), (np.nan,) * 6):
        with pytest.raises(ValueError, match="wrench_limits"):
            EstimatorConfig(wrench_limits=bad)


def test_the_window_can_be_resized_while_running(sim):
    estimator = PayloadEstimator(sim.kinematics, EstimatorConfig(window_sec=20.0))
    feed(estimator, sim, 12.0)
    estimator.process()
    before = estimator.solve()
    estimator.resize_window(5.0)
    t, _, _ = estimator.window.samples()
    assert estimator.config.window_sec == 5.0 and t[-1] - t[0] <= 5.0
    assert t[-1] == pytest.approx(before.t_last) and len(t) > 0.95 * 5.0 * RATE
    after = estimator.solve()  # the warm start survives
    assert check_consistency(after.theta).fully_consistent
    assert after.n_samples == len(t)
    estimator.resize_window(60.0, window_capacity=30000)
    assert estimator.window.capacity == 30000 and len(estimator.window) == len(t)
    with pytest.raises(ValueError, match="positive"):
        estimator.resize_window(-1.0)
    assert estimator.config.window_sec == 60.0


def test_wrenches_in_a_joint_state_gap_or_before_joint_states_are_dropped(sim):
    estimator = PayloadEstimator(sim.kinematics)
    t = np.arange(0.0, 4.0, 1.0 / RATE)
    hole = (t > 1.5) & (t < 2.0)
    q, dq, _ = sim.state(t)
    for i in np.flatnonzero(~hole):
        estimator.add_joint_state(T0 + t[i], sim.joint_names, q[i], dq[i])
    for ti in np.r_[-0.5, t[::10] + 0.001]:
        estimator.add_wrench(T0 + ti, np.zeros(6))
    added = estimator.process()
    stats = estimator.stats()
    # before the first joint state, or less than the half-width (0.05 s) after it: -0.5, 0.001
    assert stats.dropped["no_joint_state"] == 2
    # a fit window [tq - 0.05, tq + 0.05] reaching into the hole (1.5, 2.0): tq = 1.451 ... 2.001
    assert stats.dropped["gap"] == 12
    assert stats.pending == 1  # 3.951 waits for joint states after 4.001
    assert added == stats.processed["wrench"] == 81 - 2 - 12 - 1


def test_overflowing_pending_wrenches_drop_the_oldest(sim):
    estimator = PayloadEstimator(sim.kinematics, EstimatorConfig(max_pending_wrenches=10))
    for k in range(15):
        estimator.add_wrench(k * 0.01, np.zeros(6))
    assert estimator.dropped["overflow"] == 5 and estimator.stats().pending == 10


def test_inputs_and_solves_from_different_threads(sim):
    estimator = PayloadEstimator(sim.kinematics, EstimatorConfig(min_samples=100))
    rng = np.random.default_rng(3)
    t_joint = np.arange(0.0, 6.0, 1.0 / RATE)
    t_wrench = t_joint + 0.0013 + rng.uniform(0.0, 1e-3, t_joint.size)
    q, dq = sim.measure_joints(t_joint, rng)
    wrench = sim.measure_wrench(t_wrench, rng)

    def add(k: int) -> None:
        estimator.add_joint_state(T0 + t_joint[k], sim.joint_names, q[k], dq[k])
        estimator.add_wrench(T0 + t_wrench[k], wrench[k], sim.sensor_frame)

    solve_while_feeding(
        estimator, add, t_joint.size, ("too_few_samples", "offset_not_identifiable")
    )
    stats = estimator.stats()
    assert stats.received["wrench"] == stats.processed["wrench"] + stats.pending + sum(
        stats.dropped.values()
    )
    assert errors(estimator.solve(), sim)["mass"] < 0.02


def test_samples_added_while_processing_wait_for_the_next_call(sim):
    """``process`` takes about the samples pending when called; those another thread adds
    meanwhile (the node's main thread, handing it the queued messages) wait for the next call:
    a call ends even while the inputs come faster than it turns them into rows."""
    estimator = PayloadEstimator(sim.kinematics, EstimatorConfig(window_sec=60.0))
    rng = np.random.default_rng(5)
    t = np.arange(0.0, 30.0, 1.0 / RATE)
    q, dq = sim.measure_joints(t, rng)
    wrench = sim.measure_wrench(t + 0.0013, rng)
    fed = 0

    def add(n: int) -> None:
        nonlocal fed
        for k in range(fed, fed + n):
            estimator.add_joint_state(T0 + t[k], sim.joint_names, q[k], dq[k])
            estimator.add_wrench(T0 + t[k] + 0.0013, wrench[k], sim.sensor_frame)
        fed += n

    add(800)
    rows, batches = estimator._rows, []

    def rows_while_inputs_come(batch):
        batches.append(batch.t.size)
        if fed + 600 <= t.size:
            add(600)  # more than a batch: faster than the rows are made
        return rows(batch)

    estimator._rows = rows_while_inputs_come
    added = estimator.process()
    assert len(batches) == 2 and added == sum(batches)  # 800 pending: two batches of 500
    assert estimator.stats().pending == fed - 2 * PROCESS_CHUNK  # consumed: rows or dropped
    estimator._rows = rows
    assert estimator.process() > 0  # the rest, but the last filter half-width (0.05 s)
    assert estimator.stats().pending <= 0.05 * RATE + 1


def test_a_clock_reset_starts_afresh_but_a_stale_burst_does_not(sim):
    """Stamps jumping back and going on (a driver restart) restart the window after
    ``clock_jump_sec`` (1 s); a short burst of stale stamps is only dropped."""
    estimator = PayloadEstimator(sim.kinematics, EstimatorConfig(min_samples=50))
    t = np.arange(0.0, 3.0, 1.0 / RATE)
    q, dq, _ = sim.state(t)
    wrench = sim.true_wrench(t)

    def feed(start: float) -> int:
        """All samples from ``start`` on; returns how many were rejected."""
        rejected = 0
        for i in range(len(t)):
            for add, args in (
                (estimator.add_joint_state, (sim.joint_names, q[i], dq[i])),
                (estimator.add_wrench, (wrench[i],)),
            ):
                try:
                    add(start + t[i], *args)
                except SampleRejected:
                    rejected += 1
        return rejected

    assert feed(T0) == 0
    estimator.process()
    in_window = estimator.stats().window_samples
    for i in range(10):  # a stale burst, 1000 s back
        with pytest.raises(SampleRejected):
            estimator.add_wrench(T0 - 1000.0 + 0.001 * i, wrench[0])
    assert estimator.stats().clock_jumps == 0 and estimator.stats().window_samples == in_window
    rejected = feed(T0 - 100.0)  # the clock restarts 100 s back and goes on
    estimator.process()
    stats = estimator.stats()
    assert stats.clock_jumps == 1
    assert rejected <= 2 * (RATE + 1)  # the first second of the new time base
    assert 0 < stats.window_samples < in_window
    assert estimator.solve().t_last < T0


def test_solver_options_belong_to_the_configured_method(sim):
    estimator = PayloadEstimator(
        sim.kinematics, EstimatorConfig(solver_options={"use_active_set": False})
    )
    feed(estimator, sim, 5.0)
    estimator.process()
    assert estimator.solve().method == "lmi"
    assert estimator.solve(method="ols", require_consistent=False).method == "ols"  # no options
    estimator.configure_solver("lmi", {"backend": "cvxpi"})  # a value no solve accepts
    with pytest.raises(EstimateUnavailable) as why:
        estimator.solve()
    assert why.value.reason == "solver_failed"
    generation = estimator.generation
    estimator.configure_solver("lmi", {})
    estimate = estimator.solve()
    sigma = estimator.read_window(
        lambda window: window_residual_sigma(
            window, estimate.t_first, estimate.theta, estimate.sensor_offset
        )
    )
    assert sigma.shape == (6,) and np.all(sigma < 0.5)
    estimator.restart()  # the samples are forgotten: a new generation, an empty window
    assert estimator.generation != generation and estimator.read_window(len) == 0
