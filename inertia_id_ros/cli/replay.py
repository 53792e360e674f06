"""``inertia-id replay``: a ROS 2 bag (or a log an input description reads: ``--input``) through
the node's estimator, update by update in bag time, to CSV, JSON and a PNG report: the replay job
(:mod:`inertia_id_ros.jobs.replay`); with ``--params-file`` the session the node builds from its
parameter file, in any mode with a replay, else the node's default mode with the options given.
The input's units and the final estimate's plausibility findings are printed; exit 3 when one
refuses it, as the fit commands."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from inertia_id_ros import modes
from inertia_id_ros.cli import common
from inertia_id_ros.cli.common import (
    DATA_LIMITED,
    EXIT_IMPLAUSIBLE,
    EXIT_NO_ESTIMATE,
    print_findings,
    print_result,
    print_summary,
    write_json,
    write_output,
)
from inertia_id_ros.errors import InputError
from inertia_id_ros.options import (
    DEFAULT_JOINT_STATES_TOPIC,
    DEFAULT_WRENCH_TOPIC,
    METHOD_NAMES,
    PAYLOAD_CHANGE_THRESHOLD,
)


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    """The ``replay`` command on ``subparsers``."""
    replay = subparsers.add_parser(
        "replay",
        help="run the node's estimator (any mode) over a ROS 2 bag or a described log, update "
        "by update in bag time; CSV, JSON, PNG report",
    )
    log = replay.add_mutually_exclusive_group(required=True)
    log.add_argument(
        "bag", nargs="?", help="ROS 2 bag: a rosbag2 directory, or one .mcap/.db3 file"
    )
    log.add_argument(
        "--input",
        metavar="YAML",
        help="instead of a bag, the input description of a log (files or bag "
        "topics, joint names, units, signs, held joints, clock offsets; "
        "docs/how-to/real-logs.md), replayed in stamp order; the URDF: "
        "--urdf, else --params-file's urdf_path, else the /robot_description "
        "of a bag it reads (without --params-file: --urdf)",
    )
    replay.add_argument(
        "--params-file",
        metavar="YAML",
        help="the node's ROS 2 parameter file (e.g. config/icub_whole_body.yaml): "
        "replay the session the node would run with it (its mode: "
        + " or ".join(m.name for m in modes.modes() if m.has_replay)
        + "); the options below override its values",
    )
    replay.add_argument(
        "--node-name",
        default="inertia_id",
        help="--params-file: the node whose entries to read (inertia_id)",
    )
    replay.add_argument(
        "-p",
        "--param",
        action="append",
        default=[],
        metavar="NAME:=VALUE",
        help="--params-file: set a node parameter (VALUE in YAML), as ros2 run's -p; repeatable",
    )
    replay.add_argument(
        "--sensor-frame", help="URDF frame of the F/T sensor (default: the wrenches' frame_id)"
    )
    replay.add_argument(
        "--urdf",
        help="URDF file of the robot (default: /robot_description "
        "in the bag; --params-file: its urdf_path, else the bag's)",
    )
    replay.add_argument(
        "--joint-states-topic", help=f"sensor_msgs/JointState topic ({DEFAULT_JOINT_STATES_TOPIC})"
    )
    replay.add_argument(
        "--wrench-topic", help=f"geometry_msgs/WrenchStamped topic ({DEFAULT_WRENCH_TOPIC})"
    )
    _add_session_options(replay)
    replay.add_argument("--csv", metavar="OUT", help="write every update to OUT (CSV)")
    replay.add_argument(
        "--json", metavar="OUT", help="write the final estimate and every update to OUT (JSON)"
    )
    replay.add_argument("--png", metavar="OUT", help="write the report to OUT (PNG)")
    replay.add_argument(
        "--truth",
        metavar="JSON",
        help="result JSON of the true payload (e.g. record-sim --truth-json), drawn dashed",
    )
    replay.set_defaults(run=run)


def _add_session_options(replay: argparse.ArgumentParser) -> None:
    """The options of ``replay`` that set the session's parameters (the node's of the same
    meaning: :data:`_REPLAY_PARAMETERS`, :data:`_REPLAY_FLAGS`)."""
    replay.add_argument(
        "--update-rate",
        type=float,
        metavar="HZ",
        help="updates (process + solve) per second of bag time (2, the node's "
        "update_rate_hz; --params-file: the file's)",
    )
    replay.add_argument(
        "--window-sec",
        type=float,
        metavar="SEC",
        help="sliding window (10, the node's window_sec; --params-file: the file's)",
    )
    replay.add_argument(
        "--method", choices=sorted(METHOD_NAMES), help="identification method (lmi)"
    )
    replay.add_argument(
        "--no-offset", action="store_true", help="do not estimate the F/T sensor offset"
    )
    replay.add_argument(
        "--flip-wrench-sign",
        action="store_true",
        help="the sensor reports the wrench the body exerts on it",
    )
    common.add_ft_calibration_option(replay)
    replay.add_argument(
        "--max-input-rate",
        type=float,
        metavar="HZ",
        help="sizes the window's buffers (1000, the node's max_input_rate_hz)",
    )
    replay.add_argument(
        "--no-change-detection",
        action="store_true",
        help="do not detect payload changes (the node's detect_payload_change)",
    )
    replay.add_argument(
        "--change-threshold",
        type=float,
        metavar="H",
        help="CUSUM alarm level of the payload-change detector "
        f"({PAYLOAD_CHANGE_THRESHOLD:g}, the node's "
        "payload_change_threshold)",
    )


REFUSED_LINE = "REFUSED: the final estimate cannot be trusted (see the messages on stderr)"
"""The summary's last line when a finding refuses the final estimate (exit 3)."""

_REPLAY_PARAMETERS = {
    "urdf": "urdf_path",
    "joint_states_topic": "joint_states_topic",
    "update_rate": "update_rate_hz",
    "window_sec": "window_sec",
    "method": "method",
    "max_input_rate": "max_input_rate_hz",
    "sensor_frame": "sensor_frame",
    "wrench_topic": "wrench_topic",
    "change_threshold": "payload_change_threshold",
    "ft_calibration": "wrench_calibration_file",
}
"""replay's options -> the node parameters they set."""
_REPLAY_FLAGS = {
    "no_offset": ("estimate_offset", False),
    "flip_wrench_sign": ("flip_wrench_sign", True),
    "no_change_detection": ("detect_payload_change", False),
}
"""replay's flags -> the node parameter and the value they set."""


def _overrides(args: argparse.Namespace) -> dict[str, Any]:
    """The node parameters of ``-p NAME:=VALUE`` (YAML values), then of the options
    (:data:`_REPLAY_PARAMETERS`, :data:`_REPLAY_FLAGS`); ``--urdf`` wins over a
    ``robot_description``."""
    import yaml

    values: dict[str, Any] = {}
    for entry in args.param:
        name, separator, text = entry.partition(":=")
        if not separator or not name.strip():
            raise InputError(f"-p {entry!r}: give NAME:=VALUE")
        try:
            values[name.strip()] = yaml.safe_load(text)
        except yaml.YAMLError as e:
            raise InputError(f"-p {entry!r}: not a YAML value: {e}".replace("\n", " ")) from None
    values.update(
        {
            parameter: getattr(args, option)
            for option, parameter in _REPLAY_PARAMETERS.items()
            if getattr(args, option) is not None
        }
    )
    values.update(setting for flag, setting in _REPLAY_FLAGS.items() if getattr(args, flag))
    if args.urdf is not None:
        values["robot_description"] = ""
    return values


def _check(args: argparse.Namespace) -> None:
    """Refuse option values and combinations the replay cannot take."""
    if args.update_rate is not None and not args.update_rate > 0:
        raise InputError(f"--update-rate must be > 0 Hz, got {args.update_rate}")
    if args.change_threshold is not None and not args.change_threshold > 0:
        raise InputError(f"--change-threshold must be > 0, got {args.change_threshold}")
    if args.params_file is None and (args.param or args.node_name != "inertia_id"):
        raise InputError("-p and --node-name only apply to --params-file")
    if args.input is not None and (
        args.joint_states_topic is not None or args.wrench_topic is not None
    ):
        raise InputError(
            "--joint-states-topic and --wrench-topic apply to a bag; an --input "
            "description names its topics itself"
        )


def run(args: argparse.Namespace) -> int:
    """Replay the bag or the described log; the exit code."""
    from inertia_id_ros.formats.source import LogSource
    from inertia_id_ros.jobs.replay import ReplayOptions, replay_with_parameters

    _check(args)
    given = {option for mode in modes.modes() for option in mode.replay_options}
    options = ReplayOptions(
        args.truth,
        tuple(sorted(o for o in given if getattr(args, o, None) not in (None, False))),
        args.node_name,
    )
    result = replay_with_parameters(
        LogSource(bag=args.bag, input=args.input), args.params_file, _overrides(args), options
    )
    if result.estimate is None and result.refused:  # the input, before any estimate
        return print_result("replay", result, args.json)
    if args.csv:
        write_output(args.csv, result.write_csv)
    if result.estimate is None:
        print_findings("replay", result.findings)
        if result.last_status in DATA_LIMITED:
            raise InputError(result.no_estimate)
        print(f"inertia-id replay: {result.no_estimate}", file=sys.stderr)
        return EXIT_NO_ESTIMATE
    print_findings("replay", result.findings)
    write_json(args.json, result.document)
    if args.png:
        write_output(args.png, result.write_png)
    code = EXIT_IMPLAUSIBLE if result.refused else 0
    written = result.written({"csv": args.csv, "json": args.json, "png": args.png})
    print_summary(list(result.summary), code, written, REFUSED_LINE)
    return code
