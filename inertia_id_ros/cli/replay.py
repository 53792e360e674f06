"""``inertia-id replay``: a ROS 2 bag (or a log an input description reads: ``--input``) through
the node's estimator, update by update in bag time, to CSV, JSON and a PNG report
(:mod:`inertia_id_ros.offline.replay`, :mod:`inertia_id_ros.offline.report`); with
``--params-file`` the session the node builds from its parameter file, in any mode with a replay
(:meth:`~inertia_id_ros.modes.Mode.replay`). The input's units and the final estimate's
plausibility findings are printed (:mod:`inertia_id_ros.offline.plausibility`); exit 3 when one
refuses it, as the fit commands."""

from __future__ import annotations

import argparse
import math
import sys
import time
from typing import Any

from inertia_id_ros import modes
from inertia_id_ros.cli.common import (
    DATA_LIMITED,
    EXIT_NO_ESTIMATE,
    body_lines,
    dropped_text,
    load_urdf_model,
    print_summary,
    report_findings,
    whole_body_table,
    write_json,
    write_output,
)
from inertia_id_ros.errors import CallerError, InputError
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
    # read_log's window, split and held-joint flags: none for a replay (--input's description
    # gives them)
    replay.set_defaults(run=run, t_start=None, t_end=None, held_out_from=None, hold=None)


REFUSED_LINE = "REFUSED: the final estimate cannot be trusted (see the messages on stderr)"
"""The summary's last line when a finding refuses the final estimate (exit 3)."""


def _json_ready(value: Any) -> Any:
    """NaN -> None (strict JSON)."""
    return None if isinstance(value, float) and not math.isfinite(value) else value


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
}
"""replay's options -> the node parameters they set (with --params-file)."""
_REPLAY_FLAGS = {
    "no_offset": ("estimate_offset", False),
    "flip_wrench_sign": ("flip_wrench_sign", True),
    "no_change_detection": ("detect_payload_change", False),
}
"""replay's flags -> the node parameter and the value they set (with --params-file)."""


def _replay_with_parameters(args: argparse.Namespace) -> Any:
    """The replay of the session the node builds from ``--params-file`` (overridden by ``-p``
    and the options of :data:`_REPLAY_PARAMETERS` and :data:`_REPLAY_FLAGS`): the mode's
    (:meth:`~inertia_id_ros.modes.Mode.replay`: a
    :class:`~inertia_id_ros.offline.replay.ReplayUpdates`) of the bag or of ``--input``'s log."""
    import yaml

    from inertia_id_ros.errors import StartupError
    from inertia_id_ros.modes.base import load_robot, urdf_file
    from inertia_id_ros.modes.parameters import (
        build_session,
        parameters_from_file,
        settings_from_parameters,
    )
    from inertia_id_ros.offline.replay import bag_robot_description

    values = parameters_from_file(args.params_file, args.node_name)
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
    elif not values.get("urdf_path") and not values.get("robot_description"):
        bag = args.bag if args.input is None else _description_bag(args.input)
        values["robot_description"] = (bag and bag_robot_description(bag)) or ""
        if not values["robot_description"]:
            raise InputError(
                f"{bag or args.input}: no /robot_description in the bag and no "
                f"urdf_path in {args.params_file}; give --urdf"
            )
    try:
        settings = settings_from_parameters(values)
        mode = modes.get(settings.mode)
        if not mode.has_replay:
            replayable = [m.name for m in modes.modes() if m.has_replay]
            raise InputError(
                f"{args.params_file}: replay runs the {', '.join(replayable)} "
                f"modes, not {settings.mode!r}"
            )
        others = {
            option: m.name
            for m in modes.modes()
            for option in m.replay_options
            if option not in mode.replay_options
            and getattr(args, option, None) not in (None, False)
        }
        if others:
            raise InputError(
                f"{', '.join('--' + o.replace('_', '-') for o in others)} only apply "
                f"to {' and '.join(sorted(set(others.values())))} replays"
            )
        session = build_session(settings)
        log = args.bag
        if args.input is not None:
            with urdf_file(settings) as urdf:
                log = _read_input(args, load_robot(settings), urdf)
    except StartupError as e:
        raise InputError(f"{args.params_file}: {e}") from None
    except (TypeError, ValueError) as e:  # a value of the wrong type (the file or -p)
        raise InputError(
            f"{args.params_file}: a parameter has a value of the wrong type: {e}"
        ) from None
    return mode.replay(log, session, settings)


def _description_bag(path: str) -> str | None:
    """The first bag the input description ``path`` reads (``None`` if it reads none)."""
    from inertia_id_ros.formats.description import InputDescription

    streams = InputDescription.from_yaml(path).streams.values()
    return next((str(stream.file) for stream in streams if stream.is_bag), None)


def _read_input(args: argparse.Namespace, model: Any, urdf: str) -> Any:
    """The log of ``--input`` for the robot ``model`` (URDF file ``urdf``), as the fit commands
    read it (:func:`~inertia_id_ros.cli.common.read_log`: its window and training part)."""
    from inertia_id_ros.cli.common import read_log

    if args.joint_states_topic is not None or args.wrench_topic is not None:
        raise InputError(
            "--joint-states-topic and --wrench-topic apply to a bag; an --input "
            "description names its topics itself"
        )
    return read_log(args, model, urdf)[0]


def run(args: argparse.Namespace) -> int:
    """Replay the bag or the described log; the exit code."""
    from inertia_id_ros.findings import refused
    from inertia_id_ros.formats.export import read_body
    from inertia_id_ros.offline.replay import LinksReplay, WholeBodyReplay, replay_bag

    if args.update_rate is not None and not args.update_rate > 0:
        raise InputError(f"--update-rate must be > 0 Hz, got {args.update_rate}")
    truth = None if args.truth is None else read_body(args.truth)
    if args.change_threshold is not None and not args.change_threshold > 0:
        raise InputError(f"--change-threshold must be > 0, got {args.change_threshold}")
    if args.params_file is None and (args.param or args.node_name != "inertia_id"):
        raise InputError("-p and --node-name only apply to --params-file")
    started = time.perf_counter()
    if args.params_file is not None:
        replay = _replay_with_parameters(args)
    else:
        args.window_sec = 10.0 if args.window_sec is None else args.window_sec
        settings = {
            "window_sec": args.window_sec,
            "method": args.method or "lmi",
            "estimate_offset": not args.no_offset,
            "flip_wrench_sign": args.flip_wrench_sign,
            "max_input_rate_hz": (1000.0 if args.max_input_rate is None else args.max_input_rate),
            "detect_payload_change": not args.no_change_detection,
            "payload_change_threshold": (
                PAYLOAD_CHANGE_THRESHOLD if args.change_threshold is None else args.change_threshold
            ),
        }
        log = args.bag
        if args.input is not None:
            if args.urdf is None:
                raise InputError("--input needs --urdf (or --params-file with the URDF)")
            log = _read_input(args, load_urdf_model(args.urdf), args.urdf)
        try:
            replay = replay_bag(
                log,
                args.sensor_frame,
                args.urdf,
                args.joint_states_topic or DEFAULT_JOINT_STATES_TOPIC,
                args.wrench_topic or DEFAULT_WRENCH_TOPIC,
                2.0 if args.update_rate is None else args.update_rate,
                settings,
            )
        except CallerError:
            raise
        except (OSError, ValueError) as e:  # URDF, settings
            raise InputError(str(e)) from None
    elapsed = time.perf_counter() - started
    if refused(replay.input_findings):  # the fit commands refuse such input before fitting
        result = {"source": replay.source}
        code = report_findings("replay", replay.input_findings, result)
        write_json(args.json, result)
        return code
    if isinstance(replay, WholeBodyReplay):
        return _report_whole_body_replay(args, replay, elapsed)
    if isinstance(replay, LinksReplay):
        return _report_links_replay(args, replay, elapsed)
    return _report_payload_replay(args, replay, truth)


def _report_payload_replay(args: argparse.Namespace, replay: Any, truth: Any) -> int:
    """CSV, JSON, PNG and the printed summary of a payload replay (from an F/T sensor or from
    joint torques); the exit code."""
    import numpy as np

    from inertia_id_ros.core.inertia import inertia_from_theta
    from inertia_id_ros.formats.export import body_json
    from inertia_id_ros.offline.replay import change_record, update_record, write_csv

    if args.csv:
        write_output(args.csv, lambda path: write_csv(replay, path))
    if replay.final is None:
        return _replay_without_estimate(replay)
    dropped, final = dropped_text(replay.dropped), replay.final
    body = body_json("payload", replay.sensor_frame, final.theta)
    checked: dict[str, Any] = {}
    code = report_findings("replay", replay.input_findings + replay.findings, checked)
    window_sec = replay.config.window_sec
    if args.json:
        records = [
            {
                key: _json_ready(value)
                for key, value in update_record(
                    update, replay.start_time, replay.offset_names
                ).items()
            }
            for update in replay.updates
        ]
        write_json(
            args.json,
            {
                "method": final.method,
                "bodies": [body],
                **checked,
                "sensor_offset": final.sensor_offset.tolist(),
                "offset_names": list(replay.offset_names),
                "residual_rms": final.residual_rms,
                "samples": final.n_samples,
                "solve_time_s": final.solve_time,
                "source": replay.source,
                "update_rate_hz": replay.update_rate_hz,
                "window_sec": window_sec,
                "start_time": replay.start_time,
                "received": replay.received,
                "dropped": replay.dropped,
                "payload_changes": [change_record(event) for event in replay.payload_changes],
                "updates": records,
            },
        )
    if args.png:
        from inertia_id_ros.offline.report import plot_replay

        write_output(
            args.png, lambda path: plot_replay(replay, path, None if truth is None else truth.theta)
        )
    estimates = replay.estimates
    span = replay.updates[-1].time - replay.start_time
    first = estimates[0].time - replay.start_time
    lines = [
        f"replay: {len(replay.updates)} updates at {replay.update_rate_hz:g} Hz over "
        f"{span:.1f} s of {replay.source}, {len(estimates)} with an estimate"
        + (f"; dropped {dropped}" if dropped else ""),
        *[
            f"payload change at {event.t_detected - replay.start_time:.2f} s (onset "
            f"{event.t_onset - replay.start_time:.2f} s): the window restarted"
            for event in replay.payload_changes
        ],
        f"first estimate after {first:.1f} s; final ({final.method}, {final.n_samples} "
        f"samples, condition number {final.condition_number:.3g}), in "
        f"{replay.sensor_frame!r}:",
        *body_lines(body),
        f"  mass std {final.theta_std[0]:.2g} kg",
    ]
    if truth is not None:
        com_error = np.linalg.norm(final.com - inertia_from_theta(truth.theta)[1])
        lines.append(
            f"  vs truth: mass error {final.mass - truth.theta[0]:+.2g} kg, COM error "
            f"{1e3 * com_error:.3g} mm"
        )
    print_summary(lines, code, (args.csv, args.json, args.png), REFUSED_LINE)
    return code


def _replay_without_estimate(replay: Any) -> int:
    """A ``replay`` that gave no estimate: bad input (raises :class:`InputError`, exit 2) when
    the data were too few or too poor (as its last update says), else the message and
    :data:`EXIT_NO_ESTIMATE`."""
    last, dropped = replay.updates[-1], dropped_text(replay.dropped)
    message = f"{replay.source}: no estimate in the replay; last update: {last.message}" + (
        f" (samples dropped: {dropped})" if dropped else ""
    )
    if last.status in DATA_LIMITED:
        raise InputError(message)
    print(f"inertia-id replay: {message}", file=sys.stderr)
    return EXIT_NO_ESTIMATE


def _report_whole_body_replay(args: argparse.Namespace, replay: Any, elapsed: float) -> int:
    """CSV, JSON and the printed summary of a whole-body replay (``elapsed``: its wall time, s);
    the exit code."""
    from inertia_id_ros.formats.whole_body_log import whole_body_estimate_json
    from inertia_id_ros.offline.replay import whole_body_update_record, write_whole_body_csv

    if args.csv:
        write_output(args.csv, lambda path: write_whole_body_csv(replay, path))
    if replay.final is None:
        return _replay_without_estimate(replay)
    dropped, final = dropped_text(replay.dropped), replay.final
    model = replay.session.estimator.model
    result = whole_body_estimate_json(model, final)
    config = replay.session.estimator.config
    failed = dict(replay.session.failed_solves)
    checked: dict[str, Any] = {}
    code = report_findings("replay", replay.input_findings + replay.findings, checked)
    if args.json:
        write_json(
            args.json,
            {
                "mode": "whole_body",
                **result,
                **checked,
                "source": replay.source,
                "update_rate_hz": replay.update_rate_hz,
                "window_sec": config.window_sec,
                "start_time": replay.start_time,
                "received": replay.received,
                "dropped": replay.dropped,
                "failed_solves": failed,
                "sensor_events": [
                    {"time": t, "kind": kind, "message": message}
                    for t, kind, message in replay.sensor_events
                ],
                "replay_time_s": elapsed,
                "updates": [
                    {
                        key: _json_ready(value)
                        for key, value in whole_body_update_record(
                            update, replay.start_time
                        ).items()
                    }
                    for update in replay.updates
                ],
            },
        )
    estimates = replay.estimates
    inconsistent = sum(not body["fully_consistent"] for body in result["bodies"])
    span = replay.updates[-1].time - replay.start_time
    lines = [
        f"replay (whole_body, {final.method}, {model.base} base): {len(replay.updates)} "
        f"updates at {replay.update_rate_hz:g} Hz over {span:.1f} s of {replay.source} in "
        f"{elapsed:.1f} s, {len(estimates)} with an estimate (every link fully "
        f"consistent), {sum(failed.values())} failed solves"
        + (f" {failed}" if failed else "")
        + (f"; dropped {dropped}" if dropped else ""),
        *[f"{t - replay.start_time:.2f} s: {message}" for t, _, message in replay.sensor_events],
        f"first estimate after {estimates[0].time - replay.start_time:.1f} s; final: "
        f"{final.n_samples} samples, {final.rank} of {final.n_params} base parameters, "
        f"solve {final.solve_time:.3f} s",
        *whole_body_table(result),
        f"residual rms {final.residual_rms:.4f}; inconsistent links: {inconsistent}",
    ]
    print_summary(lines, code, (args.json, args.csv), REFUSED_LINE)
    return code


def _report_links_replay(args: argparse.Namespace, replay: Any, elapsed: float) -> int:
    """CSV, JSON (a fit-links result: the payload-torques mode's ``torques_links_result``) and
    the printed summary of a links replay (``elapsed``: its wall time, s); the exit code."""
    from inertia_id_ros.core.inertia import check_consistency
    from inertia_id_ros.formats.link_result import link_result_json
    from inertia_id_ros.offline.replay import links_update_record, write_links_csv

    if args.csv:
        write_output(args.csv, lambda path: write_links_csv(replay, path))
    if replay.final is None:
        return _replay_without_estimate(replay)
    dropped, final = dropped_text(replay.dropped), replay.final
    links = link_result_json(final.link_names, final.thetas, final.drives)
    bodies, joints = links["bodies"], links["joints"]
    failed = dict(replay.session.failed_solves)
    checked: dict[str, Any] = {}
    code = report_findings("replay", replay.input_findings + replay.findings, checked)
    if args.json:
        write_json(
            args.json,
            {
                "mode": "links",
                "method": final.method,
                **links,
                **checked,
                "residual_rms": final.residual_rms,
                "samples": final.n_samples,
                "rank": final.rank,
                "unidentifiable": list(final.unidentifiable),
                "solve_time_s": final.solve_time,
                "source": replay.source,
                "update_rate_hz": replay.update_rate_hz,
                "window_sec": replay.session.estimator.config.window_sec,
                "start_time": replay.start_time,
                "received": replay.received,
                "dropped": replay.dropped,
                "failed_solves": failed,
                "replay_time_s": elapsed,
                "updates": [
                    {
                        key: _json_ready(value)
                        for key, value in links_update_record(update, replay.start_time).items()
                    }
                    for update in replay.updates
                ],
            },
        )
    estimates = replay.estimates
    span = replay.updates[-1].time - replay.start_time
    consistent = all(check_consistency(theta).fully_consistent for theta in final.thetas)
    lines = [
        f"replay (links, {final.method}): {len(replay.updates)} updates at "
        f"{replay.update_rate_hz:g} Hz over {span:.1f} s of {replay.source} in "
        f"{elapsed:.1f} s, {len(estimates)} with an estimate, {sum(failed.values())} "
        "failed solves"
        + (f" {failed}" if failed else "")
        + (f"; dropped {dropped}" if dropped else ""),
        f"first estimate after {estimates[0].time - replay.start_time:.1f} s; final: "
        f"{final.n_samples} joint states, base-parameter rank {final.rank}; "
        f"{len(final.unidentifiable)} parameters the data cannot fix (the prior decides; "
        "listed in the JSON)",
        f"{'link':<20}{'mass (kg)':>10}{'COM (mm)':>26}{'λmin(J)':>12}  consistent",
    ]
    for body in bodies:
        com = "" if body["com"] is None else " ".join(f"{1e3 * c:8.1f}" for c in body["com"])
        lines.append(
            f"{body['name']:<20}{body['mass']:10.3f}{com:>26}"
            f"{body['min_pseudo_inertia_eig']:12.2e}  "
            f"{'yes' if body['fully_consistent'] else 'NO'}"
        )
    lines.append(f"{'joint':<20}{'viscous':>10}{'coulomb':>10}{'offset':>10}{'armature':>10}")
    lines += [
        f"{j['name']:<20}{j['viscous']:10.4f}{j['coulomb']:10.4f}{j['offset']:10.4f}"
        f"{j['armature']:10.4f}"
        for j in joints
    ]
    lines.append(
        f"joint torque rms {final.residual_rms:.4f} N m; all links fully consistent: "
        f"{'yes' if consistent else 'NO'}"
    )
    print_summary(lines, code, (args.json, args.csv), REFUSED_LINE)
    return code
