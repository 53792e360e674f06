"""Replay a ROS 2 bag through the payload estimator exactly as the node runs online; record a
simulated bag to replay.

**Replay** (:func:`replay_bag`, ``inertia-id replay``): the bag's ``JointState`` and
``WrenchStamped`` messages go to a :class:`~inertia_id_ros.online.payload_estimator.PayloadEstimator` in arrival
order (the bag's log times, as the node's subscriptions got them; stamps from the headers, as the
node's callbacks use them; rejected samples are counted, not fatal). Every ``1 / update_rate_hz``
seconds of bag time, starting one period after the first message, the estimator processes the
buffered samples and solves, as the node's worker does (warm-started from the previous solution;
one more update follows the last message). Each update gives an estimate or the reason there is
none (:class:`ReplayUpdate`). The estimator's settings are the node's for the same parameters
(:func:`node_estimator_config`).

**Record** (:func:`record_simulation`, ``inertia-id record-sim``): a rosbag2 (MCAP or sqlite3)
written with rosbags (no DDS) of the simulated Panda that ``inertia-id-sim`` publishes
(:class:`~inertia_id_ros.sim.payload.PayloadSimulator`: payload, F/T offset, noise, stamps
``start + k / rate``): ``sensor_msgs/JointState`` on ``/joint_states`` (positions and velocities of
the 7 arm joints), ``geometry_msgs/WrenchStamped`` on ``/ft_sensor/wrench`` in ``panda_link8``,
each logged :data:`TRANSPORT_LATENCY` after its stamp, and the URDF on ``/robot_description``
(``std_msgs/String``, once at the start, as ``robot_state_publisher`` latches it).
"""

from __future__ import annotations

import csv
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from inertia_id_ros.core.covariance import com_covariance
from inertia_id_ros.io.data import (
    DEFAULT_JOINT_STATES_TOPIC,
    DEFAULT_WRENCH_TOPIC,
    JOINT_STATE_TYPE,
    WRENCH_TYPE,
    header_seconds,
    read_bag_messages,
    wrench_values,
)
from inertia_id_ros.errors import DataError
from inertia_id_ros.online.payload_estimator import (
    Estimate,
    EstimatorConfig,
    PayloadEstimator,
)
from inertia_id_ros.online.estimator import window_capacities
from inertia_id_ros.errors import EstimateUnavailable, SampleRejected
from inertia_id_ros.core.inertia import THETA_NAMES
from inertia_id_ros.core.kinematics import SensorKinematics
from inertia_id_ros.core.robots import example_robot_urdf, load_model
from inertia_id_ros.sim.payload import PayloadSimulator

ROBOT_DESCRIPTION_TOPIC = "/robot_description"
STRING_TYPE = "std_msgs/msg/String"
TRANSPORT_LATENCY = {JOINT_STATE_TYPE: 2e-4, WRENCH_TYPE: 4e-4}
"""Simulated delay (s) from a message's stamp to its log (receive) time in recorded bags."""
DEFAULT_START_STAMP = 1.7e9
"""First stamp (s) of recorded bags (a ROS epoch time)."""
RECORD_CHUNK_SEC = 1.0
"""Simulated seconds computed at once while recording (bounded memory)."""
OFFSET_NAMES = ("fx", "fy", "fz", "tx", "ty", "tz")


def node_estimator_config(window_sec: float = 10.0, method: str = "lmi",
                          estimate_offset: bool = True, flip_wrench_sign: bool = False,
                          max_input_rate_hz: float = 1000.0) -> EstimatorConfig:
    """The :class:`EstimatorConfig` the node builds from its parameters of the same names."""
    return EstimatorConfig(window_sec=window_sec, method=method, estimate_offset=estimate_offset,
                           wrench_sign=-1.0 if flip_wrench_sign else 1.0,
                           **window_capacities(window_sec, max_input_rate_hz))


@dataclass(frozen=True)
class ReplayUpdate:
    """One periodic update at bag time ``time`` (s): ``estimate``, or ``None`` with ``status``
    the :class:`EstimateUnavailable` reason (``"solver_error"`` for other failures, as the node
    logs them) and ``message``; ``status == "ok"`` otherwise."""

    time: float
    status: str
    estimate: Estimate | None = None
    message: str = ""


@dataclass
class Replay:
    """The updates of a replay, with the bag time of its first message ``start_time`` (s), the
    estimator's counters, and what was replayed."""

    updates: list[ReplayUpdate]
    start_time: float
    received: dict[str, int]
    dropped: dict[str, int]
    source: str = ""
    sensor_frame: str = ""
    update_rate_hz: float = 0.0
    config: EstimatorConfig = field(default_factory=EstimatorConfig)

    @property
    def estimates(self) -> list[ReplayUpdate]:
        """The updates that gave an estimate."""
        return [update for update in self.updates if update.estimate is not None]

    @property
    def final(self) -> Estimate | None:
        """The last estimate (``None`` if there was none)."""
        estimates = self.estimates
        return estimates[-1].estimate if estimates else None


def _update(estimator: PayloadEstimator, time: float) -> ReplayUpdate:
    """What the node's worker does once per period: process, solve."""
    estimator.process()
    try:
        return ReplayUpdate(time, "ok", estimator.solve())
    except EstimateUnavailable as why:
        return ReplayUpdate(time, why.reason, None, why.message)
    except Exception as error:  # the node keeps running (and its last estimate) on any failure
        return ReplayUpdate(time, "solver_error", None, repr(error))


def replay_messages(estimator: PayloadEstimator, messages: Iterable[tuple[str, int, Any]],
                    update_rate_hz: float, joint_states_topic: str = DEFAULT_JOINT_STATES_TOPIC,
                    wrench_topic: str = DEFAULT_WRENCH_TOPIC) -> tuple[list[ReplayUpdate], float]:
    """Feed ``messages`` ((topic, log time (ns), deserialised message), in log-time order) to
    ``estimator`` as the node's callbacks do, updating every ``1 / update_rate_hz`` s of log
    time; returns the updates and the first message's log time (s). Messages on other topics
    are skipped."""
    if not update_rate_hz > 0:
        raise ValueError(f"update_rate_hz must be positive, got {update_rate_hz}")
    period = 1.0 / update_rate_hz
    updates: list[ReplayUpdate] = []
    start = next_update = None
    for topic, log_time, msg in messages:
        now = 1e-9 * log_time
        if start is None:
            start, next_update = now, now + period
        while now >= next_update:
            updates.append(_update(estimator, next_update))
            next_update += period
        try:
            if topic == joint_states_topic:
                estimator.add_joint_state(header_seconds(msg.header), msg.name, msg.position,
                                          msg.velocity if len(msg.velocity) else None)
            elif topic == wrench_topic:
                estimator.add_wrench(header_seconds(msg.header), wrench_values(msg),
                                     msg.header.frame_id)
        except SampleRejected:
            pass  # counted by the estimator, as in the node
    if start is None:
        raise ValueError("no messages to replay")
    updates.append(_update(estimator, next_update))
    return updates, start


def replay_bag(path: str | Path, sensor_frame: str | None = None, urdf: str | Path | None = None,
               joint_states_topic: str = DEFAULT_JOINT_STATES_TOPIC,
               wrench_topic: str = DEFAULT_WRENCH_TOPIC, update_rate_hz: float = 2.0,
               config: EstimatorConfig | None = None) -> Replay:
    """Replay the bag ``path`` (a rosbag2 directory or one ``.mcap``/``.db3`` file) through a
    payload estimator of the F/T sensor frame ``sensor_frame`` (default: the first wrench's
    ``frame_id``; see the module docstring). The robot comes from the URDF file ``urdf``, else
    from the bag's last ``/robot_description``. All messages are read first (memory grows with
    the bag). Raises :class:`DataError` (bag), ``OSError`` or ``ValueError`` (URDF, settings),
    :class:`~inertia_id_ros.core.robots.FrameNotFound` (sensor frame)."""
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
    estimator = PayloadEstimator(SensorKinematics(model, sensor_frame), config or
                                 node_estimator_config())
    updates, start = replay_messages(estimator, messages, update_rate_hz, joint_states_topic,
                                     wrench_topic)
    stats = estimator.stats()
    return Replay(updates=updates, start_time=start, received=stats.received,
                  dropped=stats.dropped, source=str(path), sensor_frame=sensor_frame,
                  update_rate_hz=update_rate_hz, config=estimator.config)


# ---- output --------------------------------------------------------------------------------

CSV_COLUMNS = (("time", "elapsed", "status", "method", "n_samples")
               + THETA_NAMES + tuple(f"offset_{n}" for n in OFFSET_NAMES)
               + tuple(f"std_{n}" for n in THETA_NAMES) + ("com_x", "com_y", "com_z")
               + ("std_com_x", "std_com_y", "std_com_z")
               + ("min_pseudo_inertia_eig", "residual_rms", "condition_number", "solve_time"))
"""Columns of :func:`write_csv`: bag time and time since the first message (s), the status
(``ok`` or why there is no estimate; numbers ``nan`` then), the samples in the window, ``theta``
(SI), F/T offset (N, N m), standard deviations of ``theta``, COM and its standard deviations (m,
sensor frame), consistency margin (kg m^2), residual RMS, excitation condition number, solve time
(s)."""


def update_record(update: ReplayUpdate, start_time: float) -> dict[str, Any]:
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
              **{f"offset_{n}": v for n, v in zip(OFFSET_NAMES, estimate.sensor_offset)},
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
                      simulator: PayloadSimulator | None = None) -> PayloadSimulator:
    """Write the rosbag2 directory ``path`` (must not exist) with ``duration`` s of the simulated
    Panda at ``rate_hz`` (see the module docstring), ``storage`` ``"mcap"`` or ``"sqlite3"``;
    trajectory and payload of ``PayloadSimulator.panda(seed=seed)`` (or ``simulator``), noise from
    seed ``seed + 1`` (as ``inertia-id-sim``). Returns the simulator (its ``true_theta`` and
    ``true_offset`` are the truth)."""
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
