"""Calling the node's services from a shell without the ``ros2`` command line: ``~/identify``
(the estimate from the window) and ``~/tare`` (the F/T sensor's offset), as
``inertia-id call`` does. Each call waits for the service, sends one request and returns the
response with the lines that say what it holds."""

from __future__ import annotations

import time
from typing import Any

import rclpy
from rclpy.client import Client
from rclpy.node import Node

from inertia_id_ros.core.inertia import inertia_from_theta
from inertia_id_ros.errors import StartupError
from inertia_id_ros.ros.conversions import msg_to_theta, wrench_to_array
from inertia_id_ros.srv import Identify, Tare

RETRY_PERIOD_SEC = 1.0
"""How often a call that did not succeed is made again, while retrying (s)."""
SERVICES: dict[str, Any] = {"identify": Identify, "tare": Tare}
"""The node's services this client calls, by the name after the node's (``~/identify``)."""


def call(
    service: str,
    request: dict[str, Any],
    node_name: str = "/inertia_id",
    timeout: float = 30.0,
    retry_for: float = 0.0,
) -> tuple[bool, list[str]]:
    """Call ``node_name``'s ``service`` (a key of :data:`SERVICES`) with the ``request``'s
    fields, waiting up to ``timeout`` s for the service and as long for the answer, and calling
    again each :data:`RETRY_PERIOD_SEC` for up to ``retry_for`` s while it does not succeed:
    ``(success, lines)`` of the last answer. :class:`StartupError` when the service does not
    answer in time."""
    service_type = SERVICES[service]
    rclpy.init()
    try:
        node = Node("inertia_id_call")
        client: Client[Any, Any] = node.create_client(
            service_type, f"{node_name.rstrip('/')}/{service}"
        )
        name = client.srv_name
        if not client.wait_for_service(timeout_sec=timeout):
            raise StartupError(f"no {name} service within {timeout:g} s: is the node running?")
        message = service_type.Request()
        for field, value in request.items():
            setattr(message, field, value)
        until = time.monotonic() + retry_for
        while True:
            future = client.call_async(message)
            rclpy.spin_until_future_complete(node, future, timeout_sec=timeout)
            response = future.result()
            if response is None:
                raise StartupError(f"{name} did not answer within {timeout:g} s")
            if response.success or time.monotonic() + RETRY_PERIOD_SEC > until:
                return bool(response.success), _lines(service, response)
            time.sleep(RETRY_PERIOD_SEC)
    finally:
        rclpy.try_shutdown()


def _lines(service: str, response: Any) -> list[str]:
    """What a response says, for people."""
    lines = [f"{'success' if response.success else 'failed'}: {response.message}"]
    if not response.success:
        return lines
    if service == "tare":
        offset = wrench_to_array(response.offset)
        return lines + [f"offset {' '.join(f'{v:.4f}' for v in offset)} (N, N m)"]
    if response.links.bodies:
        return lines + [
            f"{msg.header.frame_id:<20} mass {msg.inertia.m:.4f} kg"
            for msg in response.links.bodies
        ]
    mass, com, inertia = inertia_from_theta(msg_to_theta(response.estimate))
    return lines + [
        f"mass {mass:.4f} kg, COM [{', '.join(f'{1e3 * c:.2f}' for c in com)}] mm in "
        f"{response.estimate.header.frame_id!r}",
        "inertia about the COM [ixx, iyy, izz]: "
        f"[{', '.join(f'{1e3 * inertia[k, k]:.4f}' for k in range(3))}] 1e-3 kg m²",
    ]
