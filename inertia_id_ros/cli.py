"""``inertia-id``: the command line.

Subcommands:

- ``fit-payload``: the payload beyond an F/T sensor from recorded joint states and wrenches, with
  the node's estimator (:class:`~inertia_id_ros.online.payload_estimator.PayloadEstimator`);
- ``fit-links``: the links of a chain (and joint friction, offset, armature) from recorded joint
  states and efforts (:func:`~inertia_id_ros.chain.identify.identify_links`: derivative filter,
  joint weighting and prior weight chosen on the data, reported);
- ``fit-whole-body``: every link of a floating-base robot from an IMU and several F/T sensors
  (:func:`~inertia_id_ros.chain.whole_body_fit.fit_whole_body`; data:
  :mod:`inertia_id_ros.io.whole_body`);
- ``traversaro``: Traversaro et al. 2016's Table I reproduced in simulation
  (:mod:`inertia_id_ros.sim.traversaro2016`);
- ``demo``: the live demo (simulator, node and client over DDS); see :mod:`inertia_id_ros.ros.demo`;
- ``replay``: a ROS 2 bag through the node's estimator, update by update in bag time, to CSV, JSON
  and a PNG report (:mod:`inertia_id_ros.io.replay`, :mod:`inertia_id_ros.io.report`); with
  ``--params-file`` the session the node builds from its parameter file (payload or whole_body
  mode: a whole-body replay's JSON has fit-whole-body's fields for the final estimate and one
  record per update);
- ``record-sim``: a bag of the simulated Panda (joint states, wrenches, URDF) to replay, written
  directly (no DDS);
- ``sim-whole-body``: an NPZ of a simulated floating-base robot (iCub, Go1; iCub suspended or on
  a stand) with its truth (:mod:`inertia_id_ros.sim.whole_body`), or a ROS 2 bag of it to replay
  (``--bag``);
- ``export``: a result's body into a new URDF (a link's ``<inertial>``) and a gravity-compensation
  filter parameter file, UR/franka/KUKA payload settings (:mod:`inertia_id_ros.io.export`);
- ``excite``: design an exciting motion (payload or links) into a trajectory NPZ
  (:mod:`inertia_id_ros.motion.design`);
- ``validate``: a result's prediction errors on held-out data vs the URDF and plain OLS
  (:mod:`inertia_id_ros.io.validate`).

Recorded data: NPZ or CSV files (``--data``) or ROS 2 bags (``--bag``), see
:mod:`inertia_id_ros.io.data`.
``--json OUT`` writes the result::

    {"method": str,
     "bodies": [{"name", "frame", "mass", "com": [3], "inertia_com": [ixx, ixy, ixz, iyy, iyz, izz],
                 "theta": [10], "fully_consistent": bool, "min_pseudo_inertia_eig": float}],
     "sensor_offset": [6],        # fit-payload only: [fx, fy, fz, tx, ty, tz] (N, N m)
     "joints": [{"name", "viscous", "coulomb", "coulomb_velocity", "offset", "armature"}],
                                  # fit-links only
     "residual_rms": float, "samples": int, "solve_time_s": float,
     "updates": [{...}]}           # replay only: one record per update, keys replay.CSV_COLUMNS

SI units; ``theta`` about and in ``frame`` (:mod:`inertia_id_ros.core.inertia` order), ``com`` in that
frame, ``inertia_com`` about the COM with that frame's axes (both ``null`` when the mass is not
positive). fit-payload: one body, ``"payload"`` in the sensor frame; ``residual_rms`` of the wrench
fit (N and N m rows mixed); recorded ``ddq`` is not used (the estimator differentiates, as live).
replay: as fit-payload, for the final estimate. record-sim ``--truth-json``: the simulated payload
(``"method": "truth"``).
fit-links: one body per identified joint, named and framed by the URDF link it moves (the link's
frame is the joint's); predicted torque = RNEA(theta) + viscous dq + coulomb s(dq) + offset +
armature ddq with s = tanh(dq / coulomb_velocity) (sign(dq) if coulomb_velocity is 0);
``residual_rms`` the joint torque RMS (N m); missing ``dq``/``ddq`` are differentiated (the filter
chosen by cross-validation unless ``--filter-half-width``). fit-links also writes
``"differentiation"`` (the filter: ``source``, ``half_width_s``, ``order``, ``window_samples``,
``selection`` with every candidate's score), ``"prior_weight"`` and ``"prior_weight_selection"``,
``"weighting"`` (``kind``, per-joint ``weights`` and ``sigma``); ``validate`` differentiates
held-out data with the result's filter.

Exit codes: 0 done; 1 no estimate (solver failure, or the estimator's result was not physically
consistent); 2 bad input (arguments, URDF, data, or data that cannot determine the estimate), with
one line on stderr.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pinocchio as pin

from inertia_id_ros.errors import InputError
from inertia_id_ros.io.data import (
    DEFAULT_JOINT_STATES_TOPIC,
    DEFAULT_WRENCH_TOPIC,
    JointStates,
    PayloadRecording,
    check_joints,
    check_wrench_frame,
    read_joint_bag,
    read_joint_file,
    read_payload_bag,
    read_payload_file,
)
from inertia_id_ros.errors import DataError
from inertia_id_ros.online.payload_estimator import EstimatorConfig, PayloadEstimator
from inertia_id_ros.errors import EstimateUnavailable, SampleRejected
from inertia_id_ros.io.export import (
    DEFAULT_FILTER_CHAIN,
    EXPORT_MODES,
    DEFAULT_GRAVITY,
    IdentifiedBody,
    body_json,
    export_urdf,
    gravity_compensation_yaml,
    read_body,
    root_link,
    write_payload_formats,
)
from inertia_id_ros.errors import ExportError
from inertia_id_ros.io.validate import DEFAULT_HALF_WIDTH, add_validate_parser, validate_after_fit
from inertia_id_ros.chain.friction import JointDrive
from inertia_id_ros.core.inertia import inertia_from_theta
from inertia_id_ros.core.kinematics import SensorKinematics
from inertia_id_ros.chain.differentiation import (SOURCE_POSITIONS, SOURCE_VELOCITIES,
                                                  DifferentiationFilter, sample_period)
from inertia_id_ros.chain.identify import DEFAULT_WEIGHTING, identify_links
from inertia_id_ros.chain.links import LinkModel, torque_error
from inertia_id_ros.core.weighting import WEIGHTINGS
from inertia_id_ros.core.robots import load_model, reduce_model
from inertia_id_ros.core.whole_body import BASE_KINDS
from inertia_id_ros.chain.whole_body_fit import (DEFAULT_PRIOR_WEIGHT as WHOLE_BODY_PRIOR_WEIGHT,
                                                 DEFAULT_WEIGHTING as WHOLE_BODY_WEIGHTING,
                                                 WHOLE_BODY_METHODS, fit_whole_body,
                                                 holdout_comparison)
from inertia_id_ros.io.whole_body import (DEFAULT_IMU_TOPIC, read_whole_body_bag,
                                          read_whole_body_file, whole_body_inputs,
                                          whole_body_json)
from inertia_id_ros.errors import ConfigError, ExcitationRefused, FrameNotFound, JointNotFound
from inertia_id_ros.solvers import METHODS
from inertia_id_ros.motion.collision import DEFAULT_CHECK_RATE_HZ, SelfCollisionChecker
from inertia_id_ros.io.information import recording_information
from inertia_id_ros.motion.design import (DEFAULT_COLLISION_MARGIN, DEFAULT_MAX_ACCELERATION,
                                          TARGETS, design_excitation, motion_limits)
from inertia_id_ros.motion.run import check_speed_scale
from inertia_id_ros.errors import ProblemError, SolverError

EXIT_NO_ESTIMATE = 1
EXIT_BAD_INPUT = 2
FEED_BLOCK_SEC = 0.5
"""Recorded samples are fed to the estimator in time order, this many seconds at a time, with a
``process()`` after each block (bounded buffers, as live)."""
_DATA_LIMITED = ("too_few_samples", "offset_not_identifiable")
"""Reasons of :class:`EstimateUnavailable` that mean the data cannot determine the estimate."""


# ---- shared --------------------------------------------------------------------------------


def _load_model(urdf: str) -> pin.Model:
    try:
        return load_model(urdf)
    except (FileNotFoundError, ValueError) as e:
        raise InputError(str(e)) from None


def _body_lines(body: dict[str, Any]) -> list[str]:
    """Human summary of a ``bodies`` entry."""
    lines = [f"  mass      {body['mass']:.4f} kg"]
    if body["com"] is not None:
        com = ", ".join(f"{1e3 * c:.2f}" for c in body["com"])
        inertia = ", ".join(f"{1e3 * i:.4f}" for i in body["inertia_com"])
        lines += [f"  COM       [{com}] mm",
                  f"  inertia about the COM [ixx, ixy, ixz, iyy, iyz, izz]: [{inertia}] 1e-3 kg m²"]
    verdict = "yes" if body["fully_consistent"] else "NO"
    lines.append(f"  fully physically consistent: {verdict} "
                 f"(λmin(J) = {body['min_pseudo_inertia_eig']:.3e} kg m²)")
    return lines


def _dropped_text(dropped: dict[str, int]) -> str:
    """``{"gap": 3, "no_joint_state": 11}`` -> ``"3 gap, 11 no_joint_state"``."""
    return ", ".join(f"{count} {reason}" for reason, count in sorted(dropped.items()))


def _write_json(path: str | None, result: dict[str, Any]) -> None:
    if path is None:
        return
    try:
        Path(path).write_text(json.dumps(result, indent=2) + "\n")
    except OSError as e:
        raise InputError(f"cannot write {path}: {e.strerror or e}") from None


def _data_source(args: argparse.Namespace) -> None:
    """Reject bag-only options without ``--bag``."""
    if args.data is not None:
        topics = [name for name in ("joint_states_topic", "wrench_topic")
                  if getattr(args, name, None) is not None]
        if topics:
            options = ", ".join("--" + name.replace("_", "-") for name in topics)
            raise InputError(f"{options} only apply to --bag")


# ---- fit-payload ---------------------------------------------------------------------------


def feed_estimator(estimator: PayloadEstimator, recording: PayloadRecording) -> None:
    """Add every joint state and wrench of ``recording`` to ``estimator`` in time order, in blocks
    of :data:`FEED_BLOCK_SEC`, processing after each block. Rejected samples are counted by the
    estimator (``estimator.dropped``)."""
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
                estimator.add_joint_state(states.t[i], names, states.q[i],
                                          None if states.dq is None else states.dq[i])
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
        raise InputError(f"--method {args.method} needs the payload's CAD values as a prior: "
                         "give --prior RESULT.json or --prior-link LINK (of --prior-urdf URDF, "
                         "default --urdf)") from None


def _payload_prior(args: argparse.Namespace, model: pin.Model) -> np.ndarray | None:
    """The prior of ``--prior`` or ``--prior-link`` (``None`` without one)."""
    from inertia_id_ros.io.prior import prior_from_link, prior_from_result

    try:
        if args.prior:
            return prior_from_result(args.prior, args.sensor_frame)
        if args.prior_link:
            prior_model = _load_model(args.prior_urdf) if args.prior_urdf else model
            return prior_from_link(prior_model, args.prior_link, args.sensor_frame)
    except ConfigError as e:
        raise InputError(f"prior: {e}") from None
    return None


def _fit_payload(args: argparse.Namespace) -> int:
    _data_source(args)
    _check_prior_options(args)
    if args.data is not None:
        recording = read_payload_file(args.data)
    else:
        recording = read_payload_bag(args.bag,
                                     args.joint_states_topic or DEFAULT_JOINT_STATES_TOPIC,
                                     args.wrench_topic or DEFAULT_WRENCH_TOPIC)
    model = _load_model(args.urdf)
    try:
        kinematics = SensorKinematics(model, args.sensor_frame)
    except (FrameNotFound, ValueError) as e:
        raise InputError(str(e)) from None
    check_joints(recording.joint_states, list(model.names)[1:], kinematics.joint_names,
                 recording.source)
    check_wrench_frame(recording, args.sensor_frame)
    prior = _payload_prior(args, model)
    n_wrenches = recording.wrenches.t.size
    span = max(recording.joint_states.t[-1], recording.wrenches.t[-1]) - min(
        recording.joint_states.t[0], recording.wrenches.t[0])
    try:
        config = EstimatorConfig(window_sec=args.window_sec or span + 1.0, method=args.method,
                                 estimate_offset=not args.no_offset,
                                 filter_half_width=args.filter_half_width or DEFAULT_HALF_WIDTH,
                                 weighting=args.weighting,
                                 window_capacity=n_wrenches, prior=prior)
    except ValueError as e:
        raise InputError(str(e)) from None
    estimator = PayloadEstimator(kinematics, config)
    feed_estimator(estimator, recording)
    try:  # a baseline such as ols may be inconsistent: reported, flagged, never hidden
        estimate = estimator.solve(require_consistent=False)
    except EstimateUnavailable as e:
        dropped = estimator.stats().dropped
        detail = f" (samples dropped: {_dropped_text(dropped)})" if dropped else ""
        if e.reason in _DATA_LIMITED:
            raise InputError(f"{recording.source}: no estimate: {e.message}{detail}") from None
        print(f"inertia-id fit-payload: no estimate: {e.message}", file=sys.stderr)
        return EXIT_NO_ESTIMATE
    body = body_json("payload", args.sensor_frame, estimate.theta)
    result = {"method": estimate.method, "bodies": [body],
              "sensor_offset": estimate.sensor_offset.tolist(),
              "residual_rms": estimate.residual_rms, "samples": estimate.n_samples,
              "solve_time_s": estimate.solve_time}
    _write_json(args.json, result)
    dropped = estimator.stats().dropped
    offset = estimate.sensor_offset
    lines = [f"fit-payload ({estimate.method}): {estimate.n_samples} wrench samples over "
             f"{estimate.t_last - estimate.t_first:.1f} s from {recording.source}"
             + (f"; dropped {_dropped_text(dropped)}" if dropped else ""),
             f"payload beyond {args.sensor_frame!r}, in that frame:", *_body_lines(body)]
    if prior is not None:
        lines.append(f"  prior {args.prior or args.prior_link!r}: mass {prior[0]:.4f} kg")
    if config.estimate_offset:
        lines.append("  F/T offset [" + ", ".join(f"{v:.3f}" for v in offset[:3]) + "] N, ["
                     + ", ".join(f"{v:.4f}" for v in offset[3:]) + "] N m")
    lines.append(f"  residual rms {estimate.residual_rms:.4g}, solve time "
                 f"{estimate.solve_time:.3f} s" + (f" ({estimate.message})" if estimate.message
                                                   else ""))
    if args.json:
        lines.append(f"wrote {args.json}")
    print("\n".join(lines))
    validate_after_fit(args, result)
    return 0


# ---- fit-links -----------------------------------------------------------------------------


def _link_model(model: pin.Model, states: JointStates, joints: list[str],
                coulomb_velocity: float | None) -> LinkModel:
    """The chain of ``joints``; the other joints locked at their mean recorded positions (those
    not recorded at the model's neutral position)."""
    locked = {name: value for name, value in states.mean_positions().items() if name not in joints}
    try:
        return LinkModel(reduce_model(model, joints, locked),
                         JointDrive(coulomb_velocity=coulomb_velocity or 0.0))
    except (JointNotFound, ValueError) as e:
        raise InputError(str(e)) from None


def _fit_links(args: argparse.Namespace) -> int:
    _data_source(args)
    if args.data is not None:
        states = read_joint_file(args.data)
        source = args.data
    else:
        states = read_joint_bag(args.bag, args.joint_states_topic or DEFAULT_JOINT_STATES_TOPIC)
        source = args.bag
    model = _load_model(args.urdf)
    joints = ([name.strip() for name in args.joints.split(",") if name.strip()] if args.joints
              else list(states.joint_names))
    if len(set(joints)) != len(joints):
        raise InputError(f"--joints lists a joint twice: {args.joints}")
    check_joints(states, list(model.names)[1:], joints, source)
    if args.coulomb_velocity is not None and args.coulomb_velocity < 0:
        raise InputError(f"--coulomb-velocity must be >= 0 rad/s, got {args.coulomb_velocity}")
    if args.prior_weight is not None and args.prior_weight < 0:
        raise InputError(f"--prior-weight must be >= 0, got {args.prior_weight}")
    if args.filter_half_width is not None and not args.filter_half_width > 0:
        raise InputError(f"--filter-half-width must be > 0 s, got {args.filter_half_width}")
    links = _link_model(model, states, joints, args.coulomb_velocity)
    differentiation = None
    if args.filter_half_width is not None:
        differentiation = DifferentiationFilter(
            SOURCE_VELOCITIES if states.dq is not None else SOURCE_POSITIONS,
            args.filter_half_width, args.filter_order, sample_period(states.t))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", RuntimeWarning)
        try:
            identification = identify_links(
                links, states.t, states.q, states.dq, states.ddq, states.effort,
                states.joint_names, method=args.method, weighting=args.weighting,
                prior_weight=args.prior_weight, differentiation=differentiation,
                estimate_tilt=not args.no_tilt, select_coulomb=args.coulomb_velocity is None,
                torque_delay=args.torque_delay)
        except (ProblemError, SolverError) as e:
            print(f"inertia-id fit-links: no estimate: {e}", file=sys.stderr)
            return EXIT_NO_ESTIMATE
        except ValueError as e:
            raise DataError(f"{source}: {e}") from None
    for warning in caught:
        print(f"inertia-id fit-links: warning: {warning.message}", file=sys.stderr)
    fit, data, links = identification.fit, identification.data, identification.model
    errors = torque_error(links, fit.x, data)
    bodies = [body_json(link, link, theta)
              for link, theta in zip(links.link_names, fit.link_parameters)]
    drive = links.drive_parameters(fit.x)
    joint_entries = [{"name": joint, "viscous": drive[joint]["viscous"],
                      "coulomb": drive[joint]["coulomb"],
                      "coulomb_velocity": joint_drive.coulomb_velocity,
                      "offset": drive[joint]["offset"], "armature": drive[joint]["armature"]}
                     for joint, joint_drive in zip(links.joint_names, links.drives)]
    result = {"method": args.method, "bodies": bodies, "joints": joint_entries,
              "residual_rms": errors.overall, "samples": data.n_samples,
              "solve_time_s": float(fit.solution.solve_time), **identification.as_json()}
    _write_json(args.json, result)
    lines = [f"fit-links ({args.method}, prior weight {fit.prior_weight:.3g}): {data.n_samples} "
             f"samples of {len(links.joint_names)} joints from {source}; solver "
             f"{fit.solution.status!r} in {fit.solution.solve_time:.2f} s",
             *identification.summary_lines(),
             f"{'link':<20}{'mass (kg)':>10}{'COM (mm)':>26}{'λmin(J)':>12}  consistent"]
    for body in bodies:
        com = ("" if body["com"] is None
               else " ".join(f"{1e3 * c:8.1f}" for c in body["com"]))
        lines.append(f"{body['name']:<20}{body['mass']:10.3f}{com:>26}"
                     f"{body['min_pseudo_inertia_eig']:12.2e}  "
                     f"{'yes' if body['fully_consistent'] else 'NO'}")
    lines.append(f"{'joint':<20}{'viscous':>10}{'coulomb':>10}{'offset':>10}{'armature':>10}"
                 f"{'rms (N m)':>11}")
    for entry, rms in zip(joint_entries, errors.per_joint):
        lines.append(f"{entry['name']:<20}{entry['viscous']:10.4f}{entry['coulomb']:10.4f}"
                     f"{entry['offset']:10.4f}{entry['armature']:10.4f}{rms:11.4f}")
    lines.append(f"joint torque rms {errors.overall:.4f} N m; all links fully consistent: "
                 f"{'yes' if fit.fully_consistent else 'NO'}")
    if args.json:
        lines.append(f"wrote {args.json}")
    print("\n".join(lines))
    validate_after_fit(args, result)
    return 0


# ---- fit-whole-body ------------------------------------------------------------------------


def _link_lines(result: dict[str, Any]) -> list[str]:
    """The table of a whole-body result's links and its sensor offsets."""
    lines = [f"{'link':<22}{'mass (kg)':>10}{'λmin(J)':>12}  consistent  identifiability"]
    for body in result["bodies"]:
        lines.append(f"{body['name']:<22}{body['mass']:10.3f}{body['min_pseudo_inertia_eig']:12.2e}"
                     f"  {'yes' if body['fully_consistent'] else 'NO ':<10}  "
                     f"{body['identifiability']}")
    for frame, offset in result["sensor_offsets"].items():
        lines.append(f"offset {frame:<20} " + " ".join(f"{v:8.3f}" for v in offset))
    return lines


def _cmd_fit_whole_body(args: argparse.Namespace) -> int:
    if args.prior_weight < 0:
        raise InputError(f"--prior-weight must be >= 0, got {args.prior_weight}")
    bodies = [b.strip() for b in args.bodies.split(",") if b.strip()] if args.bodies else None
    if args.data is not None:
        if args.ft or args.imu_topic or args.joint_states_topic:
            raise InputError("--ft, --imu-topic and --joint-states-topic only apply to --bag")
        recording = read_whole_body_file(args.data)
    else:
        topics = [entry.rsplit("=", 1) for entry in args.ft or []]
        if not topics or any(len(t) != 2 for t in topics):
            raise InputError("--bag needs --ft TOPIC=KIND for every F/T sensor (KIND: contact "
                             f"or internal), got {args.ft}")
        recording = read_whole_body_bag(
            args.bag, [(topic, kind) for topic, kind in topics],
            args.joint_states_topic or DEFAULT_JOINT_STATES_TOPIC,
            None if args.base != "floating" and not args.imu_topic
            else args.imu_topic or DEFAULT_IMU_TOPIC, args.filter_half_width)
    for topic, count in recording.uncovered.items():
        print(f"inertia-id fit-whole-body: warning: {topic!r} does not cover {count} stamps "
              f"(stopped or not started): their rows are dropped", file=sys.stderr)
    model, samples = whole_body_inputs(recording, args.urdf, args.base, bodies,
                                       args.filter_half_width,
                                       flip_wrench_sign=args.flip_wrench_sign or ())
    if args.holdout is not None and not 0.0 < args.holdout < 1.0:
        raise InputError(f"--holdout must be in (0, 1), got {args.holdout}")
    efforts = args.efforts and samples.efforts is not None
    if not model.channels(efforts):
        raise InputError(f"--base {model.base} with contact F/T sensors only"
                         + ("" if efforts else " and no joint efforts")
                         + ": no rows to fit (a fixed base has no base rows; give internal "
                           "sensors or --efforts with recorded efforts)")
    holdout = None
    try:
        if args.holdout is None:
            fit = fit_whole_body(model, samples, args.method, prior_weight=args.prior_weight,
                                 with_efforts=efforts, weighting=args.weighting)
        else:
            fit, holdout = holdout_comparison(model, samples, args.holdout, args.method,
                                              args.prior_weight, efforts, args.weighting)
    except (ProblemError, SolverError) as e:
        print(f"inertia-id fit-whole-body: no estimate: {e}", file=sys.stderr)
        return EXIT_NO_ESTIMATE
    result = whole_body_json(model, fit, args.method, fit.solve_time, efforts)
    if holdout is not None:
        result["holdout"] = {"fraction": args.holdout, "rms": holdout}
    _write_json(args.json, result)
    lines = [f"fit-whole-body ({args.method}, {model.base} base): {fit.n_samples} samples, "
             f"{model.n_bodies} links, {len(model.sensors)} F/T sensors from "
             f"{args.data or args.bag}; "
             f"solve {fit.solve_time:.3f} s ({fit.solution.status}); "
             f"{fit.identifiability.rank} of {fit.identifiability.n_params} base parameters; "
             f"weighting {args.weighting}",
             *_link_lines(result)]
    inconsistent = sum(not body["fully_consistent"] for body in result["bodies"])
    lines.append(f"residual rms {fit.residual_rms:.4f}; inconsistent links: {inconsistent}")
    if fit.weights is not None:
        weighting = result["weighting"]
        lines.append(f"weights ({weighting['iterations']} fits; residual std per row, N or N m): "
                     + ", ".join(f"{name} {w:.3g} ({weighting['sigma'][name]:.3g})"
                                 for name, w in weighting["weights"].items()))
    if holdout is not None:
        lines.append(f"held-out last {100 * args.holdout:g} %: RMS error of the predicted wrenches "
                     f"(force N / torque N m); the OLS fit leaves "
                     f"{next(iter(holdout.values()))['ols_inconsistent_links']} links inconsistent")
        columns = [k for k in ("fit", "urdf", "urdf_offsets", "ols")
                   if k in next(iter(holdout.values()))["force"]]
        titles = {"fit": args.method, "urdf": "URDF", "urdf_offsets": "URDF+offsets",
                  "ols": "OLS"}
        lines.append(f"{'rows':<22}" + "".join(f"{titles[k]:>18}" for k in columns)
                     + f"{'fit/URDF':>10}{'fit/OLS':>9}")
        for group, row in holdout.items():
            f, t = row["force"], row["torque"]
            lines.append(f"{group:<22}" + "".join(f"{f[k]:9.3f}/{t[k]:<8.3f}" for k in columns)
                         + f"{f['fit'] / f['urdf']:10.3f}{f['fit'] / f['ols']:9.3f}")
    if args.json:
        lines.append(f"wrote {args.json}")
    print("\n".join(lines))
    return 0


# ---- traversaro, demo ----------------------------------------------------------------------


def _traversaro(args: argparse.Namespace) -> int:
    from inertia_id_ros.sim import traversaro2016
    from inertia_id_ros.sim.payload import DEFAULT_WRENCH_NOISE_STD

    if args.trials < 1 or not args.noise_scale >= 0:
        raise InputError("--trials must be >= 1 and --noise-scale >= 0")
    noise = args.noise_scale * DEFAULT_WRENCH_NOISE_STD
    print(traversaro2016.format_table(traversaro2016.run(seed=args.seed, wrench_noise_std=noise)))
    if args.trials > 1:
        summary = traversaro2016.run_trials(args.seed, args.trials, wrench_noise_std=noise)
        print("\n" + traversaro2016.format_trials(summary))
    return 0


def _demo(args: argparse.Namespace) -> int:
    if not (np.isfinite(args.duration) and args.duration >= 0.0):
        raise InputError(f"--duration must be >= 0 s (0: the default), got {args.duration}")
    try:
        check_speed_scale(args.speed_scale)
    except ExcitationRefused as e:
        raise InputError(f"--speed-scale: {e}") from None
    from inertia_id_ros.ros.demo import run_demo, run_excite_demo  # ROS only where needed

    if args.excite:
        return run_excite_demo(duration=args.duration or 15.0, speed_scale=args.speed_scale,
                               trajectory_file=args.trajectory, method=args.method,
                               seed=args.seed)
    return run_demo(motion_sec=args.duration or 30.0, method=args.method, seed=args.seed)


# ---- replay, record-sim --------------------------------------------------------------------


def _json_ready(value: Any) -> Any:
    """NaN -> None (strict JSON)."""
    return None if isinstance(value, float) and not np.isfinite(value) else value


_REPLAY_PARAMETERS = {"urdf": "urdf_path", "joint_states_topic": "joint_states_topic",
                      "update_rate": "update_rate_hz", "window_sec": "window_sec",
                      "method": "method", "max_input_rate": "max_input_rate_hz",
                      "sensor_frame": "sensor_frame", "wrench_topic": "wrench_topic",
                      "change_threshold": "payload_change_threshold"}
"""replay's options -> the node parameters they set (with --params-file)."""
_REPLAY_FLAGS = {"no_offset": ("estimate_offset", False),
                 "flip_wrench_sign": ("flip_wrench_sign", True),
                 "no_change_detection": ("detect_payload_change", False)}
"""replay's flags -> the node parameter and the value they set (with --params-file)."""
_PAYLOAD_REPLAY_OPTIONS = ("sensor_frame", "wrench_topic", "change_threshold", "no_offset",
                           "flip_wrench_sign", "no_change_detection", "png", "truth")
"""replay's options that only apply to a payload replay."""


def _replay_with_parameters(args: argparse.Namespace) -> Any:
    """The replay of the session the node builds from ``--params-file`` (overridden by ``-p``
    and the options of :data:`_REPLAY_PARAMETERS` and :data:`_REPLAY_FLAGS`): a
    :class:`~inertia_id_ros.io.replay.Replay` (payload) or
    :class:`~inertia_id_ros.io.replay.WholeBodyReplay`."""
    import yaml

    from inertia_id_ros.errors import StartupError
    from inertia_id_ros.io.replay import (bag_robot_description, replay_payload_bag,
                                          replay_whole_body_bag)
    from inertia_id_ros.ros.parameters import (build_session, parameters_from_file,
                                               settings_from_parameters)

    try:
        values = parameters_from_file(args.params_file, args.node_name)
    except ConfigError as e:
        raise InputError(str(e)) from None
    for entry in args.param:
        name, separator, text = entry.partition(":=")
        if not separator or not name.strip():
            raise InputError(f"-p {entry!r}: give NAME:=VALUE")
        try:
            values[name.strip()] = yaml.safe_load(text)
        except yaml.YAMLError as e:
            raise InputError(f"-p {entry!r}: not a YAML value: {e}".replace("\n", " ")) from None
    values.update({parameter: getattr(args, option)
                   for option, parameter in _REPLAY_PARAMETERS.items()
                   if getattr(args, option) is not None})
    values.update(setting for flag, setting in _REPLAY_FLAGS.items() if getattr(args, flag))
    if args.urdf is not None:
        values["robot_description"] = ""
    elif not values.get("urdf_path") and not values.get("robot_description"):
        values["robot_description"] = bag_robot_description(args.bag) or ""
        if not values["robot_description"]:
            raise InputError(f"{args.bag}: no /robot_description in the bag and no urdf_path "
                             f"in {args.params_file}; give --urdf")
    try:
        settings = settings_from_parameters(values)
        if settings.mode not in ("payload", "whole_body"):
            raise InputError(f"{args.params_file}: replay runs the payload and whole_body "
                             f"modes, not {settings.mode!r}")
        payload_only = [f"--{option.replace('_', '-')}" for option in _PAYLOAD_REPLAY_OPTIONS
                        if getattr(args, option) not in (None, False)]
        if settings.mode == "whole_body" and payload_only:
            raise InputError(f"{', '.join(payload_only)} only apply to payload replays")
        session = build_session(settings)
    except StartupError as e:
        raise InputError(f"{args.params_file}: {e}") from None
    except (TypeError, ValueError) as e:  # a value of the wrong type (the file or -p)
        raise InputError(f"{args.params_file}: a parameter has a value of the wrong type: "
                         f"{e}") from None
    if settings.mode == "payload":
        return replay_payload_bag(args.bag, session, settings.update_rate_hz,
                                  settings.joint_states_topic, settings.wrench_topic)
    return replay_whole_body_bag(args.bag, session, settings.update_rate_hz,
                                 settings.joint_states_topic, settings.imu_topic,
                                 dict(zip(settings.ft_topics, settings.ft_frames)))


def _replay(args: argparse.Namespace) -> int:
    from inertia_id_ros.io.replay import (WholeBodyReplay, change_record, replay_bag,
                                          update_record, write_csv)

    if args.update_rate is not None and not args.update_rate > 0:
        raise InputError(f"--update-rate must be > 0 Hz, got {args.update_rate}")
    truth = None if args.truth is None else _read_body(args.truth)
    if args.change_threshold is not None and not args.change_threshold > 0:
        raise InputError(f"--change-threshold must be > 0, got {args.change_threshold}")
    if args.params_file is None and (args.param or args.node_name != "inertia_id"):
        raise InputError("-p and --node-name only apply to --params-file")
    started = time.perf_counter()
    if args.params_file is not None:
        replay = _replay_with_parameters(args)
        if isinstance(replay, WholeBodyReplay):
            return _report_whole_body_replay(args, replay, time.perf_counter() - started)
        args.update_rate = replay.update_rate_hz
        args.window_sec = replay.config.window_sec
    else:
        args.update_rate = 2.0 if args.update_rate is None else args.update_rate
        args.window_sec = 10.0 if args.window_sec is None else args.window_sec
        settings = {"window_sec": args.window_sec, "method": args.method or "lmi",
                    "estimate_offset": not args.no_offset,
                    "flip_wrench_sign": args.flip_wrench_sign,
                    "max_input_rate_hz": (1000.0 if args.max_input_rate is None
                                          else args.max_input_rate),
                    "detect_payload_change": not args.no_change_detection,
                    "payload_change_threshold": (50.0 if args.change_threshold is None
                                                 else args.change_threshold)}
        try:
            replay = replay_bag(args.bag, args.sensor_frame, args.urdf,
                                args.joint_states_topic or DEFAULT_JOINT_STATES_TOPIC,
                                args.wrench_topic or DEFAULT_WRENCH_TOPIC, args.update_rate,
                                settings)
        except DataError:
            raise
        except (OSError, FrameNotFound, ValueError) as e:  # URDF, sensor frame, settings
            raise InputError(str(e)) from None
    if args.csv:
        _write_output(args.csv, lambda path: write_csv(replay, path))
    dropped = _dropped_text(replay.dropped)
    final = replay.final
    if final is None:
        return _replay_without_estimate(args.bag, replay.updates[-1], dropped)
    body = body_json("payload", replay.sensor_frame, final.theta)
    if args.json:
        records = [{key: _json_ready(value) for key, value in
                    update_record(update, replay.start_time).items()}
                   for update in replay.updates]
        _write_json(args.json, {
            "method": final.method, "bodies": [body],
            "sensor_offset": final.sensor_offset.tolist(), "residual_rms": final.residual_rms,
            "samples": final.n_samples, "solve_time_s": final.solve_time, "source": args.bag,
            "update_rate_hz": args.update_rate, "window_sec": args.window_sec,
            "start_time": replay.start_time, "received": replay.received,
            "dropped": replay.dropped,
            "payload_changes": [change_record(event) for event in replay.payload_changes],
            "updates": records})
    if args.png:
        from inertia_id_ros.io.report import plot_replay

        _write_output(args.png, lambda path: plot_replay(
            replay, path, None if truth is None else truth.theta))
    estimates = replay.estimates
    span = replay.updates[-1].time - replay.start_time
    first = estimates[0].time - replay.start_time
    lines = [f"replay: {len(replay.updates)} updates at {args.update_rate:g} Hz over {span:.1f} s "
             f"of {args.bag}, {len(estimates)} with an estimate"
             + (f"; dropped {dropped}" if dropped else ""),
             *[f"payload change at {event.t_detected - replay.start_time:.2f} s (onset "
               f"{event.t_onset - replay.start_time:.2f} s): the window restarted"
               for event in replay.payload_changes],
             f"first estimate after {first:.1f} s; final ({final.method}, {final.n_samples} "
              f"samples, condition number {final.condition_number:.3g}), in "
              f"{replay.sensor_frame!r}:", *_body_lines(body),
              f"  mass std {final.theta_std[0]:.2g} kg"]
    if truth is not None:
        com_error = np.linalg.norm(final.com - inertia_from_theta(truth.theta)[1])
        lines.append(f"  vs truth: mass error {final.mass - truth.theta[0]:+.2g} kg, COM error "
                     f"{1e3 * com_error:.3g} mm")
    lines += [f"wrote {path}" for path in (args.csv, args.json, args.png) if path]
    print("\n".join(lines))
    return 0


def _replay_without_estimate(bag: str, last: Any, dropped: str) -> int:
    """A replay that gave no estimate: bad input (raises :class:`InputError`, exit 2) when the
    data were too few or too poor (``last``: its last update), else the message and
    :data:`EXIT_NO_ESTIMATE`."""
    message = (f"{bag}: no estimate in the replay; last update: {last.message}"
               + (f" (samples dropped: {dropped})" if dropped else ""))
    if last.status in _DATA_LIMITED:
        raise InputError(message)
    print(f"inertia-id replay: {message}", file=sys.stderr)
    return EXIT_NO_ESTIMATE


def _report_whole_body_replay(args: argparse.Namespace, replay: Any, elapsed: float) -> int:
    """CSV, JSON and the printed summary of a whole-body replay (``elapsed``: its wall time, s);
    the exit code."""
    from inertia_id_ros.io.replay import whole_body_update_record, write_whole_body_csv
    from inertia_id_ros.io.whole_body import whole_body_estimate_json

    if args.csv:
        _write_output(args.csv, lambda path: write_whole_body_csv(replay, path))
    dropped = _dropped_text(replay.dropped)
    final = replay.final
    if final is None:
        return _replay_without_estimate(args.bag, replay.updates[-1], dropped)
    model = replay.session.estimator.model
    result = whole_body_estimate_json(model, final)
    config = replay.session.estimator.config
    failed = dict(replay.session.failed_solves)
    if args.json:
        _write_json(args.json, {
            "mode": "whole_body", **result, "source": args.bag,
            "update_rate_hz": replay.update_rate_hz, "window_sec": config.window_sec,
            "start_time": replay.start_time,
            "received": replay.received, "dropped": replay.dropped, "failed_solves": failed,
            "sensor_events": [{"time": t, "kind": kind, "message": message}
                              for t, kind, message in replay.sensor_events],
            "replay_time_s": elapsed,
            "updates": [{key: _json_ready(value) for key, value in
                         whole_body_update_record(update, replay.start_time).items()}
                        for update in replay.updates]})
    estimates = replay.estimates
    inconsistent = sum(not body["fully_consistent"] for body in result["bodies"])
    span = replay.updates[-1].time - replay.start_time
    lines = [f"replay (whole_body, {final.method}, {model.base} base): {len(replay.updates)} "
             f"updates at {replay.update_rate_hz:g} Hz over {span:.1f} s of {args.bag} in "
             f"{elapsed:.1f} s, {len(estimates)} with an estimate (every link fully "
             f"consistent), {sum(failed.values())} failed solves"
             + (f" {failed}" if failed else "") + (f"; dropped {dropped}" if dropped else ""),
             *[f"{t - replay.start_time:.2f} s: {message}"
               for t, _, message in replay.sensor_events],
             f"first estimate after {estimates[0].time - replay.start_time:.1f} s; final: "
             f"{final.n_samples} samples, {final.rank} of {final.n_params} base parameters, "
             f"solve {final.solve_time:.3f} s",
             *_link_lines(result),
             f"residual rms {final.residual_rms:.4f}; inconsistent links: {inconsistent}"]
    if args.json:
        lines.append(f"wrote {args.json}")
    if args.csv:
        lines.append(f"wrote {args.csv}")
    print("\n".join(lines))
    return 0


def _write_output(path: str, write: Callable[[str], None]) -> None:
    try:
        write(path)
    except OSError as e:
        raise InputError(f"cannot write {path}: {e.strerror or e}") from None


def _read_body(path: str, name: str | None = None) -> IdentifiedBody:
    try:
        return read_body(path, name)
    except ExportError as e:
        raise InputError(str(e)) from None


def _sim_whole_body(args: argparse.Namespace) -> int:
    from inertia_id_ros.sim.whole_body import ROBOTS, write_recording

    if not (args.duration > 0 and args.rate > 0):
        raise InputError(f"--duration and --rate must be > 0, got {args.duration}, {args.rate}")
    if args.out is None and args.bag is None:
        raise InputError("give the NPZ to write, --bag OUT, or both")
    sim = ROBOTS[args.robot](seed=args.seed)
    written = []
    if args.out is not None:
        data = write_recording(args.out, sim, args.duration, args.rate, args.with_ddq,
                               args.with_effort)
        written.append(f"{args.out} ({data['true_theta'].shape[0]} true links)")
    if args.bag is not None:
        from inertia_id_ros.io.replay import record_whole_body

        try:
            topics = record_whole_body(args.bag, sim, args.duration, args.rate, args.seed,
                                       args.storage, with_effort=args.with_effort)
        except ValueError as e:
            raise InputError(str(e)) from None
        written.append(f"{args.bag} ({args.storage}: /joint_states, /imu, "
                       f"{', '.join(topics)}, /robot_description)")
    if args.truth_urdf:
        _write_output(args.truth_urdf, lambda path: Path(path).write_text(sim.true_xml))
    print(f"wrote {' and '.join(written)}: {args.duration:g} s of the simulated {args.robot} at "
          f"{args.rate:g} Hz, {len(sim.joint_names)} joints, F/T sensors "
          f"{', '.join(f'{f} ({k})' for f, k in sim.ft_sensors)}, IMU at {sim.imu_frame}")
    return 0


def _record_sim(args: argparse.Namespace) -> int:
    from inertia_id_ros.io.replay import record_simulation
    from inertia_id_ros.sim.payload import grasped_payload_theta

    try:
        sim = record_simulation(args.out, args.duration, args.rate, args.seed, args.storage,
                                payload_change_at=args.grasp_at,
                                changed_payload=(None if args.grasp_at is None
                                                 else grasped_payload_theta()))
    except ValueError as e:
        raise InputError(str(e)) from None
    final = sim.true_theta if args.grasp_at is None else grasped_payload_theta()
    if args.truth_json:
        _write_json(args.truth_json, {
            "method": "truth", "bodies": [body_json("payload", sim.sensor_frame, final)],
            "sensor_offset": sim.true_offset.tolist()})
    n = int(round(args.duration * args.rate))
    print(f"wrote {args.out} ({args.storage}): {args.duration:g} s of the simulated Panda at "
          f"{args.rate:g} Hz, {n} joint states on {DEFAULT_JOINT_STATES_TOPIC}, {n} wrenches on "
          f"{DEFAULT_WRENCH_TOPIC} in {sim.sensor_frame!r}, the URDF on /robot_description; "
          f"payload {sim.true_theta[0]:g} kg"
          + ("" if args.grasp_at is None else
             f", {final[0]:g} kg from {args.grasp_at:g} s on (a grasp)")
          + (f"; truth (the final payload) in {args.truth_json}" if args.truth_json else ""))
    return 0


# ---- export --------------------------------------------------------------------------------


def _export(args: argparse.Namespace) -> int:
    if not (args.urdf_out or args.gravity_yaml or args.payload_formats):
        raise InputError("nothing to write: give --urdf-out, --gravity-yaml or --payload-formats")
    if args.urdf_out and not (args.urdf and args.link):
        raise InputError("--urdf-out needs --urdf (the robot) and --link (the link to write)")
    if not args.urdf_out and (args.link or args.mode != "replace"):
        raise InputError("--link and --mode only apply to --urdf-out")
    body = _read_body(args.json, args.body)
    urdf_xml = None
    if args.urdf:
        try:
            urdf_xml = Path(args.urdf).read_text()
        except OSError as e:
            raise InputError(f"cannot read {args.urdf}: {e.strerror or e}") from None
    lines = []
    try:
        world = args.world_frame or (root_link(urdf_xml) if urdf_xml and args.gravity_yaml
                                     else None)
        if args.gravity_yaml and world is None:
            raise InputError("--gravity-yaml needs --world-frame (or --urdf: its root link)")
        if args.urdf_out:
            theta = export_urdf(args.urdf, args.urdf_out, args.link, body, args.mode)
            mass, com, _ = inertia_from_theta(theta)
            lines.append(f"wrote {args.urdf_out}: link {args.link!r} inertial ({args.mode}) "
                         f"{mass:.4f} kg at [" + ", ".join(f"{1e3 * c:.2f}" for c in com)
                         + "] mm in the link frame")
        if args.gravity_yaml:
            gravity = (_load_model(args.urdf).gravity.linear if urdf_xml
                       else DEFAULT_GRAVITY)
            text = gravity_compensation_yaml(body, world, gravity, args.node, args.chain)
            try:
                Path(args.gravity_yaml).write_text(text)
            except OSError as e:
                raise InputError(f"cannot write {args.gravity_yaml}: {e.strerror or e}") from None
            lines.append(f"wrote {args.gravity_yaml}: gravity compensation of {body.name!r} in "
                         f"{body.frame!r}, world frame {world!r}")
        if args.payload_formats:
            write_payload_formats(args.payload_formats, body, args.flange_frame, urdf_xml)
            lines.append(f"wrote {args.payload_formats}: UR SetPayload, franka SetLoad, KUKA load "
                         f"data of {body.name!r} in {args.flange_frame or body.frame!r}")
    except ExportError as e:
        raise InputError(str(e)) from None
    print("\n".join(lines))
    return 0


# ---- excite --------------------------------------------------------------------------------


def _cmd_excite(args: argparse.Namespace) -> int:
    joints = [name.strip() for name in args.joints.split(",") if name.strip()]
    if not joints or len(set(joints)) != len(joints):
        raise InputError(f"--joints must list distinct joints, got {args.joints!r}")
    if (args.target == "payload") != (args.sensor_frame is not None):
        raise InputError("--sensor-frame is needed with --target payload and only then")
    try:
        start = (None if args.start is None
                 else np.array([float(v) for v in args.start.split(",")]))
    except ValueError:
        raise InputError(f"--start must be comma-separated numbers (rad), got {args.start!r}") \
            from None
    model = _load_model(args.urdf)
    try:
        limits = motion_limits(model, joints, max_acceleration=args.max_acceleration,
                               torque_limits=args.torque_limits)
        collision = (None if args.srdf is None
                     else SelfCollisionChecker(args.urdf, args.srdf))
        print(f"limits used (position margin {limits.position_margin:g} rad):")
        print("\n".join("  " + line for line in limits.table()))
        prior = None if args.from_recording is None else recording_information(
            args.from_recording, model, joints, args.target, sensor_frame=args.sensor_frame)
        result = design_excitation(model, joints, args.target, args.duration,
                                   sensor_frame=args.sensor_frame, start=start,
                                   max_acceleration=args.max_acceleration, seed=args.seed,
                                   prior_information=prior, progress=print,
                                   time_limit=args.time_limit, torque_limits=args.torque_limits,
                                   collision=collision, collision_margin=args.collision_margin)
    except (ProblemError, JointNotFound, FrameNotFound) as e:
        raise InputError(str(e)) from None
    trajectory = result.trajectory
    if result.clearance is not None:
        c = result.clearance
        print(f"self-collision: smallest distance {1e3 * c.distance:.1f} mm ({c.pair[0]} and "
              f"{c.pair[1]} at {c.time:.2f} s; convex hulls checked at "
              f"{DEFAULT_CHECK_RATE_HZ:g} Hz)")
    _write_output(args.out, trajectory.save_npz)
    print(f"achieved: {result.objective_name} {result.objective:.4g} (random start "
          f"{result.stats.initial_objective:.4g}"
          + (f", prior: the information in {args.from_recording}" if prior is not None else "")
          + f"), design time {result.stats.seconds:.1f} s")
    print(f"wrote {args.out}: {trajectory.t.size} samples of {len(joints)} joints over "
          f"{trajectory.duration:g} s ({(trajectory.t.size - 1) / trajectory.duration:g} Hz)")
    return 0


# ---- parser --------------------------------------------------------------------------------


class _Parser(argparse.ArgumentParser):
    """Usage errors as one line on stderr (exit code 2), like every other bad input."""

    def error(self, message: str) -> None:
        self.exit(EXIT_BAD_INPUT, f"{self.prog}: {message} (see {self.prog} --help)\n")


def _add_data_options(parser: argparse.ArgumentParser, wrenches: bool) -> None:
    source = parser.add_mutually_exclusive_group(required=True)
    source.add_argument("--data", help="recorded data, .npz or .csv (see inertia_id_ros.io.data)")
    source.add_argument("--bag", help="ROS 2 bag: a rosbag2 directory, or one .mcap/.db3 file")
    parser.add_argument("--joint-states-topic",
                        help="sensor_msgs/JointState topic of --bag "
                             f"({DEFAULT_JOINT_STATES_TOPIC})")
    if wrenches:
        parser.add_argument("--wrench-topic",
                            help=f"geometry_msgs/WrenchStamped topic of --bag "
                                 f"({DEFAULT_WRENCH_TOPIC})")
    parser.add_argument("--urdf", required=True, help="URDF file of the robot")
    parser.add_argument("--method", default="lmi", choices=sorted(METHODS),
                        help="identification method (lmi)")
    parser.add_argument("--json", metavar="OUT", help="write the result as JSON to OUT")
    parser.add_argument("--filter-half-width", type=float, default=None, metavar="SEC",
                        help="half-width of the zero-phase local polynomial fit that "
                             "differentiates joint states (s; fit-links: chosen by "
                             f"cross-validation, fit-payload: {DEFAULT_HALF_WIDTH})")
    parser.add_argument("--validate", metavar="DATA", help="held-out data (file or bag): print "
                                                           "the result's errors on them")


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of ``inertia-id``."""
    parser = _Parser(prog="inertia-id", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)

    payload = sub.add_parser("fit-payload", help="identify the payload beyond an F/T sensor from "
                                                 "recorded joint states and wrenches")
    _add_data_options(payload, wrenches=True)
    payload.add_argument("--sensor-frame", required=True,
                         help="URDF frame of the F/T sensor (the wrenches' frame)")
    payload.add_argument("--no-offset", action="store_true",
                         help="do not estimate the F/T sensor offset (it is calibrated out)")
    payload.add_argument("--weighting", choices=WEIGHTINGS, default="channel",
                         help="none: unweighted least squares; channel: each wrench component "
                              "weighted by its noise level from the residuals, iterated "
                              "(channel)")
    payload.add_argument("--window-sec", type=float, default=0.0, metavar="SEC",
                         help="use the newest SEC seconds of the recording (default: all)")
    payload.add_argument("--prior", metavar="RESULT",
                         help="the payload's CAD values as a prior (method cad_prior): a result "
                              "JSON of this schema, its body in --sensor-frame")
    payload.add_argument("--prior-urdf", metavar="URDF",
                         help="URDF of --prior-link (default: --urdf)")
    payload.add_argument("--prior-link", metavar="LINK",
                         help="the prior from a URDF link: its inertial and the links beyond "
                              "it, moved to --sensor-frame")
    payload.set_defaults(run=_fit_payload)

    links = sub.add_parser("fit-links", help="identify links and joint friction from recorded "
                                             "joint states and efforts")
    _add_data_options(links, wrenches=False)
    links.add_argument("--joints", help="comma-separated joints to identify (default: all "
                                        "recorded); the others are locked at their mean position")
    links.add_argument("--prior-weight", type=float, default=None,
                       help="weight of the pull toward the URDF's inertials, per torque sample "
                            "((N m)² per SI unit²; default: chosen by cross-validation)")
    links.add_argument("--weighting", choices=WEIGHTINGS, default=DEFAULT_WEIGHTING,
                       help="none: unweighted least squares; channel: each joint weighted by "
                            f"its noise level from the residuals, iterated ({DEFAULT_WEIGHTING})")
    links.add_argument("--filter-order", type=int, default=2, metavar="P",
                       help="degree of the local polynomial with --filter-half-width (2)")
    links.add_argument("--coulomb-velocity", type=float, default=None, metavar="V",
                       help="width of the Coulomb sign tanh(dq/V) (rad/s; 0: exact sign; "
                            "default: chosen by cross-validation)")
    links.add_argument("--no-tilt", action="store_true",
                       help="keep the URDF's gravity (default: estimate the base's tilt)")
    links.add_argument("--torque-delay", type=float, default=None, metavar="SEC",
                       help="delay of the efforts behind the motion (s; 0: none; default: "
                            "estimated on the data)")
    links.set_defaults(run=_fit_links)

    whole = sub.add_parser("fit-whole-body", help="identify every link of a floating-base robot "
                                                  "from an IMU and several F/T sensors")
    source = whole.add_mutually_exclusive_group(required=True)
    source.add_argument("--data", help="recorded data, .npz (see inertia_id_ros.io.whole_body)")
    source.add_argument("--bag", help="ROS 2 bag: a rosbag2 directory, or one .mcap/.db3 file")
    whole.add_argument("--ft", action="append", metavar="TOPIC=KIND",
                       help="--bag: a WrenchStamped topic and its sensor's kind (contact or "
                            "internal), once per F/T sensor; the first sets the stamps")
    whole.add_argument("--imu-topic", help=f"--bag: sensor_msgs/Imu topic ({DEFAULT_IMU_TOPIC})")
    whole.add_argument("--joint-states-topic",
                       help=f"--bag: JointState topic ({DEFAULT_JOINT_STATES_TOPIC})")
    whole.add_argument("--urdf", required=True, help="URDF file of the robot (the prior)")
    whole.add_argument("--json", metavar="OUT", help="write the result as JSON to OUT")
    whole.add_argument("--method", default="lmi", choices=WHOLE_BODY_METHODS,
                       help="identification method (lmi; ols: unconstrained baseline)")
    whole.add_argument("--base", default="floating", choices=BASE_KINDS,
                       help="floating (IMU), fixed (on a stand) or suspended (floating)")
    whole.add_argument("--bodies", help="comma-separated links to identify (default: every "
                                        "link with mass); the others keep their URDF inertials")
    whole.add_argument("--prior-weight", type=float, default=WHOLE_BODY_PRIOR_WEIGHT,
                       help="pull toward the URDF in scaled coordinates, relative to the data "
                            f"({WHOLE_BODY_PRIOR_WEIGHT:g})")
    whole.add_argument("--holdout", type=float, metavar="FRACTION",
                       help="fit on the first 1 - FRACTION of the samples and print the errors "
                            "predicting the rest, beside the URDF's and an OLS fit's")
    whole.add_argument("--efforts", action="store_true",
                       help="add joint-torque rows from the recorded 'effort'")
    whole.add_argument("--flip-wrench-sign", action="append", metavar="FRAME",
                       help="the F/T sensor at FRAME reports the opposite wrench (e.g. the real "
                            "iCub's child_to_parent sensors); repeat per sensor")
    whole.add_argument("--weighting", choices=WEIGHTINGS, default=WHOLE_BODY_WEIGHTING,
                       help="none: unweighted; channel: the base's and each sensor's force and "
                            "torque rows (and each joint's torque) weighted by their inverse "
                            f"residual variance, iterated ({WHOLE_BODY_WEIGHTING})")
    whole.add_argument("--filter-half-width", type=float, default=0.05, metavar="SEC",
                       help="half-width of the local polynomial fit that differentiates joint "
                            "states and the gyro (s; 0.05)")
    whole.set_defaults(run=_cmd_fit_whole_body)

    traversaro = sub.add_parser("traversaro", help="Traversaro et al. 2016 Table I in simulation "
                                                   "(iCub arm, OLS vs manifold vs LMI)")
    traversaro.add_argument("--seed", type=int, default=0, help="seed of paths and noise (0)")
    traversaro.add_argument("--trials", type=int, default=1,
                            help="also count inconsistent estimates over this many seeds (1)")
    traversaro.add_argument("--noise-scale", type=float, default=1.0,
                            help="F/T noise as a multiple of the simulator's default (1)")
    traversaro.set_defaults(run=_traversaro)

    demo = sub.add_parser("demo", help="live demo: simulated Panda, node and client over DDS")
    demo.add_argument("--duration", type=float, default=0.0,
                      help="seconds of motion (30; --excite: 15)")
    demo.add_argument("--excite", action="store_true",
                      help="the load-identification wizard: the robot at rest, one ~/excite call "
                           "(ramp in, motion, ramp out, identify on the motion's samples)")
    demo.add_argument("--trajectory", default="",
                      help="--excite: a trajectory NPZ (from 'inertia-id excite') instead of a "
                           "motion designed on the spot")
    demo.add_argument("--speed-scale", type=float, default=1.0,
                      help="--excite: fraction of the motion's speed, (0, 1] (1)")
    demo.add_argument("--method", default="lmi", help="identification method (lmi)")
    demo.add_argument("--seed", type=int, default=0, help="seed of trajectory and noise (0)")
    demo.set_defaults(run=_demo)

    replay = sub.add_parser("replay", help="run the node's estimator over a ROS 2 bag, update by "
                                           "update in bag time; CSV, JSON, PNG report")
    replay.add_argument("bag", help="ROS 2 bag: a rosbag2 directory, or one .mcap/.db3 file")
    replay.add_argument("--params-file", metavar="YAML",
                        help="the node's ROS 2 parameter file (e.g. config/icub_whole_body.yaml): "
                             "replay the session the node would run with it (its mode: payload "
                             "or whole_body); the options below override its values")
    replay.add_argument("--node-name", default="inertia_id",
                        help="--params-file: the node whose entries to read (inertia_id)")
    replay.add_argument("-p", "--param", action="append", default=[], metavar="NAME:=VALUE",
                        help="--params-file: set a node parameter (VALUE in YAML), as ros2 run's "
                             "-p; repeatable")
    replay.add_argument("--sensor-frame", help="URDF frame of the F/T sensor (default: the "
                                               "wrenches' frame_id)")
    replay.add_argument("--urdf", help="URDF file of the robot (default: /robot_description "
                                       "in the bag; --params-file: its urdf_path, else the bag's)")
    replay.add_argument("--joint-states-topic",
                        help=f"sensor_msgs/JointState topic ({DEFAULT_JOINT_STATES_TOPIC})")
    replay.add_argument("--wrench-topic",
                        help=f"geometry_msgs/WrenchStamped topic ({DEFAULT_WRENCH_TOPIC})")
    replay.add_argument("--update-rate", type=float, metavar="HZ",
                        help="updates (process + solve) per second of bag time (2, the node's "
                             "update_rate_hz; --params-file: the file's)")
    replay.add_argument("--window-sec", type=float, metavar="SEC",
                        help="sliding window (10, the node's window_sec; --params-file: the "
                             "file's)")
    replay.add_argument("--method", choices=sorted(METHODS),
                        help="identification method (lmi)")
    replay.add_argument("--no-offset", action="store_true",
                        help="do not estimate the F/T sensor offset")
    replay.add_argument("--flip-wrench-sign", action="store_true",
                        help="the sensor reports the wrench the body exerts on it")
    replay.add_argument("--max-input-rate", type=float, metavar="HZ",
                        help="sizes the window's buffers (1000, the node's max_input_rate_hz)")
    replay.add_argument("--no-change-detection", action="store_true",
                        help="do not detect payload changes (the node's detect_payload_change)")
    replay.add_argument("--change-threshold", type=float, metavar="H",
                        help="CUSUM alarm level of the payload-change detector (50, the node's "
                             "payload_change_threshold)")
    replay.add_argument("--csv", metavar="OUT", help="write every update to OUT (CSV)")
    replay.add_argument("--json", metavar="OUT", help="write the final estimate and every update "
                                                      "to OUT (JSON)")
    replay.add_argument("--png", metavar="OUT", help="write the report to OUT (PNG)")
    replay.add_argument("--truth", metavar="JSON", help="result JSON of the true payload (e.g. "
                                                        "record-sim --truth-json), drawn dashed")
    replay.set_defaults(run=_replay)

    record = sub.add_parser("record-sim", help="write a ROS 2 bag of the simulated Panda "
                                               "(no DDS) to replay")
    record.add_argument("out", help="bag to create (a rosbag2 directory; must not exist)")
    record.add_argument("--duration", type=float, default=20.0, help="seconds of motion (20)")
    record.add_argument("--rate", type=float, default=1000.0, metavar="HZ",
                        help="joint-state and wrench rate (1000)")
    record.add_argument("--seed", type=int, default=0, help="seed of trajectory and noise (0)")
    record.add_argument("--storage", default="mcap", choices=("mcap", "sqlite3"),
                        help="bag storage (mcap)")
    record.add_argument("--grasp-at", type=float, metavar="SEC",
                        help="switch to another payload (a 2.3 kg box) SEC s into the motion")
    record.add_argument("--truth-json", metavar="OUT",
                        help="write the simulated (final) payload as a result JSON to OUT")
    record.set_defaults(run=_record_sim)

    whole = sub.add_parser("sim-whole-body", help="write an NPZ of a simulated floating-base robot "
                                                  "(joints, IMU, F/T sensors; truth included)")
    whole.add_argument("out", nargs="?", help="NPZ file to write")
    whole.add_argument("--bag", metavar="OUT",
                       help="also (or only) write a ROS 2 bag (a new directory) with the "
                            "simulator node's topics, to replay (inertia-id replay "
                            "--params-file config/<robot>_whole_body.yaml)")
    whole.add_argument("--storage", default="mcap", choices=("mcap", "sqlite3"),
                       help="--bag: storage (mcap)")
    whole.add_argument("--robot", default="icub",
                       choices=("icub", "go1", "icub_suspended", "icub_fixed"),
                       help="icub: on one sole, six internal F/T sensors; go1: four foot "
                            "contacts; icub_suspended: hanging from a crane F/T sensor (icub); "
                            "icub_fixed: on a stand (fit with --base fixed)")
    whole.add_argument("--duration", type=float, default=60.0, help="seconds of motion (60)")
    whole.add_argument("--rate", type=float, default=200.0, metavar="HZ", help="sample rate (200)")
    whole.add_argument("--seed", type=int, default=0, help="seed of truth, motion and noise (0)")
    whole.add_argument("--with-ddq", action="store_true", help="also write the true ddq")
    whole.add_argument("--with-effort", action="store_true", help="also write joint efforts")
    whole.add_argument("--truth-urdf", metavar="OUT", help="write the true robot's URDF to OUT")
    whole.set_defaults(run=_sim_whole_body)

    export = sub.add_parser("export", help="write an identified body into a new URDF and/or a "
                                           "gravity-compensation filter parameter file")
    export.add_argument("--json", required=True, metavar="RESULT",
                        help="result JSON (fit-payload, fit-links, replay, record-sim)")
    export.add_argument("--body", help="body of the result to export (default: the only one)")
    export.add_argument("--urdf", help="URDF of the robot (read only)")
    export.add_argument("--link", help="link whose <inertial> to write")
    export.add_argument("--urdf-out", metavar="OUT", help="the new URDF to write")
    export.add_argument("--mode", default="replace", choices=EXPORT_MODES,
                        help="replace the link's inertial, or add the body to it (replace)")
    export.add_argument("--gravity-yaml", metavar="OUT",
                        help="write control_toolbox GravityCompensationWrench parameters to OUT")
    export.add_argument("--world-frame", help="world_frame of the filter (default: the URDF's "
                                              "root link)")
    export.add_argument("--node", default="/**",
                        help="node name the parameters are for (/**: any)")
    export.add_argument("--chain", default=DEFAULT_FILTER_CHAIN,
                        help=f"filter chain parameter name ({DEFAULT_FILTER_CHAIN})")
    export.add_argument("--payload-formats", metavar="OUT",
                        help="write UR SetPayload, franka SetLoad and KUKA load data (YAML, with "
                             "the ros2 service call lines) to OUT")
    export.add_argument("--flange-frame", help="flange frame of --payload-formats (default: the "
                                               "body's frame; another needs --urdf)")
    export.set_defaults(run=_export)

    excite = sub.add_parser("excite", help="design an exciting motion for identifying a payload "
                                           "or the links (rest to rest, within the limits)")
    excite.add_argument("--urdf", required=True, help="URDF file of the robot")
    excite.add_argument("--joints", required=True,
                        help="comma-separated joints to move, in URDF order")
    excite.add_argument("--target", required=True, choices=TARGETS,
                        help="what the motion identifies: the payload beyond --sensor-frame, or "
                             "the links (with joint friction and armature)")
    excite.add_argument("--sensor-frame", help="URDF frame of the F/T sensor (--target payload)")
    excite.add_argument("--duration", type=float, required=True, metavar="SEC",
                        help="seconds of motion")
    excite.add_argument("--out", required=True, metavar="TRAJ.npz",
                        help="trajectory to write (keys t, joint_names, q, dq, ddq; 100 Hz)")
    excite.add_argument("--start", metavar="Q1,...",
                        help="start and end pose (rad; default: the middle of the limits)")
    excite.add_argument("--max-acceleration", type=float, default=DEFAULT_MAX_ACCELERATION,
                        metavar="A", help="acceleration limit of every joint "
                                          f"(rad/s²; {DEFAULT_MAX_ACCELERATION:g})")
    excite.add_argument("--seed", type=int, default=0, help="seed of the initial motion (0)")
    excite.add_argument("--from", dest="from_recording", metavar="RECORDING",
                        help="recording (.npz/.csv) whose information the motion adds to")
    excite.add_argument("--torque-limits", action="store_true",
                        help="also keep the URDF links' torques within the effort limits")
    excite.add_argument("--srdf", help="SRDF of the robot: keep the self-collision distance of "
                                       "the pairs it leaves (URDF collision geometry) >= "
                                       "--collision-margin")
    excite.add_argument("--collision-margin", type=float, default=DEFAULT_COLLISION_MARGIN,
                        metavar="M", help="smallest self-collision distance with --srdf "
                                          f"(m; {DEFAULT_COLLISION_MARGIN:g})")
    excite.add_argument("--time-limit", type=float, metavar="SEC",
                        help="optimisation time (default: 40 payload, 240 links)")
    excite.set_defaults(run=_cmd_excite)

    add_validate_parser(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    """Entry point; returns the exit code (2 on bad input, with one line on stderr)."""
    try:
        args = build_parser().parse_args(argv)
    except SystemExit as e:  # argparse: --help (0) or a usage error (2), already printed
        return int(e.code or 0)
    try:
        return args.run(args)
    except (InputError, DataError) as e:
        print(f"inertia-id {args.command}: {e}", file=sys.stderr)
        return EXIT_BAD_INPUT


if __name__ == "__main__":
    sys.exit(main())
