"""Replay a ROS 2 bag or a described log through the node's online session, in bag time: the
machinery every mode's replay shares (each mode's replay, findings and report are its own:
:meth:`~inertia_id_ros.modes.Mode.replay`, :meth:`~inertia_id_ros.modes.Mode.replay_report`).

**Replay** (:func:`replay_log`, ``inertia-id replay``): a log's messages go to a session the node
runs (built from the node's parameters by its mode), with the calls of the node's mode
(:class:`ReplayInputs`: the joint states on one topic, wrenches on others, an IMU), in arrival
order (the bag's log times, as the node's subscriptions got them; stamps from the headers, as the
node's callbacks use them; rejected samples are counted, not fatal). Every ``1 / update_rate_hz``
seconds of bag time, starting one period after the first message, the session updates as the
node's worker does (:func:`replay_feeds`); one more update follows the last message. Each update
gives an estimate or the reason there is none (:class:`~inertia_id_ros.online.session.Update`);
what a replay gives is a :class:`ReplayUpdates`.

**Described logs** (``inertia-id replay --input``): a log loaded through an input description
(:class:`~inertia_id_ros.formats.recording.Recording`: names, units, signs, held joints and clock
offsets applied) goes through the same loop, its samples in stamp order
(:func:`recording_messages`; the held joints as constant columns). Either way the joint states'
units are checked as they pass (:class:`JointStateRange`: degrees? milliseconds?), as the fit
commands check theirs.

**Reports** (:class:`ReplayReport`): what a mode says of its replay (the result JSON, the summary
lines); the CSV rows of replays of several bodies (:func:`bodies_update_record`,
:func:`write_bodies_csv`). Simulated bags to replay: :mod:`inertia_id_ros.sim.recorders`.
"""

from __future__ import annotations

import contextlib
import csv
import math
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Generic, Protocol, TypeVar

import numpy as np

from inertia_id_ros.errors import DataError
from inertia_id_ros.findings import Finding
from inertia_id_ros.formats.data import (
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
from inertia_id_ros.formats.recording import Recording
from inertia_id_ros.formats.units import check_time_units, position_unit_findings
from inertia_id_ros.online.session import Session, Update

if TYPE_CHECKING:
    import pinocchio as pin


EstimateT = TypeVar("EstimateT")
"""The estimate type of a replay's updates."""

ReplayLog = str | Path | Recording
"""What a replay reads: a bag (its path), or a log loaded through an input description
(:func:`~inertia_id_ros.formats.recording.load_recording`)."""

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
    (``source``) at which rate, the findings of the input's units (``input_findings``:
    :meth:`JointStateRange.findings`), the ``session`` replayed (its estimator's model and
    settings, its counters) and the mode's plausibility ``findings`` of the final estimate."""

    updates: list[Update]
    start_time: float
    received: dict[str, int]
    dropped: dict[str, int]
    source: str = field(default="", kw_only=True)
    update_rate_hz: float = field(default=0.0, kw_only=True)
    input_findings: list[Finding] = field(default_factory=list, kw_only=True)
    session: Any = field(default=None, kw_only=True)
    findings: list[Finding] = field(default_factory=list, kw_only=True)

    @property
    def estimates(self) -> list[Update]:
        """The updates that gave an estimate."""
        return [update for update in self.updates if update.estimate is not None]

    @property
    def final(self) -> EstimateT | None:
        """The last estimate (``None`` if there was none)."""
        estimates = self.estimates
        return estimates[-1].estimate if estimates else None

    @property
    def span(self) -> float:
        """Bag time (s) from the first message to the last update."""
        return self.updates[-1].time - self.start_time


@dataclass(frozen=True)
class ReplayReport:
    """What a mode says of its replay (:meth:`~inertia_id_ros.modes.Mode.replay_report`):
    ``document`` the result JSON (``inertia-id replay --json``: its ``"mode"``, the final
    estimate, the findings, every update), ``summary`` the lines for people, ``files`` the order
    in which the summary lists the files written (of ``"csv"``, ``"json"``, ``"png"``)."""

    document: dict[str, Any]
    summary: tuple[str, ...]
    files: tuple[str, ...] = ("json", "csv")


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
    start: float | None = None
    next_update = math.inf
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

    def wrench_input(self) -> Callable[[str, float, np.ndarray, str], Any]:
        """``add_wrench``, which ``wrench_topics`` need (a ``ValueError`` without it)."""
        if self.add_wrench is None:
            raise ValueError("wrench_topics are given without add_wrench")
        return self.add_wrench

    def imu_input(self) -> Callable[[float, np.ndarray, np.ndarray, str], Any]:
        """``add_imu``, which an ``imu_topic`` needs (a ``ValueError`` without it)."""
        if self.add_imu is None:
            raise ValueError("an imu_topic is given without add_imu")
        return self.add_imu


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
        add_wrench = inputs.wrench_input()

        def feed(msg: Any) -> None:
            for frame in frames:
                add_wrench(
                    frame,
                    header_seconds(msg.header),
                    np.array(wrench_values(msg)),
                    msg.header.frame_id,
                )

        return feed

    def imu(msg: Any) -> None:
        w, a = msg.angular_velocity, msg.linear_acceleration
        inputs.imu_input()(
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
        add_wrench = inputs.wrench_input()
        return lambda k: add_wrench(frame, float(samples.t[k]), samples.wrench[k], frame)

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
        add_imu = inputs.imu_input()
        feeds[IMU_STREAM] = lambda k: add_imu(
            float(imu.t[k]),
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


def bag_robot_description(path: str | Path) -> str | None:
    """The last URDF on :data:`ROBOT_DESCRIPTION_TOPIC` in the bag ``path`` (``None`` if none)."""
    messages = read_bag_messages(path, [], optional=[(ROBOT_DESCRIPTION_TOPIC, STRING_TYPE)])
    return messages[-1][2].data if messages else None


# ---- output --------------------------------------------------------------------------------


def json_ready(value: Any) -> Any:
    """NaN -> ``None`` (strict JSON), anything else as it is."""
    return None if isinstance(value, float) and not math.isfinite(value) else value


def bodies_update_record(
    update: Update,
    start_time: float,
    columns: tuple[str, ...],
    own_columns: Callable[[Any], dict[str, Any]],
    arrays: Callable[[Any], dict[str, Any]] | None,
) -> dict[str, Any]:
    """One update of a replay of several bodies (links) as a record with
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


def write_bodies_csv(
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
