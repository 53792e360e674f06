"""``inertia-id validate``: a result's prediction errors on held-out data vs the URDF and plain
OLS, as its mode predicts them: the validate job (:mod:`inertia_id_ros.jobs.validate`)."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from inertia_id_ros.cli import common
from inertia_id_ros.errors import InputError
from inertia_id_ros.options import (
    DEFAULT_HALF_WIDTH,
    DEFAULT_JOINT_STATES_TOPIC,
    DEFAULT_WRENCH_TOPIC,
)

if TYPE_CHECKING:
    from inertia_id_ros.offline.validation import DataSource


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    """The ``validate`` command on ``subparsers``."""
    parser = common.add_command(
        subparsers,
        "validate",
        run,
        help="prediction errors of a result on held-out data (vs the URDF and plain OLS)",
    )
    parser.add_argument("result", help="result JSON of fit-links, fit-payload or replay")
    source = parser.add_mutually_exclusive_group(required=True)
    source.add_argument("--data", metavar="HELD_OUT", help="held-out data, .npz or .csv")
    source.add_argument("--bag", help="held-out ROS 2 bag")
    source.add_argument(
        "--input",
        metavar="YAML",
        help="input description of a real log (docs/how-to/real-logs.md): its "
        "held-out part (held_out, held_out_from), else all of it; with a "
        "split, OLS is also fitted on its training part",
    )
    common.add_urdf_option(parser, required=False)
    common.add_ft_calibration_option(parser)
    parser.add_argument(
        "--train",
        metavar="TRAIN",
        help="training data (file or bag): also evaluate plain OLS fitted on them",
    )
    common.add_json_option(parser, "the errors")
    parser.add_argument("--png", metavar="OUT", help="plot measured vs predicted to OUT (PNG)")
    parser.add_argument(
        "--joint-states-topic", help=f"JointState topic of bags ({DEFAULT_JOINT_STATES_TOPIC})"
    )
    parser.add_argument(
        "--wrench-topic", help=f"WrenchStamped topic of bags ({DEFAULT_WRENCH_TOPIC})"
    )
    parser.add_argument(
        "--filter-half-width",
        type=common.positive_seconds,
        default=None,
        metavar="SEC",
        help="half-width of the differentiation when ddq is not "
        "recorded (s; default: the result's filter, else "
        f"{DEFAULT_HALF_WIDTH})",
    )


def _described(
    args: argparse.Namespace, topics: dict, train: DataSource | None
) -> tuple[DataSource, DataSource | None]:
    """``(held_out, train)`` read through an input description (``--input``, or ``--data`` or
    ``--bag`` with ``--ft-calibration``): its held-out part and training part when it splits,
    else all of it and ``--train``."""
    from inertia_id_ros.cli.common import load_urdf_model, log_source
    from inertia_id_ros.formats.recording import load_recording, split_recording
    from inertia_id_ros.offline.validation import DataSource

    if args.urdf is None:
        raise InputError(
            f"{'--input' if args.input else '--ft-calibration'} needs --urdf (the log's joints "
            "are mapped to the URDF's)"
        )
    model = load_urdf_model(args.urdf)
    source = log_source(args)
    description = source.description(topics["sensor_frame"] or None)
    recording = load_recording(description, list(model.names)[1:], args.urdf)
    fit_part, held_out = split_recording(recording, description)
    if held_out is None:
        return DataSource(source.path, **topics, recording=fit_part), train
    if train is not None:
        raise InputError("--train: the --input description splits off its own training part")
    return (
        DataSource(f"{source.path} (held out)", **topics, recording=held_out),
        DataSource(source.path, **topics, recording=fit_part),
    )


def _sensor_frame(result: dict) -> str:
    """The F/T sensor frame of a payload result (one body with a frame), else ""."""
    bodies = result.get("bodies", [])
    return bodies[0].get("frame", "") if len(bodies) == 1 else ""


def run(args: argparse.Namespace) -> int:
    """Print (and write) the errors; the exit code."""
    from inertia_id_ros.formats.export import read_result
    from inertia_id_ros.jobs.validate import validate
    from inertia_id_ros.offline.validation import DataSource, differentiation_of

    result = read_result(args.result, InputError)
    topics = {
        "joint_states_topic": args.joint_states_topic or DEFAULT_JOINT_STATES_TOPIC,
        "wrench_topic": args.wrench_topic or DEFAULT_WRENCH_TOPIC,
        **differentiation_of(result, args.filter_half_width),
        "sensor_frame": _sensor_frame(result),
    }
    train = None if args.train is None else DataSource.from_path(args.train, args.urdf, **topics)
    if args.input is not None or args.ft_calibration is not None:
        held_out, train = _described(args, topics, train)
    else:
        held_out = (
            DataSource(args.bag, True, **topics)
            if args.bag
            else DataSource(args.data, False, **topics)
        )
    validation = validate(result, held_out, args.urdf, train)
    common.write_json(args.json, validation.document)
    if args.png:
        common.write_output(args.png, validation.write_png)
    common.print_summary(list(validation.summary), 0, [args.json, args.png])
    return 0
