"""Replay a ROS 2 bag or a described log through the node's online session; record simulated
bags to replay.

**Replay** (:func:`replay_bag`, ``inertia-id replay``): the bag's ``JointState`` and
``WrenchStamped`` messages go to a
:class:`~inertia_id_ros.online.payload_session.PayloadSession` -- the session the node runs, built
by :func:`~inertia_id_ros.online.payload_session.payload_session` from the node's parameters of
the same names -- in arrival order (the bag's log times, as the node's subscriptions got them;
stamps from the headers, as the node's callbacks use them; rejected samples are counted, not
fatal). Every ``1 / update_rate_hz`` seconds of bag time, starting one
period after the first message, the session updates as the node's worker does: process, payload
change detection (the window then keeps only the new payload's samples), a warm-started solve;
one more update follows the last message. Each update gives an estimate or the reason there is
none (:class:`~inertia_id_ros.online.session.Update`), and every payload change is listed
(:attr:`Replay.payload_changes`).

**Every mode** (its :meth:`~inertia_id_ros.modes.Mode.replay`, ``inertia-id replay
--params-file``): a session the node builds from its parameters, fed the same way with the calls
of the node's mode (:class:`ReplayInputs`): :func:`replay_payload`; :func:`replay_links` and
:func:`replay_payload_torques` (joint states with efforts only); :func:`replay_whole_body` (joint
states with efforts, ``sensor_msgs/Imu`` and each F/T sensor's ``WrenchStamped``, a topic's
wrenches to its sensor's frame).

**Described logs** (``inertia-id replay --input``): a log loaded through an input description
(:class:`~inertia_id_ros.formats.description.Recording`: names, units, signs, held joints and clock
offsets applied) goes through the same loop, its samples in stamp order
(:func:`recording_messages`; the held joints as constant columns). Either way the joint states'
units are checked as they pass (:class:`JointStateRange`: degrees? milliseconds?), as the fit
commands check theirs.

**Record** (:func:`record_simulation`, ``inertia-id record-sim``): a rosbag2 (MCAP or sqlite3)
written with rosbags (no DDS) of the simulated Panda that ``inertia-id-sim`` publishes
(:class:`~inertia_id_ros.sim.payload.PayloadSimulator`: payload, F/T offset, noise, stamps
``start + k / rate``): ``sensor_msgs/JointState`` on ``/joint_states`` (positions and velocities of
the 7 arm joints), ``geometry_msgs/WrenchStamped`` on ``/ft_sensor/wrench`` in ``panda_link8``,
each logged :data:`TRANSPORT_LATENCY` after its stamp, and the URDF on ``/robot_description``
(``std_msgs/String``, once at the start, as ``robot_state_publisher`` latches it). A
``payload_change_at`` time switches the simulated payload there (a grasp).
:func:`record_joint_torques` writes a robot without an F/T sensor (joint states with efforts,
:class:`~inertia_id_ros.sim.torques.JointTorqueSimulator`; ``record-sim --robot
panda_torques``). :func:`record_whole_body` writes the bag of a simulated floating-base robot
(:mod:`~inertia_id_ros.sim.whole_body_simulator`) with the topics and frames of the simulator node
(``inertia-id-sim``'s ``*_whole_body`` robots): ``/joint_states``, ``/imu`` and
``/<frame>/wrench`` per F/T sensor, all with the same stamps, each logged
:data:`TRANSPORT_LATENCY` after it, and the CAD URDF (the prior) on ``/robot_description``.
"""

from __future__ import annotations

import contextlib
import csv
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Generic, Protocol, TypeVar

import numpy as np

from inertia_id_ros.core.covariance import com_covariance
from inertia_id_ros.core.inertia import THETA_NAMES
from inertia_id_ros.core.kinematics import SensorKinematics
from inertia_id_ros.core.regressors import WRENCH_CHANNEL_NAMES
from inertia_id_ros.core.robots import load_model
from inertia_id_ros.errors import DataError
from inertia_id_ros.findings import Finding
from inertia_id_ros.formats.data import (
    DEFAULT_JOINT_STATES_TOPIC,
    DEFAULT_WRENCH_TOPIC,
    IMU_TYPE,
    JOINT_STATE_TYPE,
    ROBOT_DESCRIPTION_TOPIC,
    STRING_TYPE,
    WRENCH_TYPE,
    header_seconds,
    iter_bag_messages,
    read_bag_messages,
    wrench_values,
)
from inertia_id_ros.formats.description import Recording
from inertia_id_ros.formats.units import check_time_units, position_unit_findings
from inertia_id_ros.offline.plausibility import (
    Volume,
    payload_fit_findings,
    payload_volume,
    pinned_mass_findings,
    volume_findings,
)
from inertia_id_ros.online.change_detection import ChangeEvent
from inertia_id_ros.online.link_estimator import LinkEstimate
from inertia_id_ros.online.link_session import LinkSession
from inertia_id_ros.online.payload_estimator import Estimate, EstimatorConfig, PayloadEstimateBase
from inertia_id_ros.online.payload_session import (
    PayloadSession,
    PayloadTorqueSession,
    payload_session,
)
from inertia_id_ros.online.payload_torque_estimator import PayloadTorqueEstimatorConfig
from inertia_id_ros.online.session import Session, Update
from inertia_id_ros.online.whole_body_estimator import WholeBodyEstimate
from inertia_id_ros.online.whole_body_session import WholeBodySession

if TYPE_CHECKING:
    import pinocchio as pin


EstimateT = TypeVar("EstimateT")
"""The estimate type of a replay's updates."""

ReplayLog = str | Path | Recording
"""What a replay reads: a bag (its path), or a log loaded through an input description
(:func:`~inertia_id_ros.formats.description.load_recording`)."""

CHECKED_STAMPS = 2000
"""Joint-state stamps a replay keeps for the time-unit check (the first ones)."""


class ReplaySession(Protocol):
    """What a replay drives (a :class:`~inertia_id_ros.online.session.Session`)."""

    def add_joint_state(
        self, t: float, names: Any, q: Any, dq: Any = None, effort: Any = None
    ) -> Any:
        """Offer a joint state at ``t`` (s): ``q`` (rad or m), ``dq``, ``effort``; ``None`` when
        taken."""
        ...

    def update(self, now: float | None = None) -> Update:
        """One periodic update at the caller's time ``now`` (s; default: ``time.time()``)."""
        ...


@dataclass
class ReplayUpdates(Generic[EstimateT]):
    """What every replay gives: its updates, the time of its first message ``start_time`` (s),
    the estimator's counters (``received`` by input, ``dropped`` by reason), what was replayed
    (``source``) at which rate, and the findings of the input's units (``input_findings``:
    :meth:`JointStateRange.findings`)."""

    updates: list[Update]
    start_time: float
    received: dict[str, int]
    dropped: dict[str, int]
    source: str = field(default="", kw_only=True)
    update_rate_hz: float = field(default=0.0, kw_only=True)
    input_findings: list[Finding] = field(default_factory=list, kw_only=True)

    @property
    def estimates(self) -> list[Update]:
        """The updates that gave an estimate."""
        return [update for update in self.updates if update.estimate is not None]

    @property
    def final(self) -> EstimateT | None:
        """The last estimate (``None`` if there was none)."""
        estimates = self.estimates
        return estimates[-1].estimate if estimates else None


@dataclass
class Replay(ReplayUpdates[PayloadEstimateBase]):
    """The updates of a payload replay (:class:`ReplayUpdates`), from an F/T sensor or from
    joint torques: the payload changes detected, the payload's frame (``sensor_frame``: the
    F/T sensor's, or the frame the payload is attached to), what each entry of the estimates'
    ``sensor_offset`` is (``offset_names``: the wrench channels, or the joints whose torque
    offsets moved) and the estimator's settings (``config``)."""

    payload_changes: list[ChangeEvent] = field(default_factory=list)
    sensor_frame: str = ""
    offset_names: tuple[str, ...] = WRENCH_CHANNEL_NAMES
    config: EstimatorConfig | PayloadTorqueEstimatorConfig = field(default_factory=EstimatorConfig)
    findings: list[Finding] = field(default_factory=list)
    """The plausibility findings of the final estimate (:func:`payload_replay_findings`)."""


Feed = Callable[[Any], Any]
"""What a replay does with one message of a topic (a deserialised bag message, or a row index
of a recording's stream: :func:`recording_messages`): a session's ``add_*`` call, as the node's
callback makes it."""


def replay_feeds(
    session: ReplaySession,
    messages: Iterable[tuple[str, int, Any]],
    update_rate_hz: float,
    feeds: Mapping[str, Feed],
) -> tuple[list[Update], float]:
    """Feed ``messages`` ((topic, log time (ns), message), in log-time order) to ``session``
    through ``feeds`` (topic -> :data:`Feed`), updating every ``1 / update_rate_hz`` s of log
    time, starting one period after the first message, and once after the last; returns the
    updates and the first message's log time (s). Messages on other topics are skipped."""
    if not update_rate_hz > 0:
        raise ValueError(f"update_rate_hz must be positive, got {update_rate_hz}")
    period = 1.0 / update_rate_hz
    updates: list[Update] = []
    start = next_update = None
    for topic, log_time, msg in messages:
        now = 1e-9 * log_time
        if start is None:
            start, next_update = now, now + period
        while now >= next_update:
            updates.append(session.update(next_update))
            next_update += period
        feed = feeds.get(topic)
        if feed is not None:
            feed(msg)
    if start is None:
        raise ValueError("no messages to replay")
    updates.append(session.update(next_update))
    return updates, start


class JointStateRange:
    """Each joint's lowest and highest position and the first :data:`CHECKED_STAMPS` stamps of
    the joint states a replay feeds, gathered as they pass: the input's units are checked after
    the replay (:meth:`findings`) as the fit commands check theirs before fitting, without
    keeping the samples."""

    def __init__(self) -> None:
        self._columns: dict[str, int] = {}
        self._layouts: dict[tuple[str, ...], np.ndarray] = {}
        self._low = np.zeros(0)
        self._high = np.zeros(0)
        self._stamps: list[float] = []

    def add(self, t: float, names: Sequence[str], q: Any) -> None:
        """A joint state: stamp ``t`` (s), positions ``q`` of ``names`` (one that does not match
        its names is skipped: the session rejects it)."""
        if len(self._stamps) < CHECKED_STAMPS:
            self._stamps.append(float(t))
        q = np.asarray(q, dtype=float)
        key = tuple(names)
        if q.shape != (len(key),):
            return
        columns = self._layouts.get(key)
        if columns is None:
            for name in key:
                self._columns.setdefault(name, len(self._columns))
            grow = len(self._columns) - self._low.size
            self._low = np.append(self._low, np.full(grow, np.inf))
            self._high = np.append(self._high, np.full(grow, -np.inf))
            columns = self._layouts[key] = np.array([self._columns[n] for n in key], dtype=int)
        self._low[columns] = np.fmin(self._low[columns], q)
        self._high[columns] = np.fmax(self._high[columns], q)

    def findings(self, model: pin.Model) -> list[Finding]:
        """The stamps' unit (:func:`~inertia_id_ros.offline.plausibility.check_time_units`) and the
        positions' against ``model``'s limits
        (:func:`~inertia_id_ros.offline.plausibility.position_unit_findings`; joints never given a
        finite position are skipped)."""
        names = [name for name, k in self._columns.items() if self._low[k] <= self._high[k]]
        columns = [self._columns[name] for name in names]
        return check_time_units(
            np.array(self._stamps), "joint state stamps"
        ) + position_unit_findings(
            np.vstack([self._low[columns], self._high[columns]]), names, model
        )


@dataclass(frozen=True)
class ReplayInputs:
    """What a replay feeds a session, as the node's mode feeds it: the joint states on
    ``joint_states_topic`` (every mode: positions, velocities and efforts, an empty array as
    ``None``); the wrenches of ``wrench_topics`` (topic -> the F/T sensor frames it feeds)
    through ``add_wrench(frame, t (s), wrench (6,) (N, N m), frame_id)``; the IMU readings on
    ``imu_topic`` (empty: none) through ``add_imu(t (s), angular velocity (3,) (rad/s), specific
    force (3,) (m/s^2), frame_id)``."""

    joint_states_topic: str
    wrench_topics: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    add_wrench: Callable[[str, float, np.ndarray, str], Any] | None = None
    imu_topic: str = ""
    add_imu: Callable[[float, np.ndarray, np.ndarray, str], Any] | None = None


def payload_replay_inputs(
    session: PayloadSession,
    sensor_frame: str,
    joint_states_topic: str = DEFAULT_JOINT_STATES_TOPIC,
    wrench_topic: str = DEFAULT_WRENCH_TOPIC,
) -> ReplayInputs:
    """The inputs of the node's payload mode: joint states, and the wrenches of the F/T sensor
    at ``sensor_frame`` on ``wrench_topic`` (``frame_id`` checked by the session)."""
    return ReplayInputs(
        joint_states_topic,
        {wrench_topic: (sensor_frame,)},
        lambda frame, t, wrench, frame_id: session.add_wrench(t, wrench, frame_id),
    )


def whole_body_replay_inputs(
    session: WholeBodySession, joint_states_topic: str, imu_topic: str, ft_topics: Mapping[str, str]
) -> ReplayInputs:
    """The inputs of the node's whole_body mode: joint states, IMU readings (none when
    ``imu_topic`` is empty: a fixed or suspended base without an IMU) and the wrenches of
    ``ft_topics`` (topic -> sensor frame; ``frame_id`` checked by the session)."""
    frames_of: dict[str, tuple[str, ...]] = {}
    for topic, frame in ft_topics.items():
        frames_of[topic] = frames_of.get(topic, ()) + (frame,)
    return ReplayInputs(
        joint_states_topic,
        frames_of,
        session.add_wrench,
        imu_topic,
        session.add_imu if imu_topic else None,
    )


def bag_feeds(
    session: ReplaySession, inputs: ReplayInputs, joints: JointStateRange
) -> dict[str, Feed]:
    """The :data:`Feed` of each topic of ``inputs`` for deserialised bag messages, each with its
    header stamp; the joint states pass through ``joints``."""

    def joint_state(msg: Any) -> None:
        t = header_seconds(msg.header)
        joints.add(t, msg.name, msg.position)
        session.add_joint_state(
            t, msg.name, msg.position, _values(msg.velocity), _values(msg.effort)
        )

    def wrench(frames: tuple[str, ...]) -> Feed:
        def feed(msg: Any) -> None:
            for frame in frames:
                inputs.add_wrench(
                    frame,
                    header_seconds(msg.header),
                    np.array(wrench_values(msg)),
                    msg.header.frame_id,
                )

        return feed

    def imu(msg: Any) -> None:
        w, a = msg.angular_velocity, msg.linear_acceleration
        inputs.add_imu(
            header_seconds(msg.header),
            np.array([w.x, w.y, w.z]),
            np.array([a.x, a.y, a.z]),
            msg.header.frame_id,
        )

    feeds = {
        inputs.joint_states_topic: joint_state,
        **{topic: wrench(frames) for topic, frames in inputs.wrench_topics.items()},
    }
    if inputs.imu_topic:
        feeds[inputs.imu_topic] = imu
    return feeds


def _values(array: Any) -> Any:
    """A message's array, or ``None`` when it is empty (as the node passes it)."""
    return array if len(array) else None


JOINT_STATES_STREAM, IMU_STREAM = "joint_states", "imu"
"""Topics of a recording's joint states and IMU in :func:`recording_messages`."""


def wrench_stream(frame: str) -> str:
    """The topic of the F/T sensor at ``frame`` in :func:`recording_messages`."""
    return f"wrench:{frame}"


def recording_messages(recording: Recording) -> Iterator[tuple[str, int, int]]:
    """Every sample of ``recording`` as a replay message ``(topic, stamp (ns), row)`` in stamp
    order (at equal stamps: joint states, then the F/T sensors as described, then the IMU):
    :data:`JOINT_STATES_STREAM`, :func:`wrench_stream` per F/T sensor, :data:`IMU_STREAM`;
    ``row`` indexes the sample in its stream's arrays."""
    stamps = {
        JOINT_STATES_STREAM: recording.joint_states.t,
        **{wrench_stream(frame): w.t for frame, w in recording.wrenches.items()},
        **({} if recording.imu is None else {IMU_STREAM: recording.imu.t}),
    }
    topics = list(stamps)
    t = np.concatenate(list(stamps.values()))
    stream = np.concatenate([np.full(v.size, k) for k, v in enumerate(stamps.values())])
    rows = np.concatenate([np.arange(v.size) for v in stamps.values()])
    for i in np.lexsort((stream, t)):
        yield topics[stream[i]], int(round(t[i] * 1e9)), int(rows[i])


def recording_feeds(
    session: ReplaySession, inputs: ReplayInputs, recording: Recording, joints: JointStateRange
) -> dict[str, Feed]:
    """The :data:`Feed` of each stream of :func:`recording_messages` that ``inputs`` take: the
    joint states (with the held joints' constant columns), the F/T sensors of
    ``inputs.wrench_topics``' frames, the IMU with an ``imu_topic``. Raises
    :class:`~inertia_id_ros.errors.DataError` when the recording lacks one of them."""
    states = recording.with_held_columns()
    names = states.joint_names

    def joint_state(k: int) -> None:
        joints.add(states.t[k], names, states.q[k])
        session.add_joint_state(
            states.t[k],
            names,
            states.q[k],
            None if states.dq is None else states.dq[k],
            None if states.effort is None else states.effort[k],
        )

    def wrench(frame: str) -> Feed:
        if frame not in recording.wrenches:
            raise DataError(
                f"{recording.source}: no F/T sensor at {frame!r} (described: "
                f"{', '.join(recording.wrenches) or 'none'})"
            )
        samples = recording.wrenches[frame]
        return lambda k: inputs.add_wrench(frame, samples.t[k], samples.wrench[k], frame)

    feeds = {
        JOINT_STATES_STREAM: joint_state,
        **{
            wrench_stream(frame): wrench(frame)
            for frames in inputs.wrench_topics.values()
            for frame in frames
        },
    }
    if inputs.imu_topic:
        imu = recording.imu
        if imu is None:
            raise DataError(
                f"{recording.source}: no IMU described (the session reads {inputs.imu_topic!r})"
            )
        feeds[IMU_STREAM] = lambda k: inputs.add_imu(
            imu.t[k],
            imu.values["angular_velocity"][k],
            imu.values["linear_acceleration"][k],
            imu.frame,
        )
    return feeds


def replay_log(
    session: Session, log: ReplayLog, update_rate_hz: float, inputs: ReplayInputs, model: pin.Model
) -> dict[str, Any]:
    """Replay ``log`` (a bag, read one message at a time in log-time order, or a recording, in
    stamp order) through ``session`` (:func:`replay_feeds`); the :class:`ReplayUpdates` fields
    of the replay, the input's units checked against ``model`` (its joint limits). A bag must
    hold every topic of ``inputs`` with messages (:class:`~inertia_id_ros.errors.DataError`
    naming it otherwise)."""
    joints = JointStateRange()
    if isinstance(log, Recording):
        updates, start = replay_feeds(
            session,
            recording_messages(log),
            update_rate_hz,
            recording_feeds(session, inputs, log, joints),
        )
        source = log.source
    else:
        topics = [
            (inputs.joint_states_topic, JOINT_STATE_TYPE),
            *([(inputs.imu_topic, IMU_TYPE)] if inputs.imu_topic else []),
            *((topic, WRENCH_TYPE) for topic in inputs.wrench_topics),
        ]
        with contextlib.closing(iter_bag_messages(log, topics)) as messages:  # closed on errors
            updates, start = replay_feeds(
                session, messages, update_rate_hz, bag_feeds(session, inputs, joints)
            )
        source = str(log)
    stats = session.estimator.stats()
    return {
        "updates": updates,
        "start_time": start,
        "received": stats.received,
        "dropped": stats.dropped,
        "source": source,
        "update_rate_hz": update_rate_hz,
        "input_findings": joints.findings(model),
    }


def replay_bag(
    log: ReplayLog,
    sensor_frame: str | None = None,
    urdf: str | Path | None = None,
    joint_states_topic: str = DEFAULT_JOINT_STATES_TOPIC,
    wrench_topic: str = DEFAULT_WRENCH_TOPIC,
    update_rate_hz: float = 2.0,
    settings: Mapping[str, Any] | None = None,
) -> Replay:
    """Replay ``log`` (a rosbag2 directory or one ``.mcap``/``.db3`` file, or a recording)
    through the node's payload session for the F/T sensor frame ``sensor_frame`` (default: a
    bag's first wrench's ``frame_id``, a recording's only F/T sensor; see the module docstring);
    ``settings``: the node's parameters (keyword arguments of
    :func:`~inertia_id_ros.online.payload_session.payload_session`: window_sec, method,
    estimate_offset, flip_wrench_sign, detect_payload_change, ...). The robot comes from the
    URDF file ``urdf``, else from a bag's last ``/robot_description``. Raises
    :class:`~inertia_id_ros.errors.DataError` (bag, recording), ``OSError`` or ``ValueError``
    (URDF, settings), :class:`~inertia_id_ros.errors.FrameNotFound` (sensor frame)."""
    recording = log if isinstance(log, Recording) else None
    if urdf is None:
        description = None if recording is not None else bag_robot_description(log)
        if description is None:
            raise DataError(
                f"{recording.source if recording else log}: no "
                f"{ROBOT_DESCRIPTION_TOPIC} in the bag; give the URDF"
            )
        model = load_model(urdf_xml=description)
    else:
        model = load_model(urdf_path=urdf)
    if sensor_frame is None and recording is not None:
        if len(recording.wrenches) != 1:
            raise DataError(
                f"{recording.source}: describes {len(recording.wrenches)} F/T "
                "sensors; give the sensor frame"
            )
        sensor_frame = next(iter(recording.wrenches))
    elif sensor_frame is None:
        sensor_frame = next(
            msg.header.frame_id
            for topic, _, msg in iter_bag_messages(
                log, [(joint_states_topic, JOINT_STATE_TYPE), (wrench_topic, WRENCH_TYPE)]
            )
            if topic == wrench_topic
        )
        if not sensor_frame:
            raise DataError(f"{log}: the wrenches name no frame_id; give the sensor frame")
    session = payload_session(SensorKinematics(model, sensor_frame), **(settings or {}))
    return replay_payload(log, session, update_rate_hz, joint_states_topic, wrench_topic)


def replay_payload(
    log: ReplayLog,
    session: PayloadSession,
    update_rate_hz: float,
    joint_states_topic: str = DEFAULT_JOINT_STATES_TOPIC,
    wrench_topic: str = DEFAULT_WRENCH_TOPIC,
    volume: Volume | None = None,
) -> Replay:
    """Replay ``log`` through a payload ``session`` built elsewhere (the node's, from its
    parameters), as :func:`replay_bag` does; ``volume``: the payload's bounding volume the
    final estimate is checked against (default
    :func:`~inertia_id_ros.offline.plausibility.payload_volume`'s sphere)."""
    kinematics = session.estimator.kinematics
    inputs = payload_replay_inputs(
        session, kinematics.sensor_frame, joint_states_topic, wrench_topic
    )
    replay = Replay(
        **replay_log(session, log, update_rate_hz, inputs, kinematics.model),
        payload_changes=list(session.changes),
        sensor_frame=kinematics.sensor_frame,
        config=session.estimator.config,
    )
    replay.findings = payload_replay_findings(session, replay.final, volume or payload_volume())
    return replay


def payload_replay_findings(
    session: PayloadSession, final: Estimate | None, volume: Volume
) -> list[Finding]:
    """The plausibility findings of a replay's ``final`` estimate
    (:func:`~inertia_id_ros.offline.plausibility.payload_fit_findings`, the payload in ``volume``)
    on the window's samples it was fitted to; none without an estimate or when the window
    restarted after it (a payload change)."""
    if final is None:
        return []
    estimator = session.estimator
    t, Y, f = estimator.window.samples()
    fitted = (t >= final.t_first) & (t <= final.t_last)
    if not fitted.any():
        return []
    findings, _ = payload_fit_findings(
        estimator.kinematics.sensor_frame,
        Y[fitted],
        f[fitted],
        final,
        estimator.config.estimate_offset,
        volume,
    )
    return findings


def replay_payload_torques(
    log: ReplayLog,
    session: PayloadTorqueSession,
    update_rate_hz: float,
    joint_states_topic: str = DEFAULT_JOINT_STATES_TOPIC,
    volume: Volume | None = None,
) -> Replay:
    """Replay ``log``'s joint states with efforts through a payload-torques ``session`` (the
    node's); the final estimate's COM checked against ``volume``, the payload's bounding volume
    (default :func:`~inertia_id_ros.offline.plausibility.payload_volume`'s sphere;
    :func:`~inertia_id_ros.offline.plausibility.volume_findings`, as ``fit-payload-torques``). The
    estimates' ``sensor_offset`` are the joints' torque offset changes (N m)."""
    estimator = session.estimator
    config = estimator.config
    replay = Replay(
        **replay_log(
            session, log, update_rate_hz, ReplayInputs(joint_states_topic), estimator.links.model
        ),
        payload_changes=list(session.changes),
        sensor_frame=config.frame,
        offset_names=tuple(estimator.joint_names),
        config=config,
    )
    final = replay.final
    replay.findings = (
        [] if final is None else volume_findings("payload", final.theta, volume or payload_volume())
    )
    return replay


@dataclass
class LinksReplay(ReplayUpdates[LinkEstimate]):
    """The updates of a links replay (:class:`ReplayUpdates`) and the session replayed
    (``session``: its estimator's chain and settings)."""

    session: LinkSession

    @property
    def findings(self) -> list[Finding]:
        """The plausibility findings of the final estimate: the links whose mass sits at its
        bound (:func:`~inertia_id_ros.offline.plausibility.pinned_mass_findings`; not for ``ols``).
        The window keeps no unconstrained fit to compare residuals with."""
        final = self.final
        if final is None or final.method == "ols":
            return []
        chain = self.session.estimator.link_model
        prior = np.asarray(chain.prior)[: 10 * chain.n_joints].reshape(-1, 10)
        return pinned_mass_findings(final.link_names, final.thetas[:, 0], prior[:, 0])


def replay_links(
    log: ReplayLog,
    session: LinkSession,
    update_rate_hz: float,
    joint_states_topic: str = DEFAULT_JOINT_STATES_TOPIC,
) -> LinksReplay:
    """Replay ``log``'s joint states with efforts through a links ``session`` (the node's)."""
    chain = session.estimator.link_model
    return LinksReplay(
        **replay_log(session, log, update_rate_hz, ReplayInputs(joint_states_topic), chain.model),
        session=session,
    )


@dataclass
class WholeBodyReplay(ReplayUpdates[WholeBodyEstimate]):
    """The updates of a whole-body replay (:class:`ReplayUpdates`): the session replayed
    (``session``: its estimator's model and settings, its counters), the F/T sensors stopped at
    the end (``stopped_sensors``) and every stop or resumption an update reported
    (``sensor_events``: ``(time (s of bag time), kind ("sensor_stopped" or "sensor_resumed"),
    message)``)."""

    session: WholeBodySession
    stopped_sensors: tuple[str, ...] = ()
    sensor_events: list[tuple[float, str, str]] = field(default_factory=list)

    @property
    def findings(self) -> list[Finding]:
        """The plausibility findings of the final estimate: the links whose mass sits at its
        bound (:func:`~inertia_id_ros.offline.plausibility.pinned_mass_findings`; not for ``ols``).
        The window keeps normal equations, not samples: no residual ratios."""
        final = self.final
        if final is None or final.method == "ols":
            return []
        model = self.session.estimator.model
        prior = model.link_prior[[model.links.index(b) for b in final.link_names]]
        return pinned_mass_findings(final.link_names, final.thetas[:, 0], prior[:, 0])


SENSOR_EVENTS = ("sensor_stopped", "sensor_resumed")
"""Warning kinds of a whole-body update that :attr:`WholeBodyReplay.sensor_events` lists."""


def replay_whole_body(
    log: ReplayLog,
    session: WholeBodySession,
    update_rate_hz: float,
    joint_states_topic: str,
    imu_topic: str,
    ft_topics: Mapping[str, str],
) -> WholeBodyReplay:
    """Replay ``log`` through ``session`` (see the module docstring), updating every
    ``1 / update_rate_hz`` s of bag time; ``ft_topics``: topic -> sensor frame (a recording's
    F/T sensors are taken by frame)."""
    inputs = whole_body_replay_inputs(session, joint_states_topic, imu_topic, ft_topics)
    fields = replay_log(session, log, update_rate_hz, inputs, session.estimator.model.model)
    events = [
        (update.time, kind, message)
        for update in fields["updates"]
        for kind, message in update.warnings
        if kind in SENSOR_EVENTS
    ]
    return WholeBodyReplay(
        **fields,
        session=session,
        stopped_sensors=session.estimator.stopped_sensors,
        sensor_events=events,
    )


def bag_robot_description(path: str | Path) -> str | None:
    """The last URDF on :data:`ROBOT_DESCRIPTION_TOPIC` in the bag ``path`` (``None`` if none)."""
    messages = read_bag_messages(path, [], optional=[(ROBOT_DESCRIPTION_TOPIC, STRING_TYPE)])
    return messages[-1][2].data if messages else None


def change_record(event: ChangeEvent) -> dict[str, Any]:
    """A payload change as a JSON-ready record: ``time`` (s of bag time, the stamp of the
    sample that raised it), ``onset`` (s), ``samples``, ``residual_mean`` (6,) (N, N m), and
    the ``message``."""
    return {
        "time": event.t_detected,
        "onset": event.t_onset,
        "samples": event.n_samples,
        "residual_mean": [float(v) for v in event.residual_mean],
        "message": str(event),
    }


# ---- output --------------------------------------------------------------------------------


def csv_columns(offset_names: Sequence[str] = WRENCH_CHANNEL_NAMES) -> tuple[str, ...]:
    """Columns of :func:`write_csv` for offsets named ``offset_names``: bag time and time since
    the first message (s), the status (``ok`` or why there is no estimate; numbers ``nan``
    then), the samples in the window, ``theta`` (SI), the offsets (F/T: N, N m; joints: N m),
    standard deviations of ``theta``, COM and its standard deviations (m, the payload's frame),
    consistency margin (kg m^2), residual RMS, excitation condition number, solve time (s)."""
    return (
        ("time", "elapsed", "status", "method", "n_samples")
        + THETA_NAMES
        + tuple(f"offset_{n}" for n in offset_names)
        + tuple(f"std_{n}" for n in THETA_NAMES)
        + ("com_x", "com_y", "com_z")
        + ("std_com_x", "std_com_y", "std_com_z")
        + ("min_pseudo_inertia_eig", "residual_rms", "condition_number", "solve_time")
    )


CSV_COLUMNS = csv_columns()
"""Columns of :func:`write_csv` of a payload replay from an F/T sensor."""


def update_record(
    update: Update, start_time: float, offset_names: Sequence[str] = WRENCH_CHANNEL_NAMES
) -> dict[str, Any]:
    """One update as a flat record with :func:`csv_columns` keys (JSON-ready)."""
    record: dict[str, Any] = dict.fromkeys(csv_columns(offset_names), float("nan"))
    record.update(
        time=update.time,
        elapsed=update.time - start_time,
        status=update.status,
        method="",
        n_samples=0,
    )
    estimate = update.estimate
    if estimate is None:
        return record
    com_std = np.sqrt(
        np.clip(np.diag(com_covariance(estimate.theta, estimate.covariance)), 0.0, None)
    )
    values = {
        "method": estimate.method,
        "n_samples": estimate.n_samples,
        **dict(zip(THETA_NAMES, estimate.theta)),
        **{f"offset_{n}": v for n, v in zip(offset_names, estimate.sensor_offset)},
        **{f"std_{n}": v for n, v in zip(THETA_NAMES, estimate.theta_std)},
        **{f"com_{a}": v for a, v in zip("xyz", estimate.com)},
        **{f"std_com_{a}": v for a, v in zip("xyz", com_std)},
        "min_pseudo_inertia_eig": estimate.min_pseudo_inertia_eig,
        "residual_rms": estimate.residual_rms,
        "condition_number": estimate.condition_number,
        "solve_time": estimate.solve_time,
    }
    record.update(
        {
            key: value
            if isinstance(value, str)
            else (int(value) if key == "n_samples" else float(value))
            for key, value in values.items()
        }
    )
    return record


def write_csv(replay: Replay, path: str | Path) -> None:
    """One row per update, columns :func:`csv_columns` of the replay's offsets."""
    with open(path, "w", newline="") as stream:
        writer = csv.DictWriter(stream, fieldnames=csv_columns(replay.offset_names))
        writer.writeheader()
        for update in replay.updates:
            writer.writerow(
                {
                    key: (f"{value:.12g}" if isinstance(value, float) else value)
                    for key, value in update_record(
                        update, replay.start_time, replay.offset_names
                    ).items()
                }
            )


WHOLE_BODY_CSV_COLUMNS = (
    "time",
    "elapsed",
    "status",
    "method",
    "n_samples",
    "residual_rms",
    "min_pseudo_inertia_eig",
    "rank",
    "n_params",
    "identified",
    "partly_identified",
    "prior_only",
    "stopped_sensors",
    "solve_time",
    "message",
)
"""Columns of :func:`write_whole_body_csv` (then ``mass.<link>`` per identified link, kg): bag
time and time since the first message (s), ``ok`` or why there is no estimate (numbers empty
then), the IMU samples in the window, residual RMS of the rows, the smallest pseudo-inertia
eigenvalue over the links (kg m^2), the base-parameter rank of the parameters, the links per
identifiability label, the sensors whose rows were dropped (space-separated), the solve time
(s), the update's message."""


def whole_body_update_record(
    update: Update, start_time: float, with_estimate: bool = True
) -> dict[str, Any]:
    """One whole-body update as a record with :data:`WHOLE_BODY_CSV_COLUMNS` keys (``None``
    where there is no estimate) and, with ``with_estimate`` and an estimate, ``thetas`` {link:
    (10,)} and ``sensor_offsets`` {frame: (6,)} (JSON-ready)."""
    return _links_update_record(
        update,
        start_time,
        WHOLE_BODY_CSV_COLUMNS,
        _whole_body_columns,
        _sensor_offsets if with_estimate else None,
    )


def _whole_body_columns(estimate: WholeBodyEstimate) -> dict[str, Any]:
    """A whole-body estimate's own columns: parameters, links per identifiability label, the
    sensors whose rows were dropped."""
    labels = list(estimate.labels)
    return {
        "n_params": int(estimate.n_params),
        "identified": labels.count("identified"),
        "partly_identified": labels.count("partly identified"),
        "prior_only": labels.count("prior only"),
        "stopped_sensors": " ".join(estimate.stopped_sensors),
    }


def _sensor_offsets(estimate: WholeBodyEstimate) -> dict[str, Any]:
    """``sensor_offsets`` {frame: (6,)} of a whole-body estimate (JSON-ready)."""
    return {
        "sensor_offsets": {
            frame: np.asarray(offset).tolist() for frame, offset in estimate.offsets.items()
        }
    }


def write_whole_body_csv(replay: WholeBodyReplay, path: str | Path) -> None:
    """One row per update: :data:`WHOLE_BODY_CSV_COLUMNS`, then ``mass.<link>`` (kg)."""
    _write_link_csv(
        path,
        WHOLE_BODY_CSV_COLUMNS,
        replay.session.estimator.model.bodies,
        replay.updates,
        lambda update: whole_body_update_record(update, replay.start_time, False),
    )


LINKS_CSV_COLUMNS = (
    "time",
    "elapsed",
    "status",
    "method",
    "n_samples",
    "residual_rms",
    "min_pseudo_inertia_eig",
    "rank",
    "unidentifiable",
    "solve_time",
    "message",
)
"""Columns of :func:`write_links_csv` (then ``mass.<link>`` per link, kg): bag time and time
since the first message (s), ``ok`` or why there is no estimate (numbers empty then), the joint
states in the window, residual RMS of the joint torques (N m), the smallest pseudo-inertia
eigenvalue over the links (kg m^2), the base-parameter rank, the parameters the data cannot fix
(space-separated), the solve time (s), the update's message."""


def links_update_record(
    update: Update, start_time: float, with_estimate: bool = True
) -> dict[str, Any]:
    """One links update as a record with :data:`LINKS_CSV_COLUMNS` keys (``None`` where there
    is no estimate) and, with ``with_estimate`` and an estimate, ``thetas`` {link: (10,)} and
    ``drives`` {joint: {term: value}} (JSON-ready)."""
    return _links_update_record(
        update,
        start_time,
        LINKS_CSV_COLUMNS,
        lambda estimate: {"unidentifiable": " ".join(estimate.unidentifiable)},
        _drives if with_estimate else None,
    )


def _drives(estimate: LinkEstimate) -> dict[str, Any]:
    """``drives`` {joint: {term: value}} of a links estimate (JSON-ready)."""
    return {
        "drives": {
            joint: {term: float(value) for term, value in vars(drive).items()}
            for joint, drive in estimate.drives.items()
        }
    }


def _links_update_record(
    update: Update,
    start_time: float,
    columns: tuple[str, ...],
    own_columns: Callable[[Any], dict[str, Any]],
    arrays: Callable[[Any], dict[str, Any]] | None,
) -> dict[str, Any]:
    """One update of a replay of links (the links or the whole-body mode) as a record with
    ``columns`` keys (``None`` where there is no estimate): bag time, time since ``start_time``
    (s), status, message and, with an estimate, what every links estimate has (method, samples,
    residual RMS, the smallest pseudo-inertia eigenvalue over the links, rank, solve time) and
    ``own_columns(estimate)``; with ``arrays`` too, ``thetas`` {link: (10,)} and
    ``arrays(estimate)`` (JSON-ready)."""
    record: dict[str, Any] = dict.fromkeys(columns)
    record.update(
        time=update.time,
        elapsed=update.time - start_time,
        status=update.status,
        message=update.message,
    )
    estimate = update.estimate
    if estimate is None:
        return record
    record.update(
        method=estimate.method,
        n_samples=int(estimate.n_samples),
        residual_rms=float(estimate.residual_rms),
        min_pseudo_inertia_eig=float(np.min(estimate.min_pseudo_inertia_eigs)),
        rank=int(estimate.rank),
        solve_time=float(estimate.solve_time),
        **own_columns(estimate),
    )
    if arrays is not None:
        record["thetas"] = {
            name: theta.tolist() for name, theta in zip(estimate.link_names, estimate.thetas)
        }
        record.update(arrays(estimate))
    return record


def write_links_csv(replay: LinksReplay, path: str | Path) -> None:
    """One row per update: :data:`LINKS_CSV_COLUMNS`, then ``mass.<link>`` (kg)."""
    _write_link_csv(
        path,
        LINKS_CSV_COLUMNS,
        replay.session.estimator.link_model.link_names,
        replay.updates,
        lambda update: links_update_record(update, replay.start_time, False),
    )


def _write_link_csv(
    path: str | Path,
    columns: tuple[str, ...],
    links: Sequence[str],
    updates: Sequence[Update],
    record: Callable[[Update], dict[str, Any]],
) -> None:
    """One row per update: ``columns`` of ``record(update)``, then ``mass.<link>`` (kg) of each
    of ``links`` (the estimate's ``thetas`` in that order; empty without an estimate)."""
    with open(path, "w", newline="") as stream:
        writer = csv.writer(stream)
        writer.writerow(columns + tuple(f"mass.{link}" for link in links))
        for update in updates:
            values = record(update)
            masses = (
                update.estimate.thetas[:, 0] if update.estimate is not None else [None] * len(links)
            )
            writer.writerow(
                [
                    f"{v:.12g}" if isinstance(v, float) else ("" if v is None else v)
                    for v in [values[key] for key in columns]
                    + [None if m is None else float(m) for m in masses]
                ]
            )


# ---- recording -----------------------------------------------------------------------------
