"""``inertia_id_sim``: a simulated robot with a wrist F/T sensor carrying a payload.

Publishes ``sensor_msgs/JointState`` and ``geometry_msgs/WrenchStamped`` at ``rate_hz`` (default
1 kHz) along an exciting trajectory, with F/T noise, a constant F/T offset and encoder noise
(:class:`~inertia_id_ros.simulation.PayloadSimulator`), and the ground truth on
``~/ground_truth`` (``InertialParameters``, latched). Stamps are exact (``start + k / rate_hz``);
messages are published in small bursts as they fall due.
"""

from __future__ import annotations

import sys
import threading
import time

import numpy as np
import rclpy
from geometry_msgs.msg import WrenchStamped
from rcl_interfaces.msg import ParameterDescriptor
from rclpy.executors import ExternalShutdownException, SingleThreadedExecutor
from rclpy.node import Node
from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy
from sensor_msgs.msg import JointState

from inertia_id_ros.inertia import inertia_from_msg_order, inertia_from_theta, theta_from_inertia
from inertia_id_ros.msg import InertialParameters
from inertia_id_ros.ros.conversions import array_to_wrench, joint_state, theta_to_msg, wrench_stamped
from inertia_id_ros.simulation import PayloadSimulator

BURST_SEC = 0.005
"""Samples are published in bursts of at most this length (s)."""


class SimulatorNode(Node):
    """See the module docstring. ``finished`` is set when ``duration_sec`` has been played."""

    def __init__(self, **kwargs) -> None:
        super().__init__("inertia_id_sim", **kwargs)
        default = PayloadSimulator.panda()
        mass, com, inertia_com = inertia_from_theta(default.true_theta)
        declare = [
            ("rate_hz", 1000.0, "Publication rate of both topics (Hz)."),
            ("duration_sec", 0.0, "Seconds of motion to play; 0 = until stopped."),
            ("seed", 0, "Seed of the trajectory and the noise."),
            ("noise", True, "Add F/T noise (0.1 N, 0.005 N m) and encoder noise."),
            ("publish_velocity", True, "Fill JointState.velocity (else positions only)."),
            ("payload_mass", float(mass), "Payload mass (kg)."),
            ("payload_com", [float(v) for v in com], "Payload COM in the sensor frame (m)."),
            ("payload_inertia", [float(v) for v in
                                 (inertia_com[0, 0], inertia_com[0, 1], inertia_com[0, 2],
                                  inertia_com[1, 1], inertia_com[1, 2], inertia_com[2, 2])],
             "Payload inertia about its COM [ixx, ixy, ixz, iyy, iyz, izz] (kg m^2)."),
            ("ft_offset", [float(v) for v in default.true_offset],
             "Constant F/T offset [fx, fy, fz, tx, ty, tz] (N, N m)."),
            ("wait_for_subscribers_sec", 10.0,
             "Start the motion once both topics have a subscriber, waiting at most this long (s); "
             "0 = start at once."),
            ("joint_states_topic", "/joint_states", "JointState output topic."),
            ("wrench_topic", "/ft_sensor/wrench", "WrenchStamped output topic."),
        ]
        for name, value, description in declare:
            self.declare_parameter(name, value, ParameterDescriptor(description=description))
        p = {name: self.get_parameter(name).value for name, _, _ in declare}
        theta = theta_from_inertia(p["payload_mass"], np.array(p["payload_com"]),
                                   inertia_from_msg_order(p["payload_inertia"]))
        quiet = {} if p["noise"] else {"wrench_noise_std": 0.0, "position_noise_std": 0.0,
                                       "velocity_noise_std": 0.0}
        self.sim = PayloadSimulator.panda(payload_theta=theta, offset=np.array(p["ft_offset"]),
                                          seed=int(p["seed"]), **quiet)
        self._rate = float(p["rate_hz"])
        self._duration = float(p["duration_sec"])
        self._publish_velocity = bool(p["publish_velocity"])
        self._wait_for_subscribers = float(p["wait_for_subscribers_sec"])
        self._rng = np.random.default_rng(int(p["seed"]) + 1)
        self.sent = {"joint_states": 0, "wrenches": 0}
        self.finished = threading.Event()

        data_qos = QoSProfile(depth=100, reliability=ReliabilityPolicy.RELIABLE)
        self._joint_pub = self.create_publisher(JointState, p["joint_states_topic"], data_qos)
        self._wrench_pub = self.create_publisher(WrenchStamped, p["wrench_topic"], data_qos)
        latched = QoSProfile(depth=1, durability=DurabilityPolicy.TRANSIENT_LOCAL,
                             reliability=ReliabilityPolicy.RELIABLE)
        truth = self.create_publisher(InertialParameters, "~/ground_truth", latched)
        truth_msg = theta_to_msg(self.sim.true_theta, self.sim.sensor_frame, "payload")
        truth_msg.sensor_offset = array_to_wrench(self.sim.true_offset)
        truth.publish(truth_msg)
        self._thread = threading.Thread(target=self._run, name="inertia_id_sim", daemon=True)
        self._thread.start()
        self.get_logger().info(
            f"simulating the Panda with a {p['payload_mass']:.3f} kg payload beyond "
            f"'{self.sim.sensor_frame}' at {self._rate:.0f} Hz")

    def _run(self) -> None:
        deadline = time.monotonic() + self._wait_for_subscribers
        while time.monotonic() < deadline and not (
                self._joint_pub.get_subscription_count() and self._wrench_pub.get_subscription_count()):
            time.sleep(0.05)
        start_stamp = self.get_clock().now().nanoseconds * 1e-9
        start_wall = time.monotonic()
        k = 0
        period = 1.0 / self._rate
        n_total = int(round(self._duration * self._rate))  # samples to play (duration_sec > 0)
        while rclpy.ok() and not self.finished.is_set():
            elapsed = time.monotonic() - start_wall
            if self._duration > 0.0:
                elapsed = min(elapsed, self._duration)
            k_due = int(elapsed * self._rate) + 1
            if self._duration > 0.0:
                k_due = min(k_due, n_total)
            if k_due > k:
                t = np.arange(k, k_due) * period
                q, dq, wrench = self.sim.measure(t, self._rng)
                for i, ti in enumerate(t):
                    stamp = start_stamp + ti
                    self._joint_pub.publish(joint_state(
                        stamp, self.sim.joint_names, q[i],
                        dq[i] if self._publish_velocity else None))
                    self._wrench_pub.publish(wrench_stamped(stamp, self.sim.sensor_frame,
                                                            wrench[i]))
                self.sent["joint_states"] += len(t)
                self.sent["wrenches"] += len(t)
                k = k_due
            if self._duration > 0.0 and k >= n_total:
                self.get_logger().info(f"played {self._duration:.1f} s: published "
                                       f"{self.sent['joint_states']} joint states and "
                                       f"{self.sent['wrenches']} wrenches")
                self.finished.set()
                break
            time.sleep(BURST_SEC)


def main(args: list[str] | None = None) -> None:
    """Console script ``inertia-id-sim``: runs until stopped or ``duration_sec`` is played."""
    rclpy.init(args=args)
    node = SimulatorNode()
    executor = SingleThreadedExecutor()
    executor.add_node(node)
    try:
        while rclpy.ok() and not node.finished.is_set():
            executor.spin_once(timeout_sec=0.1)
        # let late subscribers receive the last messages
        end = time.monotonic() + 0.5
        while rclpy.ok() and time.monotonic() < end:
            executor.spin_once(timeout_sec=0.05)
    except (KeyboardInterrupt, ExternalShutdownException):
        pass
    finally:
        node.destroy_node()
        rclpy.try_shutdown()
    sys.exit(0)


if __name__ == "__main__":
    main()
