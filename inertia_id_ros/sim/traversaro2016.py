"""Traversaro, Brossette, Escande, Nori (2016), "Identification of fully physical consistent
inertial parameters using optimization on manifolds" (IROS), Table I, reproduced in simulation.

Setting (the paper's): iCub's right arm (example-robot-data ``icub``), the six-axis F/T sensor
``r_arm_ft_sensor`` in the upper arm; the body beyond it (upper arm below the sensor, forearm,
hand) is identified. Elbow and wrist are locked (:data:`LOCKED_ARM`, the torso at zero); the three
shoulder joints follow random point-to-point minimum-jerk paths with completion times 10, 5, 2, 1
and 0.5 s, 60 s of data for each, sampled at 100 Hz. Velocities and accelerations come from
Savitzky–Golay filtering of the measured positions (order 2; windows 499, 41, 21, 9, 7 samples).
The F/T offset is unknown and estimated with the inertial parameters. Methods: unconstrained least
squares (``ols``), optimisation on the manifold of fully consistent parameters (``manifold``, the
paper's) and the LMI formulation (``lmi``). Ground truth: the URDF's inertia of the subtree
beyond the sensor (:meth:`SensorKinematics.subtree_inertia`).

What is simulated and what is not (so the comparison is fair): the wrench is exact rigid-body
dynamics (:class:`~inertia_id_ros.sim.payload.PayloadSimulator`) plus a constant offset and white
noise (default: :data:`~inertia_id_ros.sim.payload.DEFAULT_WRENCH_NOISE_STD`, 0.1 N and 0.005 N·m
standard deviation); positions have 1e-5 rad white noise. The real experiment also had model
errors, cable forces and sensor drift, so its effective noise was likely higher. The path targets
are our choice (the paper does not give them): uniform within the joint limits shrunk by 10 % at
each end, so the 0.5 s path reaches joint speeds (several rad/s) a real iCub would not.

The paper's finding, and how it shows here: OLS is not fully consistent on the slow paths (the
rotational inertia is barely excited, so noise and filtering errors dominate it), the consistent
methods always are, and on fast paths the three agree (OLS is consistent, the constraint is
inactive). On the 10 s path the 499-sample filter's bias alone makes OLS inconsistent (also
without any noise); with a 41-sample window instead, noise still does on 8 of 10 seeds. The
slow-path result is random: over seeds 0-19 (``inertia-id traversaro --trials 20``) OLS was
inconsistent on 20/20 runs of the 10 s path, 14/20 of the 5 s, 2/20 of the 2 s and 0/20 of the
1 s and 0.5 s paths, so the whole finding held on 14/20 runs (seed 0, the default, is one); with
three times the F/T noise (``--noise-scale 3``) on 20/20, 19/20, 7/20, 2/20 and 0/20 (the fast
paths then disagree on 2/20). Manifold and LMI were consistent on every run.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pinocchio as pin

from inertia_id_ros.core.filtering import savgol_derivatives
from inertia_id_ros.core.inertia import ConsistencyReport, check_consistency, inertia_from_theta
from inertia_id_ros.core.kinematics import SensorKinematics
from inertia_id_ros.core.regressors import payload_regressor_batch
from inertia_id_ros.core.robots import configuration, example_robot_urdf, load_model
from inertia_id_ros.sim.payload import (
    DEFAULT_OFFSET,
    DEFAULT_WRENCH_NOISE_STD,
    PayloadSimulator,
    minimum_jerk_point_to_point,
)
from inertia_id_ros.solvers import Problem, solve

SENSOR_FRAME = "r_arm_ft_sensor"
SHOULDER_JOINTS = ("r_shoulder_pitch", "r_shoulder_roll", "r_shoulder_yaw")
LOCKED_ARM = {"r_elbow": np.pi / 4, "r_wrist_prosup": 0.0, "r_wrist_pitch": 0.0, "r_wrist_yaw": 0.0}
"""Positions (rad) of the locked joints beyond the sensor: the elbow bent 45 deg."""
COMPLETION_TIMES = (10.0, 5.0, 2.0, 1.0, 0.5)
"""Completion time of each point-to-point motion of a path (s), the paper's rows."""
SAVGOL_WINDOWS = (499, 41, 21, 9, 7)
"""Savitzky–Golay window (samples) per completion time, the paper's."""
SAVGOL_ORDER = 2
METHODS = ("ols", "manifold", "lmi")
SLOW_PATHS = (10.0, 5.0)
"""Completion times (s) on which the paper finds OLS inconsistent."""
FAST_PATHS = (1.0, 0.5)
"""Completion times (s) on which the paper finds all methods agree."""
AGREEMENT_TOLERANCE = 1e-4
"""Relative difference ``|theta_a - theta_b| / |theta_b|`` under which two estimates agree."""


@dataclass(frozen=True)
class MethodResult:
    """One method's estimate on one path: ``theta`` (10,) about and in the sensor frame, the F/T
    ``offset`` (6,) (N, N·m), its consistency report and solve time (s)."""

    method: str
    theta: np.ndarray
    offset: np.ndarray
    consistency: ConsistencyReport
    solve_time: float


@dataclass(frozen=True)
class PathResult:
    """All methods on the path of one completion time (s), filtered with ``window`` samples."""

    completion_time: float
    window: int
    samples: int
    results: dict[str, MethodResult]

    def agree(self, tolerance: float = AGREEMENT_TOLERANCE) -> bool:
        """Whether every method's ``theta`` is within ``tolerance`` (relative) of OLS's."""
        reference = self.results["ols"].theta
        return all(
            np.linalg.norm(r.theta - reference) <= tolerance * np.linalg.norm(reference)
            for r in self.results.values()
        )


@dataclass(frozen=True)
class Experiment:
    """Results of :func:`run`: ``truth`` (10,), the true ``offset`` (6,), one :class:`PathResult`
    per completion time, and the settings."""

    truth: np.ndarray
    offset: np.ndarray
    paths: list[PathResult]
    seed: int
    duration: float
    rate: float
    wrench_noise_std: np.ndarray = field(repr=False)

    def path(self, completion_time: float) -> PathResult:
        """The result of the path with ``completion_time`` (s)."""
        for path in self.paths:
            if path.completion_time == completion_time:
                return path
        raise KeyError(f"no path with completion time {completion_time} s")

    def finding(self) -> dict[str, bool]:
        """The paper's three statements, each true or false on this run."""
        slow = [p for p in self.paths if p.completion_time in SLOW_PATHS]
        fast = [p for p in self.paths if p.completion_time in FAST_PATHS]
        return {
            "ols inconsistent on the slow paths": all(
                not p.results["ols"].consistency.fully_consistent for p in slow
            ),
            "manifold and lmi always consistent": all(
                r.consistency.fully_consistent
                for p in self.paths
                for name, r in p.results.items()
                if name != "ols"
            ),
            "all methods agree on the fast paths": all(
                p.results["ols"].consistency.fully_consistent and p.agree() for p in fast
            ),
        }


def _position_limits(model: pin.Model, joint_names: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
    """(lower, upper) position limits (rad) of 1-dof joints with bounded angles."""
    index = [model.joints[model.getJointId(name)].idx_q for name in joint_names]
    return model.lowerPositionLimit[index], model.upperPositionLimit[index]


def run(
    seed: int = 0,
    duration: float = 60.0,
    rate: float = 100.0,
    completion_times: Sequence[float] = COMPLETION_TIMES,
    windows: Sequence[int] = SAVGOL_WINDOWS,
    wrench_noise_std: np.ndarray = DEFAULT_WRENCH_NOISE_STD,
    position_noise_std: float = 1e-5,
) -> Experiment:
    """Simulate one path per completion time (``duration`` s at ``rate`` Hz each; random targets
    and noise from ``seed``) and identify with every method of :data:`METHODS`."""
    if len(windows) != len(completion_times):
        raise ValueError(f"{len(windows)} filter windows for {len(completion_times)} paths")
    model = load_model(example_robot_urdf("icub"))
    kinematics = SensorKinematics(model, SENSOR_FRAME, SHOULDER_JOINTS)
    truth = kinematics.subtree_inertia(configuration(model, LOCKED_ARM))
    lower, upper = _position_limits(model, SHOULDER_JOINTS)
    t = np.arange(int(round(duration * rate))) / rate
    rngs = [np.random.default_rng(s) for s in np.random.SeedSequence(seed).spawn(len(windows))]
    paths = []
    for completion_time, window, rng in zip(completion_times, windows, rngs):
        n_points = int(np.ceil(duration / completion_time))
        trajectory = minimum_jerk_point_to_point(
            lower, upper, n_points, completion_time, seed=int(rng.integers(2**31))
        )
        simulator = PayloadSimulator(
            model,
            SENSOR_FRAME,
            truth,
            trajectory,
            SHOULDER_JOINTS,
            wrench_noise_std=wrench_noise_std,
            position_noise_std=position_noise_std,
        )
        q, _, wrench = simulator.measure(t, rng)
        q, dq, ddq = savgol_derivatives(q, 1.0 / rate, window, SAVGOL_ORDER)
        V, A = simulator.kinematics.compute_batch(q, dq, ddq)
        Y = payload_regressor_batch(V, A)
        problem = Problem.from_regressor(Y.reshape(-1, Y.shape[2]), wrench.reshape(-1), n_bodies=1)
        results = {}
        for method in METHODS:
            solution = solve(problem, method)
            theta = np.array(solution.bodies[0])
            results[method] = MethodResult(
                method,
                theta,
                np.array(solution.extras),
                check_consistency(theta),
                solution.solve_time,
            )
        paths.append(PathResult(float(completion_time), int(window), t.size, results))
    return Experiment(
        truth,
        DEFAULT_OFFSET.copy(),
        paths,
        seed,
        duration,
        rate,
        np.asarray(wrench_noise_std, dtype=float),
    )


_HEADER = (
    f"{'T (s)':>6} {'method':<9}{'m (kg)':>8}{'cx':>8}{'cy':>8}{'cz':>8}"
    f"{'Ixx':>8}{'Ixy':>8}{'Ixz':>8}{'Iyy':>8}{'Iyz':>8}{'Izz':>8}{'λmin(J)':>11}"
    "  consistent"
)


def _row(label: str, method: str, theta: np.ndarray) -> str:
    report = check_consistency(theta)
    cells = f"{label:>6} {method:<9}{theta[0]:8.4f}"
    if theta[0] > 0:
        _, com, inertia = inertia_from_theta(theta)
        six = inertia[[0, 0, 0, 1, 1, 2], [0, 1, 2, 1, 2, 2]]
        cells += "".join(f"{1e3 * c:8.2f}" for c in com) + "".join(f"{1e3 * i:8.3f}" for i in six)
    else:
        cells += f"{'-':>8}" * 9
    verdict = "yes" if report.fully_consistent else "NO"
    return cells + f"{report.min_pseudo_inertia_eig:11.2e}  {verdict}"


def format_table(experiment: Experiment) -> str:
    """The paper's Table I layout: per completion time and method, the estimated mass, COM (mm)
    and inertia about the COM (1e-3 kg m², sensor-frame axes), λmin of the pseudo-inertia
    (kg m²) and full consistency; the ground truth first; the paper's finding last."""
    e = experiment
    noise = e.wrench_noise_std
    lines = [
        "Traversaro et al. 2016, Table I, in simulation: iCub right arm beyond F/T sensor "
        f"{SENSOR_FRAME!r}",
        f"shoulder joints on random minimum-jerk paths, {e.duration:g} s per path at "
        f"{e.rate:g} Hz, Savitzky-Golay order {SAVGOL_ORDER}; F/T noise {noise[0]:g} N, "
        f"{noise[3]:g} N·m (std); F/T offset estimated; seed {e.seed}",
        "COM (mm) and inertia about the COM (1e-3 kg m²) in the sensor frame",
        "",
        _HEADER,
        _row("truth", "URDF", e.truth),
    ]
    for path in e.paths:
        lines.append("")
        for k, (method, result) in enumerate(path.results.items()):
            label = f"{path.completion_time:g}" if k == 0 else ""
            lines.append(_row(label, method, result.theta))
    lines.append("")
    windows = ", ".join(f"{p.completion_time:g} s: {p.window}" for p in e.paths)
    lines.append(f"filter windows (samples): {windows}")
    offset_error = max(
        np.abs(r.offset[:3] - e.offset[:3]).max() for p in e.paths for r in p.results.values()
    )
    lines.append(f"largest F/T force-offset error over all estimates: {offset_error:.3f} N")
    lines.append("paper's finding on this run:")
    for statement, holds in e.finding().items():
        lines.append(f"  {statement}: {'yes' if holds else 'no'}")
    return "\n".join(lines)


@dataclass(frozen=True)
class TrialSummary:
    """Over ``trials`` seeds: how often each method was inconsistent per completion time, and how
    often each of the paper's statements held."""

    trials: int
    inconsistent: dict[float, dict[str, int]]
    finding: dict[str, int]


def run_trials(first_seed: int, trials: int, **settings: Any) -> TrialSummary:
    """:func:`run` with seeds ``first_seed ... first_seed + trials - 1`` (``settings`` as for
    :func:`run`), counted."""
    inconsistent: dict[float, dict[str, int]] = {}
    finding: dict[str, int] = {}
    for seed in range(first_seed, first_seed + trials):
        experiment = run(seed=seed, **settings)
        for path in experiment.paths:
            counts = inconsistent.setdefault(path.completion_time, dict.fromkeys(METHODS, 0))
            for method, result in path.results.items():
                counts[method] += not result.consistency.fully_consistent
        for statement, holds in experiment.finding().items():
            finding[statement] = finding.get(statement, 0) + holds
    return TrialSummary(trials, inconsistent, finding)


def format_trials(summary: TrialSummary) -> str:
    """Table of :class:`TrialSummary`: inconsistent estimates per completion time and method."""
    n = summary.trials
    lines = [
        f"over {n} seeds: number of runs with a physically inconsistent estimate",
        f"{'T (s)':>6}" + "".join(f"{m:>10}" for m in METHODS),
    ]
    for completion_time, counts in summary.inconsistent.items():
        lines.append(
            f"{completion_time:>6g}" + "".join(f"{f'{counts[m]}/{n}':>10}" for m in METHODS)
        )
    lines.append("paper's finding, runs where it holds:")
    lines += [f"  {statement}: {count}/{n}" for statement, count in summary.finding.items()]
    return "\n".join(lines)
