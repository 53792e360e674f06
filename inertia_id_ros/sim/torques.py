"""Simulated joint torques of a fixed-base chain: true links, drives and payload, noisy efforts.

The truth is computed independently of the regressors (:mod:`inertia_id_ros.chain.links`,
:mod:`inertia_id_ros.chain.payload_from_torques`): pinocchio RNEA on a copy of the chain's model
whose links carry the true inertias (and, with a payload, the payload appended to the body of its
frame's joint at the frame's placement), plus each joint's drive torque written out::

    tau    = RNEA(q, dq, ddq) + viscous dq + coulomb tanh(dq / coulomb_velocity) + offset
             + armature ddq                                   (sign(dq) if coulomb_velocity = 0)
    effort = (tau + noise) / effort_scale                     (noise: white, N(0, std²) per joint)

Joint positions, velocities and accelerations are reported exactly (as after zero-phase
filtering of a dense recording); the effort noise is the torque noise.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace

import numpy as np
import pinocchio as pin

from inertia_id_ros.chain.actuators import ChainConfig, go1_leg_config
from inertia_id_ros.chain.friction import DriveParameters, JointDrive
from inertia_id_ros.chain.links import JointTorqueData, LinkModel
from inertia_id_ros.core.inertia import inertia_from_theta, theta_from_inertia
from inertia_id_ros.core.robots import example_robot_urdf, frame_id
from inertia_id_ros.sim.payload import (
    PANDA_ARM_JOINTS,
    PANDA_FLANGE,
    ExcitingTrajectory,
    Trajectory,
    default_payload_theta,
)

DriveTruth = DriveParameters
"""The true drive of a simulated joint (:class:`~inertia_id_ros.chain.friction.DriveParameters`)."""


class JointTorqueSimulator:
    """Joint torques of ``links``'s chain moving along ``trajectory``.

    ``link_thetas`` (n, 10): the true links, about their joint frames (default: the model's, i.e.
    the URDF's); ``drives``: one :class:`DriveTruth` per joint (sequence in joint order or mapping
    by name; default none); ``payload``: ``(frame name, theta (10,) about and in that frame)`` of a
    rigid payload (a zero ``theta``: none); ``torque_noise_std`` (N·m, scalar or per joint).
    Efforts are torques divided by the model's drives' ``effort_scale``.
    """

    def __init__(
        self,
        links: LinkModel,
        trajectory: Trajectory,
        link_thetas: np.ndarray | None = None,
        drives: Sequence[DriveTruth] | Mapping[str, DriveTruth] | None = None,
        payload: tuple[str, np.ndarray] | None = None,
        torque_noise_std: float | Sequence[float] = 0.0,
    ) -> None:
        self.links = links
        self.trajectory = trajectory
        n = links.n_joints
        thetas = (
            links.link_parameters(links.prior)
            if link_thetas is None
            else np.asarray(link_thetas, dtype=float)
        )
        if thetas.shape != (n, 10):
            raise ValueError(f"link_thetas must have shape ({n}, 10), got {thetas.shape}")
        self.link_thetas = thetas.copy()
        if drives is None:
            drives = [DriveTruth()] * n
        elif isinstance(drives, Mapping):
            unknown = sorted(set(drives) - set(links.joint_names))
            if unknown:
                raise ValueError(
                    f"drives for unknown joints {unknown}; the chain's joints are "
                    f"{links.joint_names}"
                )
            drives = [drives.get(j, DriveTruth()) for j in links.joint_names]
        if len(drives) != n:
            raise ValueError(f"{len(drives)} drives for {n} joints {links.joint_names}")
        self.drives: tuple[DriveTruth, ...] = tuple(drives)
        self.torque_noise_std = np.broadcast_to(np.asarray(torque_noise_std, float), (n,)).copy()
        self.payload_frame: str | None = None if payload is None else payload[0]
        self.payload_theta: np.ndarray | None = (
            None if payload is None else np.asarray(payload[1], dtype=float).reshape(10).copy()
        )
        if (
            self.payload_theta is not None
            and np.any(self.payload_theta)
            and not self.payload_theta[0] > 0.0
        ):
            raise ValueError(f"payload mass must be positive, got {self.payload_theta[0]!r}")
        self._model = self._true_model()
        self._data = self._model.createData()

    def _true_model(self) -> pin.Model:
        model = self.links.model.copy()
        for j, theta in enumerate(self.link_thetas, start=1):
            model.inertias[j] = pin.Inertia.FromDynamicParameters(theta)
        if self.payload_frame is not None:
            frame = model.frames[frame_id(model, self.payload_frame)]
            if np.any(self.payload_theta):
                model.appendBodyToJoint(
                    frame.parentJoint,
                    pin.Inertia.FromDynamicParameters(self.payload_theta),
                    frame.placement,
                )
        return model

    @property
    def joint_names(self) -> tuple[str, ...]:
        """The chain's joints, in the order of every (N, n) array."""
        return self.links.joint_names

    def true_torques(self, t: np.ndarray) -> np.ndarray:
        """(N, n) noise-free joint torques (N·m) at times ``t`` (N,) (s)."""
        q, dq, ddq = self.trajectory(t)
        configurations = self.links.configuration(q)
        tau = np.stack(
            [
                pin.rnea(self._model, self._data, configurations[k], dq[k], ddq[k])
                for k in range(q.shape[0])
            ]
        )
        for j, drive in enumerate(self.drives):
            tau[:, j] += drive.torque(dq[:, j], ddq[:, j])
        return tau

    def measure(self, t: np.ndarray, rng: np.random.Generator) -> JointTorqueData:
        """Samples at times ``t`` (N,) (s): exact joint states, efforts with torque noise."""
        q, dq, ddq = self.trajectory(t)
        tau = self.true_torques(t) + rng.normal(size=q.shape) * self.torque_noise_std
        scale = np.array([d.effort_scale for d in self.links.drives])
        return JointTorqueData(q, dq, ddq, tau / scale, self.links.joint_names)

    def true_parameters(self, model: LinkModel | None = None) -> np.ndarray:
        """The truth as ``x`` of ``model`` (default :attr:`links`; same chain): the true links'
        ``theta`` and the true values of the drive terms ``model`` estimates (payload excluded)."""
        model = self.links if model is None else model
        if model.joint_names != self.joint_names:
            raise ValueError(
                f"model joints {model.joint_names} differ from the simulator's {self.joint_names}"
            )
        values = [
            getattr(truth, term)
            for drive, truth in zip(model.drives, self.drives)
            for term in drive.terms
        ]
        return np.concatenate([self.link_thetas.ravel(), values])


def perturbed_links(
    thetas: np.ndarray, rng: np.random.Generator, relative: float = 0.2
) -> np.ndarray:
    """(n, 10) physically consistent links near ``thetas`` (n, 10), e.g. a "true" robot that
    differs from its URDF: each mass and inertia about the COM scaled by U(1 - relative,
    1 + relative), each COM moved by N(0, (1 cm)²) per axis."""
    low, high = 1.0 - relative, 1.0 + relative
    out = []
    for theta in np.asarray(thetas, dtype=float):
        mass, com, inertia_com = inertia_from_theta(theta)
        out.append(
            theta_from_inertia(
                mass * rng.uniform(low, high),
                com + rng.normal(0, 0.01, 3),
                inertia_com * rng.uniform(low, high),
            )
        )
    return np.array(out)


DEFAULT_LEG_FRICTION = ((0.08, 0.20, 0.05), (0.10, 0.25, -0.10), (0.15, 0.30, 0.08))
"""True (viscous N·m·s/rad, Coulomb N·m, offset N·m) of hip abduction, hip flexion and knee."""
DEFAULT_LEG_TORQUE_NOISE_STD = 0.1
"""Joint torque noise of a current-based torque estimate (N·m)."""


LEG_HOME = np.array([0.0, 0.8, -1.7])
"""A Go1 leg's middle pose (rad): hip, thigh, knee."""


def leg_trajectory(
    links: LinkModel, seed: int = 0, period: float = 5.0, n_harmonics: int = 8
) -> ExcitingTrajectory:
    """Exciting swing of a Go1 leg in the air (trunk fixed): a Fourier series of period ``period``
    s with ``n_harmonics`` harmonics around hip 0, thigh 0.8, knee -1.7 rad (thigh up to 1.2 rad
    away), within the joint limits and half the velocity limits (accelerations ~10-40 rad/s²)."""
    return ExcitingTrajectory.for_model(
        links.model,
        links.joint_names,
        period=period,
        n_harmonics=n_harmonics,
        seed=seed,
        center=LEG_HOME,
        max_amplitude=1.2,
        velocity_fraction=0.5,
    )


def leg_simulator(
    config: ChainConfig | None = None,
    seed: int = 0,
    link_thetas: np.ndarray | None = None,
    friction: Sequence[tuple[float, float, float]] = DEFAULT_LEG_FRICTION,
    torque_noise_std: float | Sequence[float] = DEFAULT_LEG_TORQUE_NOISE_STD,
    trajectory: Trajectory | None = None,
) -> JointTorqueSimulator:
    """A simulated Go1 leg (default :func:`~inertia_id_ros.chain.actuators.go1_leg_config`).

    Front left, with its configured rotors as the true armatures, ``friction`` (viscous,
    Coulomb, offset) per joint, torque noise, and :func:`leg_trajectory` (``seed``) unless
    ``trajectory`` is given."""
    config = go1_leg_config() if config is None else config
    links = config.link_model()
    if len(friction) != links.n_joints:
        raise ValueError(f"{len(friction)} friction triples for {links.n_joints} joints")
    drives = [
        DriveTruth(
            viscous,
            coulomb,
            offset,
            config.actuator(j).reflected_inertia,
            config.actuator(j).coulomb_velocity,
        )
        for j, (viscous, coulomb, offset) in zip(links.joint_names, friction)
    ]
    trajectory = leg_trajectory(links, seed) if trajectory is None else trajectory
    return JointTorqueSimulator(
        links, trajectory, link_thetas, drives, torque_noise_std=torque_noise_std
    )


def panda_torque_simulator(
    payload_theta: np.ndarray | None = None,
    seed: int = 0,
    drives: Sequence[DriveTruth] | None = None,
    torque_noise_std: float | Sequence[float] = 0.05,
    trajectory: Trajectory | None = None,
    links: LinkModel | None = None,
) -> JointTorqueSimulator:
    """The Panda's 7 arm joints (fingers locked; URDF links) carrying ``payload_theta`` (default
    :func:`~inertia_id_ros.sim.payload.default_payload_theta`; ``np.zeros(10)`` for none) at the
    flange ``panda_link8``; an :class:`ExcitingTrajectory` (period 10 s, 5 harmonics, ``seed``)
    unless ``trajectory`` is given; ``links`` the chain's model (default: all drive terms
    estimated, exact Coulomb sign)."""
    links = (
        LinkModel.from_urdf(example_robot_urdf("panda"), PANDA_ARM_JOINTS)
        if links is None
        else links
    )
    if trajectory is None:
        trajectory = ExcitingTrajectory.for_model(links.model, links.joint_names, seed=seed)
    theta = default_payload_theta() if payload_theta is None else payload_theta
    return JointTorqueSimulator(
        links,
        trajectory,
        drives=drives,
        payload=("panda_link8", theta),
        torque_noise_std=torque_noise_std,
    )


@dataclass(frozen=True)
class ArmRecording:
    """A simulated recording as a real arm gives it: stamps ``t`` (N,) (s, jittered), measured
    positions ``q`` and velocities ``dq`` (N, n) (noisy), raw ``effort`` (N, n) (torque noise);
    no accelerations. ``truth``: the exact joint states at ``t`` with the noisy efforts;
    ``simulator``: the truth (links, drives)."""

    t: np.ndarray
    q: np.ndarray
    dq: np.ndarray
    effort: np.ndarray
    truth: JointTorqueData
    simulator: JointTorqueSimulator


DEFAULT_ARM_TORQUE_NOISE_STD = (0.15, 0.15, 0.12, 0.12, 0.06, 0.06, 0.04)
"""Joint torque noise of :func:`panda_arm_recording` (N·m): larger on the big joints."""


def panda_arm_recording(
    duration: float = 40.0,
    rate: float = 1000.0,
    seed: int = 0,
    position_noise_std: float = 2e-5,
    velocity_noise_std: float = 0.005,
    torque_noise_std: Sequence[float] = DEFAULT_ARM_TORQUE_NOISE_STD,
    jitter: float = 0.05,
    max_frequency: float = 1.25,
) -> ArmRecording:
    """The Panda's 7 arm joints (no payload) as a torque-sensing arm records them: links
    perturbed from the URDF (:func:`perturbed_links`), per joint viscous U(0.1, 0.6) N·m·s/rad,
    Coulomb U(0.2, 0.8) N·m with a smooth sign ``tanh(dq / 0.02)``, offset N(0, 0.1²) N·m, no
    armature (link-side torque sensors); one non-repeating exciting motion of ``duration`` s
    (a Fourier series of that period up to ``max_frequency`` Hz, half the velocity limits);
    samples at ``rate`` Hz with stamps jittered by up to ``jitter`` periods, Gaussian position,
    velocity and torque noise."""
    rng = np.random.default_rng(seed)
    links = LinkModel.from_urdf(example_robot_urdf("panda"), PANDA_ARM_JOINTS)
    trajectory = ExcitingTrajectory.for_model(
        links.model,
        links.joint_names,
        period=duration,
        n_harmonics=max(1, int(max_frequency * duration)),
        seed=seed,
        velocity_fraction=0.5,
    )
    n = links.n_joints
    drives = [
        DriveTruth(v, c, o, 0.0, 0.02)
        for v, c, o in zip(
            rng.uniform(0.1, 0.6, n), rng.uniform(0.2, 0.8, n), rng.normal(0.0, 0.1, n)
        )
    ]
    simulator = JointTorqueSimulator(
        links,
        trajectory,
        perturbed_links(links.link_parameters(links.prior), rng),
        drives,
        torque_noise_std=torque_noise_std,
    )
    period = 1.0 / rate
    t = np.arange(0.0, duration, period)
    t = t + rng.uniform(-jitter, jitter, t.size) * period
    truth = simulator.measure(t, rng)
    q = truth.positions + rng.normal(0.0, position_noise_std, truth.positions.shape)
    dq = truth.velocities + rng.normal(0.0, velocity_noise_std, truth.velocities.shape)
    return ArmRecording(t, q, dq, truth.efforts, truth, simulator)


PAYLOAD_TORQUES_LINK_ERROR = 0.1
"""The true links of :func:`panda_payload_torque_runs` differ from the URDF by up to this
fraction (masses and inertias, :func:`perturbed_links`), COMs by about 1 cm."""


@dataclass(frozen=True)
class PayloadTorqueRuns:
    """A Panda without an F/T sensor, the same motion recorded without and with a payload at
    ``frame`` (:func:`panda_payload_torque_runs`). ``unloaded``, ``loaded``: the recordings (as a
    real arm gives them, :class:`ArmRecording`; the loaded one's ``simulator`` carries the
    payload); ``payload_theta`` (10,) about and in ``frame``; ``links``: the chain's model with
    the URDF's links (not the truth: see ``unloaded.simulator.link_thetas``)."""

    unloaded: ArmRecording
    loaded: ArmRecording
    payload_theta: np.ndarray
    frame: str
    links: LinkModel


def panda_payload_torque_simulators(
    seed: int = 0,
    payload_theta: np.ndarray | None = None,
    link_error: float = PAYLOAD_TORQUES_LINK_ERROR,
    torque_noise_std: float | Sequence[float] = DEFAULT_ARM_TORQUE_NOISE_STD,
    trajectory: Trajectory | None = None,
) -> tuple[JointTorqueSimulator, JointTorqueSimulator]:
    """``(unloaded, loaded)``: the Panda's 7 arm joints (model: the URDF's links, every drive
    term, ``tanh(dq / 0.02)``) moving along ``trajectory`` (default: the default
    :class:`ExcitingTrajectory` of ``seed``, period 10 s, 5 harmonics, 80 % of the velocity
    limits), without and with ``payload_theta`` (default
    :func:`~inertia_id_ros.sim.payload.default_payload_theta`, 1.5 kg) at the flange
    ``panda_link8``; the same truth in both: links off the URDF by up to ``link_error``
    (:func:`perturbed_links`), per joint viscous U(0.1, 0.6) N·m·s/rad, Coulomb U(0.2, 0.8) N·m
    (``tanh(dq / 0.02)``), offset N(0, 0.1²) N·m (seeded by ``seed``); torque noise
    ``torque_noise_std`` (N·m)."""
    rng = np.random.default_rng(seed)
    links = LinkModel.from_urdf(
        example_robot_urdf("panda"), PANDA_ARM_JOINTS, drives=JointDrive(coulomb_velocity=0.02)
    )
    if trajectory is None:
        trajectory = ExcitingTrajectory.for_model(links.model, links.joint_names, seed=seed)
    n = links.n_joints
    drives = [
        DriveTruth(v, c, o, 0.0, 0.02)
        for v, c, o in zip(
            rng.uniform(0.1, 0.6, n), rng.uniform(0.2, 0.8, n), rng.normal(0.0, 0.1, n)
        )
    ]
    thetas = perturbed_links(links.link_parameters(links.prior), rng, link_error)
    theta = default_payload_theta() if payload_theta is None else np.asarray(payload_theta)
    unloaded, loaded = (
        JointTorqueSimulator(links, trajectory, thetas, drives, payload, torque_noise_std)
        for payload in (None, (PANDA_FLANGE, theta))
    )
    return unloaded, loaded


def panda_payload_torque_runs(
    duration: float = 30.0,
    rate: float = 200.0,
    seed: int = 0,
    payload_theta: np.ndarray | None = None,
    link_error: float = PAYLOAD_TORQUES_LINK_ERROR,
    torque_noise_std: Sequence[float] = DEFAULT_ARM_TORQUE_NOISE_STD,
    position_noise_std: float = 2e-5,
    velocity_noise_std: float = 0.005,
    trajectory: Trajectory | None = None,
) -> PayloadTorqueRuns:
    """The Panda of :func:`panda_payload_torque_simulators` (``seed``, ``payload_theta``,
    ``link_error``, ``torque_noise_std``, ``trajectory``) replaying its motion twice, without and
    with the payload: ``duration`` s sampled at ``rate`` Hz from ``t = 0`` in both runs,
    Gaussian position and velocity noise; the noise independent in the two runs."""
    unloaded, loaded = panda_payload_torque_simulators(
        seed, payload_theta, link_error, torque_noise_std, trajectory
    )
    rng = np.random.default_rng([seed, 1])
    t = np.arange(0.0, duration, 1.0 / rate)
    runs = []
    for simulator in (unloaded, loaded):
        truth = simulator.measure(t, rng)
        q = truth.positions + rng.normal(0.0, position_noise_std, truth.positions.shape)
        dq = truth.velocities + rng.normal(0.0, velocity_noise_std, truth.velocities.shape)
        runs.append(ArmRecording(t, q, dq, truth.efforts, truth, simulator))
    if loaded.payload_theta is None:
        raise ValueError("the loaded simulator carries no payload")
    return PayloadTorqueRuns(
        runs[0], runs[1], loaded.payload_theta.copy(), PANDA_FLANGE, unloaded.links
    )


NOMINAL_PANDA_GAINS = (10.0, 10.0, 10.0, 10.0, 5.0, 5.0, 5.0)
"""Nominal current-to-torque gains (N·m/A at the joint) of :func:`panda_current_runs`'s arm:
what a datasheet gives."""


@dataclass(frozen=True)
class CurrentRuns:
    """:class:`PayloadTorqueRuns` whose efforts are motor currents (A): ``runs`` (the recordings'
    ``effort`` and ``truth.efforts`` are currents), the true ``gains`` and the ``nominal`` ones
    (N·m/A at the joint, joint order)."""

    runs: PayloadTorqueRuns
    gains: np.ndarray
    nominal: np.ndarray


def current_payload_theta(mass: float) -> np.ndarray:
    """theta (10,) at the Panda's flange of a ``mass`` kg solid box 10 x 12 x 8 cm whose COM is
    at (2, -3, 6) cm (off the last joint's axis)."""
    from inertia_id_ros.sim.payload import box_inertia

    return theta_from_inertia(
        mass, np.array([0.02, -0.03, 0.06]), box_inertia(mass, (0.10, 0.12, 0.08))
    )


def true_gains(seed: int, nominal: Sequence[float] = NOMINAL_PANDA_GAINS) -> np.ndarray:
    """(n,) gains off ``nominal`` by 5 to 20 % each, either sign (seeded by ``seed``)."""
    rng = np.random.default_rng([seed, 32])
    nominal_array = np.asarray(nominal, dtype=float)
    signs = rng.choice([-1.0, 1.0], nominal_array.size)
    return nominal_array * (1.0 + signs * rng.uniform(0.05, 0.20, nominal_array.size))


def panda_current_runs(
    mass: float,
    gains: np.ndarray,
    duration: float = 30.0,
    rate: float = 100.0,
    seed: int = 0,
    robot_seed: int = 0,
) -> CurrentRuns:
    """The Panda of :func:`panda_payload_torque_runs` (one robot: ``robot_seed`` sets its links
    and friction) logging motor currents ``torque / gains`` (``gains`` (7,) N·m/A at the joint):
    an unloaded and a loaded run (a ``mass`` kg box, :func:`current_payload_theta`) of the
    motion of ``seed`` (``duration`` s at ``rate`` Hz)."""
    rng = np.random.default_rng(robot_seed)
    links = LinkModel.from_urdf(
        example_robot_urdf("panda"), PANDA_ARM_JOINTS, drives=JointDrive(coulomb_velocity=0.02)
    )
    trajectory = ExcitingTrajectory.for_model(links.model, links.joint_names, seed=seed)
    n = links.n_joints
    drives = [
        DriveTruth(v, c, o, 0.0, 0.02)
        for v, c, o in zip(
            rng.uniform(0.1, 0.6, n), rng.uniform(0.2, 0.8, n), rng.normal(0.0, 0.1, n)
        )
    ]
    thetas = perturbed_links(links.link_parameters(links.prior), rng, PAYLOAD_TORQUES_LINK_ERROR)
    theta = current_payload_theta(mass)
    noise = np.random.default_rng([seed, robot_seed, 2])
    t = np.arange(0.0, duration, 1.0 / rate)
    recordings = []
    gains = np.asarray(gains, dtype=float)
    for payload in (None, (PANDA_FLANGE, theta)):
        simulator = JointTorqueSimulator(
            links, trajectory, thetas, drives, payload, DEFAULT_ARM_TORQUE_NOISE_STD
        )
        truth = simulator.measure(t, noise)
        truth = replace(truth, efforts=truth.efforts / gains)
        q = truth.positions + noise.normal(0.0, 2e-5, truth.positions.shape)
        dq = truth.velocities + noise.normal(0.0, 0.005, truth.velocities.shape)
        recordings.append(ArmRecording(t, q, dq, truth.efforts, truth, simulator))
    runs = PayloadTorqueRuns(recordings[0], recordings[1], theta, PANDA_FLANGE, links)
    return CurrentRuns(runs, gains.copy(), np.asarray(NOMINAL_PANDA_GAINS, dtype=float))
