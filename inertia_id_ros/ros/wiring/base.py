"""What every mode's ROS wiring shares: the input queues and the joint-state input.

Inputs come serialized (``input_path`` ``raw``, the default: each queue holds the CDR bytes,
decoded in batches straight into arrays by :mod:`inertia_id_ros.formats.cdr`; a message that
cannot be read is dropped, counted and warned about) or as rclpy's message objects
(``typed``)."""

from __future__ import annotations

import abc
import threading
import time
from collections import deque
from typing import TYPE_CHECKING, Any

import numpy as np
from rclpy.qos import QoSProfile
from rclpy.serialization import deserialize_message
from rclpy.subscription import Subscription
from sensor_msgs.msg import JointState

from inertia_id_ros.formats.cdr import Run, decode
from inertia_id_ros.modes import NodeSettings
from inertia_id_ros.online.session import Session, Update
from inertia_id_ros.ros.conversions import joint_state_arrays, joint_state_groups, stamp_to_seconds

if TYPE_CHECKING:
    from inertia_id_ros.ros.node import InertiaIdNode

INBOX_SEC = 2.0
"""Each input queue holds up to this many seconds of messages at ``max_input_rate_hz`` (the
oldest are dropped beyond, and counted)."""


class Inbox:
    """The messages of one input: the subscription callback only queues them (cheap: the
    callbacks keep up with the executor), the worker takes them in batches. ``msg_type``,
    ``topic``: what it subscribes to; ``raw``: it holds serialized messages."""

    def __init__(self, limit: int, msg_type: Any, topic: str, raw: bool) -> None:
        self.msg_type, self.topic, self.raw = msg_type, topic, raw
        self._queue: deque = deque(maxlen=limit)
        self.overflow = 0
        """Messages dropped because the queue was full."""
        self.newest: Any = None
        """The newest message put (taken or not)."""
        self.newest_arrival = -np.inf
        """When :attr:`newest` was put (``time.monotonic()``, s)."""
        self._newest_decoded: tuple[Any, Any] = (None, None)

    def put(self, msg: Any) -> None:
        """Queue ``msg`` (the oldest is dropped, and counted, when the queue is full)."""
        if len(self._queue) == self._queue.maxlen:
            self.overflow += 1
        self._queue.append(msg)
        self.newest, self.newest_arrival = msg, time.monotonic()

    def take(self) -> list:
        """Every message queued so far, oldest first."""
        return [self._queue.popleft() for _ in range(len(self._queue))]

    @property
    def newest_message(self) -> Any:
        """The newest message put, as a message object (``None``: none yet): the same object
        until another message is put (serialized ones are deserialized once; one that cannot be
        read leaves the one before)."""
        if not self.raw:
            return self.newest
        buffer, message = self._newest_decoded
        if self.newest is not None and buffer is not self.newest:
            try:
                message = deserialize_message(self.newest, self.msg_type)
            except RuntimeError:  # rclpy's RMWError: the decoder drops and counts it
                pass
            self._newest_decoded = self.newest, message
        return message


class ModeWiring(abc.ABC):
    """A mode's topics and services around its session: ``sensor_msgs/JointState`` in (every
    mode; in batches), the mode's other inputs (:meth:`inbox` and :meth:`_drain_more`), its
    outputs (:meth:`publish`, :meth:`respond`). Subclasses set ``hardware_id`` and
    ``description`` (the start-up log line) and call this ``__init__`` first."""

    hardware_id: str
    """The ``/diagnostics`` hardware id (the sensor frame, the joints, ...)."""
    description: str
    """What the node identifies from what (logged at start-up)."""

    def __init__(
        self, node: InertiaIdNode, session: Session, settings: NodeSettings, sensor_qos: QoSProfile
    ) -> None:
        self._node, self._session, self._sensor_qos = node, session, sensor_qos
        self._raw = settings.input_path == "raw"
        self.undecodable = 0
        """Serialized messages that could not be read (dropped)."""
        self._inbox_limit = max(int(INBOX_SEC * settings.max_input_rate_hz), settings.qos_depth)
        self._inboxes: list[Inbox] = []
        self._subscriptions: list[Subscription] = []
        self._joint_states = self.inbox(JointState, settings.joint_states_topic)
        self._drain_lock = threading.Lock()

    def inbox(self, msg_type: Any, topic: str) -> Inbox:
        """A queue of ``msg_type`` messages subscribed to ``topic`` (sensor-data QoS, on the
        node's input node); its overflow counts into :attr:`queue_overflow`."""
        inbox = Inbox(self._inbox_limit, msg_type, topic, self._raw)
        self._inboxes.append(inbox)
        self._subscriptions.append(
            self._node.inputs.create_subscription(
                msg_type, topic, inbox.put, self._sensor_qos, raw=self._raw
            )
        )
        return inbox

    def decoded(self, inbox: Inbox) -> list[Run]:
        """The serialized messages queued in ``inbox``, decoded into runs of one layout; those
        that cannot be read are dropped, counted (:attr:`undecodable`) and warned about."""
        buffers = inbox.take()
        if not buffers:
            return []
        msg_type = inbox.msg_type.__module__.split(".")[0] + "/msg/" + inbox.msg_type.__name__
        batch = decode(msg_type, buffers)
        if batch.refused:
            self.undecodable += len(batch.refused)
            self._node.warn(
                (
                    "undecodable",
                    f"dropped {len(batch.refused)} {msg_type} message(s) on {inbox.topic} that "
                    f"could not be read (undecodable: {batch.refused[0][1]}; {self.undecodable} "
                    "so far)",
                )
            )
        return batch.runs

    def drain(self) -> None:
        """Hand every queued message to the session (any thread; one drain at a time, so the
        samples keep their order); warn about those it drops."""
        with self._drain_lock:
            if self._raw:
                for run in self.decoded(self._joint_states):
                    self._add_joint_states(run)
                self._drain_more()
                return
            session, warn = self._session, self._node.warn
            for group in joint_state_groups(self._joint_states.take()):
                arrays = joint_state_arrays(group)
                if arrays is None:  # arrays that do not match the names: rejected one by one
                    for m in group:
                        warn(
                            session.add_joint_state(
                                stamp_to_seconds(m.header.stamp),
                                m.name,
                                m.position,
                                m.velocity,
                                m.effort,
                            )
                        )
                else:
                    for warning in session.add_joint_states(*arrays):
                        warn(warning)
            self._drain_more()

    def _add_joint_states(self, run: Run) -> None:
        """Hand a run of decoded joint states to the session: at once when its arrays match its
        names, else one by one (each then rejected with its reason, as on the typed path)."""
        session, warn = self._session, self._node.warn
        q, dq, effort = (run.arrays[key] for key in ("position", "velocity", "effort"))
        n = len(run.names)
        if q.shape[1] == n and dq.shape[1] in (0, n) and effort.shape[1] in (0, n):
            for warning in session.add_joint_states(
                run.t,
                run.names,
                q,
                dq if dq.shape[1] else None,
                effort if effort.shape[1] else None,
            ):
                warn(warning)
            return
        for k in range(len(run)):
            warn(session.add_joint_state(float(run.t[k]), run.names, q[k], dq[k], effort[k]))

    def _drain_more(self) -> None:
        """The mode's other inputs (lock held)."""

    @property
    def queue_overflow(self) -> int:
        """Messages dropped because an input queue was full."""
        return sum(inbox.overflow for inbox in self._inboxes)

    def matched_publishers(self) -> dict[str, int]:
        """For each input topic (resolved name), how many publishers its subscription has
        matched: once a peer's publisher is counted here, what it publishes reaches the node
        (DDS discovery runs each way on its own)."""
        return {
            subscription.topic_name: subscription.get_publisher_count()
            for subscription in self._subscriptions
        }

    @property
    def latest_joint_state(self) -> JointState | None:
        """The newest joint state received."""
        return self._joint_states.newest_message

    @property
    def latest_joint_state_age(self) -> float:
        """How long ago the newest joint state arrived (s, wall time; ``inf``: none yet)."""
        return time.monotonic() - self._joint_states.newest_arrival

    @abc.abstractmethod
    def publish(self, update: Update, markers: bool = True) -> None:
        """Publish what the periodic ``update`` gave (and its markers, when ``markers``)."""

    def publish_change(self, update: Update) -> None:
        """Publish the payload change ``update`` detected (periodic or ``identify``); none by
        default."""

    @abc.abstractmethod
    def respond(self, response: Any, update: Update) -> None:
        """Fill ``response`` (an ``Identify`` response, an ``ExcitationStatus``) with the
        estimate of ``update``."""
