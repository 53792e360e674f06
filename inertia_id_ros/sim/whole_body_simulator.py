"""Simulated floating-base robots: joints and base moving, contacts, F/T sensors, an IMU.

A robot stands on a frame held fixed in the world, follows a base trajectory, or is fixed on a
stand (:class:`WholeBodySimulator`; the named robots are
:mod:`inertia_id_ros.sim.whole_body_robots`).

The truth is independent of the identification's regressors: the robot is simulated with pinocchio's
RNEA on a model built from a *true* URDF (the given one, the *CAD*, with each link's mass, COM and
inertia perturbed, :func:`~inertia_id_ros.sim.urdf_inertials.perturb_inertials`) in which each
internal sensor's fixed joint is a revolute joint held at zero, so ``data.f`` at that joint is the
wrench the root side exerts on the part beyond the sensor (its contact included), in the sensor
frame. The contact wrenches are the ones the base equations require: RNEA with them as external
forces gives a zero free-flyer wrench (checked in the tests).

Conventions of the recorded data (:meth:`WholeBodySimulator.record`, the whole-body NPZ keys):
``imu_orientation`` x, y, z, w (world <- IMU frame, world z up); ``imu_angular_velocity`` in the
IMU frame; ``imu_linear_acceleration`` the specific force in the IMU frame (+9.81 up at rest);
``ft_wrench`` (N, S, 6) in each sensor's frame: ``contact`` the wrench the environment exerts on the
robot about the frame's origin, ``internal`` what the root side exerts on the part beyond.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
import pinocchio as pin
from scipy.spatial.transform import Rotation

from inertia_id_ros.core.inertia import check_consistency
from inertia_id_ros.errors import ConfigError
from inertia_id_ros.sim.payload import Trajectory
from inertia_id_ros.sim.urdf_inertials import link_inertials, perturb_inertials

FT_KINDS = ("contact", "internal")
"""F/T sensor kinds of the whole-body data (``ft_types``)."""


@dataclass(frozen=True)
class NoiseModel:
    """Sensor noise (standard deviations of white noise) and constant offsets' ranges, SI units.

    Encoders: ``position_std`` (rad), ``velocity_std`` (rad/s), ``effort_std`` (N m). IMU:
    ``orientation_std`` (rad, a random rotation), ``gyro_std`` (rad/s), ``gyro_bias`` (rad/s, a
    constant per axis drawn within +-), ``accel_std``/``accel_bias`` (m/s^2). F/T (N, N m):
    ``internal_std``, ``contact_std`` (6,); internal sensors carry constant offsets drawn uniformly
    within +-``internal_offset`` (6,); contact sensors none.
    """

    position_std: float = 5e-5
    velocity_std: float = 2e-3
    effort_std: float = 0.05
    orientation_std: float = 3e-3
    gyro_std: float = 5e-3
    gyro_bias: float = 3e-3
    accel_std: float = 0.03
    accel_bias: float = 0.03
    internal_std: tuple[float, ...] = (0.2, 0.2, 0.2, 0.01, 0.01, 0.01)
    contact_std: tuple[float, ...] = (0.5, 0.5, 0.5, 0.02, 0.02, 0.02)
    internal_offset: tuple[float, ...] = (5.0, 5.0, 5.0, 0.3, 0.3, 0.3)

    @classmethod
    def none(cls) -> NoiseModel:
        """No noise, no offsets, no biases."""
        zero = (0.0,) * 6
        return cls(0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, zero, zero, zero)


def _split_at_sensors(urdf_xml: str, sensor_joints: Sequence[str]) -> str:
    """``urdf_xml`` with the fixed joints ``sensor_joints`` made revolute joints (to be held at
    zero): pinocchio then keeps the part beyond each as its own body, and RNEA's joint force there
    is the wrench the sensor transmits."""
    root = ET.fromstring(urdf_xml)
    joints = {joint.get("name"): joint for joint in root.findall("joint")}
    for name in sensor_joints:
        joint = joints[name]
        joint.set("type", "revolute")
        ET.SubElement(joint, "axis", xyz="0 0 1")
        ET.SubElement(joint, "limit", lower="-1", upper="1", effort="1000", velocity="1")
    return ET.tostring(root, encoding="unicode")


@dataclass
class WholeBodyMotion:
    """True motion and forces at N sample times (SI units).

    ``q_full, v_full, a_full`` (N, nq), (N, nv): the simulation model's configuration, velocity,
    acceleration (free flyer: position, quaternion x, y, z, w; body twist and its derivative);
    ``q, dq, ddq, effort`` (N, n): the moving joints; ``ft_wrench`` (N, S, 6): every sensor's
    wrench without noise or offset; ``imu_orientation`` (N, 4), ``imu_angular_velocity``,
    ``imu_angular_acceleration``, ``imu_linear_acceleration`` (N, 3) (IMU frame);
    ``base_residual`` (N, 6): the free-flyer wrench RNEA leaves with the contact wrenches applied
    (zero up to rounding; on a stand, the stand's wrench on the base).
    """

    t: np.ndarray
    q_full: np.ndarray
    v_full: np.ndarray
    a_full: np.ndarray
    q: np.ndarray
    dq: np.ndarray
    ddq: np.ndarray
    effort: np.ndarray
    ft_wrench: np.ndarray
    imu_orientation: np.ndarray
    imu_angular_velocity: np.ndarray
    imu_angular_acceleration: np.ndarray
    imu_linear_acceleration: np.ndarray
    base_residual: np.ndarray


@dataclass
class WholeBodySimulator:
    """A floating-base robot with F/T sensors and an IMU; see the module docstring.

    ``cad_xml``: the robot's URDF (the prior the identification gets); ``true_xml``: the same robot
    with the true inertials (default: ``cad_xml`` perturbed by :func:`perturb_inertials` with
    ``seed``); ``ft_sensors``: ``(frame, kind)`` pairs, ``kind`` in :data:`FT_KINDS` (internal
    sensors are fixed joints; contact sensors are frames where a contact acts); ``stance_frame``:
    a frame held fixed in the world, tilted by ``stance_tilt`` (roll, pitch; rad), where the ground
    acts (the base moves as the joints require; the ground's wrench is measured only if the frame
    is a contact sensor's), else the base
    follows ``base_trajectory(t) -> (x, dx, ddx)`` (N, 6): position (m) and Z-Y-X angles (rad) of
    the base in the world, relative to ``base_height`` above the origin; several contacts share
    the wrench the base equations require (least norm; ``point_contacts``: forces only); with
    neither, the base is fixed (a stand), level at ``base_height``: the stand carries the
    robot (its wrench is ``base_residual``, not measured) and there are no contact sensors.
    ``joint_trajectory(t) -> (q, dq, ddq)`` (N, n) of :attr:`joint_names` (all moving joints).
    """

    cad_xml: str
    ft_sensors: Sequence[tuple[str, str]]
    imu_frame: str
    joint_trajectory: Trajectory
    stance_frame: str | None = None
    stance_tilt: tuple[float, float] = (0.0, 0.0)
    base_trajectory: Trajectory | None = None
    base_height: float = 0.0
    point_contacts: bool = False
    true_xml: str | None = None
    noise: NoiseModel = field(default_factory=NoiseModel)
    seed: int = 0

    def __post_init__(self) -> None:
        rng = np.random.default_rng(self.seed)
        if self.true_xml is None:
            self.true_xml = perturb_inertials(self.cad_xml, rng)
        self.ft_sensors = tuple((str(frame), str(kind)) for frame, kind in self.ft_sensors)
        bad = [f"{frame}: {kind!r}" for frame, kind in self.ft_sensors if kind not in FT_KINDS]
        if bad:
            raise ConfigError(f"F/T sensor kind must be one of {FT_KINDS}; got {', '.join(bad)}")
        if self.stance_frame is not None and self.base_trajectory is not None:
            raise ConfigError("give at most one of stance_frame and base_trajectory")
        internal = [frame for frame, kind in self.ft_sensors if kind == "internal"]
        self.contact_frames = tuple(f for f, k in self.ft_sensors if k == "contact")
        if bool(self.contact_frames) != self.moving_base and self.stance_frame is None:
            raise ConfigError(
                "a base on a trajectory needs at least one contact sensor; a fixed "
                "base (neither stance_frame nor base_trajectory) none"
            )
        ground = (
            ()
            if self.stance_frame is None or self.stance_frame in self.contact_frames
            else (self.stance_frame,)
        )
        model = pin.buildModelFromXML(
            _split_at_sensors(self.true_xml, internal), pin.JointModelFreeFlyer()
        )
        for frame in (*(f for f, _ in self.ft_sensors), *ground, self.imu_frame):
            if not model.existFrame(frame):
                raise ConfigError(f"frame {frame!r} is not in the URDF")
        self.model, self.data = model, model.createData()
        self._sensor_joints = [model.getJointId(name) for name in internal]
        sensor_set = set(self._sensor_joints)
        self._moving = [j for j in range(2, model.njoints) if j not in sensor_set]
        self.joint_names: tuple[str, ...] = tuple(model.names[j] for j in self._moving)
        """The robot's moving joints (free flyer and sensor joints excluded), in model order."""
        self._q_index = np.array([model.joints[j].idx_q for j in self._moving])
        self._v_index = np.array([model.joints[j].idx_v for j in self._moving])
        self._contact_ids = [model.getFrameId(f) for f in self.contact_frames + ground]
        """Frames where the environment acts: the contact sensors', then an unmeasured stance."""
        self._stance_id = None if self.stance_frame is None else model.getFrameId(self.stance_frame)
        self._imu_id = model.getFrameId(self.imu_frame)
        self.true_links: dict[str, np.ndarray] = link_inertials(self.true_xml)
        """True ``theta`` (10,) per URDF link with mass, about and in the link frame."""
        noise = self.noise
        self.ft_offsets = np.array(
            [
                rng.uniform(-1, 1, 6) * np.asarray(noise.internal_offset)
                if kind == "internal"
                else np.zeros(6)
                for _, kind in self.ft_sensors
            ]
        ).reshape(-1, 6)
        """Constant offset (S, 6) of each sensor (internal ones; N, N m)."""
        self.ft_noise_std = np.array(
            [
                noise.internal_std if kind == "internal" else noise.contact_std
                for _, kind in self.ft_sensors
            ],
            dtype=float,
        ).reshape(-1, 6)
        self.gyro_bias = rng.uniform(-1, 1, 3) * noise.gyro_bias
        self.accel_bias = rng.uniform(-1, 1, 3) * noise.accel_bias

    @property
    def moving_base(self) -> bool:
        """Whether the base moves (a stance or a prescribed trajectory; else on a stand)."""
        return self.stance_frame is not None or self.base_trajectory is not None

    @property
    def true_theta(self) -> tuple[tuple[str, ...], np.ndarray]:
        """(link names (L,), theta (L, 10)) of the true robot."""
        names = tuple(self.true_links)
        return names, np.array([self.true_links[name] for name in names])

    def _full_state(
        self, q: np.ndarray, dq: np.ndarray, ddq: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The model's (q, v, a) at one sample with the base at identity, at rest."""
        model = self.model
        q_full = pin.neutral(model)
        v_full, a_full = np.zeros(model.nv), np.zeros(model.nv)
        q_full[self._q_index], v_full[self._v_index], a_full[self._v_index] = q, dq, ddq
        return q_full, v_full, a_full

    def _stance_base(self, q_full: np.ndarray, v_full: np.ndarray, a_full: np.ndarray) -> None:
        """Set the base of (q_full, v_full, a_full) in place so that the stance frame stays at
        the world's origin, tilted by ``stance_tilt``: its velocity and acceleration are zero."""
        model, data, fid = self.model, self.data, self._stance_id
        pin.forwardKinematics(model, data, q_full, v_full, a_full)
        base_to_stance = pin.updateFramePlacement(model, data, fid)
        world_to_stance = pin.SE3(pin.rpy.rpyToMatrix(*self.stance_tilt, 0.0), np.zeros(3))
        q_full[:7] = pin.SE3ToXYZQUAT(world_to_stance * base_to_stance.inverse())
        local = pin.ReferenceFrame.LOCAL
        pin.computeJointJacobians(model, data, q_full)
        jacobian = pin.getFrameJacobian(model, data, fid, local)
        v_full[:6] = -np.linalg.solve(jacobian[:, :6], jacobian[:, 6:] @ v_full[6:])
        pin.forwardKinematics(model, data, q_full, v_full, a_full)  # a_full[:6] is zero
        drift = pin.getFrameAcceleration(model, data, fid, local).vector
        a_full[:6] = -np.linalg.solve(jacobian[:, :6], drift)

    def _prescribed_base(
        self,
        x: np.ndarray,
        dx: np.ndarray,
        ddx: np.ndarray,
        q_full: np.ndarray,
        v_full: np.ndarray,
        a_full: np.ndarray,
    ) -> None:
        """Set the base from position and Z-Y-X angles (6,) and their derivatives: twist and
        acceleration in the base frame."""
        yaw, pitch, roll = x[3:]
        rotation = pin.rpy.rpyToMatrix(roll, pitch, yaw)
        position = x[:3] + np.array([0.0, 0.0, self.base_height])
        q_full[:7] = pin.SE3ToXYZQUAT(pin.SE3(rotation, position))
        e_matrix = self._euler_matrix(x[3:])
        omega = e_matrix @ dx[3:]
        # dE/dt d(angles), E's derivative along the motion (central difference, error ~1e-12)
        step = 1e-6
        e_next = self._euler_matrix(x[3:] + step * dx[3:])
        e_dot = (e_next - self._euler_matrix(x[3:] - step * dx[3:])) / (2 * step)
        omega_dot = e_matrix @ ddx[3:] + e_dot @ dx[3:]
        v_linear = rotation.T @ dx[:3]
        # body-frame derivative of the body twist: d/dt(R^T p') = R^T p'' - w x (R^T p')
        v_full[:6] = np.concatenate([v_linear, omega])
        a_full[:6] = np.concatenate([rotation.T @ ddx[:3] - np.cross(omega, v_linear), omega_dot])

    @staticmethod
    def _euler_matrix(angles: np.ndarray) -> np.ndarray:
        """E (3, 3) with body angular velocity ``E d(angles)`` for Z-Y-X angles (yaw, pitch,
        roll)."""
        yaw, pitch, roll = angles
        rotation = pin.rpy.rpyToMatrix(roll, pitch, yaw)
        return np.column_stack(
            [
                rotation.T @ np.array([0.0, 0.0, 1.0]),
                pin.rpy.rpyToMatrix(roll, 0.0, 0.0).T @ np.array([0.0, 1.0, 0.0]),
                np.array([1.0, 0.0, 0.0]),
            ]
        )

    def _contact_wrenches(self, tau_base: np.ndarray) -> np.ndarray:
        """(C, 6) contact wrenches (contact frames) whose sum at the base is ``tau_base``; frame
        placements in ``data`` must be current."""
        data = self.data
        grasp = np.hstack(
            [
                (data.oMi[1].inverse() * data.oMf[fid]).toDualActionMatrix()
                for fid in self._contact_ids
            ]
        )  # contact frame -> base frame
        if self.point_contacts:
            columns = np.concatenate(
                [np.arange(6 * k, 6 * k + 3) for k in range(len(self._contact_ids))]
            )
            wrenches = np.zeros(6 * len(self._contact_ids))
            wrenches[columns] = np.linalg.lstsq(grasp[:, columns], tau_base, rcond=None)[0]
        else:
            wrenches = np.linalg.lstsq(grasp, tau_base, rcond=None)[0]
        return wrenches.reshape(-1, 6)

    def simulate(self, t: np.ndarray) -> WholeBodyMotion:
        """The true motion, sensor wrenches and IMU readings at times ``t`` (N,) (s)."""
        t = np.atleast_1d(np.asarray(t, dtype=float))
        Q, DQ, DDQ = self.joint_trajectory(t)
        model, data = self.model, self.data
        n_samples = t.size
        if self.base_trajectory is not None:
            X, DX, DDX = self.base_trajectory(t)
        q_all = np.empty((n_samples, model.nq))
        v_all = np.empty((n_samples, model.nv))
        a_all = np.empty((n_samples, model.nv))
        wrench = np.empty((n_samples, len(self.ft_sensors), 6))
        imu = np.empty((n_samples, 13))
        residual = np.empty((n_samples, 6))
        efforts = np.empty((n_samples, len(self.joint_names)))
        local = pin.ReferenceFrame.LOCAL
        contact_columns = [k for k, (_, kind) in enumerate(self.ft_sensors) if kind == "contact"]
        internal_columns = [k for k, (_, kind) in enumerate(self.ft_sensors) if kind == "internal"]
        gravity = model.gravity.linear
        for i in range(n_samples):
            q_full, v_full, a_full = self._full_state(Q[i], DQ[i], DDQ[i])
            if self.stance_frame is not None:
                self._stance_base(q_full, v_full, a_full)
            elif self.base_trajectory is not None:
                self._prescribed_base(X[i], DX[i], DDX[i], q_full, v_full, a_full)
            else:
                rest = np.zeros(6)
                self._prescribed_base(rest, rest, rest, q_full, v_full, a_full)
            pin.forwardKinematics(model, data, q_full, v_full, a_full)
            pin.updateFramePlacements(model, data)
            placement = data.oMf[self._imu_id]
            accel = pin.getFrameClassicalAcceleration(model, data, self._imu_id, local).linear
            imu[i, :4] = pin.Quaternion(placement.rotation).coeffs()
            imu[i, 4:7] = pin.getFrameVelocity(model, data, self._imu_id, local).angular
            imu[i, 7:10] = pin.getFrameAcceleration(model, data, self._imu_id, local).angular
            imu[i, 10:] = accel - placement.rotation.T @ gravity
            tau = pin.rnea(model, data, q_full, v_full, a_full)
            contacts = self._contact_wrenches(tau[:6]) if self._contact_ids else np.zeros((0, 6))
            fext = [pin.Force.Zero() for _ in range(model.njoints)]
            for fid, w in zip(self._contact_ids, contacts):
                frame = model.frames[fid]
                fext[frame.parentJoint] += frame.placement.act(pin.Force(w))
            tau = pin.rnea(model, data, q_full, v_full, a_full, fext)
            residual[i] = tau[:6]
            wrench[i, contact_columns] = contacts[: len(contact_columns)]
            for column, joint in zip(internal_columns, self._sensor_joints):
                wrench[i, column] = data.f[joint].vector
            q_all[i], v_all[i], a_all[i] = q_full, v_full, a_full
            efforts[i] = tau[self._v_index]
        return WholeBodyMotion(
            t,
            q_all,
            v_all,
            a_all,
            Q,
            DQ,
            DDQ,
            efforts,
            wrench,
            imu[:, :4],
            imu[:, 4:7],
            imu[:, 7:10],
            imu[:, 10:],
            residual,
        )

    def record(
        self,
        duration: float,
        rate: float = 200.0,
        with_ddq: bool = False,
        with_effort: bool = False,
        seed: int | None = None,
    ) -> dict[str, np.ndarray]:
        """Noisy recording of ``duration`` s at ``rate`` Hz: the whole-body NPZ keys (see
        :mod:`inertia_id_ros.formats.data`) plus the truth (``true_links`` (L,), ``true_theta``
        (L, 10), ``true_ft_offset`` (S, 6), ``true_ft_wrench`` (N, S, 6) without noise or
        offset, ``ft_noise_std`` (S, 6)). ``seed``: the noise's (default the simulator's + 1)."""
        t = np.arange(int(round(duration * rate))) / rate
        motion = self.simulate(t)
        return self.measure(
            motion,
            with_ddq,
            with_effort,
            np.random.default_rng(self.seed + 1 if seed is None else seed),
        )

    def measure(
        self, motion: WholeBodyMotion, with_ddq: bool, with_effort: bool, rng: np.random.Generator
    ) -> dict[str, np.ndarray]:
        """The recording of :meth:`record` from a simulated ``motion``."""
        noise, n = self.noise, motion.t.size
        orientation = np.empty((n, 4))
        tilts = rng.normal(scale=noise.orientation_std, size=(n, 3))
        for i, (quat, tilt) in enumerate(zip(motion.imu_orientation, tilts)):
            rotation = pin.Quaternion(quat).toRotationMatrix() @ pin.exp3(tilt)
            orientation[i] = Rotation.from_matrix(rotation).as_quat()
        names, theta = self.true_theta
        data = {
            "t": motion.t,
            "joint_names": np.array(self.joint_names),
            "q": motion.q + rng.normal(scale=noise.position_std, size=motion.q.shape),
            "dq": motion.dq + rng.normal(scale=noise.velocity_std, size=motion.dq.shape),
            "imu_frame": np.array(self.imu_frame),
            "imu_orientation": orientation,
            "imu_angular_velocity": (
                motion.imu_angular_velocity
                + self.gyro_bias
                + rng.normal(scale=noise.gyro_std, size=(n, 3))
            ),
            "imu_linear_acceleration": (
                motion.imu_linear_acceleration
                + self.accel_bias
                + rng.normal(scale=noise.accel_std, size=(n, 3))
            ),
            "ft_frames": np.array([frame for frame, _ in self.ft_sensors]),
            "ft_types": np.array([kind for _, kind in self.ft_sensors]),
            "ft_wrench": (
                motion.ft_wrench
                + self.ft_offsets
                + rng.normal(size=motion.ft_wrench.shape) * self.ft_noise_std
            ),
            "true_links": np.array(names),
            "true_theta": theta,
            "true_ft_offset": self.ft_offsets.copy(),
            "true_ft_wrench": motion.ft_wrench,
            "ft_noise_std": self.ft_noise_std.copy(),
        }
        if with_ddq:
            data["ddq"] = motion.ddq
        if with_effort:
            data["effort"] = motion.effort + rng.normal(
                scale=noise.effort_std, size=motion.effort.shape
            )
        return data


def check_truth(simulator: WholeBodySimulator) -> list[str]:
    """Names of true links that are not fully consistent (none, by construction)."""
    return [
        name
        for name, theta in simulator.true_links.items()
        if not check_consistency(theta).fully_consistent
    ]


def write_recording(
    path: str,
    simulator: WholeBodySimulator,
    duration: float,
    rate: float = 200.0,
    with_ddq: bool = False,
    with_effort: bool = False,
    drift: Sequence[str] = (),
) -> dict[str, np.ndarray]:
    """Record (:meth:`WholeBodySimulator.record`) into the NPZ file ``path``, the F/T sensors
    at the frames ``drift`` read through a drifted calibration (:mod:`inertia_id_ros.sim.
    ft_errors`, seeded by the simulator's seed); returns the data."""
    from inertia_id_ros.sim.ft_errors import apply_drift, draw_drift

    data = simulator.record(duration, rate, with_ddq, with_effort)
    if drift:
        unknown = [f for f in drift if f not in [frame for frame, _ in simulator.ft_sensors]]
        if unknown:
            raise ConfigError(f"no F/T sensor at {unknown} to drift")
        apply_drift(data, draw_drift(drift, np.random.default_rng(simulator.seed + 2)))
    np.savez(path, allow_pickle=True, **data)
    return data
