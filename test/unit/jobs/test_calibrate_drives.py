"""The calibrate-drives job called from Python: runs as package files and input descriptions,
the gains, the document and the snippet; bad inputs refused."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from inertia_id_ros.core.robots import example_robot_urdf
from inertia_id_ros.errors import InputError
from inertia_id_ros.formats.data import JointStates, write_joint_file
from inertia_id_ros.formats.source import LogSource
from inertia_id_ros.jobs.calibrate_drives import (
    CalibrateDrivesOptions,
    calibrate_drives,
    run_source,
)
from inertia_id_ros.sim.torques import PANDA_FLANGE, panda_current_runs, true_gains

MASS = 2.8


@pytest.fixture(scope="module")
def pair(tmp_path_factory) -> tuple[Path, Path, np.ndarray]:
    """An unloaded and a loaded run (20 s at 50 Hz, currents as efforts) and the true gains."""
    directory = tmp_path_factory.mktemp("drives")
    gains = true_gains(2)
    runs = panda_current_runs(MASS, gains, duration=20.0, rate=50.0, seed=1, robot_seed=2).runs
    paths = []
    for name, recording in (("unloaded", runs.unloaded), ("loaded", runs.loaded)):
        path = directory / f"{name}.npz"
        states = JointStates(
            recording.t, runs.links.joint_names, recording.q, recording.dq, None, recording.effort
        )
        write_joint_file(path, states)
        paths.append(path)
    return paths[0], paths[1], gains


def _description(path: Path, effort: str) -> Path:
    """An input description of the package file ``path`` with the ``effort`` entry."""
    description = path.with_suffix(f".{effort.split()[-1].strip('}')}.yaml")
    description.write_text(
        f"streams:\n  log: {{file: {path}, time: t, time_unit: s}}\n"
        "joints:\n  position: {key: q, unit: rad}\n  velocity: {key: dq, unit: rad}\n"
        f"  effort: {effort}\n"
    )
    return description


def test_gains_from_files(pair) -> None:
    """Gains within 1 % of the truth; the document and the snippet carry them."""
    unloaded, loaded, gains = pair
    result = calibrate_drives(
        example_robot_urdf("panda"),
        [(run_source(str(unloaded)), run_source(str(loaded)))],
        PANDA_FLANGE,
        MASS,
    )
    assert result.estimate is not None and not result.refused
    assert np.all(np.abs(result.estimate.gains / gains - 1) < 0.01)
    entry = result.document["gains"]["panda_joint2"]
    assert entry["determined"] and entry["gain"] == pytest.approx(gains[1], rel=0.01)
    assert result.yaml.startswith("effort: {unit: A, torque_constant: {panda_joint1: ")
    assert result.document["torque_constants"].count(",") == 6
    assert any("efforts taken as motor currents" in f.message for f in result.findings)


def test_description_with_currents_reads_raw_currents(pair) -> None:
    """A description's torque constant is ignored: the gains are the raw currents'."""
    unloaded, loaded, gains = pair
    effort = "{key: effort, unit: A, torque_constant: 3.0}"
    sources = [(LogSource(input=str(_description(p, effort))),) for p in (unloaded, loaded)]
    result = calibrate_drives(
        example_robot_urdf("panda"), [(sources[0][0], sources[1][0])], PANDA_FLANGE, MASS
    )
    assert result.estimate is not None
    assert np.all(np.abs(result.estimate.gains / gains - 1) < 0.01)


def test_description_with_torques_is_refused(pair) -> None:
    """Efforts already in N·m have no gain to calibrate: refused, saying what to give."""
    unloaded, loaded, _ = pair
    effort = "{key: effort, unit: N·m}"
    source = LogSource(input=str(_description(unloaded, effort)))
    with pytest.raises(InputError, match="needs motor currents, but the efforts' unit is N·m"):
        calibrate_drives(example_robot_urdf("panda"), [(source, source)], PANDA_FLANGE, MASS)


@pytest.mark.parametrize("mass", [0.0, -1.0])
def test_no_weighed_mass_is_refused(pair, mass: float) -> None:
    """A mass not > 0 is refused before anything is read."""
    unloaded, loaded, _ = pair
    with pytest.raises(InputError, match="--mass must be > 0 kg"):
        calibrate_drives(
            "no.urdf", [(run_source(str(unloaded)), run_source(str(loaded)))], PANDA_FLANGE, mass
        )


def test_check_prints_the_controllers_gains_at_standstill(pair, tmp_path: Path) -> None:
    """With target torque and target current logged, --check gives their ratio at standstill
    (the first 2 s held still here) beside each gain."""
    unloaded, loaded, gains = pair
    controller = gains * 1.1
    sources = []
    for path in (unloaded, loaded):
        with np.load(path) as data:
            arrays = dict(data)
        arrays["q"][:100] = arrays["q"][0]
        arrays["dq"][:100] = 0.0
        arrays["i_target"] = arrays["effort"] + 0.5
        arrays["tau_target"] = arrays["i_target"] * controller
        still = tmp_path / path.name
        np.savez(still, **arrays)
        effort = (
            "{key: effort, unit: A, torque_constant: 1.0}\n"
            "  effort_target: {key: tau_target, unit: N·m}\n"
            "  current_target: {key: i_target, unit: A}"
        )
        sources.append(LogSource(input=str(_description(still, effort))))
    result = calibrate_drives(
        example_robot_urdf("panda"),
        [(sources[0], sources[1])],
        PANDA_FLANGE,
        MASS,
        CalibrateDrivesOptions(check=True),
    )
    assert list(result.document["controller_gains"].values()) == pytest.approx(controller)
    assert result.summary[-8].startswith("check: calibrated gain | the controller's")
    assert result.summary[-1].endswith(f"| {controller[6]:.5g}")


def test_gains_go_to_the_node_and_the_command_line(pair) -> None:
    """The same gains as the node's parameter and as --torque-constants, in joint order."""
    unloaded, loaded, _ = pair
    result = calibrate_drives(
        example_robot_urdf("panda"),
        [(run_source(str(unloaded)), run_source(str(loaded)))],
        PANDA_FLANGE,
        [MASS],
    )
    assert result.estimate is not None
    node = result.document["node_parameters"]["torques_torque_constants"]
    listed = [float(v) for v in result.document["torque_constants"].split(",")]
    assert listed == pytest.approx(node, rel=1e-4)
    assert result.summary[-1].startswith("node (payload_torques mode): torques_torque_constants: [")
