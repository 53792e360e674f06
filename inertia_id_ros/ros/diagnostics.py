"""``/diagnostics`` from a session's :class:`~inertia_id_ros.online.session.Diagnostics`."""

from __future__ import annotations

from collections.abc import Mapping

from builtin_interfaces.msg import Time
from diagnostic_msgs.msg import DiagnosticArray, DiagnosticStatus, KeyValue

from inertia_id_ros.online.session import Diagnostics

STATUS_NAME = "inertia_id: inputs"
"""Name of the node's status in ``/diagnostics``."""


def diagnostics_msg(
    diagnostics: Diagnostics, hardware_id: str, stamp: Time, extra: Mapping[str, str] | None = None
) -> DiagnosticArray:
    """One ``DiagnosticArray`` with the session's level, message and values (sorted by key),
    plus the node's own ``extra`` values."""
    status = DiagnosticStatus(
        name=STATUS_NAME,
        hardware_id=hardware_id,
        level=bytes([diagnostics.level]),
        message=diagnostics.message,
    )
    values = {**diagnostics.values, **(extra or {})}
    status.values = [KeyValue(key=k, value=str(v)) for k, v in sorted(values.items())]
    msg = DiagnosticArray(status=[status])
    msg.header.stamp = stamp
    return msg
