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
from geometry_msgs.msg import WrenchStamped
from rcl_interfaces.msg import ParameterDescriptor
from rclpy.exceptions import ParameterUninitializedException
from rclpy.executors import SingleThreadedExecutor
from rclpy.node import Node
from rclpy.parameter import Parameter
from rclpy.qos import QoSProfile, ReliabilityPolicy
from rclpy.signals import SignalHandlerOptions
from sensor_msgs.msg import Imu, JointState
from trajectory_msgs.msg import JointTrajectory

from inertia_id_ros.chain.actuators import go1_leg_config
from inertia_id_ros.core.inertia import (
    inertia_from_msg_order,
    inertia_from_theta,
    theta_from_inertia,
)
from inertia_id_ros.errors import InputError
from inertia_id_ros.msg import InertialParameters, InertialParametersArray
from inertia_id_ros.ros.conversions import (
    array_to_wrench,
    imu_msg,
    joint_state,
    joint_trajectory_arrays,
    links_to_msg,
    theta_to_msg,
    wrench_stamped,
)
from inertia_id_ros.ros.qos import LATCHED
from inertia_id_ros.ros.shutdown import (
    SPIN_PERIOD_SEC,
    create_node_or_exit,
    ends_quietly,
    stop_on_signals,
    until_shutdown,
)
from inertia_id_ros.sim import whole_body_robots, whole_body_simulator
from inertia_id_ros.sim.follower import DEFAULT_TRACKING_LAG_SEC, CommandFollower, at_rest
from inertia_id_ros.sim.payload import PANDA_HOME, PayloadSimulator, Trajectory
from inertia_id_ros.sim.torques import (
    DEFAULT_ARM_TORQUE_NOISE_STD,
    DEFAULT_LEG_TORQUE_NOISE_STD,
    LEG_HOME,
    PAYLOAD_TORQUES_LINK_ERROR,
    leg_simulator,
    panda_payload_torque_simulators,
    perturbed_links,
)
from inertia_id_ros.threads import limit_threads

BURST_SEC = 0.005
"""Samples are published in bursts of at most this length (s)."""

_DATA_QOS = QoSProfile(depth=100, reliability=ReliabilityPolicy.RELIABLE)


class _PandaPayload:
    """The Panda with a payload beyond its F/T sensor: joint states and wrenches; follows
    joint trajectory commands."""

    def __init__(self, node: SimulatorNode, p: dict[str, Any]) -> None:
        theta = theta_from_inertia(
            p["payload_mass"],
            np.array(p["payload_com"]),
            inertia_from_msg_order(p["payload_inertia"]),
        )
        quiet = (
            {}
            if p["noise"]
            else {"wrench_noise_std": 0.0, "position_noise_std": 0.0, "velocity_noise_std": 0.0}
        )
        self.sim = PayloadSimulator.panda(
            payload_theta=theta, offset=np.array(p["ft_offset"]), seed=int(p["seed"]), **quiet
        )
        self.sim.trajectory = _CommandInput(
            node, p, self.sim.trajectory, self.sim.joint_names, PANDA_HOME
        ).follower
        self._publish_velocity = bool(p["publish_velocity"])
        self._joint_pub = node.create_publisher(JointState, p["joint_states_topic"], _DATA_QOS)
        self._wrench_pub = node.create_publisher(WrenchStamped, p["wrench_topic"], _DATA_QOS)
        truth_msg = theta_to_msg(self.sim.true_theta, self.sim.sensor_frame, "payload")
        truth_msg.sensor_offset = array_to_wrench(self.sim.true_offset)
        node.create_publisher(InertialParameters, "~/ground_truth", LATCHED).publish(truth_msg)
        self.sent = {"joint states": 0, "wrenches": 0}
        self.description = (
            f"the Panda with a {p['payload_mass']:.3f} kg payload beyond "
            f"'{self.sim.sensor_frame}' ({p['motion']} motion until a command "
            f"on '{p['trajectory_topic']}')"
        )

    def subscribed(self) -> bool:
        """Both topics have a subscriber."""
        return bool(
            self._joint_pub.get_subscription_count() and self._wrench_pub.get_subscription_count()
        )

    def publish(self, t: np.ndarray, stamps: np.ndarray, rng: np.random.Generator) -> None:
        """The samples at trajectory times ``t`` (N,) (s), stamped ``stamps`` (N,) (s)."""
        q, dq, wrench = self.sim.measure(t, rng)
        for i, stamp in enumerate(stamps):
            self._joint_pub.publish(
                joint_state(
                    stamp, self.sim.joint_names, q[i], dq[i] if self._publish_velocity else None
                )
            )
            self._wrench_pub.publish(wrench_stamped(stamp, self.sim.sensor_frame, wrench[i]))
        self.sent["joint states"] += len(t)
        self.sent["wrenches"] += len(t)


class _JointTorqueRobot:
    """A simulated robot without an F/T sensor: joint states with efforts (joint torques) from
    ``sim.measure(t, rng)`` (positions, velocities, efforts of the simulated joints), published
    under ``names`` with the simulated joints at ``columns`` (the others at 0)."""

    def __init__(
        self, node: Node, p: dict[str, Any], sim: Any, names: list[str], columns: list[int]
    ) -> None:
        self.sim = sim
        self._names = names
        self._columns = columns
        self._publish_velocity = bool(p["publish_velocity"])
        self._joint_pub = node.create_publisher(JointState, p["joint_states_topic"], _DATA_QOS)
        self.sent = {"joint states": 0}

    def subscribed(self) -> bool:
        return bool(self._joint_pub.get_subscription_count())

    def publish(self, t: np.ndarray, stamps: np.ndarray, rng: np.random.Generator) -> None:
        data = self.sim.measure(t, rng)
        values = np.zeros((3, len(self._names)))
        for i, stamp in enumerate(stamps):
            values[:, self._columns] = data.positions[i], data.velocities[i], data.efforts[i]
            self._joint_pub.publish(
                joint_state(
                    stamp,
                    self._names,
                    values[0],
                    values[1] if self._publish_velocity else None,
                    values[2],
                )
            )
        self.sent["joint states"] += len(t)


class _Go1Leg(_JointTorqueRobot):
    """The Go1's front-left leg: joint states with efforts (joint torques)."""

    def __init__(self, node: Node, p: dict[str, Any]) -> None:
        config = go1_leg_config()
        links = config.link_model()
        seed = int(p["seed"])
        thetas = links.link_parameters(links.prior)
        if p["perturb_links"]:
            thetas = perturbed_links(thetas, np.random.default_rng(seed))
        noise = DEFAULT_LEG_TORQUE_NOISE_STD if p["noise"] else 0.0
        sim = leg_simulator(config, seed=seed, link_thetas=thetas, torque_noise_std=noise)
        sim.trajectory = _CommandInput(
            node, p, sim.trajectory, links.joint_names, LEG_HOME
        ).follower
        names = list(links.robot_joint_names)  # the other legs' joints stay at 0
        super().__init__(node, p, sim, names, [names.index(j) for j in links.joint_names])
        truth = links_to_msg(
            links.link_names, self.sim.link_thetas, dict(zip(links.joint_names, self.sim.drives))
        )
        node.create_publisher(InertialParametersArray, "~/ground_truth_links", LATCHED).publish(
            truth
        )
        self.description = (
            f"the Go1 front-left leg {list(links.joint_names)} "
            f"({'perturbed' if p['perturb_links'] else 'URDF'} links, torque "
            f"noise {noise} N m)"
        )


class _PandaTorques(_JointTorqueRobot):
    """The Panda without an F/T sensor carrying a payload at its flange: joint states with
    efforts (joint torques) of its 7 arm joints
    (:func:`~inertia_id_ros.sim.torques.panda_payload_torque_simulators`); follows joint
    trajectory commands."""

    def __init__(self, node: SimulatorNode, p: dict[str, Any]) -> None:
        theta = (
            theta_from_inertia(
                p["payload_mass"],
                np.array(p["payload_com"]),
                inertia_from_msg_order(p["payload_inertia"]),
            )
            if p["payload_mass"] > 0
            else np.zeros(10)
        )
        _, sim = panda_payload_torque_simulators(
            int(p["seed"]),
            theta,
            PAYLOAD_TORQUES_LINK_ERROR if p["perturb_links"] else 0.0,
            DEFAULT_ARM_TORQUE_NOISE_STD if p["noise"] else 0.0,
        )
        names = list(sim.joint_names)
        sim.trajectory = _CommandInput(
            node, p, sim.trajectory, sim.joint_names, PANDA_HOME
        ).follower
        super().__init__(node, p, sim, names, list(range(len(names))))
        node.create_publisher(InertialParameters, "~/ground_truth", LATCHED).publish(
            theta_to_msg(theta, self.sim.payload_frame, "payload")
        )
        self.description = (
            f"the Panda without an F/T sensor, a {p['payload_mass']:.3f} kg "
            f"payload at '{self.sim.payload_frame}' "
            f"({'perturbed' if p['perturb_links'] else 'URDF'} links, "
            f"{'noisy' if p['noise'] else 'exact'} joint torques)"
        )


class _CommandInput:
    """Joint trajectory commands on ``trajectory_topic`` into a :class:`CommandFollower` of the
    simulated ``joint_names`` (its ``follower``), which plays ``exciting`` until the first one
    (or rests at ``start_position``, default ``home``, for motion ``hold``)."""

    def __init__(
        self,
        node: SimulatorNode,
        p: dict[str, Any],
        exciting: Trajectory,
        joint_names: tuple[str, ...],
        home: np.ndarray,
    ) -> None:
        if p["motion"] not in MOTIONS:
            raise ValueError(
                f"parameter 'motion': unknown motion {p['motion']!r}; choose one of {list(MOTIONS)}"
            )
        start = np.array(p["start_position"] or home, dtype=float)
        if start.shape != (len(joint_names),):
            raise ValueError(
                f"parameter 'start_position' needs {len(joint_names)} values "
                f"(rad, m; joints {list(joint_names)}), got {start.size}"
            )
        initial = exciting if p["motion"] == "exciting" else at_rest(start)
        self.follower = CommandFollower(initial, joint_names, p["tracking_lag_sec"])
        self._node = node
        node.create_subscription(JointTrajectory, p["trajectory_topic"], self._on_command, 10)

    def _on_command(self, msg: JointTrajectory) -> None:
        """Follow a joint trajectory command from now on (its joints: the simulated ones, in any
        order)."""
        node, log, joints = self._node, self._node.get_logger(), self.follower.joint_names
        if node.start_stamp is None:
            log.warning("ignored a joint trajectory command: the motion has not started")
            return
        try:
            t_start, names, times, q, dq, ddq = joint_trajectory_arrays(msg)
        except ValueError as error:
            log.error(f"ignored a joint trajectory command: {error}")
            return
        if sorted(names) != sorted(joints):
            log.error(
                f"ignored a joint trajectory command for joints {list(names)}: the "
                f"simulated joints are {list(joints)}"
            )
            return
        order = [names.index(name) for name in joints]
        arrival = node.get_clock().now().nanoseconds * 1e-9 - node.start_stamp
        start = arrival if t_start == 0.0 else t_start - node.start_stamp
        if self.follower.command(arrival, start, times, q[:, order], dq[:, order], ddq[:, order]):
            log.info(
                f"following a joint trajectory of {len(times)} points, "
                f"{times[-1] if len(times) else 0.0:.2f} s"
            )
        else:
            log.warning("ignored a joint trajectory command: all its points are in the past")


MOTIONS = ("exciting", "hold")
"""Parameter ``motion``: the built-in motion until a joint trajectory command arrives."""


class _WholeBody:
    """A floating-base robot (:data:`inertia_id_ros.sim.whole_body_robots.ROBOTS`): joint
    states, the IMU and every F/T sensor's wrench, with the same stamps; plays its own motion (no
    joint trajectory commands: ``motion``, ``start_position`` and ``trajectory_topic`` do not
    apply)."""

    def __init__(self, node: Node, p: dict[str, Any], robot: str) -> None:
        noise = None if p["noise"] else whole_body_simulator.NoiseModel.none()
        self.sim = whole_body_robots.ROBOTS[robot](seed=int(p["seed"]), noise=noise)
        self._publish_velocity = bool(p["publish_velocity"])
        self._joint_pub = node.create_publisher(JointState, p["joint_states_topic"], _DATA_QOS)
        self._imu_pub = node.create_publisher(Imu, p["imu_topic"], _DATA_QOS)
        self._wrench_pubs = [
            node.create_publisher(WrenchStamped, f"/{frame}/wrench", _DATA_QOS)
            for frame, _ in self.sim.ft_sensors
        ]
        names, thetas = self.sim.true_theta
        truth = links_to_msg(names, thetas, {})
        offsets = [
            (frame, offset)
            for (frame, kind), offset in zip(self.sim.ft_sensors, self.sim.ft_offsets)
            if kind == "internal"
        ]
        truth.sensor_frames = [frame for frame, _ in offsets]
        truth.sensor_offsets = [array_to_wrench(offset) for _, offset in offsets]
        node.create_publisher(InertialParametersArray, "~/ground_truth_links", LATCHED).publish(
            truth
        )
        self.sent = {"joint states": 0, "IMU readings": 0, "wrenches": 0}
        self.description = (
            f"{robot}: {len(self.sim.joint_names)} joints, IMU at "
            f"'{self.sim.imu_frame}', F/T sensors "
            f"{[f'{f} ({k})' for f, k in self.sim.ft_sensors]}"
        )

    def subscribed(self) -> bool:
        """Every topic has a subscriber (the IMU's: with contact sensors, a floating base; on a
        stand or rooted at a still sole it may go unread)."""
        imu = (self._imu_pub,) if self.sim.contact_frames else ()
        return all(
            pub.get_subscription_count() for pub in (self._joint_pub, *imu, *self._wrench_pubs)
        )

    def publish(self, t: np.ndarray, stamps: np.ndarray, rng: np.random.Generator) -> None:
        sim = self.sim
        data = sim.measure(sim.simulate(t), with_ddq=False, with_effort=False, rng=rng)
        names = list(sim.joint_names)
        for i, stamp in enumerate(stamps):
            self._joint_pub.publish(
                joint_state(
                    stamp, names, data["q"][i], data["dq"][i] if self._publish_velocity else None
                )
            )
            self._imu_pub.publish(
                imu_msg(
                    stamp,
                    sim.imu_frame,
                    data["imu_orientation"][i],
                    data["imu_angular_velocity"][i],
                    data["imu_linear_acceleration"][i],
                )
            )
            for k, (pub, (frame, _)) in enumerate(zip(self._wrench_pubs, sim.ft_sensors)):
                pub.publish(wrench_stamped(stamp, frame, data["ft_wrench"][i, k]))
        self.sent["joint states"] += len(t)
        self.sent["IMU readings"] += len(t)
        self.sent["wrenches"] += len(t) * len(self._wrench_pubs)


ROBOTS = {
    "panda": _PandaPayload,
    "go1_leg": _Go1Leg,
    "panda_torques": _PandaTorques,
    **{
        f"{name}_whole_body": (lambda node, p, name=name: _WholeBody(node, p, name))
        for name in whole_body_robots.ROBOTS
    },
}


class SimulatorNode(Node):
    """See the module docstring. ``finished`` is set when ``duration_sec`` has been played."""

    def __init__(self, **kwargs) -> None:
        super().__init__("inertia_id_sim", **kwargs)
        self.start_stamp: float | None = None
        """Stamp (s) of the motion's time 0, once it has started."""
        default = PayloadSimulator.panda()
        mass, com, inertia_com = inertia_from_theta(default.true_theta)
        declare = [
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
        ]
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
                self.robot.publish(t, start_stamp + t, self._rng)
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
