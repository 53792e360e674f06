"""The payload-torques mode's topics and services: joint states with efforts in
(:class:`~.base.ModeWiring`); ``~/estimate`` (``InertialParameters``, latched, with the covariance;
``sensor_offset`` zero: the joints' torque offsets are no wrench), ``~/markers``,
``~/payload_change`` out; ``~/tare`` (the joints' torque offsets, in the response's message)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
from rclpy.qos import QoSProfile

from inertia_id_ros.modes import NodeSettings
from inertia_id_ros.online.payload_session import PayloadTorqueSession
from inertia_id_ros.online.tare import Tare as TareResult
from inertia_id_ros.ros.conversions import payload_torque_estimate_to_msg
from inertia_id_ros.ros.wiring.payload import PayloadOut, PayloadOutWiring
from inertia_id_ros.srv import Tare

if TYPE_CHECKING:
    from inertia_id_ros.ros.node import InertiaIdNode


class JointTorqueTareOut(PayloadOut):
    """:class:`PayloadOut` whose tare is the chain's joint torque offsets (N m, per joint): the
    ``Tare`` response's wrench fields stay zero, its message lists them."""

    def __init__(
        self, node: InertiaIdNode, session: PayloadTorqueSession, frame: str, body_name: str, drain
    ) -> None:
        super().__init__(node, session, frame, body_name, drain, payload_torque_estimate_to_msg)
        self._joints = session.estimator.joint_names

    def _fill_tare(self, response: Tare.Response, tare: TareResult) -> str:
        """The joints' torque offsets of ``tare``, in words (the response has no field for
        them)."""
        return (
            "joint torque offsets "
            + ", ".join(
                f"{joint} {offset:+.4f} ± {std:.4f}"
                for joint, offset, std in zip(
                    self._joints, np.asarray(tare.offset), np.asarray(tare.offset_std)
                )
            )
            + " N m"
        )


class PayloadTorquesWiring(PayloadOutWiring):
    """The payload-torques mode's topics around a :class:`PayloadTorqueSession`: joint states
    with efforts in, :class:`JointTorqueTareOut` out."""

    def __init__(
        self,
        node: InertiaIdNode,
        session: PayloadTorqueSession,
        settings: NodeSettings,
        sensor_qos: QoSProfile,
    ) -> None:
        super().__init__(node, session, settings, sensor_qos)
        own = settings.mode_settings
        joints = list(session.estimator.joint_names)
        self.hardware_id = own.frame
        self._out = JointTorqueTareOut(node, session, own.frame, own.body_name, self.drain)
        model = f"fit-links result {own.links_result}" if own.links_result else "the URDF's links"
        self.description = (
            f"identifying the body beyond '{own.frame}' from the torques of "
            f"joints {joints} minus {model}"
        )
        for finding in own.link_model_findings():
            node.get_logger().warning(
                f"parameter 'torques_links_result' ({finding.subject}): {finding.message}"
            )
