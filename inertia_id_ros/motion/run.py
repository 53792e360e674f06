"""Running an exciting motion on a robot: the checks, the ramps, the stop rule (no ROS).

:class:`ExcitationRun` is the state machine of one node's excitations; the node
(:mod:`inertia_id_ros.ros.wizard`) drives it, the tests alike. One excitation, in order:

1. **start** (:meth:`ExcitationRun.start`; :meth:`ExcitationRun.begin_design` first when the
   motion is designed on the spot). Refused with :class:`~inertia_id_ros.errors.ExcitationRefused`
   when another excitation is under way (reason ``busy``), the joint states are stale
   (``stale_joint_states``: none received for ``joint_state_timeout``), a joint of the motion is
   not measured (``missing_joints``), the measured pose is further than ``max_start_distance``
   from the motion's start (``far_from_start``), the motion does not start and end at rest
   (``invalid_trajectory``), ``speed_scale`` is outside (0, 1] (``invalid_speed_scale``) or the
   command would leave the robot's limits (``beyond_limits``, when they are given), a frame would
   leave the workspace (``beyond_workspace``, with a
   :class:`~inertia_id_ros.motion.workspace.WorkspaceChecker`) or come closer to an obstacle or
   another link than the margin (``collision``, with a
   :class:`~inertia_id_ros.motion.collision.CollisionChecker`); each refusal names the limit
   and the amount. Otherwise the command, as one trajectory: a ramp-in from the measured pose to
   the motion's start, the motion at ``speed_scale`` (:meth:`ExcitationTrajectory.time_scaled`),
   a ramp-out back to the measured pose. A motion not played to its end before (by its
   :meth:`~ExcitationTrajectory.fingerprint`) runs at most at ``dry_run_speed_scale`` unless
   the caller skips that: a **dry run** (the same path: positions unchanged, velocities and
   accelerations smaller, so within the same limits). Each ramp is a rest-to-rest quintic at
   most ``ramp_velocity`` fast and at least ``min_ramp_sec`` long. It starts ``start_delay``
   after ``now``.
2. **follow** (:meth:`ExcitationRun.step`, at every tick with the newest joint state): the state
   goes ``ramp_in`` -> ``running`` -> ``ramp_out`` by the command's clock. The run stops (state
   ``stopped``, and the caller commands a hold at the newest measured pose) when the joint
   states go stale, the measured pose leaves the command by more than ``max_tracking_error`` or
   puts a frame outside the workspace (checked on every joint state the caller steps with);
   :meth:`ExcitationRun.stop` stops it on request.
3. **identify**: after the ramp-out (state ``identifying``) the caller identifies on the samples
   stamped in :attr:`ExcitationCommand.motion_interval` (the motion proper, ramps excluded) and
   reports with :meth:`ExcitationRun.finish` (``done`` or ``failed``).

Times are seconds on one clock: the joint states' stamps and ``now`` (the node's clock); a joint
state's ``received`` is ``now`` when it arrived.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from inertia_id_ros.errors import ExcitationRefused, TrajectoryError
from inertia_id_ros.motion.trajectory import ExcitationTrajectory, concatenate, rest_to_rest
from inertia_id_ros.options import DEFAULT_COLLISION_MARGIN

if TYPE_CHECKING:
    from inertia_id_ros.motion.collision import CollisionChecker
    from inertia_id_ros.motion.limits import MotionLimits
    from inertia_id_ros.motion.workspace import WorkspaceChecker

IDLE, DESIGNING, RAMP_IN, RUNNING, RAMP_OUT, IDENTIFYING = (
    "idle",
    "designing",
    "ramp_in",
    "running",
    "ramp_out",
    "identifying",
)
DONE, STOPPED, FAILED = "done", "stopped", "failed"
MOVING = (RAMP_IN, RUNNING, RAMP_OUT)
"""States in which the robot follows the command."""
ACTIVE = (DESIGNING, *MOVING, IDENTIFYING)
"""States of an excitation under way: another one is refused."""

PEAK_SPEED_FACTOR = 1.875
"""Peak speed of the rest-to-rest quintic ``10 s^3 - 15 s^4 + 6 s^5`` over its mean speed."""

DEFAULT_DRY_RUN_SPEED_SCALE = 0.25
"""Largest speed scale of a motion's first run (a dry run at reduced speed)."""

LIMIT_TOLERANCE = 1e-6
"""How far (in each limit's unit) a command's samples may exceed the limits given to start."""


def check_speed_scale(speed_scale: float) -> None:
    """Refuse (``invalid_speed_scale``) a ``speed_scale`` outside (0, 1]."""
    if not (np.isfinite(speed_scale) and 0.0 < speed_scale <= 1.0):
        raise ExcitationRefused(
            "invalid_speed_scale", f"speed_scale must be in (0, 1], got {speed_scale!r}"
        )


@dataclass(frozen=True)
class RunConfig:
    """The checks and ramps of an excitation (rad for revolute joints, s).

    ``max_start_distance``: largest distance of any joint from the motion's start pose that a
    ramp-in may cover; ``ramp_velocity`` (rad/s): the ramps' peak joint speed; ``min_ramp_sec``:
    their shortest duration; ``joint_state_timeout``: joint states older than this (by their
    arrival) are stale; ``max_tracking_error``: largest distance of the measured pose from the
    command at the same stamp; ``start_delay``: the command starts this long after it is sent (it
    must reach the controller first); ``ramp_rate_hz``: sample rate of the ramps;
    ``dry_run_speed_scale``: the largest speed scale, in (0, 1], of a motion's first run (1: no
    dry run); ``collision_margin`` (m): the smallest distance a command keeps from obstacles and
    between links, with a collision checker.
    """

    max_start_distance: float = 0.5
    ramp_velocity: float = 0.5
    min_ramp_sec: float = 1.0
    joint_state_timeout: float = 0.5
    max_tracking_error: float = 0.2
    start_delay: float = 0.25
    ramp_rate_hz: float = 100.0
    dry_run_speed_scale: float = DEFAULT_DRY_RUN_SPEED_SCALE
    collision_margin: float = DEFAULT_COLLISION_MARGIN

    def __post_init__(self) -> None:
        if not (np.isfinite(self.dry_run_speed_scale) and 0.0 < self.dry_run_speed_scale <= 1.0):
            raise ValueError(
                f"dry_run_speed_scale must be in (0, 1], got {self.dry_run_speed_scale!r}"
            )
        for name in (
            "max_start_distance",
            "ramp_velocity",
            "min_ramp_sec",
            "joint_state_timeout",
            "max_tracking_error",
            "ramp_rate_hz",
            "collision_margin",
        ):
            value = getattr(self, name)
            if not (np.isfinite(value) and value > 0):
                raise ValueError(f"{name} must be finite and > 0, got {value!r}")
        if not (np.isfinite(self.start_delay) and self.start_delay >= 0):
            raise ValueError(f"start_delay must be finite and >= 0 (s), got {self.start_delay!r}")


@dataclass(frozen=True)
class JointStateSnapshot:
    """The newest joint state: its ``stamp`` (s), when it was ``received`` (s, the caller's
    clock), joint ``names`` and positions ``q`` (rad, m)."""

    stamp: float
    received: float
    names: tuple[str, ...]
    q: np.ndarray

    def positions(self, joint_names: Sequence[str]) -> np.ndarray:
        """``q`` of ``joint_names`` (n,), in that order; ``missing_joints`` refused if any is
        not measured."""
        index = {name: k for k, name in enumerate(self.names)}
        missing = [name for name in joint_names if name not in index]
        if missing:
            raise ExcitationRefused(
                "missing_joints",
                f"the joint states do not list {missing} (they list {list(self.names)})",
            )
        return np.asarray(self.q, dtype=float)[[index[name] for name in joint_names]]


@dataclass(frozen=True)
class ExcitationCommand:
    """What to send: ``trajectory`` (ramp-in, motion, ramp-out) starting at the stamp ``t_start``
    (s); the motion proper runs from ``motion_start`` to ``motion_end`` s into it, at
    ``speed_scale``; ``dry_run``: the motion's first run, at reduced speed;
    ``fingerprint``: the motion's (:meth:`ExcitationTrajectory.fingerprint`, unscaled)."""

    trajectory: ExcitationTrajectory
    t_start: float
    motion_start: float
    motion_end: float
    speed_scale: float
    dry_run: bool = False
    fingerprint: str = ""

    @property
    def motion_interval(self) -> tuple[float, float]:
        """Stamps (s) of the motion's first and last sample: the samples to identify on."""
        return self.t_start + self.motion_start, self.t_start + self.motion_end

    @property
    def t_end(self) -> float:
        """Stamp (s) at which the ramp-out ends."""
        return self.t_start + self.trajectory.duration


@dataclass(frozen=True)
class Step:
    """What one :meth:`ExcitationRun.step` (or :meth:`ExcitationRun.stop`) decided: the
    ``state`` after it, whether it ``changed``, the pose (n,) to ``hold`` when the run has just
    stopped (``None`` otherwise), and the ``message`` of the change."""

    state: str
    changed: bool = False
    hold: np.ndarray | None = None
    message: str = ""


class ExcitationRun:
    """The excitations of one robot, one at a time; see the module docstring. ``workspace``
    checks every command and measured pose, ``collision`` every command (both optional).
    Thread-safe: the caller's service callbacks, timer and design thread may call it
    concurrently (the checkers are used under its lock)."""

    def __init__(
        self,
        config: RunConfig | None = None,
        workspace: WorkspaceChecker | None = None,
        collision: CollisionChecker | None = None,
    ) -> None:
        self.config = RunConfig() if config is None else config
        self.workspace, self.collision = workspace, collision
        self._played: set[str] = set()
        """Fingerprints of the motions played to their end (no dry run for them)."""
        self.state = IDLE
        self.message = ""
        """What the latest change of state was about."""
        self.command: ExcitationCommand | None = None
        """The command of the current or latest excitation."""
        self._lock = threading.Lock()

    @property
    def active(self) -> bool:
        """An excitation is under way (designing, moving or identifying)."""
        return self.state in ACTIVE

    def elapsed(self, now: float) -> float:
        """Seconds of the motion proper played by ``now`` (0 before, its duration after)."""
        command = self.command
        if command is None:
            return 0.0
        start, end = command.motion_interval
        return float(np.clip(now - start, 0.0, end - start))

    # ---- start -----------------------------------------------------------------------------

    def _check_ready(
        self,
        joint_state: JointStateSnapshot | None,
        now: float,
        joint_names: Sequence[str],
        designed: bool = False,
    ) -> np.ndarray:
        """The measured pose of ``joint_names`` (lock held); refused if busy or stale, or, for a
        ``designed`` motion, if its excitation is no longer the one designing."""
        if designed and self.state != DESIGNING:
            raise ExcitationRefused(
                "cancelled", f"the excitation was {self.state} while its motion was designed"
            )
        if not designed and self.state in ACTIVE:
            raise ExcitationRefused("busy", f"another excitation is under way ({self.state})")
        if joint_state is None:
            raise ExcitationRefused("stale_joint_states", "no joint state received yet")
        age = now - joint_state.received
        if age > self.config.joint_state_timeout:
            raise ExcitationRefused(
                "stale_joint_states",
                f"the newest joint state arrived "
                f"{age:.2f} s ago (joint_state_timeout "
                f"{self.config.joint_state_timeout:g} s)",
            )
        return joint_state.positions(joint_names)

    def begin_design(
        self, joint_state: JointStateSnapshot | None, now: float, joint_names: Sequence[str]
    ) -> np.ndarray:
        """Reserve the robot while a motion is designed (state ``designing``); returns the
        measured pose (n,) of ``joint_names`` to start the design from. Refused like
        :meth:`start` (``busy``, ``stale_joint_states``, ``missing_joints``)."""
        with self._lock:
            q = self._check_ready(joint_state, now, joint_names)
            self._set(DESIGNING, "designing the motion", None)
            return q

    def played_before(self, trajectory: ExcitationTrajectory) -> bool:
        """Whether ``trajectory`` was played to its end (its next run is no dry run)."""
        with self._lock:
            return trajectory.fingerprint() in self._played

    def start(
        self,
        trajectory: ExcitationTrajectory,
        joint_state: JointStateSnapshot | None,
        now: float,
        speed_scale: float = 1.0,
        designed: bool = False,
        limits: MotionLimits | None = None,
        skip_dry_run: bool = False,
    ) -> ExcitationCommand:
        """The command playing ``trajectory`` at ``speed_scale`` from the measured pose, starting
        at ``now + start_delay`` (state ``ramp_in``); refused as the module docstring says.
        ``designed``: the motion of :meth:`begin_design` (refused as ``cancelled`` if that
        excitation was stopped meanwhile; any refusal then fails it). ``limits``: the robot's
        (of the trajectory's joints) that every sample of the command must keep.
        ``skip_dry_run``: play a motion not played before at ``speed_scale`` all the same."""
        with self._lock:
            try:
                return self._start(
                    trajectory, joint_state, now, speed_scale, designed, limits, skip_dry_run
                )
            except ExcitationRefused as refused:
                if designed and self.state == DESIGNING:
                    self._set(FAILED, f"refused: {refused.message}", None)
                raise

    def _start(
        self,
        trajectory: ExcitationTrajectory,
        joint_state: JointStateSnapshot | None,
        now: float,
        speed_scale: float,
        designed: bool,
        limits: MotionLimits | None,
        skip_dry_run: bool,
    ) -> ExcitationCommand:
        q = self._check_ready(joint_state, now, trajectory.joint_names, designed)
        check_speed_scale(speed_scale)
        fingerprint = trajectory.fingerprint()
        first = fingerprint not in self._played
        if first and not skip_dry_run:
            speed_scale = min(speed_scale, self.config.dry_run_speed_scale)
        dry_run = first and speed_scale < 1.0
        names = trajectory.joint_names
        gap = np.abs(q - trajectory.q[0])
        worst = int(np.argmax(gap))
        if gap[worst] > self.config.max_start_distance:
            raise ExcitationRefused(
                "far_from_start",
                f"joint {names[worst]} is {gap[worst]:.3f} from the motion's "
                f"start ({q[worst]:.3f} measured, {trajectory.q[0, worst]:.3f} expected; "
                f"max_start_distance {self.config.max_start_distance:g}): move the robot there "
                "first",
            )
        motion = trajectory.time_scaled(speed_scale)
        ramp_in = self._ramp(q, trajectory.q[0], names)
        ramp_out = self._ramp(trajectory.q[-1], q, names)
        try:
            plan = concatenate(ramp_in, motion, ramp_out)
        except TrajectoryError as error:
            raise ExcitationRefused(
                "invalid_trajectory", f"the motion must start and end at rest: {error}"
            ) from error
        if limits is not None:
            over = {
                name: excess
                for name, excess in limits.violations(plan).items()
                if excess > LIMIT_TOLERANCE
            }
            if over:
                raise ExcitationRefused(
                    "beyond_limits",
                    "the command exceeds the robot's "
                    + ", ".join(f"{name} limit by {excess:.4g}" for name, excess in over.items()),
                )
        self._check_surroundings(plan)
        command = ExcitationCommand(
            plan,
            now + self.config.start_delay,
            ramp_in.duration,
            ramp_in.duration + motion.duration,
            float(speed_scale),
            dry_run,
            fingerprint,
        )
        dry = (
            ""
            if speed_scale == 1.0
            else f" (dry run at speed_scale {speed_scale:g}: the first run of this motion; call "
            "again for full speed)"
            if dry_run
            else f" (at speed_scale {speed_scale:g})"
        )
        self._set(
            RAMP_IN,
            f"ramping in over {ramp_in.duration:.2f} s, then {motion.duration:.2f}"
            f" s of motion{dry}, then ramping out over {ramp_out.duration:.2f} s",
            command,
        )
        return command

    def _check_surroundings(self, plan: ExcitationTrajectory) -> None:
        """Refuse (``beyond_workspace``, ``collision``) a command leaving the workspace or
        coming closer than the margin to an obstacle or another link (lock held)."""
        if self.workspace is not None:
            violation = self.workspace.check(plan)
            if violation is not None:
                raise ExcitationRefused(
                    "beyond_workspace",
                    f"the command (ramps included, t from its start): {violation}",
                )
        if self.collision is not None:
            shortfall = self.collision.clearance(plan).shortfall(self.config.collision_margin)
            if shortfall:
                raise ExcitationRefused("collision", f"the command (ramps included): {shortfall}")

    def _ramp(
        self, q_from: np.ndarray, q_to: np.ndarray, names: Sequence[str]
    ) -> ExcitationTrajectory:
        """Rest-to-rest quintic from ``q_from`` to ``q_to``, within ``ramp_velocity``."""
        config = self.config
        distance = float(np.max(np.abs(q_to - q_from)))
        duration = max(config.min_ramp_sec, PEAK_SPEED_FACTOR * distance / config.ramp_velocity)
        return rest_to_rest(q_from, q_to, duration, joint_names=names, rate_hz=config.ramp_rate_hz)

    # ---- follow ----------------------------------------------------------------------------

    def step(self, joint_state: JointStateSnapshot | None, now: float) -> Step:
        """Advance by the command's clock at ``now``, checking the newest ``joint_state``: stop
        (with the pose to hold) when it is stale or off the command."""
        with self._lock:
            command = self.command
            if self.state not in MOVING or command is None:
                return Step(self.state)
            why = self._stop_reason(command, joint_state, now)
            if why:
                return self._stop(why, joint_state, now)
            elapsed = now - command.t_start
            state = (
                RAMP_IN
                if elapsed < command.motion_start
                else RUNNING
                if elapsed < command.motion_end
                else RAMP_OUT
                if elapsed < command.trajectory.duration
                else IDENTIFYING
            )
            if state == self.state:
                return Step(state)
            start, end = command.motion_interval
            if state in (RAMP_OUT, IDENTIFYING):
                self._played.add(command.fingerprint)
            message = {
                RUNNING: f"running the motion from stamp {start:.3f} s",
                RAMP_OUT: f"motion played ({start:.3f} s to {end:.3f} s); ramping out",
                IDENTIFYING: f"identifying on the samples from {start:.3f} s to {end:.3f} s",
            }[state]
            self._set(state, message, command)
            return Step(state, True, None, message)

    def _stop_reason(
        self, command: ExcitationCommand, joint_state: JointStateSnapshot | None, now: float
    ) -> str:
        """Why the run must stop now ("" if it may go on; lock held)."""
        config = self.config
        if joint_state is None or now - joint_state.received > config.joint_state_timeout:
            age = (
                "none received"
                if joint_state is None
                else f"none for {now - joint_state.received:.2f} s"
            )
            return (
                f"the joint states stopped ({age}, joint_state_timeout "
                f"{config.joint_state_timeout:g} s)"
            )
        names = command.trajectory.joint_names
        t = np.clip(joint_state.stamp - command.t_start, 0.0, command.trajectory.duration)
        q_command = command.trajectory.sample(t)[0][0]
        measured = joint_state.positions(names)
        error = np.abs(measured - q_command)
        worst = int(np.argmax(error))
        if error[worst] > config.max_tracking_error:
            return (
                f"joint {names[worst]} is {error[worst]:.3f} off the command "
                f"(max_tracking_error {config.max_tracking_error:g})"
            )
        return self._outside(names, measured, joint_state.stamp)

    def _outside(self, names: Sequence[str], measured: np.ndarray, stamp: float) -> str:
        """Why the measured pose ``measured`` of ``names`` stamped ``stamp`` must stop the run:
        a frame outside the workspace (``""``: inside, or no workspace; lock held)."""
        if self.workspace is None:
            return ""
        violation = self.workspace.check_pose(names, measured, stamp)
        return "" if violation is None else f"the measured pose: {violation} (joint state stamp)"

    def check_measured(self, joint_state: JointStateSnapshot, now: float) -> Step:
        """The workspace check alone of one measured ``joint_state`` (cheap enough for every
        joint state as it arrives; :meth:`step` does it too, with the other checks): stop,
        holding its pose, when it puts a frame outside the workspace."""
        with self._lock:
            command = self.command
            if self.workspace is None or self.state not in MOVING or command is None:
                return Step(self.state)
            names = command.trajectory.joint_names
            why = self._outside(names, joint_state.positions(names), joint_state.stamp)
            return self._stop(why, joint_state, now) if why else Step(self.state)

    def stop(self, reason: str, joint_state: JointStateSnapshot | None, now: float) -> Step:
        """Stop on request at ``now``: state ``stopped`` and, if the robot was moving, the pose
        to hold (the newest measured one). Nothing to stop: ``changed`` is False."""
        with self._lock:
            if self.state not in ACTIVE or self.state == IDENTIFYING:
                return Step(self.state)
            return self._stop(reason, joint_state, now)

    def _stop(self, reason: str, joint_state: JointStateSnapshot | None, now: float) -> Step:
        hold = None
        command = self.command
        if self.state in MOVING and command is not None:
            names = command.trajectory.joint_names
            try:
                hold = None if joint_state is None else joint_state.positions(names)
            except ExcitationRefused:
                hold = None
            if hold is None:  # no usable measurement: hold where the command is now
                t = np.clip(now - command.t_start, 0.0, command.trajectory.duration)
                hold = command.trajectory.sample(t)[0][0]
        where = "" if hold is None else " holding the current pose;"
        message = f"stopped:{where} {reason}"
        self._set(STOPPED, message, command)
        return Step(STOPPED, True, hold, message)

    # ---- identify --------------------------------------------------------------------------

    def finish(self, identified: bool, message: str) -> Step:
        """The identification's outcome: state ``done`` (``identified``) or ``failed``."""
        with self._lock:
            if self.state != IDENTIFYING:
                return Step(self.state)
            state = DONE if identified else FAILED
            self._set(state, message, self.command)
            return Step(state, True, None, message)

    def fail(self, message: str) -> Step:
        """The excitation could not go on (a design that failed): state ``failed``."""
        with self._lock:
            if self.state not in ACTIVE:
                return Step(self.state)
            self._set(FAILED, message, self.command)
            return Step(FAILED, True, None, message)

    def _set(self, state: str, message: str, command: ExcitationCommand | None) -> None:
        self.state, self.message, self.command = state, message, command
