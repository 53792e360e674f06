"""The links mode's topics: joint states with efforts in (:class:`~.base.ModeWiring`); ``~/links``
(``InertialParametersArray``, latched) and ``~/markers`` out. :class:`LinksOut` publishes any
mode's estimate of several links (the whole-body mode's too)."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from rclpy.qos import QoSProfile
from visualization_msgs.msg import MarkerArray

from inertia_id_ros.modes import NodeSettings
from inertia_id_ros.msg import InertialParametersArray
from inertia_id_ros.online.link_session import LinkSession
from inertia_id_ros.online.session import Update
from inertia_id_ros.ros.conversions import link_estimate_to_msg
from inertia_id_ros.ros.markers import NODE_MARKERS_TOPIC, estimate_markers
from inertia_id_ros.ros.qos import LATCHED
from inertia_id_ros.ros.wiring.base import ModeWiring
from inertia_id_ros.srv import Identify

if TYPE_CHECKING:
    from inertia_id_ros.ros.node import InertiaIdNode


class LinksOut:
    """``~/links`` and ``~/markers`` of an estimate of several links, converted by
    ``to_msg(estimate) -> InertialParametersArray``."""

    def __init__(self, node: Any, to_msg: Callable[[Any], InertialParametersArray]) -> None:
        self._to_msg = to_msg
        self._links = node.create_publisher(InertialParametersArray, "~/links", LATCHED)
        self._markers = node.create_publisher(MarkerArray, NODE_MARKERS_TOPIC, LATCHED)

    def publish(self, update: Update, markers: bool = True) -> None:
        """The update's links (and their markers, when ``markers``)."""
        if not update.ok:
            return
        msg = self._to_msg(update.estimate)
        self._links.publish(msg)
        if not markers:
            return
        array = MarkerArray()
        for body in msg.bodies:  # one namespace per link: marker ids restart in each
            array.markers += estimate_markers(body, ns=f"inertia_id/{body.body_name}").markers
        self._markers.publish(array)

    def respond(self, response: Identify.Response, update: Update) -> None:
        """The links in ``response.links``."""
        response.links = self._to_msg(update.estimate)


class LinksWiring(ModeWiring):
    """The links mode's topics around a :class:`LinkSession`."""

    def __init__(
        self,
        node: InertiaIdNode,
        session: LinkSession,
        settings: NodeSettings,
        sensor_qos: QoSProfile,
    ) -> None:
        super().__init__(node, session, settings, sensor_qos)
        model = session.estimator.link_model
        self.hardware_id = ",".join(model.joint_names)
        self._out = LinksOut(node, link_estimate_to_msg)
        self.description = (
            f"identifying the links {list(model.link_names)} and the drives "
            f"of joints {list(model.joint_names)} from joint torques, "
            f"prior weight {settings.mode_settings.prior_weight:g}"
        )

    def publish(self, update: Update, markers: bool = True) -> None:
        """The update's links and drives (and their markers, when ``markers``)."""
        self._out.publish(update, markers)

    def respond(self, response: Identify.Response, update: Update) -> None:
        """The links and drives in ``response.links``."""
        self._out.respond(response, update)
