"""The robots the simulator node (:mod:`~inertia_id_ros.ros.sim_node`) plays, each publishing its
topics through the node: the Panda with a wrist F/T sensor (:class:`PandaPayloadRobot`), robots
publishing joint torques as efforts (:class:`Go1LegRobot`, :class:`PandaTorquesRobot`, following
joint trajectory commands through :class:`CommandInput`) and the whole-body robots
(:class:`WholeBodyRobot`); :data:`ROBOTS` maps the node's ``robot`` parameter to each. Each
publishes samples ``t`` (s of motion) stamped ``stamps`` (s) in :meth:`publish`."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import numpy as np
from geometry_msgs.msg import WrenchStamped
from rclpy.node import Node
from rclpy.qos import QoSProfile, ReliabilityPolicy
from sensor_msgs.msg import Imu, JointState
from trajectory_msgs.msg import JointTrajectory

from inertia_id_ros.chain.actuators import go1_leg_config
from inertia_id_ros.core.inertia import (
    inertia_from_msg_order,
    theta_from_inertia,
)
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
from inertia_id_ros.sim import whole_body_robots, whole_body_simulator
from inertia_id_ros.sim.follower import CommandFollower, at_rest
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

if TYPE_CHECKING:
    from inertia_id_ros.ros.sim_node import SimulatorNode

DATA_QOS = QoSProfile(depth=100, reliability=ReliabilityPolicy.RELIABLE)


class PandaPayloadRobot:
    """The Panda with a payload beyond its F/T sensor: joint states and wrenches; follows
    joint trajectory commands."""

    def __init__(self, node: SimulatorNode, p: dict[str, Any]) -> None:
        theta = theta_from_inertia(
            p["payload_mass"],
            np.array(p["payload_com"]),
            inertia_from_msg_order(p["payload_inertia"]),
        )
        quiet: dict[str, Any] = (
            {}
            if p["noise"]
            else {"wrench_noise_std": 0.0, "position_noise_std": 0.0, "velocity_noise_std": 0.0}
        )
        self.sim = PayloadSimulator.panda(
            payload_theta=theta, offset=np.array(p["ft_offset"]), seed=int(p["seed"]), **quiet
        )
        self.sim.trajectory = CommandInput(
            node, p, self.sim.trajectory, self.sim.joint_names, PANDA_HOME
        ).follower
        self._publish_velocity = bool(p["publish_velocity"])
        self._joint_pub = node.create_publisher(JointState, p["joint_states_topic"], DATA_QOS)
        self._wrench_pub = node.create_publisher(WrenchStamped, p["wrench_topic"], DATA_QOS)
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
                    stamp,
                    list(self.sim.joint_names),
                    q[i],
                    dq[i] if self._publish_velocity else None,
                )
            )
            self._wrench_pub.publish(wrench_stamped(stamp, self.sim.sensor_frame, wrench[i]))
        self.sent["joint states"] += len(t)
        self.sent["wrenches"] += len(t)


class JointTorqueRobot:
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
        self._joint_pub = node.create_publisher(JointState, p["joint_states_topic"], DATA_QOS)
        self.sent = {"joint states": 0}

    def subscribed(self) -> bool:
        """Whether a data topic has a subscriber."""
        return bool(self._joint_pub.get_subscription_count())

    def publish(self, t: np.ndarray, stamps: np.ndarray, rng: np.random.Generator) -> None:
        """Publish the samples at motion times ``t`` (s), stamped ``stamps`` (s)."""
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


class Go1LegRobot(JointTorqueRobot):
    """The Go1's front-left leg: joint states with efforts (joint torques)."""

    def __init__(self, node: SimulatorNode, p: dict[str, Any]) -> None:
        config = go1_leg_config()
        links = config.link_model()
        seed = int(p["seed"])
        thetas = links.link_parameters(links.prior)
        if p["perturb_links"]:
            thetas = perturbed_links(thetas, np.random.default_rng(seed))
        noise = DEFAULT_LEG_TORQUE_NOISE_STD if p["noise"] else 0.0
        sim = leg_simulator(config, seed=seed, link_thetas=thetas, torque_noise_std=noise)
        sim.trajectory = CommandInput(node, p, sim.trajectory, links.joint_names, LEG_HOME).follower
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


class PandaTorquesRobot(JointTorqueRobot):
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
        sim.trajectory = CommandInput(node, p, sim.trajectory, sim.joint_names, PANDA_HOME).follower
        super().__init__(node, p, sim, names, list(range(len(names))))
        if p["payload_mass"] > 0:  # without a payload, no truth to publish
            node.create_publisher(InertialParameters, "~/ground_truth", LATCHED).publish(
                theta_to_msg(theta, self.sim.payload_frame, "payload")
            )
        self.description = (
            f"the Panda without an F/T sensor, a {p['payload_mass']:.3f} kg "
            f"payload at '{self.sim.payload_frame}' "
            f"({'perturbed' if p['perturb_links'] else 'URDF'} links, "
            f"{'noisy' if p['noise'] else 'exact'} joint torques)"
        )


class CommandInput:
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
        initial = exciting if p["motion"] == "exciting" else at_rest(start.tolist())
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


class WholeBodyRobot:
    """A floating-base robot (:data:`inertia_id_ros.sim.whole_body_robots.ROBOTS`): joint
    states, the IMU and every F/T sensor's wrench, with the same stamps; plays its own motion (no
    joint trajectory commands: ``motion``, ``start_position`` and ``trajectory_topic`` do not
    apply)."""

    def __init__(self, node: SimulatorNode, p: dict[str, Any], robot: str) -> None:
        noise = None if p["noise"] else whole_body_simulator.NoiseModel.none()
        self.sim = whole_body_robots.ROBOTS[robot](seed=int(p["seed"]), noise=noise)
        self._publish_velocity = bool(p["publish_velocity"])
        self._joint_pub = node.create_publisher(JointState, p["joint_states_topic"], DATA_QOS)
        self._imu_pub = node.create_publisher(Imu, p["imu_topic"], DATA_QOS)
        self._wrench_pubs = [
            node.create_publisher(WrenchStamped, f"/{frame}/wrench", DATA_QOS)
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
        """Publish the samples at motion times ``t`` (s), stamped ``stamps`` (s)."""
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


def _whole_body_robot(name: str) -> Callable[[SimulatorNode, dict[str, Any]], WholeBodyRobot]:
    """The factory of the whole-body robot ``name`` of
    :data:`inertia_id_ros.sim.whole_body_robots.ROBOTS`."""
    return lambda node, p: WholeBodyRobot(node, p, name)


ROBOTS: dict[str, Callable[[SimulatorNode, dict[str, Any]], Any]] = {
    "panda": PandaPayloadRobot,
    "go1_leg": Go1LegRobot,
    "panda_torques": PandaTorquesRobot,
    **{f"{name}_whole_body": _whole_body_robot(name) for name in whole_body_robots.ROBOTS},
}
