"""The floor of the node's CPU cost: a bare rclpy node that only subscribes to its inputs.

Subscribes to the given topics (default: ``/joint_states`` (``sensor_msgs/JointState``) and
``/ft_sensor/wrench`` (``geometry_msgs/WrenchStamped``), the payload mode's) with the node's
sensor QoS (best effort, keep last ``--depth``), typed or raw (``--raw``: the serialized bytes,
as the node's ``input_path`` ``raw`` takes them), spins rclpy's default single-threaded executor
or the events executor's ``spin_once`` loop (as the node spins its inputs), and only counts
messages. Every 10 s and on SIGINT it prints ``received <count per topic, in order>``.
``soak_node.py`` and ``bench_node_cpu.py`` run it beside the node and compare their CPU in the
same run.

    .venv/bin/python benchmarks/bare_subscriber.py [--depth 2000] [--executor single|events]
        [--raw] [--topic TOPIC=PACKAGE/msg/TYPE ...]
"""

from __future__ import annotations

import argparse
import importlib

import rclpy
from rclpy.executors import ExternalShutdownException, SingleThreadedExecutor
from rclpy.experimental import EventsExecutor
from rclpy.qos import HistoryPolicy, QoSProfile, ReliabilityPolicy

DEFAULT_TOPICS = (
    "/joint_states=sensor_msgs/msg/JointState",
    "/ft_sensor/wrench=geometry_msgs/msg/WrenchStamped",
)
"""The payload mode's inputs."""


def message_class(msgtype: str):
    """The rclpy message class of ``package/msg/Type``."""
    package, _, name = msgtype.split("/")
    return getattr(importlib.import_module(f"{package}.msg"), name)


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
    parser.add_argument("--raw", action="store_true", help="take serialized messages")
    parser.add_argument(
        "--topic",
        action="append",
        metavar="TOPIC=TYPE",
        help="a topic and its type (package/msg/Type); repeat for each (default: the payload "
        "mode's joint states and wrenches)",
    )
    args = parser.parse_args()
    topics = [spec.split("=", 1) for spec in args.topic or DEFAULT_TOPICS]
    rclpy.init()
    node = rclpy.create_node("bare_subscriber")
    qos = QoSProfile(
        reliability=ReliabilityPolicy.BEST_EFFORT, history=HistoryPolicy.KEEP_LAST, depth=args.depth
    )
    counts = [0] * len(topics)

    def counter(k: int):
        def count(_msg) -> None:
            counts[k] += 1

        return count

    for k, (topic, msgtype) in enumerate(topics):
        node.create_subscription(message_class(msgtype), topic, counter(k), qos, raw=args.raw)

    def report() -> None:
        print("received " + " ".join(map(str, counts)), flush=True)

    node.create_timer(10.0, report)
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
    report()
    node.destroy_node()
    rclpy.try_shutdown()


if __name__ == "__main__":
    main()
