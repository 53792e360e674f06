"""The whole-body mode's topics: joint states, ``sensor_msgs/Imu`` (none for a fixed or
suspended base without ``imu_topic``) and one ``geometry_msgs/WrenchStamped`` topic per F/T
sensor in; ``~/links`` (every URDF link with its identifiability, the sensor offsets) and
``~/markers`` out."""

from __future__ import annotations

from typing import TYPE_CHECKING

from geometry_msgs.msg import WrenchStamped
from rclpy.qos import QoSProfile
from sensor_msgs.msg import Imu

from inertia_id_ros.modes import NodeSettings
from inertia_id_ros.online.session import Update
from inertia_id_ros.online.whole_body_session import WholeBodySession
from inertia_id_ros.ros.conversions import (
    imu_arrays,
    stamp_to_seconds,
    whole_body_estimate_to_msg,
    wrench_to_array,
)
from inertia_id_ros.ros.wiring.base import ModeWiring
from inertia_id_ros.ros.wiring.links import LinksOut
from inertia_id_ros.srv import Identify

if TYPE_CHECKING:
    from inertia_id_ros.ros.node import InertiaIdNode


class WholeBodyWiring(ModeWiring):
    """The whole-body mode's topics around a :class:`WholeBodySession`."""

    _session: WholeBodySession

    def __init__(
        self,
        node: InertiaIdNode,
        session: WholeBodySession,
        settings: NodeSettings,
        sensor_qos: QoSProfile,
    ) -> None:
        super().__init__(node, session, settings, sensor_qos)
        own = settings.mode_settings
        model = session.estimator.model
        self._imu = (
            None
            if model.imu_frame is None  # none: a fixed or suspended base at rest
            else self.inbox(Imu, own.imu_topic)
        )
        self._ft = {
            frame: self.inbox(WrenchStamped, topic)
            for frame, topic in zip(own.ft_frames, own.ft_topics)
        }
        self.hardware_id = ",".join(filter(None, (model.imu_frame, *own.ft_frames)))
        self._out = LinksOut(node, whole_body_estimate_to_msg)
        sensors = ", ".join(
            f"{f} ({k}, {t})" for f, k, t in zip(own.ft_frames, own.ft_types, own.ft_topics)
        )
        imu = (
            "no IMU (the base at rest, level)"
            if model.imu_frame is None
            else f"the IMU at '{model.imu_frame}' ({own.imu_topic})"
        )
        self.description = (
            f"identifying {len(model.bodies)} links of a {model.base} base from "
            f"{len(model.joint_names)} joints, {imu}, F/T sensors {sensors}"
            + (" and joint efforts" if own.use_efforts else "")
        )

    def _drain_more(self) -> None:
        """The IMU readings and each sensor's wrenches queued."""
        if self._raw:
            self._drain_decoded()
            return
        session, warn = self._session, self._node.warn
        for msg in self._imu.take() if self._imu is not None else ():
            t, _, angular_velocity, linear_acceleration = imu_arrays(msg)
            warn(session.add_imu(t, angular_velocity, linear_acceleration, msg.header.frame_id))
        for frame, inbox in self._ft.items():
            for msg in inbox.take():
                warn(
                    session.add_wrench(
                        frame,
                        stamp_to_seconds(msg.header.stamp),
                        wrench_to_array(msg.wrench),
                        msg.header.frame_id,
                    )
                )

    def _drain_decoded(self) -> None:
        """:meth:`_drain_more` on the serialized path: each input decoded in one batch."""
        session, warn = self._session, self._node.warn
        for run in self.decoded(self._imu) if self._imu is not None else ():
            gyro, accel = run.arrays["angular_velocity"], run.arrays["linear_acceleration"]
            for warning in session.add_imus(run.t, gyro, accel, [run.frame_id] * len(run)):
                warn(warning)
        for frame, inbox in self._ft.items():
            for run in self.decoded(inbox):
                frames = [run.frame_id] * len(run)
                for warning in session.add_wrenches(frame, run.t, run.arrays["wrench"], frames):
                    warn(warning)

    def publish(self, update: Update, markers: bool = True) -> None:
        """The update's links (and their markers, when ``markers``)."""
        self._out.publish(update, markers)

    def respond(self, response: Identify.Response, update: Update) -> None:
        """The links in ``response.links``."""
        self._out.respond(response, update)
