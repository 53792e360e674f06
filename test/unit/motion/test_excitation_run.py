"""ExcitationRun: the checks before a start, the ramps, the phases, the stop rules."""

from __future__ import annotations

import numpy as np
import pytest

from inertia_id_ros.errors import ExcitationRefused
from inertia_id_ros.motion.run import (
    DESIGNING,
    DONE,
    FAILED,
    IDENTIFYING,
    IDLE,
    RAMP_IN,
    RAMP_OUT,
    RUNNING,
    STOPPED,
    ExcitationRun,
    JointStateSnapshot,
    RunConfig,
)
from inertia_id_ros.motion.trajectory import ExcitationTrajectory, concatenate, rest_to_rest

NAMES = ("j1", "j2", "j3")
START = np.array([0.1, -0.4, 0.3])


def motion(start: np.ndarray = START) -> ExcitationTrajectory:
    """4 s at rest at both ends: out to another pose and back."""
    away = start + np.array([0.6, -0.5, 0.4])
    return concatenate(rest_to_rest(start, away, 2.0, joint_names=NAMES),
                       rest_to_rest(away, start, 2.0, joint_names=NAMES))


def snapshot(q, t: float, names=NAMES) -> JointStateSnapshot:
    return JointStateSnapshot(stamp=t, received=t, names=tuple(names), q=np.asarray(q, float))


def follow(run: ExcitationRun, t_end: float, lag: float = 0.0, dt: float = 0.01):
    """Step a robot that tracks the command ``lag`` s late, until ``t_end`` (s) or a stop; the
    states seen, in order, and the last time."""
    command = run.command
    seen, t = [run.state], command.t_start - command.trajectory.t[0]
    while t < t_end and run.state not in (STOPPED, IDENTIFYING):
        t += dt
        local = np.clip(t - lag - command.t_start, 0.0, command.trajectory.duration)
        step = run.step(snapshot(command.trajectory.sample(local)[0][0], t), t)
        if step.changed:
            seen.append(step.state)
    return seen, t


def test_the_command_ramps_in_from_the_measured_pose_plays_the_motion_scaled_and_ramps_out():
    run = ExcitationRun(RunConfig(ramp_velocity=0.5, min_ramp_sec=1.0, start_delay=0.2))
    measured = START + np.array([0.2, 0.0, -0.1])
    command = run.start(motion(), snapshot(measured, 10.0), now=10.0, speed_scale=0.5)
    plan = command.trajectory
    assert run.state == RAMP_IN and command.t_start == pytest.approx(10.2)
    assert np.allclose(plan.q[0], measured) and np.allclose(plan.q[-1], measured)
    assert np.allclose(plan.dq[[0, -1]], 0.0) and np.allclose(plan.ddq[[0, -1]], 0.0)
    # the ramp-in: 0.2 rad at most 0.5 rad/s peak takes its minimum 1 s
    assert command.motion_start == pytest.approx(1.0)
    assert command.motion_end - command.motion_start == pytest.approx(4.0 / 0.5)
    start, end = command.motion_interval
    assert (start, end) == pytest.approx((11.2, 19.2))
    inside = (plan.t >= command.motion_start) & (plan.t <= command.motion_end)
    scaled = motion().time_scaled(0.5)
    q, dq, ddq = scaled.sample(plan.t[inside] - command.motion_start)
    assert np.allclose(plan.q[inside], q) and np.allclose(plan.dq[inside], dq)
    assert np.allclose(plan.ddq[inside], ddq)
    assert np.abs(dq).max() == pytest.approx(0.5 * np.abs(motion().dq).max(), rel=1e-3)
    ramps = ~inside
    assert np.abs(plan.dq[ramps]).max() <= 0.5 + 1e-9


def test_a_long_ramp_keeps_to_the_ramp_velocity():
    run = ExcitationRun(RunConfig(max_start_distance=1.0, ramp_velocity=0.25))
    command = run.start(motion(), snapshot(START + [0.8, 0, 0], 0.0), now=0.0)
    assert command.motion_start == pytest.approx(1.875 * 0.8 / 0.25)
    ramp = command.trajectory.t <= command.motion_start
    assert np.abs(command.trajectory.dq[ramp]).max() == pytest.approx(0.25, rel=1e-3)


def test_a_full_run_goes_through_every_phase_and_ends_identified():
    run = ExcitationRun()
    assert run.state == IDLE and not run.active
    command = run.start(motion(), snapshot(START, 0.0), now=0.0)
    seen, t = follow(run, 100.0, lag=0.02)
    assert seen == [RAMP_IN, RUNNING, RAMP_OUT, IDENTIFYING]
    assert t == pytest.approx(command.t_end, abs=0.02) and run.active
    assert run.elapsed(t) == pytest.approx(4.0)
    step = run.finish(True, "m = 1.5 kg")
    assert (step.state, step.changed, run.state, run.active) == (DONE, True, DONE, False)
    run.start(motion(), snapshot(START, t), now=t)  # the next one may start
    assert run.state == RAMP_IN


def test_a_stop_mid_run_holds_the_measured_pose_and_frees_the_robot():
    run = ExcitationRun()
    run.start(motion(), snapshot(START, 0.0), now=0.0)
    seen, t = follow(run, 3.0)
    assert seen[-1] == RUNNING
    here = START + np.array([0.3, -0.2, 0.1])
    step = run.stop("requested", snapshot(here, t), t)
    assert step.state == STOPPED and step.changed and np.array_equal(step.hold, here)
    assert "holding the current pose" in step.message and "requested" in step.message
    assert not run.step(snapshot(here, t + 0.01), t + 0.01).changed  # stays stopped
    assert not run.stop("again", snapshot(here, t), t).changed
    assert run.finish(True, "late").state == STOPPED  # nothing to identify
    run.start(motion(), snapshot(START, t + 1), now=t + 1)
    assert run.state == RAMP_IN


def test_joint_states_that_stop_stop_the_run_at_the_last_measured_pose():
    run = ExcitationRun(RunConfig(joint_state_timeout=0.25))
    run.start(motion(), snapshot(START, 0.0), now=0.0)
    _, t = follow(run, 2.0)
    last = snapshot(START + 0.05, t)
    assert not run.step(last, t + 0.2).changed
    step = run.step(last, t + 0.3)
    assert step.state == STOPPED and np.array_equal(step.hold, last.q)
    assert "joint states stopped" in step.message


def test_a_robot_off_the_command_stops_the_run():
    run = ExcitationRun(RunConfig(max_tracking_error=0.1))
    command = run.start(motion(), snapshot(START, 0.0), now=0.0)
    t = command.t_start + command.motion_start + 1.0
    q = command.trajectory.sample(t - command.t_start)[0][0] + np.array([0.0, 0.15, 0.0])
    step = run.step(snapshot(q, t), t)
    assert step.state == STOPPED and "joint j2 is 0.150 off the command" in step.message


@pytest.mark.parametrize("measured, now, speed_scale, reason", [
    (snapshot(START, 0.0), 0.5, 1.0, "stale_joint_states"),
    (None, 0.0, 1.0, "stale_joint_states"),
    (snapshot(START[:2], 0.0, NAMES[:2]), 0.0, 1.0, "missing_joints"),
    (snapshot(START + [0, 0.6, 0], 0.0), 0.0, 1.0, "far_from_start"),
    (snapshot(START, 0.0), 0.0, 0.0, "invalid_speed_scale"),
    (snapshot(START, 0.0), 0.0, 1.5, "invalid_speed_scale"),
])
def test_refusals_leave_the_robot_idle(measured, now, speed_scale, reason):
    run = ExcitationRun(RunConfig(max_start_distance=0.5, joint_state_timeout=0.25))
    with pytest.raises(ExcitationRefused) as info:
        run.start(motion(), measured, now=now, speed_scale=speed_scale)
    assert info.value.reason == reason and run.state == IDLE and run.command is None


def test_a_second_excitation_is_refused_while_one_runs():
    run = ExcitationRun()
    run.start(motion(), snapshot(START, 0.0), now=0.0)
    with pytest.raises(ExcitationRefused, match="busy"):
        run.start(motion(), snapshot(START, 0.0), now=0.0)
    with pytest.raises(ExcitationRefused, match="busy"):
        run.begin_design(snapshot(START, 0.0), 0.0, NAMES)
    assert run.state == RAMP_IN


def test_a_motion_not_at_rest_at_its_ends_is_refused():
    moving = motion()
    dq = moving.dq.copy()
    dq[0] = 0.1
    with pytest.raises(ExcitationRefused, match="invalid_trajectory"):
        ExcitationRun().start(ExcitationTrajectory(moving.t, NAMES, moving.q, dq, moving.ddq),
                              snapshot(START, 0.0), now=0.0)


def test_a_design_reserves_the_robot_and_a_stop_meanwhile_cancels_it():
    run = ExcitationRun()
    q = run.begin_design(snapshot(START, 0.0), 0.0, NAMES)
    assert np.array_equal(q, START) and run.state == DESIGNING and run.active
    with pytest.raises(ExcitationRefused, match="busy"):
        run.start(motion(), snapshot(START, 0.0), now=0.0)
    run.start(motion(), snapshot(START, 1.0), now=1.0, designed=True)
    assert run.state == RAMP_IN

    run = ExcitationRun()
    run.begin_design(snapshot(START, 0.0), 0.0, NAMES)
    step = run.stop("requested", snapshot(START, 0.5), 0.5)
    assert step.state == STOPPED and step.hold is None  # the robot never moved
    with pytest.raises(ExcitationRefused, match="cancelled"):
        run.start(motion(), snapshot(START, 1.0), now=1.0, designed=True)
    assert run.state == STOPPED

    run = ExcitationRun()
    run.begin_design(snapshot(START, 0.0), 0.0, NAMES)
    with pytest.raises(ExcitationRefused, match="far_from_start"):  # the robot moved meanwhile
        run.start(motion(), snapshot(START + 1.0, 1.0), now=1.0, designed=True)
    assert run.state == FAILED and not run.active


def test_a_command_beyond_the_limits_is_refused():
    from inertia_id_ros.motion.design import MotionLimits

    def limits(upper: float, velocity: float) -> MotionLimits:
        return MotionLimits(NAMES, np.full(3, -2.0), np.full(3, upper), np.full(3, velocity),
                            np.full(3, np.inf))

    fits = ExcitationRun().start(motion(), snapshot(START, 0.0), now=0.0, limits=limits(2.0, 2.0))
    assert fits.motion_end > 0
    for upper, velocity, message in ((0.5, 2.0, "position limit by 0.2"),
                                     (2.0, 0.4, "velocity limit by ")):
        run = ExcitationRun()
        with pytest.raises(ExcitationRefused, match=message) as info:
            run.start(motion(), snapshot(START, 0.0), now=0.0, limits=limits(upper, velocity))
        assert info.value.reason == "beyond_limits" and run.state == IDLE
    run = ExcitationRun()
    run.start(motion(), snapshot(START, 0.0), now=0.0, speed_scale=0.5,
              limits=limits(2.0, 0.4))  # the dry run is slow enough
