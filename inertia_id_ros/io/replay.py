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
"""

from __future__ import annotations

import csv
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

import numpy as np

from inertia_id_ros.core.covariance import com_covariance
from inertia_id_ros.core.inertia import THETA_NAMES
from inertia_id_ros.core.kinematics import SensorKinematics
from inertia_id_ros.core.regressors import WRENCH_CHANNEL_NAMES
from inertia_id_ros.core.robots import example_robot_urdf, load_model
from inertia_id_ros.errors import DataError
from inertia_id_ros.io.data import (DEFAULT_JOINT_STATES_TOPIC, DEFAULT_WRENCH_TOPIC,
                                    JOINT_STATE_TYPE, WRENCH_TYPE, header_seconds,
                                    read_bag_messages, wrench_values)
from inertia_id_ros.online.change_detection import ChangeEvent
from inertia_id_ros.online.payload_estimator import Estimate, EstimatorConfig
from inertia_id_ros.online.session import Update, payload_session
from inertia_id_ros.sim.payload import PayloadSimulator

ROBOT_DESCRIPTION_TOPIC = "/robot_description"
STRING_TYPE = "std_msgs/msg/String"
TRANSPORT_LATENCY = {JOINT_STATE_TYPE: 2e-4, WRENCH_TYPE: 4e-4}
"""Simulated delay (s) from a message's stamp to its log (receive) time in recorded bags."""
DEFAULT_START_STAMP = 1.7e9
"""First stamp (s) of recorded bags (a ROS epoch time)."""
RECORD_CHUNK_SEC = 1.0
"""Simulated seconds computed at once while recording (bounded memory)."""


class ReplaySession(Protocol):
    """What a replay drives (a :class:`~inertia_id_ros.online.session.PayloadSession`)."""

    def add_joint_state(self, t: float, names: Any, q: Any, dq: Any = None) -> Any: ...

    def add_wrench(self, t: float, wrench: Any, frame_id: str | None = None) -> Any: ...

    def update(self, now: float | None = None) -> Update: ...


@dataclass
class Replay:
    """The updates of a replay, with the bag time of its first message ``start_time`` (s), the
    estimator's counters, the payload changes detected, and what was replayed (``config``: the
    estimator's settings)."""

    updates: list[Update]
    start_time: float
    received: dict[str, int]
    dropped: dict[str, int]
    payload_changes: list[ChangeEvent] = field(default_factory=list)
    source: str = ""
    sensor_frame: str = ""
    update_rate_hz: float = 0.0
    config: EstimatorConfig = field(default_factory=EstimatorConfig)

    @property
    def estimates(self) -> list[Update]:
        """The updates that gave an estimate."""
        return [update for update in self.updates if update.estimate is not None]

    @property
    def final(self) -> Estimate | None:
        """The last estimate (``None`` if there was none)."""
        estimates = self.estimates
        return estimates[-1].estimate if estimates else None


def replay_messages(session: ReplaySession, messages: Iterable[tuple[str, int, Any]],
                    update_rate_hz: float, joint_states_topic: str = DEFAULT_JOINT_STATES_TOPIC,
                    wrench_topic: str = DEFAULT_WRENCH_TOPIC) -> tuple[list[Update], float]:
    """Feed ``messages`` ((topic, log time (ns), deserialised message), in log-time order) to
    ``session`` as the node's callbacks do, updating every ``1 / update_rate_hz`` s of log time;
    returns the updates and the first message's log time (s). Messages on other topics are
    skipped."""
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
        if topic == joint_states_topic:
            session.add_joint_state(header_seconds(msg.header), msg.name, msg.position,
                                    msg.velocity if len(msg.velocity) else None)
        elif topic == wrench_topic:
            session.add_wrench(header_seconds(msg.header), wrench_values(msg),
                               msg.header.frame_id)
    if start is None:
        raise ValueError("no messages to replay")
    updates.append(session.update(next_update))
    return updates, start


def replay_bag(path: str | Path, sensor_frame: str | None = None, urdf: str | Path | None = None,
               joint_states_topic: str = DEFAULT_JOINT_STATES_TOPIC,
               wrench_topic: str = DEFAULT_WRENCH_TOPIC, update_rate_hz: float = 2.0,
               settings: Mapping[str, Any] | None = None) -> Replay:
    """Replay the bag ``path`` (a rosbag2 directory or one ``.mcap``/``.db3`` file) through the
    node's payload session for the F/T sensor frame ``sensor_frame`` (default: the first
    wrench's ``frame_id``; see the module docstring); ``settings``: the node's parameters
    (keyword arguments of :func:`~inertia_id_ros.online.session.payload_session`: window_sec,
    method, estimate_offset, flip_wrench_sign, detect_payload_change, ...). The robot comes from
    the URDF file ``urdf``, else from the bag's last ``/robot_description``. All messages are
    read first (memory grows with the bag). Raises :class:`~inertia_id_ros.errors.DataError`
    (bag), ``OSError`` or ``ValueError`` (URDF, settings),
    :class:`~inertia_id_ros.errors.FrameNotFound` (sensor frame)."""
    messages = read_bag_messages(path, [(joint_states_topic, JOINT_STATE_TYPE),
                                        (wrench_topic, WRENCH_TYPE)],
                                 optional=[] if urdf else [(ROBOT_DESCRIPTION_TOPIC, STRING_TYPE)])
    if urdf is None:
        descriptions = [msg.data for topic, _, msg in messages if topic == ROBOT_DESCRIPTION_TOPIC]
        if not descriptions:
            raise DataError(f"{path}: no {ROBOT_DESCRIPTION_TOPIC} in the bag; give the URDF")
        model = load_model(urdf_xml=descriptions[-1])
    else:
        model = load_model(urdf_path=urdf)
    if sensor_frame is None:
        sensor_frame = next(msg.header.frame_id for topic, _, msg in messages
                            if topic == wrench_topic)
        if not sensor_frame:
            raise DataError(f"{path}: the wrenches name no frame_id; give the sensor frame")
    session = payload_session(SensorKinematics(model, sensor_frame), **(settings or {}))
    updates, start = replay_messages(session, messages, update_rate_hz, joint_states_topic,
                                     wrench_topic)
    stats = session.estimator.stats()
    return Replay(updates=updates, start_time=start, received=stats.received,
                  dropped=stats.dropped, payload_changes=list(session.changes), source=str(path),
                  sensor_frame=sensor_frame, update_rate_hz=update_rate_hz,
                  config=session.estimator.config)


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
    from rosbags.rosbag2 import StoragePlugin, Writer
    from rosbags.typesys import Stores, get_typestore

    plugins = {"mcap": StoragePlugin.MCAP, "sqlite3": StoragePlugin.SQLITE3}
    if storage not in plugins:
        raise ValueError(f"storage must be one of {sorted(plugins)}, got {storage!r}")
    if not duration > 0 or not rate_hz > 0:
        raise ValueError(f"duration and rate must be positive, got {duration} s, {rate_hz} Hz")
    if Path(path).exists():
        raise ValueError(f"{path} exists; the bag must be a new directory")
    sim = simulator or PayloadSimulator.panda(seed=seed)
    changed = None
    if payload_change_at is not None:
        if changed_payload is None:
            raise ValueError("payload_change_at needs the changed payload's theta")
        changed = sim.with_payload(changed_payload)
    rng = np.random.default_rng(seed + 1)
    store = get_typestore(Stores.ROS2_KILTED)
    types = store.types
    Time, Header = types["builtin_interfaces/msg/Time"], types["std_msgs/msg/Header"]
    JointState, WrenchStamped = types[JOINT_STATE_TYPE], types[WRENCH_TYPE]
    Wrench, Vector3 = types["geometry_msgs/msg/Wrench"], types["geometry_msgs/msg/Vector3"]
    String = types[STRING_TYPE]

    def header(t: float, frame_id: str = ""):
        ns = int(round(t * 1e9))
        return Header(stamp=Time(sec=ns // 10**9, nanosec=ns % 10**9), frame_id=frame_id)

    def log_time(t: float, msgtype: str) -> int:
        return int(round((t + TRANSPORT_LATENCY[msgtype]) * 1e9))

    names = list(sim.joint_names)
    empty = np.zeros(0)
    n_total = int(round(duration * rate_hz))
    chunk = max(int(RECORD_CHUNK_SEC * rate_hz), 1)
    with Writer(path, version=9, storage_plugin=plugins[storage]) as writer:
        connections = {msgtype: writer.add_connection(topic, msgtype, typestore=store)
                       for topic, msgtype in ((ROBOT_DESCRIPTION_TOPIC, STRING_TYPE),
                                              (DEFAULT_JOINT_STATES_TOPIC, JOINT_STATE_TYPE),
                                              (DEFAULT_WRENCH_TOPIC, WRENCH_TYPE))}
        urdf = String(data=Path(example_robot_urdf("panda")).read_text())
        writer.write(connections[STRING_TYPE], int(round(start_stamp * 1e9)),
                     store.serialize_cdr(urdf, STRING_TYPE))
        for first in range(0, n_total, chunk):
            t = np.arange(first, min(first + chunk, n_total)) / rate_hz
            q, dq, wrench = sim.measure(t, rng)
            if changed is not None and t[-1] >= payload_change_at:
                after = t >= payload_change_at
                wrench[after] = changed.measure_wrench(t[after], rng)
            for i, ti in enumerate(t):
                stamp = start_stamp + ti
                joint_msg = JointState(header=header(stamp), name=names, position=q[i],
                                       velocity=dq[i], effort=empty)
                w = wrench[i]
                wrench_msg = WrenchStamped(header=header(stamp, sim.sensor_frame),
                                           wrench=Wrench(force=Vector3(x=w[0], y=w[1], z=w[2]),
                                                         torque=Vector3(x=w[3], y=w[4], z=w[5])))
                for msg, msgtype in ((joint_msg, JOINT_STATE_TYPE), (wrench_msg, WRENCH_TYPE)):
                    writer.write(connections[msgtype], log_time(stamp, msgtype),
                                 store.serialize_cdr(msg, msgtype))
    return sim
