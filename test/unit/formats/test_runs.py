"""Several runs in one input description (:mod:`inertia_id_ros.formats.runs`): joined on one
clock with a gap no derivative filter spans, split by run and by time within each run, and
refused where a name or a signal does not match."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
import yaml

from inertia_id_ros.errors import DataError
from inertia_id_ros.formats.data import with_derivatives
from inertia_id_ros.formats.description import InputDescription, StampWindow
from inertia_id_ros.formats.recording import load_recording, split_recording
from inertia_id_ros.formats.source import LogSource

JOINTS = ("j1", "j2")
RATE = 200.0


def write_run(path: Path, t0: float, seconds: float, phase: float) -> Path:
    """A canonical NPZ of two joints moving as sines (rad) from UNIX-like stamp ``t0`` s."""
    t = t0 + np.arange(int(seconds * RATE)) / RATE
    q = np.column_stack([np.sin(2.0 * (t - t0) + phase), np.cos(1.5 * (t - t0) + phase)])
    np.savez(path, t=t, q=q, effort=q * 2.0, joint_names=np.array(JOINTS))
    return path


@pytest.fixture
def runs_yaml(tmp_path: Path) -> Path:
    write_run(tmp_path / "a.npz", 100.0, 4.0, 0.0)
    write_run(tmp_path / "b.npz", 0.0, 3.0, 1.0)  # an earlier clock: runs need not be in order
    write_run(tmp_path / "c.npz", 500.0, 5.0, 2.0)
    description = {
        "runs": [{"file": "a.npz"}, {"file": "b.npz", "window": [0.5, 3.0]}, {"file": "c.npz"}],
        "held_out_runs": ["c"],
    }
    path = tmp_path / "runs.yaml"
    path.write_text(yaml.safe_dump(description))
    return path


def test_runs_joined_and_differentiated_each_on_its_own(runs_yaml: Path) -> None:
    description = LogSource(input=str(runs_yaml)).description()
    recording = load_recording(description, JOINTS)
    assert [s.name for s in recording.runs] == ["a", "b", "c"]
    t = recording.joint_states.t
    assert np.all(np.diff(t) > 0)
    assert np.diff(t).max() > 9.9  # the gaps between runs
    assert recording.runs[1].t0 - recording.runs[1].lo < 1e-9
    assert recording.runs[1].hi - recording.runs[1].t0 == pytest.approx(2.5, abs=0.01)
    half_width = 0.05
    states = with_derivatives(recording.joint_states, half_width)
    for span in recording.runs:  # no sample within the filter's reach of a run's ends
        inside = (states.t >= span.lo) & (states.t <= span.hi)
        assert inside.any()
        assert states.t[inside].min() >= span.lo + half_width - 1e-9
        assert states.t[inside].max() <= span.hi - half_width + 1e-9
    # the derivative of each run's own sine everywhere: nothing mixed across a gap
    starts = {"a": 0.0, "b": 1.0, "c": 2.0}  # phases
    for span in recording.runs:
        inside = (states.t >= span.lo) & (states.t <= span.hi)
        phase = starts[span.name]
        local = states.t[inside] - span.t0 + (0.5 if span.name == "b" else 0.0)
        assert np.allclose(states.dq[inside, 0], 2.0 * np.cos(2.0 * local + phase), atol=0.01)
    assert any("3 runs" in note for note in recording.notes)


def test_split_by_run_and_by_time_within_each(runs_yaml: Path) -> None:
    description = LogSource(input=str(runs_yaml)).description()
    recording = load_recording(description, JOINTS)
    train, held_out = split_recording(recording, description)
    assert [s.name for s in train.runs] == ["a", "b"]
    assert held_out is not None and [s.name for s in held_out.runs] == ["c"]
    assert held_out.joint_states.n_samples == 5 * int(RATE)
    source = LogSource(input=str(runs_yaml), held_out_runs=["a"], held_out_from=2.0)
    description = source.description()
    train, held_out = split_recording(load_recording(description, JOINTS), description)
    assert [s.name for s in train.runs] == ["b", "c"]
    assert held_out is not None and [s.name for s in held_out.runs] == ["a", "b", "c"]
    for span in train.runs:
        assert span.hi - span.t0 <= 2.0 + 1e-9


def test_runs_refused_naming_the_fix(runs_yaml: Path, tmp_path: Path) -> None:
    with pytest.raises(DataError, match=r"--held-out-runs: no run\(s\) \['d'\] \(runs: a, b, c\)"):
        LogSource(input=str(runs_yaml), held_out_runs=["d"]).description()
    np.savez(
        tmp_path / "x.npz",
        t=np.arange(400) / RATE,
        q=np.zeros((400, 1)),
        joint_names=np.array(["j1"]),
    )
    (tmp_path / "bad.yaml").write_text(
        yaml.safe_dump({"runs": [{"file": "a.npz"}, {"file": "x.npz"}]})
    )
    description = LogSource(input=str(tmp_path / "bad.yaml")).description()
    with pytest.raises(DataError, match="runs a and x differ in their joints"):
        load_recording(description, JOINTS)
    (tmp_path / "every.yaml").write_text(
        yaml.safe_dump({"runs": [{"file": "a.npz"}], "held_out_runs": ["a"]})
    )
    description = LogSource(input=str(tmp_path / "every.yaml")).description()
    with pytest.raises(DataError, match="every run is held out"):
        split_recording(load_recording(description, JOINTS), description)


def test_a_window_in_the_logs_own_stamps_and_a_split_cancelled(runs_yaml: Path) -> None:
    description = LogSource(input=str(runs_yaml)).description()
    run_a = description.runs[0].resolved()
    windowed = replace(run_a, window=StampWindow(101.0, 102.5))  # a.npz's stamps start at 100 s
    states = load_recording(windowed, JOINTS).joint_states
    assert states.t[0] == pytest.approx(101.0) and states.t[-1] == pytest.approx(102.5)
    assert InputDescription.from_mapping(
        {
            "streams": {"s": {"file": "a.npz", "time": "t", "time_unit": "s"}},
            "joints": {"position": {"key": "q", "unit": "rad"}},
            "window": {"stamps": [101, 102.5]},
        },
        runs_yaml.parent,
        "w.yaml",
    ).window == StampWindow(101.0, 102.5)
    whole = LogSource(input=str(runs_yaml), no_split=True).description()
    assert whole.held_out_runs == () and whole.held_out_from is None
    train, held_out = split_recording(load_recording(whole, JOINTS), whole)
    assert held_out is None and [s.name for s in train.runs] == ["a", "b", "c"]
    with pytest.raises(DataError, match="--no-split cancels the split"):
        LogSource(input=str(runs_yaml), no_split=True, held_out_from=1.0).description()


def test_whole_body_samples_are_not_fitted_across_a_gap() -> None:
    from inertia_id_ros.formats.data import JointStates
    from inertia_id_ros.formats.whole_body_log import SensorSeries, synchronise

    t = np.concatenate([np.arange(0.0, 3.0, 0.005), np.arange(13.0, 16.0, 0.005)])  # two runs
    q = np.column_stack([np.sin(t), np.cos(t)])
    states = JointStates(t, JOINTS, q)
    wrenches = SensorSeries("F/T", "ft", "contact", t[::2], np.zeros((t[::2].size, 6)))
    recording = synchronise("runs", "joint states", states, [wrenches], None, half_width=0.05)
    kept = recording.states.t
    assert ((kept > 2.95) & (kept < 13.05)).sum() == 0  # no one-sided fit by the gap
    assert np.allclose(recording.states.dq[:, 0], np.cos(kept), atol=1e-3)
