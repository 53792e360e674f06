"""Simulated robot with a payload beyond an F/T sensor: trajectories, ground truth, noisy sensors.

The true wrench is computed independently of :mod:`inertia_id_ros.core.regressors`: the payload is
attached as a body to a copy of the model through an extra joint at the sensor frame, held at
zero, and pinocchio's RNEA gives the wrench that joint transmits (``data.f``), in the sensor frame:
the wrench the sensor exerts on the payload, ``f = I a_g + v x* (I v)``.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from typing import Any, Protocol

import numpy as np
import numpy.typing as npt
import pinocchio as pin

from inertia_id_ros.core.inertia import theta_from_inertia
from inertia_id_ros.core.kinematics import SensorKinematics
from inertia_id_ros.core.robots import example_robot_urdf, load_model


class Trajectory(Protocol):
    """A joint motion the simulators follow: ``trajectory(t) -> (q, dq, ddq)``, (N, n) joint
    positions (rad or m), velocities, accelerations at times ``t`` (N,) (s). Implemented by
    :class:`ExcitingTrajectory`, :class:`PointToPointTrajectory`,
    :class:`~inertia_id_ros.sim.follower.CommandFollower` and
    :func:`~inertia_id_ros.sim.follower.at_rest`'s motion."""

    def __call__(self, t: np.ndarray, /) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``(q, dq, ddq)`` (N, n) at times ``t`` (N,) (s)."""


PANDA_ARM_JOINTS = tuple(f"panda_joint{i}" for i in range(1, 8))
PANDA_FLANGE = "panda_link8"
PANDA_HOME = np.array([0.0, -np.pi / 4, 0.0, -3 * np.pi / 4, 0.0, np.pi / 2, np.pi / 4])
"""Panda's usual home (rad): flange pointing down, joint 7's axis vertical through the flange."""
UR5_ARM_JOINTS = (
    "shoulder_pan_joint",
    "shoulder_lift_joint",
    "elbow_joint",
    "wrist_1_joint",
    "wrist_2_joint",
    "wrist_3_joint",
)
"""example-robot-data UR5's six joints."""

DEFAULT_OFFSET = np.array([4.0, -3.0, 6.0, 0.2, -0.15, 0.1])
"""Default constant F/T offset (N, N m)."""
DEFAULT_WRENCH_NOISE_STD = np.array([0.1, 0.1, 0.1, 0.005, 0.005, 0.005])
"""Default F/T noise standard deviations (N, N m)."""


def box_inertia(mass: float, size: Sequence[float]) -> np.ndarray:
    """3x3 inertia (kg m^2) about the COM of a solid box of ``mass`` (kg) and edges ``size`` (m)."""
    a, b, c = np.asarray(size, dtype=float) ** 2
    return mass / 12.0 * np.diag([b + c, a + c, a + b])


def default_payload_theta() -> np.ndarray:
    """``theta`` of the default payload in the flange frame: 1.5 kg, a 12 x 8 x 10 cm box rotated
    (25 deg about z, then 10 deg about x), COM at (3, -2, 7) cm."""
    rotation = pin.utils.rotate("z", np.deg2rad(25.0)) @ pin.utils.rotate("x", np.deg2rad(10.0))
    inertia = rotation @ box_inertia(1.5, (0.12, 0.08, 0.10)) @ rotation.T
    return theta_from_inertia(1.5, np.array([0.03, -0.02, 0.07]), inertia)


def grasped_payload_theta() -> np.ndarray:
    """theta (10,) of the payload a simulated grasp adds: a 2.3 kg box 10 x 15 x 8 cm, COM at
    (0, 4, 9) cm in the flange frame."""
    return theta_from_inertia(
        2.3, np.array([0.0, 0.04, 0.09]), box_inertia(2.3, [0.10, 0.15, 0.08])
    )


def _joint_limits(model: pin.Model, joint_names: Sequence[str]) -> tuple[np.ndarray, ...]:
    """(lower, upper, velocity) limits (n,) of 1-dof joints (rad, m, rad/s, m/s)."""
    lower, upper, velocity = [], [], []
    for name in joint_names:
        joint = model.joints[model.getJointId(name)]
        if joint.nq != 1:  # continuous joint: unbounded angle
            lower.append(-np.pi)
            upper.append(np.pi)
        else:
            lower.append(model.lowerPositionLimit[joint.idx_q])
            upper.append(model.upperPositionLimit[joint.idx_q])
        velocity.append(model.velocityLimit[joint.idx_v])
    return np.array(lower), np.array(upper), np.array(velocity)


class ExcitingTrajectory:
    """Finite Fourier series per joint (Swevers et al. 1997) within position and velocity limits.

    ``q_j(t) = c_j + s_j sum_l (a_jl sin(l w t) - b_jl cos(l w t)) / (l w)``, ``w = 2 pi / period``,
    with random ``a, b`` (seeded, normal, divided by ``l ** spectrum_decay``: the velocity's
    spectrum; flat by default, which favours accelerations), ``c`` the middle of the limits and
    the scale ``s_j`` the largest keeping ``|q - c| <= position_fraction`` of the half range (and
    ``<= max_amplitude`` rad), ``|dq| <= velocity_fraction * velocity_limit`` and, if given,
    ``|ddq| <= acceleration_limit``. Periodic; every joint moves, so the sensor's orientation and
    all 10 parameters are excited.
    """

    def __init__(
        self,
        lower: npt.ArrayLike,
        upper: npt.ArrayLike,
        velocity_limit: npt.ArrayLike,
        period: float = 10.0,
        n_harmonics: int = 5,
        seed: int = 0,
        position_fraction: float = 0.8,
        velocity_fraction: float = 0.8,
        acceleration_limit: npt.ArrayLike | None = None,
        max_amplitude: float = np.pi,
        center: npt.ArrayLike | None = None,
        spectrum_decay: float = 0.0,
    ) -> None:
        self.lower = np.asarray(lower, dtype=float)
        self.upper = np.asarray(upper, dtype=float)
        if np.any(self.upper <= self.lower):
            raise ValueError(f"upper limits {self.upper} must exceed lower limits {self.lower}")
        self.center = (
            0.5 * (self.lower + self.upper) if center is None else np.asarray(center, dtype=float)
        )
        self.omega = 2.0 * np.pi / period
        self.period = float(period)
        n = self.lower.size
        rng = np.random.default_rng(seed)
        harmonics = np.arange(1, n_harmonics + 1)
        self.harmonics = harmonics
        self._a = rng.normal(size=(n, n_harmonics)) / harmonics**spectrum_decay
        self._b = rng.normal(size=(n, n_harmonics)) / harmonics**spectrum_decay
        self.scale = np.ones(n)  # unit scale while measuring the series' extremes
        grid = np.linspace(0.0, period, 2001)
        p, dp, ddp = self(grid)
        p -= self.center
        half_range = np.minimum(self.center - self.lower, self.upper - self.center)
        bounds = [
            np.minimum(position_fraction * half_range, max_amplitude) / np.abs(p).max(0),
            velocity_fraction * np.asarray(velocity_limit, float) / np.abs(dp).max(0),
        ]
        if acceleration_limit is not None:
            bounds.append(np.asarray(acceleration_limit, float) / np.abs(ddp).max(0))
        self.scale = np.min(bounds, axis=0)

    @classmethod
    def for_model(
        cls, model: pin.Model, joint_names: Sequence[str], **kwargs: Any
    ) -> ExcitingTrajectory:
        """Trajectory within the model's position and velocity limits of ``joint_names``."""
        lower, upper, velocity = _joint_limits(model, joint_names)
        return cls(lower, upper, velocity, **kwargs)

    def __call__(self, t: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``(q, dq, ddq)`` (N, n) at times ``t`` (N,) (s)."""
        phase = self.omega * np.multiply.outer(np.atleast_1d(np.asarray(t, float)), self.harmonics)
        sin, cos = np.sin(phase), np.cos(phase)  # (N, L)
        lw = self.omega * self.harmonics
        q = (sin / lw) @ self._a.T - (cos / lw) @ self._b.T
        dq = cos @ self._a.T + sin @ self._b.T
        ddq = (-sin * lw) @ self._a.T + (cos * lw) @ self._b.T
        return self.center + self.scale * q, self.scale * dq, self.scale * ddq


class PointToPointTrajectory:
    """Minimum-jerk motions through ``waypoints`` (K, n), each taking ``completion_time`` s and
    followed by a rest of ``hold_time`` s (Flash and Hogan 1985: ``s(r) = 10 r^3 - 15 r^4 + 6 r^5``,
    ``r`` the fraction of the completion time)."""

    def __init__(self, waypoints: np.ndarray, completion_time: float, hold_time: float = 0.0):
        self.waypoints = np.asarray(waypoints, dtype=float)
        if self.waypoints.ndim != 2 or self.waypoints.shape[0] < 2:
            raise ValueError(f"waypoints must be (K >= 2, n), got {self.waypoints.shape}")
        if not completion_time > 0 or hold_time < 0:
            raise ValueError(
                f"need completion_time > 0 and hold_time >= 0 (s), got "
                f"{completion_time}, {hold_time}"
            )
        self.completion_time = float(completion_time)
        self.hold_time = float(hold_time)

    @property
    def duration(self) -> float:
        """Time (s) to go through all waypoints."""
        return (self.waypoints.shape[0] - 1) * (self.completion_time + self.hold_time)

    def __call__(self, t: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``(q, dq, ddq)`` (N, n) at times ``t`` (N,) (s), clipped to ``[0, duration]``."""
        t = np.clip(np.atleast_1d(np.asarray(t, float)), 0.0, self.duration)
        segment_time = self.completion_time + self.hold_time
        k = np.minimum((t // segment_time).astype(int), self.waypoints.shape[0] - 2)
        r = np.clip((t - k * segment_time) / self.completion_time, 0.0, 1.0)[:, None]
        T = self.completion_time
        s = r**3 * (10 - 15 * r + 6 * r**2)
        ds = 30 * r**2 * (1 - r) ** 2 / T
        dds = 60 * r * (1 - r) * (1 - 2 * r) / T**2
        start, delta = self.waypoints[k], self.waypoints[k + 1] - self.waypoints[k]
        return start + s * delta, ds * delta, dds * delta


def minimum_jerk_point_to_point(
    lower: npt.ArrayLike,
    upper: npt.ArrayLike,
    n_points: int,
    completion_time: float,
    seed: int = 0,
    margin: float = 0.1,
    start: npt.ArrayLike | None = None,
    hold_time: float = 0.0,
) -> PointToPointTrajectory:
    """Random point-to-point minimum-jerk trajectory: ``n_points`` targets drawn uniformly within
    the limits shrunk by ``margin`` (fraction of the range at each end), reached one after the
    other in ``completion_time`` s each; starts at ``start`` (default the middle of the range)."""
    low, high = np.asarray(lower, dtype=float), np.asarray(upper, dtype=float)
    span = high - low
    rng = np.random.default_rng(seed)
    targets = rng.uniform(low + margin * span, high - margin * span, size=(n_points, low.size))
    first = 0.5 * (low + high) if start is None else np.asarray(start, dtype=float)
    return PointToPointTrajectory(np.vstack([first, targets]), completion_time, hold_time)


class PayloadSimulator:
    """A fixed-base robot carrying a rigid payload beyond its F/T sensor, with noisy sensors.

    ``payload_theta`` (10,): the payload about and in the sensor frame; ``trajectory(t) -> (q, dq,
    ddq)`` (N, n) of ``joint_names`` (default: the joints moving the sensor); the measured wrench is
    ``f = I a_g + v x* (I v) + offset + noise`` (N, N m; sensor frame), the measured joint
    positions and velocities have white noise ``position_noise_std`` (rad, m) and
    ``velocity_noise_std`` (rad/s, m/s).
    """

    def __init__(
        self,
        model: pin.Model,
        sensor_frame: str,
        payload_theta: np.ndarray,
        trajectory: Trajectory,
        joint_names: Sequence[str] | None = None,
        locked_positions: Mapping[str, float] | None = None,
        offset: np.ndarray = DEFAULT_OFFSET,
        wrench_noise_std: np.ndarray = DEFAULT_WRENCH_NOISE_STD,
        position_noise_std: float = 1e-5,
        velocity_noise_std: float = 5e-4,
    ) -> None:
        self.kinematics = SensorKinematics(model, sensor_frame, joint_names, locked_positions)
        self.trajectory = trajectory
        self.true_theta = np.asarray(payload_theta, dtype=float).reshape(10).copy()
        self.true_offset = np.asarray(offset, dtype=float).reshape(6).copy()
        self.wrench_noise_std = np.broadcast_to(np.asarray(wrench_noise_std, float), (6,)).copy()
        self.position_noise_std = float(position_noise_std)
        self.velocity_noise_std = float(velocity_noise_std)
        self._model, self._payload_joint = self._model_with_payload()
        self._data = self._model.createData()

    @classmethod
    def panda(
        cls,
        payload_theta: np.ndarray | None = None,
        trajectory: Trajectory | None = None,
        seed: int = 0,
        **kwargs: Any,
    ) -> PayloadSimulator:
        """example-robot-data Panda, sensor at the flange ``panda_link8``, the 7 arm joints (the
        fingers locked), :func:`default_payload_theta`, an :class:`ExcitingTrajectory` (period 10 s,
        5 harmonics, ``seed``); ``kwargs`` go to the constructor (noise, offset). The payload is
        all there is beyond the sensor (the URDF's hand only moves with the flange)."""
        model = load_model(example_robot_urdf("panda"))
        if trajectory is None:
            trajectory = ExcitingTrajectory.for_model(model, PANDA_ARM_JOINTS, seed=seed)
        theta = default_payload_theta() if payload_theta is None else payload_theta
        return cls(model, PANDA_FLANGE, theta, trajectory, PANDA_ARM_JOINTS, **kwargs)

    def with_payload(self, payload_theta: np.ndarray) -> PayloadSimulator:
        """The same robot, motion, F/T offset and noise carrying another payload (a grasp)."""
        other = copy.copy(self)
        other.true_theta = np.asarray(payload_theta, dtype=float).reshape(10).copy()
        other._model, other._payload_joint = other._model_with_payload()
        other._data = other._model.createData()
        return other

    def _model_with_payload(self) -> tuple[pin.Model, int]:
        model = pin.Model(self.kinematics.reduced_model)
        frame = model.frames[model.getFrameId(self.sensor_frame)]
        joint = model.addJoint(
            frame.parentJoint, pin.JointModelRZ(), frame.placement, "payload_joint"
        )
        model.appendBodyToJoint(
            joint, pin.Inertia.FromDynamicParameters(self.true_theta), pin.SE3.Identity()
        )
        return model, joint

    @property
    def joint_names(self) -> tuple[str, ...]:
        """Joints of the trajectory and of the measurements, in model order."""
        return self.kinematics.joint_names

    @property
    def sensor_frame(self) -> str:
        """Name of the F/T sensor frame (the frame of the wrenches)."""
        return self.kinematics.sensor_frame

    def state(self, t: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """True ``(q, dq, ddq)`` (N, n) at times ``t`` (N,) (s)."""
        return self.trajectory(t)

    def true_wrench(self, t: np.ndarray) -> np.ndarray:
        """(N, 6) wrench the sensor exerts on the payload (no offset, no noise), sensor frame,
        from RNEA on the model with the payload attached."""
        Q, DQ, DDQ = self.state(t)
        model, data, joint = self._model, self._data, self._payload_joint
        wrenches = np.empty((Q.shape[0], 6))
        extra = np.zeros(1)
        for i in range(Q.shape[0]):
            q = np.concatenate([self.kinematics.model_configuration(Q[i]), extra])
            pin.rnea(
                model, data, q, np.concatenate([DQ[i], extra]), np.concatenate([DDQ[i], extra])
            )
            wrenches[i] = data.f[joint].vector
        return wrenches

    def measure_joints(
        self, t: np.ndarray, rng: np.random.Generator
    ) -> tuple[np.ndarray, np.ndarray]:
        """Noisy joint positions and velocities (N, n) at ``t`` (N,) (s)."""
        q, dq, _ = self.state(t)
        return (
            q + rng.normal(scale=self.position_noise_std, size=q.shape),
            dq + rng.normal(scale=self.velocity_noise_std, size=dq.shape),
        )

    def measure_wrench(self, t: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        """Measured wrenches (N, 6): true wrench + offset + white noise."""
        wrench = self.true_wrench(t) + self.true_offset
        return wrench + rng.normal(size=wrench.shape) * self.wrench_noise_std

    def measure(
        self, t: np.ndarray, rng: np.random.Generator
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``(q_meas, dq_meas, wrench_meas)`` at the same stamps ``t`` (N,) (s)."""
        q, dq = self.measure_joints(t, rng)
        return q, dq, self.measure_wrench(t, rng)
