"""Whole-body rows: a floating-base robot's F/T sensors and joint torques, linear in per-link θ.

Parameters are per URDF link (not per pinocchio joint): ``x = [θ_link_1, ..., θ_link_L,
offset_sensor_1 (6), ...]`` with each ``θ`` about its link frame (:mod:`.inertia` order) and one
6-D offset per F/T sensor whose offset is estimated. With ``f_L = I_L a_g,L + v_L ×* (I_L v_L)
= body_regressor(v_L, a_g,L) θ_L`` the inertial wrench of link ``L`` (proper acceleration: gravity
included) and ``W_s`` the wrench sensor ``s`` reports (true wrench ``W_s − o_s``):

- base rows (``floating``, ``suspended``): all external wrenches are the contacts', so
  ``Σ_L X*_{B←L} f_L = Σ_c X*_{B←c} (W_c − o_c)`` (the base rows of the whole-body regressor);
- internal sensor ``s`` (the root side on the part beyond it, the subtree of its link):
  ``W_s − o_s = X*_{s←B} (Σ_{L beyond s} X*_{B←L} f_L − Σ_{c beyond s} X*_{B←c} (W_c − o_c))``;
- joint ``j`` (optional, rigid-body torque only): ``τ_j = S_jᵀ X*_{j←B} (Σ_{L beyond j} ... )``
  as for a sensor at the joint.

A ``fixed`` base is held at its *fixed frame*: the URDF root (a stand), or any URDF frame (the
stance sole of a humanoid on one foot), whose holding wrench is not measured. Rooted at a frame,
the model keeps its free-flyer root and the base moves as the joints between the frame and the
root require (:meth:`WholeBodyModel.fixed_base_motion`: the frame still, its proper acceleration
gravity's); a sensor or joint with the fixed frame beyond it takes the other side's equation,
``W_s − o_s = −X*_{s←B} (Σ_{L not beyond s} X*_{B←L} f_L − Σ_{c not beyond s} X*_{B←c} (W_c −
o_c))``. The fixed frame's tilt is constant: ``fixed_tilt`` (roll, pitch), or the mean of what an
IMU's specific force says (:meth:`WholeBodyModel.fixed_frame_acceleration_from_imu`).

Base motion needs no base pose or linear velocity: only proper accelerations and angular
velocities enter the wrenches (:class:`~inertia_id_ros.core.base_motion.BaseMotion`). The tree's
kinematics, vectorised over samples, are :mod:`inertia_id_ros.core.whole_body_kinematics`. Spatial
vectors are ``[linear, angular]``; wrenches ``[fx, fy, fz, tx, ty, tz]``.

Link inertials come from pinocchio (≥ 3): a link attached by a fixed joint carries its own inertia
on that ``FIXED_JOINT`` frame; a joint's own link is the joint's inertia minus those frames'.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
import pinocchio as pin

from inertia_id_ros.core.base_motion import BaseMotion, up_from_tilt
from inertia_id_ros.core.inertia import N_BODY_PARAMS, THETA_NAMES
from inertia_id_ros.core.regressors import (
    N_WRENCH_CHANNELS,
    WRENCH_CHANNEL_NAMES,
    body_regressor_batch,
)
from inertia_id_ros.core.robots import (
    STANDARD_GRAVITY,
    UrdfLink,
    frame_id,
    frames_beyond,
    link_frame,
    load_model,
    selected_names,
    urdf_links,
)
from inertia_id_ros.core.spatial import cross, dual_action, dual_matrix, dual_matrix_inverse
from inertia_id_ros.core.whole_body_kinematics import WholeBodyKinematics
from inertia_id_ros.errors import ConfigError, DataError
from inertia_id_ros.options import BASE_KINDS, SENSOR_KINDS


@dataclass(frozen=True)
class FTSensor:
    """A six-axis F/T sensor at URDF ``frame`` (a link, or a fixed joint: its child link's frame),
    of ``kind`` in :data:`SENSOR_KINDS`. ``estimate_offset``: estimate its constant 6-D offset
    (default: internal sensors yes, contact sensors no). ``flip_wrench_sign``: the sensor reports
    the opposite wrench (an internal sensor the wrench of the part beyond on the root side, as
    the real iCub's ``child_to_parent`` sensors; a contact sensor the robot's on the
    environment); the rows negate its readings, so its estimated offset is in this package's
    convention too (the negative of the raw readings' offset)."""

    frame: str
    kind: str
    estimate_offset: bool | None = None
    flip_wrench_sign: bool = False

    def __post_init__(self) -> None:
        if self.kind not in SENSOR_KINDS:
            raise ConfigError(
                f"F/T sensor {self.frame!r}: kind {self.kind!r} is neither 'contact' nor 'internal'"
            )

    @property
    def has_offset(self) -> bool:
        """Whether the offset is a parameter."""
        return self.kind == "internal" if self.estimate_offset is None else self.estimate_offset


@dataclass
class WholeBodySamples:
    """Synchronised samples: joints (N, n) in :attr:`WholeBodyModel.joint_names` order (rad, rad/s,
    rad/s²), base motion, F/T wrenches (N, S, 6) in each sensor's frame in the model's sensor
    order, optional joint torques (N, n) (N m)."""

    q: np.ndarray
    dq: np.ndarray
    ddq: np.ndarray
    base: BaseMotion
    wrenches: np.ndarray
    efforts: np.ndarray | None = None

    def __len__(self) -> int:
        return self.q.shape[0]

    def subset(self, samples: slice | np.ndarray) -> WholeBodySamples:
        """The samples selected by ``samples``."""
        return WholeBodySamples(
            self.q[samples],
            self.dq[samples],
            self.ddq[samples],
            self.base.subset(samples),
            self.wrenches[samples],
            None if self.efforts is None else self.efforts[samples],
        )


@dataclass
class WholeBodyModel:
    """Rows of a floating-base (or fixed, suspended) robot; see the module docstring.

    Build with :meth:`from_urdf`. ``links`` are the URDF links with mass; ``bodies`` (names, a
    subset of ``links``, default all) are identified, the others keep their URDF inertials.
    ``fixed_frame``: a fixed base's frame held still (``None``: the URDF root, on a stand);
    ``fixed_tilt``: its (roll, pitch) in the world (rad;
    :func:`~inertia_id_ros.core.base_motion.up_from_tilt`).
    """

    model: pin.Model
    base: str
    sensors: tuple[FTSensor, ...]
    imu_frame: str | None
    links: tuple[str, ...]
    link_prior: np.ndarray
    bodies: tuple[str, ...]
    _link_data: list[UrdfLink] = field(repr=False, default_factory=list)
    fixed_frame: str | None = None
    fixed_tilt: tuple[float, float] = (0.0, 0.0)

    # ---- construction ------------------------------------------------------------------------

    @classmethod
    def from_urdf(
        cls,
        path: str | os.PathLike,
        base: str = "floating",
        ft_sensors: Sequence[FTSensor] = (),
        imu_frame: str | None = None,
        bodies: Sequence[str] | None = None,
        fixed_frame: str | None = None,
        fixed_tilt: Sequence[float] = (0.0, 0.0),
    ) -> WholeBodyModel:
        """Model of the URDF at ``path``: a free-flyer root at its root link (``floating``,
        ``suspended``, ``fixed`` at a ``fixed_frame``) or a fixed root (``fixed`` on a stand).
        Raises :class:`ConfigError` (bad base kind, body names, a fixed frame or tilt with a base
        that is not fixed), :class:`FrameNotFound` (a sensor, IMU or fixed frame not in the
        URDF)."""
        if base not in BASE_KINDS:
            raise ConfigError(f"base {base!r} is not one of {BASE_KINDS}")
        tilt = tuple(float(a) for a in fixed_tilt)
        if len(tilt) != 2 or not np.all(np.isfinite(tilt)):
            raise ConfigError(
                f"fixed_tilt must be two finite angles (roll, pitch; rad), got {list(fixed_tilt)}"
            )
        if base != "fixed" and (fixed_frame is not None or any(tilt)):
            raise ConfigError(f"a fixed frame and tilt apply to a fixed base, not {base!r}")
        fixed = load_model(path)
        model = (
            fixed
            if base == "fixed" and fixed_frame is None
            else pin.buildModelFromUrdf(str(path), pin.JointModelFreeFlyer())
        )
        if fixed_frame is not None:
            frame_id(model, fixed_frame)
        for sensor in ft_sensors:
            if not isinstance(sensor, FTSensor):
                raise ConfigError(f"ft_sensors must be FTSensor, got {type(sensor).__name__}")
            frame_id(model, sensor.frame)
        if len({s.frame for s in ft_sensors}) != len(ft_sensors):
            raise ConfigError(f"an F/T frame is listed twice: {[s.frame for s in ft_sensors]}")
        if imu_frame is not None:
            frame_id(model, imu_frame)
        for j in range(1 if model is fixed else 2, model.njoints):
            if model.joints[j].nv != 1:
                raise ConfigError(
                    f"joint {model.names[j]!r} has {model.joints[j].nv} degrees "
                    "of freedom; only 1-dof joints are supported"
                )
        link_data = urdf_links(model)
        names = tuple(link.name for link in link_data)
        chosen, unknown = selected_names(names, bodies)
        if unknown:
            raise ConfigError(
                f"bodies {unknown} are not URDF links with mass; those are {list(names)}"
            )
        return cls(
            model=model,
            base=base,
            sensors=tuple(ft_sensors),
            imu_frame=imu_frame,
            links=names,
            link_prior=np.array([link.theta for link in link_data]),
            bodies=chosen,
            _link_data=link_data,
            fixed_frame=fixed_frame,
            fixed_tilt=tilt,
        )

    def __post_init__(self) -> None:
        model = self.model
        self._kinematics = WholeBodyKinematics(
            model, self.base != "fixed" or self.fixed_frame is not None, self._link_data
        )
        self._base_rows = self.base != "fixed"
        self.joint_names: tuple[str, ...] = tuple(
            model.names[j] for j in self._kinematics.joint_ids
        )
        """Actuated joints, model order (the columns of ``q``)."""
        self._identified = np.array([name in set(self.bodies) for name in self.links])
        self._sensor_frames = [frame_id(model, s.frame) for s in self.sensors]
        self._contact = [k for k, s in enumerate(self.sensors) if s.kind == "contact"]
        self._internal = [k for k, s in enumerate(self.sensors) if s.kind == "internal"]
        self._fixed_start = (
            None if self.fixed_frame is None else link_frame(self.model, self.fixed_frame)
        )
        self._sensor_sides = {
            k: self._measured_side(link_frame(self.model, self.sensors[k].frame))
            for k in self._internal
        }
        self._offset_sensors = [k for k, s in enumerate(self.sensors) if s.has_offset]
        self._wrench_signs = np.array(
            [-1.0 if s.flip_wrench_sign else 1.0 for s in self.sensors]
        ).reshape(-1, 1)
        self._joint_sides = [
            self._measured_side(self._joint_child_frame(j)) for j in self._kinematics.joint_ids
        ]

    # ---- tree --------------------------------------------------------------------------------

    def _joint_child_frame(self, joint: int) -> int:
        return link_frame(self.model, self.model.names[joint])

    def _links_beyond(self, start: int) -> np.ndarray:
        """Boolean mask over :attr:`links`: the links in the subtree starting at frame ``start``."""
        beyond = frames_beyond(self.model, start)
        return np.array([link.frame in beyond for link in self._link_data], dtype=bool)

    def _measured_side(self, start: int) -> tuple[np.ndarray, list[int], float]:
        """The side whose equation gives the wrench a sensor or joint at frame ``start``
        transmits: ``(link mask, contacts on it, sign)``, the subtree beyond it (sign 1) unless
        the fixed frame is there (then the rest, sign −1: the holding wrench is not measured)."""
        beyond = frames_beyond(self.model, start)
        mask = np.array([link.frame in beyond for link in self._link_data], dtype=bool)
        inside = [
            c for c in self._contact if link_frame(self.model, self.sensors[c].frame) in beyond
        ]
        if self._fixed_start is None or self._fixed_start not in beyond:
            return mask, inside, 1.0
        return ~mask, [c for c in self._contact if c not in inside], -1.0

    def links_beyond(self, frame: str) -> tuple[str, ...]:
        """URDF links with mass beyond ``frame`` (the part an internal sensor there measures)."""
        mask = self._links_beyond(link_frame(self.model, frame))
        return tuple(name for name, inside in zip(self.links, mask) if inside)

    # ---- parameters --------------------------------------------------------------------------

    @property
    def n_bodies(self) -> int:
        """Identified links."""
        return len(self.bodies)

    @property
    def offset_sensors(self) -> tuple[str, ...]:
        """Frames of the sensors whose offset is estimated, in parameter order."""
        return tuple(self.sensors[k].frame for k in self._offset_sensors)

    @property
    def n_params(self) -> int:
        """``10 n_bodies + 6 n_offsets``."""
        return N_BODY_PARAMS * self.n_bodies + N_WRENCH_CHANNELS * len(self._offset_sensors)

    @property
    def prior(self) -> np.ndarray:
        """(n_params,) URDF θ of the identified links, zero offsets."""
        return np.concatenate(
            [
                self.link_prior[self._identified].ravel(),
                np.zeros(N_WRENCH_CHANNELS * len(self._offset_sensors)),
            ]
        )

    @property
    def parameter_names(self) -> tuple[str, ...]:
        """``link.m``, ..., ``sensor.offset_fx``, ..."""
        names = [f"{b}.{p}" for b in self.bodies for p in THETA_NAMES]
        names += [f"{s}.offset_{c}" for s in self.offset_sensors for c in WRENCH_CHANNEL_NAMES]
        return tuple(names)

    def channels(self, with_efforts: bool = False) -> tuple[str, ...]:
        """Labels of the rows of one sample (rows are sample-major): ``base.fx``...,
        ``<internal frame>.fx``..., ``tau.<joint>``."""
        labels = []
        if self._base_rows:
            labels += [f"base.{c}" for c in WRENCH_CHANNEL_NAMES]
        for k in self._internal:
            labels += [f"{self.sensors[k].frame}.{c}" for c in WRENCH_CHANNEL_NAMES]
        if with_efforts:
            labels += [f"tau.{j}" for j in self.joint_names]
        return tuple(labels)

    # ---- kinematics --------------------------------------------------------------------------

    def configuration(self, q: np.ndarray) -> np.ndarray:
        """(model.nq,) configuration with the base at the origin (joint angles ``q`` (n,))."""
        return self._kinematics.configuration(q)

    def base_motion_from_imu(
        self,
        q: np.ndarray,
        dq: np.ndarray,
        ddq: np.ndarray,
        angular_velocity: np.ndarray,
        specific_force: np.ndarray,
        angular_acceleration: np.ndarray,
    ) -> BaseMotion:
        """Base motion from an IMU at :attr:`imu_frame`: ``angular_velocity`` (N, 3) rad/s and
        ``angular_acceleration`` (N, 3) rad/s² in the IMU frame, ``specific_force`` (N, 3) m/s²
        (proper acceleration, +9.81 up at rest) in the IMU frame; joints (N, n). The IMU's
        orientation is not needed (gravity is in the specific force)."""
        if self.imu_frame is None:
            raise ConfigError("base_motion_from_imu needs imu_frame")
        return self._kinematics.base_motion_from_imu(
            self.imu_frame, q, dq, ddq, angular_velocity, specific_force, angular_acceleration
        )

    def fixed_base_motion(
        self, q: np.ndarray, dq: np.ndarray, ddq: np.ndarray, tilt: Sequence[float] | None = None
    ) -> BaseMotion:
        """Motion of a ``fixed`` base with joints (N, n): its fixed frame still, tilted by ``tilt``
        (roll, pitch; rad; default :attr:`fixed_tilt`), its proper acceleration ``a_g = g``
        :func:`~inertia_id_ros.core.base_motion.up_from_tilt` in its frame. On a stand the base is
        at rest; rooted at a frame, the base moves with the joints between the frame and the root:
        its twist and acceleration from the frame's Jacobian and its drift (``v_F = 0``, ``a_F =
        [a_g, 0]``), with the model's free-flyer root."""
        n = q.shape[0]
        if self.base != "fixed":
            raise ConfigError(f"fixed_base_motion needs a fixed base, not {self.base!r}")
        up = up_from_tilt(self.fixed_tilt if tilt is None else tilt)
        proper = np.broadcast_to(STANDARD_GRAVITY * up, (n, 3))
        zeros = np.zeros((n, 3))
        if self.fixed_frame is None:  # on a stand: the root fixed, the base at rest
            return BaseMotion(zeros, zeros.copy(), proper.copy())
        twist, acceleration, rotation = self._kinematics.rooted_base_motion(
            self.fixed_frame, q, dq, ddq
        )
        omega = twist[:, 3:]
        linear = (
            acceleration[:, :3]
            + cross(omega, twist[:, :3])
            + (rotation @ proper[..., None])[..., 0]
        )
        return BaseMotion(omega.copy(), acceleration[:, 3:].copy(), linear)

    def fixed_frame_acceleration_from_imu(
        self, q: np.ndarray, dq: np.ndarray, ddq: np.ndarray, specific_force: np.ndarray
    ) -> np.ndarray:
        """(N, 3) proper acceleration (m/s², gravity reversed) of a ``fixed`` base's fixed frame in
        that frame, from the ``specific_force`` (N, 3) of the IMU at :attr:`imu_frame` (its frame)
        with joints (N, n): the IMU's motion relative to the still frame (from the joints) removed.
        The direction of its mean is the frame's tilt
        (:func:`~inertia_id_ros.core.base_motion.tilt_from_up`; the gyro is not needed)."""
        if self.imu_frame is None or self.base != "fixed":
            raise ConfigError(
                "fixed_frame_acceleration_from_imu needs a fixed base and an imu_frame"
            )
        return self._kinematics.fixed_frame_acceleration_from_imu(
            self.imu_frame, self.fixed_frame, q, dq, ddq, specific_force
        )

    # ---- rows --------------------------------------------------------------------------------

    def check_samples(self, samples: WholeBodySamples) -> None:
        """Raise :class:`DataError` naming the array whose shape does not fit the model."""
        n, nj = len(samples), len(self.joint_names)
        for name in ("q", "dq", "ddq"):
            if getattr(samples, name).shape != (n, nj):
                raise DataError(
                    f"{name} must have shape ({n}, {nj}) (joints "
                    f"{list(self.joint_names)}), got {getattr(samples, name).shape}"
                )
        if samples.wrenches.shape != (n, len(self.sensors), 6):
            raise DataError(
                f"wrenches must have shape ({n}, {len(self.sensors)}, 6), got "
                f"{samples.wrenches.shape}"
            )
        if len(samples.base) != n:
            raise DataError(f"base motion has {len(samples.base)} samples for {n}")
        if samples.efforts is not None and samples.efforts.shape != (n, nj):
            raise DataError(f"efforts must have shape ({n}, {nj}), got {samples.efforts.shape}")

    def _groups(self, with_efforts: bool) -> list[tuple[str, int, np.ndarray, list[int], float]]:
        """Row groups in channel order: ``(kind, index, link mask, contacts, sign)`` with kind
        ``base`` (index -1), ``sensor`` (index: sensor), ``joint`` (index: position in
        joint_names), the links and contacts of the side it balances and its sign
        (:meth:`_measured_side`)."""
        groups: list[tuple[str, int, np.ndarray, list[int], float]] = []
        if self._base_rows:
            groups.append(("base", -1, np.ones(len(self.links), dtype=bool), self._contact, 1.0))
        groups += [("sensor", k, *self._sensor_sides[k]) for k in self._internal]
        if with_efforts:
            groups += [("joint", k, *self._joint_sides[k]) for k in range(len(self.joint_names))]
        return groups

    def _offset_columns(self) -> dict[int, int]:
        """Sensor index -> first column of its offset."""
        return {
            k: N_BODY_PARAMS * self.n_bodies + N_WRENCH_CHANNELS * i
            for i, k in enumerate(self._offset_sensors)
        }

    def row_groups(self, with_efforts: bool = False) -> list[tuple[np.ndarray, np.ndarray]]:
        """``(channels, columns)`` per group of rows (base, each internal sensor, each joint):
        the only columns of ``Y`` those channels' rows can touch (the subtree's links and the
        offsets in the equation), to accumulate ``Yᵀ Y`` by blocks."""
        out, row = [], 0
        body_index = {name: u for u, name in enumerate(self.bodies)}
        offsets = self._offset_columns()
        for kind, k, mask, contacts, _ in self._groups(with_efforts):
            size = 1 if kind == "joint" else 6
            cols = [
                N_BODY_PARAMS * body_index[name] + np.arange(N_BODY_PARAMS)
                for name, inside in zip(self.links, mask)
                if inside and name in body_index
            ]
            cols += [offsets[c] + np.arange(6) for c in contacts if c in offsets]
            if kind == "sensor" and k in offsets:
                cols.append(offsets[k] + np.arange(6))
            out.append(
                (
                    np.arange(row, row + size),
                    np.sort(np.concatenate(cols)) if cols else np.zeros(0, dtype=int),
                )
            )
            row += size
        return out

    def rows(
        self, samples: WholeBodySamples, with_efforts: bool = False
    ) -> tuple[np.ndarray, np.ndarray, tuple[str, ...]]:
        """``(Y (N C, n_params), b (N C,), channels (C,))`` with ``Y x = b`` for the true ``x``
        up to noise; row ``i C + c`` is sample ``i``, channel ``channels[c]``
        (:meth:`channels`). Links not identified contribute their URDF θ to ``b``."""
        channels = self.channels(with_efforts)
        Y = np.zeros((len(samples), len(channels), self.n_params))
        b = np.zeros((len(samples), len(channels)))
        for (rows, cols), (Yg, bg) in zip(
            self.row_groups(with_efforts), self.group_rows(samples, with_efforts)
        ):
            Y[:, rows[:, None], cols[None, :]] = Yg
            b[:, rows] = bg
        return Y.reshape(-1, self.n_params), b.reshape(-1), channels

    def group_rows(
        self, samples: WholeBodySamples, with_efforts: bool = False
    ) -> list[tuple[np.ndarray, np.ndarray]]:
        """Per group of :meth:`row_groups`: ``Y_g`` (N, channels, columns) and ``b_g`` (N,
        channels), the rows restricted to the columns they touch (see :meth:`rows`)."""
        self.check_samples(samples)
        efforts = samples.efforts
        if with_efforts and efforts is None:
            raise DataError("with_efforts needs samples.efforts")
        n = len(samples)
        v, a, rot, pos, joint_rot, joint_pos = self._kinematics.link_kinematics(
            samples.q, samples.dq, samples.ddq, samples.base
        )
        L = len(self.links)
        Yl = body_regressor_batch(v.reshape(-1, 6), a.reshape(-1, 6)).reshape(n, L, 6, 10)
        Z = dual_action(rot, pos, Yl)  # (n, L, 6, 10): link wrenches in the base frame
        known = np.flatnonzero(~self._identified)
        Zk = np.einsum("nlab,lb->nla", Z[:, known], self.link_prior[known])  # (n, Lk, 6)
        column = {
            link: N_BODY_PARAMS * u for u, link in enumerate(np.flatnonzero(self._identified))
        }
        sensor_rot, sensor_pos = self._kinematics.frame_placements(
            joint_rot, joint_pos, self._sensor_frames
        )
        W = samples.wrenches * self._wrench_signs  # (n, S, 6), this package's convention
        Xc = dual_matrix(sensor_rot, sensor_pos)  # X*_{B<-c} (n, S, 6, 6)
        Wc_base = (Xc @ W[..., None])[..., 0]
        offsets = self._offset_columns()
        inverse = dual_matrix_inverse(sensor_rot, sensor_pos)  # X*_{s<-B}
        if with_efforts:
            joint_inverse = dual_matrix_inverse(
                joint_rot[:, self._kinematics.joint_ids], joint_pos[:, self._kinematics.joint_ids]
            )
        result = []
        for (kind, k, mask, contacts, sign), (_, cols) in zip(
            self._groups(with_efforts), self.row_groups(with_efforts)
        ):
            # in the base frame: Σ_L Z_L θ_L + Σ_c X*_c o_c = Σ_c X*_c W_c - Σ_known Z θ
            if kind == "base":
                T = None
            elif kind == "sensor":
                T = sign * inverse[:, k]
            else:  # (n, 1, 6): ±Sᵀ X*_{j<-B}
                T = sign * (self._kinematics.axes[k] @ joint_inverse[:, k])[:, None, :]
            size = 6 if T is None else T.shape[1]
            out = np.zeros((n, size, cols.size))
            links = np.flatnonzero(mask & self._identified)
            if links.size:
                block = Z[:, links]  # (n, l, 6, 10)
                if T is not None:
                    block = T[:, None] @ block
                at = np.searchsorted(cols, [column[link] for link in links])
                for j, start in enumerate(at):
                    out[:, :, start : start + N_BODY_PARAMS] = block[:, j]
            right = Wc_base[:, contacts].sum(axis=1) - Zk[:, mask[known]].sum(axis=1)
            right = right if T is None else (T @ right[..., None])[..., 0]
            for c in contacts:
                if c in offsets:
                    start = int(np.searchsorted(cols, offsets[c]))
                    out[:, :, start : start + 6] = Xc[:, c] if T is None else T @ Xc[:, c]
            if kind == "sensor":  # W_s = o_s + X*_{s<-B} (...)
                right = right + W[:, k]
                if k in offsets:
                    start = int(np.searchsorted(cols, offsets[k]))
                    out[:, :, start : start + 6] += np.eye(6)
            elif kind == "joint" and efforts is not None:  # tau_j = S_jᵀ X*_{j<-B} (...)
                right = right + efforts[:, k : k + 1]
            result.append((out, right))
        return result
