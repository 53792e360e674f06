"""``inertia-id call``: the running node's services from a shell, without the ``ros2`` command
line (:mod:`inertia_id_ros.ros.client`)."""

from __future__ import annotations

import argparse

from inertia_id_ros.cli.common import EXIT_NO_ESTIMATE, add_command, positive_seconds


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    """The ``call`` command on ``subparsers``."""
    call = add_command(
        subparsers,
        "call",
        run,
        help="call the running node's ~/identify or ~/tare service (no ros2 command line needed)",
    )
    call.add_argument("service", choices=("identify", "tare"), help="the node's service")
    call.add_argument("--node", default="/inertia_id", help="the node's full name (/inertia_id)")
    call.add_argument(
        "--duration",
        type=float,
        default=0.0,
        metavar="SEC",
        help="identify: seconds of the newest data (0: the whole window); tare: seconds of "
        "wrenches to average (0: 1 s)",
    )
    call.add_argument("--method", default="", help="identify: the method (the node's)")
    call.add_argument(
        "--reset", action="store_true", help="identify: drop the buffered window first"
    )
    call.add_argument(
        "--retry-for",
        type=float,
        default=0.0,
        metavar="SEC",
        help="call again each second while the answer is not a success (e.g. the window "
        "still fills), for up to SEC s (0: once)",
    )
    call.add_argument(
        "--timeout",
        type=positive_seconds,
        default=30.0,
        metavar="SEC",
        help="wait this long for the service, and as long for its answer (30)",
    )


def run(args: argparse.Namespace) -> int:
    """Call the service and print its answer; exit code 0, or 1 when it did not succeed or no
    node answered."""
    import sys

    from inertia_id_ros.errors import StartupError
    from inertia_id_ros.ros.client import call

    request: dict[str, object] = {"duration": float(args.duration)}
    if args.service == "identify":
        request |= {"method": args.method, "reset": args.reset}
    try:
        success, lines = call(args.service, request, args.node, args.timeout, args.retry_for)
    except StartupError as e:  # no node answering
        print(f"inertia-id call: {e}", file=sys.stderr)
        return EXIT_NO_ESTIMATE
    print("\n".join(lines))
    return 0 if success else EXIT_NO_ESTIMATE
