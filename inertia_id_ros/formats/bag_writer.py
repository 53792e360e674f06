"""Writing ROS 2 bags without DDS (rosbags' writer): joint states, wrenches, IMU readings and
strings as the package's nodes publish them, each logged a little after its stamp."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from inertia_id_ros.formats.data import IMU_TYPE, JOINT_STATE_TYPE, STRING_TYPE, WRENCH_TYPE
from inertia_id_ros.options import BAG_STORAGES

TRANSPORT_LATENCY = {JOINT_STATE_TYPE: 2e-4, WRENCH_TYPE: 4e-4, IMU_TYPE: 3e-4}
"""Simulated delay (s) from a message's stamp to its log (receive) time in recorded bags."""


class BagWriter:
    """A new rosbag2 (rosbags' writer, no DDS) and the messages recorded into it: each message
    logged :data:`TRANSPORT_LATENCY` of its type after its stamp."""

    def __init__(self, path: str | Path, storage: str) -> None:
        from rosbags.rosbag2 import StoragePlugin, Writer
        from rosbags.typesys import Stores, get_typestore

        if storage not in BAG_STORAGES:
            raise ValueError(f"storage must be one of {sorted(BAG_STORAGES)}, got {storage!r}")
        if Path(path).exists():
            raise ValueError(f"{path} exists; the bag must be a new directory")
        plugin = {"mcap": StoragePlugin.MCAP, "sqlite3": StoragePlugin.SQLITE3}[storage]
        self._writer = Writer(path, version=9, storage_plugin=plugin)
        self._store = get_typestore(Stores.ROS2_KILTED)
        self._types = self._store.types
        self._connections: dict[str, Any] = {}

    def __enter__(self) -> BagWriter:
        self._writer.open()
        return self

    def __exit__(self, *exc: Any) -> None:
        self._writer.close()

    def write(self, topic: str, msg: Any, stamp: float, latency: float | None = None) -> None:
        """Log ``msg`` on ``topic`` at ``stamp`` (s) plus ``latency`` (s; default: its type's
        :data:`TRANSPORT_LATENCY`)."""
        msgtype = msg.__msgtype__
        if topic not in self._connections:
            self._connections[topic] = self._writer.add_connection(
                topic, msgtype, typestore=self._store
            )
        delay = TRANSPORT_LATENCY[msgtype] if latency is None else latency
        self._writer.write(
            self._connections[topic],
            int(round((stamp + delay) * 1e9)),
            self._store.serialize_cdr(msg, msgtype),
        )

    def _header(self, t: float, frame_id: str = "") -> Any:
        ns = int(round(t * 1e9))
        return self._types["std_msgs/msg/Header"](
            stamp=self._types["builtin_interfaces/msg/Time"](sec=ns // 10**9, nanosec=ns % 10**9),
            frame_id=frame_id,
        )

    def _vector(self, v: np.ndarray) -> Any:
        return self._types["geometry_msgs/msg/Vector3"](x=float(v[0]), y=float(v[1]), z=float(v[2]))

    def string(self, text: str) -> Any:
        """A ``std_msgs/String`` of ``text``."""
        return self._types[STRING_TYPE](data=text)

    def joint_state(
        self,
        t: float,
        names: list[str],
        q: np.ndarray,
        dq: np.ndarray,
        effort: np.ndarray | None = None,
    ) -> Any:
        """A ``JointState`` stamped ``t`` (s): positions, velocities, efforts (empty: none)."""
        return self._types[JOINT_STATE_TYPE](
            header=self._header(t),
            name=names,
            position=np.asarray(q, dtype=float),
            velocity=np.asarray(dq, dtype=float),
            effort=np.zeros(0) if effort is None else np.asarray(effort, dtype=float),
        )

    def wrench(self, t: float, frame_id: str, w: np.ndarray) -> Any:
        """A ``WrenchStamped`` ``[fx, fy, fz, tx, ty, tz]`` (N, N m) in ``frame_id``."""
        types = self._types
        return types[WRENCH_TYPE](
            header=self._header(t, frame_id),
            wrench=types["geometry_msgs/msg/Wrench"](
                force=self._vector(w[:3]), torque=self._vector(w[3:])
            ),
        )

    def imu(
        self,
        t: float,
        frame_id: str,
        orientation: np.ndarray,
        angular_velocity: np.ndarray,
        linear_acceleration: np.ndarray,
    ) -> Any:
        """A ``sensor_msgs/Imu``: orientation x, y, z, w (world <- IMU), angular velocity (rad/s)
        and specific force (m/s^2) in ``frame_id``; covariances unknown (zero)."""
        types = self._types
        x, y, z, w = (float(v) for v in orientation)
        zeros = np.zeros(9)
        return types[IMU_TYPE](
            header=self._header(t, frame_id),
            orientation=types["geometry_msgs/msg/Quaternion"](x=x, y=y, z=z, w=w),
            orientation_covariance=zeros,
            angular_velocity=self._vector(angular_velocity),
            angular_velocity_covariance=zeros,
            linear_acceleration=self._vector(linear_acceleration),
            linear_acceleration_covariance=zeros,
        )
