"""The payload mode's topics and services: ``geometry_msgs/WrenchStamped`` in; ``~/estimate``
(``InertialParameters``, latched), ``~/markers``, ``~/payload_change`` out; ``~/tare``.
:class:`PayloadOut` is the outputs and the tare, for any mode identifying a payload."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import numpy as np
from geometry_msgs.msg import WrenchStamped
from rclpy.qos import QoSProfile
from visualization_msgs.msg import MarkerArray

from inertia_id_ros.core.inertia import check_consistency
from inertia_id_ros.errors import EstimateUnavailable
from inertia_id_ros.modes import NodeSettings
from inertia_id_ros.msg import InertialParameters, PayloadChange
from inertia_id_ros.online.payload_session import PayloadSession, PayloadSessionBase
from inertia_id_ros.online.session import Update
from inertia_id_ros.online.tare import Tare as TareResult
from inertia_id_ros.ros.conversions import (
    array_to_wrench,
    estimate_to_msg,
    payload_theta_from_msg,
    seconds_to_stamp,
    wrench_batch,
)
from inertia_id_ros.ros.markers import NODE_MARKERS_TOPIC, estimate_markers
from inertia_id_ros.ros.qos import LATCHED
from inertia_id_ros.ros.wiring.base import ModeWiring
from inertia_id_ros.srv import Identify, Tare

if TYPE_CHECKING:
    from inertia_id_ros.ros.node import InertiaIdNode

DEFAULT_TARE_SEC = 1.0
"""Seconds of wrenches ``~/tare`` averages when the request gives 0."""


class PayloadOut:
    """``~/estimate``, ``~/markers``, ``~/payload_change`` and ``~/tare`` of a mode identifying
    one payload in ``frame`` (named ``body_name``), around a session with the payload session's
    ``tare(duration, theta_known)`` and ``clear_tare()``; ``drain`` hands the queued inputs to
    the session (before a tare); ``estimate_msg(estimate, frame, body_name)`` converts an
    estimate (an F/T sensor's, with its wrench offset, by default). A mode whose tare is not an
    F/T offset overrides :meth:`_fill_tare`."""

    def __init__(
        self,
        node: InertiaIdNode,
        session: PayloadSessionBase,
        frame: str,
        body_name: str,
        drain: Callable[[], None],
        estimate_msg: Callable[[Any, str, str], InertialParameters] = estimate_to_msg,
    ) -> None:
        self._node, self._session, self._drain = node, session, drain
        self._frame, self._body_name, self._estimate_msg = frame, body_name, estimate_msg
        self._estimates = node.create_publisher(InertialParameters, "~/estimate", LATCHED)
        self._markers = node.create_publisher(MarkerArray, NODE_MARKERS_TOPIC, LATCHED)
        self._changes = node.create_publisher(PayloadChange, "~/payload_change", 10)
        node.create_service(Tare, "~/tare", self._on_tare)

    def to_msg(self, update: Update) -> InertialParameters:
        """The estimate of ``update`` as a message."""
        return self._estimate_msg(update.estimate, self._frame, self._body_name)

    def publish_change(self, update: Update) -> None:
        """``~/payload_change`` when the update detected one (periodic or ``identify``)."""
        if update.change is not None:
            event = update.change
            msg = PayloadChange(
                onset_time=event.t_onset,
                num_samples=event.n_samples,
                residual_mean=event.residual_mean,
                message=str(event),
            )
            msg.header.stamp = seconds_to_stamp(event.t_detected)
            msg.header.frame_id = self._frame
            self._changes.publish(msg)

    def publish(self, update: Update, markers: bool = True) -> None:
        """The update's payload change and estimate (and its markers, when ``markers``)."""
        self.publish_change(update)
        if update.ok:
            msg = self.to_msg(update)
            self._estimates.publish(msg)
            if markers:
                self._markers.publish(estimate_markers(msg))

    def respond(self, response: Identify.Response, update: Update) -> None:
        """The estimate in ``response.estimate``."""
        response.estimate = self.to_msg(update)

    def _on_tare(self, request: Tare.Request, response: Tare.Response) -> Tare.Response:
        try:
            if request.clear:
                self._session.clear_tare()
                response.success, response.message = True, "tare cleared"
            else:
                self._tare(request, response)
        except Exception as error:  # never let a service call take the node down
            response.success, response.message = False, f"tare failed: {error!r}"
        self._node.get_logger().info(f"tare: {response.message}")
        return response

    def _tare(self, request: Tare.Request, response: Tare.Response) -> None:
        theta_known = payload_theta_from_msg(request.payload) if request.known_payload else None
        if theta_known is not None and not check_consistency(theta_known).fully_consistent:
            response.success = False
            response.message = (
                "the known payload's theta is not physically consistent: "
                + "; ".join(check_consistency(theta_known).problems)
            )
            return
        self._drain()
        try:
            tare = self._session.tare(float(request.duration) or DEFAULT_TARE_SEC, theta_known)
        except (EstimateUnavailable, ValueError) as error:
            response.success, response.message = False, f"no tare: {error}"
            return
        response.success = True
        response.num_samples = tare.n_samples
        payload = "the known payload" if theta_known is not None else "no payload"
        response.message = (
            f"tared from {tare.n_samples} samples with {payload}: "
            + self._fill_tare(response, tare)
            + ("; the window restarted" if theta_known is None else "")
        )

    def _fill_tare(self, response: Tare.Response, tare: TareResult) -> str:
        """The F/T offset of ``tare`` into ``response``; its summary."""
        response.offset = array_to_wrench(tare.offset)
        response.offset_std = tare.offset_std.tolist()
        response.noise_std = tare.noise_std.tolist()
        return (
            f"force offset {np.round(tare.offset[:3], 4).tolist()} N, torque offset "
            f"{np.round(tare.offset[3:], 5).tolist()} N m"
        )


class PayloadOutWiring(ModeWiring):
    """A payload mode's wiring whose outputs are a :class:`PayloadOut` (``_out``, made by the
    subclass): estimates, payload changes and ``~/identify`` responses go through it."""

    _out: PayloadOut

    def publish(self, update: Update, markers: bool = True) -> None:
        """The update's payload change and estimate (and its markers, when ``markers``)."""
        self._out.publish(update, markers)

    def publish_change(self, update: Update) -> None:
        """``~/payload_change`` when the update detected one."""
        self._out.publish_change(update)

    def respond(self, response: Identify.Response, update: Update) -> None:
        """The estimate in ``response.estimate``."""
        self._out.respond(response, update)


class PayloadWiring(PayloadOutWiring):
    """The payload mode's topics and services around a :class:`PayloadSession`: wrenches in,
    :class:`PayloadOut` out."""

    _session: PayloadSession

    def __init__(
        self,
        node: InertiaIdNode,
        session: PayloadSession,
        settings: NodeSettings,
        sensor_qos: QoSProfile,
    ) -> None:
        super().__init__(node, session, settings, sensor_qos)
        own = settings.mode_settings
        self.hardware_id = own.sensor_frame
        self._out = PayloadOut(node, session, own.sensor_frame, own.body_name, self.drain)
        self._wrenches = self.inbox(WrenchStamped, own.wrench_topic)
        kinematics = session.estimator.kinematics
        limits = "" if own.wrench_limits is None else f", wrench limits {list(own.wrench_limits)}"
        self.description = (
            f"identifying the body beyond '{own.sensor_frame}' from joints "
            f"{list(kinematics.joint_names)}{limits}"
        )

    def _drain_more(self) -> None:
        """The wrenches queued, in batches."""
        if self._wrenches.raw:
            batches = [
                (run.t, run.arrays["wrench"], [run.frame_id] * len(run))
                for run in self.decoded(self._wrenches)
            ]
        else:
            msgs = self._wrenches.take()
            batches = [wrench_batch(msgs)] if msgs else []
        for batch in batches:
            for warning in self._session.add_wrenches(*batch):
                self._node.warn(warning)
