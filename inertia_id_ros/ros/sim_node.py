"""``inertia_id_sim``: a simulated robot publishing what the identification node needs.

Parameter ``robot``:

- ``panda`` (default): a Panda with a wrist F/T sensor carrying a payload. Publishes
  ``sensor_msgs/JointState`` and ``geometry_msgs/WrenchStamped`` at ``rate_hz`` (default 1 kHz)
  along an exciting trajectory, with F/T noise, a constant F/T offset and encoder noise
  (:class:`~inertia_id_ros.sim.payload.PayloadSimulator`), and the ground truth on
  ``~/ground_truth`` (``InertialParameters``, latched).
- ``go1_leg``: the Go1's front-left leg swinging in the air, trunk fixed
  (:func:`~inertia_id_ros.sim.torques.leg_simulator`): links differing from the URDF,
  viscous and Coulomb friction, torque offsets, the rotors' armatures. Publishes
  ``sensor_msgs/JointState`` of all 12 joints (the other legs still at 0) with exact positions and
  velocities and efforts = joint torques + 0.1 N m white noise, and the ground truth of the leg's
  links and drives on ``~/ground_truth_links`` (``InertialParametersArray``, latched).
- ``panda_torques``: the Panda without an F/T sensor, the payload (``payload_*``; mass 0: none)
  at its flange ``panda_link8``
  (:func:`~inertia_id_ros.sim.torques.panda_payload_torque_simulators`): links off the URDF by
  up to 10 % (``perturb_links``), viscous and Coulomb friction, torque offsets. Publishes
  ``sensor_msgs/JointState`` of the 7 arm joints with exact positions and velocities and efforts
  = joint torques + 0.04-0.15 N m white noise, and the payload's truth on ``~/ground_truth``
  (``InertialParameters``, latched).
- ``icub_whole_body``, ``go1_whole_body``, ``icub_suspended_whole_body``,
  ``icub_fixed_whole_body``, ``icub_stance_whole_body``: whole-body robots
  (:mod:`~inertia_id_ros.sim.whole_body_simulator`): iCub on its left sole with six internal F/T
  sensors and the sole's contact sensor, Go1 with four foot contact sensors, iCub hanging from a
  crane F/T sensor at its root link, iCub on a stand (its six internal sensors, no contact), iCub
  balancing on its left sole on a tilted floor (its four leg sensors, no contact); true links
  differing from the URDF, noise, offsets. Publishes ``sensor_msgs/JointState`` (positions,
  velocities), ``sensor_msgs/Imu`` on ``imu_topic`` and each sensor's ``WrenchStamped`` on
  ``/<frame>/wrench`` (the topics of
  ``config/icub_whole_body.yaml``, ``config/go1_whole_body.yaml``,
  ``config/icub_suspended.yaml``, ``config/icub_fixed.yaml``, which takes no IMU), all with the
  same stamps; the truth (every link, the sensor offsets) on ``~/ground_truth_links``. Use
  ``rate_hz`` 200.

``panda``, ``panda_torques`` and ``go1_leg`` follow ``trajectory_msgs/JointTrajectory`` commands on
``trajectory_topic`` as joint_trajectory_controller does, ``tracking_lag_sec`` late
(:class:`~inertia_id_ros.sim.follower.CommandFollower`), instead of their built-in ``motion``
(``exciting``, or ``hold`` at ``start_position``) once one arrives; the whole-body robots play
their own motion.

Stamps are exact (``start + k / rate_hz``); messages are published in small bursts as they fall
due.
"""

from __future__ import annotations

import sys
import threading
import time
from typing import Any

import numpy as np
import rclpy
from rcl_interfaces.msg import ParameterDescriptor
from rclpy.exceptions import InvalidHandle, ParameterUninitializedException
from rclpy.executors import SingleThreadedExecutor
from rclpy.node import Node
from rclpy.parameter import Parameter
from rclpy.signals import SignalHandlerOptions

from inertia_id_ros.core.inertia import (
    inertia_from_theta,
)
from inertia_id_ros.errors import InputError
from inertia_id_ros.ros.shutdown import (
    SPIN_PERIOD_SEC,
    create_node_or_exit,
    ends_quietly,
    stop_on_signals,
    until_shutdown,
)
from inertia_id_ros.ros.sim_robots import ROBOTS
from inertia_id_ros.sim.follower import DEFAULT_TRACKING_LAG_SEC
from inertia_id_ros.sim.payload import PayloadSimulator
from inertia_id_ros.threads import limit_threads

BURST_SEC = 0.005
"""Samples are published in bursts of at most this length (s)."""


_RUN_PARAMETERS: tuple[tuple[str, Any, str], ...] = (
    (
        "robot",
        "panda",
        "What to simulate: 'panda' (a payload beyond a wrist F/T sensor: "
        "joint states and wrenches), 'panda_torques' (a payload at the "
        "flange, no F/T sensor: joint states with joint torques as "
        "efforts), 'go1_leg' (a Go1 leg: joint states "
        "with joint torques as efforts), 'icub_whole_body', "
        "'go1_whole_body', 'icub_suspended_whole_body' (floating "
        "base: joint states, IMU, F/T sensors), "
        "'icub_fixed_whole_body' (on a stand) or "
        "'icub_stance_whole_body' (on one sole, leg F/T sensors only).",
    ),
    ("rate_hz", 1000.0, "Publication rate of the topics (Hz)."),
    ("duration_sec", 0.0, "Seconds of motion to play; 0 = until stopped."),
    (
        "time_scale",
        1.0,
        "Simulated seconds played per wall-clock second (> 0; 2 plays "
        "the motion twice as fast as real time, the stamps still 1 / "
        "rate_hz apart).",
    ),
    ("seed", 0, "Seed of the trajectory and the noise (and go1_leg's true links)."),
    (
        "noise",
        True,
        "Add the sensors' noise (panda: F/T 0.1 N, 0.005 N m and encoders; "
        "go1_leg: 0.1 N m on the joint torques; panda_torques: 0.04-0.15 "
        "N m).",
    ),
    ("publish_velocity", True, "Fill JointState.velocity (else positions only)."),
)
"""The simulator's robot, rate, duration, seed and noise: ``(name, default, description)``."""

_MOTION_PARAMETERS: tuple[tuple[str, Any, str], ...] = (
    (
        "perturb_links",
        True,
        "go1_leg, panda_torques: the true links differ from the URDF (masses and inertias "
        "x U(0.8, 1.2), panda_torques U(0.9, 1.1); COMs moved ~1 cm; seeded by 'seed').",
    ),
    (
        "wait_for_subscribers_sec",
        10.0,
        "Start the motion once every data topic has a subscriber, waiting at most this "
        "long (s); 0 = start at once.",
    ),
    ("joint_states_topic", "/joint_states", "JointState output topic."),
    ("wrench_topic", "/ft_sensor/wrench", "panda: WrenchStamped output topic."),
    (
        "motion",
        "exciting",
        "The motion until a joint trajectory command arrives: "
        "'exciting' (a Fourier series) or 'hold' (at start_position).",
    ),
    (
        "start_position",
        Parameter.Type.DOUBLE_ARRAY,
        "The pose for motion 'hold' (rad; panda: joints 1-7, default its home; go1_leg: "
        "hip, thigh, knee, default 0, 0.8, -1.7).",
    ),
    (
        "trajectory_topic",
        "/joint_trajectory_controller/joint_trajectory",
        "trajectory_msgs/JointTrajectory commands to follow.",
    ),
    (
        "tracking_lag_sec",
        DEFAULT_TRACKING_LAG_SEC,
        "How late the robot follows the commanded trajectory (s).",
    ),
    ("imu_topic", "/imu", "whole-body robots: Imu output topic."),
)
"""Its links, topics and motion: ``(name, default or type, description)``."""


def _parameters() -> list[tuple[str, Any, str]]:
    """The simulator's parameters: ``(name, default or type, description)``; the payload's
    defaults are those of :meth:`PayloadSimulator.panda`."""
    default = PayloadSimulator.panda()
    mass, com, inertia_com = inertia_from_theta(default.true_theta)
    payload = [
        (
            "payload_mass",
            float(mass),
            "panda, panda_torques: payload mass (kg; panda_torques: 0 for none).",
        ),
        (
            "payload_com",
            [float(v) for v in com],
            "panda, panda_torques: payload COM in the sensor frame (the flange) (m).",
        ),
        (
            "payload_inertia",
            [
                float(v)
                for v in (
                    inertia_com[0, 0],
                    inertia_com[0, 1],
                    inertia_com[0, 2],
                    inertia_com[1, 1],
                    inertia_com[1, 2],
                    inertia_com[2, 2],
                )
            ],
            "panda, panda_torques: payload inertia about its COM [ixx, ixy, ixz, iyy, iyz, "
            "izz] (kg m^2).",
        ),
        (
            "ft_offset",
            [float(v) for v in default.true_offset],
            "panda: constant F/T offset [fx, fy, fz, tx, ty, tz] (N, N m).",
        ),
    ]
    return [*_RUN_PARAMETERS, *payload, *_MOTION_PARAMETERS]


class SimulatorNode(Node):
    """See the module docstring. ``finished`` is set when ``duration_sec`` has been played."""

    def __init__(self, **kwargs) -> None:
        super().__init__("inertia_id_sim", **kwargs)
        self.start_stamp: float | None = None
        """Stamp (s) of the motion's time 0, once it has started."""
        declare = _parameters()
        for name, value, description in declare:
            self.declare_parameter(name, value, ParameterDescriptor(description=description))
        p = {name: _value(self, name) for name, _, _ in declare}
        if p["robot"] not in ROBOTS:
            raise ValueError(
                f"parameter 'robot': unknown robot {p['robot']!r}; choose one of {sorted(ROBOTS)}"
            )
        self.robot = ROBOTS[p["robot"]](self, p)
        self._rate = float(p["rate_hz"])
        self._duration = float(p["duration_sec"])
        self._time_scale = float(p["time_scale"])
        if not self._time_scale > 0.0:
            raise ValueError(f"parameter 'time_scale' must be > 0, got {self._time_scale}")
        self._wait_for_subscribers = float(p["wait_for_subscribers_sec"])
        self._rng = np.random.default_rng(int(p["seed"]) + 1)
        self.finished = threading.Event()
        self._thread = threading.Thread(
            target=until_shutdown, args=(self._run,), name="inertia_id_sim", daemon=True
        )
        self._thread.start()
        self.get_logger().info(f"simulating {self.robot.description} at {self._rate:.0f} Hz")

    def stop(self) -> None:
        """End the publishing thread (before the node is destroyed: it must not publish after)."""
        self.finished.set()
        self._thread.join(timeout=2.0)

    def _run(self) -> None:
        deadline = time.monotonic() + self._wait_for_subscribers
        while (
            time.monotonic() < deadline
            and not self.finished.is_set()
            and not self.robot.subscribed()
        ):
            self.finished.wait(0.05)
        start_stamp = self.get_clock().now().nanoseconds * 1e-9
        start_wall = time.monotonic()
        self.start_stamp = start_stamp
        k = 0
        period = 1.0 / self._rate
        n_total = int(round(self._duration * self._rate))  # samples to play (duration_sec > 0)
        while rclpy.ok() and not self.finished.is_set():
            elapsed = (time.monotonic() - start_wall) * self._time_scale
            if self._duration > 0.0:
                elapsed = min(elapsed, self._duration)
            k_due = int(elapsed * self._rate) + 1
            if self._duration > 0.0:
                k_due = min(k_due, n_total)
            if k_due > k:
                t = np.arange(k, k_due) * period
                try:
                    self.robot.publish(t, start_stamp + t, self._rng)
                except InvalidHandle:  # stop() gave up waiting for a long burst: destroyed
                    if self.finished.is_set():
                        return
                    raise
                k = k_due
            if self._duration > 0.0 and k >= n_total:
                sent = " and ".join(f"{n} {what}" for what, n in self.robot.sent.items())
                self.get_logger().info(f"played {self._duration:.1f} s: published {sent}")
                self.finished.set()
                break
            time.sleep(BURST_SEC)


def _value(node: Node, name: str) -> Any:
    """The parameter's value; ``None`` for an array not set."""
    try:
        return node.get_parameter(name).value
    except ParameterUninitializedException:
        return None


@ends_quietly
def main(args: list[str] | None = None) -> None:
    """Console script ``inertia-id-sim``: runs until stopped or ``duration_sec`` is played; exits
    2 on an unknown ``robot``, 1 when its node cannot be created (e.g. DDS-Security enforced and
    not available)."""
    try:
        limit_threads()
    except InputError as error:
        print(f"inertia_id_sim: {error}", file=sys.stderr)
        sys.exit(2)
    stop = stop_on_signals()  # before anything of rclpy: a Ctrl-C while starting ends it then
    rclpy.init(args=args, signal_handler_options=SignalHandlerOptions.NO)
    node = create_node_or_exit(SimulatorNode, "inertia_id_sim", ValueError)
    executor = SingleThreadedExecutor()
    executor.add_node(node)

    def spin() -> None:
        while not stop.is_set() and rclpy.ok() and not node.finished.is_set():
            executor.spin_once(timeout_sec=SPIN_PERIOD_SEC)
        # let late subscribers receive the last messages
        end = time.monotonic() + 0.5
        while not stop.is_set() and rclpy.ok() and time.monotonic() < end:
            executor.spin_once(timeout_sec=0.05)

    try:
        until_shutdown(spin)
    finally:
        node.stop()
        node.destroy_node()
        rclpy.try_shutdown()
    sys.exit(0)


if __name__ == "__main__":
    main()
