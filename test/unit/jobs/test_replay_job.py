"""The replay job called from Python (no argparse): without a parameter file the node's default
mode with the parameters given; its typed result (the final estimate, the findings, the result
JSON, the summary, the CSV); a refused input and a replay without an estimate; options the mode
does not take. Every mode with its parameter file: ``test/unit/modes/test_mode_contract.py``."""

from __future__ import annotations

import numpy as np
import pytest

from helpers.paths import REPO
from helpers.recordings import write_bag
from inertia_id_ros import modes
from inertia_id_ros.core.robots import example_robot_urdf
from inertia_id_ros.errors import InputError
from inertia_id_ros.formats.data import read_payload_bag
from inertia_id_ros.formats.source import LogSource
from inertia_id_ros.jobs.replay import ReplayOptions, replay_with_parameters
from inertia_id_ros.sim.payload import default_payload_theta

PANDA = str(example_robot_urdf("panda"))


@pytest.fixture(scope="module")
def bag(tmp_path_factory):
    """4 s of the simulated Panda with its F/T sensor (the payload mode's example)."""
    return modes.get("payload").example_log(tmp_path_factory.mktemp("replay")).replay


def test_without_a_parameter_file_the_default_mode_replays_with_the_parameters_given(bag, tmp_path):
    result = replay_with_parameters(
        LogSource(bag=bag), None, {"urdf_path": PANDA, "window_sec": 4.0, "update_rate_hz": 1.0}
    )
    assert result.mode is modes.default() and not result.refused
    assert result.estimate.mass == pytest.approx(default_payload_theta()[0], rel=1e-3)
    assert result.document["mode"] == modes.default().name
    assert result.document["window_sec"] == 4.0 and result.document["update_rate_hz"] == 1.0
    assert result.document["bodies"][0]["frame"] == "panda_link8"  # the wrenches' frame_id
    assert len(result.document["updates"]) == len(result.replay.updates) == 4
    assert result.summary[0].startswith("replay: 4 updates at 1 Hz over 4.0 s of")
    assert result.written({"csv": "c", "json": "j", "png": None}) == ["c", "j", None]
    result.write_csv(tmp_path / "replay.csv")
    assert len((tmp_path / "replay.csv").read_text().splitlines()) == 5


def test_a_refused_input_and_a_replay_without_an_estimate_give_no_estimate(bag, tmp_path):
    recording = read_payload_bag(bag)
    states, wrenches = recording.joint_states, recording.wrenches
    degrees = write_bag(
        tmp_path / "degrees",
        "mcap",
        states.t,
        states.joint_names,
        np.degrees(states.q),
        np.degrees(states.dq),
        None,
        wrenches.t,
        wrenches.wrench,
        frame=wrenches.frame,
    )
    refused = replay_with_parameters(LogSource(bag=str(degrees)), None, {"urdf_path": PANDA})
    assert refused.estimate is None and refused.refused
    assert set(refused.document) == {"source", "findings", "refused"}
    assert any(f.kind == "degrees" for f in refused.findings), refused.findings

    short = replay_with_parameters(
        LogSource(bag=bag), None, {"urdf_path": PANDA, "window_sec": 0.05}
    )
    assert short.estimate is None and not short.refused and short.document == {}
    assert short.last_status == "too_few_samples"
    assert short.no_estimate.startswith(f"{bag}: no estimate in the replay; last update: ")


def test_options_another_mode_takes_are_refused_before_replaying(bag):
    with pytest.raises(InputError, match="--sensor-frame only apply to payload replays"):
        replay_with_parameters(
            LogSource(bag=bag),
            str(REPO / "config" / "panda_links.yaml"),
            {"urdf_path": PANDA},
            ReplayOptions(given=("sensor_frame",)),
        )
    with pytest.raises(InputError, match="replay reads a bag or an input description"):
        replay_with_parameters(LogSource(data="log.npz"), None, {"urdf_path": PANDA})
