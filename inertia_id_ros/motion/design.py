"""Exciting-motion design: a rest-to-rest Fourier motion that makes the identification precise.

:func:`design_excitation` searches the rest-to-rest Fourier motions
(:mod:`inertia_id_ros.motion.fourier`, ``L = duration x MAX_FREQUENCY_HZ`` harmonics, at least
5) within :func:`~inertia_id_ros.motion.limits.motion_limits` for the best value of the target's
objective (:mod:`inertia_id_ros.motion.objectives`: the payload's inertia precision, or the
links' predicted held-out torque error). It starts from the best of ``N_STARTS`` random motions
and runs L-BFGS-B on the objective's surrogate with its analytic gradients.

**Limits.** The optimiser never leaves them: it evaluates the objective on every joint's motion
scaled about ``start`` by ``1 / u``, ``u`` a smooth soft maximum (>= the maximum) of the joint's
limit usage (position offset, velocity, acceleration over their limits) on dense time samples
(100 Hz), so the motion always spans its limits (as the random reference motions do) and the
problem is unconstrained and smooth. At the end every joint's motion is scaled by the largest
factor that meets every limit on a 1 kHz grid (less a relative 1e-4), so the result meets them
exactly. Torque limits (the URDF's efforts, by RNEA of the URDF's links, without the payload) are
checked after the design and met by scaling the whole motion down when ``torque_limits`` is set.
With a :class:`~inertia_id_ros.motion.collision.CollisionChecker` (URDF collision geometry: SRDF
pairs and obstacles), after half the time limit, distances below the margin plus
``COLLISION_BUFFER`` on ``COLLISION_RATE_HZ`` samples are penalised quadratically (gradients from
the nearest points); the final motion is checked at 50 Hz and, if it still comes closer than the
margin, scaled toward ``start`` (bisection) until it does not.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np
import pinocchio as pin
import scipy.optimize

from inertia_id_ros.errors import ProblemError
from inertia_id_ros.motion.collision import Clearance, CollisionChecker
from inertia_id_ros.motion.fourier import (
    CHECK_RATE_HZ,
    FEASIBILITY_SAFETY,
    RestToRestFourier,
    feasible_scale,
    midpoints,
    random_coefficients,
)
from inertia_id_ros.motion.limits import (
    DEFAULT_POSITION_MARGIN,
    MotionLimits,
    motion_limits,
    torque_excess,
)
from inertia_id_ros.motion.objectives import (
    OBJECTIVE_RATE_HZ,
    ExcitationObjective,
    JointSamples,
    MotionEnvelope,
    ObjectiveSettings,
    objective_type,
)
from inertia_id_ros.motion.trajectory import DEFAULT_RATE_HZ, ExcitationTrajectory
from inertia_id_ros.options import DEFAULT_COLLISION_MARGIN, DEFAULT_MAX_ACCELERATION

MAX_FREQUENCY_HZ = 1.0
"""Hz: highest harmonic of the designed motion (the number of harmonics is duration x this)."""
MIN_HARMONICS = 5
"""Harmonics of the designed motion at least."""
CONSTRAINT_RATE_HZ = 100.0
"""Hz: time samples on which the optimiser penalises the limits."""
COLLISION_RATE_HZ = 10.0
"""Hz: time samples on which the optimiser penalises self-collision distances."""
COLLISION_FREE_SHARE = 0.5
"""Share of the time limit the optimiser runs without the self-collision penalty first."""
COLLISION_BUFFER = 0.03
"""m: the optimiser keeps distances above the margin plus this (motion between its samples)."""
N_STARTS = 8
"""Random motions drawn (from ``seed``); the optimiser starts from the best."""
_SOFTMAX_SHARPNESS = 200.0  # of the soft maximum of limit usage (1: at a limit)
_COLLISION_WEIGHT = 10.0
_REPORT_EVERY = 25  # iterations between progress lines
_LBFGSB_UNSAID = {
    "ABNORMAL": "the line search found no acceptable step",
}
"""Stop reasons L-BFGS-B states by their heading only (scipy's message ends with the colon)."""


@dataclass(frozen=True)
class DesignStats:
    """How the optimisation went: L-BFGS-B ``iterations`` and objective ``evaluations``,
    wall-clock ``seconds``, the criterion of the best random initial motion, the
    number of harmonics and free variables, whether it stopped on the time limit, the smallest
    per-joint factor of the final scaling onto the limits (slightly above 1: the soft maximum
    is conservative), and the factors the whole motion was scaled by for the torque limits and
    for self-collision (1: not needed)."""

    iterations: int
    evaluations: int
    seconds: float
    initial_objective: float
    n_harmonics: int
    n_variables: int
    stopped_on_time: bool
    limit_scale: float
    torque_scale: float = 1.0
    collision_scale: float = 1.0


@dataclass(frozen=True)
class DesignResult:
    """A designed motion: ``trajectory``; ``objective`` the criterion of ``objective_name``
    (payload: kg·m², links: N·m) on the trajectory's own samples, prior included;
    ``information`` the predicted information matrix of the motion alone (payload: (16, 16),
    per F/T sample at ``measurement_rate_hz``; links: (p, p) of the standard parameters,
    torques in N·m) to pass as the next design's ``prior_information``; the ``limits`` used;
    the ``evaluator`` that scored it (the target's objective, to score other motions the same
    way); ``clearance``: its smallest self-collision distance (with a collision checker)."""

    trajectory: ExcitationTrajectory
    objective: float
    objective_name: str
    target: str
    limits: MotionLimits
    information: np.ndarray = field(repr=False)
    stats: DesignStats
    evaluator: ExcitationObjective = field(repr=False)
    clearance: Clearance | None = None


def design_excitation(
    model: pin.Model,
    joint_names: Sequence[str],
    target: str,
    duration: float,
    *,
    settings: ObjectiveSettings = ObjectiveSettings(),
    start: Sequence[float] | None = None,
    max_acceleration: float = DEFAULT_MAX_ACCELERATION,
    seed: int = 0,
    progress: Callable[[str], None] | None = None,
    time_limit: float | None = None,
    position_margin: float = DEFAULT_POSITION_MARGIN,
    torque_limits: bool = False,
    rate_hz: float = DEFAULT_RATE_HZ,
    collision: CollisionChecker | None = None,
    collision_margin: float = DEFAULT_COLLISION_MARGIN,
) -> DesignResult:
    """Design an exciting motion of ``joint_names`` (model order) of the fixed-base ``model``
    for ``target`` (a key of :data:`~inertia_id_ros.motion.objectives.OBJECTIVES`) lasting
    ``duration`` s, starting and ending at rest at ``start`` (rad; default the middle of the
    limits), within :func:`~inertia_id_ros.motion.limits.motion_limits` (``position_margin``,
    ``max_acceleration``, ``torque_limits``); see the module docstring. ``settings``: what the
    objective assumes (the payload's ``sensor_frame``, the noise, the information already
    gathered: a previous :attr:`DesignResult.information`, or a recording's,
    :func:`inertia_id_ros.offline.information.recording_information`). ``seed`` draws the random
    motions the best of which is the initial one (and the objective's reference motions);
    ``progress`` receives one-line messages; ``time_limit`` (s, default the objective's
    ``default_time_limit``) bounds the optimisation. The result is sampled at ``rate_hz``.
    ``collision``: keep collision distances (self and obstacles) >= ``collision_margin`` (m).

    Raises :class:`~inertia_id_ros.errors.ProblemError` on bad input (unknown target, no range
    left, start outside the limits) and the model's :class:`~inertia_id_ros.errors.JointNotFound`
    / :class:`~inertia_id_ros.errors.FrameNotFound`.
    """
    began = time.perf_counter()
    kind = objective_type(target)
    if not (np.isfinite(duration) and duration > 0.0):
        raise ProblemError(f"duration must be > 0 s, got {duration}")
    if not rate_hz >= DEFAULT_RATE_HZ:
        raise ProblemError(f"rate_hz must be >= {DEFAULT_RATE_HZ:g}, got {rate_hz}")
    joint_names = tuple(joint_names)
    limits = motion_limits(
        model,
        joint_names,
        position_margin=position_margin,
        max_acceleration=max_acceleration,
        torque_limits=torque_limits,
    )
    envelope = MotionEnvelope(limits, _checked_start(limits, start), duration, seed)
    if collision is not None:
        _check_start_clear(collision, envelope, collision_margin)
    budget = kind.default_time_limit if time_limit is None else float(time_limit)
    objective = kind.for_design(model, joint_names, settings, envelope)
    search = _Search(objective, envelope, began, progress or _silent)
    X = search.run(search.best_start(seed), budget, collision, collision_margin)
    stopped_on_time = time.perf_counter() - began > budget
    final = _final_motion(model, search, X, rate_hz, collision, collision_margin)
    information = objective.trajectory_information(final.trajectory)
    value = objective.criterion(information)
    stats = search.finish(value, stopped_on_time, final)
    return DesignResult(
        final.trajectory,
        value,
        objective.name,
        target,
        limits,
        information,
        stats,
        objective,
        final.clearance,
    )


def _silent(message: str) -> None:
    """A progress callback that drops the message."""


def _checked_start(limits: MotionLimits, start: Sequence[float] | None) -> np.ndarray:
    """``start`` (n,) (default the middle of the limits), strictly within the limits."""
    n = len(limits.joint_names)
    rest = 0.5 * (limits.lower + limits.upper) if start is None else np.asarray(start, dtype=float)
    if rest.shape != (n,):
        raise ProblemError(f"start must have one position per joint ({n}), got {rest.shape}")
    outside = [
        f"{name} ({value:.3f} not in [{lo:.3f}, {hi:.3f}])"
        for name, value, lo, hi in zip(limits.joint_names, rest, limits.lower, limits.upper)
        if not lo < value < hi
    ]
    if outside:
        raise ProblemError(
            "start is not strictly within the limits less the margin: " + ", ".join(outside)
        )
    return rest


def _check_start_clear(
    collision: CollisionChecker, envelope: MotionEnvelope, margin: float
) -> None:
    """Refuse a start pose closer to collision than ``margin`` (m)."""
    at_start = collision.distances(envelope.limits.joint_names, envelope.start[None])[0]
    if np.min(at_start) < margin:
        k = int(np.argmin(at_start))
        raise ProblemError(
            f"the start pose is within {1e3 * at_start[k]:.1f} mm of "
            f"collision ({' and '.join(collision.pair_names(k))}), less "
            f"than the margin {1e3 * margin:g} mm"
        )


def stop_reason(result: scipy.optimize.OptimizeResult) -> str:
    """Why L-BFGS-B stopped, in full: scipy's message, the reason where scipy gives only its
    heading (``"ABNORMAL: "``), and the status."""
    heading, _, detail = str(result.message).partition(":")
    heading = heading.strip()
    detail = detail.strip() or _LBFGSB_UNSAID.get(heading, "no reason given")
    return f"{heading}: {detail} (L-BFGS-B status {result.status})"


class _Search:
    """The optimisation of :func:`design_excitation` over the coefficients ``X`` (n_free, n) of
    the Fourier ``basis`` of the motions of ``envelope`` (``MAX_FREQUENCY_HZ``): the soft scaling
    onto the limits, the collision penalty, the L-BFGS-B runs, their counters (``iterations``,
    ``evaluations``; ``initial``: the criterion of the best random start) and progress lines
    (``say``). ``began``: the design's start (``time.perf_counter``)."""

    def __init__(
        self,
        objective: ExcitationObjective,
        envelope: MotionEnvelope,
        began: float,
        say: Callable[[str], None],
    ) -> None:
        duration = envelope.duration
        n_harmonics = max(int(round(duration * MAX_FREQUENCY_HZ)), MIN_HARMONICS)
        basis = RestToRestFourier(duration, n_harmonics)
        self.objective, self.basis, self.envelope = objective, basis, envelope
        self.began, self.say = began, say
        t_objective = midpoints(duration, OBJECTIVE_RATE_HZ)
        self.P_obj = basis.evaluate(t_objective)
        self.P_con = basis.evaluate(midpoints(duration, CONSTRAINT_RATE_HZ))
        self.P_col = basis.evaluate(midpoints(duration, COLLISION_RATE_HZ))[0]
        self.P_stack = np.vstack(self.P_con)  # (3 M, n_free): positions, velocities, accelerations
        self.weight = objective.settings.measurement_rate_hz * duration / t_objective.size
        limits, start = envelope.limits, envelope.start
        self.up, self.down = limits.upper - start, start - limits.lower
        self.shape = (basis.n_free, len(limits.joint_names))
        self.iterations = self.evaluations = 0
        self.initial = np.inf
        self.deadline = 0.0
        self.collision: CollisionChecker | None = None  # penalised once set
        self.collision_margin = 0.0

    def states(self, X: np.ndarray) -> JointSamples:
        """``(Q, DQ, DDQ)`` of coefficients ``X`` at the objective's samples."""
        P = self.P_obj
        return self.envelope.start + P[0] @ X, P[1] @ X, P[2] @ X

    def best_start(self, seed: int) -> np.ndarray:
        """The best of ``N_STARTS`` random coefficients (each joint scaled onto its limits);
        sets :attr:`initial` and reports it."""
        rng = np.random.default_rng(seed)
        candidates = [random_coefficients(rng, *self.shape) for _ in range(N_STARTS)]
        limits, start = self.envelope.limits, self.envelope.start
        candidates = [X * feasible_scale(X, start, limits, self.P_con) for X in candidates]
        objective = self.objective
        scores = [
            objective.criterion(objective.information(*self.states(X), self.weight))
            for X in candidates
        ]
        self.initial = min(scores)
        self.say(
            f"{objective.target}: {self.basis.harmonics.size} harmonics, "
            f"{self.basis.n_free * self.shape[1]} variables, initial {objective.name} "
            f"{self.initial:.4g}"
        )
        return candidates[int(np.argmin(scores))]

    def soft_scale(self, X: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Per joint ``s = 1 / softmax(usage)`` (usage: each sample's value over its limit, a
        soft maximum >= the maximum, so ``X s`` is within the limits) and ``ds/dX``."""
        limits = self.envelope.limits
        up, down = self.up, self.down
        d, v, a = (P @ X for P in self.P_con)
        usage = np.vstack(
            [
                np.where(d > 0.0, d / up, -d / down),
                np.abs(v) / limits.velocity,
                np.abs(a) / limits.acceleration,
            ]
        )
        d_usage = np.vstack(
            [
                np.where(d > 0.0, 1.0 / up, -1.0 / down),
                np.sign(v) / limits.velocity,
                np.sign(a) / limits.acceleration,
            ]
        )
        top = usage.max(axis=0)
        e = np.exp(_SOFTMAX_SHARPNESS * (usage - top))
        total = e.sum(axis=0)
        scale = 1.0 / (top + np.log(total) / _SOFTMAX_SHARPNESS)
        return scale, -(scale**2) * (self.P_stack.T @ (e / total * d_usage))

    def collision_penalty(self, X: np.ndarray) -> tuple[float, np.ndarray]:
        """The penalty of distances below the margin plus ``COLLISION_BUFFER`` and its
        gradient w.r.t. ``X`` (zero until :attr:`collision` is set)."""
        if self.collision is None:
            return 0.0, np.zeros_like(X)
        threshold = self.collision_margin + COLLISION_BUFFER
        joint_names = self.envelope.limits.joint_names
        rows, _, distances, d_distances = self.collision.near(
            joint_names, self.envelope.start + self.P_col @ X, threshold
        )
        shortfall = (threshold - distances) / COLLISION_BUFFER
        gradient = -self.P_col[rows].T @ (
            (2.0 * _COLLISION_WEIGHT * shortfall / COLLISION_BUFFER)[:, None] * d_distances
        )
        return _COLLISION_WEIGHT * float(np.sum(shortfall**2)), gradient

    def fun(self, x: np.ndarray) -> tuple[float, np.ndarray]:
        """The surrogate (and the penalty) of the soft-scaled coefficients ``x`` (raveled) and
        its gradient."""
        self.evaluations += 1
        X = x.reshape(self.shape)
        scale, d_scale = self.soft_scale(X)
        scaled = X * scale
        f, (g_q, g_dq, g_ddq) = self.objective.value_and_gradient(*self.states(scaled), self.weight)
        p, g_p = self.collision_penalty(scaled)
        P = self.P_obj
        g_scaled = P[0].T @ g_q + P[1].T @ g_dq + P[2].T @ g_ddq + g_p
        gradient = g_scaled * scale + d_scale * np.sum(g_scaled * X, axis=0)
        return f + p, gradient.ravel()

    def callback(self, intermediate_result: scipy.optimize.OptimizeResult) -> None:
        """Count an iteration, report every ``_REPORT_EVERY``; stop past the deadline."""
        self.iterations += 1
        if self.iterations % _REPORT_EVERY == 0:
            self.say(
                f"  iteration {self.iterations}: surrogate "
                f"{intermediate_result.fun:.5g}, {time.perf_counter() - self.began:.1f} s"
            )
        if time.perf_counter() - self.began > self.deadline:
            raise StopIteration

    def optimise(self, x: np.ndarray, deadline: float) -> tuple[np.ndarray, str]:
        """L-BFGS-B from ``x`` until ``deadline`` (s since the start), restarted while it
        improves (line searches can fail where a distance kinks); and why it stopped."""
        best, stalls = np.inf, 0
        self.deadline = deadline
        while True:
            result = scipy.optimize.minimize(
                self.fun,
                x,
                jac=True,
                method="L-BFGS-B",
                callback=self.callback,
                options={"maxiter": 100000, "ftol": 0.0, "gtol": 0.0},
            )
            x = result.x
            if time.perf_counter() - self.began > deadline:
                return x, f"time limit {deadline:g} s reached"
            stalls = stalls + 1 if result.fun > best - 1e-9 * abs(best) else 0
            best = min(best, float(result.fun))
            if stalls >= 2:
                return x, f"optimiser stopped: {stop_reason(result)}"

    def run(
        self,
        X0: np.ndarray,
        budget: float,
        collision: CollisionChecker | None,
        collision_margin: float,
    ) -> np.ndarray:
        """The optimised coefficients from ``X0`` within ``budget`` s: without the collision
        penalty first (smooth), then with it from there; soft-scaled onto the limits."""
        x, message = self.optimise(
            X0.ravel(), budget * (1.0 if collision is None else COLLISION_FREE_SHARE)
        )
        self.say(f"  {message}")
        if collision is not None:
            self.collision, self.collision_margin = collision, collision_margin
            x, message = self.optimise(x, budget)
            self.say(f"  with self-collision distances: {message}")
        X = x.reshape(self.shape)
        return X * self.soft_scale(X)[0]

    def finish(self, value: float, stopped_on_time: bool, final: _FinalMotion) -> DesignStats:
        """The statistics of a design that reached the criterion ``value`` with ``final``;
        reports them."""
        seconds = time.perf_counter() - self.began
        self.say(
            f"{self.objective.target}: {self.objective.name} {value:.4g} (initial "
            f"{self.initial:.4g}), {self.iterations} iterations, {seconds:.1f} s"
        )
        return DesignStats(
            self.iterations,
            self.evaluations,
            seconds,
            self.initial,
            self.basis.harmonics.size,
            self.basis.n_free * self.shape[1],
            stopped_on_time,
            final.limit_scale,
            final.torque_scale,
            final.collision_scale,
        )


@dataclass(frozen=True)
class _FinalMotion:
    """The designed motion on the limits: ``trajectory`` and the factors it was scaled by."""

    trajectory: ExcitationTrajectory
    limit_scale: float
    torque_scale: float
    collision_scale: float
    clearance: Clearance | None


def _final_motion(
    model: pin.Model,
    search: _Search,
    X: np.ndarray,
    rate_hz: float,
    collision: CollisionChecker | None,
    margin: float,
) -> _FinalMotion:
    """The motion of coefficients ``X`` scaled per joint onto the limits (1 kHz grid), then as a
    whole below the torque limits and toward the start until clear of collision (``margin``
    m), sampled at ``rate_hz``."""
    basis, limits, start = search.basis, search.envelope.limits, search.envelope.start
    names = limits.joint_names
    scale = feasible_scale(
        X, start, limits, basis.evaluate(midpoints(basis.duration, CHECK_RATE_HZ))
    )
    X = X * (scale * (1.0 - FEASIBILITY_SAFETY))
    torque_scale = 1.0
    trajectory = basis.trajectory(X, start, names, rate_hz)
    if limits.torque is not None:
        while torque_excess(model, trajectory, limits) > 1.0 - FEASIBILITY_SAFETY:
            torque_scale *= 0.95
            trajectory = basis.trajectory(X * torque_scale, start, names, rate_hz)
    clearance, collision_scale = None, 1.0
    if collision is not None:
        clearance = collision.clearance(trajectory)
        if clearance.distance < margin:
            low, high = 0.0, 1.0  # scale toward start: 0 is the start pose, clear
            for _ in range(12):
                middle = 0.5 * (low + high)
                candidate = basis.trajectory(X * torque_scale * middle, start, names, rate_hz)
                if collision.clearance(candidate).distance >= margin:
                    low = middle
                else:
                    high = middle
            collision_scale = low
            trajectory = basis.trajectory(X * torque_scale * low, start, names, rate_hz)
            clearance = collision.clearance(trajectory)
            search.say(f"  scaled by {low:.3f} toward the start to clear self-collision")
    return _FinalMotion(trajectory, float(np.min(scale)), torque_scale, collision_scale, clearance)
