"""Ending rclpy work quietly at shutdown (SIGINT, ``rclpy.shutdown``)."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import ParamSpec

import rclpy
from rclpy.executors import ExternalShutdownException

P = ParamSpec("P")


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
