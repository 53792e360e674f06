"""The ROS wiring of the test-only one_joint mode (:mod:`helpers.toy_mode`): the link on
``~/one_link`` (latched, ``InertialParameters``), and in ``~/identify``'s ``estimate``. Only the
node imports it (rclpy)."""

from __future__ import annotations

from typing import Any

from inertia_id_ros.modes import NodeSettings
from inertia_id_ros.msg import InertialParameters
from inertia_id_ros.online.session import Update
from inertia_id_ros.ros.conversions import theta_to_msg
from inertia_id_ros.ros.qos import LATCHED
from inertia_id_ros.ros.wiring.base import ModeWiring


class OneJointIO(ModeWiring):
    """Joint states in (the base's); the link out."""

    def __init__(self, node: Any, session: Any, settings: NodeSettings, sensor_qos: Any) -> None:
        super().__init__(node, session, settings, sensor_qos)
        self.hardware_id = settings.mode_settings.joint
        self.description = f"identifying the link of {self.hardware_id} from its torque"
        self._link = node.create_publisher(InertialParameters, "~/one_link", LATCHED)

    def _msg(self, update: Update) -> InertialParameters:
        estimate = update.estimate
        msg = theta_to_msg(
            estimate.thetas[0], estimate.link_names[0], self.hardware_id, estimate.t_last
        )
        msg.residual_rms, msg.num_samples = estimate.residual_rms, estimate.n_samples
        return msg

    def publish(self, update: Update, markers: bool = True) -> None:
        if update.ok:
            self._link.publish(self._msg(update))

    def respond(self, response: Any, update: Update) -> None:
        response.estimate = self._msg(update)
