"""Online link identification: joint states with efforts in, physically consistent links out.

The counterpart of :mod:`inertia_id_ros.online.payload_estimator` (a payload from an F/T sensor)
for a chain's links and joint drives from its joint torques (:mod:`inertia_id_ros.chain.links`).
Data flow:
:meth:`LinkEstimator.add_joint_state` validates and buffers joint states (positions, optional
velocities, efforts; ROS callbacks, any thread). :meth:`~LinkEstimator.process` turns every
buffered joint state with joint states within ``filter_half_width`` on both sides (the
processing lag) into the regressor rows of its joints: positions, velocities and accelerations at
the joint state's stamp from the local polynomial fit of :mod:`inertia_id_ros.core.filtering`
(accelerations are always the fit's derivative), ``Y = LinkModel.joint_torque_regressor`` (n, p) and
the torques ``y = effort * effort_scale - known torques`` (n,); rows go to a
:class:`~inertia_id_ros.online.window.SlidingWindow` (n rows per sample).
:meth:`~LinkEstimator.solve` solves the window's
:func:`~inertia_id_ros.chain.link_fit.build_link_problem`::

    min (1 / n_rows) ||Y x - y||² + prior_weight ||x - x_prior||²
    s.t. J(theta_k) >= 0 for every link k, viscous, Coulomb, armature >= 0

(``x_prior``: the URDF's links, zero friction and offset, the reflected rotor inertias), warm
started from the previous solution, and returns a :class:`LinkEstimate` only if every link is fully
physically consistent, with the base parameters of the window's regressor
(:func:`~inertia_id_ros.chain.base_parameters.base_parameters_from_gram`): what the data so far
cannot identify.

Given the chain's actuators (``LinkEstimator(..., actuators=chain.actuators)``), every solve also
resolves the armatures the window cannot identify, as
:func:`inertia_id_ros.chain.armatures.fit_chain` does offline (a fixed-base leg's torques separate
only the knee's armature from the link inertias; see :mod:`inertia_id_ros.chain.actuators`): from
the first solution and the window's base parameters,
:func:`~inertia_id_ros.chain.armatures.resolve_armatures` estimates each motor type's rotor inertia
from its joints' identifiable armatures, and the problem is solved again (warm started from the
previous such solve) with the unidentifiable armatures known, ``N**2 * I_rotor``: the window's
normal equations with those columns moved to the right-hand side, so the links' inertias about those
axes exclude the rotors. :attr:`LinkEstimate.armature_sources` says which armature is which. Without
actuators (or when every armature is identifiable) a solve is the single one above.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from inertia_id_ros.chain.actuators import ActuatorConfig
from inertia_id_ros.chain.armatures import ArmatureResolution, RotorInertia, resolve_armatures
from inertia_id_ros.chain.base_parameters import (
    DEFAULT_GRAM_RANK_TOLERANCE,
    BaseParameters,
    base_parameters_from_gram,
)
from inertia_id_ros.chain.friction import DriveParameters
from inertia_id_ros.chain.link_fit import build_link_problem
from inertia_id_ros.chain.links import LinkModel
from inertia_id_ros.core.covariance import ChannelNormalEquations, parameter_covariance
from inertia_id_ros.core.significance import Determination, determination
from inertia_id_ros.core.weighting import weighted_normal_equations
from inertia_id_ros.online.estimator import OnlineEstimatorConfig, SampleBatch
from inertia_id_ros.online.inputs import JointStateValidator
from inertia_id_ros.online.joint_state_estimator import JointStateEstimator
from inertia_id_ros.online.solving import (
    check_bodies,
    ellipsoid_matrices,
    ellipsoid_values,
    residual_rms,
    solve_or_fail,
    solve_weighted,
)
from inertia_id_ros.options import DEFAULT_PRIOR_WEIGHT
from inertia_id_ros.solvers import Solution

NormalEquations = tuple[np.ndarray, np.ndarray, float, int]
"""``(Y^T Y (p, p), Y^T y (p,), y^T y, rows)`` of the window's torque rows."""

ARMATURE_SOURCES = ("estimated", "rotor", "configured")
"""Where a joint's armature comes from (:attr:`LinkEstimate.armature_sources`): ``estimated``
from the joint torques (when the data cannot identify it, with the prior's help: see
:attr:`LinkEstimate.unidentifiable`); ``rotor``: ``N**2`` x the rotor inertia of the joint's motor
type, estimated from the identifiable armatures of the other joints with that motor type (the
torques do not separate this joint's armature from its link's inertia about the axis);
``configured``: ``N**2`` x the configured rotor inertia (not an estimated drive term, or
unidentifiable with no identifiable armature of its motor type)."""


@dataclass
class LinkEstimatorConfig(OnlineEstimatorConfig):
    """Settings of :class:`LinkEstimator`.

    The shared ones of :class:`~inertia_id_ros.online.payload_estimator.OnlineEstimatorConfig`
    (samples are joint states) and the prior and rank tolerance of the link fit.
    """

    prior_weight: float = DEFAULT_PRIOR_WEIGHT
    """Weight of the prior toward the URDF, per torque sample ((N·m)² per SI unit² of x; see
    :mod:`inertia_id_ros.chain.links`). The default is the KUKA LWR4+ cross-validation optimum;
    choose it for your robot with :func:`~inertia_id_ros.chain.link_fit.select_prior_weight` on a
    recording. Small (1e-6) when the joint torques are clean and the motion exciting: the prior then
    only settles what the data cannot identify."""
    rank_tolerance: float = DEFAULT_GRAM_RANK_TOLERANCE
    """Relative tolerance of the base-parameter rank
    (:func:`~inertia_id_ros.chain.base_parameters.base_parameters_from_gram`)."""

    bounding_ellipsoids: tuple[tuple[float, ...] | None, ...] | None = None
    """Per link of the chain (:attr:`LinkModel.link_names` order) ``None`` or the ``Q`` (4x4, row
    by row: 16 values, link frame) of an ellipsoid holding it
    (:func:`~inertia_id_ros.solvers.ellipsoid_matrix`): every consistent solve keeps
    ``tr(J(theta_k) Q_k) >= 0`` (Wensing et al. 2017). ``None``: no such constraint."""

    def __post_init__(self) -> None:
        super().__post_init__()
        if not self.prior_weight >= 0.0:
            raise self._invalid("prior_weight", "must be >= 0")
        self._check_positive("rank_tolerance")
        self.bounding_ellipsoids = ellipsoid_values(self.bounding_ellipsoids)


@dataclass(frozen=True)
class LinkEstimate:
    """A fully physically consistent estimate of a chain's links and joint drives.

    ``x`` (p,) all parameters in :attr:`LinkModel.parameter_names` order (an armature fixed by
    a rotor inertia holds its ``N**2 * I_rotor``); ``link_names`` (n,) and ``thetas`` (n, 10):
    each link's ``theta`` about and in its link frame (the frame of the joint moving it);
    ``drives``: ``{joint: DriveParameters}`` (a term not estimated is zero, a known armature the
    reflected rotor inertia); ``min_pseudo_inertia_eigs`` (n,) (kg m²); ``residual_rms`` (N·m)
    over the torque samples; ``base``: the base parameters of the problem solved (the window's
    regressor, without the armatures ``rotor_inertias`` fixed: rank, what the data leave to the
    prior); ``n_samples`` joint states used, stamped ``t_first`` to ``t_last`` (s); ``method``;
    ``prior_weight``; ``solve_time`` (s, all solves); ``message``: non-empty if the solver
    stopped early; ``rotor_inertias``: how the armatures the window cannot identify were fixed
    (only with the chain's actuators, see :class:`LinkEstimator`); ``armature_sources``:
    ``{joint: source}`` of each joint's armature, one of :data:`ARMATURE_SOURCES`.
    """

    x: np.ndarray
    link_names: tuple[str, ...]
    thetas: np.ndarray
    drives: dict[str, DriveParameters]
    min_pseudo_inertia_eigs: np.ndarray
    residual_rms: float
    base: BaseParameters
    n_samples: int
    t_first: float
    t_last: float
    method: str
    prior_weight: float
    solve_time: float
    message: str = ""
    rotor_inertias: tuple[RotorInertia, ...] = ()
    armature_sources: dict[str, str] = field(default_factory=dict)
    determination: Determination | None = None
    """Each parameter labelled by its standard error on the window (identified at ``|t| >= 3``,
    :mod:`~inertia_id_ros.core.significance`; ``None``: not judged)."""
    motors: dict[str, DriveParameters] = field(default_factory=dict)
    """Each motor coupled to several joints (:mod:`~inertia_id_ros.chain.motors`), by its name
    (``<joint>_motor``): its terms seen at its own joint (armature, viscous, Coulomb and their
    sign's width in joint units); empty without a coupling."""

    @property
    def joint_names(self) -> tuple[str, ...]:
        """The chain's joints, in order (joint ``k`` moves link ``k``)."""
        return tuple(self.drives)

    @property
    def rank(self) -> int:
        """Number of base parameters the window's data identify."""
        return self.base.rank

    @property
    def unidentifiable(self) -> tuple[str, ...]:
        """Parameters the window's data cannot fix individually (their values lean on the
        prior), e.g. ``'FL_hip_joint.armature'`` (unless a rotor inertia fixed it)."""
        return self.base.unidentifiable

    def null_directions(self, digits: int = 4) -> list[str]:
        """Combinations of parameters that change no torque of the window's data, as text."""
        return self.base.null_directions(digits)


class LinkEstimator(JointStateEstimator[LinkEstimatorConfig]):
    """Identify a chain's links and joint drives online from joint states with efforts (the
    window's samples are the joint states, ``n`` torque rows each). Thread-safe under the
    locking rule of :mod:`inertia_id_ros.online.estimator`.

    ``actuators``: the chain's actuators by joint (``ChainConfig.actuators``; the model's drives
    must have their gear ratios and rotor inertias, as ``ChainConfig.link_model()`` gives):
    armatures the window cannot identify are then fixed by their motor type's rotor inertia (see
    the module docstring). ``None``: every armature is estimated (the prior settles the
    unidentifiable ones). Raises ValueError for actuators of joints not in the chain or that
    disagree with the model's drives.
    """

    def __init__(
        self,
        link_model: LinkModel,
        config: LinkEstimatorConfig | None = None,
        actuators: Mapping[str, ActuatorConfig] | None = None,
    ) -> None:
        config = config or LinkEstimatorConfig()
        super().__init__(
            config,
            JointStateValidator(
                link_model.joint_names,
                link_model.robot_joint_names,
                config.ignore_unknown_joints,
                config.use_measured_velocity,
                need_effort=True,
            ),
            link_model.n_parameters,
            rows_per_sample=link_model.n_joints,
        )
        self.link_model = link_model
        self.actuators = None if actuators is None else _checked_actuators(link_model, actuators)
        self._last_known_armature_solution: tuple[tuple[str, ...], Solution] | None = None
        """The previous solve's second solution (armatures known), to warm-start the next."""

    # ---- processing (the hook of JointStateEstimator) ---------------------------------------

    def _rows(self, batch: SampleBatch) -> tuple[np.ndarray, np.ndarray]:
        model = self.link_model
        Y = model.joint_torque_regressor(batch.q, batch.dq, batch.ddq)
        y = model.measured_torques(batch.measured) - model.known_torques(batch.ddq)
        return Y, y

    # ---- solving ---------------------------------------------------------------------------

    def solve(
        self,
        method: str | None = None,
        duration: float = 0.0,
        initvals: Solution | np.ndarray | None = None,
        until: float | None = None,
    ) -> LinkEstimate:
        """Estimate from the newest ``duration`` s of the window (0: all; with ``until``, the
        ``duration`` s up to that stamp, s: an interval of the past) with ``method`` (default
        ``config.method``), warm-started from ``initvals`` (default: the previous solution if
        ``config.warm_start``). With the chain's actuators, armatures the window cannot identify
        are fixed by their motor type's rotor inertia and the problem solved again (see the
        module docstring; that second solve is warm-started from the previous one's when
        ``initvals`` is the default, else from the first). Raises
        :class:`~inertia_id_ros.errors.EstimateUnavailable` with reason ``too_few_samples``,
        ``solver_failed`` or ``inconsistent`` (some link not fully physically consistent, e.g.
        with ``ols``): never returns an inconsistent link."""
        config = self.config
        with self._lock:
            method, options = self._solver_settings(method or None)
            n_samples, t_first, t_last = self._samples_to_solve(duration, until)
            equations = (
                self.window.normal_equations(duration, until)
                if config.weighting == "none"
                else self.window.channel_normal_equations(duration, until)
            )
            warm = initvals is None and config.warm_start
            initvals = self._warm_start(initvals)
            start = (initvals, self._warm_weights(initvals))
            previous_known = self._last_known_armature_solution if warm else None
            generation = self._generation
        ellipsoids = ellipsoid_matrices(config.bounding_ellipsoids, method)
        solution, normal, weights = self._first_solve(method, options, start, ellipsoids, equations)
        x = np.array(solution.x)
        base = base_parameters_from_gram(
            self.link_model.parameter_names, normal[0], config.rank_tolerance
        )
        resolution = (
            None
            if self.actuators is None
            else resolve_armatures(self.link_model, self.actuators, x, base.unidentifiable)
        )
        final, solve_time = solution, float(solution.solve_time)
        if resolution is not None:  # the unidentifiable armatures known: N² I_rotor, solve again
            final, base = self._known_armature_solve(
                resolution, normal, x, previous_known, method, options, ellipsoids
            )
            solve_time += float(final.solve_time)
            x = resolution.expand(final.x)
        thetas = self.link_model.link_parameters(x).copy()
        reports = check_bodies(dict(zip(self.link_model.link_names, thetas)), method)
        if self._keep_solution(solution, generation, weights) and resolution is not None:
            with self._lock:
                self._last_known_armature_solution = (resolution.model.parameter_names, final)
        stopped = [s.status for s in (solution, final) if not s.found]
        return LinkEstimate(
            x=x,
            link_names=self.link_model.link_names,
            thetas=thetas,
            drives=self._drives(x),
            motors=self._motors(x),
            min_pseudo_inertia_eigs=np.array([r.min_pseudo_inertia_eig for r in reports]),
            residual_rms=(
                residual_rms(equations, x)
                if isinstance(equations, ChannelNormalEquations)
                else float(final.residual_rms)  # N m, unweighted
            ),
            base=base,
            n_samples=n_samples,
            t_first=t_first,
            t_last=t_last,
            method=method,
            prior_weight=config.prior_weight,
            solve_time=solve_time,
            message=f"solver stopped early ({stopped[0]})" if stopped else "",
            rotor_inertias=() if resolution is None else resolution.rotors,
            armature_sources=self._armature_sources(resolution),
            determination=_determination(self.link_model.parameter_names, x, equations, base),
        )

    def _first_solve(
        self,
        method: str,
        options: dict[str, Any],
        start: tuple[Any, np.ndarray | None],
        ellipsoids: list[np.ndarray | None] | None,
        equations: NormalEquations | ChannelNormalEquations,
    ) -> tuple[Solution, NormalEquations, np.ndarray | None]:
        """The solve of every parameter, from ``start`` (its initial values, the channel
        weights to start from): of the window's normal ``equations``, or, weighted, of its
        channels' (the joints weighted by their noise levels); returns the solution, the normal
        equations it solved (weighted; the armature step keeps the weights) and the weights
        (``None``: unweighted)."""
        model, prior_weight = self.link_model, self.config.prior_weight
        initvals, start_weights = start
        if not isinstance(equations, ChannelNormalEquations):
            problem = build_link_problem(model, *equations, prior_weight, ellipsoids)
            return solve_or_fail(problem, method, initvals, options), equations, None
        channels = equations
        solution, weights = solve_weighted(
            channels,
            lambda w: build_link_problem(
                model, *weighted_normal_equations(channels, w), prior_weight, ellipsoids
            ),
            method,
            initvals,
            options,
            self.config.weighting,
            start_weights,
        )
        return solution, weighted_normal_equations(channels, weights), weights

    def _known_armature_solve(
        self,
        resolution: ArmatureResolution,
        normal: NormalEquations,
        x: np.ndarray,
        previous: tuple[tuple[str, ...], Solution] | None,
        method: str,
        options: dict[str, Any],
        ellipsoids: list[np.ndarray | None] | None,
    ) -> tuple[Solution, BaseParameters]:
        """The solve with the armatures ``resolution`` fixes known, on the ``normal`` equations
        with their columns moved to the right-hand side, warm-started from the ``previous`` such
        solve when it had the same parameters, else from the first solve's ``x``; returns it and
        the base parameters of its problem."""
        known, config = resolution.model, self.config
        gram, moment, yty, n_rows = normal
        reduced = resolution.normal_equations(gram, moment, yty)
        start = (
            previous[1]
            if previous is not None and previous[0] == known.parameter_names
            else resolution.reduce(x)
        )
        final = solve_or_fail(
            build_link_problem(known, *reduced, n_rows, config.prior_weight, ellipsoids),
            method,
            start,
            options,
        )
        base = base_parameters_from_gram(known.parameter_names, reduced[0], config.rank_tolerance)
        return final, base

    def _drives(self, x: np.ndarray) -> dict[str, DriveParameters]:
        """``{joint: DriveParameters}`` of the parameters ``x`` (p,)."""
        model = self.link_model
        estimated = model.drive_parameters(x)
        return {
            joint: drive.parameters(estimated[joint])
            for joint, drive in zip(model.joint_names, model.drives)
        }

    def _motors(self, x: np.ndarray) -> dict[str, DriveParameters]:
        """``{motor: DriveParameters}`` of the coupled motors' terms in ``x`` (p,)."""
        estimated = self.link_model.drive_parameters(x)
        return {
            motor.name: DriveParameters(**estimated[motor.name], coulomb_velocity=motor.width)
            for motor in self.link_model.motors
        }

    def _armature_sources(self, resolution: ArmatureResolution | None) -> dict[str, str]:
        """``{joint: source}`` of each joint's armature (:data:`ARMATURE_SOURCES`)."""
        model = self.link_model
        sources = {
            joint: "estimated" if drive.armature else "configured"
            for joint, drive in zip(model.joint_names, model.drives)
        }
        rotors = () if resolution is None else resolution.rotors
        sources.update({joint: rotor.source for rotor in rotors for joint in rotor.applied_to})
        return sources

    # ---- state -----------------------------------------------------------------------------

    def _clear_pending(self) -> None:
        super()._clear_pending()
        self._last_known_armature_solution = None


def _determination(
    names: tuple[str, ...],
    x: np.ndarray,
    equations: ChannelNormalEquations | tuple[np.ndarray, np.ndarray, float, int],
    base: BaseParameters,
) -> Determination:
    """The parameters ``names`` of ``x`` labelled by their standard errors on the window's
    ``equations`` (per joint, or all rows as one channel), unconstrained; what ``base`` leaves
    to the prior is prior only."""
    if not isinstance(equations, ChannelNormalEquations):
        gram, moment, yty, rows = equations
        equations = ChannelNormalEquations(gram[None], moment[None], np.array([yty]), rows)
    covariance = parameter_covariance(equations, x, constrained=False)
    return determination(names, x, covariance.matrix, base.unidentifiable, base.no_effect)


def _checked_actuators(
    model: LinkModel, actuators: Mapping[str, ActuatorConfig]
) -> dict[str, ActuatorConfig]:
    """``actuators`` after checking them against ``model``'s joints and drives."""
    drives = dict(zip(model.joint_names, model.drives))
    out = {}
    for joint, actuator in actuators.items():
        if joint not in drives:
            raise ValueError(
                f"actuators given for joint {joint!r}, not in the chain {list(model.joint_names)}"
            )
        if not isinstance(actuator, ActuatorConfig):
            raise ValueError(
                f"actuators[{joint!r}] must be an ActuatorConfig, got {type(actuator).__name__}"
            )
        drive = drives[joint]
        if not (
            np.isclose(actuator.gear_ratio, drive.gear_ratio, rtol=1e-12, atol=0.0)
            and np.isclose(actuator.rotor_inertia, drive.rotor_inertia, rtol=1e-12, atol=0.0)
        ):
            raise ValueError(
                f"actuators[{joint!r}]: gear ratio {actuator.gear_ratio:g} and rotor "
                f"inertia {actuator.rotor_inertia:g} differ from the model's drive "
                f"({drive.gear_ratio:g}, {drive.rotor_inertia:g}); build the model "
                "from the same actuators (ChainConfig.link_model)"
            )
        out[joint] = actuator
    return out
