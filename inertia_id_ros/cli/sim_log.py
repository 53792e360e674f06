"""``inertia-id sim-log``: the simulated Panda's recordings written the way other people's loggers
write them (:mod:`inertia_id_ros.sim.real_logs`), with the robot's URDF: the data of the worked
examples of docs/how-to/real-logs.md."""

from __future__ import annotations

import argparse
from pathlib import Path

from inertia_id_ros.cli.common import add_command, add_seed_option, positive_seconds, write_output
from inertia_id_ros.errors import InputError

EXAMPLES = ("wrist", "currents")
"""What ``sim-log`` writes: ``wrist``: ``arm.csv`` and ``ft.csv``; ``currents``: ``run3.npz``."""


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    """The ``sim-log`` command on ``subparsers``."""
    log = add_command(
        subparsers,
        "sim-log",
        run,
        help="write the simulated Panda's recording as other loggers do (other names, units, "
        "clocks; motor currents), for docs/how-to/real-logs.md",
    )
    log.add_argument(
        "example",
        choices=EXAMPLES,
        help="wrist: arm.csv (100 Hz, ms stamps, degrees, firmware names) and ft.csv (1 kHz, ns "
        "stamps of its own clock 12 ms behind, ';', the opposite sign); currents: run3.npz "
        "(q_meas in rad, i_motor in A, 500 Hz, no time)",
    )
    log.add_argument("folder", help="folder to write into (created if missing)")
    log.add_argument(
        "--duration", type=positive_seconds, default=30.0, help="seconds of motion (30)"
    )
    add_seed_option(log, "motion, truth and noise")


def run(args: argparse.Namespace) -> int:
    """Write the example's files and ``panda.urdf``; the exit code."""
    from inertia_id_ros.core.robots import example_robot_urdf
    from inertia_id_ros.sim.real_logs import write_current_log, write_wrist_logs

    folder = Path(args.folder)
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise InputError(f"cannot create {folder}: {e.strerror or e}") from None
    if args.example == "wrist":
        sim = write_wrist_logs(folder, args.duration, args.seed)
        written = f"arm.csv and ft.csv (a {sim.true_theta[0]:g} kg payload at {sim.sensor_frame})"
    else:
        write_current_log(folder / "run3.npz", args.duration, args.seed)
        written = "run3.npz (the arm without a payload)"
    urdf = example_robot_urdf("panda").read_text()
    write_output(str(folder / "panda.urdf"), lambda out: Path(out).write_text(urdf))
    print(f"wrote {written} and panda.urdf in {folder}: {args.duration:g} s")
    return 0
