"""The ROS console scripts ``inertia-id-node`` and ``inertia-id-sim`` (and ``ros2 run``'s
``scripts/``): a Ctrl-C while Python still imports numpy, pinocchio and rclpy (about a second)
ends the process at once and quietly, exit 0, as one does once the node runs
(:mod:`inertia_id_ros.ros.shutdown`). Imports nothing heavy itself."""

from __future__ import annotations

import importlib
import os
import signal
from collections.abc import Callable


def _exit_at_once(signum: int, frame: object) -> None:
    """Before the node exists there is nothing to end in order (and a KeyboardInterrupt could
    be swallowed by the code being imported): leave."""
    os._exit(0)


def main_of(module: str) -> Callable[[], None]:
    """``module``'s ``main``, imported while SIGINT exits 0 at once; ``main`` takes the
    signals itself (:func:`~inertia_id_ros.ros.shutdown.stop_on_signals`)."""
    signal.signal(signal.SIGINT, _exit_at_once)
    return importlib.import_module(module).main


def node() -> None:
    """``inertia-id-node``: :func:`inertia_id_ros.ros.node.main`."""
    main_of("inertia_id_ros.ros.node")()


def sim() -> None:
    """``inertia-id-sim``: :func:`inertia_id_ros.ros.sim_node.main`."""
    main_of("inertia_id_ros.ros.sim_node")()
