"""The node's load-identification wizard: ``~/excite``, ``~/stop`` and ``~/excitation``.

The rules live in :class:`~inertia_id_ros.motion.run.ExcitationRun` (no ROS); this module wires
them to the node:

- ``~/excite`` (``Excite``): refused unless ``allow_motion`` was set at launch. A trajectory
  file, or a motion designed on the spot from the measured pose (on a thread;
  :func:`~inertia_id_ros.motion.design.design_excitation` with ``excite_max_acceleration``,
  ``design_time_limit_sec``, and the collision geometry of ``srdf`` and ``environment_file``), at
  ``speed_scale`` (a motion's first run at most at ``excite_dry_run_speed_scale`` unless
  ``skip_dry_run``); refused beyond the URDF's position and velocity limits, the
  ``workspace_file``'s limits or the collision margin. The command (ramp-in, motion, ramp-out) goes
  to ``trajectory_topic`` as one ``trajectory_msgs/JointTrajectory`` whose points carry positions,
  velocities and accelerations, stamped with its start.
- while a command moves the robot, a timer (:data:`TICK_HZ`; cancelled otherwise, so that an
  idle wizard costs the node nothing) steps the run with the newest joint state, and, with a
  ``workspace_file``, every joint state is checked against it as it arrives (on the input
  thread); a stop (``~/stop``, ``std_srvs/Trigger``; joint states gone stale; the robot off the
  command or outside the workspace) publishes a hold at the newest measured pose.
- after the ramp-out the session identifies on exactly the samples stamped in the motion's
  interval (a thread). While the robot moves the window holds the whole command (lengthened if
  it was shorter) and payload-change detection pauses (the payload does not change during an
  excitation, and the estimates of its first seconds are too poor a reference).
- ``~/excitation`` (``ExcitationStatus``, latched): every change of state, the progress each
  second, and the result; ``/diagnostics`` gets the state too.
"""

from __future__ import annotations

import threading
import time
from collections import deque
from typing import TYPE_CHECKING

import numpy as np
from sensor_msgs.msg import JointState
from std_srvs.srv import Trigger
from trajectory_msgs.msg import JointTrajectory

from inertia_id_ros.errors import (
    ConfigError,
    DataError,
    ExcitationRefused,
    FrameNotFound,
    JointNotFound,
    ProblemError,
    StartupError,
)
from inertia_id_ros.modes import ExcitationTarget, NodeSettings
from inertia_id_ros.motion.collision import CollisionChecker, load_environment
from inertia_id_ros.motion.design import design_excitation
from inertia_id_ros.motion.limits import MotionLimits, motion_limits
from inertia_id_ros.motion.objectives import ObjectiveSettings
from inertia_id_ros.motion.run import (
    FAILED,
    IDENTIFYING,
    MOVING,
    STOPPED,
    ExcitationCommand,
    ExcitationRun,
    JointStateSnapshot,
    Step,
    check_speed_scale,
)
from inertia_id_ros.motion.trajectory import ExcitationTrajectory
from inertia_id_ros.motion.workspace import Workspace, WorkspaceChecker
from inertia_id_ros.msg import ExcitationStatus
from inertia_id_ros.online.session import Session, Update
from inertia_id_ros.ros.conversions import joint_trajectory_msg, seconds_to_stamp, stamp_to_seconds
from inertia_id_ros.ros.qos import LATCHED, sensor_data
from inertia_id_ros.ros.wiring.base import ModeWiring
from inertia_id_ros.srv import Excite

if TYPE_CHECKING:
    from inertia_id_ros.ros.node import InertiaIdNode

TICK_HZ = 50.0
"""Rate of the run's checks (Hz): a stop follows stale joint states within a tick."""

PROGRESS_PERIOD_SEC = 1.0
"""``~/excitation`` repeats the state this often while the robot moves (s)."""

HOLD_SEC = 0.2
"""A stop's hold point is due this long after it is sent (s): the controller decelerates to it."""

WINDOW_MARGIN_SEC = 2.0
"""The window holds the whole command plus this (s) while an excitation runs."""


class WizardWiring:
    """The wizard's services, topics and threads for one node; see the module docstring.
    ``io`` is the node's mode I/O (``drain()``, ``latest_joint_state`` and ``respond(msg,
    update)``), ``target`` what the mode's motions are designed for
    (:meth:`~inertia_id_ros.modes.Mode.excitation`)."""

    def __init__(
        self,
        node: InertiaIdNode,
        io: ModeWiring,
        session: Session,
        settings: NodeSettings,
        target: ExcitationTarget,
    ) -> None:
        self._node, self._io, self._session, self._settings = node, io, session, settings
        self._model, self._joints = target.model, target.joint_names
        self._target = target.target
        self._objective = ObjectiveSettings(
            sensor_frame=target.sensor_frame, coupling=target.coupling
        )
        workspace, self._collision = self._safety_checkers()
        self.run = ExcitationRun(settings.excitation, workspace, self._collision)
        self._commands = node.create_publisher(JointTrajectory, settings.trajectory_topic, 10)
        self._status = node.create_publisher(ExcitationStatus, "~/excitation", LATCHED)
        node.create_service(Excite, "~/excite", self._on_excite)
        node.create_service(Trigger, "~/stop", self._on_stop)
        self._ticks = node.create_timer(1.0 / TICK_HZ, self._tick, autostart=False)
        self._ticks_lock = threading.Lock()
        """Held to start (:meth:`_send`) or cancel (:meth:`_tick`) :attr:`_ticks`, so that a
        command sent while a tick cancels them still gets its ticks."""
        self._steps: deque[Step] = deque()
        """Changes of state found on the input thread, reported by the next tick."""
        if workspace is not None:  # every measured pose is checked as it arrives
            node.inputs.create_subscription(
                JointState,
                settings.joint_states_topic,
                self._on_joint_state,
                sensor_data(settings.qos_depth),
            )
        self._snapshot: JointStateSnapshot | None = None
        self._seen: JointState | None = None
        self._last_progress = -np.inf
        self._result: Update | None = None
        self.holds_window = False
        """An excitation runs and sets the window's length (the command's, if longer than
        ``window_sec``): a run-time ``window_sec`` applies at :meth:`_release`."""

    def _safety_checkers(self) -> tuple[WorkspaceChecker | None, CollisionChecker | None]:
        """The checkers of ``workspace_file``, ``srdf`` and ``environment_file``;
        :class:`~inertia_id_ros.errors.StartupError` naming the parameter otherwise."""
        settings = self._settings
        name = "workspace_file"
        try:
            workspace = (
                WorkspaceChecker(self._model, Workspace.load_yaml(settings.workspace_file))
                if settings.workspace_file
                else None
            )
            name = "environment_file"
            obstacles = (
                load_environment(settings.environment_file) if settings.environment_file else ()
            )
            name = "srdf"
            if not (settings.srdf or obstacles):
                return workspace, None
            if not settings.urdf_path:
                raise StartupError(
                    "parameters 'srdf' and 'environment_file' need 'urdf_path' "
                    "(the collision geometry's meshes)"
                )
            return workspace, CollisionChecker(
                settings.urdf_path, settings.srdf or None, obstacles=obstacles
            )
        except (ConfigError, ProblemError, FrameNotFound) as error:
            raise StartupError(f"parameter '{name}': {error}") from error

    # ---- the clock and the measured pose ---------------------------------------------------

    def _now(self) -> float:
        return self._node.get_clock().now().nanoseconds * 1e-9

    def _observe(self, msg: JointState | None = None) -> JointStateSnapshot | None:
        """The newest joint state listing the motion's joints (``msg`` as it arrives, else the
        mode I/O's newest); ``received`` is when it arrived (on the node's clock)."""
        age = 0.0
        if msg is None:  # the age first: a message arriving meanwhile makes it older, not newer
            age = self._io.latest_joint_state_age
            msg = self._io.latest_joint_state
        if msg is not None and msg is not self._seen:
            self._seen = msg
            if len(msg.position) == len(msg.name) and set(self._joints) <= set(msg.name):
                self._snapshot = JointStateSnapshot(
                    stamp_to_seconds(msg.header.stamp),
                    self._now() - age,
                    tuple(msg.name),
                    np.array(msg.position),
                )
        return self._snapshot

    # ---- services --------------------------------------------------------------------------

    def _on_excite(self, request: Excite.Request, response: Excite.Response):
        speed_scale = float(request.speed_scale) or 1.0
        skip_dry_run = bool(request.skip_dry_run)
        try:
            if not self._settings.allow_motion:
                raise ExcitationRefused(
                    "motion_not_allowed",
                    "parameter allow_motion is false: "
                    "set it to true at launch to let ~/excite move the robot",
                )
            if request.trajectory_file:
                try:
                    trajectory = ExcitationTrajectory.load_npz(request.trajectory_file)
                except DataError as error:
                    raise ExcitationRefused("unreadable_trajectory", str(error)) from error
                command = self.run.start(
                    trajectory,
                    self._observe(),
                    self._now(),
                    speed_scale,
                    limits=self._limits(trajectory.joint_names),
                    skip_dry_run=skip_dry_run,
                )
                self._send(command)
                response.dry_run = command.dry_run
            else:
                duration = float(request.duration)
                if not (np.isfinite(duration) and duration > 0.0):
                    raise ExcitationRefused(
                        "no_motion",
                        "give trajectory_file, or a duration "
                        "> 0 s to design a motion from the measured pose",
                    )
                check_speed_scale(speed_scale)
                start = self.run.begin_design(self._observe(), self._now(), self._joints)
                threading.Thread(
                    target=self._design,
                    args=(start, duration, speed_scale, skip_dry_run),
                    name="inertia_id_design",
                    daemon=True,
                ).start()
                dry_scale = self._settings.excitation.dry_run_speed_scale  # a designed motion
                response.dry_run = (
                    speed_scale
                    if skip_dry_run  # is always a new one
                    else min(speed_scale, dry_scale)
                ) < 1.0
        except ExcitationRefused as refused:
            response.accepted, response.reason = False, str(refused)
            self._node.get_logger().warning(f"excite refused: {refused}")
            return response
        self._result = None
        response.accepted = True
        response.reason = self.run.message + (
            " (a dry run: the first run of a new motion, at most at excite_dry_run_speed_scale "
            f"{self._settings.excitation.dry_run_speed_scale:g})"
            if response.dry_run and not request.trajectory_file
            else ""
        )
        self._node.get_logger().info(f"excite: {self.run.message}")
        self._publish_status()
        return response

    def _on_stop(self, request: Trigger.Request, response: Trigger.Response):
        step = self.run.stop("requested by ~/stop", self._observe(), self._now())
        response.success = step.changed
        response.message = step.message if step.changed else f"nothing to stop ({step.state})"
        if step.changed:
            self._stopped(step.hold, step.message)
        return response

    # ---- the run ---------------------------------------------------------------------------

    def _design(
        self, start: np.ndarray, duration: float, speed_scale: float, skip_dry_run: bool
    ) -> None:
        """Design a motion from ``start`` (thread), then start it."""
        began = time.monotonic()
        settings = self._settings
        try:
            trajectory = design_excitation(
                self._model,
                self._joints,
                self._target,
                duration,
                settings=self._objective,
                start=list(start),
                max_acceleration=settings.excite_max_acceleration,
                time_limit=settings.design_time_limit_sec or None,
                collision=self._collision,
                collision_margin=settings.excitation.collision_margin,
            ).trajectory
            command = self.run.start(
                trajectory,
                self._observe(),
                self._now(),
                speed_scale,
                designed=True,
                limits=self._limits(trajectory.joint_names),
                skip_dry_run=skip_dry_run,
            )
        except ExcitationRefused as refused:  # stopped meanwhile, or the robot moved
            self._node.get_logger().warning(f"excite: {refused}")
        except Exception as error:  # a failed design must not leave the robot reserved
            self.run.fail(f"the design failed: {error!r}")
            self._node.get_logger().error(self.run.message)
        else:
            self._node.get_logger().info(
                f"excite: designed in {time.monotonic() - began:.1f} s; {self.run.message}"
            )
            self._send(command)
        self._publish_status()

    def _limits(self, joint_names: tuple[str, ...]) -> MotionLimits:
        """The URDF's position and velocity limits of ``joint_names`` (a command must keep
        them); refused (``limits``) for a joint the URDF lacks or gives no limits."""
        try:
            return motion_limits(
                self._model, joint_names, position_margin=0.0, max_acceleration=np.inf
            )
        except (JointNotFound, ProblemError) as error:
            raise ExcitationRefused("limits", str(error)) from error

    def _send(self, command: ExcitationCommand) -> None:
        """Lengthen the window to hold the command, pause change detection, publish it."""
        needed = (
            command.trajectory.duration + self._settings.excitation.start_delay + WINDOW_MARGIN_SEC
        )
        self.holds_window = True
        if self._session.estimator.config.window_sec < needed:
            self._session.resize_window(needed)
        self._session.pause_change_detection(True)
        with self._ticks_lock:
            self._ticks.reset()
        plan = command.trajectory
        self._commands.publish(
            joint_trajectory_msg(
                command.t_start, plan.joint_names, plan.t, plan.q, plan.dq, plan.ddq
            )
        )

    def _release(self) -> None:
        """The excitation is over: the node's ``window_sec`` (as it is now), change detection
        again."""
        if self.holds_window:
            self.holds_window = False
            self._session.resize_window(self._node.settings.window_sec)
        self._session.pause_change_detection(False)

    def _on_joint_state(self, msg: JointState) -> None:
        """The workspace check of a joint state as it arrives (input thread): a stop holds at
        once, the next tick reports it."""
        if self.run.state in MOVING:
            snapshot = self._observe(msg)
            step = (
                Step(self.run.state)
                if snapshot is None
                else self.run.check_measured(snapshot, self._now())
            )
            if step.changed:
                if step.hold is not None:
                    self._hold(step.hold)
                with self._ticks_lock:  # the next tick reports it
                    self._steps.append(step)
                    self._ticks.reset()

    def _tick(self) -> None:
        now = self._now()
        steps = [self._steps.popleft() for _ in range(len(self._steps))]
        step = self.run.step(self._observe(), now)
        changes = [s for s in (*steps, step) if s.changed]
        for change in changes:
            if change.state == STOPPED:
                self._stopped(change.hold if change is step else None, change.message)
                continue
            self._node.get_logger().info(f"excite: {change.message}")
            self._publish_status()
            if change.state == IDENTIFYING:
                threading.Thread(
                    target=self._identify, name="inertia_id_excite_identify", daemon=True
                ).start()
        if (
            not changes
            and self.run.state in MOVING
            and now - self._last_progress >= PROGRESS_PERIOD_SEC
        ):
            self._publish_status()
        with self._ticks_lock:  # nothing moves: no more ticks until the next command
            if self.run.state not in MOVING and not self._steps:
                self._ticks.cancel()

    def _command(self) -> ExcitationCommand:
        """The command being run (a ``RuntimeError`` between runs)."""
        if self.run.command is None:
            raise RuntimeError("no excitation command is being run")
        return self.run.command

    def _hold(self, hold: np.ndarray) -> None:
        """Command the robot to hold at ``hold`` (n,)."""
        names = self._command().trajectory.joint_names
        zeros = np.zeros((1, len(names)))
        self._commands.publish(
            joint_trajectory_msg(0.0, names, np.array([HOLD_SEC]), hold[None], zeros, zeros)
        )

    def _stopped(self, hold: np.ndarray | None, message: str) -> None:
        """Hold at ``hold`` (if the robot was moving and no hold was sent yet) and report the
        stop."""
        if hold is not None:
            self._hold(hold)
        self._node.get_logger().warning(f"excite: {message}")
        self._release()
        self._publish_status()

    def _identify(self) -> None:
        """Identify on exactly the motion's samples (thread), then report."""
        start, end = self._command().motion_interval
        try:
            self._io.drain()
            update = self._session.identify(None, end - start, self._now(), until=end)
        except Exception as error:  # never leave the run identifying
            self.run.finish(False, f"identification failed: {error!r}")
        else:
            self._result = update
            if update.ok:
                estimate = update.estimate
                message = (
                    f"identified from the motion's samples {estimate.t_first:.3f} s to "
                    f"{estimate.t_last:.3f} s (motion {start:.3f} s to {end:.3f} s): "
                    f"{update.message}"
                )
            else:
                message = f"identification failed ({update.status}): {update.message}"
            self.run.finish(update.ok, message)
        self._release()
        log = self._node.get_logger()
        (log.info if self.run.state != FAILED else log.error)(f"excite: {self.run.message}")
        self._publish_status()

    # ---- reports ---------------------------------------------------------------------------

    def _publish_status(self) -> None:
        now = self._now()
        self._last_progress = now
        run, command = self.run, self.run.command
        msg = ExcitationStatus(state=run.state, message=run.message)
        msg.header.stamp = seconds_to_stamp(now)
        if command is not None:
            msg.speed_scale = command.speed_scale
            msg.joint_names = list(command.trajectory.joint_names)
            msg.motion_start, msg.motion_end = command.motion_interval
            msg.elapsed = run.elapsed(now)
            msg.duration = msg.motion_end - msg.motion_start
        result = self._result
        if run.state == "done" and result is not None and result.ok:
            msg.identified = True
            self._io.respond(msg, result)
        self._status.publish(msg)

    def diagnostic_values(self) -> dict[str, str]:
        """The wizard's state for ``/diagnostics``."""
        return {"excitation": self.run.state, "excitation.message": self.run.message}
