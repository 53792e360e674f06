"""Twist and proper acceleration of a frame at the end of a chain of 1-dof joints, for N samples.

The numpy counterpart of pinocchio's ``forwardKinematics`` + ``getFrameVelocity`` /
``getFrameAcceleration`` (``LOCAL``) along the joints that support one frame, vectorised over the
samples: a fixed number of array operations per joint instead of a pinocchio call per sample.

Each joint's motion is turned into a rotation about, or a translation along, z: with ``Ra`` a
rotation taking ``e_z`` to the joint's axis ``k``, the joint's motion ``Ra Z(q) Ra^T`` is read in
the body frame ``B = J Ra`` (``J`` pinocchio's joint frame), and the constant ``Ra^T`` is folded
into the next placement. Gravity enters as the root's acceleration ``[-g, 0]`` (as in pinocchio's
RNEA), so the propagated acceleration is the proper acceleration ``a - g``.

Layout: the twists and accelerations of all samples are one (6, 2, N) array, its rows the
components in the order :data:`ROWS` (x and y of each vector first, then z), so that a placement is
one matrix product and a rotation about z scales the first four rows.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np
import pinocchio as pin

REVOLUTE_JOINTS = frozenset(
    {
        "JointModelRX",
        "JointModelRY",
        "JointModelRZ",
        "JointModelRevoluteUnaligned",
        "JointModelRUBX",
        "JointModelRUBY",
        "JointModelRUBZ",
        "JointModelRevoluteUnboundedUnaligned",
    }
)
"""pinocchio joint types handled as a rotation (continuous ones take their angle)."""

PRISMATIC_JOINTS = frozenset(
    {"JointModelPX", "JointModelPY", "JointModelPZ", "JointModelPrismaticUnaligned"}
)
"""pinocchio joint types handled as a translation."""


ROWS = np.array([0, 1, 3, 4, 2, 5])
"""Row order of the state: pinocchio's (``[linear, angular]``) indices of lx, ly, ax, ay, lz, az."""


def act_inv_matrix(placement: pin.SE3) -> np.ndarray:
    """(6, 6) ``X`` with ``X m = placement.actInv(m)`` for motions ``m = [linear, angular]`` (the
    motion seen from ``placement``'s child frame), rows and columns in pinocchio's order."""
    rotation_t = placement.rotation.T
    x = np.zeros((6, 6))
    x[:3, :3] = x[3:, 3:] = rotation_t
    x[:3, 3:] = -rotation_t @ pin.skew(placement.translation)
    return x


def z_to_axis(axis: np.ndarray) -> np.ndarray:
    """(3, 3) rotation taking ``e_z`` to the unit vector ``axis`` (exact for a ±x/y/z axis)."""
    k = np.asarray(axis, dtype=float)
    e = np.zeros(3)
    e[(int(np.argmax(np.abs(k))) + 1) % 3] = 1.0
    u = e - (e @ k) * k
    u /= np.linalg.norm(u)
    return np.column_stack([u, np.cross(k, u), k])


@dataclass(frozen=True)
class ChainJoint:
    """A joint of the chain: the constant placement before it, then its motion along z."""

    transform: np.ndarray
    """``K``: the placement's ``X`` (:func:`act_inv_matrix`) from the previous body frame to this
    one at q = 0, state rows in and out, (6, 6); for a revolute joint (10, 6), ``X`` then its rows
    ``X_xy`` turned by 90° about z, so that with ``P = K m`` the motion in the body frame at
    ``q`` is ``R_z(q)^T X m = [cos(q) P[:4] + sin(q) P[6:], P[4:6]]``."""
    revolute: bool
    """Rotation about z (else translation along z) of the body frame."""
    q_column: int
    """Column of this joint's position (rad or m) in ``Q``."""
    v_column: int
    """Column of its velocity and acceleration in ``DQ`` and ``DDQ``."""

    @classmethod
    def make(cls, placement: pin.SE3, revolute: bool, q_column: int, v_column: int) -> ChainJoint:
        """The joint after ``placement`` (from the previous body frame to its body frame at 0)."""
        x = act_inv_matrix(placement)[np.ix_(ROWS, ROWS)]
        if revolute:  # R_z^T (x, y) = (c x + s y, c y - s x), for the linear and angular rows
            x = np.vstack([x, x[1], -x[0], x[3], -x[2]])
        return cls(x, revolute, q_column, v_column)


def _joint_axis(model: pin.Model, joint_id: int, revolute: bool) -> np.ndarray | None:
    """Axis (3,) in its joint frame of a revolute or prismatic joint of ``model`` (its motion
    subspace), or ``None`` if it is not a unit vector."""
    joint = model.joints[joint_id]
    data = joint.createData()
    joint.calc(data, pin.neutral(model))
    subspace = np.asarray(data.S, dtype=float).reshape(6)
    axis = subspace[3:] if revolute else subspace[:3]
    return axis if abs(np.linalg.norm(axis) - 1.0) < 1e-12 else None


class ChainKinematics:
    """Twist and proper acceleration of one frame of a chain of revolute and prismatic joints.

    Build it with :meth:`from_model` (``None`` when a joint on the chain is of another type).
    """

    def __init__(self, joints: list[ChainJoint], tip: pin.SE3, gravity: np.ndarray) -> None:
        self.joints = tuple(joints)
        """Joints from the root to the frame."""
        self.tip = act_inv_matrix(tip)[:, ROWS].T.copy()
        """(6, 6) ``X^T`` of the frame's placement in the last body frame: ``m @ tip`` is, for a
        motion ``m`` (state rows) of the last body, the frame's (pinocchio order)."""
        self.gravity = np.array(gravity, dtype=float)
        """Gravity acceleration (3,) in the root (world) frame, m/s^2."""
        self._root = np.zeros(6)
        self._root[[0, 1, 4]] = -self.gravity  # the root's acceleration [-g, 0], state rows

    @classmethod
    def from_model(
        cls, model: pin.Model, frame_id: int, q_columns: Mapping[int, int]
    ) -> ChainKinematics | None:
        """The chain of ``model`` from its root to frame ``frame_id``, or ``None`` if a joint on
        it is not a revolute (aligned, unaligned or continuous) or prismatic joint.

        ``q_columns``: joint index -> column of its position in ``Q`` (its velocity's column is
        the joint's ``idx_v``, ``DQ`` being the model's velocity vector)."""
        frame = model.frames[frame_id]
        path = [j for j in model.supports[frame.parentJoint].tolist() if j > 0]
        joints: list[ChainJoint] = []
        previous = pin.SE3.Identity()  # Ra^T of the previous body frame (the root's: identity)
        for j in path:
            kind = model.joints[j].shortname()
            revolute = kind in REVOLUTE_JOINTS
            if (not revolute and kind not in PRISMATIC_JOINTS) or model.joints[j].nv != 1:
                return None
            axis = _joint_axis(model, j, revolute)
            if axis is None:
                return None
            align = pin.SE3(z_to_axis(axis), np.zeros(3))
            placement = previous * model.jointPlacements[j] * align
            joints.append(ChainJoint.make(placement, revolute, q_columns[j], model.joints[j].idx_v))
            previous = align.inverse()
        return cls(joints, previous * frame.placement, model.gravity.linear)

    def compute(
        self, Q: np.ndarray, DQ: np.ndarray, DDQ: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray]:
        """``(V, A_g)`` (N, 6): twist and proper spatial acceleration ``a - g`` of the frame, in
        the frame (``[linear, angular]``; m/s, rad/s; m/s^2, rad/s^2), from positions (rad, m),
        velocities and accelerations ``Q, DQ, DDQ`` (N, n) as floats (not checked)."""
        n = Q.shape[0]
        q = Q.T  # (n_joints, N)
        cos, sin = np.cos(q), np.sin(q)
        rates = np.stack([DQ.T, DDQ.T], axis=1)  # (n_v, 2, N): velocity, acceleration
        state = np.zeros((6, 2, n))  # rows ROWS; twist, acceleration; samples
        state[:, 1] = self._root[:, None]
        for joint in self.joints:
            p = (joint.transform @ state.reshape(6, 2 * n)).reshape(len(joint.transform), 2, n)
            i, rate = joint.q_column, rates[joint.v_column]
            dq = rate[0]
            if joint.revolute:
                # a += [v, w] x [0, dq e_z] = dq [(v_y, -v_x, 0), (w_y, -w_x, 0)] after the
                # rotation, i.e. dq (cos P[6:] - sin P[:4]) of the twist's rows (P[6:] = P[:4]
                # turned by 90°): added to the acceleration's rows before it
                p[:4, 1] += dq * p[6:, 0]
                p[6:, 1] -= dq * p[:4, 0]
                p[:4] *= cos[i]
                p[:4] += sin[i] * p[6:]
                state = p[:6]
                state[5] += rate  # angular z: v += dq, a += ddq
            else:
                state = p
                state[0] += q[i] * state[3]  # linear - (q e_z) x angular
                state[1] -= q[i] * state[2]
                state[4] += rate  # linear z: v += dq, a += ddq
                # a += [v, w] x [dq e_z, 0] = [dq (w_y, -w_x, 0), 0]
                state[0, 1] += dq * state[3, 0]
                state[1, 1] -= dq * state[2, 0]
        out = state.reshape(6, 2 * n).T @ self.tip
        return out[:n], out[n:]
