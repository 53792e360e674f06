"""Benchmark: a payload from joint torques (no F/T sensor), four routes, against the targets.

Data (:func:`inertia_id_ros.sim.torques.panda_payload_torque_runs`): the simulated Panda's 7 arm
joints replaying one exciting motion (period 10 s, 80 % of the velocity limits) for 30 s at
1 kHz (``--rate``), without and with the default payload (1.5 kg box 12 x 8 x 10 cm, COM 8 cm
from the flange ``panda_link8``); the true links off the URDF by up to 10 % (masses and
inertias, COMs about 1 cm), per-joint viscous and Coulomb friction and torque offsets; torque
noise 0.04-0.15 N m, encoder noise. Each run is written to an NPZ as a real arm records it (t, q,
dq, effort) and fed to the command line as a user would (in process):

  (a) urdf        fit-payload-torques with the URDF's links as the link model (no friction);
  (b) fit-links   fit-links on the unloaded run (--filter-half-width 0.03; at lower rates five
                  samples each side, 0.044 at 125 Hz: ``payload_half_width``), then
                  fit-payload-torques --links-result;
  (b') defaults   as (b) with fit-links' own filter (cross-validated on the torques, wider):
                  not a target; fit-payload-torques must warn of it (``link_filter``);
  (c) difference  fit-payload-torques --unloaded (the link model cancels);
  (d) naive       fit-links (its defaults) on the loaded and on the unloaded run, the last
                  link's difference taken as the payload (mass; COM and inertia moved to the
                  flange);
  (e) online (b)  the node's session (payload_torque_session, the link model of (b), 30 s window)
                  fed the loaded run in 1 s batches, its last estimate.

Errors: mass (%), COM (mm), inertia about the COM (relative Frobenius norm, %); the mass's
standard error (%) each fit reports; mean and worst over the seeds; the seeds whose fit warned
of the link model's filter (``link_filter``), and those whose fit said the inertia is poorly
determined (its standard error over 10 %), and the largest inertia error of a fit that did not.
Targets at 1 kHz: mass < 1 %, COM < 5 mm, inertia < 15 % (routes b, c, e), and (b') warned of
its filter on every seed. At every ``--rate``: no fit of routes b, c and e is off by over twice
the inertia target (30 %) without saying its inertia is poorly determined (the standard error
leaves out the filter's and the link model's bias: a fit between 15 and 30 % off may not say
so).

Run: .venv/bin/python benchmarks/bench_payload_torques.py [--seeds N] [--rate HZ]
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pinocchio as pin

from inertia_id_ros import cli
from inertia_id_ros.chain.differentiation import payload_half_width
from inertia_id_ros.core.inertia import inertia_from_theta
from inertia_id_ros.core.robots import example_robot_urdf, frame_id
from inertia_id_ros.formats.link_result import read_link_result
from inertia_id_ros.online.payload_session import payload_torque_session
from inertia_id_ros.sim.torques import PayloadTorqueRuns, panda_payload_torque_runs

RATE_HZ = 1000.0
DURATION_SEC = 30.0
TARGETS = (1.0, 5.0, 15.0)
"""mass %, COM mm, inertia %."""
ROUTES = (
    "(a) urdf",
    "(b) fit-links",
    "(b') defaults",
    "(c) difference",
    "(d) naive",
    "(e) online (b)",
)
CHECKED = ("(b) fit-links", "(c) difference", "(e) online (b)")
INERTIA_WARNING = "the payload's inertia is poorly determined"
"""The start of the fits' warning that the inertia's standard error is over 10 %."""


@dataclass(frozen=True)
class Route:
    """One route's result on one seed: ``errors`` (mass %, COM mm, inertia %), ``mass_std`` (%;
    NaN: none reported), whether the fit warned of the link model's filter and said the inertia
    is poorly determined."""

    errors: np.ndarray
    mass_std: float
    filter_warned: bool
    inertia_warned: bool


def errors(theta: np.ndarray, truth: np.ndarray) -> np.ndarray:
    """(mass %, COM mm, inertia %); COM and inertia NaN without a positive mass."""
    true_mass, true_com, true_inertia = inertia_from_theta(truth)
    mass_error = 100 * abs(theta[0] - true_mass) / true_mass
    if not theta[0] > 0:
        return np.array([mass_error, np.nan, np.nan])
    _, com, inertia = inertia_from_theta(theta)
    return np.array(
        [
            mass_error,
            1e3 * np.linalg.norm(com - true_com),
            100 * np.linalg.norm(inertia - true_inertia) / np.linalg.norm(true_inertia),
        ]
    )


def run_cli(*argv: str) -> None:
    """``inertia-id argv`` in process, its output swallowed; raises if it fails."""
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        code = cli.main(list(argv))
    if code != 0:
        raise RuntimeError(f"inertia-id {' '.join(argv)} exited with {code}")


def naive_payload(loaded: dict, unloaded: dict, urdf: str, frame: str) -> np.ndarray:
    """The last link's difference between two fit-links results, moved to ``frame``."""
    last = loaded["bodies"][-1]["name"]
    theta = {r["bodies"][-1]["name"]: None for r in (loaded, unloaded)}
    assert list(theta) == [last], "both fits end at the same link"
    delta = np.array(loaded["bodies"][-1]["theta"]) - np.array(unloaded["bodies"][-1]["theta"])
    model = pin.buildModelFromUrdf(urdf)
    placement = model.frames[frame_id(model, frame)].placement  # joint frame -> frame
    moved = pin.Inertia.FromDynamicParameters(delta)
    return placement.actInv(moved).toDynamicParameters() if delta[0] > 0 else delta


def online_estimate(
    runs: PayloadTorqueRuns, links_json: Path, rate: float
) -> tuple[np.ndarray, float, bool]:
    """(theta, mass standard error, said the inertia is poorly determined) of the node's session
    over the loaded run (sampled at ``rate`` Hz)."""
    result = read_link_result(links_json, runs.links)
    session = payload_torque_session(
        result.model,
        result.x,
        runs.frame,
        window_sec=DURATION_SEC + 1.0,
        filter_half_width=payload_half_width(1.0 / rate),
    )
    rec = runs.loaded
    for start in range(0, rec.t.size, int(rate)):
        rows = slice(start, start + int(rate))
        session.add_joint_states(
            rec.t[rows], runs.links.joint_names, rec.q[rows], rec.dq[rows], rec.effort[rows]
        )
        session.update(now=float(rec.t[rows][-1]))
    estimate = session.last.estimate
    return (
        estimate.theta,
        float(estimate.theta_std[0]),
        any(INERTIA_WARNING in message for message in estimate.warnings),
    )


def one_seed(seed: int, directory: Path, rate: float) -> dict[str, Route]:
    """Each route's result on one simulated pair of runs sampled at ``rate`` Hz."""
    runs = panda_payload_torque_runs(duration=DURATION_SEC, rate=rate, seed=seed)
    urdf = str(example_robot_urdf("panda"))
    paths = {}
    for name, rec in (("unloaded", runs.unloaded), ("loaded", runs.loaded)):
        paths[name] = directory / f"{name}_{seed}.npz"
        np.savez(
            paths[name],
            t=rec.t,
            joint_names=np.array(runs.links.joint_names),
            q=rec.q,
            dq=rec.dq,
            effort=rec.effort,
        )
    out = {}

    def payload(route: str, *extra: str) -> None:
        path = directory / f"payload_{seed}.json"
        run_cli(
            "fit-payload-torques",
            "--urdf",
            urdf,
            "--data",
            str(paths["loaded"]),
            "--frame",
            runs.frame,
            "--json",
            str(path),
            *extra,
        )
        result = json.loads(path.read_text())
        theta = np.array(result["bodies"][0]["theta"])
        out[route] = Route(
            errors(theta, runs.payload_theta),
            100 * result["theta_std"][0] / runs.payload_theta[0],
            any(f["kind"] == "link_filter" for f in result["findings"]),
            any(INERTIA_WARNING in message for message in result["warnings"]),
        )

    links_json = directory / f"links_{seed}.json"
    run_cli(
        "fit-links",
        "--urdf",
        urdf,
        "--data",
        str(paths["unloaded"]),
        "--json",
        str(links_json),
        "--filter-half-width",
        f"{payload_half_width(1.0 / rate):g}",
    )
    payload("(a) urdf")
    payload("(b) fit-links", "--links-result", str(links_json))
    payload("(c) difference", "--unloaded", str(paths["unloaded"]))
    naive = {}
    for name in ("loaded", "unloaded"):
        path = directory / f"naive_{name}_{seed}.json"
        run_cli("fit-links", "--urdf", urdf, "--data", str(paths[name]), "--json", str(path))
        naive[name] = json.loads(path.read_text())
    payload("(b') defaults", "--links-result", str(directory / f"naive_unloaded_{seed}.json"))
    theta = naive_payload(naive["loaded"], naive["unloaded"], urdf, runs.frame)
    out["(d) naive"] = Route(errors(theta, runs.payload_theta), np.nan, False, False)
    theta, mass_std, inertia_warned = online_estimate(runs, links_json, rate)
    out["(e) online (b)"] = Route(
        errors(theta, runs.payload_theta),
        100 * mass_std / runs.payload_theta[0],
        False,
        inertia_warned,
    )
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=3, help="simulated pairs of runs (3)")
    parser.add_argument(
        "--rate",
        type=float,
        default=RATE_HZ,
        help=f"sample rate of the runs (Hz; {RATE_HZ:g}: the targets apply)",
    )
    args = parser.parse_args()
    results: dict[str, list[Route]] = {route: [] for route in ROUTES}
    with tempfile.TemporaryDirectory() as directory:
        for seed in range(args.seeds):
            for route, value in one_seed(seed, Path(directory), args.rate).items():
                results[route].append(value)
            print(f"seed {seed} done", file=sys.stderr)
    print(
        f"Panda, {DURATION_SEC:.0f} s at {args.rate:.0f} Hz per run, {args.seeds} seeds: "
        "mean (worst)"
    )
    print(
        f"{'route':<16}{'mass %':>16}{'COM mm':>16}{'inertia %':>18}{'mass std %':>12}"
        f"{'filter warned':>15}{'inertia warned':>16}{'unwarned worst %':>18}"
    )
    failed = []
    for route in ROUTES:
        e = np.array([value.errors for value in results[route]])
        std = np.array([value.mass_std for value in results[route]])
        filter_warned = sum(value.filter_warned for value in results[route])
        inertia_warned = sum(value.inertia_warned for value in results[route])
        cells = [f"{np.nanmean(e[:, k]):8.2f} ({np.nanmax(e[:, k]):6.2f})" for k in range(3)]
        std_cell = "-" if np.isnan(std).all() else f"{np.nanmean(std):.2f}"
        unwarned = max(
            (value.errors[2] for value in results[route] if not value.inertia_warned),
            default=np.nan,
        )
        print(
            f"{route:<16}{cells[0]:>16}{cells[1]:>16}{cells[2]:>18}{std_cell:>12}"
            f"{f'{filter_warned} of {args.seeds}':>15}{f'{inertia_warned} of {args.seeds}':>16}"
            f"{'-' if np.isnan(unwarned) else f'{unwarned:.2f}':>18}"
        )
        if route in CHECKED and args.rate == RATE_HZ and not np.all(e.max(axis=0) < TARGETS):
            failed.append(route)
        if route in CHECKED and unwarned > 2 * TARGETS[2]:
            failed.append(f"{route} (inertia {unwarned:.0f} % off, not warned)")
        if route == "(b') defaults" and filter_warned < args.seeds:
            failed.append(route)
    print(
        (
            "targets (mass < 1 %, COM < 5 mm, inertia < 15 %, every seed) on "
            + ", ".join(CHECKED)
            + "; (b') warned on every seed; "
            if args.rate == RATE_HZ
            else ""
        )
        + f"every inertia off by over {2 * TARGETS[2]:g} % on those routes warned: "
        + ("met" if not failed else f"NOT met by {failed}")
    )
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
