"""The QoS profiles the package's nodes share."""

from __future__ import annotations

from rclpy.qos import DurabilityPolicy, HistoryPolicy, QoSProfile, ReliabilityPolicy

LATCHED = QoSProfile(
    depth=1, durability=DurabilityPolicy.TRANSIENT_LOCAL, reliability=ReliabilityPolicy.RELIABLE
)
"""The current state (an estimate, the excitation's status, the simulator's truth): late
subscribers get the latest message."""


def sensor_data(depth: int) -> QoSProfile:
    """Best-effort, volatile input queues of ``depth`` messages (the node's ``qos_depth``)."""
    return QoSProfile(
        reliability=ReliabilityPolicy.BEST_EFFORT,
        durability=DurabilityPolicy.VOLATILE,
        history=HistoryPolicy.KEEP_LAST,
        depth=depth,
    )
