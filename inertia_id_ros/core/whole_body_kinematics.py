"""Kinematics of a whole-body model's tree: the pinocchio model of
:class:`~inertia_id_ros.core.whole_body_model.WholeBodyModel` (a free-flyer root when the base
moves, else fixed; 1-dof actuated joints), its links' motion vectorised over the samples, and the
base's motion from an IMU or from a still (rooted) frame. Frames are LOCAL; spatial vectors
``[linear, angular]``.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pinocchio as pin

from inertia_id_ros.core.base_motion import BaseMotion
from inertia_id_ros.core.robots import UrdfLink, frame_id
from inertia_id_ros.core.spatial import axis_rotations, motion_cross, motion_inverse_action

RootedMotion = tuple[np.ndarray, np.ndarray, np.ndarray]
"""A base's twist (N, 6), spatial acceleration (N, 6) and its fixed frame's rotation (N, 3, 3)
(:meth:`WholeBodyKinematics.rooted_base_motion`)."""


class WholeBodyKinematics:
    """The kinematics of ``model`` (its root a free flyer when ``free_flyer``: the base moves)
    with the URDF links with mass ``links`` (:func:`~inertia_id_ros.core.robots.urdf_links`);
    joints (N, n) are the actuated ones, in model order (:attr:`joint_ids`)."""

    def __init__(self, model: pin.Model, free_flyer: bool, links: Sequence[UrdfLink]) -> None:
        self.model = model
        self.data = model.createData()
        self.free_flyer = free_flyer
        first = 2 if free_flyer else 1
        self.joint_ids = list(range(first, model.njoints))
        """The actuated joints' ids, model order."""
        self._q_index = np.array([model.joints[j].idx_q for j in self.joint_ids], dtype=int)
        self._v_index = np.array([model.joints[j].idx_v for j in self.joint_ids], dtype=int)
        self._continuous = np.array([model.joints[j].nq == 2 for j in self.joint_ids], dtype=bool)
        pin.computeJointJacobians(model, self.data, pin.neutral(model))
        self.axes = np.array(
            [
                pin.getJointJacobian(model, self.data, j, pin.ReferenceFrame.LOCAL)[
                    :, model.joints[j].idx_v
                ]
                for j in self.joint_ids
            ]
        )
        """(n, 6) each actuated joint's motion subspace ``S_j`` in its frame."""
        self._link_joint = np.array([link.joint for link in links], dtype=int)
        self._link_motion = np.array([link.placement.inverse().action for link in links])
        self._link_rot = np.array([link.placement.rotation for link in links])
        self._link_pos = np.array([link.placement.translation for link in links])
        self._rooted: tuple[str, np.ndarray, np.ndarray, np.ndarray, RootedMotion] | None = None
        """The last :meth:`rooted_base_motion`'s arguments and result: a batch's base motion
        and its IMU's tilt both need it."""

    def configuration(self, q: np.ndarray) -> np.ndarray:
        """(model.nq,) configuration with the base at the origin (joint angles ``q`` (n,))."""
        config = pin.neutral(self.model)
        cont = self._continuous
        config[self._q_index[~cont]] = q[~cont]
        config[self._q_index[cont]] = np.cos(q[cont])
        config[self._q_index[cont] + 1] = np.sin(q[cont])
        return config

    def velocity(self, dq: np.ndarray, base_twist: np.ndarray | None) -> np.ndarray:
        """(model.nv,) velocity (or acceleration) with joints ``dq`` (n,) and the free flyer's
        ``base_twist`` (6,) (``None``: zero)."""
        v = np.zeros(self.model.nv)
        v[self._v_index] = dq
        if self.free_flyer and base_twist is not None:
            v[:6] = base_twist
        return v

    def base_motion_from_imu(
        self,
        imu_frame: str,
        q: np.ndarray,
        dq: np.ndarray,
        ddq: np.ndarray,
        angular_velocity: np.ndarray,
        specific_force: np.ndarray,
        angular_acceleration: np.ndarray,
    ) -> BaseMotion:
        """Base motion from the IMU at ``imu_frame``, as
        :meth:`WholeBodyModel.base_motion_from_imu` describes."""
        model, data = self.model, self.data
        fid = frame_id(model, imu_frame)
        local = pin.ReferenceFrame.LOCAL
        n = q.shape[0]
        omega_b, alpha_b, acc_b = np.empty((n, 3)), np.empty((n, 3)), np.empty((n, 3))
        for i in range(n):
            config = self.configuration(q[i])
            a = self.velocity(ddq[i], None)
            pin.forwardKinematics(model, data, config, self.velocity(dq[i], None), a)
            placement = pin.updateFramePlacement(model, data, fid)
            rot, pos = placement.rotation, placement.translation  # base <- IMU
            w_rel = pin.getFrameVelocity(model, data, fid, local).angular
            w_base = rot @ (angular_velocity[i] - w_rel)
            twist = np.concatenate([np.zeros(3), w_base]) if self.free_flyer else None
            pin.forwardKinematics(model, data, config, self.velocity(dq[i], twist), a)
            c_lin = pin.getFrameClassicalAcceleration(model, data, fid, local).linear
            c_ang = pin.getFrameAcceleration(model, data, fid, local).angular
            alpha = rot @ (angular_acceleration[i] - c_ang)
            omega_b[i], alpha_b[i] = w_base, alpha
            acc_b[i] = rot @ (specific_force[i] - c_lin) - np.cross(alpha, pos)
        return BaseMotion(omega_b, alpha_b, acc_b)

    def fixed_frame_acceleration_from_imu(
        self,
        imu_frame: str,
        fixed_frame: str | None,
        q: np.ndarray,
        dq: np.ndarray,
        ddq: np.ndarray,
        specific_force: np.ndarray,
    ) -> np.ndarray:
        """(N, 3) proper acceleration of the still ``fixed_frame`` (``None``: the fixed root) in
        that frame, from the IMU at ``imu_frame``, as
        :meth:`WholeBodyModel.fixed_frame_acceleration_from_imu` describes."""
        model, data = self.model, self.data
        fid = frame_id(model, imu_frame)
        local = pin.ReferenceFrame.LOCAL
        n = q.shape[0]
        if fixed_frame is not None:  # the model's root is a free flyer
            twist, acceleration, rotation = self.rooted_base_motion(fixed_frame, q, dq, ddq)
        else:
            twist, acceleration = np.zeros((n, 6)), np.zeros((n, 6))
            rotation = np.broadcast_to(np.eye(3), (n, 3, 3))
        out = np.empty((n, 3))
        for i in range(n):
            velocity, accel = self.velocity(dq[i], twist[i]), self.velocity(ddq[i], None)
            if fixed_frame is not None:
                accel[:6] = acceleration[i]
            pin.forwardKinematics(model, data, self.configuration(q[i]), velocity, accel)
            imu_rotation = pin.updateFramePlacement(model, data, fid).rotation  # base <- IMU
            c_lin = pin.getFrameClassicalAcceleration(model, data, fid, local).linear
            out[i] = rotation[i].T @ imu_rotation @ (specific_force[i] - c_lin)
        return out

    def rooted_base_motion(
        self, fixed_frame: str, q: np.ndarray, dq: np.ndarray, ddq: np.ndarray
    ) -> RootedMotion:
        """Base twist (N, 6) and spatial acceleration (N, 6) (base frame, LOCAL) that keep the frame
        ``fixed_frame`` still without gravity, and the fixed frame's rotation in the base frame (N,
        3, 3), from the joints (N, n) (the free-flyer model). The arrays are read-only: the last
        result is kept for the same arguments."""
        kept = self._rooted
        if kept is not None and kept[0] == fixed_frame:
            if all(np.array_equal(a, b) for a, b in zip(kept[1:4], (q, dq, ddq))):
                return kept[4]
        model, data = self.model, self.data
        fid = frame_id(model, fixed_frame)
        local = pin.ReferenceFrame.LOCAL
        n = q.shape[0]
        twist, acceleration = np.empty((n, 6)), np.empty((n, 6))
        rotation = np.empty((n, 3, 3))
        for i in range(n):
            config = self.configuration(q[i])
            pin.computeJointJacobians(model, data, config)
            placement = pin.updateFramePlacement(model, data, fid)  # base <- frame
            jacobian = pin.getFrameJacobian(model, data, fid, local)[:, self._v_index]
            to_base = placement.action  # X_{B<-F}; the free flyer's columns are X_{F<-B}
            twist[i] = -to_base @ (jacobian @ dq[i])
            pin.forwardKinematics(
                model, data, config, self.velocity(dq[i], twist[i]), self.velocity(ddq[i], None)
            )
            acceleration[i] = -to_base @ pin.getFrameAcceleration(model, data, fid, local).vector
            rotation[i] = placement.rotation
        for array in (twist, acceleration, rotation):
            array.setflags(write=False)
        self._rooted = (
            fixed_frame,
            q.copy(),
            dq.copy(),
            ddq.copy(),
            (twist, acceleration, rotation),
        )
        return self._rooted[4]

    def link_kinematics(
        self, q: np.ndarray, dq: np.ndarray, ddq: np.ndarray, base: BaseMotion
    ) -> tuple[np.ndarray, ...]:
        """Per sample and link: twist ``v`` and proper acceleration ``a_g`` (N, L, 6) in the link
        frame; link placement in the base frame ``R`` (N, L, 3, 3), ``p`` (N, L, 3); the same
        placements of the joints (N, njoints, 3, 3), (N, njoints, 3); joints ``q``, ``dq``, ``ddq``
        (N, n), the ``base``'s motion.

        The forward recursion of pinocchio's ``forwardKinematics`` (LOCAL frames), vectorised
        over the samples: ``v_j = X_j v_parent + S_j dq_j``, ``a_j = X_j a_parent + S_j ddq_j +
        v_j × S_j dq_j``; the root moves with the base motion (a fixed root: ``[a_g, 0]``)."""
        model = self.model
        n, nj = q.shape[0], model.njoints
        V, A = np.zeros((n, nj, 6)), np.zeros((n, nj, 6))
        R = np.zeros((n, nj, 3, 3))
        P = np.zeros((n, nj, 3))
        R[:, 0] = np.eye(3)
        if self.free_flyer:
            R[:, 1] = np.eye(3)
            V[:, 1, 3:] = base.angular_velocity
            A[:, 1, :3] = base.proper_acceleration
            A[:, 1, 3:] = base.angular_acceleration
        else:
            A[:, 0, :3] = base.proper_acceleration
        for k, j in enumerate(self.joint_ids):
            parent = model.parents[j]
            placement = model.jointPlacements[j]
            axis = self.axes[k]
            qk, dqk, ddqk = q[:, k], dq[:, k], ddq[:, k]
            # M_j = placement * exp(S q): rotation about axis[3:], translation along axis[:3]
            rot = placement.rotation @ axis_rotations(axis[3:], qk)
            pos = placement.translation + (placement.rotation @ axis[:3]) * qk[:, None]
            rt = np.swapaxes(rot, 1, 2)
            vp, ap = V[:, parent], A[:, parent]
            v = motion_inverse_action(rt, pos, vp)
            a = motion_inverse_action(rt, pos, ap)
            joint_velocity = axis * dqk[:, None]
            v += joint_velocity
            a += axis * ddqk[:, None] + motion_cross(v, joint_velocity)
            V[:, j], A[:, j] = v, a
            R[:, j] = R[:, parent] @ rot
            P[:, j] = P[:, parent] + (R[:, parent] @ pos[..., None])[..., 0]
        lj = self._link_joint
        v_link = np.einsum("lab,nlb->nla", self._link_motion, V[:, lj])
        a_link = np.einsum("lab,nlb->nla", self._link_motion, A[:, lj])
        r_link = R[:, lj] @ self._link_rot
        p_link = P[:, lj] + np.einsum("nlab,lb->nla", R[:, lj], self._link_pos)
        return v_link, a_link, r_link, p_link, R, P

    def frame_placements(
        self, joint_rot: np.ndarray, joint_pos: np.ndarray, frames: Sequence[int]
    ) -> tuple[np.ndarray, np.ndarray]:
        """Placements of ``frames`` in the base frame per sample, ``R`` (N, F, 3, 3) and ``p``
        (N, F, 3), from the joints' (N, njoints, 3, 3), (N, njoints, 3)."""
        parents = [self.model.frames[f].parentJoint for f in frames]
        rot = np.array([self.model.frames[f].placement.rotation for f in frames]).reshape(-1, 3, 3)
        pos = np.array([self.model.frames[f].placement.translation for f in frames]).reshape(-1, 3)
        R = joint_rot[:, parents] @ rot
        P = joint_pos[:, parents] + np.einsum("nfab,fb->nfa", joint_rot[:, parents], pos)
        return R, P
