"""Ending rclpy work quietly at shutdown (SIGINT, ``rclpy.shutdown``)."""

from __future__ import annotations

from collections.abc import Callable

import rclpy
from rclpy.executors import ExternalShutdownException


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
