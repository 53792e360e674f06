"""DDS-Security at run time: what rclpy raises when a process cannot join a secured domain.

rclpy puts a process under DDS-Security from its environment (``ROS_SECURITY_ENABLE=true``,
``ROS_SECURITY_STRATEGY=Enforce``, ``ROS_SECURITY_KEYSTORE``; see
:func:`inertia_id_ros.ros.keystore.security_environment`) and its enclave
(``--ros-args --enclave NAME``): nothing in the node, the simulator or the demo changes. Enforced,
a process that cannot be secured does not start: creating its node raises :data:`RCLError`.
"""

from __future__ import annotations

from rclpy.impl.implementation_singleton import rclpy_implementation

RCLError = rclpy_implementation.RCLError
"""rclpy's error for a failed rcl call, e.g. a node whose secured participant cannot be made
(missing enclave, invalid certificate or permissions, a middleware without DDS-Security)."""

SECURITY_PLUGINS_MISSING = "doesn't have the security libraries"
"""In :data:`RCLError`'s message when the middleware's Fast DDS was built without DDS-Security
(``-DSECURITY=ON``): its participants cannot authenticate, encrypt or check permissions (the
ROS 2 Kilted wheels on PyPI, ``ros-fastdds`` 3.2.3; docs/measurements.md)."""
