"""Recordings written as users bring them: CSV files and ROS 2 bags."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np

from inertia_id_ros.io.data import JointStates


def write_csv(path: Path, states: JointStates, wrench: np.ndarray | None = None,
              kinds: Sequence[str] = ("q", "dq"), wrench_frame: str | None = None) -> Path:
    """A CSV file in the layout of :mod:`inertia_id_ros.io.data`."""
    columns, names = [states.t], ["t"]
    for kind in kinds:
        columns += list(getattr(states, kind).T)
        names += [f"{kind}:{j}" for j in states.joint_names]
    if wrench is not None:
        columns += list(wrench.T)
        names += [f"wrench:{c}" for c in ("fx", "fy", "fz", "tx", "ty", "tz")]
    lines = [f"# wrench_frame: {wrench_frame}"] if wrench_frame else []
    lines.append(",".join(names))
    lines += [",".join(repr(float(v)) for v in row) for row in np.column_stack(columns)]
    path.write_text("\n".join(lines) + "\n")
    return path


def write_bag(path: Path, storage: str, joint_t: np.ndarray, joint_names: Sequence[str],
              q: np.ndarray, dq: np.ndarray | None = None, effort: np.ndarray | None = None,
              wrench_t: np.ndarray | None = None, wrench: np.ndarray | None = None,
              frame: str = "sensor", joint_topic: str = "/joint_states",
              wrench_topic: str = "/ft_sensor/wrench",
              name_orders: Sequence[Sequence[int]] | None = None) -> Path:
    """A ROS 2 bag (``storage`` "mcap" or "sqlite3") with JointState and WrenchStamped messages
    written with rosbags; message ``k`` lists the joints in ``name_orders[k % len]`` order."""
    from rosbags.rosbag2 import StoragePlugin, Writer
    from rosbags.typesys import Stores, get_typestore

    store = get_typestore(Stores.ROS2_KILTED)
    types = store.types
    Time, Header = types["builtin_interfaces/msg/Time"], types["std_msgs/msg/Header"]
    JointState = types["sensor_msgs/msg/JointState"]
    Vector3, Wrench = types["geometry_msgs/msg/Vector3"], types["geometry_msgs/msg/Wrench"]
    WrenchStamped = types["geometry_msgs/msg/WrenchStamped"]

    def header(t: float, frame_id: str = ""):
        sec = int(np.floor(t))
        return Header(stamp=Time(sec=sec, nanosec=int(round((t - sec) * 1e9))), frame_id=frame_id)

    plugin = {"mcap": StoragePlugin.MCAP, "sqlite3": StoragePlugin.SQLITE3}[storage]
    orders = name_orders or [list(range(len(joint_names)))]
    empty = np.zeros(0)
    with Writer(path, version=9, storage_plugin=plugin) as writer:
        joints = writer.add_connection(joint_topic, JointState.__msgtype__, typestore=store)
        for k, t in enumerate(joint_t):
            order = list(orders[k % len(orders)])
            msg = JointState(header=header(t), name=[joint_names[i] for i in order],
                             position=q[k, order],
                             velocity=empty if dq is None else dq[k, order],
                             effort=empty if effort is None else effort[k, order])
            writer.write(joints, int(t * 1e9), store.serialize_cdr(msg, JointState.__msgtype__))
        if wrench is not None:
            wrenches = writer.add_connection(wrench_topic, WrenchStamped.__msgtype__,
                                             typestore=store)
            for t, w in zip(wrench_t, wrench):
                msg = WrenchStamped(header=header(t, frame),
                                    wrench=Wrench(force=Vector3(x=w[0], y=w[1], z=w[2]),
                                                  torque=Vector3(x=w[3], y=w[4], z=w[5])))
                writer.write(wrenches, int(t * 1e9),
                             store.serialize_cdr(msg, WrenchStamped.__msgtype__))
    return path


def write_whole_body_bag(path: Path, t: np.ndarray, joint_names: Sequence[str], q: np.ndarray,
                         dq: np.ndarray, imu_frame: str, imu: Sequence[np.ndarray],
                         wrenches: dict[str, tuple[str, np.ndarray]],
                         imu_topic: str = "/imu") -> Path:
    """An MCAP bag: JointState on /joint_states, Imu (``imu`` = angular velocity, specific
    force, orientation x, y, z, w; (N, 3), (N, 3), (N, 4)) and one WrenchStamped topic per entry
    ``{topic: (frame, (N, 6))}``, all stamped ``t``."""
    from rosbags.rosbag2 import StoragePlugin, Writer
    from rosbags.typesys import Stores, get_typestore

    store = get_typestore(Stores.ROS2_KILTED)
    types = store.types
    Time, Header = types["builtin_interfaces/msg/Time"], types["std_msgs/msg/Header"]
    Vector3, Quaternion = types["geometry_msgs/msg/Vector3"], types["geometry_msgs/msg/Quaternion"]
    Wrench = types["geometry_msgs/msg/Wrench"]
    WrenchStamped = types["geometry_msgs/msg/WrenchStamped"]
    Imu, JointState = types["sensor_msgs/msg/Imu"], types["sensor_msgs/msg/JointState"]

    def header(stamp: float, frame_id: str):
        sec = int(np.floor(stamp))
        return Header(stamp=Time(sec=sec, nanosec=int(round((stamp - sec) * 1e9))),
                      frame_id=frame_id)

    with Writer(path, version=9, storage_plugin=StoragePlugin.MCAP) as writer:
        connection = writer.add_connection("/joint_states", JointState.__msgtype__,
                                           typestore=store)
        for k, stamp in enumerate(t):
            msg = JointState(header=header(stamp, ""), name=list(joint_names), position=q[k],
                             velocity=dq[k], effort=np.zeros(0))
            writer.write(connection, int(stamp * 1e9),
                         store.serialize_cdr(msg, JointState.__msgtype__))
        connection = writer.add_connection(imu_topic, Imu.__msgtype__, typestore=store)
        for k, stamp in enumerate(t):
            w, a, o = imu[0][k], imu[1][k], imu[2][k]
            msg = Imu(header=header(stamp, imu_frame),
                      orientation=Quaternion(x=o[0], y=o[1], z=o[2], w=o[3]),
                      orientation_covariance=np.zeros(9),
                      angular_velocity=Vector3(x=w[0], y=w[1], z=w[2]),
                      angular_velocity_covariance=np.zeros(9),
                      linear_acceleration=Vector3(x=a[0], y=a[1], z=a[2]),
                      linear_acceleration_covariance=np.zeros(9))
            writer.write(connection, int(stamp * 1e9), store.serialize_cdr(msg, Imu.__msgtype__))
        for topic, (frame, values) in wrenches.items():
            connection = writer.add_connection(topic, WrenchStamped.__msgtype__, typestore=store)
            for stamp, v in zip(t, values):
                msg = WrenchStamped(header=header(stamp, frame),
                                    wrench=Wrench(force=Vector3(x=v[0], y=v[1], z=v[2]),
                                                  torque=Vector3(x=v[3], y=v[4], z=v[5])))
                writer.write(connection, int(stamp * 1e9),
                             store.serialize_cdr(msg, WrenchStamped.__msgtype__))
    return path
