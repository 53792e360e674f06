"""The test-only mode from outside the package (``helpers.toy_mode``) on the command line: its
replay through the registry (``inertia-id replay --params-file``, its own report, JSON and CSV),
then its result validated by ``inertia-id validate`` in a fresh process, which finds the mode
from the result's ``"mode"`` (its import path) alone. No package file names it."""

from __future__ import annotations

import csv
import json
import os
import subprocess
import sys

import pytest

from helpers.paths import REPO
from helpers.toy_mode import MODE, OneJointMode
from inertia_id_ros import cli, modes
from inertia_id_ros.core.robots import example_robot_urdf


@pytest.fixture(autouse=True)
def registry_restored(monkeypatch):
    """The mode the replay registers (named by its import path) is gone after the test."""
    monkeypatch.setattr(modes.base, "_REGISTRY", dict(modes.base._REGISTRY))
    monkeypatch.setattr(modes.base, "_IMPORTED", dict(modes.base._IMPORTED))


def test_the_command_line_replays_and_validates_a_mode_it_does_not_know(capsys, tmp_path):
    mode = OneJointMode()
    log, held_out = mode.example_log(tmp_path, seed=0), mode.example_log(tmp_path, seed=1)
    result, rows = tmp_path / "replay.json", tmp_path / "replay.csv"
    code = cli.main(
        ["replay", log.replay, "--params-file", str(REPO / mode.example)]
        + ["--json", str(result), "--csv", str(rows)]
    )
    out = capsys.readouterr().out
    assert code == 0, out
    assert out.splitlines()[0].startswith("one_joint replay: ")  # the mode's own summary
    assert out.splitlines()[-2:] == [f"wrote {result}", f"wrote {rows}"]
    document = json.loads(result.read_text())
    assert document["mode"] == MODE and document["one_joint_link"] == "panda_link2"
    with open(rows, newline="") as stream:
        assert next(csv.reader(stream)) == ["time", "status", "mass"]

    errors = tmp_path / "errors.json"
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(REPO / "test"), str(REPO)]))
    validate = subprocess.run(
        [sys.executable, "-m", "inertia_id_ros.cli", "validate", str(result)]
        + ["--bag", held_out.data, "--urdf", str(example_robot_urdf("panda"))]
        + ["--train", log.data, "--json", str(errors)],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert validate.returncode == 0, validate.stderr
    table = json.loads(errors.read_text())
    assert table["fit"]["rms"] < 0.1 * table["urdf"]["rms"], validate.stdout
    assert table["ols"]["rms"] < 0.1 * table["urdf"]["rms"]
