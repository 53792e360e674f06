"""A participant of its own that calls ``/inertia_id/excite`` once (test_security.py runs it as a
separate process, in the enclave it is given, or unsecured without one).

Prints one JSON line: ``{"created": bool, "error": str, "discovered": bool, "response":
{"accepted": bool, "reason": str} | null}``: ``created`` false when its node or client could not
be made (``error``: its own permissions refuse the request topic, so nothing is sent),
``discovered`` whether the service matched within ``--wait-sec``, ``response`` the node's answer.
"""

from __future__ import annotations

import argparse
import json
import time

import rclpy

from inertia_id_ros.ros.security import RCLError
from inertia_id_ros.srv import Excite


def wait_until_the_node_receives_joint_states(node, timeout: float) -> None:
    """Spin until the node under test's diagnostics count more joint states in a later message
    than in an earlier one (it receives the simulator's), or ``timeout`` s."""
    from diagnostic_msgs.msg import DiagnosticArray

    counts: list[int] = []

    def on_diagnostics(msg) -> None:
        counts.extend(
            int(kv.value)
            for status in msg.status
            if status.name.startswith("inertia_id:")
            for kv in status.values
            if kv.key == "received.joint_state"
        )

    node.create_subscription(DiagnosticArray, "/diagnostics", on_diagnostics, 10)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and not (len(counts) >= 2 and counts[-1] > counts[0]):
        rclpy.spin_once(node, timeout_sec=0.1)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--enclave", help="the enclave (default: unsecured)")
    parser.add_argument("--trajectory", required=True, help="the request's trajectory file")
    parser.add_argument(
        "--wait-sec",
        type=float,
        default=5.0,
        help="how long to wait for the service and the answer (s)",
    )
    parser.add_argument(
        "--until-joint-states",
        action="store_true",
        help="first wait (--wait-sec) until the node receives joint states",
    )
    args = parser.parse_args()
    rclpy.init(args=["--ros-args", "--enclave", args.enclave] if args.enclave else None)
    result = {"created": False, "error": "", "discovered": False, "response": None}
    try:
        node = rclpy.create_node("excite_caller")
        client = node.create_client(Excite, "/inertia_id/excite")
    except RCLError as error:
        result["error"] = str(error)
    else:
        result["created"] = True
        if args.until_joint_states:
            wait_until_the_node_receives_joint_states(node, args.wait_sec)
        if client.wait_for_service(timeout_sec=args.wait_sec):
            result["discovered"] = True
            future = client.call_async(Excite.Request(trajectory_file=args.trajectory))
            rclpy.spin_until_future_complete(node, future, timeout_sec=args.wait_sec)
            if future.result() is not None:
                result["response"] = {
                    "accepted": future.result().accepted,
                    "reason": future.result().reason,
                }
    print(json.dumps(result), flush=True)
    rclpy.try_shutdown()


if __name__ == "__main__":
    main()
