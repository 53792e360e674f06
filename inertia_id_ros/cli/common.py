"""What the commands share: registering a command (:func:`add_command`), the options several
take (the recorded-data options of the fit commands, ``--urdf``, ``--json``, ``--seed``, ...),
exit codes, reading a URDF or a result's body, writing outputs, printing bodies. Imports no numpy
or pinocchio at module level (``inertia-id --help`` loads this module)."""

from __future__ import annotations

import argparse
import json
import math
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from inertia_id_ros.errors import DATA_LIMITED as DATA_LIMITED
from inertia_id_ros.errors import InputError
from inertia_id_ros.offline.summary import body_lines as body_lines
from inertia_id_ros.offline.summary import dropped_text as dropped_text
from inertia_id_ros.offline.summary import whole_body_table as whole_body_table
from inertia_id_ros.options import (
    ANGLE_UNITS,
    BAG_STORAGES,
    DEFAULT_HALF_WIDTH,
    DEFAULT_JOINT_STATES_TOPIC,
    DEFAULT_WRENCH_TOPIC,
    PAYLOAD_TORQUES_HALF_WIDTH,
    PAYLOAD_TORQUES_MIN_SAMPLES,
    TIME_UNITS,
    WEIGHTINGS,
)

if TYPE_CHECKING:
    import pinocchio as pin

    from inertia_id_ros.findings import Finding
    from inertia_id_ros.formats.source import LogSource
    from inertia_id_ros.jobs.base import JobResult


EXIT_NO_ESTIMATE = 1
EXIT_BAD_INPUT = 2
EXIT_IMPLAUSIBLE = 3
"""A check refused the input or the answer: a plausibility check
(:mod:`inertia_id_ros.offline.plausibility`; each refusal printed on stderr, naming the likely
cause and the fix), or ``excite``'s limits (the motion breaks one: stderr names it and the
amount)."""
ESTIMATE_REFUSED = "REFUSED: the estimate above cannot be trusted (see the messages on stderr)"
"""The summary's last word when a check refused the estimate (:func:`print_summary`)."""


def load_urdf_model(urdf: str) -> pin.Model:
    """The model of the URDF file ``urdf``; a missing or bad file is an :class:`InputError`."""
    from inertia_id_ros.core.robots import load_model

    try:
        return load_model(urdf)
    except (FileNotFoundError, ValueError) as e:
        raise InputError(str(e)) from None


def write_json(path: str | None, result: dict[str, Any]) -> None:
    """``result`` as indented JSON to ``path`` (nothing if ``None``)."""
    if path is None:
        return
    try:
        Path(path).write_text(json.dumps(result, indent=2) + "\n")
    except OSError as e:
        raise InputError(f"cannot write {path}: {e.strerror or e}") from None


def print_summary(
    lines: list[str],
    code: int = 0,
    written: Sequence[str | None] = (),
    refusal: str = ESTIMATE_REFUSED,
) -> None:
    """Print a command's summary ``lines``, then the ``refusal`` when its exit ``code`` is not 0
    (the estimate failed a check) and each file ``written`` (``None``: not written)."""
    if code:
        lines.append(refusal)
    lines += [f"wrote {path}" for path in written if path]
    print("\n".join(lines))


def comma_names(text: str) -> list[str]:
    """An argparse ``type``: the distinct names of a comma-separated option (``"a, b"`` ->
    ``["a", "b"]``)."""
    names = [name.strip() for name in text.split(",") if name.strip()]
    if not names:
        raise argparse.ArgumentTypeError(f"expected comma-separated names, got {text!r}")
    twice = sorted({name for name in names if names.count(name) > 1})
    if twice:
        raise argparse.ArgumentTypeError(f"lists {', '.join(map(repr, twice))} twice")
    return names


def comma_numbers(text: str) -> list[float]:
    """An argparse ``type``: the finite numbers of a comma-separated option (``"0.1,-2"`` ->
    ``[0.1, -2.0]``)."""
    try:
        numbers = [float(value) for value in text.split(",")]
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"expected comma-separated numbers, got {text!r}"
        ) from None
    if not all(map(math.isfinite, numbers)):
        raise argparse.ArgumentTypeError(f"expected finite numbers, got {text!r}")
    return numbers


def positive_seconds(text: str) -> float:
    """An argparse ``type``: a finite duration > 0 (s)."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected seconds, got {text!r}") from None
    if not (math.isfinite(value) and value > 0):
        raise argparse.ArgumentTypeError(f"must be > 0 s, got {text!r}")
    return value


def text_writer(text: str) -> Callable[[str], object]:
    """A writer of ``text`` to the path it is given (for :func:`write_output`)."""
    return lambda path: Path(path).write_text(text)


def write_output(path: str, write: Callable[[str], object]) -> None:
    """``write(path)``; an :class:`OSError` is an :class:`InputError`."""
    try:
        write(path)
    except OSError as e:
        raise InputError(f"cannot write {path}: {e.strerror or e}") from None


def add_command(
    subparsers: argparse._SubParsersAction,
    name: str,
    run: Callable[[argparse.Namespace], int],
    **kwargs: Any,
) -> argparse.ArgumentParser:
    """The parser of the command ``name`` on ``subparsers`` (``kwargs``: ``help``,
    ``description``), whose arguments ``run`` takes (returning the exit code)."""
    parser = subparsers.add_parser(name, **kwargs)
    parser.set_defaults(run=run)
    return parser


def add_data_options(
    parser: argparse.ArgumentParser, wrenches: bool, methods: Sequence[str], validate: bool = True
) -> None:
    """The options of fit-payload, fit-payload-torques and fit-links: data (``--data`` or
    ``--bag``), URDF, method (one of its mode's ``methods``), JSON output, differentiation,
    held-out data (unless ``validate`` is False)."""
    add_recording_options(parser, "recorded data, .npz or .csv (see inertia_id_ros.formats.data)")
    parser.add_argument(
        "--joint-states-topic",
        help=f"sensor_msgs/JointState topic of --bag ({DEFAULT_JOINT_STATES_TOPIC})",
    )
    if wrenches:
        parser.add_argument(
            "--wrench-topic",
            help=f"geometry_msgs/WrenchStamped topic of --bag ({DEFAULT_WRENCH_TOPIC})",
        )
    add_urdf_option(parser)
    parser.add_argument(
        "--method", default="lmi", choices=sorted(methods), help="identification method (lmi)"
    )
    add_json_option(parser)
    parser.add_argument(
        "--filter-half-width",
        type=positive_seconds,
        default=None,
        metavar="SEC",
        help="half-width of the zero-phase local polynomial fit that "
        "differentiates joint states (s; fit-links: chosen by "
        f"cross-validation, fit-payload: {DEFAULT_HALF_WIDTH}, "
        "fit-payload-torques: the --links-result's, else "
        f"{PAYLOAD_TORQUES_HALF_WIDTH}, at least "
        f"{PAYLOAD_TORQUES_MIN_SAMPLES + 0.5:g} sample periods)",
    )
    if validate:
        parser.add_argument(
            "--validate",
            metavar="DATA",
            help="held-out data (file or bag): print the result's errors on them",
        )


def add_recording_options(parser: argparse.ArgumentParser, data_help: str) -> None:
    """The recorded data, one of ``--data`` (``data_help``: what files), ``--bag`` and
    ``--input``, and the input-description flags (:func:`add_log_options`)."""
    source = parser.add_mutually_exclusive_group(required=True)
    source.add_argument("--data", help=data_help)
    source.add_argument("--bag", help="ROS 2 bag: a rosbag2 directory, or one .mcap/.db3 file")
    add_log_options(parser, source)


def add_urdf_option(parser: argparse.ArgumentParser, note: str = "", required: bool = True) -> None:
    """``--urdf``, the robot's URDF file; ``note``: what else it is to the command."""
    parser.add_argument(
        "--urdf", required=required, help="URDF file of the robot" + (f" ({note})" if note else "")
    )


def add_json_option(parser: argparse.ArgumentParser, what: str = "the result") -> None:
    """``--json OUT``: write ``what`` as JSON."""
    parser.add_argument("--json", metavar="OUT", help=f"write {what} as JSON to OUT")


def add_seed_option(parser: argparse.ArgumentParser, what: str) -> None:
    """``--seed`` (0) of the random ``what`` (e.g. "trajectory and noise")."""
    parser.add_argument("--seed", type=int, default=0, help=f"seed of {what} (0)")


def add_storage_option(parser: argparse.ArgumentParser, help_prefix: str) -> None:
    """``--storage`` of a bag to write (:data:`~inertia_id_ros.options.BAG_STORAGES`, the
    first by default); its help starts with ``help_prefix``."""
    parser.add_argument(
        "--storage",
        default=BAG_STORAGES[0],
        choices=BAG_STORAGES,
        help=f"{help_prefix} ({BAG_STORAGES[0]})",
    )


def add_ft_calibration_option(parser: argparse.ArgumentParser) -> None:
    """``--ft-calibration FILE``: a calibration inertia-id calibrate-ft wrote, applied to the
    F/T readings."""
    parser.add_argument(
        "--ft-calibration",
        metavar="FILE",
        help="apply the F/T calibration FILE (written by inertia-id calibrate-ft) to the "
        "sensors' readings",
    )


def add_weighting_option(parser: argparse.ArgumentParser, default: str, channel: str) -> None:
    """``--weighting`` (:data:`~inertia_id_ros.options.WEIGHTINGS`, ``default``) of a fit whose
    channels are ``channel`` (e.g. "each joint")."""
    parser.add_argument(
        "--weighting",
        choices=WEIGHTINGS,
        default=default,
        help=f"none: unweighted least squares; channel: {channel} weighted by its "
        f"noise level from the residuals, iterated ({default})",
    )


def add_log_options(
    parser: argparse.ArgumentParser, source: argparse._MutuallyExclusiveGroup
) -> None:
    """``--input`` (in the data ``source`` group) and the input-description flags: units, time
    window, train/held-out split, held joints (docs/how-to/real-logs.md)."""
    source.add_argument(
        "--input",
        metavar="YAML",
        help="input description of a real log: files or bag topics, column "
        "maps, units, clocks, windows (docs/how-to/real-logs.md)",
    )
    parser.add_argument(
        "--time-unit", choices=TIME_UNITS, help="--data: unit of the column 't' (s)"
    )
    parser.add_argument(
        "--angle-unit",
        choices=ANGLE_UNITS,
        help="--data/--bag: unit of joint positions, velocities (per s) and "
        "accelerations (per s²) (rad)",
    )
    parser.add_argument(
        "--t-start",
        type=float,
        metavar="SEC",
        help="use the samples from SEC s after the first joint sample",
    )
    parser.add_argument(
        "--t-end",
        type=float,
        metavar="SEC",
        help="use the samples up to SEC s after the first joint sample",
    )
    parser.add_argument(
        "--held-out-from",
        type=float,
        metavar="SEC",
        help="fit on the samples before SEC s (after the first joint sample) "
        "and validate on the rest",
    )
    parser.add_argument(
        "--held-out-runs",
        type=comma_names,
        metavar="RUN,...",
        help="an --input description of several runs: fit on the other runs and validate on these",
    )
    parser.add_argument(
        "--no-split",
        action="store_true",
        help="fit on all of the window: cancel the --input description's split (held_out_from, "
        "held_out, train, held_out_runs)",
    )
    parser.add_argument(
        "--hold",
        action="append",
        metavar="JOINT=VALUE",
        help="a URDF joint not in the log, held at VALUE (rad or m); repeatable",
    )


def add_plausibility_options(parser: argparse.ArgumentParser, payload_frame: str = "") -> None:
    """``--bounding-ellipsoid``; for a payload (``payload_frame``: its frame in words, e.g. "the
    sensor frame") its volume, ``--payload-sphere`` or ``--payload-box``
    (:func:`payload_volume_of`)."""
    from inertia_id_ros.options import DEFAULT_PAYLOAD_RADIUS, LINK_VOLUME_MARGIN

    if payload_frame:
        volume = parser.add_mutually_exclusive_group()
        volume.add_argument(
            "--payload-sphere",
            type=float,
            metavar="R",
            help=f"the payload lies within R m of {payload_frame}'s origin "
            f"(checked; default {DEFAULT_PAYLOAD_RADIUS:g})",
        )
        volume.add_argument(
            "--payload-box",
            metavar="HX,HY,HZ",
            type=comma_numbers,
            help=f"the payload lies within this box about {payload_frame}'s "
            "origin, half-extents in m along its axes (checked)",
        )
        what = "the payload's volume (--payload-sphere/--payload-box)"
    else:
        what = (
            f"each link's URDF collision geometry grown by {LINK_VOLUME_MARGIN:g} m (links "
            "without any: unconstrained)"
        )
    parser.add_argument(
        "--bounding-ellipsoid",
        action="store_true",
        help="constrain each body's mass to the ellipsoid around "
        + what
        + " (Wensing et al. 2017)",
    )


# ---- calling a job -------------------------------------------------------------------------


def log_source(args: argparse.Namespace) -> LogSource:
    """The recorded data of ``--data``, ``--bag`` or ``--input`` with the log flags
    (:func:`add_recording_options`); ``--hold JOINT=VALUE`` entries parsed."""
    from inertia_id_ros.formats.source import LogSource

    held = {}
    for entry in getattr(args, "hold", None) or []:
        joint, _, value = entry.partition("=")
        try:
            held[joint.strip()] = float(value)
        except ValueError:
            raise InputError(f"--hold takes JOINT=VALUE (rad or m), got {entry!r}") from None
    return LogSource(
        data=args.data,
        bag=args.bag,
        input=getattr(args, "input", None),
        joint_states_topic=getattr(args, "joint_states_topic", None),
        wrench_topic=getattr(args, "wrench_topic", None),
        time_unit=getattr(args, "time_unit", None),
        angle_unit=getattr(args, "angle_unit", None),
        t_start=getattr(args, "t_start", None),
        t_end=getattr(args, "t_end", None),
        held_out_from=getattr(args, "held_out_from", None),
        held=held,
        held_out_runs=getattr(args, "held_out_runs", None),
        no_split=bool(getattr(args, "no_split", False)),
        ft_calibration=getattr(args, "ft_calibration", None),
    )


def print_findings(command: str, findings: Sequence[Finding]) -> None:
    """Each finding on stderr: ``inertia-id CMD: refused: ...`` / ``warning: ...`` /
    ``note: ...``."""
    import sys

    for finding in findings:
        print(f"inertia-id {command}: {finding.text()}", file=sys.stderr)


def print_result(
    command: str,
    result: JobResult[Any],
    json_path: str | None,
    written: Sequence[str | None] = (),
    refusal: str = ESTIMATE_REFUSED,
) -> int:
    """A job's result as the commands show it: its findings on stderr, its document to
    ``json_path`` (nothing if ``None``), its summary (unless its input was refused before a fit),
    the refusal line and the files ``written`` (``json_path`` first) on stdout. Returns the exit
    code: :data:`EXIT_IMPLAUSIBLE` when a finding refuses, else 0."""
    print_findings(command, result.findings)
    write_json(json_path, result.document)
    code = EXIT_IMPLAUSIBLE if result.refused else 0
    if result.estimate is not None:
        print_summary(list(result.summary), code, [json_path, *written], refusal)
    return code
