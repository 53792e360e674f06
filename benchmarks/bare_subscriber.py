"""The floor of the node's CPU cost: a bare rclpy node that only subscribes to its inputs.

Subscribes to ``/joint_states`` (``sensor_msgs/JointState``) and ``/ft_sensor/wrench``
(``geometry_msgs/WrenchStamped``) with the node's sensor QoS (best effort, keep last
``--depth``), spins rclpy's default single-threaded executor, and only counts messages. Every
10 s and on SIGINT it prints ``received <joint states> <wrenches>``. ``soak_node.py`` runs it
beside the node and compares their CPU in the same run.

    .venv/bin/python benchmarks/bare_subscriber.py [--depth 2000] [--executor single|events]
"""

from __future__ import annotations

import argparse

import rclpy
from geometry_msgs.msg import WrenchStamped
from rclpy.executors import ExternalShutdownException, SingleThreadedExecutor
from rclpy.experimental import EventsExecutor
from rclpy.qos import HistoryPolicy, QoSProfile, ReliabilityPolicy
from sensor_msgs.msg import JointState


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--depth", type=int, default=2000, help="QoS history depth (2000)")
    parser.add_argument(
        "--executor",
        choices=("single", "events"),
        default="single",
        help="rclpy's single-threaded executor's spin() (default), or the events "
        "executor's spin_once loop, as the node spins its inputs",
    )
    args = parser.parse_args()
    rclpy.init()
    node = rclpy.create_node("bare_subscriber")
    qos = QoSProfile(
        reliability=ReliabilityPolicy.BEST_EFFORT, history=HistoryPolicy.KEEP_LAST, depth=args.depth
    )
    counts = {"joint_states": 0, "wrench": 0}

    def counter(key: str):
        def count(_msg) -> None:
            counts[key] += 1

        return count

    node.create_subscription(JointState, "/joint_states", counter("joint_states"), qos)
    node.create_subscription(WrenchStamped, "/ft_sensor/wrench", counter("wrench"), qos)
    node.create_timer(
        10.0, lambda: print(f"received {counts['joint_states']} {counts['wrench']}", flush=True)
    )
    executor = EventsExecutor() if args.executor == "events" else SingleThreadedExecutor()
    executor.add_node(node)
    try:
        if args.executor == "events":
            while rclpy.ok():
                executor.spin_once(timeout_sec=0.1)
        else:
            executor.spin()
    except (KeyboardInterrupt, ExternalShutdownException):
        pass
    print(f"received {counts['joint_states']} {counts['wrench']}", flush=True)
    node.destroy_node()
    rclpy.try_shutdown()


if __name__ == "__main__":
    main()
