"""Recordings written as users bring them: CSV files and ROS 2 bags."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np

from inertia_id_ros.formats.data import JointStates, write_joint_file


def write_csv(
    path: Path,
    states: JointStates,
    wrench: np.ndarray | None = None,
    kinds: Sequence[str] = ("q", "dq"),
    wrench_frame: str | None = None,
) -> Path:
    """A CSV file in the layout of :mod:`inertia_id_ros.formats.data` with the arrays ``kinds``
    of ``states`` (``q`` always)."""
    optional = {
        kind: getattr(states, kind) if kind in kinds else None for kind in ("dq", "ddq", "effort")
    }
    kept = JointStates(states.t, states.joint_names, states.q, **optional)
    write_joint_file(path, kept, wrench, wrench_frame or "")
    return path


def _header(store, t: float, frame_id: str = ""):
    """A ``std_msgs/Header`` stamped ``t`` (s) in ``frame_id``, of the rosbags ``store``."""
    types = store.types
    sec = int(np.floor(t))
    return types["std_msgs/msg/Header"](
        stamp=types["builtin_interfaces/msg/Time"](sec=sec, nanosec=int(round((t - sec) * 1e9))),
        frame_id=frame_id,
    )


def _write_wrenches(
    writer, store, topic: str, frame: str, stamps: np.ndarray, values: np.ndarray
) -> None:
    """WrenchStamped messages on ``topic``: ``values`` (N, 6: force, torque) in ``frame``,
    stamped ``stamps`` (N,) (s)."""
    types = store.types
    Vector3, Wrench = types["geometry_msgs/msg/Vector3"], types["geometry_msgs/msg/Wrench"]
    WrenchStamped = types["geometry_msgs/msg/WrenchStamped"]
    connection = writer.add_connection(topic, WrenchStamped.__msgtype__, typestore=store)
    for t, w in zip(stamps, values):
        msg = WrenchStamped(
            header=_header(store, t, frame),
            wrench=Wrench(
                force=Vector3(x=w[0], y=w[1], z=w[2]), torque=Vector3(x=w[3], y=w[4], z=w[5])
            ),
        )
        writer.write(connection, int(t * 1e9), store.serialize_cdr(msg, WrenchStamped.__msgtype__))


def write_bag(
    path: Path,
    storage: str,
    joint_t: np.ndarray,
    joint_names: Sequence[str],
    q: np.ndarray,
    dq: np.ndarray | None = None,
    effort: np.ndarray | None = None,
    wrench_t: np.ndarray | None = None,
    wrench: np.ndarray | None = None,
    frame: str = "sensor",
    joint_topic: str = "/joint_states",
    wrench_topic: str = "/ft_sensor/wrench",
    name_orders: Sequence[Sequence[int]] | None = None,
) -> Path:
    """A ROS 2 bag (``storage`` "mcap" or "sqlite3") with JointState and WrenchStamped messages
    written with rosbags; message ``k`` lists the joints in ``name_orders[k % len]`` order."""
    from rosbags.rosbag2 import StoragePlugin, Writer
    from rosbags.typesys import Stores, get_typestore

    store = get_typestore(Stores.ROS2_KILTED)
    JointState = store.types["sensor_msgs/msg/JointState"]
    plugin = {"mcap": StoragePlugin.MCAP, "sqlite3": StoragePlugin.SQLITE3}[storage]
    orders = name_orders or [list(range(len(joint_names)))]
    empty = np.zeros(0)
    with Writer(path, version=9, storage_plugin=plugin) as writer:
        joints = writer.add_connection(joint_topic, JointState.__msgtype__, typestore=store)
        for k, t in enumerate(joint_t):
            order = list(orders[k % len(orders)])
            msg = JointState(
                header=_header(store, t),
                name=[joint_names[i] for i in order],
                position=q[k, order],
                velocity=empty if dq is None else dq[k, order],
                effort=empty if effort is None else effort[k, order],
            )
            writer.write(joints, int(t * 1e9), store.serialize_cdr(msg, JointState.__msgtype__))
        if wrench is not None:
            _write_wrenches(writer, store, wrench_topic, frame, wrench_t, wrench)
    return path


def write_whole_body_bag(
    path: Path,
    t: np.ndarray,
    joint_names: Sequence[str],
    q: np.ndarray,
    dq: np.ndarray,
    imu_frame: str,
    imu: Sequence[np.ndarray],
    wrenches: dict[str, tuple[str, np.ndarray]],
    imu_topic: str = "/imu",
) -> Path:
    """An MCAP bag: JointState on /joint_states, Imu (``imu`` = angular velocity, specific
    force, orientation x, y, z, w; (N, 3), (N, 3), (N, 4)) and one WrenchStamped topic per entry
    ``{topic: (frame, (N, 6))}``, all stamped ``t``."""
    from rosbags.rosbag2 import StoragePlugin, Writer
    from rosbags.typesys import Stores, get_typestore

    store = get_typestore(Stores.ROS2_KILTED)
    types = store.types
    Vector3, Quaternion = types["geometry_msgs/msg/Vector3"], types["geometry_msgs/msg/Quaternion"]
    Imu, JointState = types["sensor_msgs/msg/Imu"], types["sensor_msgs/msg/JointState"]
    with Writer(path, version=9, storage_plugin=StoragePlugin.MCAP) as writer:
        connection = writer.add_connection("/joint_states", JointState.__msgtype__, typestore=store)
        for k, stamp in enumerate(t):
            msg = JointState(
                header=_header(store, stamp),
                name=list(joint_names),
                position=q[k],
                velocity=dq[k],
                effort=np.zeros(0),
            )
            writer.write(
                connection, int(stamp * 1e9), store.serialize_cdr(msg, JointState.__msgtype__)
            )
        connection = writer.add_connection(imu_topic, Imu.__msgtype__, typestore=store)
        for k, stamp in enumerate(t):
            w, a, o = imu[0][k], imu[1][k], imu[2][k]
            msg = Imu(
                header=_header(store, stamp, imu_frame),
                orientation=Quaternion(x=o[0], y=o[1], z=o[2], w=o[3]),
                orientation_covariance=np.zeros(9),
                angular_velocity=Vector3(x=w[0], y=w[1], z=w[2]),
                angular_velocity_covariance=np.zeros(9),
                linear_acceleration=Vector3(x=a[0], y=a[1], z=a[2]),
                linear_acceleration_covariance=np.zeros(9),
            )
            writer.write(connection, int(stamp * 1e9), store.serialize_cdr(msg, Imu.__msgtype__))
        for topic, (frame, values) in wrenches.items():
            _write_wrenches(writer, store, topic, frame, t, values)
    return path
