"""``inertia-id record-sim`` and ``replay``: a simulated bag replayed through the node's estimator
end to end (CSV, JSON, PNG, final estimate vs truth); update timing in bag time; bad input."""

from __future__ import annotations

import csv
import json
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest
from PIL import Image

from inertia_id_ros import cli
from inertia_id_ros.core.inertia import inertia_from_theta
from inertia_id_ros.core.robots import example_robot_urdf
from inertia_id_ros.formats.data import read_bag_messages, read_payload_bag
from inertia_id_ros.modes.payload_replay import CSV_COLUMNS, payload_replay_inputs
from inertia_id_ros.offline.replay import JointStateRange, bag_feeds, replay_feeds
from inertia_id_ros.online.session import Update

DURATION, RATE = 12.0, 200.0


def run(capsys, *argv: str) -> tuple[int, str, str]:
    code = cli.main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture(scope="module")
def recording(tmp_path_factory) -> tuple[Path, Path]:
    """12 s of the simulated Panda at 200 Hz as an MCAP bag, and the truth as a result JSON."""
    directory = tmp_path_factory.mktemp("recording")
    bag, truth = directory / "sim_bag", directory / "truth.json"
    assert (
        cli.main(
            [
                "record-sim",
                str(bag),
                "--duration",
                str(DURATION),
                "--rate",
                str(RATE),
                "--truth-json",
                str(truth),
            ]
        )
        == 0
    )
    return bag, truth


def test_recorded_bag_holds_the_simulation_in_arrival_order(recording):
    bag, truth = recording
    assert list(bag.glob("*.mcap"))
    recorded = read_payload_bag(bag)
    n = int(DURATION * RATE)
    assert recorded.joint_states.t.size == recorded.wrenches.t.size == n
    assert recorded.wrenches.frame == "panda_link8"
    steps = np.diff(recorded.joint_states.t)
    assert np.allclose(steps, 1.0 / RATE, atol=1e-6)  # float64 resolves 0.24 us at 1.7e9 s
    optional = [
        ("/robot_description", "std_msgs/msg/String"),
        ("/ft_sensor/wrench", "geometry_msgs/msg/WrenchStamped"),
        ("/none", "x/msg/Y"),
    ]
    messages = read_bag_messages(
        bag, [("/joint_states", "sensor_msgs/msg/JointState")], optional=optional
    )
    log_times = [log_time for _, log_time, _ in messages]
    assert log_times == sorted(log_times) and len(messages) == 2 * n + 1
    assert messages[0][0] == "/robot_description" and "<robot" in messages[0][2].data
    assert [topic for topic, _, _ in messages[1:3]] == ["/joint_states", "/ft_sensor/wrench"]
    assert json.loads(truth.read_text())["bodies"][0]["mass"] == 1.5


def test_replay_writes_csv_json_png_and_converges_to_the_truth(capsys, recording, tmp_path):
    bag, truth = recording
    csv_path, json_path, png_path = (tmp_path / name for name in ("r.csv", "r.json", "r.png"))
    code, out, err = run(
        capsys,
        "replay",
        bag,
        "--csv",
        csv_path,
        "--json",
        json_path,
        "--png",
        png_path,
        "--truth",
        truth,
    )
    assert code == 0, err
    with open(csv_path, newline="") as stream:
        rows = list(csv.DictReader(stream))
    assert tuple(rows[0]) == CSV_COLUMNS
    assert len(rows) == int(DURATION * 2.0)  # 2 Hz over 12 s of bag time (the last after the end)
    elapsed = np.array([float(row["elapsed"]) for row in rows])
    assert np.allclose(elapsed, 0.5 * np.arange(1, len(rows) + 1), atol=1e-3)
    statuses = [row["status"] for row in rows]
    assert statuses[0] == "too_few_samples" and statuses[-1] == "ok"
    ok = [row for row in rows if row["status"] == "ok"]
    assert len(ok) >= len(rows) - 4 and statuses.index("ok") + len(ok) == len(rows)
    samples = [int(row["n_samples"]) for row in ok]
    assert samples == sorted(samples) and samples[-1] <= 10.0 * RATE + 1  # 10 s window
    final = ok[-1]
    truth_theta = np.array(json.loads(truth.read_text())["bodies"][0]["theta"])
    mass, com, _ = inertia_from_theta(truth_theta)
    assert abs(float(final["m"]) - mass) / mass < 0.005
    assert np.linalg.norm([float(final[f"com_{a}"]) for a in "xyz"] - com) < 0.002
    assert abs(float(final["m"]) - mass) < 5 * float(final["std_m"])
    assert float(final["min_pseudo_inertia_eig"]) > 0 and 1 < float(final["condition_number"]) < 10
    assert [float(row["std_m"]) for row in ok][-1] < float(ok[0]["std_m"])  # converging
    # the JSON: a result (usable by export) plus every update
    result = json.loads(json_path.read_text())
    assert result["bodies"][0]["frame"] == "panda_link8" and result["bodies"][0]["fully_consistent"]
    assert len(result["updates"]) == len(rows) and result["updates"][0]["m"] is None
    assert result["updates"][-1]["m"] == pytest.approx(float(final["m"]), rel=1e-10)
    # the PNG
    assert png_path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    with Image.open(png_path) as image:
        image.verify()
    with Image.open(png_path) as image:
        assert image.size[0] > 600 and image.size[1] > 500
    assert "vs truth: mass error" in out and f"wrote {png_path}" in out
    assert result["refused"] is False and "REFUSED" not in out  # the final estimate checked


def test_replay_refuses_a_final_estimate_that_fails_the_plausibility_checks(
    capsys, recording, tmp_path
):
    """The bag's wrenches negated (``--flip-wrench-sign`` on a sensor that keeps the convention):
    no consistent body explains them, the residuals far exceed the unconstrained fit's ->
    refused, exit 3, as the fit commands."""
    bag, _ = recording
    out_json = tmp_path / "flipped.json"
    code, out, err = run(capsys, "replay", bag, "--flip-wrench-sign", "--json", out_json)
    assert code == 3, err
    assert "inertia-id replay: refused:" in err and "REFUSED" in out
    result = json.loads(out_json.read_text())
    assert result["refused"] is True
    assert any(
        f["kind"] == "residual_ratio" and f["severity"] == "refuse" for f in result["findings"]
    )


def test_updates_follow_bag_time_and_see_exactly_the_messages_before_them():
    """A stub session logs the calls: each update comes after the messages logged before its
    time and before the others, every 1 / rate s of log time, at that bag time."""

    class Recorder:
        def __init__(self):
            self.calls = []

        def add_joint_state(self, t, names, q, dq, effort):
            self.calls.append(("joint", t, dq is None and effort is None))

        def add_wrench(self, t, wrench, frame_id):
            self.calls.append(("wrench", t, frame_id))

        def update(self, now):
            self.calls.append(("solve", now))
            return Update(now, "ok", estimate="estimate")

    def message(stamp: float, **fields):
        sec = int(stamp)
        stamp_msg = SimpleNamespace(sec=sec, nanosec=int(round((stamp - sec) * 1e9)))
        return SimpleNamespace(header=SimpleNamespace(stamp=stamp_msg, frame_id="s"), **fields)

    force = SimpleNamespace(x=1.0, y=2.0, z=3.0)
    messages = []
    for k in range(10):  # 0.0 .. 0.9 s, a joint state and a wrench every 0.1 s
        t = 100.0 + 0.1 * k
        messages.append(
            (
                "/joint_states",
                int(round((t + 0.001) * 1e9)),
                message(t, name=["j"], position=[0.0], velocity=[], effort=[]),
            )
        )
        messages.append(
            (
                "/ft_sensor/wrench",
                int(round((t + 0.002) * 1e9)),
                message(t, wrench=SimpleNamespace(force=force, torque=force)),
            )
        )
    messages.append(("/other", int(100.95e9), None))
    recorder = Recorder()
    feeds = bag_feeds(recorder, payload_replay_inputs(recorder, "s"), JointStateRange())
    updates, start = replay_feeds(recorder, messages, 4.0, feeds)
    assert start == pytest.approx(100.001)
    assert [round(u.time - start, 9) for u in updates] == [0.25, 0.5, 0.75, 1.0]
    assert all(u.status == "ok" and u.estimate == "estimate" for u in updates)
    solves = [i for i, call in enumerate(recorder.calls) if call[0] == "solve"]
    fed_before = [
        sum(call[0] in ("joint", "wrench") for call in recorder.calls[:i]) for i in solves
    ]
    assert fed_before == [6, 10, 16, 20]  # messages logged before 0.251, 0.501, 0.751, 1.001 s
    assert recorder.calls[0] == ("joint", 100.0, True)  # empty arrays -> None, as the node
    assert recorder.calls[1] == ("wrench", 100.0, "s")


def test_sqlite_bag_with_explicit_urdf_and_sensor_frame(capsys, tmp_path):
    bag = tmp_path / "short"
    code, out, err = run(
        capsys,
        "record-sim",
        bag,
        "--duration",
        3,
        "--rate",
        150,
        "--storage",
        "sqlite3",
        "--seed",
        3,
    )
    assert code == 0 and "(sqlite3)" in out, err
    assert list(bag.glob("*.db3"))
    csv_path = tmp_path / "short.csv"
    code, out, err = run(
        capsys,
        "replay",
        bag,
        "--urdf",
        example_robot_urdf("panda"),
        "--sensor-frame",
        "panda_link8",
        "--update-rate",
        1,
        "--window-sec",
        5,
        "--csv",
        csv_path,
    )
    assert code == 0, err
    with open(csv_path, newline="") as stream:
        rows = list(csv.DictReader(stream))
    assert len(rows) == 3 and rows[-1]["status"] == "ok"


def test_bad_replay_and_record_input_exit_2_with_one_line(capsys, recording, tmp_path):
    bag, _ = recording
    cases = [
        (["replay", tmp_path / "missing"], "no such bag"),
        (["replay", bag, "--update-rate", 0], "--update-rate"),
        (["replay", bag, "--sensor-frame", "no_frame"], "no_frame"),
        (["replay", bag, "--sensor-frame", "panda_link7"], "2400 wrong_frame"),
        (["replay", bag, "--wrench-topic", "/nothing"], "no topic '/nothing'"),
        (["replay", bag, "--urdf", tmp_path / "none.urdf"], "none.urdf"),
        (["replay", bag, "--truth", tmp_path / "none.json"], "cannot read"),
        (["record-sim", bag], "exists"),
        (["record-sim", tmp_path / "new", "--duration", 0], "positive"),
    ]
    for argv, fragment in cases:
        code, _, err = run(capsys, *argv)
        assert code == 2, (argv, err)
        assert err.count("\n") == 1 and fragment in err, (argv, err)


def test_replay_detects_a_grasp_like_the_node_and_identifies_the_new_payload(capsys, tmp_path):
    """A bag with a grasp at 14 s: replay reports one payload change (in the JSON's
    ``payload_changes``, its time in bag time) within 1 s of it, and the final estimate is the
    grasped payload's, from its own samples only."""
    from inertia_id_ros.sim.payload import grasped_payload_theta

    bag, truth, out = tmp_path / "grasp", tmp_path / "truth.json", tmp_path / "replay.json"
    code, _, err = run(
        capsys,
        "record-sim",
        bag,
        "--duration",
        24,
        "--rate",
        200,
        "--grasp-at",
        14,
        "--truth-json",
        truth,
    )
    assert code == 0, err
    code, printed, err = run(
        capsys,
        "replay",
        bag,
        "--update-rate",
        2,
        "--window-sec",
        10,
        "--json",
        out,
        "--truth",
        truth,
    )
    assert code == 0, err
    result = json.loads(out.read_text())
    changes = result["payload_changes"]
    assert len(changes) == 1, changes
    grasp_time = result["start_time"] + 14.0
    assert 0.0 <= changes[0]["time"] - grasp_time < 1.0
    assert abs(changes[0]["onset"] - grasp_time) < 0.5
    assert "payload change at" in printed
    mass, com, _ = inertia_from_theta(np.array(result["bodies"][0]["theta"]))
    true_mass, true_com, _ = inertia_from_theta(grasped_payload_theta())
    assert abs(mass - true_mass) < 0.01 * true_mass
    assert np.linalg.norm(com - true_com) < 0.005
    last = result["updates"][-1]
    assert last["status"] == "ok" and last["n_samples"] <= (24 - 14) * 200 + 200


def test_replay_checks_the_payload_against_the_nodes_bounding_volume(capsys, recording, tmp_path):
    """``--params-file``: the final estimate's COM is checked against the node's
    ``payload_bounding_sphere`` (a 1 cm sphere: the simulated payload's COM lies outside, a
    warning, exit 0)."""
    bag, _ = recording
    config = Path(__file__).resolve().parents[3] / "config" / "panda_payload.yaml"
    out = tmp_path / "replay.json"
    code, _, err = run(
        capsys,
        "replay",
        bag,
        "--params-file",
        config,
        "-p",
        "payload_bounding_sphere:=0.01",
        "--json",
        out,
    )
    assert code == 0, err
    assert "inertia-id replay: warning: payload: its COM" in err
    assert [f["kind"] for f in json.loads(out.read_text())["findings"]] == ["bounding_volume"]


def test_replay_with_the_nodes_parameter_file_runs_the_nodes_session(capsys, recording, tmp_path):
    """``--params-file`` builds the session the node builds from the file (here payload mode,
    its 30 s window overridden by ``-p``): the same estimates as the options that say the same."""
    bag, _ = recording
    config = Path(__file__).resolve().parents[3] / "config" / "panda_payload.yaml"
    results = []
    for options in (["--params-file", config, "-p", "window_sec:=10.0"], ["--window-sec", 10]):
        out = tmp_path / "replay.json"
        code, _, err = run(capsys, "replay", bag, *options, "--json", out)
        assert code == 0, err
        results.append(json.loads(out.read_text()))
    node, flags = results
    assert node["window_sec"] == flags["window_sec"] == 10.0
    assert [u["status"] for u in node["updates"]] == [u["status"] for u in flags["updates"]]
    assert np.allclose(node["bodies"][0]["theta"], flags["bodies"][0]["theta"], rtol=1e-9)
