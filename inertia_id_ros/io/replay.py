"""Replay a ROS 2 bag through the node's online session; record a simulated bag to replay.

**Replay** (:func:`replay_bag`, ``inertia-id replay``): the bag's ``JointState`` and
``WrenchStamped`` messages go to a :class:`~inertia_id_ros.online.session.PayloadSession` -- the
session the node runs, built by :func:`~inertia_id_ros.online.session.payload_session` from the
node's parameters of the same names -- in arrival order (the bag's log times, as the node's
subscriptions got them; stamps from the headers, as the node's callbacks use them; rejected
samples are counted, not fatal). Every ``1 / update_rate_hz`` seconds of bag time, starting one
period after the first message, the session updates as the node's worker does: process, payload
change detection (the window then keeps only the new payload's samples), a warm-started solve;
one more update follows the last message. Each update gives an estimate or the reason there is
none (:class:`~inertia_id_ros.online.session.Update`), and every payload change is listed
(:attr:`Replay.payload_changes`).

**Record** (:func:`record_simulation`, ``inertia-id record-sim``): a rosbag2 (MCAP or sqlite3)
written with rosbags (no DDS) of the simulated Panda that ``inertia-id-sim`` publishes
(:class:`~inertia_id_ros.sim.payload.PayloadSimulator`: payload, F/T offset, noise, stamps
``start + k / rate``): ``sensor_msgs/JointState`` on ``/joint_states`` (positions and velocities of
the 7 arm joints), ``geometry_msgs/WrenchStamped`` on ``/ft_sensor/wrench`` in ``panda_link8``,
each logged :data:`TRANSPORT_LATENCY` after its stamp, and the URDF on ``/robot_description``
(``std_msgs/String``, once at the start, as ``robot_state_publisher`` latches it). A
``payload_change_at`` time switches the simulated payload there (a grasp).

**Whole body** (:func:`replay_whole_body_bag`): the bag's ``JointState``, ``sensor_msgs/Imu`` and
each F/T sensor's ``WrenchStamped`` go to a
:class:`~inertia_id_ros.online.session.WholeBodySession` (built as the node builds it, from the
node's parameters: ``inertia-id replay --params-file``) the same way, with the calls of the
node's whole_body mode (efforts included; a topic's wrenches go to its sensor's frame).
:func:`record_whole_body` writes the bag of a simulated floating-base robot
(:mod:`~inertia_id_ros.sim.whole_body`) with the topics and frames of the simulator node
(``inertia-id-sim``'s ``*_whole_body`` robots): ``/joint_states``, ``/imu`` and
``/<frame>/wrench`` per F/T sensor, all with the same stamps, each logged
:data:`TRANSPORT_LATENCY` after it, and the CAD URDF (the prior) on ``/robot_description``.
"""

from __future__ import annotations

import contextlib
import csv
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Generic, Protocol, TypeVar

import numpy as np

from inertia_id_ros.core.covariance import com_covariance
from inertia_id_ros.core.inertia import THETA_NAMES
from inertia_id_ros.core.kinematics import SensorKinematics
from inertia_id_ros.core.regressors import WRENCH_CHANNEL_NAMES
from inertia_id_ros.core.robots import example_robot_urdf, load_model
from inertia_id_ros.errors import DataError
from inertia_id_ros.io.data import (
    DEFAULT_JOINT_STATES_TOPIC,
    DEFAULT_WRENCH_TOPIC,
    JOINT_STATE_TYPE,
    WRENCH_TYPE,
    header_seconds,
    iter_bag_messages,
    read_bag_messages,
    wrench_values,
)
from inertia_id_ros.io.plausibility import (
    Finding,
    Volume,
    payload_fit_findings,
    payload_volume,
    pinned_mass_findings,
)
from inertia_id_ros.io.whole_body import DEFAULT_IMU_TOPIC, IMU_TYPE
from inertia_id_ros.online.change_detection import ChangeEvent
from inertia_id_ros.online.payload_estimator import Estimate, EstimatorConfig
from inertia_id_ros.online.session import PayloadSession, Update, WholeBodySession, payload_session
from inertia_id_ros.online.whole_body_estimator import WholeBodyEstimate
from inertia_id_ros.sim.payload import PayloadSimulator
from inertia_id_ros.sim.whole_body import WholeBodySimulator

ROBOT_DESCRIPTION_TOPIC = "/robot_description"
STRING_TYPE = "std_msgs/msg/String"
TRANSPORT_LATENCY = {JOINT_STATE_TYPE: 2e-4, WRENCH_TYPE: 4e-4, IMU_TYPE: 3e-4}
"""Simulated delay (s) from a message's stamp to its log (receive) time in recorded bags."""
DEFAULT_START_STAMP = 1.7e9
"""First stamp (s) of recorded bags (a ROS epoch time)."""
RECORD_CHUNK_SEC = 1.0
"""Simulated seconds computed at once while recording (bounded memory)."""

EstimateT = TypeVar("EstimateT")
"""The estimate type of a replay's updates."""


class ReplaySession(Protocol):
    """What a replay drives (a :class:`~inertia_id_ros.online.session.PayloadSession`)."""

    def add_joint_state(self, t: float, names: Any, q: Any, dq: Any = None) -> Any:
        """Offer a joint state at ``t`` (s): ``q`` (rad or m), ``dq``; ``None`` when taken."""
        ...

    def add_wrench(self, t: float, wrench: Any, frame_id: str | None = None) -> Any:
        """Offer a wrench (6,) (N, N m) at ``t`` (s) in ``frame_id``; ``None`` when taken."""
        ...

    def update(self, now: float | None = None) -> Update:
        """One periodic update at the caller's time ``now`` (s; default: ``time.time()``)."""
        ...


@dataclass
class ReplayUpdates(Generic[EstimateT]):
    """What every replay gives: its updates, the bag time of its first message ``start_time``
    (s) and the estimator's counters (``received`` by input, ``dropped`` by reason)."""

    updates: list[Update]
    start_time: float
    received: dict[str, int]
    dropped: dict[str, int]

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
class Replay(ReplayUpdates[Estimate]):
    """The updates of a payload replay (:class:`ReplayUpdates`), the payload changes detected,
    and what was replayed (``config``: the estimator's settings)."""

    payload_changes: list[ChangeEvent] = field(default_factory=list)
    source: str = ""
    sensor_frame: str = ""
    update_rate_hz: float = 0.0
    config: EstimatorConfig = field(default_factory=EstimatorConfig)
    findings: list[Finding] = field(default_factory=list)
    """The plausibility findings of the final estimate (:func:`payload_replay_findings`)."""


Feed = Callable[[Any], Any]
"""What a replay does with a deserialised message of one topic (a session's ``add_*`` call, as
the node's callback makes it)."""


def replay_feeds(session: ReplaySession, messages: Iterable[tuple[str, int, Any]],
                 update_rate_hz: float, feeds: Mapping[str, Feed]) -> tuple[list[Update], float]:
    """Feed ``messages`` ((topic, log time (ns), deserialised message), in log-time order) to
    ``session`` through ``feeds`` (topic -> :data:`Feed`), updating every
    ``1 / update_rate_hz`` s of log time, starting one period after the first message, and once
    after the last; returns the updates and the first message's log time (s). Messages on
    other topics are skipped."""
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


def replay_messages(session: ReplaySession, messages: Iterable[tuple[str, int, Any]],
                    update_rate_hz: float, joint_states_topic: str = DEFAULT_JOINT_STATES_TOPIC,
                    wrench_topic: str = DEFAULT_WRENCH_TOPIC) -> tuple[list[Update], float]:
    """:func:`replay_feeds` of a payload session: joint states and wrenches, as the node's
    payload mode feeds them."""
    feeds = {joint_states_topic: lambda msg: session.add_joint_state(
                 header_seconds(msg.header), msg.name, msg.position, _values(msg.velocity)),
             wrench_topic: lambda msg: session.add_wrench(
                 header_seconds(msg.header), wrench_values(msg), msg.header.frame_id)}
    return replay_feeds(session, messages, update_rate_hz, feeds)


def _values(array: Any) -> Any:
    """A message's array, or ``None`` when it is empty (as the node passes it)."""
    return array if len(array) else None


def replay_bag(path: str | Path, sensor_frame: str | None = None, urdf: str | Path | None = None,
               joint_states_topic: str = DEFAULT_JOINT_STATES_TOPIC,
               wrench_topic: str = DEFAULT_WRENCH_TOPIC, update_rate_hz: float = 2.0,
               settings: Mapping[str, Any] | None = None) -> Replay:
    """Replay the bag ``path`` (a rosbag2 directory or one ``.mcap``/``.db3`` file) through the
    node's payload session for the F/T sensor frame ``sensor_frame`` (default: the first
    wrench's ``frame_id``; see the module docstring); ``settings``: the node's parameters
    (keyword arguments of :func:`~inertia_id_ros.online.session.payload_session`: window_sec,
    method, estimate_offset, flip_wrench_sign, detect_payload_change, ...). The robot comes from
    the URDF file ``urdf``, else from the bag's last ``/robot_description``. Messages are read
    one at a time (bounded memory). Raises :class:`~inertia_id_ros.errors.DataError`
    (bag), ``OSError`` or ``ValueError`` (URDF, settings),
    :class:`~inertia_id_ros.errors.FrameNotFound` (sensor frame)."""
    topics = [(joint_states_topic, JOINT_STATE_TYPE), (wrench_topic, WRENCH_TYPE)]
    if urdf is None:
        description = bag_robot_description(path)
        if description is None:
            raise DataError(f"{path}: no {ROBOT_DESCRIPTION_TOPIC} in the bag; give the URDF")
        model = load_model(urdf_xml=description)
    else:
        model = load_model(urdf_path=urdf)
    if sensor_frame is None:
        sensor_frame = next(msg.header.frame_id
                            for topic, _, msg in iter_bag_messages(path, topics)
                            if topic == wrench_topic)
        if not sensor_frame:
            raise DataError(f"{path}: the wrenches name no frame_id; give the sensor frame")
    session = payload_session(SensorKinematics(model, sensor_frame), **(settings or {}))
    return replay_payload_bag(path, session, update_rate_hz, joint_states_topic, wrench_topic)


def replay_payload_bag(path: str | Path, session: PayloadSession, update_rate_hz: float,
                       joint_states_topic: str = DEFAULT_JOINT_STATES_TOPIC,
                       wrench_topic: str = DEFAULT_WRENCH_TOPIC,
                       volume: Volume | None = None) -> Replay:
    """Replay the bag ``path`` through a payload ``session`` built elsewhere (the node's, from
    its parameters), as :func:`replay_bag` does; ``volume``: the payload's bounding volume the
    final estimate is checked against (default
    :func:`~inertia_id_ros.io.plausibility.payload_volume`'s sphere)."""
    with contextlib.closing(iter_bag_messages(path, [(joint_states_topic, JOINT_STATE_TYPE),
                                                     (wrench_topic, WRENCH_TYPE)])) as messages:
        updates, start = replay_messages(session, messages, update_rate_hz, joint_states_topic,
                                         wrench_topic)
    stats = session.estimator.stats()
    replay = Replay(updates=updates, start_time=start, received=stats.received,
                    dropped=stats.dropped, payload_changes=list(session.changes),
                    source=str(path), sensor_frame=session.estimator.kinematics.sensor_frame,
                    update_rate_hz=update_rate_hz, config=session.estimator.config)
    replay.findings = payload_replay_findings(session, replay.final, volume or payload_volume())
    return replay


def payload_replay_findings(session: PayloadSession, final: Estimate | None,
                            volume: Volume) -> list[Finding]:
    """The plausibility findings of a replay's ``final`` estimate
    (:func:`~inertia_id_ros.io.plausibility.payload_fit_findings`, the payload in ``volume``) on
    the window's samples it was fitted to; none without an estimate or when the window
    restarted after it (a payload change)."""
    if final is None:
        return []
    estimator = session.estimator
    t, Y, f = estimator.window.samples()
    fitted = (t >= final.t_first) & (t <= final.t_last)
    if not fitted.any():
        return []
    findings, _ = payload_fit_findings(estimator.kinematics.sensor_frame, Y[fitted], f[fitted],
                                       final, estimator.config.estimate_offset, volume)
    return findings


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
    source: str = ""
    update_rate_hz: float = 0.0

    @property
    def findings(self) -> list[Finding]:
        """The plausibility findings of the final estimate: the links whose mass sits at its
        bound (:func:`~inertia_id_ros.io.plausibility.pinned_mass_findings`; not for ``ols``).
        The window keeps normal equations, not samples: no residual ratios."""
        final = self.final
        if final is None or final.method == "ols":
            return []
        model = self.session.estimator.model
        prior = model.link_prior[[model.links.index(b) for b in final.link_names]]
        return pinned_mass_findings(final.link_names, final.thetas[:, 0], prior[:, 0])


SENSOR_EVENTS = ("sensor_stopped", "sensor_resumed")
"""Warning kinds of a whole-body update that :attr:`WholeBodyReplay.sensor_events` lists."""


def whole_body_feeds(session: WholeBodySession, joint_states_topic: str, imu_topic: str,
                     ft_topics: Mapping[str, str]) -> dict[str, Feed]:
    """The :data:`Feed` of each topic of the node's whole_body mode: joint states (positions,
    velocities and efforts, an empty array as ``None``), IMU readings (angular velocity,
    specific force, ``frame_id``; none when ``imu_topic`` is empty: a fixed or suspended base
    without an IMU) and the wrenches of ``ft_topics`` (topic -> sensor frame; ``frame_id``
    checked by the session), each with its header stamp."""
    def joint_state(msg: Any) -> None:
        session.add_joint_state(header_seconds(msg.header), msg.name, msg.position,
                                _values(msg.velocity), _values(msg.effort))

    def imu(msg: Any) -> None:
        w, a = msg.angular_velocity, msg.linear_acceleration
        session.add_imu(header_seconds(msg.header), np.array([w.x, w.y, w.z]),
                        np.array([a.x, a.y, a.z]), msg.header.frame_id)

    def wrench(frames: tuple[str, ...]) -> Feed:
        def feed(msg: Any) -> None:
            for frame in frames:
                session.add_wrench(frame, header_seconds(msg.header), np.array(wrench_values(msg)),
                                   msg.header.frame_id)
        return feed

    frames_of: dict[str, tuple[str, ...]] = {}
    for topic, frame in ft_topics.items():
        frames_of[topic] = frames_of.get(topic, ()) + (frame,)
    feeds = {joint_states_topic: joint_state,
             **{topic: wrench(frames) for topic, frames in frames_of.items()}}
    if imu_topic:
        feeds[imu_topic] = imu
    return feeds


def replay_whole_body_bag(path: str | Path, session: WholeBodySession, update_rate_hz: float,
                          joint_states_topic: str, imu_topic: str,
                          ft_topics: Mapping[str, str]) -> WholeBodyReplay:
    """Replay the bag ``path`` through ``session`` (see the module docstring), updating every
    ``1 / update_rate_hz`` s of bag time; ``ft_topics``: topic -> sensor frame. Every topic must
    be in the bag with messages (:class:`~inertia_id_ros.errors.DataError` naming it otherwise).
    Messages are read one at a time (bounded memory)."""
    topics = [(joint_states_topic, JOINT_STATE_TYPE),
              *([(imu_topic, IMU_TYPE)] if imu_topic else []),
              *((topic, WRENCH_TYPE) for topic in dict.fromkeys(ft_topics))]
    feeds = whole_body_feeds(session, joint_states_topic, imu_topic, ft_topics)
    with contextlib.closing(iter_bag_messages(path, topics)) as messages:  # closed on an error
        updates, start = replay_feeds(session, messages, update_rate_hz, feeds)
    stats = session.estimator.stats()
    events = [(update.time, kind, message) for update in updates
              for kind, message in update.warnings if kind in SENSOR_EVENTS]
    return WholeBodyReplay(updates=updates, start_time=start, received=stats.received,
                           dropped=stats.dropped, session=session,
                           stopped_sensors=session.estimator.stopped_sensors,
                           sensor_events=events, source=str(path), update_rate_hz=update_rate_hz)


def bag_robot_description(path: str | Path) -> str | None:
    """The last URDF on :data:`ROBOT_DESCRIPTION_TOPIC` in the bag ``path`` (``None`` if none)."""
    messages = read_bag_messages(path, [], optional=[(ROBOT_DESCRIPTION_TOPIC, STRING_TYPE)])
    return messages[-1][2].data if messages else None


def change_record(event: ChangeEvent) -> dict[str, Any]:
    """A payload change as a JSON-ready record: ``time`` (s of bag time, the stamp of the
    sample that raised it), ``onset`` (s), ``samples``, ``residual_mean`` (6,) (N, N m), and
    the ``message``."""
    return {"time": event.t_detected, "onset": event.t_onset, "samples": event.n_samples,
            "residual_mean": [float(v) for v in event.residual_mean], "message": str(event)}


# ---- output --------------------------------------------------------------------------------

CSV_COLUMNS = (("time", "elapsed", "status", "method", "n_samples")
               + THETA_NAMES + tuple(f"offset_{n}" for n in WRENCH_CHANNEL_NAMES)
               + tuple(f"std_{n}" for n in THETA_NAMES) + ("com_x", "com_y", "com_z")
               + ("std_com_x", "std_com_y", "std_com_z")
               + ("min_pseudo_inertia_eig", "residual_rms", "condition_number", "solve_time"))
"""Columns of :func:`write_csv`: bag time and time since the first message (s), the status
(``ok`` or why there is no estimate; numbers ``nan`` then), the samples in the window, ``theta``
(SI), F/T offset (N, N m), standard deviations of ``theta``, COM and its standard deviations (m,
sensor frame), consistency margin (kg m^2), residual RMS, excitation condition number, solve time
(s)."""


def update_record(update: Update, start_time: float) -> dict[str, Any]:
    """One update as a flat record with :data:`CSV_COLUMNS` keys (JSON-ready)."""
    record: dict[str, Any] = dict.fromkeys(CSV_COLUMNS, float("nan"))
    record.update(time=update.time, elapsed=update.time - start_time, status=update.status,
                  method="", n_samples=0)
    estimate = update.estimate
    if estimate is None:
        return record
    com_std = np.sqrt(np.clip(np.diag(com_covariance(estimate.theta, estimate.covariance)),
                              0.0, None))
    values = {"method": estimate.method, "n_samples": estimate.n_samples,
              **dict(zip(THETA_NAMES, estimate.theta)),
              **{f"offset_{n}": v for n, v in zip(WRENCH_CHANNEL_NAMES, estimate.sensor_offset)},
              **{f"std_{n}": v for n, v in zip(THETA_NAMES, estimate.theta_std)},
              **{f"com_{a}": v for a, v in zip("xyz", estimate.com)},
              **{f"std_com_{a}": v for a, v in zip("xyz", com_std)},
              "min_pseudo_inertia_eig": estimate.min_pseudo_inertia_eig,
              "residual_rms": estimate.residual_rms,
              "condition_number": estimate.condition_number, "solve_time": estimate.solve_time}
    record.update({key: value if isinstance(value, str) else
                   (int(value) if key == "n_samples" else float(value))
                   for key, value in values.items()})
    return record


def write_csv(replay: Replay, path: str | Path) -> None:
    """One row per update, columns :data:`CSV_COLUMNS`."""
    with open(path, "w", newline="") as stream:
        writer = csv.DictWriter(stream, fieldnames=CSV_COLUMNS)
        writer.writeheader()
        for update in replay.updates:
            writer.writerow({key: (f"{value:.12g}" if isinstance(value, float) else value)
                             for key, value in update_record(update, replay.start_time).items()})


WHOLE_BODY_CSV_COLUMNS = ("time", "elapsed", "status", "method", "n_samples", "residual_rms",
                          "min_pseudo_inertia_eig", "rank", "n_params", "identified",
                          "partly_identified", "prior_only", "stopped_sensors", "solve_time",
                          "message")
"""Columns of :func:`write_whole_body_csv` (then ``mass.<link>`` per identified link, kg): bag
time and time since the first message (s), ``ok`` or why there is no estimate (numbers empty
then), the IMU samples in the window, residual RMS of the rows, the smallest pseudo-inertia
eigenvalue over the links (kg m^2), the base-parameter rank of the parameters, the links per
identifiability label, the sensors whose rows were dropped (space-separated), the solve time
(s), the update's message."""


def whole_body_update_record(update: Update, start_time: float,
                             with_estimate: bool = True) -> dict[str, Any]:
    """One whole-body update as a record with :data:`WHOLE_BODY_CSV_COLUMNS` keys (``None``
    where there is no estimate) and, with ``with_estimate`` and an estimate, ``thetas`` {link:
    (10,)} and ``sensor_offsets`` {frame: (6,)} (JSON-ready)."""
    record: dict[str, Any] = dict.fromkeys(WHOLE_BODY_CSV_COLUMNS)
    record.update(time=update.time, elapsed=update.time - start_time, status=update.status,
                  message=update.message)
    estimate = update.estimate
    if estimate is None:
        return record
    labels = list(estimate.labels)
    record.update(method=estimate.method, n_samples=int(estimate.n_samples),
                  residual_rms=float(estimate.residual_rms),
                  min_pseudo_inertia_eig=float(np.min(estimate.min_pseudo_inertia_eigs)),
                  rank=int(estimate.rank), n_params=int(estimate.n_params),
                  identified=labels.count("identified"),
                  partly_identified=labels.count("partly identified"),
                  prior_only=labels.count("prior only"),
                  stopped_sensors=" ".join(estimate.stopped_sensors),
                  solve_time=float(estimate.solve_time))
    if with_estimate:
        record["thetas"] = {name: theta.tolist()
                            for name, theta in zip(estimate.link_names, estimate.thetas)}
        record["sensor_offsets"] = {frame: np.asarray(offset).tolist()
                                    for frame, offset in estimate.offsets.items()}
    return record


def write_whole_body_csv(replay: WholeBodyReplay, path: str | Path) -> None:
    """One row per update: :data:`WHOLE_BODY_CSV_COLUMNS`, then ``mass.<link>`` (kg)."""
    links = replay.session.estimator.model.bodies
    with open(path, "w", newline="") as stream:
        writer = csv.writer(stream)
        writer.writerow(WHOLE_BODY_CSV_COLUMNS + tuple(f"mass.{link}" for link in links))
        for update in replay.updates:
            record = whole_body_update_record(update, replay.start_time, with_estimate=False)
            masses = (update.estimate.thetas[:, 0] if update.estimate is not None
                      else [None] * len(links))
            writer.writerow([f"{v:.12g}" if isinstance(v, float) else ("" if v is None else v)
                             for v in [record[key] for key in WHOLE_BODY_CSV_COLUMNS]
                             + [None if m is None else float(m) for m in masses]])


# ---- recording -----------------------------------------------------------------------------


def record_simulation(path: str | Path, duration: float, rate_hz: float = 1000.0, seed: int = 0,
                      storage: str = "mcap", start_stamp: float = DEFAULT_START_STAMP,
                      simulator: PayloadSimulator | None = None,
                      payload_change_at: float | None = None,
                      changed_payload: np.ndarray | None = None) -> PayloadSimulator:
    """Write the rosbag2 directory ``path`` (must not exist) with ``duration`` s of the simulated
    Panda at ``rate_hz`` (see the module docstring), ``storage`` ``"mcap"`` or ``"sqlite3"``;
    trajectory and payload of ``PayloadSimulator.panda(seed=seed)`` (or ``simulator``), noise from
    seed ``seed + 1`` (as ``inertia-id-sim``). From ``payload_change_at`` s of simulated time on,
    the payload is ``changed_payload`` (theta (10,) about the sensor frame; a grasp: the same
    motion and F/T offset). Returns the simulator (its ``true_theta`` and ``true_offset`` are the
    truth, before any change)."""
    if not duration > 0 or not rate_hz > 0:
        raise ValueError(f"duration and rate must be positive, got {duration} s, {rate_hz} Hz")
    sim = simulator or PayloadSimulator.panda(seed=seed)
    changed = None
    if payload_change_at is not None:
        if changed_payload is None:
            raise ValueError("payload_change_at needs the changed payload's theta")
        changed = sim.with_payload(changed_payload)
    rng = np.random.default_rng(seed + 1)
    names = list(sim.joint_names)
    with _BagRecorder(path, storage) as bag:
        urdf = Path(example_robot_urdf("panda")).read_text()
        bag.write(ROBOT_DESCRIPTION_TOPIC, bag.string(urdf), start_stamp, latency=0.0)
        for t in _chunks(duration, rate_hz):
            q, dq, wrench = sim.measure(t, rng)
            if changed is not None and t[-1] >= payload_change_at:
                after = t >= payload_change_at
                wrench[after] = changed.measure_wrench(t[after], rng)
            for i, stamp in enumerate(start_stamp + t):
                bag.write(DEFAULT_JOINT_STATES_TOPIC, bag.joint_state(stamp, names, q[i], dq[i]),
                          stamp)
                bag.write(DEFAULT_WRENCH_TOPIC, bag.wrench(stamp, sim.sensor_frame, wrench[i]),
                          stamp)
    return sim


def record_whole_body(path: str | Path, simulator: WholeBodySimulator, duration: float,
                      rate_hz: float = 200.0, seed: int = 0, storage: str = "mcap",
                      start_stamp: float = DEFAULT_START_STAMP, with_effort: bool = False,
                      joint_states_topic: str = DEFAULT_JOINT_STATES_TOPIC,
                      imu_topic: str = DEFAULT_IMU_TOPIC,
                      sensors_stop: Mapping[str, float] | None = None) -> dict[str, str]:
    """Write the rosbag2 directory ``path`` (must not exist) with ``duration`` s of the simulated
    floating-base robot ``simulator`` at ``rate_hz`` (see the module docstring), ``storage``
    ``"mcap"`` or ``"sqlite3"``, noise from seed ``seed + 1`` (as ``inertia-id-sim``), stamps
    ``start_stamp + k / rate_hz``; joint states with velocities (and efforts: ``with_effort``);
    ``sensors_stop``: F/T sensor frame -> time (s into the recording) from which its wrenches
    are missing (a sensor that stops). Returns the F/T topics: topic -> sensor frame
    (``/<frame>/wrench``)."""
    if not duration > 0 or not rate_hz > 0:
        raise ValueError(f"duration and rate must be positive, got {duration} s, {rate_hz} Hz")
    sim = simulator
    rng = np.random.default_rng(seed + 1)
    names = list(sim.joint_names)
    ft_topics = {f"/{frame}/wrench": frame for frame, _ in sim.ft_sensors}
    stops = [dict(sensors_stop or {}).get(frame, np.inf) for frame in ft_topics.values()]
    with _BagRecorder(path, storage) as bag:
        bag.write(ROBOT_DESCRIPTION_TOPIC, bag.string(sim.cad_xml), start_stamp, latency=0.0)
        for t in _chunks(duration, rate_hz):
            data = sim.measure(sim.simulate(t), with_ddq=False, with_effort=with_effort, rng=rng)
            effort = data.get("effort")
            for i, (ti, stamp) in enumerate(zip(t, start_stamp + t)):
                bag.write(joint_states_topic, bag.joint_state(
                    stamp, names, data["q"][i], data["dq"][i],
                    None if effort is None else effort[i]), stamp)
                bag.write(imu_topic, bag.imu(stamp, sim.imu_frame, data["imu_orientation"][i],
                                             data["imu_angular_velocity"][i],
                                             data["imu_linear_acceleration"][i]), stamp)
                for k, (topic, frame) in enumerate(ft_topics.items()):
                    if ti < stops[k]:
                        bag.write(topic, bag.wrench(stamp, frame, data["ft_wrench"][i, k]),
                                  stamp)
    return ft_topics


def _chunks(duration: float, rate_hz: float) -> Iterable[np.ndarray]:
    """Sample times ``k / rate_hz`` (s) of ``duration`` s, :data:`RECORD_CHUNK_SEC` at a time."""
    n_total = int(round(duration * rate_hz))
    chunk = max(int(RECORD_CHUNK_SEC * rate_hz), 1)
    for first in range(0, n_total, chunk):
        yield np.arange(first, min(first + chunk, n_total)) / rate_hz


class _BagRecorder:
    """A new rosbag2 (rosbags' writer, no DDS) and the messages recorded into it: each message
    logged :data:`TRANSPORT_LATENCY` of its type after its stamp."""

    PLUGINS = ("mcap", "sqlite3")

    def __init__(self, path: str | Path, storage: str) -> None:
        from rosbags.rosbag2 import StoragePlugin, Writer
        from rosbags.typesys import Stores, get_typestore

        if storage not in self.PLUGINS:
            raise ValueError(f"storage must be one of {sorted(self.PLUGINS)}, got {storage!r}")
        if Path(path).exists():
            raise ValueError(f"{path} exists; the bag must be a new directory")
        plugin = {"mcap": StoragePlugin.MCAP, "sqlite3": StoragePlugin.SQLITE3}[storage]
        self._writer = Writer(path, version=9, storage_plugin=plugin)
        self._store = get_typestore(Stores.ROS2_KILTED)
        self._types = self._store.types
        self._connections: dict[str, Any] = {}

    def __enter__(self) -> _BagRecorder:
        self._writer.open()
        return self

    def __exit__(self, *exc: Any) -> None:
        self._writer.close()

    def write(self, topic: str, msg: Any, stamp: float, latency: float | None = None) -> None:
        """Log ``msg`` on ``topic`` at ``stamp`` (s) plus ``latency`` (s; default: its type's
        :data:`TRANSPORT_LATENCY`)."""
        msgtype = msg.__msgtype__
        if topic not in self._connections:
            self._connections[topic] = self._writer.add_connection(topic, msgtype,
                                                                   typestore=self._store)
        delay = TRANSPORT_LATENCY[msgtype] if latency is None else latency
        self._writer.write(self._connections[topic], int(round((stamp + delay) * 1e9)),
                           self._store.serialize_cdr(msg, msgtype))

    def _header(self, t: float, frame_id: str = "") -> Any:
        ns = int(round(t * 1e9))
        return self._types["std_msgs/msg/Header"](
            stamp=self._types["builtin_interfaces/msg/Time"](sec=ns // 10**9,
                                                             nanosec=ns % 10**9),
            frame_id=frame_id)

    def _vector(self, v: np.ndarray) -> Any:
        return self._types["geometry_msgs/msg/Vector3"](x=float(v[0]), y=float(v[1]),
                                                        z=float(v[2]))

    def string(self, text: str) -> Any:
        return self._types[STRING_TYPE](data=text)

    def joint_state(self, t: float, names: list[str], q: np.ndarray, dq: np.ndarray,
                    effort: np.ndarray | None = None) -> Any:
        """A ``JointState`` stamped ``t`` (s): positions, velocities, efforts (empty: none)."""
        return self._types[JOINT_STATE_TYPE](
            header=self._header(t), name=names, position=np.asarray(q, dtype=float),
            velocity=np.asarray(dq, dtype=float),
            effort=np.zeros(0) if effort is None else np.asarray(effort, dtype=float))

    def wrench(self, t: float, frame_id: str, w: np.ndarray) -> Any:
        """A ``WrenchStamped`` ``[fx, fy, fz, tx, ty, tz]`` (N, N m) in ``frame_id``."""
        types = self._types
        return types[WRENCH_TYPE](header=self._header(t, frame_id),
                                  wrench=types["geometry_msgs/msg/Wrench"](
                                      force=self._vector(w[:3]), torque=self._vector(w[3:])))

    def imu(self, t: float, frame_id: str, orientation: np.ndarray,
            angular_velocity: np.ndarray, linear_acceleration: np.ndarray) -> Any:
        """A ``sensor_msgs/Imu``: orientation x, y, z, w (world <- IMU), angular velocity (rad/s)
        and specific force (m/s^2) in ``frame_id``; covariances unknown (zero)."""
        types = self._types
        x, y, z, w = (float(v) for v in orientation)
        zeros = np.zeros(9)
        return types[IMU_TYPE](header=self._header(t, frame_id),
                               orientation=types["geometry_msgs/msg/Quaternion"](x=x, y=y, z=z,
                                                                                  w=w),
                               orientation_covariance=zeros,
                               angular_velocity=self._vector(angular_velocity),
                               angular_velocity_covariance=zeros,
                               linear_acceleration=self._vector(linear_acceleration),
                               linear_acceleration_covariance=zeros)
