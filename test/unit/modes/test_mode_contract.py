"""The contract every mode keeps, parametrised over the registry (``modes.modes()``) and the
test-only mode from outside the package (``helpers.toy_mode``, named by its import path, which no
package file knows): from its example (its parameter file, ``Mode.example``, and a few seconds of
its simulated robot, ``Mode.example_log``) the replay job replays the node's session through the
registry and the mode reports it (the result JSON names the mode; the summary; the CSV, the PNG
where the mode draws one); the validate job finds the result's mode through the registry, and
the result predicts held-out data of the same robot better than the URDF does. The node over DDS:
``test/ros/test_mode_contract.py``."""

from __future__ import annotations

import csv
import json
import math

import pytest

from helpers.paths import REPO
from helpers.toy_mode import MODE as TOY
from inertia_id_ros import modes
from inertia_id_ros.formats.source import LogSource
from inertia_id_ros.jobs.replay import replay_with_parameters
from inertia_id_ros.jobs.validate import validate
from inertia_id_ros.offline.replay import bag_robot_description
from inertia_id_ros.offline.validation import DataSource

MODES = [mode.name for mode in modes.modes()] + [TOY]
"""The package's modes and the test-only one."""


@pytest.fixture(autouse=True)
def registry_restored(monkeypatch):
    """The test-only mode is registered for one test only (the others see the package's)."""
    monkeypatch.setattr(modes.base, "_REGISTRY", dict(modes.base._REGISTRY))
    monkeypatch.setattr(modes.base, "_IMPORTED", dict(modes.base._IMPORTED))


@pytest.mark.parametrize("name", MODES)
def test_a_mode_replays_and_validates_its_example(name, tmp_path):
    mode = modes.get(name)
    assert mode.example and (REPO / mode.example).is_file(), f"{name}: its example parameter file"
    log, held_out = mode.example_log(tmp_path, seed=0), mode.example_log(tmp_path, seed=1)

    result = replay_with_parameters(LogSource(bag=log.replay), str(REPO / mode.example))
    assert result.mode is mode and result.estimate is not None, result.findings
    assert not result.refused, [f.text() for f in result.findings]
    assert result.summary and result.document["mode"] in (mode.name, name)
    assert modes.result_mode(result.document) is mode
    result.write_csv(tmp_path / "replay.csv")
    with open(tmp_path / "replay.csv", newline="") as stream:
        assert len(list(csv.reader(stream))) == 1 + len(result.replay.updates)
    if "png" in mode.replay_options:
        result.write_png(tmp_path / "replay.png")
        assert (tmp_path / "replay.png").stat().st_size > 0

    urdf = tmp_path / "robot.urdf"
    urdf.write_text(bag_robot_description(log.replay))
    document = json.loads(json.dumps(result.document))  # as validate reads it from the file
    validation = validate(
        document,
        DataSource.from_path(held_out.data),
        str(urdf),
        DataSource.from_path(log.data),
    )
    errors = validation.estimate
    assert {"fit", "urdf", "ols"} <= set(errors), sorted(errors)
    assert all(math.isfinite(error.rms) for error in errors.values())
    assert errors["fit"].rms < errors["urdf"].rms, validation.summary
