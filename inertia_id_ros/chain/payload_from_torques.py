"""Payload identification from joint torques, without an F/T sensor ("load identification").

With the chain's links and drives known (``x_links``: the URDF's :attr:`LinkModel.prior` or a
previous :func:`~inertia_id_ros.chain.links.fit_links` ``x``), a rigid payload attached to frame
``F`` changes the joint torques (N, n) by::

    tau_measured - tau_links(x_links) = J_F(q)^T (I_p a_g + v x* (I_p v)) + offset_change
                                      = J_F(q)^T body_regressor(v, a_g) theta_p + offset_change
                                      = Y_p(q, dq, ddq) @ [theta_p, offset_change]

``J_F`` (6, n): the frame Jacobian of ``F`` in ``F`` (pinocchio ``LOCAL``, ``[linear; angular]``);
``v``, ``a_g = a - g``: twist and proper spatial acceleration of ``F`` in ``F``
(:mod:`inertia_id_ros.core.kinematics`); ``I_p a_g + v x* (I_p v)`` the wrench the chain exerts
on the payload (:mod:`inertia_id_ros.core.regressors`), whose joint torques ``J_F^T`` gives;
``theta_p`` (10,) about and in ``F`` (:mod:`inertia_id_ros.core.inertia` order); ``offset_change``
(n,) (N·m, optional): how much each joint's torque offset moved since ``x_links`` was fitted.
``Y_p``'s first 10 columns are the joint torque regressor's column block of a virtual body at
``F``. :func:`fit_payload` solves::

    min (1 / n_rows) ||Y_p x - r||^2 + prior_weight ||x - x_prior||^2   s.t.  J(theta_p) >= 0

over the ``n_rows = N n`` torque samples ``r = tau_measured - tau_links`` (the consistent LMI
with one body; ``prior_weight`` per torque sample as in :mod:`inertia_id_ros.chain.links`).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np
import pinocchio as pin

from inertia_id_ros.chain.links import JointTorqueData, LinkModel, predict_torques
from inertia_id_ros.core.inertia import (
    THETA_NAMES,
    ConsistencyReport,
    check_consistency,
    inertia_from_theta,
)
from inertia_id_ros.core.regressors import body_regressor_batch
from inertia_id_ros.core.robots import frame_id
from inertia_id_ros.solvers import Problem, Solution, solve

_CHUNK = 2000  # samples per block when accumulating the normal equations


class PayloadTorqueModel:
    """Joint torques of a rigid payload at frame ``frame`` of ``links``'s chain (module docstring).

    ``estimate_offsets``: append one torque-offset change per joint to the parameters.
    Parameters ``x = [theta_p (10), offset change of each joint (n)]``
    (:attr:`parameter_names`). Not thread-safe (one pinocchio ``Data``).
    """

    def __init__(self, links: LinkModel, frame: str, estimate_offsets: bool = True) -> None:
        self.links = links
        self.frame = frame
        self._frame_id = frame_id(links.model, frame)
        if links.model.frames[self._frame_id].parentJoint == 0:
            raise ValueError(f"frame {frame!r} is not moved by any joint of the chain "
                             f"{links.joint_names}: a payload there exerts no joint torque")
        self.estimate_offsets = estimate_offsets
        names = [f"payload.{p}" for p in THETA_NAMES]
        if estimate_offsets:
            names += [f"{joint}.offset_change" for joint in links.joint_names]
        self.parameter_names: tuple[str, ...] = tuple(names)
        self.n_parameters = len(names)
        self._data = links.model.createData()
        self._gravity = links.model.gravity.linear.copy()

    def regressor(self, positions: np.ndarray, velocities: np.ndarray,
                  accelerations: np.ndarray) -> np.ndarray:
        """(N, n, n_parameters) ``Y_p`` from (N, n) joint states in the chain's joint order."""
        model, data, fid = self.links.model, self._data, self._frame_id
        q = self.links.configuration(positions)
        dq = np.atleast_2d(np.asarray(velocities, dtype=float))
        ddq = np.atleast_2d(np.asarray(accelerations, dtype=float))
        n_samples, n = dq.shape
        jacobians = np.empty((n_samples, 6, n))
        twists = np.empty((n_samples, 6))
        accelerations_g = np.empty((n_samples, 6))
        local = pin.ReferenceFrame.LOCAL
        for k in range(n_samples):
            pin.computeJointJacobians(model, data, q[k])
            pin.forwardKinematics(model, data, q[k], dq[k], ddq[k])
            rotation = pin.updateFramePlacement(model, data, fid).rotation
            jacobians[k] = pin.getFrameJacobian(model, data, fid, local)
            twists[k] = pin.getFrameVelocity(model, data, fid, local).vector
            accelerations_g[k] = pin.getFrameAcceleration(model, data, fid, local).vector
            accelerations_g[k, :3] -= rotation.T @ self._gravity
        Y = np.zeros((n_samples, n, self.n_parameters))
        Y[:, :, :10] = jacobians.transpose(0, 2, 1) @ body_regressor_batch(twists,
                                                                            accelerations_g)
        if self.estimate_offsets:
            Y[:, :, 10:] = np.eye(n)
        return Y

    def payload_torques(self, links_x: np.ndarray,
                        data: JointTorqueData) -> np.ndarray:
        """(N, n) ``r = tau_measured - tau_links(links_x)``: the torques left for the payload."""
        measured = self.links.measured_torques(self.links.in_joint_order(data).efforts)
        return measured - predict_torques(self.links, links_x, data)

    def problem(self, links_x: np.ndarray, data: JointTorqueData | Iterable[JointTorqueData],
                prior: np.ndarray | None = None, prior_weight: float = 0.0) -> Problem:
        """Solver problem (1 body) of fitting ``Y_p x = r`` over all samples of ``data``.

        ``prior`` (n_parameters,) or a payload ``theta`` (10,) (zero offset changes appended),
        weighted by ``prior_weight`` per torque sample ((N·m)² per SI unit² of x).
        """
        if not prior_weight >= 0.0:
            raise ValueError(f"prior_weight must be >= 0, got {prior_weight!r}")
        p = self.n_parameters
        gram, moment, yty, n_rows = np.zeros((p, p)), np.zeros(p), 0.0, 0
        runs = [data] if isinstance(data, JointTorqueData) else list(data)
        for run in runs:
            for start in range(0, run.n_samples, _CHUNK):
                chunk = self.links.in_joint_order(run.subset(slice(start, start + _CHUNK)))
                Y = self.regressor(chunk.positions, chunk.velocities,
                                   chunk.accelerations).reshape(-1, p)
                r = self.payload_torques(links_x, chunk).reshape(-1)
                gram += Y.T @ Y
                moment += Y.T @ r
                yty += float(r @ r)
                n_rows += r.size
        if n_rows == 0:
            raise ValueError("no torque samples in data")
        if prior is not None:
            prior = np.asarray(prior, dtype=float)
            if prior.shape == (10,):
                prior = np.concatenate([prior, np.zeros(p - 10)])
            if prior.shape != (p,):
                raise ValueError(f"prior must have shape (10,) or ({p},), got {prior.shape}")
        elif prior_weight > 0.0:
            raise ValueError("prior_weight > 0 needs a prior")
        return Problem(gram=gram, moment=moment, yty=yty, n_rows=n_rows, n_bodies=1,
                       prior=prior, prior_weight=prior_weight * n_rows,
                       body_names=("payload",), param_names=self.parameter_names)


@dataclass(frozen=True)
class PayloadTorqueFit:
    """Result of :func:`fit_payload`: ``theta`` (10,) of the payload about and in ``frame``,
    ``offset_changes`` (n,) (N·m; zeros if not estimated), the joints' torque ``residual_rms``
    (N·m) and the solver's :class:`~inertia_id_ros.solvers.Solution`."""

    frame: str
    theta: np.ndarray
    offset_changes: np.ndarray
    residual_rms: float
    consistency: ConsistencyReport
    solution: Solution

    @property
    def mass(self) -> float:
        """Payload mass (kg)."""
        return float(self.theta[0])

    @property
    def com(self) -> np.ndarray:
        """(3,) centre of mass in ``frame`` (m); raises ``ValueError`` if the mass is not
        positive."""
        return inertia_from_theta(self.theta)[1]

    @property
    def inertia_com(self) -> np.ndarray:
        """(3, 3) inertia about the centre of mass, ``frame``'s axes (kg·m²)."""
        return inertia_from_theta(self.theta)[2]


def fit_payload(links: LinkModel, links_x: np.ndarray,
                data: JointTorqueData | Iterable[JointTorqueData], frame: str,
                estimate_offsets: bool = True, method: str = "lmi",
                prior: np.ndarray | None = None, prior_weight: float = 0.0,
                initvals: Solution | np.ndarray | None = None,
                **solver_options: object) -> PayloadTorqueFit:
    """Identify the payload at ``frame`` from the joint torques of ``data`` (one run or several),
    the chain's links and drives known as ``links_x`` (:attr:`LinkModel.parameter_names` order).

    ``method`` of :func:`inertia_id_ros.solvers.solve` (``"lmi"``: ``J(theta_p) >= 0``; ``"ols"``:
    unconstrained); ``prior``/``prior_weight`` see :meth:`PayloadTorqueModel.problem`.
    """
    model = PayloadTorqueModel(links, frame, estimate_offsets)
    links_x = np.asarray(links_x, dtype=float)
    if links_x.shape != (links.n_parameters,):
        raise ValueError(f"links_x must have shape ({links.n_parameters},) "
                         f"(LinkModel.parameter_names), got {links_x.shape}")
    problem = model.problem(links_x, data, prior, prior_weight)
    solution = solve(problem, method=method, initvals=initvals, **solver_options)
    x = np.asarray(solution.x, dtype=float)
    offsets = x[10:] if estimate_offsets else np.zeros(links.n_joints)
    return PayloadTorqueFit(frame, x[:10].copy(), offsets.copy(),
                            problem.residual_rms(x), check_consistency(x[:10]), solution)
