"""A console script's node: created or the script exits with a code; its rclpy work ended quietly at
shutdown (SIGINT, ``rclpy.shutdown``)."""

from __future__ import annotations

import functools
import signal
import sys
import threading
from collections.abc import Callable
from typing import ParamSpec, TypeVar

import rclpy
from rclpy.executors import ExternalShutdownException
from rclpy.node import Node

from inertia_id_ros.ros.security import RCLError

P = ParamSpec("P")
NodeT = TypeVar("NodeT", bound=Node)


def create_node_or_exit(create: Callable[[], NodeT], name: str, invalid: type[Exception]) -> NodeT:
    """``create()`` (after ``rclpy.init``), or print why after ``name:``, shut rclpy down and
    exit: with 2 on ``invalid`` (an invalid start-up parameter), with 1 when the node cannot be
    created (``RCLError``: e.g. DDS-Security enforced and not available: never unsecured)."""
    try:
        return create()
    except invalid as error:
        print(f"{name}: {error}", file=sys.stderr)
        rclpy.try_shutdown()
        sys.exit(2)
    except RCLError as error:
        print(f"{name}: cannot create the node: {error}", file=sys.stderr)
        rclpy.try_shutdown()
        sys.exit(1)


SPIN_PERIOD_SEC = 0.1
"""A node's executors wait at most this long (s) before they look whether to stop."""


def stop_on_signals() -> threading.Event:
    """An event that SIGINT and SIGTERM set (in place of rclpy's handlers: give ``rclpy.init``
    ``signal_handler_options=SignalHandlerOptions.NO``). The node then ends in order, wherever
    the signal lands, also while it starts: its executors stop spinning (within
    :data:`SPIN_PERIOD_SEC`), its threads are joined and it is destroyed, and only then rclpy
    shuts down. rclpy's handlers shut the context down at once, and objects made or destroyed
    after that fail or abort the process."""
    stop = threading.Event()
    for number in (signal.SIGINT, signal.SIGTERM):
        signal.signal(number, lambda *_: stop.set())
    return stop


def spin_until(executor, stop: threading.Event) -> None:
    """Spin ``executor`` until ``stop`` is set or the context shuts down (quietly, as
    :func:`until_shutdown`)."""

    def spin() -> None:
        while not stop.is_set() and rclpy.ok():
            executor.spin_once(timeout_sec=SPIN_PERIOD_SEC)

    until_shutdown(spin)


def until_shutdown(work: Callable[[], None]) -> None:
    """Run ``work`` (spinning, publishing) until the context shuts down, quietly. A shutdown that
    lands while rclpy builds a wait set or publishes makes it raise ``RCLError`` (context not
    valid) instead of ``ExternalShutdownException``; an error while the context is still valid
    is raised."""
    try:
        work()
    except (KeyboardInterrupt, ExternalShutdownException):
        pass
    except Exception:
        if rclpy.ok():
            raise


def ends_quietly(main: Callable[P, None]) -> Callable[P, None]:
    """A console script's ``main`` that a SIGINT ends quietly wherever it lands: while the node
    starts (before anything spins), while it spins, or while it cleans up."""

    @functools.wraps(main)
    def quiet_main(*args: P.args, **kwargs: P.kwargs) -> None:
        try:
            main(*args, **kwargs)
        except KeyboardInterrupt:
            rclpy.try_shutdown()

    return quiet_main
