"""Twist and proper acceleration of an F/T-sensor frame, and the inertia of what lies beyond it.

Conventions: spatial vectors ``[linear, angular]`` (pinocchio order), expressed in the sensor frame
(pinocchio ``LOCAL``); the acceleration is the *spatial* one (``getFrameAcceleration``, what
``pin.bodyRegressor`` expects). The proper acceleration is ``a_g = a - g`` with ``g`` the gravity
motion ``[R^T g_world, 0]`` in the sensor frame, so the wrench the sensor exerts on the rigid body
beyond it is ``f = I a_g + v x* (I v)``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import pinocchio as pin

from inertia_id_ros.core.chain_kinematics import ChainKinematics
from inertia_id_ros.core.robots import frame_id, frames_beyond, reduce_model, selected_names

VECTORISED_FROM_SAMPLES = 24
"""Batches of at least this many samples run vectorised: the vectorised chain costs about ten numpy
calls per joint whatever the batch size, one pinocchio forward kinematics per sample is cheaper
below it (Panda: crossover between 20 and 30 samples)."""


class SensorKinematics:
    """Kinematics of frame ``sensor_frame`` of a fixed-base ``model`` from its actuated joints.

    ``joint_names``: the joints whose positions, velocities and accelerations are inputs, a subset
    of the joints that move the sensor frame (default: all of them); sorted into model order. The
    other joints are locked at ``locked_positions`` (name -> rad or m, default their neutral
    position). Internally the model is reduced to ``joint_names`` (the per-sample hot path), the
    full model is kept for :meth:`subtree_inertia`. 1-dof joints only (revolute, prismatic,
    continuous; a continuous joint's input is its angle). Not thread-safe (one pinocchio ``Data``).

    :meth:`compute_batch` runs vectorised over the samples (:mod:`chain_kinematics`) when every
    joint of the reduced chain is revolute, continuous or prismatic and the batch has at least
    :data:`VECTORISED_FROM_SAMPLES` samples, else one pinocchio forward kinematics per sample
    (:meth:`_compute_batch_pinocchio`, the reference); the two agree to rounding (~1e-15).
    """

    def __init__(
        self,
        model: pin.Model,
        sensor_frame: str,
        joint_names: Sequence[str] | None = None,
        locked_positions: Mapping[str, float] | None = None,
    ) -> None:
        self.model = model
        self.sensor_frame = sensor_frame
        sensor_id = frame_id(model, sensor_frame)
        chain = [j for j in model.supports[model.frames[sensor_id].parentJoint].tolist() if j > 0]
        chain_names = [model.names[j] for j in chain]
        for j in chain:
            if model.joints[j].nv != 1:
                raise ValueError(
                    f"joint {model.names[j]!r} ({model.joints[j].shortname()}) moves "
                    f"frame {sensor_frame!r} but has {model.joints[j].nv} degrees of "
                    "freedom; only 1-dof joints are supported"
                )
        names, outside = selected_names(chain_names, joint_names)
        if outside:
            raise ValueError(
                f"joint(s) {outside} do not move frame {sensor_frame!r}; the "
                f"joints that do are {chain_names}"
            )
        if joint_names is not None and len(set(joint_names)) != len(joint_names):
            raise ValueError(f"joint_names has duplicates: {list(joint_names)}")
        self.joint_names: tuple[str, ...] = tuple(names)
        """Input joints, in model order."""
        self.locked_positions = dict(locked_positions or {})
        self.reduced_model = reduce_model(model, names, self.locked_positions)
        self._data = self.reduced_model.createData()
        self._frame_id = frame_id(self.reduced_model, sensor_frame)
        self._gravity = self.reduced_model.gravity.linear.copy()
        joints = [self.reduced_model.joints[self.reduced_model.getJointId(n)] for n in names]
        continuous = np.array([joint.nq == 2 for joint in joints])
        self._q_index = np.array([joint.idx_q for joint in joints], dtype=int)
        self._continuous = continuous if continuous.any() else None
        self._q = pin.neutral(self.reduced_model)
        q_columns = {self.reduced_model.getJointId(n): k for k, n in enumerate(names)}
        self._chain = ChainKinematics.from_model(self.reduced_model, self._frame_id, q_columns)
        """Vectorised chain to the sensor frame, ``None`` for the per-sample fallback."""

    @property
    def n_joints(self) -> int:
        """Number of input joints."""
        return len(self.joint_names)

    @property
    def gravity(self) -> np.ndarray:
        """Gravity acceleration in the world frame (3,), m/s^2 (the model's)."""
        return self._gravity.copy()

    def _configuration(self, q: np.ndarray) -> np.ndarray:
        if self._continuous is None:
            self._q[self._q_index] = q
        else:
            cont = self._continuous
            self._q[self._q_index[~cont]] = q[~cont]
            self._q[self._q_index[cont]] = np.cos(q[cont])
            self._q[self._q_index[cont] + 1] = np.sin(q[cont])
        return self._q

    def model_configuration(self, q: np.ndarray) -> np.ndarray:
        """Configuration (reduced_model.nq,) of :attr:`reduced_model` from joint positions
        (n_joints,) in :attr:`joint_names` order (continuous joints as (cos, sin))."""
        return self._configuration(self._check("q", q)).copy()

    def _check(self, name: str, x: np.ndarray, n_samples: int | None = None) -> np.ndarray:
        """``x`` as floats, of shape (n_joints,) or, given ``n_samples``, (n_samples, n_joints)."""
        x = np.asarray(x, dtype=float)
        shape = (self.n_joints,) if n_samples is None else (n_samples, self.n_joints)
        if x.shape != shape:
            expected = shape if n_samples is None or n_samples >= 0 else ("N", self.n_joints)
            raise ValueError(
                f"{name} must have shape {expected} (joints "
                f"{list(self.joint_names)}), got {x.shape}"
            )
        return x

    def compute(
        self, q: np.ndarray, dq: np.ndarray, ddq: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray]:
        """``(v, a_g)`` (6,) each: twist and proper spatial acceleration ``a - g`` of the sensor
        frame, in the sensor frame, from joint positions (rad, m), velocities and accelerations
        (n_joints,) in :attr:`joint_names` order."""
        q, dq, ddq = (self._check(n, x) for n, x in (("q", q), ("dq", dq), ("ddq", ddq)))
        V, A = self.compute_batch(q[None], dq[None], ddq[None])
        return V[0], A[0]

    def compute_batch(
        self, Q: np.ndarray, DQ: np.ndarray, DDQ: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray]:
        """Batched :meth:`compute`: ``(V, A_g)`` (N, 6) from ``Q, DQ, DDQ`` (N, n_joints)."""
        Q, DQ, DDQ = self._check_batch(Q, DQ, DDQ)
        if self._chain is None or len(Q) < VECTORISED_FROM_SAMPLES:
            return self._pinocchio_loop(Q, DQ, DDQ)
        return self._chain.compute(Q, DQ, DDQ)

    def _check_batch(
        self, Q: np.ndarray, DQ: np.ndarray, DDQ: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``Q, DQ, DDQ`` as floats of one shape (N, n_joints)."""
        Q = np.asarray(Q, dtype=float)
        n = Q.shape[0] if Q.ndim == 2 else -1
        Q, DQ, DDQ = (self._check(name, x, n) for name, x in (("Q", Q), ("DQ", DQ), ("DDQ", DDQ)))
        return Q, DQ, DDQ

    def _compute_batch_pinocchio(
        self, Q: np.ndarray, DQ: np.ndarray, DDQ: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray]:
        """:meth:`compute_batch` by pinocchio, one forward kinematics per sample (the reference,
        and the fallback for small batches and for joint types the vectorised chain lacks)."""
        return self._pinocchio_loop(*self._check_batch(Q, DQ, DDQ))

    def _pinocchio_loop(
        self, Q: np.ndarray, DQ: np.ndarray, DDQ: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray]:
        """:meth:`_compute_batch_pinocchio` of checked ``Q, DQ, DDQ`` (N, n_joints)."""
        n = Q.shape[0]
        model, data, fid = self.reduced_model, self._data, self._frame_id
        V = np.empty((n, 6))
        A = np.empty((n, 6))
        R = np.empty((n, 3, 3))
        local = pin.ReferenceFrame.LOCAL
        for i in range(n):
            pin.forwardKinematics(model, data, self._configuration(Q[i]), DQ[i], DDQ[i])
            V[i] = pin.getFrameVelocity(model, data, fid, local).vector
            A[i] = pin.getFrameAcceleration(model, data, fid, local).vector
            R[i] = pin.updateFramePlacement(model, data, fid).rotation
        A[:, :3] -= R.transpose(0, 2, 1) @ self._gravity  # a - g, g = [R^T g_world, 0]
        return V, A

    def sensor_placement(self, q: np.ndarray) -> pin.SE3:
        """Placement of the sensor frame in the world at joint positions ``q`` (n_joints,)."""
        q = self._check("q", q)
        pin.forwardKinematics(self.reduced_model, self._data, self._configuration(q))
        return pin.updateFramePlacement(self.reduced_model, self._data, self._frame_id).copy()

    def subtree_joint_names(self) -> tuple[str, ...]:
        """Moving joints of the full model beyond the sensor frame (their positions shape
        :meth:`subtree_inertia`)."""
        beyond = frames_beyond(self.model, frame_id(self.model, self.sensor_frame))
        return tuple(
            frame.name
            for k, frame in enumerate(self.model.frames)
            if k in beyond and frame.type == pin.FrameType.JOINT
        )

    def subtree_inertia(self, q_full: np.ndarray | None = None) -> np.ndarray:
        """``theta`` (10,) of all links beyond the sensor frame, about and in the sensor frame.

        ``q_full``: configuration of the full :attr:`model` (model.nq,), default neutral; only the
        joints of :meth:`subtree_joint_names` matter. The links beyond are those whose frames
        descend from the sensor frame in the model's frame tree. pinocchio merges a fixed joint's
        child link into the parent joint's body and keeps the link's own inertia on the
        ``FIXED_JOINT`` frame, so a sensor frame on a fixed joint splits its joint's body: the part
        beyond is the sum of the inertias of the ``FIXED_JOINT`` frames beyond it (the whole body
        when the sensor frame is the joint's own frame or the joint's first link), plus the bodies
        of all moving joints beyond; a frame with no frame beyond it (an operational frame) gives
        zeros. This assumes a model from the URDF parser (a ``pin.buildReducedModel`` model also
        copies locked bodies into frames).
        """
        model = self.model
        q_full = pin.neutral(model) if q_full is None else np.asarray(q_full, dtype=float)
        if q_full.shape != (model.nq,):
            raise ValueError(f"q_full must have shape ({model.nq},), got {q_full.shape}")
        data = model.createData()
        pin.forwardKinematics(model, data, q_full)
        pin.updateFramePlacements(model, data)
        sensor_id = frame_id(model, self.sensor_frame)
        sensor = model.frames[sensor_id]
        beyond = frames_beyond(self.model, frame_id(self.model, self.sensor_frame))
        world_to_sensor = data.oMf[sensor_id].inverse()
        frames = model.frames
        parent = frames[sensor.parentFrame]
        whole_body = sensor.type == pin.FrameType.JOINT or (
            sensor.type == pin.FrameType.BODY and parent.type == pin.FrameType.JOINT
        )
        carriers = (
            set()
            if whole_body
            else {  # FIXED_JOINT frames holding links beyond
                k
                for k in beyond
                if frames[k].type == pin.FrameType.FIXED_JOINT
                and frames[k].parentJoint == sensor.parentJoint
            }
        )
        if sensor.type == pin.FrameType.BODY and parent.type == pin.FrameType.FIXED_JOINT:
            carriers.add(sensor.parentFrame)  # the sensor's own link
        total = pin.Inertia.Zero()
        for k in sorted(carriers):
            total += (world_to_sensor * data.oMf[k]).act(frames[k].inertia)
        moving = [frames[k].parentJoint for k in beyond if frames[k].type == pin.FrameType.JOINT]
        if whole_body and sensor.parentJoint > 0:
            moving.append(sensor.parentJoint)
        for j in sorted(set(moving)):  # a moving joint's whole body
            total += (world_to_sensor * data.oMi[j]).act(model.inertias[j])
        return np.array(total.toDynamicParameters())
