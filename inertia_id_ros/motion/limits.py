"""The limits an exciting motion keeps (:class:`MotionLimits`): the URDF's position limits shrunk
by a margin, its velocity limits, an acceleration limit, and optionally its effort limits (the
URDF links' torques by RNEA, without a payload: :func:`torque_excess`)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pinocchio as pin

from inertia_id_ros.chain.friction import JointDrive
from inertia_id_ros.chain.links import LinkModel
from inertia_id_ros.core.robots import joint_id
from inertia_id_ros.errors import ProblemError
from inertia_id_ros.motion.trajectory import ExcitationTrajectory
from inertia_id_ros.options import DEFAULT_MAX_ACCELERATION

DEFAULT_POSITION_MARGIN = 0.1
"""rad (m): distance kept from the URDF's position limits."""


@dataclass(frozen=True)
class MotionLimits:
    """Per-joint limits (n,) in ``joint_names`` order: positions ``lower``/``upper`` (rad, m; the
    margin already applied), ``velocity`` (rad/s), ``acceleration`` (rad/s²), ``torque`` (N·m,
    the URDF's efforts; ``None``: not enforced)."""

    joint_names: tuple[str, ...]
    lower: np.ndarray
    upper: np.ndarray
    velocity: np.ndarray
    acceleration: np.ndarray
    torque: np.ndarray | None = None
    position_margin: float = DEFAULT_POSITION_MARGIN

    def table(self) -> list[str]:
        """One line per joint, for printing."""
        lines = [
            f"{'joint':<24}{'lower':>9}{'upper':>9}{'vel':>8}{'acc':>7}"
            + (f"{'torque':>8}" if self.torque is not None else "")
        ]
        for k, name in enumerate(self.joint_names):
            line = (
                f"{name:<24}{self.lower[k]:>9.3f}{self.upper[k]:>9.3f}"
                f"{self.velocity[k]:>8.3f}{self.acceleration[k]:>7.2f}"
            )
            if self.torque is not None:
                line += f"{self.torque[k]:>8.1f}"
            lines.append(line)
        return lines

    def violations(self, trajectory: ExcitationTrajectory) -> dict[str, float]:
        """Largest excess over each limit of the trajectory's samples (<= 0: met), in the
        limit's unit; the torque is not checked here (see :func:`torque_excess`)."""
        q, dq, ddq = trajectory.q, trajectory.dq, trajectory.ddq
        return {
            "position": float(max(np.max(q - self.upper), np.max(self.lower - q))),
            "velocity": float(np.max(np.abs(dq) - self.velocity)),
            "acceleration": float(np.max(np.abs(ddq) - self.acceleration)),
        }


def motion_limits(
    model: pin.Model,
    joint_names: Sequence[str],
    *,
    position_margin: float = DEFAULT_POSITION_MARGIN,
    max_acceleration: float = DEFAULT_MAX_ACCELERATION,
    torque_limits: bool = False,
) -> MotionLimits:
    """The limits of ``joint_names`` from ``model`` (URDF): position limits shrunk by
    ``position_margin`` (a continuous joint: ``[-pi, pi]``), velocity limits, ``max_acceleration``
    for every joint, and, if ``torque_limits``, the effort limits. Raises
    :class:`~inertia_id_ros.errors.ProblemError` when a limit is missing or the margin leaves no
    range."""
    if not max_acceleration > 0.0:
        raise ProblemError(f"max_acceleration must be > 0, got {max_acceleration}")
    if not position_margin >= 0.0:
        raise ProblemError(f"position_margin must be >= 0, got {position_margin}")
    lower, upper, velocity, torque = [], [], [], []
    for name in joint_names:
        joint = model.joints[joint_id(model, name)]
        if joint.nv != 1:
            raise ProblemError(
                f"joint {name!r} has {joint.nv} degrees of freedom; only 1-dof "
                "joints can be excited"
            )
        lo, hi = (
            (-np.pi, np.pi)
            if joint.nq == 2
            else (model.lowerPositionLimit[joint.idx_q], model.upperPositionLimit[joint.idx_q])
        )
        lo, hi = lo + position_margin, hi - position_margin
        if not (np.isfinite(lo) and np.isfinite(hi) and hi > lo):
            raise ProblemError(
                f"joint {name!r}: no position range left within its limits less "
                f"the margin {position_margin} (got [{lo:.4g}, {hi:.4g}])"
            )
        v = model.velocityLimit[joint.idx_v]
        if not (np.isfinite(v) and v > 0.0):
            raise ProblemError(f"joint {name!r} has no velocity limit in the URDF")
        lower.append(lo)
        upper.append(hi)
        velocity.append(v)
        torque.append(model.effortLimit[joint.idx_v])
    torques = np.array(torque) if torque_limits else None
    if torques is not None and not np.all(np.isfinite(torques) & (torques > 0.0)):
        raise ProblemError(f"torque limits asked for but the URDF's efforts are {torques}")
    return MotionLimits(
        tuple(joint_names),
        np.array(lower),
        np.array(upper),
        np.array(velocity),
        np.full(len(joint_names), float(max_acceleration)),
        torques,
        position_margin,
    )


def torque_excess(
    model: pin.Model, trajectory: ExcitationTrajectory, limits: MotionLimits
) -> float:
    """Largest ``|tau| / limit`` (1: at the limit) over the trajectory's samples, ``tau`` from
    RNEA of the URDF's links (the other joints at their neutral positions); 0 without torque
    limits."""
    if limits.torque is None:
        return 0.0
    links = LinkModel.from_model(
        model,
        trajectory.joint_names,
        drives=JointDrive(viscous=False, coulomb=False, offset=False, armature=False),
    )
    tau = links.joint_torque_regressor(trajectory.q, trajectory.dq, trajectory.ddq) @ links.prior
    return float(np.max(np.abs(tau) / limits.torque))
