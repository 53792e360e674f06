"""The node's modes: what it identifies, each a :class:`Mode` in a module of its own, registered
here (one line each). See :mod:`inertia_id_ros.modes.base` and ``docs/architecture.md`` (adding a
mode). Importing this package loads neither numpy nor rclpy: the command line reads it for
``--help``."""

from inertia_id_ros.modes.base import (
    ExampleLog,
    ExcitationTarget,
    Mode,
    NodeSettings,
    ParameterSpec,
    default,
    get,
    modes,
    register,
    result_mode,
)
from inertia_id_ros.modes.links import LinksMode
from inertia_id_ros.modes.payload import PayloadMode
from inertia_id_ros.modes.payload_torques import PayloadTorquesMode
from inertia_id_ros.modes.whole_body import WholeBodyMode

register(PayloadMode())
register(LinksMode())
register(WholeBodyMode())
register(PayloadTorquesMode())

__all__ = [
    "ExampleLog",
    "ExcitationTarget",
    "Mode",
    "NodeSettings",
    "ParameterSpec",
    "default",
    "get",
    "modes",
    "register",
    "result_mode",
]
