"""Payload identification from joint torques, without an F/T sensor ("load identification").

With the chain's links and drives known (``x_links``: the URDF's :attr:`LinkModel.prior` or a
previous :func:`~inertia_id_ros.chain.link_fit.fit_links` ``x``), a rigid payload attached to frame
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

The fit reports ``theta``'s covariance, robust to the link model's error along the motion (the
scores of :data:`ERROR_BLOCKS` consecutive blocks of each run,
:func:`~inertia_id_ros.core.covariance.parameter_covariance`; not projected onto the consistency
constraints: an estimate the link model's error pushes onto the boundary would look certain
there), and says when the data leave the
payload poorly determined (:func:`determination_warnings`): a mass whose standard error exceeds
:data:`MAX_MASS_RELATIVE_STD` of it, an inertia about the COM whose standard error exceeds
:data:`MAX_INERTIA_RELATIVE_STD` of it, or parameters the motion does not excite at all. A
motion that moves all joints along one path (a chirp, joint positions correlated > 0.99) is such
a case: the link model's error then decides what the torques cannot, with no sign of it in the
residual.

**Differencing** (:func:`difference_runs`): a loaded and an unloaded run of the same motion. At
the same joint states the links' and drives' torques are the same in both, so::

    tau_loaded - tau_unloaded = Y_p(q, dq, ddq) @ [theta_p, offset_change]

whatever the link model: it cancels (``links_x=None``). The price: the torque noise of both runs,
and the two runs must follow the same motion (a robot replaying one trajectory).
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Iterable
from dataclasses import dataclass

import numpy as np
import pinocchio as pin

from inertia_id_ros.chain.links import JointTorqueData, LinkModel, predict_torques
from inertia_id_ros.core.covariance import (
    ChannelNormalEquations,
    block_scores,
    inertia_com_norm_std,
    parameter_covariance,
)
from inertia_id_ros.core.inertia import (
    THETA_NAMES,
    ConsistencyReport,
    check_consistency,
    inertia_from_theta,
)
from inertia_id_ros.core.regressors import body_regressor_batch
from inertia_id_ros.core.robots import frame_id
from inertia_id_ros.core.weighting import (
    check_weighting,
    iterate_channel_weights,
    weighted_normal_equations,
)
from inertia_id_ros.solvers import Problem, Solution, ellipsoids_for, solve

_CHUNK = 2000  # samples per block when accumulating the normal equations

ERROR_BLOCKS = 10
"""A run is split into this many consecutive blocks for the covariance: the link model's error
is correlated along the motion, and the blocks' scores measure its effect
(:func:`~inertia_id_ros.core.covariance.parameter_covariance`, ``scores``)."""

MAX_MASS_RELATIVE_STD = 0.02
"""A payload mass whose standard error exceeds this fraction of it is poorly determined (a mass
from joint torques should be good to 1 %)."""

MAX_INERTIA_RELATIVE_STD = 0.10
"""A payload inertia about the COM whose entries' standard errors (root-sum-square) exceed this
fraction of its Frobenius norm is poorly determined. Those standard errors leave out the
derivative filter's and the link model's bias: on the simulated Panda (30 s, 125 Hz to 1 kHz,
both routes) the errors ran 0.7 to 4 times them, and every fit with the error above 15 % but one
had them above 10 %."""


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
            raise ValueError(
                f"frame {frame!r} is not moved by any joint of the chain "
                f"{links.joint_names}: a payload there exerts no joint torque"
            )
        self.estimate_offsets = estimate_offsets
        names = [f"payload.{p}" for p in THETA_NAMES]
        if estimate_offsets:
            names += [f"{joint}.offset_change" for joint in links.joint_names]
        self.parameter_names: tuple[str, ...] = tuple(names)
        self.n_parameters = len(names)
        self._data = links.model.createData()
        self._gravity = links.model.gravity.linear.copy()

    def regressor(
        self, positions: np.ndarray, velocities: np.ndarray, accelerations: np.ndarray
    ) -> np.ndarray:
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
        Y[:, :, :10] = jacobians.transpose(0, 2, 1) @ body_regressor_batch(twists, accelerations_g)
        if self.estimate_offsets:
            Y[:, :, 10:] = np.eye(n)
        return Y

    def payload_torques(self, links_x: np.ndarray | None, data: JointTorqueData) -> np.ndarray:
        """(N, n) ``r = tau_measured - tau_links(links_x)``: the torques left for the payload;
        ``links_x=None``: ``data``'s efforts are already those (a loaded minus an unloaded run,
        :func:`difference_runs`)."""
        measured = self.links.measured_torques(self.links.in_joint_order(data).efforts)
        if links_x is None:
            return measured
        return measured - predict_torques(self.links, links_x, data)

    def channels(
        self,
        links_x: np.ndarray | None,
        data: JointTorqueData | Iterable[JointTorqueData],
        n_blocks: int = 1,
    ) -> list[ChannelNormalEquations]:
        """Normal equations of ``Y_p x = r`` per joint (a channel each), for each of
        ``n_blocks`` consecutive blocks of samples of every run of ``data`` (accumulated in
        chunks of samples); :meth:`ChannelNormalEquations.summed` gives all samples'."""
        runs = [data] if isinstance(data, JointTorqueData) else list(data)
        blocks = []
        for run in runs:
            for indices in np.array_split(np.arange(run.n_samples), n_blocks):
                parts = []
                for start in range(0, indices.size, _CHUNK):
                    chunk = self.links.in_joint_order(run.subset(indices[start : start + _CHUNK]))
                    parts.append(
                        ChannelNormalEquations.from_samples(
                            self.regressor(chunk.positions, chunk.velocities, chunk.accelerations),
                            self.payload_torques(links_x, chunk),
                        )
                    )
                if parts:
                    blocks.append(ChannelNormalEquations.summed(parts))
        if not blocks:
            raise ValueError("no torque samples in data")
        return blocks

    def problem(
        self,
        links_x: np.ndarray | None,
        data: JointTorqueData | Iterable[JointTorqueData] | ChannelNormalEquations,
        prior: np.ndarray | None = None,
        prior_weight: float = 0.0,
        weights: np.ndarray | None = None,
        bounding_ellipsoid: np.ndarray | None = None,
    ) -> Problem:
        """Solver problem (1 body) of fitting ``Y_p x = r`` over all samples of ``data`` (or
        their :meth:`channels` summed; ``links_x`` see :meth:`payload_torques`), joint ``j``'s
        rows weighted by ``weights[j]`` when given (:mod:`inertia_id_ros.core.weighting`).

        ``prior`` (n_parameters,) or a payload ``theta`` (10,) (zero offset changes appended),
        weighted by ``prior_weight`` per torque sample ((N·m)² per SI unit² of x).
        ``bounding_ellipsoid``: ``Q`` (4, 4) of an ellipsoid in the frame holding the payload
        (Wensing et al. 2017), or ``None``.
        """
        if not prior_weight >= 0.0:
            raise ValueError(f"prior_weight must be >= 0, got {prior_weight!r}")
        p = self.n_parameters
        channels = (
            data
            if isinstance(data, ChannelNormalEquations)
            else ChannelNormalEquations.summed(self.channels(links_x, data))
        )
        gram, moment, yty, n_rows = weighted_normal_equations(channels, weights)
        if prior is not None:
            prior = np.asarray(prior, dtype=float)
            if prior.shape == (10,):
                prior = np.concatenate([prior, np.zeros(p - 10)])
            if prior.shape != (p,):
                raise ValueError(f"prior must have shape (10,) or ({p},), got {prior.shape}")
        elif prior_weight > 0.0:
            raise ValueError("prior_weight > 0 needs a prior")
        return Problem(
            gram=gram,
            moment=moment,
            yty=yty,
            n_rows=n_rows,
            n_bodies=1,
            prior=prior,
            prior_weight=prior_weight * n_rows,
            bounding_ellipsoids=(
                None
                if bounding_ellipsoid is None
                else [np.asarray(bounding_ellipsoid, dtype=float)]
            ),
            body_names=("payload",),
            param_names=self.parameter_names,
        )


def determination_warnings(
    theta: np.ndarray,
    covariance: np.ndarray,
    rank: int,
    n_parameters: int,
    max_mass_relative_std: float = MAX_MASS_RELATIVE_STD,
    max_inertia_relative_std: float = MAX_INERTIA_RELATIVE_STD,
) -> list[str]:
    """Plain warnings when the data leave the payload ``theta`` (10,) poorly determined:
    ``covariance`` (10, 10) its covariance, ``rank`` the dimension of the identifiable subspace
    of the ``n_parameters`` fitted (:class:`~inertia_id_ros.core.covariance.ParameterCovariance`).
    Empty when every parameter is excited, the mass's standard error is within
    ``max_mass_relative_std`` of it and the standard errors of the inertia about the COM
    (root-sum-square of its entries') within ``max_inertia_relative_std`` of its Frobenius norm
    (:func:`~inertia_id_ros.core.covariance.inertia_com_norm_std`). About the COM, not the frame's
    origin: there the mass and COM's well-known share (``m |c|^2``) hides an unknown rotational
    inertia."""
    std = np.sqrt(np.clip(np.diag(covariance), 0.0, None))
    mass = float(theta[0])
    out = []
    if rank < n_parameters:
        out.append(
            f"the motion excites only {rank} of the {n_parameters} parameters (payload and "
            "torque offsets): the unexcited ones are not identified; move every joint, "
            "independently, through a wide range"
        )
    if not std[0] <= max_mass_relative_std * abs(mass):
        relative = std[0] / abs(mass) if mass else float("inf")
        out.append(
            f"the payload mass is poorly determined: {mass:.4f} ± {std[0]:.4f} kg "
            f"(standard error {100 * relative:.0f} % of it, above "
            f"{100 * max_mass_relative_std:.0f} %); the joints' motion does not separate "
            "the payload's weight from the torque offsets and the link model's error "
            "(e.g. all joints along one path): move the joints independently, with "
            "large changes of the flange's orientation, or difference a loaded and an "
            "unloaded run of the same motion"
        )
    if not mass > 0:
        out.append(
            f"the payload's mass is not positive ({mass:.4f} kg): it has no COM, and no "
            "inertia about one; the data do not determine it (use the consistent "
            "method, lmi, or a motion that moves every joint)"
        )
        return out
    norm, inertia_std = inertia_com_norm_std(theta, covariance)
    if not inertia_std <= max_inertia_relative_std * norm:
        relative = inertia_std / norm if norm > 0 else float("inf")
        share = f"{100 * relative:.0f} % of it" if relative < 10 else "over ten times it"
        out.append(
            f"the payload's inertia is poorly determined: about its COM ({1e3 * norm:.3g} ± "
            f"{1e3 * inertia_std:.2g})e-3 kg m² (Frobenius norm ± the root-sum-square of its "
            f"entries' standard errors, {share}, above "
            f"{100 * max_inertia_relative_std:.0f} %; the derivative filter's and the link "
            "model's bias come on top): rotate the frame faster about each of its axes, "
            "record longer, or record the joint states at a higher sample rate (the "
            "accelerations are differentiated joint states)"
        )
    return out


@dataclass(frozen=True)
class PayloadTorqueFit:
    """Result of :func:`fit_payload`: ``theta`` (10,) of the payload about and in ``frame``,
    ``offset_changes`` (n,) (N·m; zeros if not estimated), the joints' torque ``residual_rms``
    (N·m), the solver's :class:`~inertia_id_ros.solvers.Solution`, ``covariance`` (10, 10) of
    ``theta`` (offset changes marginalised; from the blocks' scores, module docstring),
    ``rank`` of the identifiable subspace of the ``n_parameters`` fitted, and ``warnings``:
    :func:`determination_warnings`."""

    frame: str
    theta: np.ndarray
    offset_changes: np.ndarray
    residual_rms: float
    consistency: ConsistencyReport
    solution: Solution
    covariance: np.ndarray
    rank: int
    n_parameters: int
    warnings: tuple[str, ...] = ()

    @property
    def theta_std(self) -> np.ndarray:
        """(10,) standard errors of ``theta`` (SI units)."""
        return np.sqrt(np.clip(np.diag(self.covariance), 0.0, None))

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


def fit_payload(
    links: LinkModel,
    links_x: np.ndarray | None,
    data: JointTorqueData | Iterable[JointTorqueData],
    frame: str,
    estimate_offsets: bool = True,
    method: str = "lmi",
    prior: np.ndarray | None = None,
    prior_weight: float = 0.0,
    initvals: Solution | np.ndarray | None = None,
    weighting: str = "none",
    bounding_ellipsoid: np.ndarray | None = None,
    **solver_options: object,
) -> PayloadTorqueFit:
    """Identify the payload at ``frame`` from the joint torques of ``data`` (one run or several),
    the chain's links and drives known as ``links_x`` (:attr:`LinkModel.parameter_names` order;
    ``None``: ``data`` is a loaded minus an unloaded run, :func:`difference_runs`).

    ``method`` of :func:`inertia_id_ros.solvers.solve` (``"lmi"``: ``J(theta_p) >= 0``; ``"ols"``:
    unconstrained); ``prior``/``prior_weight`` see :meth:`PayloadTorqueModel.problem`.
    ``weighting="channel"``: each joint's rows weighted by its inverse residual variance,
    iterated (:func:`~inertia_id_ros.core.weighting.iterate_channel_weights`; the wrist's
    quieter torques then carry the payload's inertia); ``"none"``: unweighted.
    ``bounding_ellipsoid``: ``Q`` (4, 4) of an ellipsoid in ``frame`` that holds the payload
    (Wensing et al. 2017; not with ``"ols"``), or ``None``. Issues a ``RuntimeWarning`` for each
    of the fit's ``warnings`` (a poorly determined payload).
    """
    check_weighting(weighting)
    model = PayloadTorqueModel(links, frame, estimate_offsets)
    if links_x is not None:
        links_x = np.asarray(links_x, dtype=float)
        if links_x.shape != (links.n_parameters,):
            raise ValueError(
                f"links_x must have shape ({links.n_parameters},) "
                f"(LinkModel.parameter_names), got {links_x.shape}"
            )
    blocks = model.channels(links_x, data, ERROR_BLOCKS)
    channels = ChannelNormalEquations.summed(blocks)
    solutions: list[Solution] = []

    def fit(weights: np.ndarray | None) -> np.ndarray:
        problem = model.problem(
            links_x,
            channels,
            prior,
            prior_weight,
            weights,
            ellipsoids_for(method, bounding_ellipsoid),
        )
        solutions.append(
            solve(
                problem,
                method=method,
                initvals=solutions[-1] if solutions else initvals,
                **solver_options,
            )
        )
        return solutions[-1].x

    weights = None
    if weighting == "channel":
        _, channel_weights = iterate_channel_weights(channels, fit)
        weights = channel_weights.weights
    else:
        fit(None)
    return _payload_fit(model, blocks, channels, solutions[-1], weights)


def _payload_fit(
    model: PayloadTorqueModel,
    blocks: list[ChannelNormalEquations],
    channels: ChannelNormalEquations,
    solution: Solution,
    weights: np.ndarray | None,
) -> PayloadTorqueFit:
    """:func:`fit_payload`'s result from its ``solution`` on the normal equations ``channels``
    (the sum of ``blocks``, weighted by ``weights``): standard errors, warnings (issued),
    residual."""
    x = np.asarray(solution.x, dtype=float)
    offsets = x[10:] if model.estimate_offsets else np.zeros(model.links.n_joints)
    covariance = parameter_covariance(  # not projected: see the module docstring
        channels,
        x,
        constrained=False,
        weights=weights,
        scores=block_scores(blocks, x, weights) if len(blocks) > 1 else None,
    )
    theta = x[:10].copy()
    messages = determination_warnings(
        theta, covariance.theta(), covariance.rank, model.n_parameters
    )
    for message in messages:
        warnings.warn(message, RuntimeWarning, stacklevel=3)
    residual_rms = float(
        np.sqrt(channels.squared_residuals(x).sum() / (channels.n_samples * channels.n_channels))
    )
    return PayloadTorqueFit(
        model.frame,
        theta,
        offsets.copy(),
        residual_rms,
        check_consistency(theta),
        solution,
        covariance.theta(),
        covariance.rank,
        model.n_parameters,
        tuple(messages),
    )


def sign_flip_residuals(channels: ChannelNormalEquations) -> tuple[float, np.ndarray]:
    """``(rms, flipped (n,))``: the unconstrained (least-squares) fit's torque residual RMS (N·m)
    on the normal equations ``channels`` (one channel per joint, :meth:`PayloadTorqueModel.
    channels`) as recorded, and with each joint's torques of the other sign in turn: a joint
    whose torque sign is flipped in the data leaves far less with it flipped back."""
    gram, moment, yty, rows = channels.total()
    inverse = np.linalg.pinv(gram, rcond=1e-12, hermitian=True)

    def rms(b: np.ndarray) -> float:
        return float(np.sqrt(max(yty - b @ inverse @ b, 0.0) / rows))

    flipped = np.array([rms(moment - 2.0 * channels.moment[j]) for j in range(channels.n_channels)])
    return rms(moment), flipped


@dataclass(frozen=True)
class RunAlignment:
    """How an unloaded run was matched to a loaded one (:func:`difference_runs`): ``shift`` (s)
    added to the loaded run's times from its start to find the same motion in the unloaded run,
    ``position_rms`` (rad, m) of the joint positions' differences at matched samples, ``kept``
    (N,) the loaded samples the unloaded run covers."""

    shift: float
    position_rms: float
    kept: np.ndarray


MAX_POSITION_RMS = 0.01
"""rad: joint positions of two runs further apart than this (rms, after alignment) are not the
same motion, and :func:`difference_runs` refuses them."""

MIN_OVERLAP = 0.5
"""Share of the shorter run two runs must overlap at a time shift :func:`difference_runs`
tries (a shorter overlap matches too little of the motion to tell)."""

COARSE_SHIFT_STEP = 0.02
"""s between the time shifts :func:`difference_runs` tries first; it then searches sample by
sample within one such step of the best."""


def difference_runs(
    t_loaded: np.ndarray,
    loaded: JointTorqueData,
    t_unloaded: np.ndarray,
    unloaded: JointTorqueData,
    max_shift: float | None = None,
    max_position_rms: float = MAX_POSITION_RMS,
) -> tuple[JointTorqueData, RunAlignment]:
    """The loaded run's samples with efforts ``effort_loaded - effort_unloaded`` at the same
    point of the motion, for :func:`fit_payload` with ``links_x=None`` (module docstring).

    ``t_*`` (N,) stamps (s) of each run; both runs in the same joint order. The unloaded run is
    matched by the time shift (on its sample grid, from each run's start) that brings the joint
    positions closest: searched as wide as the runs overlap by :data:`MIN_OVERLAP` of the
    shorter (within ``±max_shift`` s when given), every :data:`COARSE_SHIFT_STEP` s and then
    sample by sample; of shifts as good (a repeated motion), the smallest. Its efforts are
    interpolated linearly; loaded samples outside the unloaded run are dropped. Raises
    ``ValueError`` when the runs' joints differ or the positions stay more than
    ``max_position_rms`` (rms) apart: not the same motion.
    """
    if loaded.joint_names != unloaded.joint_names:
        raise ValueError(
            f"the runs list different joints: {loaded.joint_names} and {unloaded.joint_names}"
        )
    t_l = np.asarray(t_loaded, dtype=float) - float(t_loaded[0])
    t_u = np.asarray(t_unloaded, dtype=float) - float(t_unloaded[0])
    step = float(np.median(np.diff(t_u)))
    stride = max(1, t_l.size // 2000)  # the shift needs no more samples

    def mismatch(shift: float, rows: np.ndarray) -> np.ndarray:
        at = t_l[rows] + shift
        return (
            np.stack(
                [
                    np.interp(at, t_u, unloaded.positions[:, j])
                    for j in range(unloaded.positions.shape[1])
                ],
                axis=1,
            )
            - loaded.positions[rows]
        )

    def covered(shift: float) -> np.ndarray:  # within round-off of the unloaded run's span
        slack = 1e-6 * step
        return (t_l + shift >= t_u[0] - slack) & (t_l + shift <= t_u[-1] + slack)

    def score(k: int) -> float:
        rows = np.flatnonzero(covered(k * step))[::stride]
        return float(np.sqrt(np.mean(mismatch(k * step, rows) ** 2))) if rows.size > 10 else np.inf

    low, high = _shift_range(t_l[-1], t_u[-1], step, max_shift)
    shift = step * _best_shift(score, low, high, max(1, int(round(COARSE_SHIFT_STEP / step))))
    kept = covered(shift)
    rows = np.flatnonzero(kept)
    position_rms = float(np.sqrt(np.mean(mismatch(shift, rows) ** 2))) if rows.size else np.inf
    if not position_rms <= max_position_rms:
        raise ValueError(
            f"the unloaded run does not follow the loaded run's motion: joint "
            f"positions {position_rms:.3g} rad rms apart at the best time shift "
            f"({shift:+.3f} s, searched from {low * step:+.3f} to {high * step:+.3f} s), more "
            f"than {max_position_rms:g}; record both runs with the same trajectory"
        )
    at = t_l[rows] + shift
    efforts = np.stack(
        [np.interp(at, t_u, unloaded.efforts[:, j]) for j in range(unloaded.efforts.shape[1])],
        axis=1,
    )
    difference = JointTorqueData(
        loaded.positions[rows],
        loaded.velocities[rows],
        loaded.accelerations[rows],
        loaded.efforts[rows] - efforts,
        loaded.joint_names,
    )
    return difference, RunAlignment(shift, position_rms, kept)


def _shift_range(
    loaded_span: float, unloaded_span: float, step: float, max_shift: float | None
) -> tuple[int, int]:
    """``(low, high)``: the time shifts (in samples of ``step`` s) at which runs spanning
    ``loaded_span`` and ``unloaded_span`` s overlap by :data:`MIN_OVERLAP` of the shorter,
    within ``±max_shift`` s when given."""
    overlap = MIN_OVERLAP * min(loaded_span, unloaded_span)
    low, high = -(loaded_span - overlap), unloaded_span - overlap
    if max_shift is not None:
        low, high = max(low, -max_shift), min(high, max_shift)
    return int(np.ceil(low / step - 1e-9)), int(np.floor(high / step + 1e-9))


def _best_shift(score: Callable[[int], float], low: int, high: int, coarse: int) -> int:
    """The shift (in samples, from ``low`` to ``high``) of the least ``score``: every
    ``coarse``-th shift (multiples of it, 0 among them) first; of the local minima within twice
    the least (the motion repeated), the one nearest 0; then sample by sample within ``coarse``
    of it."""
    grid = np.arange(int(np.ceil(low / coarse)), int(np.floor(high / coarse)) + 1) * coarse
    if grid.size == 0:
        grid = np.array([min(max(0, low), high)])
    scores = np.array([score(int(k)) for k in grid])
    padded = np.concatenate([[np.inf], scores, [np.inf]])
    minima = np.flatnonzero((scores <= padded[:-2]) & (scores <= padded[2:]))
    good = minima[scores[minima] <= 2.0 * scores.min()] if np.isfinite(scores.min()) else minima
    best = int(grid[good[np.argmin(np.abs(grid[good]))]]) if good.size else int(grid[0])
    fine = range(max(low, best - coarse), min(high, best + coarse) + 1)
    return min(fine, key=lambda k: (score(k), abs(k)))
