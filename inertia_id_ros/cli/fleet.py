"""``inertia-id fleet``: a fleet of robots identified run by run on Dask, stored in a database,
its drift detected and reported (:mod:`inertia_id_ros.fleet`): ``run``, ``drift``, ``report``,
``simulate``."""

from __future__ import annotations

import argparse
import sys

from inertia_id_ros.cli.common import add_command, add_seed_option, positive_seconds
from inertia_id_ros.fleet.drift import DriftOptions
from inertia_id_ros.fleet.store import DEFAULT_STORE

STORE_HELP = (
    f"the results' database: an SQLite file ({DEFAULT_STORE}) or a server URL "
    "(postgresql://user@host/db)"
)


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    """The ``fleet`` command and its actions on ``subparsers``."""
    fleet = add_command(
        subparsers,
        "fleet",
        run,
        help="a fleet of robots: identify every run on Dask into a database, detect drift, "
        "report it, simulate a fleet",
    )
    actions = fleet.add_subparsers(dest="action", required=True)
    identify = actions.add_parser("run", help="identify the manifest's runs not yet stored")
    identify.add_argument("manifest", help="the fleet's manifest, YAML or CSV")
    identify.add_argument("--workers", type=int, help="local worker processes (one per CPU)")
    identify.add_argument(
        "--scheduler", help="an existing Dask scheduler's address (tcp://HOST:8786)"
    )
    identify.add_argument("--redo", action="store_true", help="identify stored runs again")
    drift = actions.add_parser("drift", help="test each robot's parameter histories for drift")
    drift.add_argument("--json", help="write the alarms to this JSON file")
    report = actions.add_parser("report", help="write the fleet's HTML report")
    report.add_argument("output", help="the HTML file to write")
    for parser in (identify, drift, report):
        parser.add_argument("--store", default=DEFAULT_STORE, help=STORE_HELP)
    for parser in (drift, report):
        parser.add_argument(
            "--reference-runs",
            type=int,
            default=DriftOptions.reference_runs,
            help=f"runs of each history's reference ({DriftOptions.reference_runs})",
        )
    simulate = actions.add_parser(
        "simulate", help="write a simulated fleet (runs, manifest.yaml, truth.json)"
    )
    simulate.add_argument("folder", help="folder to write into (created if missing)")
    simulate.add_argument("--robots", type=int, default=4, help="robots (4)")
    simulate.add_argument("--runs", type=int, default=10, help="nightly runs per robot (10)")
    simulate.add_argument("--drifting", type=int, default=1, help="robots that drift (1)")
    simulate.add_argument("--faults", type=int, default=1, help="runs with a fault (1)")
    simulate.add_argument(
        "--duration", type=positive_seconds, default=8.0, help="seconds per run (8)"
    )
    add_seed_option(simulate, "robots, motions and noise")


def run(args: argparse.Namespace) -> int:
    """Run the fleet's action; the exit code."""
    actions = {"run": _identify, "drift": _drift, "report": _report, "simulate": _simulate}
    return actions[args.action](args)


def _identify(args: argparse.Namespace) -> int:
    """Identify the manifest's runs; the exit code (0, or 1 if runs were left unstored)."""
    from inertia_id_ros.fleet.engine import EngineOptions, run_fleet
    from inertia_id_ros.fleet.manifest import read_manifest
    from inertia_id_ros.fleet.store import open_store

    manifest = read_manifest(args.manifest)
    options = EngineOptions(args.workers, args.scheduler, args.redo)
    with open_store(args.store) as store:
        done = run_fleet(
            manifest, store, options, lambda p: print(f"fleet: {p.line()}", file=sys.stderr)
        )
    p = done.progress
    print(
        f"{p.done} runs identified on {done.workers} workers in {p.elapsed:.1f} s "
        f"({p.failed} failed, {done.skipped} already stored, {p.left} left) into {args.store}"
    )
    return 1 if p.left else 0


def _drift(args: argparse.Namespace) -> int:
    """Print (and write) the fleet's alarms; the exit code."""
    import json
    from dataclasses import asdict

    from inertia_id_ros.fleet.drift import detect_drift, false_alarm_rate
    from inertia_id_ros.fleet.store import open_store

    options = DriftOptions(reference_runs=args.reference_runs)
    with open_store(args.store) as store:
        alarms = detect_drift(store, options)
    rate = false_alarm_rate(options)
    print(
        f"{len(alarms)} alarm(s); CUSUM slack {options.slack:g}, threshold "
        f"{options.threshold:g} standard errors; false-alarm rate {rate:.1e} per drift-free "
        "20-run history"
    )
    for a in alarms:
        tool = "" if a.tool == "*" else f" (tool {a.tool})"
        print(
            f"  {a.robot}: {a.parameter}{tool} changed by {a.size:+.4g} ({a.z:.1f} standard "
            f"errors) from {a.began} ({a.began_run}), detected {a.detected}"
        )
    if args.json:
        with open(args.json, "w") as f:
            json.dump(
                {"false_alarm_rate": rate, "alarms": [asdict(a) for a in alarms]}, f, indent=1
            )
    return 0


def _report(args: argparse.Namespace) -> int:
    """Write the HTML report; the exit code."""
    from inertia_id_ros.fleet.report import write_report
    from inertia_id_ros.fleet.store import open_store

    with open_store(args.store) as store:
        path = write_report(store, args.output, DriftOptions(reference_runs=args.reference_runs))
    print(f"wrote {path}")
    return 0


def _simulate(args: argparse.Namespace) -> int:
    """Write the simulated fleet; the exit code."""
    from pathlib import Path

    from inertia_id_ros.errors import InputError
    from inertia_id_ros.fleet.simulate import FleetPlan, plan_fleet, simulate_fleet

    try:
        plan = plan_fleet(args.robots, args.runs, args.drifting, args.faults, args.seed)
    except ValueError as e:
        raise InputError(str(e)) from None
    plan = FleetPlan(plan.robots, plan.runs, duration=args.duration)
    Path(args.folder).mkdir(parents=True, exist_ok=True)
    manifest = simulate_fleet(args.folder, plan)
    drifting = [f"{r.name} ({r.drift} from run {r.drift_from})" for r in plan.robots if r.drift]
    print(
        f"wrote {manifest}: {args.robots} robots x {args.runs} runs; drifting: "
        + (", ".join(drifting) or "none")
    )
    return 0
