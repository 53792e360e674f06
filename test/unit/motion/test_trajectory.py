"""ExcitationTrajectory: validation, NPZ round trip, interpolation, time scaling, joins."""

from __future__ import annotations

import numpy as np
import pytest

from inertia_id_ros.errors import DataError, InertiaIdError, TrajectoryError
from inertia_id_ros.motion.trajectory import ExcitationTrajectory, concatenate, rest_to_rest

NAMES = ("a", "b")


def sine_trajectory(rate_hz: float = 100.0, duration: float = 2.0) -> ExcitationTrajectory:
    """q = [sin(3t), 0.5 cos(2t)] sampled exactly."""
    t = np.linspace(0.0, duration, int(duration * rate_hz) + 1)
    q = np.column_stack([np.sin(3 * t), 0.5 * np.cos(2 * t)])
    dq = np.column_stack([3 * np.cos(3 * t), -np.sin(2 * t)])
    ddq = np.column_stack([-9 * np.sin(3 * t), -2 * np.cos(2 * t)])
    return ExcitationTrajectory(t, NAMES, q, dq, ddq)


def test_npz_round_trip(tmp_path):
    trajectory = sine_trajectory()
    trajectory.save_npz(tmp_path / "traj.npz")
    loaded = ExcitationTrajectory.load_npz(tmp_path / "traj.npz")
    assert loaded.joint_names == NAMES and loaded.duration == pytest.approx(2.0)
    for field in ("t", "q", "dq", "ddq"):
        assert np.array_equal(getattr(loaded, field), getattr(trajectory, field))


@pytest.mark.parametrize(
    "change, message",
    [
        (dict(t=np.array([0.0, 0.2, 0.1])), "strictly increasing"),
        (dict(t=np.array([0.5, 0.6, 0.7])), "start at 0"),
        (dict(q=np.zeros((3, 3))), "q must have shape"),
        (dict(ddq=np.full((3, 2), np.nan)), "ddq has non-finite"),
        (dict(joint_names=("a", "a")), "duplicates"),
    ],
)
def test_invalid_trajectories_are_rejected_with_the_field_named(change, message):
    fields = dict(
        t=np.array([0.0, 0.1, 0.2]),
        joint_names=NAMES,
        q=np.zeros((3, 2)),
        dq=np.zeros((3, 2)),
        ddq=np.zeros((3, 2)),
    )
    fields.update(change)
    with pytest.raises(TrajectoryError, match=message) as info:
        ExcitationTrajectory(**fields)
    assert isinstance(info.value, InertiaIdError) and isinstance(info.value, ValueError)


def test_a_file_without_accelerations_is_a_data_error_naming_the_file(tmp_path):
    path = tmp_path / "bad.npz"
    np.savez(
        path,
        t=np.array([0.0, 0.1]),
        joint_names=np.array(NAMES),
        q=np.zeros((2, 2)),
        dq=np.zeros((2, 2)),
    )
    with pytest.raises(DataError, match=r"bad\.npz: missing key\(s\) ddq"):
        ExcitationTrajectory.load_npz(path)
    np.savez(
        path,
        t=np.array([0.0, 0.1]),
        joint_names=np.array(NAMES),
        q=np.zeros((2, 3)),
        dq=np.zeros((2, 2)),
        ddq=np.zeros((2, 2)),
    )
    with pytest.raises(DataError, match=r"bad\.npz: q must have shape"):
        ExcitationTrajectory.load_npz(path)


def test_sampling_reproduces_the_samples_and_interpolates_a_smooth_motion_closely():
    trajectory = sine_trajectory(rate_hz=20.0)
    q, dq, ddq = trajectory.sample(trajectory.t)
    assert np.allclose(q, trajectory.q) and np.allclose(dq, trajectory.dq)
    assert np.allclose(ddq, trajectory.ddq)
    exact = sine_trajectory(rate_hz=1000.0)
    q, dq, ddq = trajectory.sample(exact.t)
    assert np.max(np.abs(q - exact.q)) < 1e-7
    assert np.max(np.abs(dq - exact.dq)) < 1e-5
    assert np.max(np.abs(ddq - exact.ddq)) < 1e-2


def test_sampled_velocity_and_acceleration_are_derivatives_of_the_sampled_position():
    trajectory = sine_trajectory(rate_hz=10.0)
    times = np.linspace(0.01, 1.99, 397)
    eps = 1e-6
    q_plus, dq_plus, _ = trajectory.sample(times + eps)
    q_minus, dq_minus, _ = trajectory.sample(times - eps)
    _, dq, ddq = trajectory.sample(times)
    assert np.allclose((q_plus - q_minus) / (2 * eps), dq, atol=1e-6)
    assert np.allclose((dq_plus - dq_minus) / (2 * eps), ddq, atol=1e-4)


def test_sampling_outside_the_span_is_refused():
    with pytest.raises(TrajectoryError, match=r"\[0, 2\] s"):
        sine_trajectory().sample([2.5])


def test_time_scaling_replays_the_same_path_slower():
    trajectory = sine_trajectory()
    slow = trajectory.time_scaled(0.25)
    assert slow.duration == pytest.approx(8.0)
    q, dq, ddq = slow.sample([4.0])
    q0, dq0, ddq0 = trajectory.sample([1.0])
    assert np.allclose(q, q0) and np.allclose(dq, 0.25 * dq0) and np.allclose(ddq, 0.0625 * ddq0)
    with pytest.raises(TrajectoryError, match="speed_scale"):
        trajectory.time_scaled(0.0)


def test_rest_to_rest_starts_and_ends_at_rest_and_is_consistent():
    move = rest_to_rest([0.0, 1.0], [1.0, -1.0], 2.0, joint_names=NAMES, rate_hz=100.0)
    assert move.t.size == 201 and move.duration == pytest.approx(2.0)
    assert np.allclose(move.q[0], [0.0, 1.0]) and np.allclose(move.q[-1], [1.0, -1.0])
    for end in (0, -1):
        assert np.allclose(move.dq[end], 0.0) and np.allclose(move.ddq[end], 0.0)
    assert np.allclose(np.gradient(move.q, move.t, axis=0)[1:-1], move.dq[1:-1], atol=1e-3)
    assert np.max(np.abs(move.dq[:, 0])) == pytest.approx(15 / 8 / 2.0, rel=1e-3)  # 1.875 Δq/T


def test_concatenate_shifts_times_and_requires_continuity():
    ramp_in = rest_to_rest([0.0, 0.0], [0.5, 0.2], 1.0, joint_names=NAMES)
    ramp_out = rest_to_rest([0.5, 0.2], [0.0, 0.0], 2.0, joint_names=NAMES)
    whole = concatenate(ramp_in, ramp_out)
    assert whole.duration == pytest.approx(3.0)
    assert whole.t.size == ramp_in.t.size + ramp_out.t.size - 1
    assert np.allclose(whole.sample([2.0])[0], ramp_out.sample([1.0])[0])
    with pytest.raises(TrajectoryError, match="does not start where"):
        concatenate(ramp_in, ramp_in)
    other = rest_to_rest([0.5, 0.2], [0.0, 0.0], 1.0, joint_names=("a", "c"))
    with pytest.raises(TrajectoryError, match="has joints"):
        concatenate(ramp_in, other)
