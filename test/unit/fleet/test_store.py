"""A fleet's manifest (YAML, CSV, globs, mistakes), its store (SQLite; PostgreSQL on a throwaway
server) and the drift test's pieces (inertia_id_ros.fleet.manifest, store, drift)."""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from pathlib import Path

import numpy as np
import pytest

from inertia_id_ros.errors import InputError
from inertia_id_ros.fleet.drift import cusum, false_alarm_rate, history_alarm, pool
from inertia_id_ros.fleet.manifest import read_manifest
from inertia_id_ros.fleet.store import History, Store, open_store
from inertia_id_ros.fleet.tasks import OK, Parameter, RunOutcome

POSTGRES_BIN = max(Path("/usr/lib/postgresql").glob("*/bin"), default=Path("/nonexistent"))
"""Debian's PostgreSQL server binaries (its newest version)."""


def outcome(run: str, value: float, status: str = OK) -> RunOutcome:
    return RunOutcome(
        "r1",
        run,
        f"2026-01-0{run}T02:00:00+00:00",
        "A",
        "payload",
        status,
        "",
        (),
        "0.1.0",
        0.1,
        (Parameter("offset_fz", value, 0.01), Parameter("payload.mass", 1.5, float("nan"))),
    )


def test_yaml_and_csv_manifests_and_globs(tmp_path):
    for name in ("run_2026-01-06.npz", "run_2026-01-05T02-00.npz"):
        (tmp_path / name).write_bytes(b"")
    (tmp_path / "m.yaml").write_text(
        "robots:\n- name: a\n  urdf: panda\n  mode: payload\n  sensor_frame: panda_link8\n"
        "  options: {window_sec: 5.0}\n  glob: 'run_*.npz'\n"
        "  runs:\n  - {path: x.npz, time: '2026-01-04T00:00:00', tool: B}\n"
    )
    robot = read_manifest(tmp_path / "m.yaml").robots[0]
    assert [Path(r.path).name for r in robot.runs] == [
        "x.npz",
        "run_2026-01-05T02-00.npz",
        "run_2026-01-06.npz",
    ]
    assert robot.runs[0].tool == "B" and robot.runs[1].time == "2026-01-05T02:00:00+00:00"
    assert robot.options == {"window_sec": 5.0}
    (tmp_path / "m.csv").write_text(
        "robot,urdf,mode,sensor_frame,path,time,tool\n"
        "b,ur5,links,,r2.npz,2026-01-02T00:00:00Z,\nb,ur5,links,,r1.npz,2026-01-01T00:00:00Z,\n"
    )
    (robot,) = read_manifest(tmp_path / "m.csv").robots
    assert robot.mode == "links" and [Path(r.path).name for r in robot.runs] == ["r1.npz", "r2.npz"]


@pytest.mark.parametrize(
    "text, message",
    [
        ("robots: 3", "a list 'robots'"),
        ("robots:\n- {name: a, urdf: panda, mode: whole}", "mode must be one of"),
        ("robots:\n- {name: a, urdf: panda, mode: payload}", "needs a 'sensor_frame'"),
        ("robots:\n- {name: a, urdf: p, mode: links, options: {bad: 1}}", "options ['bad']"),
        ("robots:\n- {name: a, urdf: p, mode: links, runs: [{path: x}]}", "a 'path' and a 'time'"),
        ("robots:\n- {name: a, urdf: p, mode: links}\n- {name: a, urdf: p, mode: links}", "twice"),
    ],
)
def test_manifest_mistakes_are_named(tmp_path, text, message):
    (tmp_path / "m.yaml").write_text(text)
    with pytest.raises(InputError, match=message.replace("[", r"\[").replace("]", r"\]")):
        read_manifest(tmp_path / "m.yaml")


def check_store(store: Store) -> None:
    """What every backend keeps: one row per run and parameter, replaced on redo."""
    store.record(outcome("1", 6.0))
    store.record(outcome("2", 6.1))
    store.record(outcome("2", 6.2))  # redone: replaced
    assert store.stored() == {("r1", "1"), ("r1", "2")}
    fz, mass = sorted(store.histories("r1"), key=lambda h: h.name)
    assert fz.values == (6.0, 6.2) and fz.stds == (0.01, 0.01) and fz.tools == ("A", "A")
    assert np.isnan(mass.stds[0])  # no standard error: NULL
    store.record_pooled("r1", [("*", "offset_fz", 6.1, 0.1, 2)])
    assert store.pooled("r1") == [("*", "offset_fz", 6.1, 0.1, 2)]
    assert store.runs("r1")[0].version == "0.1.0"


def test_sqlite_store(tmp_path):
    with open_store(str(tmp_path / "f.sqlite")) as store:
        check_store(store)
    with open_store(f"sqlite:///{tmp_path / 'f.sqlite'}") as store:  # reopened: all kept
        assert len(store.stored()) == 2


def test_postgresql_store():
    pytest.importorskip("psycopg", reason="the PostgreSQL backend needs psycopg")
    if not (POSTGRES_BIN / "initdb").exists():
        pytest.skip("no PostgreSQL server in /usr/lib/postgresql (Debian's postgresql package)")
    as_user: list[str] = []
    if os.geteuid() == 0:  # PostgreSQL refuses to run as root
        if shutil.which("runuser") is None:
            pytest.skip("running as root without runuser: cannot start PostgreSQL")
        as_user = ["runuser", "-u", "postgres", "--"]
    with tempfile.TemporaryDirectory(dir="/tmp") as folder:  # short: a socket's path
        if as_user:
            shutil.chown(folder, "postgres")
        run_server(Path(folder), as_user)


def run_server(folder: Path, as_user: list[str]) -> None:
    """Start a PostgreSQL server in ``folder`` (its socket there, no TCP), check the store on
    it, stop it."""
    data, sockets = folder / "data", folder
    subprocess.run(
        [*as_user, POSTGRES_BIN / "initdb", "-D", data, "-A", "trust", "-U", "fleet"],
        check=True,
        capture_output=True,
    )
    options = f"-k {sockets} -c listen_addresses='' -c fsync=off"
    subprocess.run(
        [
            *as_user,
            POSTGRES_BIN / "pg_ctl",
            "-D",
            data,
            "-o",
            options,
            "-w",
            "start",
            "-l",
            data / "log",
        ],
        check=True,
        capture_output=True,
    )
    try:
        with open_store(f"postgresql://fleet@/postgres?host={sockets}") as store:
            check_store(store)
    finally:
        subprocess.run(
            [*as_user, POSTGRES_BIN / "pg_ctl", "-D", data, "-m", "immediate", "stop"],
            check=True,
            capture_output=True,
        )


def test_a_server_that_is_not_there_is_named():
    pytest.importorskip("psycopg", reason="the PostgreSQL backend needs psycopg")
    with pytest.raises(InputError, match="cannot connect"):
        open_store("postgresql://nobody@/none?host=/nonexistent&connect_timeout=1")


def test_cusum_finds_a_step_and_where_it_began():
    z = [0.3, -0.5, 0.1, 2.5, 3.5, 4.5]
    assert cusum(z, 2.0, 4.0) == (3, 5)
    assert cusum([-v for v in z], 2.0, 4.0) == (3, 5)
    assert cusum([1.9] * 50, 2.0, 4.0) is None


def test_pool_weights_by_errors_and_inflates_by_scatter():
    value, std = pool(np.array([1.0, 2.0]), np.array([1.0, 1e9]))
    assert value == pytest.approx(1.0) and std == pytest.approx(1.0, rel=1e-6)
    _, scattered = pool(np.array([0.0, 10.0, 0.0, 10.0]), np.ones(4))
    assert scattered > 2.0  # the runs disagree far beyond their errors


def test_drift_alarm_and_false_alarm_rate():
    rng = np.random.default_rng(1)
    values = rng.normal(0.0, 1.0, 20)
    values[12:] += np.arange(1, 9) * 2.0
    times = tuple(f"2026-01-{d:02d}" for d in range(1, 21))
    history = History(
        "r", "offset_fx", tuple(map(str, range(20))), times, ("-",) * 20, tuple(values), (1.0,) * 20
    )
    (alarm,) = history_alarm(history)
    assert 12 <= int(alarm.began_run) <= int(alarm.detected_run) <= 15 and alarm.size > 0
    steady = History(
        "r", "x", history.runs, times, history.tools, tuple(values[:10]) * 2, (1.0,) * 20
    )
    assert history_alarm(steady) == []
    assert false_alarm_rate(trials=50_000) < 2e-4  # a drift-free 20-run history
