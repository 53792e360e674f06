"""Conversions between ROS messages and the library's arrays and estimates."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

import numpy as np
from builtin_interfaces.msg import Duration, Time
from geometry_msgs.msg import Wrench, WrenchStamped
from sensor_msgs.msg import Imu, JointState
from trajectory_msgs.msg import JointTrajectory, JointTrajectoryPoint

from inertia_id_ros.chain.friction import DriveParameters
from inertia_id_ros.core.inertia import inertia_from_theta, theta_from_inertia
from inertia_id_ros.msg import (
    FTCalibration,
    InertialParameters,
    InertialParametersArray,
    JointDriveParameters,
)
from inertia_id_ros.online.ft_calibrator import CalibrationUpdate
from inertia_id_ros.online.link_estimator import LinkEstimate
from inertia_id_ros.online.payload_estimator import Estimate
from inertia_id_ros.online.payload_torque_estimator import PayloadTorqueEstimate
from inertia_id_ros.online.whole_body_config import WholeBodyEstimate

COUPLED_MOTOR = "coupled_motor"
"""The ``armature_source`` of a ``JointDriveParameters`` entry that is a motor turning with
several joints (``<joint>_motor``: its terms seen at its own joint), not a joint."""


def stamp_to_seconds(stamp: Time) -> float:
    """``builtin_interfaces/Time`` -> seconds (float)."""
    return stamp.sec + 1e-9 * stamp.nanosec


def seconds_to_stamp(t: float) -> Time:
    """Seconds (float, >= 0) -> ``builtin_interfaces/Time``."""
    sec = math.floor(t)
    nanosec = min(int(round((t - sec) * 1e9)), 999_999_999)
    return Time(sec=int(sec), nanosec=nanosec)


def joint_state_groups(msgs: Sequence[JointState]) -> list[Sequence[JointState]]:
    """Consecutive ``JointState`` messages that list the same joints with arrays of the same
    lengths, in order."""
    keys = [(tuple(m.name), len(m.position), len(m.velocity), len(m.effort)) for m in msgs]
    starts = [i for i in range(len(msgs)) if i == 0 or keys[i] != keys[i - 1]]
    return [msgs[a:b] for a, b in zip(starts, starts[1:] + [len(msgs)])]


def joint_state_arrays(
    group: Sequence[JointState],
) -> tuple[np.ndarray, tuple[str, ...], np.ndarray, np.ndarray | None, np.ndarray | None] | None:
    """A :func:`joint_state_groups` group as ``(t (N,) (s), names, q (N, m), dq (N, m) or None,
    effort (N, m) or None)``; ``None`` when its arrays do not match its names (to be offered one
    at a time, and rejected)."""
    first = group[0]
    names = tuple(first.name)
    if any(n not in (0, len(names)) for n in (len(first.velocity), len(first.effort))) or len(
        first.position
    ) != len(names):
        return None
    t = np.array([stamp_to_seconds(m.header.stamp) for m in group])
    return (
        t,
        names,
        np.array([m.position for m in group]),
        np.array([m.velocity for m in group]) if len(first.velocity) else None,
        np.array([m.effort for m in group]) if len(first.effort) else None,
    )


def joint_trajectory_msg(
    t_start: float,
    names: Sequence[str],
    times: np.ndarray,
    q: np.ndarray,
    dq: np.ndarray,
    ddq: np.ndarray,
) -> JointTrajectory:
    """A ``trajectory_msgs/JointTrajectory`` starting at the stamp ``t_start`` (s; 0: on
    arrival) through points at ``times`` (K,) (s from the start) with positions, velocities and
    accelerations (K, n) of joints ``names`` (what joint_trajectory_controller's quintic splines
    follow)."""
    msg = JointTrajectory(joint_names=list(names))
    msg.header.stamp = seconds_to_stamp(t_start)
    for k, t in enumerate(np.asarray(times, dtype=float)):
        sec = math.floor(t)
        msg.points.append(
            JointTrajectoryPoint(
                positions=q[k].tolist(),
                velocities=dq[k].tolist(),
                accelerations=ddq[k].tolist(),
                time_from_start=Duration(
                    sec=int(sec), nanosec=min(int(round((t - sec) * 1e9)), 999_999_999)
                ),
            )
        )
    return msg


def joint_trajectory_arrays(
    msg: JointTrajectory,
) -> tuple[float, tuple[str, ...], np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """``(t_start (s; 0: on arrival), names, times (K,) (s), q, dq, ddq (K, n))`` of a
    ``JointTrajectory``; missing velocities or accelerations are zeros. ValueError when a point's
    arrays do not match the joints."""
    names = tuple(msg.joint_names)
    n = len(names)
    times = np.array([p.time_from_start.sec + 1e-9 * p.time_from_start.nanosec for p in msg.points])
    q, dq, ddq = (
        _point_rows(msg, field, n, names) for field in ("positions", "velocities", "accelerations")
    )
    return stamp_to_seconds(msg.header.stamp), names, times, q, dq, ddq


def _point_rows(msg: JointTrajectory, field: str, n: int, names: tuple[str, ...]) -> np.ndarray:
    """(K, n) of the points' ``field`` (empty velocities or accelerations: zeros)."""
    rows = [getattr(p, field) for p in msg.points]
    if any(len(row) not in ((n,) if field == "positions" else (0, n)) for row in rows):
        raise ValueError(f"a point's {field} do not match the {n} joints {list(names)}")
    return np.array([row if len(row) else np.zeros(n) for row in rows], dtype=float).reshape(-1, n)


def wrench_batch(msgs: Sequence[WrenchStamped]) -> tuple[np.ndarray, np.ndarray, list[str]]:
    """``WrenchStamped`` messages as ``(t (N,) (s), wrenches (N, 6), frame_ids)``."""
    t = np.array([stamp_to_seconds(m.header.stamp) for m in msgs])
    wrenches = np.array(
        [
            (
                m.wrench.force.x,
                m.wrench.force.y,
                m.wrench.force.z,
                m.wrench.torque.x,
                m.wrench.torque.y,
                m.wrench.torque.z,
            )
            for m in msgs
        ]
    ).reshape(-1, 6)
    return t, wrenches, [m.header.frame_id for m in msgs]


def imu_arrays(msg: Imu) -> tuple[float, np.ndarray, np.ndarray, np.ndarray]:
    """A ``sensor_msgs/Imu`` as ``(t (s), orientation (4,) x, y, z, w, angular_velocity (3,),
    linear_acceleration (3,))``."""
    o, w, a = msg.orientation, msg.angular_velocity, msg.linear_acceleration
    return (
        stamp_to_seconds(msg.header.stamp),
        np.array([o.x, o.y, o.z, o.w]),
        np.array([w.x, w.y, w.z]),
        np.array([a.x, a.y, a.z]),
    )


def imu_msg(
    t: float,
    frame_id: str,
    orientation: np.ndarray,
    angular_velocity: np.ndarray,
    linear_acceleration: np.ndarray,
) -> Imu:
    """A ``sensor_msgs/Imu`` at time ``t`` (s): orientation x, y, z, w (world <- IMU),
    angular velocity (rad/s) and specific force (m/s^2) in the IMU frame ``frame_id``."""
    msg = Imu()
    msg.header.stamp = seconds_to_stamp(t)
    msg.header.frame_id = frame_id
    o, w, a = msg.orientation, msg.angular_velocity, msg.linear_acceleration
    o.x, o.y, o.z, o.w = (float(v) for v in orientation)
    w.x, w.y, w.z = (float(v) for v in angular_velocity)
    a.x, a.y, a.z = (float(v) for v in linear_acceleration)
    return msg


def wrench_to_array(wrench: Wrench) -> np.ndarray:
    """``geometry_msgs/Wrench`` -> ``[fx, fy, fz, tx, ty, tz]`` (6,)."""
    f, t = wrench.force, wrench.torque
    return np.array([f.x, f.y, f.z, t.x, t.y, t.z])


def array_to_wrench(values: np.ndarray) -> Wrench:
    """``[fx, fy, fz, tx, ty, tz]`` -> ``geometry_msgs/Wrench``."""
    msg = Wrench()
    (msg.force.x, msg.force.y, msg.force.z, msg.torque.x, msg.torque.y, msg.torque.z) = (
        float(v) for v in values
    )
    return msg


def wrench_stamped(t: float, frame_id: str, values: np.ndarray) -> WrenchStamped:
    """A ``WrenchStamped`` at time ``t`` (s) in ``frame_id``."""
    msg = WrenchStamped(wrench=array_to_wrench(values))
    msg.header.stamp = seconds_to_stamp(t)
    msg.header.frame_id = frame_id
    return msg


def joint_state(
    t: float,
    names: list[str],
    q: np.ndarray,
    dq: np.ndarray | None = None,
    effort: np.ndarray | None = None,
) -> JointState:
    """A ``JointState`` at time ``t`` (s): positions (rad or m), velocities, efforts."""
    msg = JointState(name=list(names), position=[float(v) for v in q])
    if dq is not None:
        msg.velocity = [float(v) for v in dq]
    if effort is not None:
        msg.effort = [float(v) for v in effort]
    msg.header.stamp = seconds_to_stamp(t)
    return msg


def theta_to_msg(
    theta: np.ndarray, frame_id: str, body_name: str, stamp: float = 0.0
) -> InertialParameters:
    """An ``InertialParameters`` holding only a body's ``theta`` (e.g. ground truth)."""
    msg = InertialParameters(body_name=body_name)
    msg.header.frame_id = frame_id
    msg.header.stamp = seconds_to_stamp(stamp)
    msg.theta = np.asarray(theta, dtype=float)
    mass, com, inertia_com = inertia_from_theta(theta)
    msg.inertia.m = mass
    msg.inertia.com.x, msg.inertia.com.y, msg.inertia.com.z = (float(v) for v in com)
    msg.inertia.ixx, msg.inertia.ixy, msg.inertia.ixz = (float(v) for v in inertia_com[0])
    msg.inertia.iyy, msg.inertia.iyz = float(inertia_com[1, 1]), float(inertia_com[1, 2])
    msg.inertia.izz = float(inertia_com[2, 2])
    return msg


def estimate_to_msg(estimate: Estimate, frame_id: str, body_name: str) -> InertialParameters:
    """An ``InertialParameters`` message from a (fully consistent) estimate."""
    msg = payload_torque_estimate_to_msg(estimate, frame_id, body_name)
    msg.sensor_offset = array_to_wrench(estimate.sensor_offset)
    return msg


def payload_torque_estimate_to_msg(
    estimate: Estimate | PayloadTorqueEstimate, frame_id: str, body_name: str
) -> InertialParameters:
    """An ``InertialParameters`` message from a (fully consistent) payload estimate, without
    the offsets: a payload from joint torques (``sensor_offset`` stays zero; the joints' torque
    offsets are no wrench)."""
    msg = theta_to_msg(estimate.theta, frame_id, body_name, estimate.t_last)
    msg.covariance = np.asarray(estimate.covariance, dtype=float).reshape(100)
    msg.min_pseudo_inertia_eig = float(estimate.min_pseudo_inertia_eig)
    msg.residual_rms = float(estimate.residual_rms)
    msg.num_samples = int(estimate.n_samples)
    msg.method = estimate.method
    msg.solve_time = float(estimate.solve_time)
    return msg


def msg_to_theta(msg: InertialParameters) -> np.ndarray:
    """``theta`` (10,) of an ``InertialParameters`` message."""
    return np.array(msg.theta, dtype=float)


def payload_theta_from_msg(msg: InertialParameters) -> np.ndarray:
    """``theta`` (10,) of a payload given as a message: its ``theta``, or, when that is all
    zero, its ``inertia`` (mass, COM, inertia about the COM) converted."""
    theta = msg_to_theta(msg)
    if np.any(theta != 0.0):
        return theta
    i = msg.inertia
    inertia = np.array([[i.ixx, i.ixy, i.ixz], [i.ixy, i.iyy, i.iyz], [i.ixz, i.iyz, i.izz]])
    return theta_from_inertia(i.m, np.array([i.com.x, i.com.y, i.com.z]), inertia)


def drive_to_msg(
    joint: str, drive: DriveParameters, armature_source: str = ""
) -> JointDriveParameters:
    """A ``JointDriveParameters`` for ``joint`` (SI units of :mod:`inertia_id_ros.chain.friction`);
    ``armature_source``: one of :data:`inertia_id_ros.online.link_estimator.ARMATURE_SOURCES`, or
    empty (not stated)."""
    return JointDriveParameters(
        name=joint,
        viscous=float(drive.viscous),
        coulomb=float(drive.coulomb),
        coulomb_velocity=float(drive.coulomb_velocity),
        offset=float(drive.offset),
        armature=float(drive.armature),
        armature_source=armature_source,
    )


def msg_to_drive(msg: JointDriveParameters) -> DriveParameters:
    """The :class:`~inertia_id_ros.chain.friction.DriveParameters` of a ``JointDriveParameters``."""
    return DriveParameters(
        viscous=msg.viscous,
        coulomb=msg.coulomb,
        offset=msg.offset,
        armature=msg.armature,
        coulomb_velocity=msg.coulomb_velocity,
    )


def links_to_msg(
    link_names: Sequence[str],
    thetas: np.ndarray,
    drives: Mapping[str, DriveParameters],
    stamp: float = 0.0,
    armature_sources: Mapping[str, str] | None = None,
) -> InertialParametersArray:
    """An ``InertialParametersArray`` of links ``link_names`` (n,) with ``thetas`` (n, 10), each
    about and in its own frame (named like the link), and the joints' ``drives`` (in order) with
    their ``armature_sources`` (``{joint: source}``; default: not stated)."""
    sources = armature_sources or {}
    msg = InertialParametersArray(
        bodies=[theta_to_msg(theta, link, link, stamp) for link, theta in zip(link_names, thetas)],
        joints=[
            drive_to_msg(joint, drive, sources.get(joint, "")) for joint, drive in drives.items()
        ],
    )
    msg.header.stamp = seconds_to_stamp(stamp)
    return msg


def link_estimate_to_msg(estimate: LinkEstimate) -> InertialParametersArray:
    """An ``InertialParametersArray`` from a (fully consistent) link estimate; every body carries
    the fit's residual RMS (N m), sample count, method and solve time, every joint where its
    armature comes from (``armature_source``); a coupled motor follows the joints as one more
    entry (its name, ``armature_source`` :data:`COUPLED_MOTOR`)."""
    msg = links_to_msg(
        estimate.link_names,
        estimate.thetas,
        estimate.drives,
        estimate.t_last,
        estimate.armature_sources,
    )
    msg.joints += [
        drive_to_msg(name, drive, COUPLED_MOTOR) for name, drive in estimate.motors.items()
    ]
    _set_fit_fields(msg, estimate)
    return msg


def _set_fit_fields(
    msg: InertialParametersArray, estimate: LinkEstimate | WholeBodyEstimate
) -> None:
    """Every body of ``msg`` gets its own ``min_pseudo_inertia_eig`` and the fit's residual RMS,
    sample count, method and solve time."""
    for body, min_eig in zip(msg.bodies, estimate.min_pseudo_inertia_eigs):
        body.min_pseudo_inertia_eig = float(min_eig)
        body.residual_rms = float(estimate.residual_rms)
        body.num_samples = int(estimate.n_samples)
        body.method = estimate.method
        body.solve_time = float(estimate.solve_time)


def msg_to_thetas(msg: InertialParametersArray) -> dict[str, np.ndarray]:
    """``{frame: theta (10,)}`` of the bodies of an ``InertialParametersArray``."""
    return {body.header.frame_id: msg_to_theta(body) for body in msg.bodies}


def whole_body_estimate_to_msg(estimate: WholeBodyEstimate) -> InertialParametersArray:
    """An ``InertialParametersArray`` from a (fully consistent) whole-body estimate: one body per
    URDF link (about and in its frame) with its identifiability, the estimated sensor offsets;
    every body carries the fit's residual RMS, sample count, method and solve time."""
    msg = links_to_msg(estimate.link_names, estimate.thetas, {}, estimate.t_last)
    _set_fit_fields(msg, estimate)
    msg.identifiability = list(estimate.labels)
    msg.identified_fraction = [float(v) for v in estimate.identified_fraction]
    msg.sensor_frames = list(estimate.offsets)
    msg.sensor_offsets = [array_to_wrench(v) for v in estimate.offsets.values()]
    return msg


def ft_calibration_to_msg(update: CalibrationUpdate) -> FTCalibration:
    """An online calibration's refit as a message (stamped with its newest sample)."""
    calibration, held_out = update.calibration, update.held_out
    msg = FTCalibration(
        matrix=calibration.matrix.ravel().tolist(),
        matrix_std=calibration.matrix_std.ravel().tolist(),
        offset=calibration.offset.tolist(),
        offset_std=calibration.offset_std.tolist(),
        held_out_rms_in_use=held_out.current.tolist(),
        held_out_rms=held_out.calibrated.tolist(),
        num_samples=int(calibration.n_samples),
        first_sample_time=float(update.t_first),
        applied=bool(update.applied),
    )
    msg.header.stamp = seconds_to_stamp(update.t_last)
    msg.header.frame_id = update.frame
    return msg
