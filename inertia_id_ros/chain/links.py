"""Link identification from joint torques: rigid-body links plus joint friction and armature.

For a fixed-base chain of ``n`` 1-DoF joints (a sub-chain of a larger robot: the other joints are
locked, see :meth:`LinkModel.from_urdf`), the measured joint torques (N, n) obey::

    tau = Y_links(q, dq, ddq) @ theta + viscous * dq + coulomb * s(dq) + offset + armature * ddq
        = RNEA(theta; q, dq, ddq) + tau_drive(dq, ddq)

where ``theta`` stacks the 10 inertial parameters of every link (the body moved by joint ``k``,
about joint ``k``'s frame, :mod:`inertia_id_ros.core.inertia` order), ``Y_links`` is pinocchio's
``computeJointTorqueRegressor`` and the drive terms are those of
:mod:`inertia_id_ros.chain.friction` (gravity is the model's, ``[0, 0, -9.81]`` in the root frame
for a URDF). With the drive columns appended, ``tau = Y(q, dq, ddq) @ x + tau_known(ddq)``
(:meth:`LinkModel.joint_torque_regressor`) with the parameter vector::

    x = [theta_link_1 (10), ..., theta_link_n (10), drive terms of joint 1, ..., of joint n,
         terms of coupled motor 1, ...]

(:attr:`LinkModel.parameter_names`); a coupled motor's rotor inertia and friction (given the
transmission's matrix, :mod:`inertia_id_ros.chain.motors`) add ``G[m]ᵀ tau_m`` to the torques.
``tau_known`` is the torque of a known, not estimated, armature. The fit of ``x`` to the torques is
:mod:`inertia_id_ros.chain.link_fit`, the parameters the data determine
:mod:`inertia_id_ros.chain.base_parameters`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pinocchio as pin

from inertia_id_ros.chain.friction import NONNEGATIVE_DRIVE_TERMS, JointDrive
from inertia_id_ros.chain.motors import MOTOR_TERMS, MotorCoupling, coupled_motors
from inertia_id_ros.core.covariance import ChannelNormalEquations
from inertia_id_ros.core.inertia import THETA_NAMES
from inertia_id_ros.core.robots import load_model, reduce_model

CHUNK_SAMPLES = 2000
"""Samples per block when accumulating normal equations or a QR factor over a run."""

DriveSpec = JointDrive | Sequence[JointDrive] | Mapping[str, JointDrive]
"""One :class:`JointDrive` for every joint, one per joint in order, or ``{joint name: drive}``."""


@dataclass(frozen=True)
class JointTorqueData:
    """Joint-space samples: positions (rad or m), velocities, accelerations and raw efforts.

    All arrays are (N, n_columns), one row per sample. ``efforts`` are the raw measured efforts
    (joint torque = effort x the joint's ``effort_scale``). ``joint_names`` names the columns; when
    ``None`` the columns are the model's joints in its order.
    """

    positions: np.ndarray
    velocities: np.ndarray
    accelerations: np.ndarray
    efforts: np.ndarray
    joint_names: tuple[str, ...] | None = None

    def __post_init__(self) -> None:
        arrays = {}
        for name in ("positions", "velocities", "accelerations", "efforts"):
            a = np.atleast_2d(np.asarray(getattr(self, name), dtype=float))
            object.__setattr__(self, name, a)
            arrays[name] = a.shape
        if len(set(arrays.values())) != 1:
            raise ValueError(f"joint data arrays must all have the same shape (N, n), got {arrays}")
        if self.joint_names is not None:
            names = tuple(self.joint_names)
            object.__setattr__(self, "joint_names", names)
            if len(names) != self.positions.shape[1]:
                raise ValueError(f"{len(names)} joint names for {self.positions.shape[1]} columns")

    @property
    def n_samples(self) -> int:
        """Number of samples N."""
        return self.positions.shape[0]

    def subset(self, samples: slice | np.ndarray) -> JointTorqueData:
        """The samples selected by ``samples`` (a slice, indices or a boolean mask)."""
        return JointTorqueData(
            self.positions[samples],
            self.velocities[samples],
            self.accelerations[samples],
            self.efforts[samples],
            self.joint_names,
        )

    def mean_positions(self) -> dict[str, float]:
        """Mean position of every named column, e.g. to lock joints at their measured positions."""
        if self.joint_names is None:
            raise ValueError("mean_positions needs joint_names")
        return dict(zip(self.joint_names, self.positions.mean(axis=0).tolist()))


def as_runs(data: JointTorqueData | Iterable[JointTorqueData]) -> list[JointTorqueData]:
    """``data`` as a list of runs (one run or several)."""
    return [data] if isinstance(data, JointTorqueData) else list(data)


class LinkModel:
    """Joint-torque model of a fixed-base chain of 1-DoF joints (see the module docstring).

    Every joint ``k`` moves one link (pinocchio body ``k``, with any rigidly attached bodies and
    locked subtrees lumped in); its ``theta`` is about joint ``k``'s frame. ``drives`` sets the
    friction/armature terms and effort scale: one :class:`JointDrive` for every joint, a sequence in
    joint order, or a mapping from joint name (joints not in it get ``JointDrive()``).
    ``robot_joint_names``: every joint of the robot the chain was taken from, the locked ones
    too (default: the chain's); joint states may name them. ``coupling``: the transmission's
    motor-to-joint matrix (default none): each motor turning with several joints adds its rotor
    inertia, viscous and Coulomb friction (:attr:`motors`, :mod:`inertia_id_ros.chain.motors`).
    """

    def __init__(
        self,
        model: pin.Model,
        drives: DriveSpec = JointDrive(),
        robot_joint_names: Sequence[str] | None = None,
        coupling: MotorCoupling | None = None,
    ):
        self.model = model
        self._data = model.createData()
        self.joint_names: tuple[str, ...] = tuple(model.names[1:])
        self.robot_joint_names: tuple[str, ...] = (
            self.joint_names if robot_joint_names is None else tuple(robot_joint_names)
        )
        for j in range(1, model.njoints):
            if model.joints[j].nv != 1:
                raise ValueError(
                    f"joint {model.names[j]!r} has {model.joints[j].nv} DoF; only "
                    "1-DoF joints are supported (lock the others, see from_urdf)"
                )
        self.n_joints = len(self.joint_names)
        self.drives: tuple[JointDrive, ...] = self._drives_per_joint(drives)
        self.link_names: tuple[str, ...] = tuple(
            self._body_name(j) for j in range(1, model.njoints)
        )
        names = [f"{link}.{p}" for link in self.link_names for p in THETA_NAMES]
        names += [
            f"{joint}.{t}" for joint, d in zip(self.joint_names, self.drives) for t in d.terms
        ]
        self.coupling = coupling
        self.motors = (
            () if coupling is None else coupled_motors(coupling, self.joint_names, self.drives)
        )
        names += [f"{motor.name}.{t}" for motor in self.motors for t in MOTOR_TERMS]
        self.parameter_names: tuple[str, ...] = tuple(names)
        self.n_parameters = len(names)
        self.n_motor_parameters = len(MOTOR_TERMS) * len(self.motors)
        nonnegative = NONNEGATIVE_DRIVE_TERMS | set(MOTOR_TERMS)
        self.nonnegative: tuple[int, ...] = tuple(
            i
            for i, name in enumerate(names)
            if i >= 10 * self.n_joints and name.rsplit(".", 1)[1] in nonnegative
        )
        self._q_index = [
            (model.joints[j].idx_q, model.joints[j].nq) for j in range(1, model.njoints)
        ]

    @classmethod
    def from_urdf(
        cls,
        urdf: str | Path,
        joints: Sequence[str] | None = None,
        locked_positions: Mapping[str, float] | None = None,
        drives: DriveSpec = JointDrive(),
        coupling: MotorCoupling | None = None,
    ) -> LinkModel:
        """Model of the chain of ``joints`` (default: all) of the URDF at path ``urdf``.

        Every other joint is locked (:func:`inertia_id_ros.core.robots.reduce_model`) at its
        position in ``locked_positions`` (rad or m; default 0; entries naming identified joints are
        ignored, so ``data.mean_positions()`` locks joints at their measured positions). A locked
        joint's subtree is lumped into the link it hangs from.
        """
        return cls.from_model(load_model(urdf), joints, locked_positions, drives, coupling)

    @classmethod
    def from_model(
        cls,
        robot: pin.Model,
        joints: Sequence[str] | None = None,
        locked_positions: Mapping[str, float] | None = None,
        drives: DriveSpec = JointDrive(),
        coupling: MotorCoupling | None = None,
    ) -> LinkModel:
        """Model of the chain of ``joints`` (default: all) of the whole robot's model ``robot``;
        as :meth:`from_urdf`. Raises :class:`~inertia_id_ros.core.robots.JointNotFound`."""
        keep = list(robot.names[1:]) if joints is None else list(joints)
        locked = {
            name: value for name, value in (locked_positions or {}).items() if name not in keep
        }
        return cls(reduce_model(robot, keep, locked), drives, robot.names[1:], coupling)

    def _drives_per_joint(self, drives: DriveSpec) -> tuple[JointDrive, ...]:
        if isinstance(drives, JointDrive):
            return (drives,) * self.n_joints
        if isinstance(drives, Mapping):
            unknown = [j for j in drives if j not in self.joint_names]
            if unknown:
                raise ValueError(
                    f"drives given for unknown joints {unknown}; "
                    f"the model's joints are {self.joint_names}"
                )
            return tuple(drives.get(j, JointDrive()) for j in self.joint_names)
        drives = tuple(drives)
        if len(drives) != self.n_joints:
            raise ValueError(f"{len(drives)} drives for {self.n_joints} joints {self.joint_names}")
        return drives

    def _body_name(self, joint_id: int) -> str:
        for frame in self.model.frames:
            if frame.type == pin.FrameType.BODY and frame.parentJoint == joint_id:
                return frame.name
        return self.model.names[joint_id]

    @property
    def prior(self) -> np.ndarray:
        """(n_parameters,) the model's inertials (URDF) and the drives' priors (zero friction and
        offset, reflected rotor inertia as armature); zero for the coupled motors' terms."""
        thetas = [
            self.model.inertias[j].toDynamicParameters() for j in range(1, self.model.njoints)
        ]
        motors = np.zeros(self.n_motor_parameters)
        return np.concatenate(thetas + [d.prior() for d in self.drives] + [motors])

    def link_parameters(self, x: np.ndarray) -> np.ndarray:
        """(n_joints, 10) view of the links' ``theta`` in ``x``."""
        return np.asarray(x)[: 10 * self.n_joints].reshape(self.n_joints, 10)

    def drive_parameters(self, x: np.ndarray) -> dict[str, dict[str, float]]:
        """``{joint: {term: value}}`` of the estimated drive terms in ``x`` (units: friction.py),
        then ``{motor name: {term: value}}`` of each coupled motor's (units: motors.py)."""
        out: dict[str, dict[str, float]] = {j: {} for j in self.joint_names}
        out.update({motor.name: {} for motor in self.motors})
        for name, value in zip(self.parameter_names[10 * self.n_joints :], x[10 * self.n_joints :]):
            owner, term = name.rsplit(".", 1)
            out[owner][term] = float(value)
        return out

    def in_joint_order(self, data: JointTorqueData) -> JointTorqueData:
        """``data`` with its columns in the model's joint order."""
        if data.joint_names is None:
            if data.positions.shape[1] != self.n_joints:
                raise ValueError(
                    f"data has {data.positions.shape[1]} columns and no joint names; "
                    f"the model has {self.n_joints} joints {self.joint_names}"
                )
            return data
        missing = [j for j in self.joint_names if j not in data.joint_names]
        if missing:
            raise ValueError(f"data lacks joints {missing}; it has {data.joint_names}")
        idx = [data.joint_names.index(j) for j in self.joint_names]
        return JointTorqueData(
            data.positions[:, idx],
            data.velocities[:, idx],
            data.accelerations[:, idx],
            data.efforts[:, idx],
            self.joint_names,
        )

    def configuration(self, positions: np.ndarray) -> np.ndarray:
        """(N, nq) pinocchio configurations from (N, n_joints) joint positions (rad or m)."""
        positions = np.atleast_2d(np.asarray(positions, dtype=float))
        q = np.zeros((positions.shape[0], self.model.nq))
        for k, (iq, nq) in enumerate(self._q_index):
            if nq == 1:
                q[:, iq] = positions[:, k]
            else:  # unbounded revolute: (cos, sin)
                q[:, iq], q[:, iq + 1] = np.cos(positions[:, k]), np.sin(positions[:, k])
        return q

    def joint_torque_regressor(
        self, positions: np.ndarray, velocities: np.ndarray, accelerations: np.ndarray
    ) -> np.ndarray:
        """(N, n_joints, n_parameters) ``Y`` with ``tau = Y @ x + known_torques(ddq)``.

        Inputs are (N, n_joints) in the model's joint order. The first ``10 n`` columns are
        ``pin.computeJointTorqueRegressor`` (RNEA is linear in the links' ``theta``), the rest each
        joint's drive columns ``[dq, s(dq), 1, ddq]`` (estimated terms only) and each coupled
        motor's (:meth:`drive_regressor`).
        """
        dq = np.atleast_2d(np.asarray(velocities, dtype=float))
        ddq = np.atleast_2d(np.asarray(accelerations, dtype=float))
        n_theta = 10 * self.n_joints
        Y = np.empty((dq.shape[0], self.n_joints, self.n_parameters))
        self.link_regressor(positions, dq, ddq, out=Y[:, :, :n_theta])
        Y[:, :, n_theta:] = self.drive_regressor(dq, ddq)
        return Y

    def link_regressor(
        self,
        positions: np.ndarray,
        velocities: np.ndarray,
        accelerations: np.ndarray,
        out: np.ndarray | None = None,
    ) -> np.ndarray:
        """(N, n_joints, 10 n_joints) the links' columns of :meth:`joint_torque_regressor`:
        ``RNEA(theta; q, dq, ddq) = Y_links @ theta`` (``pin.computeJointTorqueRegressor``, the
        model's gravity); written into ``out`` when given (a view is fine)."""
        q = self.configuration(positions)
        dq = np.atleast_2d(np.asarray(velocities, dtype=float))
        ddq = np.atleast_2d(np.asarray(accelerations, dtype=float))
        Y = np.empty((q.shape[0], self.n_joints, 10 * self.n_joints)) if out is None else out
        for k in range(q.shape[0]):
            Y[k] = pin.computeJointTorqueRegressor(self.model, self._data, q[k], dq[k], ddq[k])
        return Y

    def gravity_columns_at_rest(self, positions: np.ndarray) -> np.ndarray:
        """(N, 3, n_joints, 4 n_joints) ``G`` with ``G[:, a]`` the mass and first-moment columns
        (``theta[0:4]`` of every link) of :meth:`link_regressor` at rest under unit gravity along
        the root frame's axis ``a``: ``RNEA(q, 0, 0) = sum_a g_a G[:, a] @ theta[mass and
        first moments]`` for gravity ``g`` (m/s², root frame).

        Written out, for joint ``i`` (world axis ``z_i`` through ``o_i``) and a link ``j`` it
        carries (origin ``o_j``, rotation ``R_j``): ``-z_i x (o_j - o_i)`` for the mass and
        ``-z_i x R_j e_k`` for the first moment ``k`` (revolute; prismatic: ``-z_i`` and 0),
        from forward kinematics vectorised over samples. Equal to pinocchio's regressor (tested);
        joints other than 1-dof revolute or prismatic fall back to it."""
        positions = np.atleast_2d(np.asarray(positions, dtype=float))
        axes = [_joint_axis(self.model.joints[i]) for i in range(1, self.model.njoints)]
        n, N = self.n_joints, positions.shape[0]
        known = [a for a in axes if a is not None]
        if len(known) < len(axes):
            rest = np.zeros_like(positions)
            columns = gravity_columns(self)
            return np.stack(
                [
                    with_gravity(self, axis).link_regressor(positions, rest, rest)[:, :, columns]
                    for axis in np.eye(3)
                ],
                axis=1,
            )
        rotation = {0: np.broadcast_to(np.eye(3), (N, 3, 3))}
        origin, axis = {0: np.zeros((N, 3))}, {}
        for i, (prismatic, u) in enumerate(known, start=1):
            parent, placement = self.model.parents[i], self.model.jointPlacements[i]
            base = rotation[parent] @ placement.rotation  # the joint frame at q = 0
            origin[i] = origin[parent] + rotation[parent] @ placement.translation
            axis[i] = base @ u
            q = positions[:, i - 1]
            if prismatic:
                rotation[i] = base
                origin[i] = origin[i] + q[:, None] * axis[i]
            else:
                cross = np.array([[0.0, -u[2], u[1]], [u[2], 0.0, -u[0]], [-u[1], u[0], 0.0]])
                turn = (
                    np.eye(3)
                    + np.sin(q)[:, None, None] * cross
                    + (1.0 - np.cos(q))[:, None, None] * (cross @ cross)
                )
                rotation[i] = base @ turn
        G = np.zeros((N, 3, n, 4 * n))
        for j in range(1, n + 1):
            i = j
            while i > 0:
                prismatic = known[i - 1][0]
                block = slice(4 * (j - 1), 4 * j)
                if prismatic:
                    G[:, :, i - 1, block.start] = -axis[i]
                else:
                    G[:, :, i - 1, block.start] = -np.cross(axis[i], origin[j] - origin[i])
                    G[:, :, i - 1, block.start + 1 : block.stop] = -np.cross(
                        axis[i][:, None, :], rotation[j].transpose(0, 2, 1)
                    ).transpose(0, 2, 1)
                i = self.model.parents[i]
        return G

    def drive_regressor(self, dq: np.ndarray, ddq: np.ndarray) -> np.ndarray:
        """(N, n_joints, n_drive_parameters) drive columns of :meth:`joint_torque_regressor`
        for velocities ``dq`` and accelerations ``ddq`` (N, n_joints): joint ``j``'s only in row
        ``j``, then each coupled motor's ``G[m]ᵀ [ddq_m, dq_m, s(dq_m)]`` in every row."""
        out = np.zeros(dq.shape + (self.n_parameters - 10 * self.n_joints,))
        col = 0
        for j, drive in enumerate(self.drives):
            m = len(drive.terms)
            out[:, j, col : col + m] = drive.regressor(dq[:, j], ddq[:, j])
            col += m
        for motor in self.motors:
            out[:, :, col : col + len(MOTOR_TERMS)] = motor.regressor(dq, ddq)
            col += len(MOTOR_TERMS)
        return out

    def known_torques(self, accelerations: np.ndarray) -> np.ndarray:
        """(N, n_joints) torque of the known (not estimated) drive terms: fixed armature x ddq."""
        ddq = np.atleast_2d(np.asarray(accelerations, dtype=float))
        return np.stack([d.known_torque(ddq[:, j]) for j, d in enumerate(self.drives)], axis=1)

    def measured_torques(self, efforts: np.ndarray) -> np.ndarray:
        """(N, n_joints) joint torques from raw efforts: ``effort x effort_scale`` per joint."""
        scale = np.array([d.effort_scale for d in self.drives])
        return np.atleast_2d(np.asarray(efforts, dtype=float)) * scale

    def inverse_dynamics(
        self,
        x: np.ndarray,
        positions: np.ndarray,
        velocities: np.ndarray,
        accelerations: np.ndarray,
    ) -> np.ndarray:
        """(N, n_joints) joint torques for parameters ``x`` by pinocchio RNEA plus each drive's
        torque and each coupled motor's ``G[m]ᵀ tau_m``, written out.

        Independent of the regressor: ``inverse_dynamics(x, ...) == Y @ x + known_torques``.
        """
        x = np.asarray(x, dtype=float)
        if x.shape != (self.n_parameters,):
            raise ValueError(f"x must have shape ({self.n_parameters},), got {x.shape}")
        model = self.model.copy()
        for j, theta in enumerate(self.link_parameters(x), start=1):
            model.inertias[j] = pin.Inertia.FromDynamicParameters(theta)
        data = model.createData()
        q = self.configuration(positions)
        dq = np.atleast_2d(np.asarray(velocities, dtype=float))
        ddq = np.atleast_2d(np.asarray(accelerations, dtype=float))
        tau = np.stack([pin.rnea(model, data, q[k], dq[k], ddq[k]) for k in range(q.shape[0])])
        values = self.drive_parameters(x)
        for j, (joint, drive) in enumerate(zip(self.joint_names, self.drives)):
            tau[:, j] += drive.parameters(values[joint]).torque(dq[:, j], ddq[:, j])
        for motor in self.motors:
            tau += motor.joint_torques(values[motor.name], dq, ddq)
        return tau


def regression_system(model: LinkModel, data: JointTorqueData) -> tuple[np.ndarray, np.ndarray]:
    """Stacked ``(Y (N n, p), y (N n,))`` with ``y = tau_measured - tau_known``; row ``k n + j``
    is sample ``k``, joint ``j``."""
    d = model.in_joint_order(data)
    Y = model.joint_torque_regressor(d.positions, d.velocities, d.accelerations)
    y = model.measured_torques(d.efforts) - model.known_torques(d.accelerations)
    return Y.reshape(-1, model.n_parameters), y.reshape(-1)


def link_channels(
    model: LinkModel, data: JointTorqueData | Iterable[JointTorqueData]
) -> ChannelNormalEquations:
    """Normal equations of :func:`regression_system` per joint (a channel each: the rows of one
    joint's torque), over all samples of ``data`` (accumulated in blocks)."""
    n, p = model.n_joints, model.n_parameters
    gram, moment, yty, n_samples = np.zeros((n, p, p)), np.zeros((n, p)), np.zeros(n), 0
    for run in as_runs(data):
        for start in range(0, run.n_samples, CHUNK_SAMPLES):
            Y, y = regression_system(model, run.subset(slice(start, start + CHUNK_SAMPLES)))
            block = ChannelNormalEquations.from_samples(Y.reshape(-1, n, p), y.reshape(-1, n))
            gram += block.gram
            moment += block.moment
            yty += block.yty
            n_samples += block.n_samples
    if n_samples == 0:
        raise ValueError("no torque samples in data")
    return ChannelNormalEquations(gram=gram, moment=moment, yty=yty, n_samples=n_samples)


def predict_torques(model: LinkModel, x: np.ndarray, data: JointTorqueData) -> np.ndarray:
    """(N, n_joints) predicted joint torques ``Y @ x + tau_known`` for the samples of ``data``."""
    d = model.in_joint_order(data)
    Y = model.joint_torque_regressor(d.positions, d.velocities, d.accelerations)
    return Y @ np.asarray(x, dtype=float) + model.known_torques(d.accelerations)


@dataclass(frozen=True)
class TorqueError:
    """RMS of predicted minus measured joint torques (N·m or N): per joint (n,) and overall."""

    per_joint: np.ndarray
    overall: float


def torque_error(
    model: LinkModel, x: np.ndarray, data: JointTorqueData | Iterable[JointTorqueData]
) -> TorqueError:
    """RMS prediction error of ``x`` over all samples of ``data``, per joint and overall."""
    squares, n = np.zeros(model.n_joints), 0
    for run in as_runs(data):
        measured = model.measured_torques(model.in_joint_order(run).efforts)
        squares += np.sum((predict_torques(model, x, run) - measured) ** 2, axis=0)
        n += run.n_samples
    per_joint = np.sqrt(squares / n)
    return TorqueError(per_joint, float(np.sqrt(np.mean(per_joint**2))))


def _joint_axis(joint: pin.JointModel) -> tuple[bool, np.ndarray] | None:
    """``(prismatic, unit axis (3,) in the joint frame)`` of a 1-dof revolute or prismatic
    joint, else ``None``."""
    name = joint.shortname()
    for kind, prismatic in (("JointModelR", False), ("JointModelP", True)):
        for suffix, axis in (("X", 0), ("Y", 1), ("Z", 2)):
            if name in (kind + suffix, kind + "UB" + suffix):
                return prismatic, np.eye(3)[axis]
    if name in (
        "JointModelRevoluteUnaligned",
        "JointModelPrismaticUnaligned",
        "JointModelRevoluteUnboundedUnaligned",
    ):
        return name.startswith("JointModelP"), np.asarray(joint.extract().axis, dtype=float)
    return None


def with_gravity(model: LinkModel, gravity: np.ndarray) -> LinkModel:
    """A copy of ``model`` whose gravity (root frame, m/s²) is ``gravity`` (3,)."""
    robot = model.model.copy()
    robot.gravity.linear = np.asarray(gravity, dtype=float)
    return LinkModel(robot, model.drives, model.robot_joint_names, model.coupling)


GRAVITY_PARAMETERS = (0, 1, 2, 3)
"""The entries of a link's ``theta`` gravity acts on: the mass and the first moments."""


def gravity_columns(model: LinkModel) -> np.ndarray:
    """(4 n_joints,) the columns of ``x`` gravity acts on (:data:`GRAVITY_PARAMETERS` of every
    link)."""
    return np.array([10 * k + i for k in range(model.n_joints) for i in GRAVITY_PARAMETERS])
