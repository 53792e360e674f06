"""Online link identification: joint states with efforts in, physically consistent links out.

The counterpart of :mod:`inertia_id_ros.online.payload_estimator` (a payload from an F/T sensor) for a chain's
links and joint drives from its joint torques (:mod:`inertia_id_ros.chain.links`). Data flow:
:meth:`LinkEstimator.add_joint_state` validates and buffers joint states (positions, optional
velocities, efforts; ROS callbacks, any thread). :meth:`~LinkEstimator.process` turns every
buffered joint state with joint states within ``filter_half_width`` on both sides (the
processing lag) into the regressor rows of its joints: positions, velocities and accelerations at
the joint state's stamp from the local polynomial fit of :mod:`inertia_id_ros.core.filtering`
(accelerations are always the fit's derivative), ``Y = LinkModel.joint_torque_regressor`` (n, p)
and the torques ``y = effort * effort_scale - known torques`` (n,); rows go to a
:class:`~inertia_id_ros.online.window.SlidingWindow` (n rows per sample). :meth:`~LinkEstimator.solve`
solves the window's :func:`~inertia_id_ros.chain.links.build_link_problem`::

    min (1 / n_rows) ||Y x - y||² + prior_weight ||x - x_prior||²
    s.t. J(theta_k) >= 0 for every link k, viscous, Coulomb, armature >= 0

(``x_prior``: the URDF's links, zero friction and offset, the reflected rotor inertias), warm
started from the previous solution, and returns a :class:`LinkEstimate` only if every link is fully
physically consistent, with the base parameters of the window's regressor
(:func:`~inertia_id_ros.chain.links.base_parameters_from_gram`): what the data so far cannot identify.

Given the chain's actuators (``LinkEstimator(..., actuators=chain.actuators)``), every solve also
resolves the armatures the window cannot identify, as :func:`inertia_id_ros.chain.actuators.fit_chain`
does offline (a fixed-base leg's torques separate only the knee's armature from the link
inertias; see :mod:`inertia_id_ros.chain.actuators`): from the first solution and the window's base
parameters, :func:`~inertia_id_ros.chain.actuators.resolve_armatures` estimates each motor type's rotor
inertia from its joints' identifiable armatures, and the problem is solved again (warm started
from the previous such solve) with the unidentifiable armatures known, ``N**2 * I_rotor``: the
window's normal equations with those columns moved to the right-hand side, so the links' inertias
about those axes exclude the rotors. :attr:`LinkEstimate.armature_sources` says which armature is
which. Without actuators (or when every armature is identifiable) a solve is the single one above.
"""

from __future__ import annotations

import threading
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field

import numpy as np

from inertia_id_ros.chain.actuators import (
    ActuatorConfig,
    RotorInertia,
    known_armature_model,
    resolve_armatures,
)
from inertia_id_ros.online.payload_estimator import (
    JOINT_STATE,
    ClockResetDetector,
    EstimatorStats,
    JointStateValidator,
    OnlineEstimator,
    OnlineEstimatorConfig,
)
from inertia_id_ros.errors import EstimateUnavailable, SampleRejected
from inertia_id_ros.core.filtering import (
    COVERAGE_OK,
    COVERAGE_PENDING,
    check_coverage,
    joint_states_at_mixed,
)
from inertia_id_ros.chain.friction import DriveParameters
from inertia_id_ros.core.inertia import check_consistency
from inertia_id_ros.chain.links import (
    DEFAULT_GRAM_RANK_TOLERANCE,
    DEFAULT_PRIOR_WEIGHT,
    BaseParameters,
    LinkModel,
    base_parameters_from_gram,
    build_link_problem,
)
from inertia_id_ros.solvers import Problem, Solution
from inertia_id_ros.errors import ProblemError, SolverError
from inertia_id_ros.solvers import solve as solve_problem
from inertia_id_ros.online.window import SampleBuffer, SlidingWindow

_PROCESS_CHUNK = 500
"""Joint states turned into rows per batch in :meth:`LinkEstimator.process`."""

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
    """Settings of :class:`LinkEstimator`: the shared ones of
    :class:`~inertia_id_ros.online.payload_estimator.OnlineEstimatorConfig` (samples are joint states) and the
    prior and rank tolerance of the link fit."""

    prior_weight: float = DEFAULT_PRIOR_WEIGHT
    """Weight of the prior toward the URDF, per torque sample ((N·m)² per SI unit² of x; see
    :mod:`inertia_id_ros.chain.links`). The default is the KUKA LWR4+ cross-validation optimum; choose
    it for your robot with :func:`~inertia_id_ros.chain.links.select_prior_weight` on a recording.
    Small (1e-6) when the joint torques are clean and the motion exciting: the prior then only
    settles what the data cannot identify."""
    rank_tolerance: float = DEFAULT_GRAM_RANK_TOLERANCE
    """Relative tolerance of the base-parameter rank
    (:func:`~inertia_id_ros.chain.links.base_parameters_from_gram`)."""

    def __post_init__(self) -> None:
        super().__post_init__()
        if not self.prior_weight >= 0.0:
            raise self._invalid("prior_weight", "must be >= 0")
        self._check_positive("rank_tolerance")


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


class LinkEstimator(OnlineEstimator):
    """Identify a chain's links and joint drives online from joint states with efforts.

    Thread-safe: one internal lock guards the buffers and the window; :meth:`add_joint_state`
    may be called from one thread while another calls :meth:`process` and :meth:`solve` (the
    regressor and the solve run outside the lock).

    ``actuators``: the chain's actuators by joint (``ChainConfig.actuators``; the model's drives
    must have their gear ratios and rotor inertias, as ``ChainConfig.link_model()`` gives):
    armatures the window cannot identify are then fixed by their motor type's rotor inertia (see
    the module docstring). ``None``: every armature is estimated (the prior settles the
    unidentifiable ones). Raises ValueError for actuators of joints not in the chain or that
    disagree with the model's drives.
    """

    def __init__(self, link_model: LinkModel, config: LinkEstimatorConfig | None = None,
                 actuators: Mapping[str, ActuatorConfig] | None = None) -> None:
        self.link_model = link_model
        self.config = config or LinkEstimatorConfig()
        self.actuators = None if actuators is None else _checked_actuators(link_model, actuators)
        config = self.config
        n = link_model.n_joints
        self._joint_input = JointStateValidator(link_model.joint_names,
                                                link_model.robot_joint_names,
                                                config.ignore_unknown_joints,
                                                config.use_measured_velocity, need_effort=True)
        self._lock = threading.Lock()
        self._process_lock = threading.Lock()
        self._joints = SampleBuffer(config.joint_buffer_capacity, t=(), q=(n,), dq=(n,),
                                    has_dq=(), effort=(n,))
        self.window = SlidingWindow(config.window_sec, link_model.n_parameters,
                                    config.window_capacity, rows_per_sample=n)
        self.received: Counter[str] = Counter()
        self.processed: Counter[str] = Counter()
        self.dropped: Counter[str] = Counter()
        self._t_consumed: float = -np.inf
        """Stamp of the newest joint state processed or dropped by :meth:`process`."""
        self._last_solution: Solution | None = None
        self._last_known_armature_solution: tuple[tuple[str, ...], Solution] | None = None
        """The previous solve's second solution (armatures known), to warm-start the next."""
        self._generation = 0
        self.clock_jumps = 0
        """Clock resets seen since the last :meth:`reset` (see ``clock_jump_sec``)."""
        self._clock = ClockResetDetector(config.clock_jump_sec)

    # ---- input -----------------------------------------------------------------------------

    def add_joint_state(self, t: float, names: list[str] | tuple[str, ...], q: np.ndarray,
                        dq: np.ndarray | None = None, effort: np.ndarray | None = None) -> None:
        """Buffer a joint state: stamp ``t`` (s), ``names`` with positions ``q`` (rad, m),
        optionally velocities ``dq`` (rad/s, m/s; ``None`` or empty when absent), and raw
        efforts ``effort`` (joint torque = effort x the joint's ``effort_scale``).

        Joints of the robot outside the chain (locked) are ignored. Raises
        :class:`~inertia_id_ros.online.payload_estimator.SampleRejected` (counted in :attr:`dropped`) with reason
        ``non_finite``, ``length_mismatch``, ``duplicate_joint``, ``unknown_joint`` (unless
        ``ignore_unknown_joints``), ``missing_joint``, ``missing_effort``, ``duplicate_stamp`` or
        ``out_of_order``. When ``joint_buffer_capacity`` joint states wait already, the oldest is
        dropped (reason ``overflow``).
        """
        with self._lock:
            self.received[JOINT_STATE] += 1
            if self._clock.is_reset(float(t), self._joint_input.last_t):
                self._clear_samples()
                self.clock_jumps += 1
            try:
                sample = self._joint_input.validate(t, names, q, dq, effort)
            except SampleRejected as rejected:
                self.dropped[rejected.reason] += 1
                raise
            joints = self._joints
            if len(joints) == joints.capacity and joints["t"][0] > self._t_consumed:
                self.dropped["overflow"] += 1
            joints.append(t=sample.t, q=sample.q, has_dq=sample.dq is not None,
                          dq=0.0 if sample.dq is None else sample.dq, effort=sample.effort)

    # ---- processing ------------------------------------------------------------------------

    def process(self) -> int:
        """Turn the buffered joint states that the filter can now evaluate into window rows;
        returns how many samples were added. Joint states that can never be evaluated are dropped
        (reasons ``gap``: a gap longer than ``max_joint_gap`` within ``filter_half_width``;
        ``no_joint_state``: within ``filter_half_width`` of the oldest buffered joint state;
        ``sparse``: too few joint states in the fit window)."""
        added = 0
        with self._process_lock:
            while True:
                with self._lock:
                    batch = self._next_batch()
                if batch is None:
                    return added
                t, q, dq, ddq, effort, generation, consumed = batch
                if t.size:
                    model = self.link_model
                    Y = model.joint_torque_regressor(q, dq, ddq)
                    y = model.measured_torques(effort) - model.known_torques(ddq)
                    with self._lock:
                        if generation == self._generation:
                            overflow = self.window.extend(t, Y, y)
                            if overflow:
                                self.dropped["window_overflow"] += overflow
                            self.processed[JOINT_STATE] += t.size
                            added += t.size
                if consumed < _PROCESS_CHUNK:
                    return added

    def _next_batch(self) -> tuple | None:
        """Filter up to ``_PROCESS_CHUNK`` unprocessed joint states (lock held): ``(t, q, dq, ddq,
        effort, generation, consumed)`` of the ready ones, or ``None`` if none can be decided."""
        config = self.config
        joints = self._joints
        t_all = joints["t"]
        start = int(np.searchsorted(t_all, self._t_consumed, side="right"))
        t_query = t_all[start:start + _PROCESS_CHUNK]
        if t_query.size == 0:
            return None
        status = check_coverage(t_all, t_query, config.filter_half_width, config.max_joint_gap,
                                config.filter_order)
        pending = np.flatnonzero(status == COVERAGE_PENDING)
        consumed = int(pending[0]) if pending.size else t_query.size
        if consumed == 0:
            return None
        status = status[:consumed]
        for reason, count in Counter(status[status != COVERAGE_OK]).items():
            self.dropped[reason] += count
        ready = np.flatnonzero(status == COVERAGE_OK)
        t_ready = t_query[ready]
        q, dq, ddq = joint_states_at_mixed(t_all, joints["q"], joints["dq"], joints["has_dq"],
                                           t_ready, config.filter_half_width, config.filter_order)
        effort = joints["effort"][start + ready]
        self._t_consumed = float(t_query[consumed - 1])
        return t_ready.copy(), q, dq, ddq, effort, self._generation, consumed

    # ---- solving ---------------------------------------------------------------------------

    def solve(self, method: str | None = None, duration: float = 0.0,
              initvals: Solution | np.ndarray | None = None) -> LinkEstimate:
        """Estimate from the newest ``duration`` s of the window (0: all) with ``method`` (default
        ``config.method``), warm-started from ``initvals`` (default: the previous solution if
        ``config.warm_start``). With the chain's actuators, armatures the window cannot identify
        are fixed by their motor type's rotor inertia and the problem solved again (see the
        module docstring; that second solve is warm-started from the previous one's when
        ``initvals`` is the default, else from the first). Raises
        :class:`~inertia_id_ros.online.payload_estimator.EstimateUnavailable` with reason ``too_few_samples``,
        ``solver_failed`` or ``inconsistent`` (some link not fully physically consistent, e.g.
        with ``ols``): never returns an inconsistent link."""
        config = self.config
        model = self.link_model
        with self._lock:
            method, options = self._solver_settings(method or None)
            n_samples, t_first, t_last = self._samples_to_solve(duration, "joint states")
            gram, moment, yty, n_rows = self.window.normal_equations(duration)
            warm = initvals is None and config.warm_start
            if warm:
                initvals = self._last_solution
            previous_known = self._last_known_armature_solution if warm else None
            generation = self._generation
        problem = build_link_problem(model, gram, moment, yty, n_rows, config.prior_weight)
        solution = _solve(problem, method, initvals, options)
        x = np.array(solution.x)
        base = base_parameters_from_gram(model.parameter_names, gram, config.rank_tolerance)
        rotors = (() if self.actuators is None else
                  resolve_armatures(model, self.actuators, x, base.unidentifiable))
        final, solve_time = solution, float(solution.solve_time)
        if rotors:  # the unidentifiable armatures known: N² I_rotor, solve again
            known = known_armature_model(model, rotors)
            keep = np.array([model.parameter_names.index(n) for n in known.parameter_names])
            fixed = np.setdiff1d(np.arange(model.n_parameters), keep)
            known_drives = dict(zip(known.joint_names, known.drives))
            values = np.array([known_drives[model.parameter_names[i].rsplit(".", 1)[0]]
                               .reflected_inertia for i in fixed])
            gram, moment, yty = _with_known_parameters(gram, moment, yty, keep, fixed, values)
            start = (previous_known[1] if previous_known is not None
                     and previous_known[0] == known.parameter_names else x[keep])
            final = _solve(build_link_problem(known, gram, moment, yty, n_rows,
                                              config.prior_weight), method, start,
                           options)
            solve_time += float(final.solve_time)
            x[keep], x[fixed] = final.x, values
            base = base_parameters_from_gram(known.parameter_names, gram, config.rank_tolerance)
        thetas = model.link_parameters(x).copy()
        reports = [check_consistency(theta) for theta in thetas]
        problems = [f"{link}: {'; '.join(report.problems)}"
                    for link, report in zip(model.link_names, reports)
                    if not report.fully_consistent]
        if problems:
            raise EstimateUnavailable("inconsistent", f"method {method!r} returned physically "
                                      f"inconsistent links: {' | '.join(problems)}")
        with self._lock:
            if generation == self._generation:
                self._last_solution = solution
                if rotors:
                    self._last_known_armature_solution = (known.parameter_names, final)
        estimated = model.drive_parameters(x)
        drives = {joint: drive.parameters(estimated[joint])
                  for joint, drive in zip(model.joint_names, model.drives)}
        sources = {joint: "estimated" if drive.armature else "configured"
                   for joint, drive in zip(model.joint_names, model.drives)}
        sources.update({joint: rotor.source for rotor in rotors for joint in rotor.applied_to})
        stopped = [s.status for s in (solution, final) if not s.found]
        return LinkEstimate(
            x=x, link_names=model.link_names, thetas=thetas, drives=drives,
            min_pseudo_inertia_eigs=np.array([r.min_pseudo_inertia_eig for r in reports]),
            residual_rms=float(final.residual_rms), base=base, n_samples=n_samples,
            t_first=t_first, t_last=t_last, method=method, prior_weight=config.prior_weight,
            solve_time=solve_time,
            message=f"solver stopped early ({stopped[0]})" if stopped else "",
            rotor_inertias=rotors, armature_sources=sources)

    # ---- state -----------------------------------------------------------------------------

    def _clear_samples(self) -> None:
        """Forget the buffered joint states, the window and the previous solution (lock held)."""
        self._joints.clear()
        self.window.clear()
        self._joint_input.reset()
        self._t_consumed = -np.inf
        self._last_solution = None
        self._last_known_armature_solution = None
        self._generation += 1

    def stats(self) -> EstimatorStats:
        """Snapshot of the counters (``pending``: joint states waiting for the filter's
        look-ahead)."""
        with self._lock:
            pending = len(self._joints) - int(np.searchsorted(self._joints["t"], self._t_consumed,
                                                              side="right"))
            return EstimatorStats(received=dict(self.received), processed=dict(self.processed),
                                  dropped=dict(self.dropped), pending=pending,
                                  window_samples=len(self.window), clock_jumps=self.clock_jumps)


def _solve(problem: Problem, method: str, initvals: Solution | np.ndarray | None,
           options: Mapping[str, object]) -> Solution:
    """``solve(problem, method, initvals, **options)``; a failure is ``solver_failed``."""
    try:
        return solve_problem(problem, method, initvals=initvals, **options)
    except (ProblemError, SolverError, TypeError, ValueError) as e:  # bad option values too
        raise EstimateUnavailable("solver_failed", f"method {method!r}: {e}") from e


def _with_known_parameters(gram: np.ndarray, moment: np.ndarray, yty: float, keep: np.ndarray,
                           known: np.ndarray, values: np.ndarray
                           ) -> tuple[np.ndarray, np.ndarray, float]:
    """Normal equations of ``||Y[:, keep] x_keep - (y - Y[:, known] values)||²`` from those of
    ``||Y x - y||²``: the parameters ``known`` are ``values``, the others ``keep`` remain."""
    cross = gram[np.ix_(keep, known)]
    known_square = values @ gram[np.ix_(known, known)] @ values
    return (gram[np.ix_(keep, keep)], moment[keep] - cross @ values,
            float(yty - 2.0 * values @ moment[known] + known_square))


def _checked_actuators(model: LinkModel, actuators: Mapping[str, ActuatorConfig]
                       ) -> dict[str, ActuatorConfig]:
    """``actuators`` after checking them against ``model``'s joints and drives."""
    drives = dict(zip(model.joint_names, model.drives))
    out = {}
    for joint, actuator in actuators.items():
        if joint not in drives:
            raise ValueError(f"actuators given for joint {joint!r}, not in the chain "
                             f"{list(model.joint_names)}")
        if not isinstance(actuator, ActuatorConfig):
            raise ValueError(f"actuators[{joint!r}] must be an ActuatorConfig, got "
                             f"{type(actuator).__name__}")
        drive = drives[joint]
        if not (np.isclose(actuator.gear_ratio, drive.gear_ratio, rtol=1e-12, atol=0.0)
                and np.isclose(actuator.rotor_inertia, drive.rotor_inertia, rtol=1e-12, atol=0.0)):
            raise ValueError(f"actuators[{joint!r}]: gear ratio {actuator.gear_ratio:g} and rotor "
                             f"inertia {actuator.rotor_inertia:g} differ from the model's drive "
                             f"({drive.gear_ratio:g}, {drive.rotor_inertia:g}); build the model "
                             "from the same actuators (ChainConfig.link_model)")
        out[joint] = actuator
    return out
