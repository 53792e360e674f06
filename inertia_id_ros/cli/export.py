"""``inertia-id export``: a result's body into a new URDF (a link's ``<inertial>``) and a
gravity-compensation filter parameter file, UR/franka/KUKA payload settings
(:mod:`inertia_id_ros.formats.export`)."""

from __future__ import annotations

import argparse
from pathlib import Path

from inertia_id_ros.cli.common import add_command, load_urdf_model, text_writer, write_output
from inertia_id_ros.errors import InputError
from inertia_id_ros.options import DEFAULT_FILTER_CHAIN, EXPORT_MODES


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    """The ``export`` command on ``subparsers``."""
    export = add_command(
        subparsers,
        "export",
        run,
        help="write an identified body into a new URDF and/or a gravity-compensation filter "
        "parameter file",
    )
    export.add_argument(
        "--json",
        required=True,
        metavar="RESULT",
        help="result JSON (fit-payload, fit-links, replay, record-sim)",
    )
    export.add_argument("--body", help="body of the result to export (default: the only one)")
    export.add_argument("--urdf", help="URDF of the robot (read only)")
    export.add_argument("--link", help="link whose <inertial> to write")
    export.add_argument("--urdf-out", metavar="OUT", help="the new URDF to write")
    export.add_argument(
        "--mode",
        default="replace",
        choices=EXPORT_MODES,
        help="replace the link's inertial, or add the body to it (replace)",
    )
    export.add_argument(
        "--gravity-yaml",
        metavar="OUT",
        help="write control_toolbox GravityCompensationWrench parameters to OUT",
    )
    export.add_argument(
        "--world-frame", help="world_frame of the filter (default: the URDF's root link)"
    )
    export.add_argument("--node", default="/**", help="node name the parameters are for (/**: any)")
    export.add_argument(
        "--chain",
        default=DEFAULT_FILTER_CHAIN,
        help=f"filter chain parameter name ({DEFAULT_FILTER_CHAIN})",
    )
    export.add_argument(
        "--payload-formats",
        metavar="OUT",
        help="write UR SetPayload, franka SetLoad and KUKA load data (YAML, with "
        "the ros2 service call lines) to OUT",
    )
    export.add_argument(
        "--flange-frame",
        help="flange frame of --payload-formats (default: the body's frame; another needs --urdf)",
    )


def run(args: argparse.Namespace) -> int:
    """Write the files asked for; the exit code."""
    from inertia_id_ros.core.inertia import inertia_from_theta
    from inertia_id_ros.formats.controller_payloads import write_payload_formats
    from inertia_id_ros.formats.export import (
        DEFAULT_GRAVITY,
        export_urdf,
        gravity_compensation_yaml,
        read_body,
        root_link,
    )

    if not (args.urdf_out or args.gravity_yaml or args.payload_formats):
        raise InputError("nothing to write: give --urdf-out, --gravity-yaml or --payload-formats")
    if args.urdf_out and not (args.urdf and args.link):
        raise InputError("--urdf-out needs --urdf (the robot) and --link (the link to write)")
    if not args.urdf_out and (args.link or args.mode != "replace"):
        raise InputError("--link and --mode only apply to --urdf-out")
    body = read_body(args.json, args.body)
    urdf_xml = None
    if args.urdf:
        try:
            urdf_xml = Path(args.urdf).read_text()
        except OSError as e:
            raise InputError(f"cannot read {args.urdf}: {e.strerror or e}") from None
    lines = []
    world: str = (
        args.world_frame or (root_link(urdf_xml) if urdf_xml and args.gravity_yaml else "") or ""
    )
    if args.gravity_yaml and not world:
        raise InputError("--gravity-yaml needs --world-frame (or --urdf: its root link)")
    if args.urdf_out:
        theta = export_urdf(args.urdf, args.urdf_out, args.link, body, args.mode)
        mass, com, _ = inertia_from_theta(theta)
        lines.append(
            f"wrote {args.urdf_out}: link {args.link!r} inertial ({args.mode}) "
            f"{mass:.4f} kg at ["
            + ", ".join(f"{1e3 * c:.2f}" for c in com)
            + "] mm in the link frame"
        )
    if args.gravity_yaml:
        gravity = load_urdf_model(args.urdf).gravity.linear if urdf_xml else DEFAULT_GRAVITY
        text = gravity_compensation_yaml(body, world, gravity, args.node, args.chain)
        write_output(args.gravity_yaml, text_writer(text))
        lines.append(
            f"wrote {args.gravity_yaml}: gravity compensation of {body.name!r} in "
            f"{body.frame!r}, world frame {world!r}"
        )
    if args.payload_formats:
        write_payload_formats(args.payload_formats, body, args.flange_frame, urdf_xml)
        lines.append(
            f"wrote {args.payload_formats}: UR SetPayload, franka SetLoad, KUKA load "
            f"data of {body.name!r} in {args.flange_frame or body.frame!r}"
        )
    print("\n".join(lines))
    return 0
