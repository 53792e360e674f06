"""Recordings of the simulated robots. Bags, written without DDS as the simulator node publishes
them: the Panda with a wrist F/T sensor (:func:`record_simulation`), a chain's joint torques
(:func:`record_joint_torques`), floating-base robots (:func:`record_whole_body`); each holds the
URDF on ``/robot_description``; ``inertia-id replay`` runs the node's session over it. Files of the
package's NPZ/CSV layout with the same samples: :func:`write_simulation`,
:func:`write_joint_torques`."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path

import numpy as np

from inertia_id_ros.chain.links import JointTorqueData
from inertia_id_ros.core.robots import example_robot_urdf
from inertia_id_ros.formats.bag_writer import BagWriter
from inertia_id_ros.formats.data import ROBOT_DESCRIPTION_TOPIC, JointStates, write_joint_file
from inertia_id_ros.options import (
    DEFAULT_IMU_TOPIC,
    DEFAULT_JOINT_STATES_TOPIC,
    DEFAULT_WRENCH_TOPIC,
)
from inertia_id_ros.sim.payload import PayloadSimulator
from inertia_id_ros.sim.torques import JointTorqueSimulator
from inertia_id_ros.sim.whole_body_simulator import WholeBodySimulator

DEFAULT_START_STAMP = 1.7e9
"""First stamp (s) of recorded bags (a ROS epoch time)."""


RECORD_CHUNK_SEC = 1.0
"""Simulated seconds computed at once while recording (bounded memory)."""


def record_simulation(
    path: str | Path,
    duration: float,
    rate_hz: float = 1000.0,
    seed: int = 0,
    storage: str = "mcap",
    start_stamp: float = DEFAULT_START_STAMP,
    simulator: PayloadSimulator | None = None,
    payload_change_at: float | None = None,
    changed_payload: np.ndarray | None = None,
) -> PayloadSimulator:
    """Write the rosbag2 directory ``path`` (must not exist) with ``duration`` s of the simulated
    Panda at ``rate_hz`` (see the module docstring), ``storage`` ``"mcap"`` or ``"sqlite3"``;
    trajectory and payload of ``PayloadSimulator.panda(seed=seed)`` (or ``simulator``), noise from
    seed ``seed + 1`` (as ``inertia-id-sim``). From ``payload_change_at`` s of simulated time on,
    the payload is ``changed_payload`` (theta (10,) about the sensor frame; a grasp: the same
    motion and F/T offset). Returns the simulator (its ``true_theta`` and ``true_offset`` are the
    truth, before any change)."""
    sim = simulator or PayloadSimulator.panda(seed=seed)
    samples = _payload_samples(sim, duration, rate_hz, seed, payload_change_at, changed_payload)
    names = list(sim.joint_names)
    with BagWriter(path, storage) as bag:
        urdf = Path(example_robot_urdf("panda")).read_text()
        bag.write(ROBOT_DESCRIPTION_TOPIC, bag.string(urdf), start_stamp, latency=0.0)
        for t, q, dq, wrench in samples:
            for i, stamp in enumerate(start_stamp + t):
                bag.write(
                    DEFAULT_JOINT_STATES_TOPIC, bag.joint_state(stamp, names, q[i], dq[i]), stamp
                )
                bag.write(
                    DEFAULT_WRENCH_TOPIC, bag.wrench(stamp, sim.sensor_frame, wrench[i]), stamp
                )
    return sim


def write_simulation(
    path: str | Path,
    duration: float,
    rate_hz: float = 1000.0,
    seed: int = 0,
    payload_change_at: float | None = None,
    changed_payload: np.ndarray | None = None,
) -> PayloadSimulator:
    """:func:`record_simulation`'s samples (the same ones for the same arguments) as an NPZ or
    CSV file ``path`` (:func:`~inertia_id_ros.formats.data.write_joint_file`): joint positions and
    velocities and the wrenches in the sensor frame, stamps from 0 s."""
    sim = PayloadSimulator.panda(seed=seed)
    chunks = list(
        _payload_samples(sim, duration, rate_hz, seed, payload_change_at, changed_payload)
    )
    t, q, dq, wrench = (np.concatenate(parts) for parts in zip(*chunks))
    states = JointStates(t, tuple(sim.joint_names), q, dq)
    write_joint_file(path, states, wrench, sim.sensor_frame)
    return sim


def _payload_samples(
    sim: PayloadSimulator,
    duration: float,
    rate_hz: float,
    seed: int,
    payload_change_at: float | None,
    changed_payload: np.ndarray | None,
) -> Iterator[tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]]:
    """``(t, q, dq, wrench)`` of ``sim``, :data:`RECORD_CHUNK_SEC` at a time (see
    :func:`record_simulation`)."""
    if not duration > 0 or not rate_hz > 0:
        raise ValueError(f"duration and rate must be positive, got {duration} s, {rate_hz} Hz")
    changed = None
    if payload_change_at is not None:
        if changed_payload is None:
            raise ValueError("payload_change_at needs the changed payload's theta")
        changed = sim.with_payload(changed_payload)
    rng = np.random.default_rng(seed + 1)
    for t in _chunks(duration, rate_hz):
        q, dq, wrench = sim.measure(t, rng)
        if changed is not None and payload_change_at is not None and t[-1] >= payload_change_at:
            after = t >= payload_change_at
            wrench[after] = changed.measure_wrench(t[after], rng)
        yield t, q, dq, wrench


def record_whole_body(
    path: str | Path,
    simulator: WholeBodySimulator,
    duration: float,
    rate_hz: float = 200.0,
    seed: int = 0,
    storage: str = "mcap",
    start_stamp: float = DEFAULT_START_STAMP,
    with_effort: bool = False,
    joint_states_topic: str = DEFAULT_JOINT_STATES_TOPIC,
    imu_topic: str = DEFAULT_IMU_TOPIC,
    sensors_stop: Mapping[str, float] | None = None,
) -> dict[str, str]:
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
    with BagWriter(path, storage) as bag:
        bag.write(ROBOT_DESCRIPTION_TOPIC, bag.string(sim.cad_xml), start_stamp, latency=0.0)
        for t in _chunks(duration, rate_hz):
            data = sim.measure(sim.simulate(t), with_ddq=False, with_effort=with_effort, rng=rng)
            effort = data.get("effort")
            for i, (ti, stamp) in enumerate(zip(t, start_stamp + t)):
                bag.write(
                    joint_states_topic,
                    bag.joint_state(
                        stamp,
                        names,
                        data["q"][i],
                        data["dq"][i],
                        None if effort is None else effort[i],
                    ),
                    stamp,
                )
                bag.write(
                    imu_topic,
                    bag.imu(
                        stamp,
                        sim.imu_frame,
                        data["imu_orientation"][i],
                        data["imu_angular_velocity"][i],
                        data["imu_linear_acceleration"][i],
                    ),
                    stamp,
                )
                for k, (topic, frame) in enumerate(ft_topics.items()):
                    if ti < stops[k]:
                        bag.write(topic, bag.wrench(stamp, frame, data["ft_wrench"][i, k]), stamp)
    return ft_topics


def record_joint_torques(
    path: str | Path,
    simulator: JointTorqueSimulator,
    urdf_xml: str,
    duration: float,
    rate_hz: float = 1000.0,
    seed: int = 0,
    storage: str = "mcap",
    start_stamp: float = DEFAULT_START_STAMP,
    joint_states_topic: str = DEFAULT_JOINT_STATES_TOPIC,
) -> None:
    """Write the rosbag2 directory ``path`` (must not exist) with ``duration`` s of
    ``simulator``'s chain at ``rate_hz``, ``storage`` ``"mcap"`` or ``"sqlite3"``, as the
    simulator node publishes a robot without an F/T sensor: ``sensor_msgs/JointState`` of its
    joints (positions, velocities, efforts with torque noise from seed ``seed + 1``), stamps
    ``start_stamp + k / rate_hz``, each logged :data:`TRANSPORT_LATENCY` after it, and
    ``urdf_xml`` on ``/robot_description``."""
    names = list(simulator.joint_names)
    with BagWriter(path, storage) as bag:
        bag.write(ROBOT_DESCRIPTION_TOPIC, bag.string(urdf_xml), start_stamp, latency=0.0)
        for t, data in _torque_samples(simulator, duration, rate_hz, seed):
            for i, stamp in enumerate(start_stamp + t):
                bag.write(
                    joint_states_topic,
                    bag.joint_state(
                        stamp, names, data.positions[i], data.velocities[i], data.efforts[i]
                    ),
                    stamp,
                )


def write_joint_torques(
    path: str | Path,
    simulator: JointTorqueSimulator,
    duration: float,
    rate_hz: float = 1000.0,
    seed: int = 0,
) -> None:
    """:func:`record_joint_torques`' samples (the same ones for the same arguments) as an NPZ or
    CSV file ``path`` (:func:`~inertia_id_ros.formats.data.write_joint_file`): joint positions,
    velocities and efforts, stamps from 0 s."""
    chunks = list(_torque_samples(simulator, duration, rate_hz, seed))
    t = np.concatenate([chunk for chunk, _ in chunks])
    q, dq, effort = (
        np.concatenate([getattr(data, kind) for _, data in chunks])
        for kind in ("positions", "velocities", "efforts")
    )
    write_joint_file(path, JointStates(t, tuple(simulator.joint_names), q, dq, effort=effort))


def _torque_samples(
    simulator: JointTorqueSimulator, duration: float, rate_hz: float, seed: int
) -> Iterator[tuple[np.ndarray, JointTorqueData]]:
    """``(t, samples)`` of ``simulator``, :data:`RECORD_CHUNK_SEC` at a time (see
    :func:`record_joint_torques`)."""
    if not duration > 0 or not rate_hz > 0:
        raise ValueError(f"duration and rate must be positive, got {duration} s, {rate_hz} Hz")
    rng = np.random.default_rng(seed + 1)
    for t in _chunks(duration, rate_hz):
        yield t, simulator.measure(t, rng)


def _chunks(duration: float, rate_hz: float) -> Iterable[np.ndarray]:
    """Sample times ``k / rate_hz`` (s) of ``duration`` s, :data:`RECORD_CHUNK_SEC` at a time."""
    n_total = int(round(duration * rate_hz))
    chunk = max(int(RECORD_CHUNK_SEC * rate_hz), 1)
    for first in range(0, n_total, chunk):
        yield np.arange(first, min(first + chunk, n_total)) / rate_hz
