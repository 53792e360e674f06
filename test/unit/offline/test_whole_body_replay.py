"""``inertia-id sim-whole-body --bag`` and ``replay --params-file`` in whole_body mode: a simulated
Go1 bag with the simulator node's topics, replayed through the session the node builds from its
parameter file, agrees with the same session driven by hand as the node's worker drives it;
bad input exits 2 naming the item."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import numpy as np
import pytest

from inertia_id_ros import cli
from inertia_id_ros.core.inertia import check_consistency
from inertia_id_ros.formats.bag_writer import TRANSPORT_LATENCY
from inertia_id_ros.formats.data import header_seconds, read_bag_messages, wrench_values
from inertia_id_ros.modes.parameters import (
    build_session,
    parameters_from_file,
    settings_from_parameters,
)
from inertia_id_ros.offline.replay import bag_robot_description
from inertia_id_ros.sim.recorders import record_whole_body
from inertia_id_ros.sim.whole_body_robots import GO1_FEET, go1

CONFIG = Path(__file__).resolve().parents[3] / "config" / "go1_whole_body.yaml"
DURATION, RATE = 3.0, 200.0
OVERRIDES = {"sample_rate_hz": 100.0, "update_rate_hz": 2.0}
"""Samples at 100 Hz (the estimator needs 200 of them), two updates a second: estimates from
2 s of bag time on."""


def run(capsys, *argv) -> tuple[int, str, str]:
    code = cli.main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture(scope="module")
def go1_bag(tmp_path_factory) -> Path:
    """3 s of the simulated Go1 at 200 Hz as an MCAP bag."""
    bag = tmp_path_factory.mktemp("go1") / "go1_bag"
    assert (
        cli.main(
            [
                "sim-whole-body",
                "--robot",
                "go1",
                "--bag",
                str(bag),
                "--duration",
                str(DURATION),
                "--rate",
                str(RATE),
                "--seed",
                "2",
            ]
        )
        == 0
    )
    return bag


def _overrides() -> list[str]:
    return [arg for name, value in OVERRIDES.items() for arg in ("-p", f"{name}:={value}")]


def test_bag_has_the_simulator_nodes_topics_frames_and_latencies(go1_bag):
    topics = [
        ("/joint_states", "sensor_msgs/msg/JointState"),
        ("/imu", "sensor_msgs/msg/Imu"),
        *((f"/{foot}/wrench", "geometry_msgs/msg/WrenchStamped") for foot in GO1_FEET),
    ]
    messages = read_bag_messages(go1_bag, topics)
    n = int(DURATION * RATE)
    assert len(messages) == n * len(topics)
    assert [m[1] for m in messages] == sorted(m[1] for m in messages)
    types = dict(topics)
    for topic, log_time, msg in messages[: len(topics)] + messages[-len(topics) :]:
        assert 1e-9 * log_time - header_seconds(msg.header) == pytest.approx(
            TRANSPORT_LATENCY[types[topic]], abs=1e-6
        )
        if topic.endswith("/wrench"):
            assert msg.header.frame_id == topic.split("/")[1]
        if topic == "/imu":
            assert msg.header.frame_id == "imu_link"
            assert (
                9.0
                < np.linalg.norm(
                    [
                        msg.linear_acceleration.x,
                        msg.linear_acceleration.y,
                        msg.linear_acceleration.z,
                    ]
                )
                < 11.0
            )
    assert "<robot" in bag_robot_description(go1_bag)


def test_replay_matches_the_session_driven_as_the_node_drives_it(capsys, go1_bag, tmp_path):
    """The CLI's replay (log-time order) and the node's order (each update: the queued joint
    states, then the IMU readings, then each sensor's wrenches) give the same estimates."""
    out, table = tmp_path / "replay.json", tmp_path / "replay.csv"
    code, printed, err = run(
        capsys,
        "replay",
        go1_bag,
        "--params-file",
        CONFIG,
        *_overrides(),
        "--json",
        out,
        "--csv",
        table,
    )
    assert code == 0, err
    result = json.loads(out.read_text())
    updates = result["updates"]
    statuses = [u["status"] for u in updates]
    assert len(updates) == DURATION * OVERRIDES["update_rate_hz"]  # the last after the last message
    waiting = statuses.count("too_few_samples")
    assert statuses == ["too_few_samples"] * waiting + ["ok"] * (len(updates) - waiting)
    assert waiting >= 3 and len(updates) - waiting >= 2
    assert result["mode"] == "whole_body" and result["base"] == "floating"
    assert len(result["bodies"]) == 39 and all(b["fully_consistent"] for b in result["bodies"])
    assert {b["identifiability"] for b in result["bodies"]} <= {
        "identified",
        "partly identified",
        "prior only",
    }
    assert result["sensor_offsets"] == {}  # Go1's sensors are contacts: no offsets
    assert result["samples"] == updates[-1]["n_samples"] and result["solve_time_s"] > 0
    assert result["received"]["imu"] == int(DURATION * RATE)
    assert result["failed_solves"] == {} and result["sensor_events"] == []
    assert result["weighting"] == {"kind": "none"}  # the mode's default
    assert "inconsistent links: 0" in printed
    assert result["refused"] is False  # checked: the links whose mass sits at its bound, if any
    assert {f["kind"] for f in result["findings"]} <= {"pinned_mass"}
    with open(table, newline="") as stream:
        rows = list(csv.DictReader(stream))
    assert [r["status"] for r in rows] == [u["status"] for u in updates]
    assert float(rows[-1]["mass.trunk"]) == pytest.approx(result["bodies"][1]["mass"])

    values = parameters_from_file(CONFIG)
    values.update(OVERRIDES, robot_description=bag_robot_description(go1_bag))
    settings = settings_from_parameters(values)
    session = build_session(settings)
    messages = read_bag_messages(
        go1_bag,
        [
            ("/joint_states", "sensor_msgs/msg/JointState"),
            ("/imu", "sensor_msgs/msg/Imu"),
            *((t, "geometry_msgs/msg/WrenchStamped") for t in settings.mode_settings.ft_topics),
        ],
    )
    frames = dict(zip(settings.mode_settings.ft_topics, settings.mode_settings.ft_frames))
    cursor = 0
    for record in updates:
        queued: dict[str, list] = {}
        while cursor < len(messages) and 1e-9 * messages[cursor][1] < record["time"]:
            queued.setdefault(messages[cursor][0], []).append(messages[cursor][2])
            cursor += 1
        for msg in queued.get("/joint_states", []):
            session.add_joint_state(
                header_seconds(msg.header), msg.name, msg.position, msg.velocity
            )
        for msg in queued.get("/imu", []):
            w, a = msg.angular_velocity, msg.linear_acceleration
            session.add_imu(
                header_seconds(msg.header), [w.x, w.y, w.z], [a.x, a.y, a.z], msg.header.frame_id
            )
        for topic, frame in frames.items():
            for msg in queued.get(topic, []):
                session.add_wrench(
                    frame, header_seconds(msg.header), wrench_values(msg), msg.header.frame_id
                )
        update = session.update(record["time"])
        assert update.status == record["status"], update.message
        if update.ok:
            estimate = update.estimate
            assert estimate.n_samples == record["n_samples"]
            assert all(check_consistency(theta).fully_consistent for theta in estimate.thetas)
            replayed = np.array([record["thetas"][name] for name in estimate.link_names])
            assert np.allclose(estimate.thetas, replayed, rtol=1e-6, atol=1e-9)
    assert cursor == len(messages)


def test_bad_whole_body_replay_input_exits_2_naming_the_item(capsys, go1_bag, tmp_path):
    cases = [
        (
            ["-p", "ft_topics:=[/FL_foot/wrench, /FR_foot/wrench, /RL_foot/wrench, /nothing]"],
            "no topic '/nothing'",
        ),
        (["-p", "imu_frame:=no_such_frame"], "'imu_frame'"),
        (["-p", "ft_frames:=[FL_foot, FR_foot, RL_foot, no_foot]"], "no_foot"),
        (["-p", "ft_types:=[contact, contact, contact, sideways]"], "sideways"),
        (["-p", "ft_types:=[contact, contact]"], "'ft_types' has 2 entries"),
        (["-p", "no_such_parameter:=1"], "no_such_parameter"),
        (["-p", "window_sec"], "NAME:=VALUE"),
        (["--urdf", tmp_path / "none.urdf"], "none.urdf"),
        (["--update-rate", 0], "--update-rate"),
        (["--png", tmp_path / "r.png"], "--png"),
        (
            ["--no-offset", "--sensor-frame", "FL_foot"],
            "--sensor-frame, --no-offset only apply to payload replays",
        ),
        (["-p", "sample_rate_hz:=fast"], "a parameter has a value of the wrong type"),
    ]
    for extra, fragment in cases:
        code, _, err = run(capsys, "replay", go1_bag, "--params-file", CONFIG, *extra)
        assert code == 2, (extra, err)
        assert err.count("\n") == 1 and fragment in err, (extra, err)
    links = CONFIG.parent / "go1_leg_links.yaml"
    for argv, fragment in [
        (["replay", go1_bag, "--params-file", tmp_path / "none.yaml"], "none.yaml"),
        (["replay", go1_bag, "--params-file", links], "missing_effort"),  # no efforts logged
        (["replay", go1_bag, "-p", "window_sec:=5"], "--params-file"),
        (["sim-whole-body", "--robot", "go1"], "--bag"),
        (["sim-whole-body", "--robot", "go1", "--bag", go1_bag], "exists"),
    ]:
        code, _, err = run(capsys, *argv)
        assert code == 2, (argv, err)
        assert err.count("\n") == 1 and fragment in err, (argv, err)


def test_a_sensor_that_stops_is_reported_and_its_rows_dropped(capsys, tmp_path):
    """RR_foot's wrenches end 2 s into a 3 s bag: an update reports it stopped (0.5 s later,
    sensor_timeout_sec) and the final estimate names it (its rows dropped: the session's
    tests check the rows)."""
    bag, out = tmp_path / "stops", tmp_path / "stops.json"
    record_whole_body(bag, go1(seed=2), DURATION, RATE, seed=2, sensors_stop={"RR_foot": 2.0})
    code, printed, err = run(
        capsys, "replay", bag, "--params-file", CONFIG, *_overrides(), "--json", out
    )
    assert code == 0, err
    result = json.loads(out.read_text())
    assert result["received"]["wrench.RR_foot"] == int(2.0 * RATE)
    events = result["sensor_events"]
    assert [e["kind"] for e in events] == ["sensor_stopped"] and "RR_foot" in events[0]["message"]
    assert 2.5 <= events[0]["time"] - result["start_time"] <= 3.0
    assert result["stopped_sensors"] == ["RR_foot"] and "stopped" in printed
    assert all(b["fully_consistent"] for b in result["bodies"])


def test_stand_without_an_imu_replays(tmp_path, capsys):
    """iCub on a stand, ``config/icub_fixed.yaml`` (no IMU topic): the bag's IMU is not read,
    the samples are the F/T sensors' stamps, every estimate is consistent."""
    bag, out = tmp_path / "stand_bag", tmp_path / "stand.json"
    assert (
        cli.main(
            [
                "sim-whole-body",
                "--robot",
                "icub_fixed",
                "--bag",
                str(bag),
                "--duration",
                "2.5",
                "--rate",
                str(RATE),
            ]
        )
        == 0
    )
    code, _, err = run(
        capsys,
        "replay",
        bag,
        "--params-file",
        CONFIG.with_name("icub_fixed.yaml"),
        *_overrides(),
        "--json",
        out,
    )
    assert code == 0, err
    result = json.loads(out.read_text())
    assert not any(key.startswith("imu") for key in result["received"])
    estimates = [u for u in result["updates"] if u["status"] == "ok"]
    assert estimates and all(b["fully_consistent"] for b in result["bodies"])
    assert result["base"] == "fixed"
