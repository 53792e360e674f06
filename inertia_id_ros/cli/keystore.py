"""``inertia-id keystore create``: a DDS-Security keystore for the node, the simulator, operators
and observers (:mod:`inertia_id_ros.ros.keystore`)."""

from __future__ import annotations

import argparse

from inertia_id_ros.cli.common import add_command
from inertia_id_ros.errors import InputError
from inertia_id_ros.ros.keystore import (
    DEFAULT_OBSERVER,
    DEFAULT_OPERATOR,
    DEFAULT_VALID_DAYS,
    NODE_ENCLAVE,
    SIMULATOR_ENCLAVE,
)


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    """The ``keystore`` command on ``subparsers``."""
    keystore = add_command(
        subparsers,
        "keystore",
        run,
        help="DDS-Security: create a keystore (CA, governance, enclaves with their permissions) "
        "so that only operators may call ~/excite",
    )
    actions = keystore.add_subparsers(dest="action", required=True)
    create = actions.add_parser(
        "create",
        help="create a keystore in a new directory",
        description=f"A keystore with the enclaves {NODE_ENCLAVE} (the node), "
        f"{SIMULATOR_ENCLAVE} (the simulator), operators (may call every service: "
        "~/excite, ~/stop, ~/tare, ~/identify, set parameters) and observers (read "
        "every topic, e.g. ~/estimate, and the parameters). Run each process with "
        "ROS_SECURITY_KEYSTORE=DIR ROS_SECURITY_ENABLE=true "
        "ROS_SECURITY_STRATEGY=Enforce and --ros-args --enclave NAME.",
    )
    create.add_argument("directory", metavar="DIR", help="the keystore to create (new or empty)")
    create.add_argument(
        "--operator",
        action="append",
        metavar="NAME",
        help=f"an operator enclave; repeat for more ({DEFAULT_OPERATOR})",
    )
    create.add_argument(
        "--observer",
        action="append",
        metavar="NAME",
        help=f"an observer enclave; repeat for more ({DEFAULT_OBSERVER})",
    )
    create.add_argument(
        "--domain-id",
        type=int,
        default=None,
        help="the ROS domain the permissions hold on (ROS_DOMAIN_ID, else 0)",
    )
    create.add_argument(
        "--valid-days",
        type=int,
        default=DEFAULT_VALID_DAYS,
        help=f"lifetime of certificates and permissions ({DEFAULT_VALID_DAYS})",
    )


def run(args: argparse.Namespace) -> int:
    """Create the keystore and print how to use it; the exit code."""
    from inertia_id_ros.ros.keystore import create_keystore, ros_domain_id

    domain_id = ros_domain_id() if args.domain_id is None else args.domain_id
    if not 0 <= domain_id <= 232:
        raise InputError(f"--domain-id must be in [0, 232], got {domain_id}")
    if args.valid_days < 1:
        raise InputError(f"--valid-days must be >= 1, got {args.valid_days}")
    keystore = create_keystore(
        args.directory,
        operators=args.operator or [DEFAULT_OPERATOR],
        observers=args.observer or [DEFAULT_OBSERVER],
        domain_id=domain_id,
        valid_days=args.valid_days,
    )
    print(f"keystore {keystore.directory} (domain {domain_id}):")
    for enclave, role in keystore.roles.items():
        print(f"  {enclave:<24}{role}")
    print("run each process with:")
    for name, value in keystore.environment().items():
        print(f"  export {name}={value}")
    print(f"  inertia-id-node --ros-args --enclave {NODE_ENCLAVE} ...")
    return 0
