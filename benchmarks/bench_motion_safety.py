"""Benchmark of the motion-safety checks of an excitation (Panda, example-robot-data).

A 30 s out-and-back command of the 7 arm joints (15 s each way, 100 Hz samples) and:

1. the workspace check before it moves (:meth:`WorkspaceChecker.check` at 100 Hz: two frames,
   a table half-space and a cell box);
2. the run-time check of one measured joint state (:meth:`ExcitationRun.check_measured`, what
   the node runs on every joint state as it arrives) and, for comparison, the whole step of the
   tick (:meth:`ExcitationRun.step`: staleness, tracking error and the workspace);
3. the collision check before it moves (:meth:`CollisionChecker.clearance` at 50 Hz: the SRDF's
   self-collision pairs plus a table and a sphere).

Target: the run-time check well under a 1 kHz joint-state period (1000 µs).

Run: .venv/bin/python benchmarks/bench_motion_safety.py [--repeat 3000].
BLAS threads as ``inertia-id`` sets them (:func:`inertia_id_ros.threads.limit_threads`).
"""

from __future__ import annotations

from inertia_id_ros.threads import limit_threads

limit_threads()

import argparse  # noqa: E402
import time  # noqa: E402

import numpy as np  # noqa: E402  (after the BLAS thread settings)

from inertia_id_ros.core.robots import (  # noqa: E402
    example_robot_data_dir,
    example_robot_urdf,
    load_model,
)
from inertia_id_ros.motion.collision import CollisionChecker, Obstacle  # noqa: E402
from inertia_id_ros.motion.run import ExcitationRun, JointStateSnapshot, RunConfig  # noqa: E402
from inertia_id_ros.motion.trajectory import concatenate, rest_to_rest  # noqa: E402
from inertia_id_ros.motion.workspace import (  # noqa: E402
    Box,
    HalfSpace,
    Sphere,
    Workspace,
    WorkspaceChecker,
    WorkspaceLimit,
)
from inertia_id_ros.sim.payload import PANDA_ARM_JOINTS, PANDA_HOME  # noqa: E402

AWAY = np.array([0.6, -0.4, 0.5, 0.4, -0.6, 0.5, 0.8])
"""rad: how far the command swings each joint from home and back."""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3000, help="joint states timed (3000)")
    args = parser.parse_args()
    joints = PANDA_ARM_JOINTS
    model = load_model(example_robot_urdf("panda"))
    workspace = WorkspaceChecker(
        model,
        Workspace(
            (
                WorkspaceLimit(
                    "table",
                    ("panda_hand_tcp", "panda_link7"),
                    HalfSpace(np.array([0.0, 0.0, -1.0]), 0.0),
                ),
                WorkspaceLimit(
                    "cell", ("panda_hand_tcp",), Box(np.zeros(3), np.full(3, 4.0), np.eye(3))
                ),
            )
        ),
    )
    motion = concatenate(
        rest_to_rest(PANDA_HOME, PANDA_HOME + AWAY, 15.0, joint_names=joints),
        rest_to_rest(PANDA_HOME + AWAY, PANDA_HOME, 15.0, joint_names=joints),
    )
    began = time.perf_counter()
    violation = workspace.check(motion)
    print(
        f"workspace check of the 30 s command at 100 Hz (2 frames, 2 limits): "
        f"{1e3 * (time.perf_counter() - began):.1f} ms ({violation or 'inside'})"
    )

    for label, check in (
        ("check_measured (the workspace alone)", "check_measured"),
        ("step (staleness, tracking, workspace)", "step"),
    ):
        run = ExcitationRun(RunConfig(), workspace=workspace)
        command = run.start(
            motion, JointStateSnapshot(0.0, 0.0, joints, PANDA_HOME), 0.0, skip_dry_run=True
        )
        stamps = np.linspace(command.t_start + 1.5, command.t_start + 25.0, args.repeat)
        states = [
            JointStateSnapshot(t, t, joints, q)
            for t, q in zip(stamps, command.trajectory.sample(stamps - command.t_start)[0])
        ]
        began = time.perf_counter()
        for state in states:
            getattr(run, check)(state, state.stamp)
        per_state = 1e6 * (time.perf_counter() - began) / len(states)
        print(f"ExcitationRun.{label}: {per_state:.1f} µs per joint state ({run.state})")

    collision = CollisionChecker(
        example_robot_urdf("panda"),
        example_robot_data_dir() / "panda_description/srdf/panda.srdf",
        obstacles=(
            Obstacle("table", HalfSpace(np.array([0.0, 0.0, 1.0]), 0.0)),
            Obstacle("lamp", Sphere(np.array([0.5, 0.4, 0.8]), 0.1)),
        ),
    )
    began = time.perf_counter()
    clearance = collision.clearance(motion)
    print(
        f"collision check of the 30 s command at 50 Hz ({collision.n_pairs} pairs): "
        f"{1e3 * (time.perf_counter() - began):.0f} ms (smallest distance "
        f"{1e3 * clearance.distance:.1f} mm, {' and '.join(clearance.pair)})"
    )


if __name__ == "__main__":
    main()
