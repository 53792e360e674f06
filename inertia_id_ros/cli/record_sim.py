"""``inertia-id record-sim``: a recording of the simulated Panda (joint states, wrenches, URDF; or,
as the simulator node's ``panda_torques`` robot, joint states with efforts): a bag to replay,
written directly (no DDS), or an NPZ or CSV file of the package's layout to fit."""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from inertia_id_ros.cli.common import (
    add_command,
    add_seed_option,
    add_storage_option,
    text_writer,
    write_json,
    write_output,
)
from inertia_id_ros.errors import InputError
from inertia_id_ros.options import DEFAULT_JOINT_STATES_TOPIC, DEFAULT_WRENCH_TOPIC


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    """The ``record-sim`` command on ``subparsers``."""
    record = add_command(
        subparsers,
        "record-sim",
        run,
        help="write a ROS 2 bag (no DDS) or an NPZ/CSV file of the simulated Panda",
    )
    record.add_argument(
        "out",
        help="bag to create (a rosbag2 directory; must not exist), or a .npz or .csv file "
        "(stamps from 0 s; inertia_id_ros/formats/data.py)",
    )
    record.add_argument("--duration", type=float, default=20.0, help="seconds of motion (20)")
    record.add_argument(
        "--rate",
        type=float,
        default=1000.0,
        metavar="HZ",
        help="joint-state and wrench rate (1000)",
    )
    add_seed_option(record, "trajectory and noise")
    add_storage_option(record, "bag storage")
    record.add_argument(
        "--grasp-at",
        type=float,
        metavar="SEC",
        help="switch to another payload (a 2.3 kg box) SEC s into the motion",
    )
    record.add_argument(
        "--truth-json",
        metavar="OUT",
        help="write the simulated (final) payload as a result JSON to OUT",
    )
    record.add_argument(
        "--robot",
        choices=ROBOTS,
        default=ROBOTS[0],
        help="panda: joint states and the F/T sensor's wrenches at the flange; "
        "panda_torques: the Panda without an F/T sensor, joint states with "
        "efforts (joint torques; links off the URDF by up to 10 %%, friction "
        "and torque offsets), as inertia-id-sim's robot (panda)",
    )
    _add_torque_robot_options(record)
    _add_robot_file_options(record)


def _add_torque_robot_options(record: argparse.ArgumentParser) -> None:
    """The options of ``--robot panda_torques``: its truth, unloaded run and motion."""
    record.add_argument(
        "--links-json",
        metavar="OUT",
        help="panda_torques: write the simulated links and drives (without the "
        "payload) as a fit-links result to OUT (the payload_torques mode's "
        "torques_links_result)",
    )
    record.add_argument(
        "--without-payload",
        action="store_true",
        help="panda_torques: the Panda carries no payload (a run to fit the links on)",
    )
    record.add_argument(
        "--motion-seed",
        type=int,
        metavar="SEED",
        help="panda_torques: seed of the motion alone (default --seed, which also draws the "
        "links' and drives' truth): the same robot moving otherwise, e.g. held-out data",
    )
    record.add_argument(
        "--unloaded",
        metavar="OUT",
        help="panda_torques: also write the same motion without the payload to OUT (a bag, "
        ".npz or .csv, as out; other noise): the unloaded run of fit-payload-torques "
        "--unloaded",
    )


def _add_robot_file_options(record: argparse.ArgumentParser) -> None:
    """The options writing the robot's files: URDF, SRDF, input description."""
    record.add_argument(
        "--urdf-out",
        metavar="OUT",
        help="write the robot's URDF (the one the fits take) to OUT",
    )
    record.add_argument(
        "--srdf-out",
        metavar="OUT",
        help="write the robot's SRDF (its self-collision pairs: inertia-id excite --srdf) to OUT",
    )
    record.add_argument(
        "--description-out",
        metavar="OUT",
        help="write an input description (YAML, docs/how-to/real-logs.md) of the recording to OUT",
    )


ROBOTS = ("panda", "panda_torques")
"""The simulated robots ``record-sim`` records."""


def run(args: argparse.Namespace) -> int:
    """Write the recording (and the truth); the exit code."""
    from inertia_id_ros.formats.export import body_json
    from inertia_id_ros.sim.payload import grasped_payload_theta
    from inertia_id_ros.sim.recorders import record_simulation, write_simulation

    if args.robot == "panda_torques":
        return _record_joint_torques(args)
    for option in ("links_json", "unloaded", "without_payload", "motion_seed"):
        if getattr(args, option) not in (None, False):
            raise InputError(f"--{option.replace('_', '-')} applies to --robot panda_torques")
    changed = None if args.grasp_at is None else grasped_payload_theta()
    try:
        if _is_file(args.out):
            sim = write_simulation(
                args.out, args.duration, args.rate, args.seed, args.grasp_at, changed
            )
        else:
            sim = record_simulation(
                args.out,
                args.duration,
                args.rate,
                args.seed,
                args.storage,
                payload_change_at=args.grasp_at,
                changed_payload=changed,
            )
    except ValueError as e:
        raise InputError(str(e)) from None
    final = sim.true_theta if changed is None else changed
    if args.truth_json:
        write_json(
            args.truth_json,
            {
                "method": "truth",
                "bodies": [body_json("payload", sim.sensor_frame, final)],
                "sensor_offset": sim.true_offset.tolist(),
            },
        )
    _write_urdf(args)
    _write_description(args, sim.joint_names, ("q", "dq"), sim.sensor_frame)
    n = int(round(args.duration * args.rate))
    inputs = (
        f"{n} joint states and wrenches in {sim.sensor_frame!r}"
        if _is_file(args.out)
        else f"{n} joint states on {DEFAULT_JOINT_STATES_TOPIC}, {n} wrenches on "
        f"{DEFAULT_WRENCH_TOPIC} in {sim.sensor_frame!r}, the URDF on /robot_description"
    )
    print(
        f"wrote {_written(args)}: {args.duration:g} s of the simulated Panda at "
        f"{args.rate:g} Hz, {inputs}; payload {sim.true_theta[0]:g} kg"
        + ("" if changed is None else f", {final[0]:g} kg from {args.grasp_at:g} s on (a grasp)")
        + (f"; truth (the final payload) in {args.truth_json}" if args.truth_json else "")
        + (f"; the URDF in {args.urdf_out}" if args.urdf_out else "")
        + (f"; the SRDF in {args.srdf_out}" if args.srdf_out else "")
        + (f"; its description in {args.description_out}" if args.description_out else "")
    )
    return 0


def _is_file(path: str) -> bool:
    """Whether ``path`` names an NPZ or CSV file (else a bag to create)."""
    return Path(path).suffix.lower() in (".npz", ".csv")


def _written(args: argparse.Namespace) -> str:
    """What was written: ``"rec.npz"`` or ``"bag (mcap)"``."""
    return args.out if _is_file(args.out) else f"{args.out} ({args.storage})"


def _write_urdf(args: argparse.Namespace) -> None:
    """The Panda's URDF (the fits' ``--urdf``) to ``--urdf-out`` and its SRDF to ``--srdf-out``
    (each where given)."""
    from inertia_id_ros.core.robots import example_robot_data_dir, example_robot_urdf

    srdf = example_robot_data_dir() / "panda_description" / "srdf" / "panda.srdf"
    for path, source in ((args.urdf_out, example_robot_urdf("panda")), (args.srdf_out, srdf)):
        if path:
            text = source.read_text()
            write_output(path, text_writer(text))


def _write_description(
    args: argparse.Namespace, joint_names: Sequence[str], kinds: Sequence[str], frame: str = ""
) -> None:
    """The input description of ``args.out`` (nothing without ``--description-out``)."""
    import yaml

    from inertia_id_ros.formats.data import canonical_description

    path = args.description_out
    if path:
        content = canonical_description(args.out, Path(path).parent, joint_names, kinds, frame)
        text = yaml.safe_dump(content, sort_keys=False, allow_unicode=True)
        write_output(path, lambda out: Path(out).write_text(text))


def _record_joint_torques(args: argparse.Namespace) -> int:
    """Write the recording of ``--robot panda_torques`` (and the unloaded run, the truth); the
    exit code."""
    from inertia_id_ros.core.robots import example_robot_urdf
    from inertia_id_ros.sim.recorders import record_joint_torques, write_joint_torques
    from inertia_id_ros.sim.torques import panda_payload_torque_simulators

    if args.grasp_at is not None:
        raise InputError("--grasp-at applies to --robot panda")
    if args.unloaded and _is_file(args.unloaded) != _is_file(args.out):
        raise InputError("--unloaded: write the same kind as out (both bags, or both files)")
    if args.unloaded and args.without_payload:
        raise InputError("--unloaded writes a second run; with --without-payload out is one")
    unloaded, loaded = panda_payload_torque_simulators(
        seed=args.seed, trajectory=_motion(args.motion_seed)
    )
    sim = unloaded if args.without_payload else loaded
    urdf = Path(example_robot_urdf("panda")).read_text()
    runs = [(args.out, sim, args.seed)]  # the unloaded run: the same motion, other noise
    runs += [(args.unloaded, unloaded, args.seed + 1)] if args.unloaded else []
    try:
        for out, simulator, seed in runs:
            if _is_file(out):
                write_joint_torques(out, simulator, args.duration, args.rate, seed)
            else:
                record_joint_torques(
                    out, simulator, urdf, args.duration, args.rate, seed, args.storage
                )
    except ValueError as e:
        raise InputError(str(e)) from None
    _write_torque_truths(args, loaded, sim)
    _write_urdf(args)
    _write_description(args, sim.joint_names, ("q", "dq", "effort"))
    n = int(round(args.duration * args.rate))
    inputs = (
        f"{n} joint states with efforts"
        if _is_file(args.out)
        else f"{n} joint states with efforts on {DEFAULT_JOINT_STATES_TOPIC}, the URDF on "
        "/robot_description"
    )
    payload = (
        "no payload"
        if args.without_payload or loaded.payload_theta is None
        else f"payload {loaded.payload_theta[0]:g} kg at {loaded.payload_frame!r}"
    )
    print(
        f"wrote {_written(args)}: {args.duration:g} s of the simulated Panda "
        f"without an F/T sensor at {args.rate:g} Hz, {inputs}; {payload}"
        + "".join(
            f"; {what} in {path}"
            for what, path in (
                ("the same motion without the payload", args.unloaded),
                ("truth", args.truth_json),
                ("links and drives", args.links_json),
                ("the URDF", args.urdf_out),
                ("the SRDF", args.srdf_out),
                ("its description", args.description_out),
            )
            if path
        )
    )
    return 0


def _write_torque_truths(args: argparse.Namespace, loaded: Any, sim: Any) -> None:
    """``--truth-json`` (the payload of ``loaded``) and ``--links-json`` (the links and drives of
    ``sim``, the simulator recorded), when asked."""
    from inertia_id_ros.formats.export import body_json
    from inertia_id_ros.formats.link_result import link_result_json

    if args.truth_json:
        write_json(
            args.truth_json,
            {
                "method": "truth",
                "bodies": [body_json("payload", loaded.payload_frame, loaded.payload_theta)],
            },
        )
    if args.links_json:
        write_json(
            args.links_json,
            {
                "method": "truth",
                **link_result_json(
                    sim.links.link_names, sim.link_thetas, dict(zip(sim.joint_names, sim.drives))
                ),
            },
        )


def _motion(seed: int | None) -> Any:
    """The Panda's exciting motion of ``seed`` (``None``: the simulator's default, of
    ``--seed``)."""
    from inertia_id_ros.core.robots import example_robot_urdf, load_model
    from inertia_id_ros.sim.payload import PANDA_ARM_JOINTS, ExcitingTrajectory

    if seed is None:
        return None
    model = load_model(example_robot_urdf("panda"))
    return ExcitingTrajectory.for_model(model, PANDA_ARM_JOINTS, seed=seed)
