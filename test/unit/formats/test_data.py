"""Recorded data: NPZ, CSV and ROS 2 bags (MCAP and sqlite3) read back; bad files rejected."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from helpers.recordings import write_bag, write_csv
from inertia_id_ros.errors import DataError
from inertia_id_ros.formats.data import (
    JointStates,
    check_joints,
    check_wrench_frame,
    read_joint_bag,
    read_joint_file,
    read_payload_bag,
    read_payload_file,
    with_derivatives,
)

JOINTS = ("j1", "j2", "j3")
STAMP0 = 1_700_000_000.0
"""Bag stamps are UNIX times (s): precision at that magnitude is part of what is tested."""


def sample_joint_states(n: int = 50, rate: float = 100.0, t0: float = 0.0) -> JointStates:
    """Smooth joint states of :data:`JOINTS` with exact derivatives and efforts."""
    t = t0 + np.arange(n) / rate
    phase = np.arange(1, len(JOINTS) + 1)
    s = t - t0
    q = np.sin(np.outer(s, phase))
    dq = np.cos(np.outer(s, phase)) * phase
    ddq = -np.sin(np.outer(s, phase)) * phase**2
    effort = 2.0 * q + 0.5
    return JointStates(t, JOINTS, q, dq, ddq, effort)


def sample_wrenches(t: np.ndarray) -> np.ndarray:
    return np.column_stack([np.sin(t - t[0] + k) for k in range(6)])


def assert_one_line(error: pytest.ExceptionInfo, *fragments: str) -> None:
    message = str(error.value)
    assert "\n" not in message, message
    for fragment in fragments:
        assert fragment in message, message


# ---- NPZ and CSV ---------------------------------------------------------------------------


def test_npz_payload_round_trip(tmp_path: Path) -> None:
    states = sample_joint_states()
    wrench = sample_wrenches(states.t)
    path = tmp_path / "payload.npz"
    np.savez(
        path,
        t=states.t,
        joint_names=np.array(JOINTS),
        q=states.q,
        dq=states.dq,
        wrench=wrench,
        wrench_frame="sensor",
    )
    recording = read_payload_file(path)
    assert recording.joint_states.joint_names == JOINTS
    np.testing.assert_array_equal(recording.joint_states.q, states.q)
    np.testing.assert_array_equal(recording.joint_states.dq, states.dq)
    assert recording.joint_states.ddq is None and recording.joint_states.effort is None
    np.testing.assert_array_equal(recording.wrenches.t, states.t)
    np.testing.assert_array_equal(recording.wrenches.wrench, wrench)
    assert recording.wrenches.frame == "sensor" and recording.source == str(path)
    check_wrench_frame(recording, "sensor")
    with pytest.raises(DataError) as error:
        check_wrench_frame(recording, "other_frame")
    assert_one_line(error, "'sensor'", "'other_frame'")


def test_npz_joint_round_trip(tmp_path: Path) -> None:
    states = sample_joint_states()
    path = tmp_path / "links.npz"
    np.savez(
        path,
        t=states.t,
        joint_names=np.array(JOINTS),
        q=states.q,
        dq=states.dq,
        ddq=states.ddq,
        effort=states.effort,
    )
    loaded = read_joint_file(path)
    for name in ("t", "q", "dq", "ddq", "effort"):
        np.testing.assert_array_equal(getattr(loaded, name), getattr(states, name))


def test_csv_round_trip(tmp_path: Path) -> None:
    states = sample_joint_states()
    wrench = sample_wrenches(states.t)
    recording = read_payload_file(
        write_csv(tmp_path / "p.csv", states, wrench, wrench_frame="sensor")
    )
    np.testing.assert_array_equal(recording.joint_states.q, states.q)
    np.testing.assert_array_equal(recording.joint_states.dq, states.dq)
    np.testing.assert_array_equal(recording.wrenches.wrench, wrench)
    assert recording.wrenches.frame == "sensor"
    loaded = read_joint_file(
        write_csv(tmp_path / "l.csv", states, kinds=("q", "dq", "ddq", "effort"))
    )
    assert loaded.joint_names == JOINTS
    np.testing.assert_array_equal(loaded.effort, states.effort)
    np.testing.assert_array_equal(loaded.ddq, states.ddq)


def _npz(tmp_path: Path, **changes) -> Path:
    states = sample_joint_states()
    content = dict(
        t=states.t,
        joint_names=np.array(JOINTS),
        q=states.q,
        wrench=sample_wrenches(states.t),
        effort=states.effort,
    )
    content.update(changes)
    path = tmp_path / "bad.npz"
    np.savez(path, **{k: v for k, v in content.items() if v is not None})
    return path


@pytest.mark.parametrize(
    "changes, fragments",
    [
        ({"wrench": None}, ["missing 'wrench'"]),
        ({"q": None}, ["missing 'q'"]),
        ({"q": np.zeros((50, 2))}, ["'q' has shape (50, 2), expected (50, 3)"]),
        ({"wrench": np.zeros((50, 5))}, ["'wrench' has shape (50, 5)"]),
        (
            {"q": np.where(np.arange(50)[:, None] == 7, np.nan, 1.0) * np.ones((50, 3))},
            ["'q' has NaN", "sample 7"],
        ),
        ({"t": np.r_[np.arange(25), np.arange(25)] / 100.0}, ["strictly increasing", "sample 25"]),
        ({"joint_names": np.array(["j1", "j1", "j3"])}, ["['j1']", "more than once"]),
        ({"joint_names": np.arange(3)}, ["'joint_names' must be a 1-D array of strings"]),
    ],
)
def test_bad_npz_raises_one_line(tmp_path: Path, changes: dict, fragments: list[str]) -> None:
    with pytest.raises(DataError) as error:
        read_payload_file(_npz(tmp_path, **changes))
    assert_one_line(error, "bad.npz", *fragments)


def test_bad_files_raise_one_line(tmp_path: Path) -> None:
    with pytest.raises(DataError) as error:
        read_payload_file(tmp_path / "absent.npz")
    assert_one_line(error, "no such file")
    (tmp_path / "data.txt").write_text("t\n0\n")
    with pytest.raises(DataError) as error:
        read_payload_file(tmp_path / "data.txt")
    assert_one_line(error, "unknown data format '.txt'")
    (tmp_path / "corrupt.npz").write_bytes(b"not a zip")
    with pytest.raises(DataError) as error:
        read_payload_file(tmp_path / "corrupt.npz")
    assert_one_line(error, "cannot read as NPZ")
    with pytest.raises(DataError) as error:
        read_joint_file(_npz(tmp_path, effort=None))
    assert_one_line(error, "missing 'effort'")


@pytest.mark.parametrize(
    "edit, fragments",
    [
        (
            lambda lines: [lines[0].replace(",dq:j2", ",dq:j9")] + lines[1:],
            ["missing column(s) ['dq:j2']"],
        ),
        (
            lambda lines: lines[:3] + [lines[3].replace(",", ",x", 1)] + lines[4:],
            ["line 4", "not a number"],
        ),
        (
            lambda lines: lines[:3] + [lines[3].rsplit(",", 1)[0]] + lines[4:],
            ["line 4 has 12 values, the header 13"],
        ),
        (
            lambda lines: [lines[0].replace("wrench:tz", "wrench:mz")] + lines[1:],
            ["missing column(s) ['wrench:tz']"],
        ),
        (lambda lines: [lines[0].replace("t,", "time,", 1)] + lines[1:], ["no column 't'"]),
    ],
)
def test_bad_csv_raises_one_line(tmp_path: Path, edit, fragments: list[str]) -> None:
    states = sample_joint_states(10)
    path = write_csv(tmp_path / "bad.csv", states, sample_wrenches(states.t))
    path.write_text("\n".join(edit(path.read_text().splitlines())) + "\n")
    with pytest.raises(DataError) as error:
        read_payload_file(path)
    assert_one_line(error, "bad.csv", *fragments)


def test_check_joints(tmp_path: Path) -> None:
    states = sample_joint_states(5)
    check_joints(states, ["j0", *JOINTS], required=["j1"])
    with pytest.raises(DataError) as error:
        check_joints(states, ["j1", "j2"], source="rec.npz")
    assert_one_line(error, "rec.npz", "['j3'] are not in the robot model")
    with pytest.raises(DataError) as error:
        check_joints(states, ["j0", *JOINTS], required=["j0", "j1"])
    assert_one_line(error, "lacks joint(s) ['j0']")


def test_with_derivatives_differentiates_positions() -> None:
    """Without recorded derivatives, a quadratic fit over +-0.05 s recovers those of a smooth
    motion (to its truncation error), and the samples within 0.05 s of the ends are dropped."""
    exact = sample_joint_states(200, rate=200.0)
    states = JointStates(exact.t, exact.joint_names, exact.q, effort=exact.effort)
    derived = with_derivatives(states, half_width=0.05)
    keep = (exact.t >= exact.t[0] + 0.05) & (exact.t <= exact.t[-1] - 0.05)
    np.testing.assert_array_equal(derived.t, exact.t[keep])
    np.testing.assert_array_equal(derived.q, exact.q[keep])
    np.testing.assert_array_equal(derived.effort, exact.effort[keep])
    np.testing.assert_allclose(derived.dq, exact.dq[keep], atol=2e-2)
    np.testing.assert_allclose(derived.ddq, exact.ddq[keep], atol=0.2)
    assert with_derivatives(exact, half_width=0.05) is exact
    with pytest.raises(DataError, match="too short"):
        with_derivatives(JointStates(exact.t[:5], JOINTS, exact.q[:5]), half_width=0.05)


# ---- ROS 2 bags ----------------------------------------------------------------------------


@pytest.mark.parametrize("storage", ["mcap", "sqlite3"])
def test_bag_round_trip(tmp_path: Path, storage: str) -> None:
    """Joint states (names in varying order) and wrenches at their own rates read back sorted by
    header stamp, in the first message's joint order."""
    states = sample_joint_states(30, rate=100.0, t0=STAMP0)
    wrench_t = STAMP0 + 0.0025 + np.arange(55) / 200.0
    wrench = sample_wrenches(wrench_t)
    path = write_bag(
        tmp_path / "rec",
        storage,
        states.t,
        JOINTS,
        states.q,
        states.dq,
        states.effort,
        wrench_t,
        wrench,
        name_orders=[[0, 1, 2], [2, 0, 1]],
    )
    recording = read_payload_bag(path)
    js = recording.joint_states
    assert js.joint_names == JOINTS and js.ddq is None
    np.testing.assert_allclose(js.t, states.t, rtol=0, atol=1e-6)
    np.testing.assert_array_equal(js.q, states.q)
    np.testing.assert_array_equal(js.dq, states.dq)
    np.testing.assert_array_equal(js.effort, states.effort)
    np.testing.assert_allclose(recording.wrenches.t, wrench_t, rtol=0, atol=1e-6)
    np.testing.assert_array_equal(recording.wrenches.wrench, wrench)
    assert recording.wrenches.frame == "sensor"
    links = read_joint_bag(path)
    np.testing.assert_array_equal(links.effort, states.effort)


def test_bag_single_storage_file_and_topics(tmp_path: Path) -> None:
    states = sample_joint_states(10, t0=STAMP0)
    path = write_bag(
        tmp_path / "rec",
        "mcap",
        states.t,
        JOINTS,
        states.q,
        wrench_t=states.t,
        wrench=sample_wrenches(states.t),
        joint_topic="/arm/joint_states",
        wrench_topic="/ft",
    )
    (storage_file,) = path.glob("*.mcap")
    recording = read_payload_bag(storage_file, "/arm/joint_states", "/ft")
    assert recording.joint_states.dq is None
    np.testing.assert_array_equal(recording.joint_states.q, states.q)
    with pytest.raises(DataError) as error:
        read_payload_bag(path)
    assert_one_line(
        error, "no topic '/joint_states'", "/arm/joint_states (sensor_msgs/msg/JointState)"
    )
    with pytest.raises(DataError) as error:
        read_payload_bag(path, "/ft", "/ft")
    assert_one_line(
        error, "'/ft' carries geometry_msgs/msg/WrenchStamped, expected sensor_msgs/msg/JointState"
    )
    with pytest.raises(DataError) as error:
        read_joint_bag(path, "/arm/joint_states")
    assert_one_line(error, "carry no effort")


def test_bad_bags_raise_one_line(tmp_path: Path) -> None:
    states = sample_joint_states(10, t0=STAMP0)
    varying = write_bag(
        tmp_path / "varying", "mcap", states.t, JOINTS, states.q, name_orders=[[0, 1, 2], [0, 1]]
    )
    with pytest.raises(DataError) as error:
        read_joint_bag(varying)
    assert_one_line(error, "message 1", "every message must name the same joints")
    unstamped = write_bag(
        tmp_path / "unstamped", "sqlite3", np.zeros(1), JOINTS, states.q[:1], effort=states.q[:1]
    )
    with pytest.raises(DataError) as error:
        read_joint_bag(unstamped)
    assert_one_line(error, "header stamps on '/joint_states' are zero")
    with pytest.raises(DataError) as error:
        read_payload_bag(tmp_path / "absent")
    assert_one_line(error, "no such bag")
    (tmp_path / "not_a_bag").mkdir()
    with pytest.raises(DataError) as error:
        read_payload_bag(tmp_path / "not_a_bag")
    assert_one_line(error, "cannot read as a ROS 2 bag")
