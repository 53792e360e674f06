"""Benchmark of the links design judged by outcome: what identification delivers along it.

Case: the Panda's 7 arm joints (example-robot-data URDF), 30 s, ``--max-acceleration 3.0``,
start at the middle of the limits, no self-collision constraint (random motions ignore it too).

1. The design (:func:`inertia_id_ros.motion.design.design_excitation`, target ``links``, seed 0,
   its default time limit): wall-clock design time (target <= 300 s).
2. The reference: ``--random`` (30) random 5-harmonic rest-to-rest Fourier motions (seeds 0..,
   :func:`~inertia_id_ros.motion.design.random_fourier_motion`) with the same limits, start,
   duration and rest at both ends, each joint scaled as far as the limits allow (position,
   velocity, acceleration on a 1 kHz grid).
3. The truth (one for all motions, ``--truth-seed``): links perturbed from the URDF
   (:func:`~inertia_id_ros.sim.torques.perturbed_links`), per joint viscous U(0.1, 0.6)
   N·m·s/rad, Coulomb U(0.2, 0.8) N·m (exact sign, as the model has it), offset N(0, 0.1²) N·m,
   armature U(0.05, 0.3) kg·m²; white torque noise
   :data:`~inertia_id_ros.sim.torques.DEFAULT_ARM_TORQUE_NOISE_STD` (0.04-0.15 N·m).
4. Along each motion (the design and every random one): joint torques simulated at 100 Hz
   (:class:`~inertia_id_ros.sim.torques.JointTorqueSimulator`, exact joint states), identified by
   :func:`~inertia_id_ros.chain.identify.identify_links` (what ``fit-links`` runs: lmi, prior
   weight by cross-validation) with the filter, tilt, Coulomb width and torque delay fixed to
   the truth (recorded accelerations, level base, exact sign, no delay): the motion is what is
   measured, not these choices. ``--noise-seeds`` (3) noise draws per motion, the same for every
   motion; each outcome is the mean over them.

Outcomes of each fit:

- **held-out torque error**: RMS (N·m, all joints) of the fit's predicted minus the true
  (noise-free) torques along one separate validation motion (random seed 1000, used by no fit);
- **largest relative base-parameter standard error**: base parameters of the model's regressor
  (columns chosen by :func:`~inertia_id_ros.chain.base_parameters.base_parameters` on all the random
  motions together), their covariance by the sandwich of
  :func:`~inertia_id_ros.core.covariance.parameter_covariance` (each joint's residual variance
  of the fit), each standard error divided by the true base parameter's magnitude; the largest.

Next to them: the design's own criterion (the design's evaluator on each motion's 100 Hz
samples) and the independent measure of issue 24 (condition number of the column-normalised
base regressor, every drive term, on a 10 Hz grid, base columns from the random motions).
The table gives the design, the best and the median random motion on each, and the ratios
design / best random (<= 0.5 required on at least one outcome).

``--design-cache FILE``: reuse a design saved there (NPZ with its design time), else design and
save it; without it the design runs every time.

Run: .venv/bin/python benchmarks/bench_links_design_outcome.py [--random 30]
[--design-cache /tmp/links_design.npz].
BLAS threads as ``inertia-id`` sets them (:func:`inertia_id_ros.threads.limit_threads`).
"""

from __future__ import annotations

from inertia_id_ros.threads import limit_threads

limit_threads()

import argparse  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402  (after the BLAS thread settings)

from inertia_id_ros.chain.base_parameters import BaseParameters, base_parameters  # noqa: E402
from inertia_id_ros.chain.identify import identify_links  # noqa: E402
from inertia_id_ros.chain.links import (  # noqa: E402
    JointTorqueData,
    LinkModel,
    link_channels,
    torque_error,
)
from inertia_id_ros.core.covariance import parameter_covariance  # noqa: E402
from inertia_id_ros.core.robots import example_robot_urdf, load_model  # noqa: E402
from inertia_id_ros.motion.design import design_excitation  # noqa: E402
from inertia_id_ros.motion.fourier import random_fourier_motion  # noqa: E402
from inertia_id_ros.motion.limits import motion_limits  # noqa: E402
from inertia_id_ros.motion.objectives import (  # noqa: E402
    LinksObjective,
    ObjectiveSettings,
    reference_samples,
)
from inertia_id_ros.motion.trajectory import ExcitationTrajectory  # noqa: E402
from inertia_id_ros.sim.payload import PANDA_ARM_JOINTS  # noqa: E402
from inertia_id_ros.sim.torques import (  # noqa: E402
    DEFAULT_ARM_TORQUE_NOISE_STD,
    DriveTruth,
    JointTorqueSimulator,
    perturbed_links,
)

DURATION = 30.0  # s
MAX_ACCELERATION = 3.0  # rad/s²
SAMPLE_RATE_HZ = 100.0  # of the simulated torques
GRID_RATE_HZ = 10.0  # of the independent condition number
VALIDATION_SEED = 1000
DESIGN_TIME_TARGET = 300.0  # s


def truth(links: LinkModel, seed: int) -> tuple[np.ndarray, list[DriveTruth]]:
    """True links (n, 10) and drives (step 3 of the module docstring)."""
    rng = np.random.default_rng(seed)
    n = links.n_joints
    drives = [
        DriveTruth(v, c, o, a, 0.0)
        for v, c, o, a in zip(
            rng.uniform(0.1, 0.6, n),
            rng.uniform(0.2, 0.8, n),
            rng.normal(0.0, 0.1, n),
            rng.uniform(0.05, 0.3, n),
        )
    ]
    return perturbed_links(links.link_parameters(links.prior), rng), drives


def samples(trajectory: ExcitationTrajectory, rate_hz: float) -> JointTorqueData:
    """The motion's states at ``rate_hz`` (zero efforts)."""
    t = np.linspace(0.0, trajectory.duration, int(round(trajectory.duration * rate_hz)) + 1)
    q, dq, ddq = trajectory.sample(t)
    return JointTorqueData(q, dq, ddq, np.zeros_like(q), trajectory.joint_names)


def condition_number(links: LinkModel, base: BaseParameters, data: JointTorqueData) -> float:
    """Condition number of the column-normalised base regressor of ``data``."""
    Y = links.joint_torque_regressor(data.positions, data.velocities, data.accelerations)
    Y = Y.reshape(-1, links.n_parameters)[:, base.independent]
    Y = Y / np.linalg.norm(Y, axis=0)
    s = np.linalg.svd(Y, compute_uv=False)
    return float(s[0] / s[-1])


def outcome(
    links: LinkModel,
    trajectory: ExcitationTrajectory,
    thetas: np.ndarray,
    drives: list[DriveTruth],
    base: BaseParameters,
    validation: JointTorqueData,
    noise_seed: int,
) -> tuple[float, float]:
    """(held-out torque RMS N·m, largest relative base-parameter standard error) of the fit
    along ``trajectory`` (module docstring)."""
    simulator = JointTorqueSimulator(
        links, trajectory.sample, thetas, drives, torque_noise_std=DEFAULT_ARM_TORQUE_NOISE_STD
    )
    t = np.linspace(0.0, trajectory.duration, int(round(trajectory.duration * SAMPLE_RATE_HZ)) + 1)
    data = simulator.measure(t, np.random.default_rng(noise_seed))
    fit = identify_links(
        links,
        t,
        data.positions,
        data.velocities,
        data.accelerations,
        data.efforts,
        estimate_tilt=False,
        select_coulomb=False,
        torque_delay=0.0,
    ).fit
    held_out = torque_error(links, fit.x, validation).overall
    channels = link_channels(links, data).select(base.independent)
    covariance = parameter_covariance(
        channels, base.from_standard(fit.x), n_bodies=0, constrained=False
    )
    true_base = base.from_standard(simulator.true_parameters(links))
    relative = np.sqrt(np.diag(covariance.matrix)) / np.abs(true_base)
    return held_out, float(np.max(relative))


def designed_motion(model, cache: Path | None) -> tuple[ExcitationTrajectory, float]:
    """The links design and its wall-clock design time (s), from ``cache`` if there."""
    if cache is not None and cache.exists():
        with np.load(cache) as npz:
            seconds = float(npz["design_seconds"])
        return ExcitationTrajectory.load_npz(cache), seconds
    began = time.perf_counter()
    result = design_excitation(
        model,
        PANDA_ARM_JOINTS,
        "links",
        DURATION,
        max_acceleration=MAX_ACCELERATION,
        seed=0,
        progress=print,
    )
    seconds = time.perf_counter() - began
    trajectory = result.trajectory
    if cache is not None:
        np.savez(
            cache,
            t=trajectory.t,
            joint_names=np.array(trajectory.joint_names),
            q=trajectory.q,
            dq=trajectory.dq,
            ddq=trajectory.ddq,
            design_seconds=seconds,
        )
    return trajectory, seconds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--random", type=int, default=30, help="random motions (30)")
    parser.add_argument("--truth-seed", type=int, default=0)
    parser.add_argument(
        "--noise-seeds", type=int, default=3, help="noise draws per motion, outcomes averaged (3)"
    )
    parser.add_argument("--design-cache", type=Path, default=None)
    args = parser.parse_args()

    model = load_model(example_robot_urdf("panda"))
    links = LinkModel.from_model(model, PANDA_ARM_JOINTS)
    design, design_seconds = designed_motion(model, args.design_cache)
    start = design.q[0]
    duration = design.duration
    limits = motion_limits(model, PANDA_ARM_JOINTS, max_acceleration=MAX_ACCELERATION)
    randoms = [
        random_fourier_motion(limits, start, duration, 5, seed) for seed in range(args.random)
    ]
    base = base_parameters(links, [samples(m, GRID_RATE_HZ) for m in randoms])
    thetas, drives = truth(links, args.truth_seed)
    validation_motion = random_fourier_motion(limits, start, duration, 5, VALIDATION_SEED)
    validation = JointTorqueSimulator(links, validation_motion.sample, thetas, drives).measure(
        validation_motion.t, np.random.default_rng(0)
    )  # noise-free: the true torques
    evaluator = LinksObjective(
        model,
        PANDA_ARM_JOINTS,
        ObjectiveSettings(),
        reference_samples(limits, start, duration, seed=0),
    )

    def row(trajectory: ExcitationTrajectory) -> tuple[float, float, float, float]:
        held_out, relative = np.mean(
            [
                outcome(links, trajectory, thetas, drives, base, validation, noise_seed)
                for noise_seed in range(1, args.noise_seeds + 1)
            ],
            axis=0,
        )
        return (
            held_out,
            relative,
            evaluator.criterion_of(trajectory),
            condition_number(links, base, samples(trajectory, GRID_RATE_HZ)),
        )

    began = time.perf_counter()
    designed = row(design)
    table = np.array([row(m) for m in randoms])
    names = (
        "held-out torque RMS (N m)",
        "max rel. base std error",
        "design criterion (N m)",
        "independent cond (10 Hz)",
    )
    print(
        f"\nPanda links, {duration:g} s, {args.random} random motions; design "
        f"{design_seconds:.1f} s (target <= {DESIGN_TIME_TARGET:g} s); base rank {base.rank}; "
        f"outcomes in {time.perf_counter() - began:.1f} s"
    )
    print(
        f"{'measure':<28}{'design':>11}{'best rand':>11}{'median':>11}{'ratio':>8}{'best seed':>10}"
    )
    for k, name in enumerate(names):
        best = int(np.argmin(table[:, k]))
        print(
            f"{name:<28}{designed[k]:>11.4g}{table[best, k]:>11.4g}"
            f"{np.median(table[:, k]):>11.4g}{designed[k] / table[best, k]:>8.3f}{best:>10}"
        )
    print(
        "\nrequired: ratio <= 0.5 on the held-out torque RMS or on the max relative base std "
        "error; design time <= 300 s"
    )


if __name__ == "__main__":
    main()
