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
    return concatenate(
        rest_to_rest(start, away, 2.0, joint_names=NAMES),
        rest_to_rest(away, start, 2.0, joint_names=NAMES),
    )


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
    command = run.start(
        motion(), snapshot(measured, 10.0), now=10.0, speed_scale=0.5, skip_dry_run=True
    )
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
    command = run.start(motion(), snapshot(START, 0.0), now=0.0, skip_dry_run=True)
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


@pytest.mark.parametrize(
    "measured, now, speed_scale, reason",
    [
        (snapshot(START, 0.0), 0.5, 1.0, "stale_joint_states"),
        (None, 0.0, 1.0, "stale_joint_states"),
        (snapshot(START[:2], 0.0, NAMES[:2]), 0.0, 1.0, "missing_joints"),
        (snapshot(START + [0, 0.6, 0], 0.0), 0.0, 1.0, "far_from_start"),
        (snapshot(START, 0.0), 0.0, 0.0, "invalid_speed_scale"),
        (snapshot(START, 0.0), 0.0, 1.5, "invalid_speed_scale"),
    ],
)
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
        ExcitationRun().start(
            ExcitationTrajectory(moving.t, NAMES, moving.q, dq, moving.ddq),
            snapshot(START, 0.0),
            now=0.0,
        )


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
    from inertia_id_ros.motion.limits import MotionLimits

    def limits(upper: float, velocity: float) -> MotionLimits:
        return MotionLimits(
            NAMES, np.full(3, -2.0), np.full(3, upper), np.full(3, velocity), np.full(3, np.inf)
        )

    fits = ExcitationRun().start(motion(), snapshot(START, 0.0), now=0.0, limits=limits(2.0, 2.0))
    assert fits.motion_end > 0
    for upper, velocity, message in (
        (0.5, 2.0, "position limit by 0.2"),
        (2.0, 0.4, "velocity limit by "),
    ):
        run = ExcitationRun()
        with pytest.raises(ExcitationRefused, match=message) as info:
            run.start(
                motion(),
                snapshot(START, 0.0),
                now=0.0,
                limits=limits(upper, velocity),
                skip_dry_run=True,
            )
        assert info.value.reason == "beyond_limits" and run.state == IDLE
    run = ExcitationRun()
    run.start(
        motion(), snapshot(START, 0.0), now=0.0, speed_scale=0.5, limits=limits(2.0, 0.4)
    )  # the dry run is slow enough


def test_the_first_run_of_a_motion_is_a_dry_run_and_a_played_one_runs_at_full_speed():
    run = ExcitationRun(RunConfig(dry_run_speed_scale=0.25))
    first = run.start(motion(), snapshot(START, 0.0), now=0.0)
    assert first.dry_run and first.speed_scale == 0.25
    assert "dry run at speed_scale 0.25" in run.message
    assert first.motion_end - first.motion_start == pytest.approx(4.0 / 0.25)
    _, t = follow(run, 10.0)  # stopped before the end: not played
    run.stop("requested", snapshot(START, t), t)
    assert not run.played_before(motion())
    again = run.start(motion(), snapshot(START, t), now=t)
    assert again.dry_run and again.fingerprint == first.fingerprint
    seen, t = follow(run, 100.0)
    assert seen[-1] == IDENTIFYING and run.played_before(motion())
    run.finish(True, "identified")
    full = run.start(motion(), snapshot(START, t), now=t)
    assert not full.dry_run and full.speed_scale == 1.0 and "dry run" not in run.message


def test_a_dry_run_can_be_skipped_and_a_slower_request_is_kept():
    skipped = ExcitationRun().start(motion(), snapshot(START, 0.0), now=0.0, skip_dry_run=True)
    assert not skipped.dry_run and skipped.speed_scale == 1.0
    slow = ExcitationRun(RunConfig(dry_run_speed_scale=0.25)).start(
        motion(), snapshot(START, 0.0), now=0.0, speed_scale=0.1
    )
    assert slow.dry_run and slow.speed_scale == 0.1
    with pytest.raises(ValueError, match="dry_run_speed_scale"):
        RunConfig(dry_run_speed_scale=0.0)


def test_a_dry_run_follows_the_same_path_within_the_same_limits():
    from inertia_id_ros.motion.limits import MotionLimits

    limits = MotionLimits(
        NAMES, np.full(3, -2.0), np.full(3, 2.0), np.full(3, 2.0), np.full(3, 5.0)
    )
    full, dry = motion(), motion().time_scaled(0.25)
    assert np.array_equal(dry.q, full.q)
    over_full, over_dry = limits.violations(full), limits.violations(dry)
    assert over_dry["position"] == over_full["position"]
    for name in ("velocity", "acceleration"):
        assert over_dry[name] <= over_full[name]


def test_a_motion_s_fingerprint_is_its_samples(tmp_path):
    path = tmp_path / "motion.npz"
    motion().save_npz(path)
    assert ExcitationTrajectory.load_npz(path).fingerprint() == motion().fingerprint()
    changed = motion()
    q = changed.q.copy()
    q[5, 1] += 1e-9
    assert (
        ExcitationTrajectory(changed.t, NAMES, q, changed.dq, changed.ddq).fingerprint()
        != motion().fingerprint()
    )


# ---- the Panda in a workspace -------------------------------------------------------------

PANDA = tuple(f"panda_joint{i}" for i in range(1, 8))
HOME = np.array([0.0, -0.785, 0.0, -2.356, 0.0, 1.571, 0.785])
REACH = np.array([0.3, 0.4, 0.0, -1.6, 0.0, 2.0, 0.785])
TOOL = "panda_hand_tcp"


@pytest.fixture(scope="module")
def panda():
    from inertia_id_ros.core.robots import example_robot_urdf, load_model

    return load_model(example_robot_urdf("panda"))


def panda_motion() -> ExcitationTrajectory:
    return concatenate(
        rest_to_rest(HOME, REACH, 2.0, joint_names=PANDA),
        rest_to_rest(REACH, HOME, 2.0, joint_names=PANDA),
    )


def tool_checker(panda, region):
    from inertia_id_ros.motion.workspace import Workspace, WorkspaceChecker, WorkspaceLimit

    return WorkspaceChecker(panda, Workspace((WorkspaceLimit("cell", (TOOL,), region),)))


def test_a_command_leaving_the_workspace_is_refused_before_anything_moves(panda):
    from inertia_id_ros.motion.workspace import HalfSpace, Sphere

    heights = tool_checker(panda, Sphere(np.zeros(3), 9.0)).positions(
        PANDA, panda_motion().sample(np.linspace(0.0, 4.0, 801))[0]
    )[:, 0, 2]
    table = HalfSpace(np.array([0.0, 0.0, -1.0]), -(heights.min() + 0.05))
    run = ExcitationRun(workspace=tool_checker(panda, table))
    with pytest.raises(ExcitationRefused, match=r"limit 'cell' .* by 0\.050 m") as info:
        run.start(panda_motion(), snapshot(HOME, 0.0, PANDA), now=0.0)
    assert info.value.reason == "beyond_workspace" and run.state == IDLE and run.command is None
    lower = HalfSpace(np.array([0.0, 0.0, -1.0]), -(heights.min() - 0.01))
    assert (
        ExcitationRun(workspace=tool_checker(panda, lower))
        .start(panda_motion(), snapshot(HOME, 0.0, PANDA), now=0.0)
        .trajectory.duration
        > 4.0
    )


def test_a_measured_pose_beyond_the_box_stops_the_run_at_that_joint_state(panda):
    from inertia_id_ros.motion.workspace import Box, Sphere

    run = ExcitationRun(RunConfig(max_tracking_error=0.2))
    command = run.start(panda_motion(), snapshot(HOME, 0.0, PANDA), now=0.0, skip_dry_run=True)
    plan = command.trajectory
    heights = tool_checker(panda, Sphere(np.zeros(3), 9.0)).positions(PANDA, plan.q)[:, 0, 2]
    floor = heights.min() - 0.01  # the command keeps 1 cm above the box's floor
    box = Box(np.array([0.0, 0.0, floor + 5.0]), np.full(3, 10.0), np.eye(3))
    run = ExcitationRun(RunConfig(max_tracking_error=0.2), workspace=tool_checker(panda, box))
    command = run.start(panda_motion(), snapshot(HOME, 0.0, PANDA), now=0.0, skip_dry_run=True)
    excursion = command.t_start + command.motion_start + 2.0  # at REACH, the lowest point
    dt = 0.01
    t = command.t_start
    while t < excursion - 1e-9:
        t += dt
        q = plan.sample(np.clip(t - command.t_start, 0.0, plan.duration))[0][0]
        run.step(snapshot(q, t, PANDA), t)
        assert run.state != STOPPED
    q = plan.sample(excursion + dt - command.t_start)[0][0] + np.array([0, 0.15, 0, 0, 0, 0, 0])
    alone = ExcitationRun(RunConfig(max_tracking_error=0.2), workspace=tool_checker(panda, box))
    alone.start(panda_motion(), snapshot(HOME, 0.0, PANDA), now=0.0, skip_dry_run=True)
    inside = plan.sample(excursion + dt - command.t_start)[0][0]
    assert not alone.check_measured(snapshot(inside, excursion + dt, PANDA), excursion).changed
    for check in (run.step, alone.check_measured):  # every check, or the workspace alone
        step = check(snapshot(q, excursion + dt, PANDA), excursion + dt)
        assert step.state == STOPPED and np.array_equal(step.hold, q)
        assert (
            "the measured pose: frame panda_hand_tcp leaves workspace limit 'cell'" in step.message
            and f"t = {excursion + dt:.3f} s" in step.message
        )


def test_a_command_through_an_obstacle_is_refused_with_the_distance():
    from inertia_id_ros.core.robots import example_robot_urdf
    from inertia_id_ros.motion.collision import CollisionChecker, Obstacle
    from inertia_id_ros.motion.workspace import Sphere

    collision = CollisionChecker(
        example_robot_urdf("panda"),
        None,
        obstacles=(Obstacle("lamp", Sphere(np.array([0.64, 0.2, 0.3]), 0.05)),),
    )
    run = ExcitationRun(RunConfig(collision_margin=0.02), collision=collision)
    with pytest.raises(
        ExcitationRefused,
        match=r"and lamp overlap by .* mm closer than the "
        r"collision margin 20 mm",
    ) as info:
        run.start(panda_motion(), snapshot(HOME, 0.0, PANDA), now=0.0)
    assert info.value.reason == "collision" and run.state == IDLE
