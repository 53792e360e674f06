"""What the commands share: exit codes, reading a URDF or a result's body, writing outputs,
printing bodies, the recorded-data options of the fit commands. Imports no numpy or pinocchio
at module level (``inertia-id --help`` loads this module)."""

from __future__ import annotations

import argparse
import json
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from inertia_id_ros.errors import InputError
from inertia_id_ros.options import (
    DEFAULT_HALF_WIDTH,
    DEFAULT_JOINT_STATES_TOPIC,
    DEFAULT_WRENCH_TOPIC,
    METHOD_NAMES,
    PAYLOAD_TORQUES_HALF_WIDTH,
)

if TYPE_CHECKING:
    import pinocchio as pin

    from inertia_id_ros.io.data import JointStates
    from inertia_id_ros.io.export import IdentifiedBody
    from inertia_id_ros.io.plausibility import Finding

EXIT_NO_ESTIMATE = 1
EXIT_BAD_INPUT = 2
EXIT_IMPLAUSIBLE = 3
"""A plausibility check refused the input or the answer (:mod:`inertia_id_ros.io.plausibility`;
each refusal printed on stderr, naming the likely cause and the fix)."""
DATA_LIMITED = ("too_few_samples", "offset_not_identifiable")
"""Reasons of :class:`EstimateUnavailable` that mean the data cannot determine the estimate."""


def load_urdf_model(urdf: str) -> pin.Model:
    """The model of the URDF file ``urdf``; a missing or bad file is an :class:`InputError`."""
    from inertia_id_ros.core.robots import load_model

    try:
        return load_model(urdf)
    except (FileNotFoundError, ValueError) as e:
        raise InputError(str(e)) from None


def body_lines(body: dict[str, Any]) -> list[str]:
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


def dropped_text(dropped: dict[str, int]) -> str:
    """``{"gap": 3, "no_joint_state": 11}`` -> ``"3 gap, 11 no_joint_state"``."""
    return ", ".join(f"{count} {reason}" for reason, count in sorted(dropped.items()))


def write_json(path: str | None, result: dict[str, Any]) -> None:
    """``result`` as indented JSON to ``path`` (nothing if ``None``)."""
    if path is None:
        return
    try:
        Path(path).write_text(json.dumps(result, indent=2) + "\n")
    except OSError as e:
        raise InputError(f"cannot write {path}: {e.strerror or e}") from None


def check_data_source(args: argparse.Namespace) -> None:
    """Reject bag-only options without ``--bag``."""
    if args.data is not None:
        topics = [name for name in ("joint_states_topic", "wrench_topic")
                  if getattr(args, name, None) is not None]
        if topics:
            options = ", ".join("--" + name.replace("_", "-") for name in topics)
            raise InputError(f"{options} only apply to --bag")


def whole_body_table(result: dict[str, Any]) -> list[str]:
    """The table of a whole-body result's links and its sensor offsets."""
    lines = [f"{'link':<22}{'mass (kg)':>10}{'λmin(J)':>12}  consistent  identifiability"]
    for body in result["bodies"]:
        lines.append(f"{body['name']:<22}{body['mass']:10.3f}{body['min_pseudo_inertia_eig']:12.2e}"
                     f"  {'yes' if body['fully_consistent'] else 'NO ':<10}  "
                     f"{body['identifiability']}")
    for frame, offset in result["sensor_offsets"].items():
        lines.append(f"offset {frame:<20} " + " ".join(f"{v:8.3f}" for v in offset))
    return lines


def write_output(path: str, write: Callable[[str], None]) -> None:
    """``write(path)``; an :class:`OSError` is an :class:`InputError`."""
    try:
        write(path)
    except OSError as e:
        raise InputError(f"cannot write {path}: {e.strerror or e}") from None


def read_result_body(path: str, name: str | None = None) -> IdentifiedBody:
    """The body ``name`` of the result JSON ``path``; a bad one is an :class:`InputError`."""
    from inertia_id_ros.errors import ExportError
    from inertia_id_ros.io.export import read_body

    try:
        return read_body(path, name)
    except ExportError as e:
        raise InputError(str(e)) from None


def add_data_options(parser: argparse.ArgumentParser, wrenches: bool,
                     validate: bool = True) -> None:
    """The options of fit-payload, fit-payload-torques and fit-links: data (``--data`` or
    ``--bag``), URDF, method, JSON output, differentiation, held-out data (unless
    ``validate`` is False)."""
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
    parser.add_argument("--method", default="lmi", choices=sorted(METHOD_NAMES),
                        help="identification method (lmi)")
    parser.add_argument("--json", metavar="OUT", help="write the result as JSON to OUT")
    parser.add_argument("--filter-half-width", type=float, default=None, metavar="SEC",
                        help="half-width of the zero-phase local polynomial fit that "
                             "differentiates joint states (s; fit-links: chosen by "
                             f"cross-validation, fit-payload: {DEFAULT_HALF_WIDTH}, "
                             f"fit-payload-torques: {PAYLOAD_TORQUES_HALF_WIDTH} or the "
                             "--links-result's)")
    if validate:
        parser.add_argument("--validate", metavar="DATA",
                            help="held-out data (file or bag): print the result's errors on them")


def add_plausibility_options(parser: argparse.ArgumentParser, payload: bool) -> None:
    """``--bounding-ellipsoid`` (and for a payload its volume: ``--payload-sphere``,
    ``--payload-box``)."""
    from inertia_id_ros.options import DEFAULT_PAYLOAD_RADIUS, LINK_VOLUME_MARGIN

    if payload:
        volume = parser.add_mutually_exclusive_group()
        volume.add_argument("--payload-sphere", type=float, metavar="R",
                            help="the payload lies within R m of the sensor frame's origin "
                                 f"(checked; default {DEFAULT_PAYLOAD_RADIUS:g})")
        volume.add_argument("--payload-box", metavar="HX,HY,HZ",
                            help="the payload lies within this box about the sensor frame's "
                                 "origin, half-extents in m along its axes (checked)")
        what = "the payload's volume (--payload-sphere/--payload-box)"
    else:
        what = (f"each link's URDF collision geometry grown by {LINK_VOLUME_MARGIN:g} m (links "
                "without any: unconstrained)")
    parser.add_argument("--bounding-ellipsoid", action="store_true",
                        help="constrain each body's mass to the ellipsoid around " + what
                             + " (Wensing et al. 2017)")


def check_bounding_ellipsoid(args: argparse.Namespace) -> None:
    """Refuse ``--bounding-ellipsoid`` with a method that cannot take it."""
    if getattr(args, "bounding_ellipsoid", False) and args.method == "manifold":
        raise InputError("--bounding-ellipsoid needs --method lmi, pointmass or cad_prior "
                         "(manifold cannot take bounding ellipsoids)")


def input_findings(states: JointStates, model: pin.Model, joints: list[str],
                   extra_stamps: dict[str, Any] | None = None) -> list[Finding]:
    """Units of a recording before any fit: its stamps (and ``extra_stamps``, {what: stamps})
    and the positions of ``joints`` against the URDF limits (joints of one coordinate: a
    continuous joint's angle is not checked)."""
    import numpy as np

    from inertia_id_ros.io.plausibility import check_angle_units, check_time_units

    findings = check_time_units(states.t, "joint state stamps")
    for what, stamps in (extra_stamps or {}).items():
        findings += check_time_units(stamps, what)
    angles = [j for j in joints if model.nqs[model.getJointId(j)] == 1]  # not continuous
    columns = [states.joint_names.index(j) for j in angles]
    ids = [model.getJointId(j) for j in angles]
    lower = np.array([model.lowerPositionLimit[model.idx_qs[i]] for i in ids])
    upper = np.array([model.upperPositionLimit[model.idx_qs[i]] for i in ids])
    return findings + check_angle_units(states.q[:, columns], angles, lower, upper)


def report_findings(command: str, findings: list[Finding],
                    result: dict[str, Any] | None = None) -> int:
    """Print each finding on stderr (``inertia-id CMD: refused: ...`` / ``warning: ...``), add
    them to ``result["findings"]`` (with ``result["refused"]``); returns
    :data:`EXIT_IMPLAUSIBLE` if one refuses, else 0."""
    import sys

    from inertia_id_ros.io.plausibility import refused

    for finding in findings:
        print(f"inertia-id {command}: {finding.text()}", file=sys.stderr)
    if result is not None:
        result["findings"] = [finding.as_json() for finding in findings]
        result["refused"] = refused(findings)
    return EXIT_IMPLAUSIBLE if refused(findings) else 0
