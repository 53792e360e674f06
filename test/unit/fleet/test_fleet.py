"""A small simulated fleet identified on a Dask cluster into SQLite (inertia_id_ros.fleet): faults
stored with their errors, drift flagged on the right robot and parameter only, re-runs skip what
is stored, an interrupted run and a killed worker lose nothing, the report renders in a headless
browser. Two F/T robots x 10 runs of 6 s: the 50-robot case is benchmarks/bench_fleet.py."""

from __future__ import annotations

import logging
import os
import shutil
import signal
import subprocess
from pathlib import Path

import pytest

from inertia_id_ros.cli import main
from inertia_id_ros.fleet.drift import detect_drift
from inertia_id_ros.fleet.engine import EngineOptions, FleetProgress, run_fleet
from inertia_id_ros.fleet.manifest import read_manifest
from inertia_id_ros.fleet.report import write_report
from inertia_id_ros.fleet.simulate import FleetPlan, SimulatedRobot, simulate_fleet
from inertia_id_ros.fleet.store import open_store
from inertia_id_ros.fleet.tasks import FAILED, OK, REFUSED, RunTask, identify_run

RUNS = 10
DRIFT_FROM = 5
ROBOTS = (
    SimulatedRobot("panda-a", "panda", "payload", 3, "offset_fz", DRIFT_FROM, 0.008),
    SimulatedRobot(
        "ur5-b", "ur5", "payload", 4, swap_at=5, faults={2: "corrupt", 4: "truncated", 7: "degrees"}
    ),
)
CHROMIUM_FLAGS = (
    "--headless --no-sandbox --disable-gpu --disable-quic --no-first-run "
    "--disable-background-networking --disable-component-update --disable-sync"
).split()


@pytest.fixture(scope="module")
def manifest(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("fleet")
    return simulate_fleet(folder, FleetPlan(ROBOTS, RUNS, duration=6.0))


@pytest.fixture(scope="module")
def cluster():
    """A local Dask cluster of 2 worker processes (closed after the module)."""
    from distributed import LocalCluster

    with LocalCluster(
        n_workers=2,
        threads_per_worker=1,
        dashboard_address=":0",
        silence_logs=logging.ERROR,
    ) as cluster:
        yield cluster


@pytest.fixture(scope="module")
def stored(manifest, cluster, tmp_path_factory) -> Path:
    """The fleet identified into an SQLite file; its path."""
    path = tmp_path_factory.mktemp("store") / "fleet.sqlite"
    seen: list[FleetProgress] = []
    with open_store(str(path)) as store:
        done = run_fleet(
            read_manifest(manifest),
            store,
            EngineOptions(scheduler=cluster.scheduler_address),
            seen.append,
        )
    assert done.progress.done == 2 * RUNS and done.progress.left == 0 and done.skipped == 0
    assert [p.done for p in seen] == list(range(1, 2 * RUNS + 1))
    assert seen[-1].left == 0 and seen[-1].eta == 0.0 and seen[0].eta is not None
    return path


def test_faults_are_stored_with_their_errors_and_every_other_run_identified(stored):
    with open_store(str(stored)) as store:
        runs = {(r.robot, r.run.rsplit("/", 1)[-1]): r for r in store.runs()}
        assert len(runs) == 2 * RUNS
        assert runs["ur5-b", "002.npz"].status == FAILED and "NPZ" in runs["ur5-b", "002.npz"].error
        assert runs["ur5-b", "004.npz"].status == FAILED
        refused = runs["ur5-b", "007.npz"]
        assert refused.status == REFUSED and "Degrees?" in refused.error
        assert any(f["severity"] == "refuse" for f in refused.findings)
        others = [
            r
            for k, r in runs.items()
            if k[0] == "panda-a" or k[1] not in {"002.npz", "004.npz", "007.npz"}
        ]
        assert len(others) == 17 and all(r.status == OK for r in others)
        assert {r.version for r in runs.values()} == {__import__("inertia_id_ros").__version__}
        fz = {h.name: h for h in store.histories("panda-a")}["offset_fz"]
        assert len(fz.values) == RUNS and all(0 < s < 0.01 for s in fz.stds)  # N


def test_drift_flags_the_drifting_robot_and_parameter_only_within_three_runs(stored):
    with open_store(str(stored)) as store:
        alarms = detect_drift(store)
        fz = {h.name: h for h in store.histories("panda-a")}["offset_fz"]
        pooled = {
            (tool, name): (value, runs) for tool, name, value, _, runs in store.pooled("ur5-b")
        }
    assert [(a.robot, a.parameter) for a in alarms] == [("panda-a", "offset_fz")]
    # where the planted drift (0.008 N a run from run 5) passes 3 standard errors of a run
    crossing = next(k for k in range(RUNS) if ROBOTS[0].drift_at(k) > 3 * fz.stds[k])
    detected = fz.runs.index(alarms[0].detected_run)
    assert crossing <= detected <= crossing + 3
    assert DRIFT_FROM <= fz.runs.index(alarms[0].began_run) <= detected
    assert alarms[0].size > 0 and alarms[0].z > 3
    # the tool swap changes the payload, compared per tool: no alarm, two pooled masses
    assert pooled["A", "payload.mass"][0] == pytest.approx(1.5, abs=0.01)
    assert pooled["B", "payload.mass"][0] == pytest.approx(0.8, abs=0.01)


def test_a_rerun_skips_stored_runs_unless_redone(stored, manifest, cluster):
    options = EngineOptions(scheduler=cluster.scheduler_address)
    with open_store(str(stored)) as store:
        again = run_fleet(read_manifest(manifest), store, options)
    assert again.skipped == 2 * RUNS and again.progress.done == 0


def test_an_interrupted_run_keeps_what_it_stored_and_a_rerun_completes_it(
    manifest, cluster, tmp_path
):
    options = EngineOptions(scheduler=cluster.scheduler_address)

    def interrupt(progress: FleetProgress) -> None:
        if progress.done == 3:
            raise KeyboardInterrupt

    with open_store(str(tmp_path / "f.sqlite")) as store:
        with pytest.raises(KeyboardInterrupt):
            run_fleet(read_manifest(manifest), store, options, interrupt)
        assert len(store.stored()) == 3
        rest = run_fleet(read_manifest(manifest), store, options)
        assert rest.skipped == 3 and rest.progress.done == 2 * RUNS - 3
        assert len(store.stored()) == 2 * RUNS


def test_a_killed_worker_loses_nothing_stored(manifest, cluster, tmp_path):
    from distributed import Client

    with Client(cluster.scheduler_address) as client:
        victim = next(iter(client.run(os.getpid).values()))
    options = EngineOptions(scheduler=cluster.scheduler_address)

    def kill(progress: FleetProgress) -> None:
        if progress.done == 2:
            os.kill(victim, signal.SIGKILL)

    with open_store(str(tmp_path / "f.sqlite")) as store:
        first = run_fleet(read_manifest(manifest), store, options, kill)
        assert first.progress.done >= 2 and len(store.stored()) == first.progress.done
        rest = run_fleet(read_manifest(manifest), store, options)
        assert rest.progress.done == first.progress.left
        assert len(store.stored()) == 2 * RUNS


def test_a_links_run_gives_friction_and_masses_with_standard_errors(tmp_path):
    robot = SimulatedRobot("panda-t", "panda", "links", 5)
    path = simulate_fleet(tmp_path, FleetPlan((robot,), 1, duration=4.0))
    entry = read_manifest(path).robots[0]
    run = entry.runs[0]
    outcome = identify_run(
        RunTask(
            entry.name,
            "r",
            run.path,
            run.time,
            run.tool,
            "links",
            "panda",
            None,
            dict(entry.options),
        )
    )
    assert outcome.status == OK, outcome.error
    found = {p.name: p for p in outcome.parameters}
    viscous = found["panda_joint4.viscous"]
    assert viscous.value == pytest.approx(0.6, abs=6 * viscous.std) and 0 < viscous.std < 0.05
    assert {f"panda_joint{j}.coulomb" for j in range(1, 8)} <= set(found)
    assert "panda_link4.mass" in found


def test_the_command_line_prints_the_alarms(stored, tmp_path, capsys):
    assert main(["fleet", "drift", "--store", str(stored), "--json", str(tmp_path / "a.json")]) == 0
    out = capsys.readouterr().out
    assert out.startswith("1 alarm(s)") and "panda-a: offset_fz changed by +" in out
    assert '"parameter": "offset_fz"' in (tmp_path / "a.json").read_text()


def test_the_report_renders_in_a_headless_browser(stored, tmp_path):
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    if chromium is None:
        pytest.skip("no chromium: the report's browser test needs Debian's chromium package")
    with open_store(str(stored)) as store:
        page = write_report(store, tmp_path / "report.html")
    text = page.read_text()
    assert "panda-a" in text and "offset_fz" in text and "Degrees?" in text
    assert "http://" not in text.replace("http://www.w3.org/2000/svg", "")  # self-contained
    done = subprocess.run(
        [
            chromium,
            *CHROMIUM_FLAGS,
            f"--user-data-dir={tmp_path / 'profile'}",
            "--enable-logging=stderr",
            "--v=0",
            "--dump-dom",
            page.as_uri(),
        ],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert 'data-plots="1"' in done.stdout  # the page's script ran and counted its plot
    assert "<polyline" in done.stdout and "<polygon" in done.stdout
    console = [line for line in done.stderr.splitlines() if "CONSOLE" in line or "Uncaught" in line]
    assert console == []
