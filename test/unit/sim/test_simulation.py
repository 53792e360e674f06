"""Simulator: trajectories within limits, ground truth independent of the regressor, noise."""

from __future__ import annotations

import numpy as np
import pytest

from inertia_id_ros.core.inertia import check_consistency, inertia_from_theta
from inertia_id_ros.core.regressors import body_regressor_batch
from inertia_id_ros.core.robots import example_robot_urdf, load_model
from inertia_id_ros.sim.payload import (
    PANDA_ARM_JOINTS,
    ExcitingTrajectory,
    PayloadSimulator,
    PointToPointTrajectory,
    minimum_jerk_point_to_point,
)


@pytest.fixture(scope="module")
def sim() -> PayloadSimulator:
    return PayloadSimulator.panda()


def test_default_panda_setup(sim):
    assert sim.joint_names == PANDA_ARM_JOINTS and sim.sensor_frame == "panda_link8"
    mass, com, _ = inertia_from_theta(sim.true_theta)
    assert mass == 1.5 and np.linalg.norm(com) > 0.05
    assert check_consistency(sim.true_theta).min_pseudo_inertia_eig > 1e-4
    assert np.allclose(sim.true_offset, [4.0, -3.0, 6.0, 0.2, -0.15, 0.1])


def test_true_wrench_from_rnea_equals_the_regressor_model(sim):
    t = np.linspace(0.0, 10.0, 300)
    V, A = sim.kinematics.compute_batch(*sim.state(t))
    expected = body_regressor_batch(V, A) @ sim.true_theta
    assert np.allclose(sim.true_wrench(t), expected, rtol=0, atol=1e-9)


def test_exciting_trajectory_respects_limits_and_is_differentiated_right():
    model = load_model(example_robot_urdf("panda"))
    trajectory = ExcitingTrajectory.for_model(model, PANDA_ARM_JOINTS, seed=3)
    t = np.linspace(0.0, 30.0, 20001)
    q, dq, ddq = trajectory(t)
    lower, upper = model.lowerPositionLimit[:7], model.upperPositionLimit[:7]
    assert np.all(q >= lower) and np.all(q <= upper)
    assert np.all(np.abs(dq) <= 0.8 * model.velocityLimit[:7] * (1 + 1e-3))  # scaled on a grid
    assert np.all(q.max(0) - q.min(0) > 0.3)  # every joint moves
    dt = t[1] - t[0]
    assert np.allclose(np.gradient(q, dt, axis=0)[1:-1], dq[1:-1], atol=1e-4)
    assert np.allclose(np.gradient(dq, dt, axis=0)[1:-1], ddq[1:-1], atol=1e-3)
    assert np.allclose(trajectory(t[:10])[0], trajectory(t[:10] + trajectory.period)[0])
    other = ExcitingTrajectory.for_model(model, PANDA_ARM_JOINTS, seed=4)
    assert not np.allclose(other(t[:100])[0], q[:100])


def test_minimum_jerk_point_to_point_reaches_each_target_at_rest():
    lower, upper = np.array([-1.0, -2.0, 0.0]), np.array([1.0, 0.5, 2.0])
    trajectory = minimum_jerk_point_to_point(
        lower, upper, n_points=4, completion_time=2.0, seed=1, hold_time=0.5
    )
    assert isinstance(trajectory, PointToPointTrajectory)
    assert trajectory.duration == pytest.approx(4 * 2.5)
    ends = np.arange(5) * 2.5
    q, dq, ddq = trajectory(ends)
    assert np.allclose(q, trajectory.waypoints) and np.allclose(dq, 0) and np.allclose(ddq, 0)
    t = np.linspace(0.0, trajectory.duration, 10001)
    q, dq, ddq = trajectory(t)
    assert np.all(q >= lower) and np.all(q <= upper)
    dt = t[1] - t[0]
    assert np.allclose(np.gradient(q, dt, axis=0)[1:-1], dq[1:-1], atol=1e-4)
    assert np.allclose(np.gradient(dq, dt, axis=0)[1:-1], ddq[1:-1], atol=5e-3)
    peak = 1.875 * np.abs(np.diff(trajectory.waypoints, axis=0)).max() / 2.0
    assert np.abs(dq).max() == pytest.approx(peak, rel=1e-3)


def test_measurements_carry_the_offset_and_the_configured_noise(sim):
    t = np.arange(0.0, 20.0, 0.005)
    rng = np.random.default_rng(0)
    q_meas, dq_meas, wrench = sim.measure(t, rng)
    q, dq, _ = sim.state(t)
    error = wrench - sim.true_wrench(t)
    assert np.allclose(error.mean(0), sim.true_offset, atol=5e-3)
    assert np.allclose(error.std(0), sim.wrench_noise_std, rtol=0.05)
    assert np.std(q_meas - q) == pytest.approx(sim.position_noise_std, rel=0.05)
    assert np.std(dq_meas - dq) == pytest.approx(sim.velocity_noise_std, rel=0.05)


def test_a_configured_simulator_uses_its_payload_and_offset():
    theta = np.array([0.5, 0.0, 0.0, 0.05, 0.002, 0.0, 0.002, 0.0, 0.0, 0.001])
    quiet = PayloadSimulator.panda(
        payload_theta=theta, offset=np.zeros(6), wrench_noise_std=0.0, seed=2
    )
    t = np.linspace(0.0, 5.0, 50)
    wrench = quiet.measure_wrench(t, np.random.default_rng(1))
    assert np.allclose(wrench, quiet.true_wrench(t))
    assert np.allclose(np.linalg.norm(wrench[:, :3], axis=1).mean(), 0.5 * 9.81, rtol=0.2)
