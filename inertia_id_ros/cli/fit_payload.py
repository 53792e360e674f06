"""``inertia-id fit-payload``: the payload beyond an F/T sensor from recorded joint states and
wrenches, with the node's estimator
(:class:`~inertia_id_ros.online.payload_estimator.PayloadEstimator`)."""

from __future__ import annotations

import argparse
import dataclasses
import sys
from typing import TYPE_CHECKING

from inertia_id_ros.cli import common
from inertia_id_ros.errors import ConfigError, EstimateUnavailable, InputError, SampleRejected
from inertia_id_ros.modes.payload import PayloadMode
from inertia_id_ros.options import (
    DEFAULT_HALF_WIDTH,
    DEFAULT_JOINT_STATES_TOPIC,
    DEFAULT_WRENCH_TOPIC,
    PAYLOAD_DEFAULT_WEIGHTING,
)

if TYPE_CHECKING:
    import numpy as np
    import pinocchio as pin

    from inertia_id_ros.formats.data import PayloadRecording
    from inertia_id_ros.online.payload_estimator import PayloadEstimator

FEED_BLOCK_SEC = 0.5
"""Recorded samples are fed to the estimator in time order, this many seconds at a time, with a
``process()`` after each block (bounded buffers, as live)."""


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    """The ``fit-payload`` command on ``subparsers``."""
    payload = common.add_command(
        subparsers,
        "fit-payload",
        run,
        help="identify the payload beyond an F/T sensor from recorded joint states and wrenches",
    )
    common.add_data_options(payload, wrenches=True, methods=PayloadMode.methods)
    payload.add_argument(
        "--sensor-frame", required=True, help="URDF frame of the F/T sensor (the wrenches' frame)"
    )
    payload.add_argument(
        "--flip-wrench-sign",
        action=argparse.BooleanOptionalAction,
        help="the sensor reports the wrench the body exerts on it (the node's "
        "flip_wrench_sign): negate the readings; --no-flip-wrench-sign: "
        "take them as they are (default: as recorded; with --input, the "
        "description's sign, by default the URDF's measure_direction)",
    )
    payload.add_argument(
        "--no-offset",
        action="store_true",
        help="do not estimate the F/T sensor offset (it is calibrated out)",
    )
    common.add_weighting_option(payload, PAYLOAD_DEFAULT_WEIGHTING, "each wrench component")
    payload.add_argument(
        "--window-sec",
        type=float,
        default=0.0,
        metavar="SEC",
        help="use the newest SEC seconds of the recording (default: all)",
    )
    payload.add_argument(
        "--prior",
        metavar="RESULT",
        help="the payload's CAD values as a prior (method cad_prior): a result "
        "JSON of this schema, its body in --sensor-frame",
    )
    payload.add_argument(
        "--prior-urdf", metavar="URDF", help="URDF of --prior-link (default: --urdf)"
    )
    payload.add_argument(
        "--prior-link",
        metavar="LINK",
        help="the prior from a URDF link: its inertial and the links beyond "
        "it, moved to --sensor-frame",
    )
    common.add_plausibility_options(payload, "the sensor frame")


def feed_estimator(estimator: PayloadEstimator, recording: PayloadRecording) -> None:
    """Add every joint state and wrench of ``recording`` to ``estimator`` in time order, in blocks
    of :data:`FEED_BLOCK_SEC`, processing after each block. Rejected samples are counted by the
    estimator (``estimator.dropped``)."""
    import numpy as np

    states, wrenches = recording.joint_states, recording.wrenches
    names = states.joint_names
    start = min(states.t[0], wrenches.t[0])
    end = max(states.t[-1], wrenches.t[-1])
    boundaries = np.append(np.arange(start, end, FEED_BLOCK_SEC)[1:], np.inf)
    joint_stops = np.searchsorted(states.t, boundaries, side="left")
    wrench_stops = np.searchsorted(wrenches.t, boundaries, side="left")
    joint_start = wrench_start = 0
    for joint_stop, wrench_stop in zip(joint_stops, wrench_stops):
        for i in range(joint_start, joint_stop):
            try:
                estimator.add_joint_state(
                    states.t[i], names, states.q[i], None if states.dq is None else states.dq[i]
                )
            except SampleRejected:
                pass
        for k in range(wrench_start, wrench_stop):
            try:
                estimator.add_wrench(wrenches.t[k], wrenches.wrench[k])
            except SampleRejected:
                pass
        joint_start, wrench_start = joint_stop, wrench_stop
        estimator.process()


def _check_prior_options(args: argparse.Namespace) -> None:
    """Refuse, before anything is read, prior options that do not fit together, and a method
    that needs a prior without one."""
    from inertia_id_ros.online.payload_estimator import check_prior_available

    if args.prior and (args.prior_urdf or args.prior_link):
        raise InputError("give either --prior or --prior-urdf/--prior-link, not both")
    if args.prior_urdf and not args.prior_link:
        raise InputError("--prior-urdf needs --prior-link (the link of the payload)")
    try:
        check_prior_available(args.method, bool(args.prior or args.prior_link))
    except ValueError:
        raise InputError(
            f"--method {args.method} needs the payload's CAD values as a prior: "
            "give --prior RESULT.json or --prior-link LINK (of --prior-urdf URDF, "
            "default --urdf)"
        ) from None


def _payload_prior(args: argparse.Namespace, model: pin.Model) -> np.ndarray | None:
    """The prior of ``--prior`` or ``--prior-link`` (``None`` without one)."""
    from inertia_id_ros.formats.prior import prior_from_link, prior_from_result

    try:
        if args.prior:
            return prior_from_result(args.prior, args.sensor_frame)
        if args.prior_link:
            prior_model = common.load_urdf_model(args.prior_urdf) if args.prior_urdf else model
            return prior_from_link(prior_model, args.prior_link, args.sensor_frame)
    except ConfigError as e:
        raise InputError(f"prior: {e}") from None
    return None


def _findings_after_fit(
    args: argparse.Namespace, estimator: PayloadEstimator, estimate, volume
) -> tuple[list, list[str], dict]:
    """``(findings, lines, JSON)`` of a payload fit: residuals against the unconstrained fit,
    the bounding volume, how well the data determine it; the JSON's ``"residual_ratios"`` and
    ``"identifiability"``."""
    from inertia_id_ros.offline.plausibility import (
        identifiability_json,
        identifiability_lines,
        payload_base_parameters,
        payload_fit_findings,
    )

    _, Y, f = estimator.window.samples(copy=False)
    findings, ratios = payload_fit_findings(
        args.sensor_frame, Y, f, estimate, estimator.config.estimate_offset, volume
    )
    bp = payload_base_parameters(Y, estimator.config.estimate_offset)
    return (
        findings,
        identifiability_lines(bp),
        {"residual_ratios": ratios, "identifiability": identifiability_json(bp)},
    )


def run(args: argparse.Namespace) -> int:
    """Fit the payload; the exit code."""
    from inertia_id_ros.cli.validate import validate_after_fit
    from inertia_id_ros.core.kinematics import SensorKinematics
    from inertia_id_ros.formats.data import (
        check_joints,
        check_wrench_frame,
        read_payload_bag,
        read_payload_file,
    )
    from inertia_id_ros.formats.export import body_json
    from inertia_id_ros.formats.units import log_unit_findings
    from inertia_id_ros.online.payload_estimator import EstimatorConfig, PayloadEstimator

    common.check_data_source(args)
    _check_prior_options(args)
    common.check_bounding_ellipsoid(args)
    model = common.load_urdf_model(args.urdf)
    train = held_out = None
    if common.uses_description(args):
        train, held_out = common.read_log(
            args, model, args.urdf, args.sensor_frame, args.flip_wrench_sign
        )
        recording = train.payload(args.sensor_frame)
    elif args.data is not None:
        recording = read_payload_file(args.data)
    else:
        recording = read_payload_bag(
            args.bag,
            args.joint_states_topic or DEFAULT_JOINT_STATES_TOPIC,
            args.wrench_topic or DEFAULT_WRENCH_TOPIC,
        )
    if args.flip_wrench_sign and train is None:
        recording = dataclasses.replace(
            recording,
            wrenches=dataclasses.replace(recording.wrenches, wrench=-recording.wrenches.wrench),
        )
    try:
        kinematics = SensorKinematics(model, args.sensor_frame)
    except ValueError as e:
        raise InputError(str(e)) from None
    held = [j for j in kinematics.joint_names if train is not None and j in train.held]
    if held:
        raise InputError(
            f"{recording.source}: held joint(s) {held} (not in the log) move the "
            f"sensor {args.sensor_frame!r}: every wrench row depends on their motion"
        )
    check_joints(
        recording.joint_states, list(model.names)[1:], kinematics.joint_names, recording.source
    )
    check_wrench_frame(recording, args.sensor_frame)
    volume = common.payload_volume_of(args)
    findings = log_unit_findings(
        recording.joint_states,
        model,
        list(kinematics.joint_names),
        {"wrench stamps": recording.wrenches.t},
    )
    code = common.report_input_findings("fit-payload", findings, args.json)
    if code:
        return code
    prior = _payload_prior(args, model)
    n_wrenches = recording.wrenches.t.size
    span = max(recording.joint_states.t[-1], recording.wrenches.t[-1]) - min(
        recording.joint_states.t[0], recording.wrenches.t[0]
    )
    try:
        config = EstimatorConfig(
            window_sec=args.window_sec or span + 1.0,
            method=args.method,
            estimate_offset=not args.no_offset,
            filter_half_width=args.filter_half_width or DEFAULT_HALF_WIDTH,
            weighting=args.weighting,
            window_capacity=n_wrenches,
            prior=prior,
            bounding_ellipsoid=(volume.ellipsoid_matrix() if args.bounding_ellipsoid else None),
        )
    except ValueError as e:
        raise InputError(str(e)) from None
    estimator = PayloadEstimator(kinematics, config)
    feed_estimator(estimator, recording)
    try:  # a baseline such as ols may be inconsistent: reported, flagged, never hidden
        estimate = estimator.solve(require_consistent=False)
    except EstimateUnavailable as e:
        dropped = estimator.stats().dropped
        detail = f" (samples dropped: {common.dropped_text(dropped)})" if dropped else ""
        if e.reason in common.DATA_LIMITED:
            raise InputError(f"{recording.source}: no estimate: {e.message}{detail}") from None
        print(f"inertia-id fit-payload: no estimate: {e.message}", file=sys.stderr)
        return common.EXIT_NO_ESTIMATE
    body = body_json("payload", args.sensor_frame, estimate.theta)
    result = {
        "method": estimate.method,
        "bodies": [body],
        "sensor_offset": estimate.sensor_offset.tolist(),
        "residual_rms": estimate.residual_rms,
        "samples": estimate.n_samples,
        "solve_time_s": estimate.solve_time,
    }
    findings, identifiability, checked = _findings_after_fit(args, estimator, estimate, volume)
    result.update(checked)
    code = common.report_findings("fit-payload", findings, result)
    common.write_json(args.json, result)
    dropped = estimator.stats().dropped
    offset = estimate.sensor_offset
    lines = [
        f"fit-payload ({estimate.method}): {estimate.n_samples} wrench samples over "
        f"{estimate.t_last - estimate.t_first:.1f} s from {recording.source}"
        + (f"; dropped {common.dropped_text(dropped)}" if dropped else ""),
        f"payload beyond {args.sensor_frame!r}, in that frame:",
        *common.body_lines(body),
    ]
    if prior is not None:
        lines.append(f"  prior {args.prior or args.prior_link!r}: mass {prior[0]:.4f} kg")
    if config.estimate_offset:
        lines.append(
            "  F/T offset ["
            + ", ".join(f"{v:.3f}" for v in offset[:3])
            + "] N, ["
            + ", ".join(f"{v:.4f}" for v in offset[3:])
            + "] N m"
        )
    lines.append(
        f"  residual rms {estimate.residual_rms:.4g}, solve time "
        f"{estimate.solve_time:.3f} s" + (f" ({estimate.message})" if estimate.message else "")
    )
    std = estimate.theta_std
    lines.append(
        f"  standard errors: mass {std[0]:.2g} kg, first moments "
        + ", ".join(f"{v:.2g}" for v in std[1:4])
        + " kg m"
    )
    lines += identifiability
    common.print_summary(lines, code, [args.json])
    if code:
        return code
    validate_after_fit(args, result, train, held_out)
    return 0
