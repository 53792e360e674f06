"""``inertia-id replay`` in the links and payload_torques modes (bags of joint states with
efforts, ``record-sim --robot panda_torques``), and ``replay --input``: a log read through an
input description goes through the same loop as a bag; the joint states' units are checked as
the fit commands check them."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from helpers.recordings import write_bag
from inertia_id_ros import cli
from inertia_id_ros.chain.links import LinkModel
from inertia_id_ros.core.inertia import inertia_from_theta
from inertia_id_ros.core.robots import example_robot_urdf
from inertia_id_ros.formats.data import read_joint_bag, read_payload_bag
from inertia_id_ros.formats.link_result import read_link_result
from inertia_id_ros.sim.payload import PANDA_ARM_JOINTS

CONFIG = Path(__file__).resolve().parents[3] / "config"
DURATION, RATE = 12.0, 200.0
RENAMED = {joint: f"axis_{k + 1}" for k, joint in enumerate(PANDA_ARM_JOINTS)}
"""URDF joint -> the name a renamed log gives it."""


def run(capsys, *argv) -> tuple[int, str, str]:
    code = cli.main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture(scope="module")
def torque_bag(tmp_path_factory) -> tuple[Path, Path, Path]:
    """12 s of the simulated Panda without an F/T sensor at 200 Hz (joint states with efforts),
    the payload's truth and the true links and drives as a fit-links result."""
    directory = tmp_path_factory.mktemp("torques")
    bag, truth, links = directory / "bag", directory / "truth.json", directory / "links.json"
    assert (
        cli.main(
            [
                "record-sim",
                str(bag),
                "--robot",
                "panda_torques",
                "--duration",
                str(DURATION),
                "--rate",
                str(RATE),
                "--truth-json",
                str(truth),
                "--links-json",
                str(links),
            ]
        )
        == 0
    )
    return bag, truth, links


@pytest.fixture(scope="module")
def payload_bag(tmp_path_factory) -> Path:
    """8 s of the simulated Panda with its F/T sensor at 200 Hz."""
    bag = tmp_path_factory.mktemp("payload") / "bag"
    assert cli.main(["record-sim", str(bag), "--duration", "8", "--rate", str(RATE)]) == 0
    return bag


def renamed_in_degrees(bag: Path, out: Path, names: dict[str, str], wrenches: bool) -> Path:
    """``bag``'s joint states (and, with ``wrenches``, its wrenches) rewritten with the joints
    named by ``names`` and positions and velocities in degrees, each logged at its stamp."""
    if wrenches:
        recording = read_payload_bag(bag)
        states, wrench = recording.joint_states, recording.wrenches
    else:
        states, wrench = read_joint_bag(bag), None
    return write_bag(
        out,
        "mcap",
        states.t,
        [names.get(j, j) for j in states.joint_names],
        np.degrees(states.q),
        np.degrees(states.dq),
        states.effort,
        None if wrench is None else wrench.t,
        None if wrench is None else wrench.wrench,
        frame="" if wrench is None else wrench.frame,
    )


def payload_torques_options(links: Path) -> list:
    """``replay``'s options running the node's payload_torques session
    (config/panda_payload_torques.yaml) with ``links`` as ``torques_links_result``, 1 update/s."""
    return [
        "--params-file",
        CONFIG / "panda_payload_torques.yaml",
        "-p",
        f"torques_links_result:={links}",
        "-p",
        "update_rate_hz:=1.0",
    ]


def description(path: Path, bag: Path, wrenches: bool) -> Path:
    """An input description of a bag from :func:`renamed_in_degrees` with :data:`RENAMED`, a
    finger joint held."""
    streams = {"joints": {"file": str(bag), "topic": "/joint_states"}}
    text = {
        "streams": streams,
        "joints": {
            "stream": "joints",
            "names": {v: k for k, v in RENAMED.items()},
            "position": {"unit": "deg"},
            "velocity": {"unit": "deg"},
            "held": {"panda_finger_joint1": 0.02},
        },
    }  # not logged: a constant column
    if wrenches:
        streams["ft"] = {"file": str(bag), "topic": "/ft_sensor/wrench"}
        text["ft_sensors"] = [{"frame": "panda_link8", "stream": "ft", "sign": "keep"}]
    else:
        text["joints"]["effort"] = {"unit": "N m"}
    path.write_text(json.dumps(text))  # JSON is YAML
    return path


def test_payload_torques_replay_recovers_the_payload(capsys, torque_bag, tmp_path):
    """The node's payload_torques session (config/panda_payload_torques.yaml, the true links as
    ``torques_links_result``) over the bag: mass within 1 %, COM within 5 mm; one CSV row per
    update with each joint's torque offset change; the JSON's offsets name the joints; the PNG
    report."""
    bag, truth, links = torque_bag
    out_csv, out_json, out_png = tmp_path / "r.csv", tmp_path / "r.json", tmp_path / "r.png"
    code, out, err = run(
        capsys,
        "replay",
        bag,
        *payload_torques_options(links),
        "--truth",
        truth,
        "--csv",
        out_csv,
        "--json",
        out_json,
        "--png",
        out_png,
    )
    assert code == 0, err
    assert Image.open(out_png).size == (880, 720)
    assert "in 'panda_link8'" in out and "vs truth" in out
    result = json.loads(out_json.read_text())
    theta = np.array(result["bodies"][0]["theta"])
    true_theta = np.array(json.loads(truth.read_text())["bodies"][0]["theta"])
    assert theta[0] == pytest.approx(true_theta[0], rel=0.01)
    assert np.linalg.norm(inertia_from_theta(theta)[1] - inertia_from_theta(true_theta)[1]) < 5e-3
    assert result["offset_names"] == list(PANDA_ARM_JOINTS)
    assert result["findings"] == [] and result["refused"] is False
    with open(out_csv, newline="") as stream:
        rows = list(csv.DictReader(stream))
    assert len(rows) == int(DURATION) and rows[-1]["status"] == "ok"
    assert [f"offset_{j}" for j in PANDA_ARM_JOINTS] == [
        c for c in rows[0] if c.startswith("offset_")
    ]


def test_links_replay_gives_consistent_links_as_a_fit_links_result(capsys, torque_bag, tmp_path):
    """The node's links session (config/panda_links.yaml) over the bag: every update after the
    first gives consistent links and drives; the JSON is a fit-links result (the payload_torques
    mode's ``torques_links_result`` reads it); the CSV has each link's mass per update."""
    bag, _, _ = torque_bag
    out_csv, out_json = tmp_path / "links.csv", tmp_path / "links.json"
    code, out, err = run(
        capsys,
        "replay",
        bag,
        "--params-file",
        CONFIG / "panda_links.yaml",
        "-p",
        "update_rate_hz:=0.5",
        "--csv",
        out_csv,
        "--json",
        out_json,
    )
    assert code == 0, err
    assert "all links fully consistent: yes" in out
    result = json.loads(out_json.read_text())
    assert result["mode"] == "links" and result["failed_solves"] == {}
    assert all(body["fully_consistent"] for body in result["bodies"])
    chain = LinkModel.from_urdf(example_robot_urdf("panda"), PANDA_ARM_JOINTS)
    links = read_link_result(out_json, chain)
    assert links.x.shape == (chain.n_parameters,)
    with open(out_csv, newline="") as stream:
        rows = list(csv.DictReader(stream))
    assert len(rows) == int(DURATION * 0.5) and all(row["status"] == "ok" for row in rows)
    assert float(rows[-1]["mass.panda_link7"]) > 0.0


@pytest.mark.parametrize("mode", ["payload", "payload_torques"])
def test_replay_input_equals_the_canonical_replay(capsys, mode, payload_bag, torque_bag, tmp_path):
    """A bag with other joint names and angles in degrees, replayed with ``--input`` (a
    description mapping the names, units deg, a held finger joint the estimate does not depend
    on): the final estimate of the canonical bag's replay, from as many samples."""
    bag = payload_bag if mode == "payload" else torque_bag[0]
    renamed = renamed_in_degrees(bag, tmp_path / "renamed", RENAMED, mode == "payload")
    described = description(tmp_path / "log.yaml", renamed, mode == "payload")
    urdf = example_robot_urdf("panda")
    options = ["--window-sec", 10] if mode == "payload" else payload_torques_options(torque_bag[2])
    results = []
    for log in ([bag], ["--input", described]):
        out = tmp_path / "r.json"
        code, _, err = run(capsys, "replay", *log, "--urdf", urdf, *options, "--json", out)
        assert code == 0, err
        results.append(json.loads(out.read_text()))
    canonical, described_run = results
    assert described_run["source"] == str(described)
    assert described_run["samples"] == canonical["samples"]
    assert np.allclose(
        described_run["bodies"][0]["theta"], canonical["bodies"][0]["theta"], rtol=1e-5, atol=1e-9
    )


def test_degrees_without_a_description_are_refused_as_the_fit_commands_do(
    capsys, payload_bag, tmp_path
):
    """Joint angles in degrees under the URDF's names, replayed as a canonical bag: refused
    (exit 3, the finding on stderr and in the JSON), as fit-payload refuses them."""
    degrees = renamed_in_degrees(payload_bag, tmp_path / "degrees", {}, wrenches=True)
    out = tmp_path / "r.json"
    code, _, err = run(
        capsys, "replay", degrees, "--urdf", example_robot_urdf("panda"), "--json", out
    )
    assert code == 3, err
    assert "inertia-id replay: refused:" in err and "Degrees?" in err
    result = json.loads(out.read_text())
    assert result["refused"] is True
    assert [f["kind"] for f in result["findings"]] == ["degrees"]
    code, _, err = run(
        capsys,
        "fit-payload",
        "--bag",
        degrees,
        "--urdf",
        example_robot_urdf("panda"),
        "--sensor-frame",
        "panda_link8",
    )
    assert code == 3 and "Degrees?" in err


def test_replay_input_reads_a_csv_in_milliseconds_degrees_and_motor_currents(
    capsys, torque_bag, tmp_path
):
    """The torque bag's joint states as an arm logs them to CSV (stamps in ms, angles in
    degrees, signed motor currents), replayed with ``--input`` (the description's units, torque
    constants, gear ratio and signs): the bag's final payload estimate (mass to 1e-5, COM to
    0.01 mm: the bag's stamps, 1.7e9 s in float64, resolve only 0.24 us; the log's count from 0).
    The same description with the stamps called seconds is refused, naming milliseconds."""
    bag, _, links = torque_bag
    states = read_joint_bag(bag)
    constants = np.linspace(0.05, 0.11, len(PANDA_ARM_JOINTS))
    signs = np.where(np.arange(len(PANDA_ARM_JOINTS)) % 3 == 1, -1.0, 1.0)
    currents = states.effort / (100.0 * constants) * signs
    log = tmp_path / "arm.csv"
    header = ["t_ms", *(f"{kind}_{j}" for kind in ("pos", "vel", "cur") for j in PANDA_ARM_JOINTS)]
    t_ms = 1e3 * (states.t - states.t[0])  # from the log's start, as arms log them
    np.savetxt(
        log,
        np.column_stack([t_ms, np.degrees(states.q), np.degrees(states.dq), currents]),
        delimiter=",",
        header=",".join(header),
        comments="",
        fmt="%.17g",
    )
    text = {
        "streams": {"arm": {"file": str(log), "time": "t_ms", "time_unit": "ms"}},
        "joints": {
            "stream": "arm",
            "names": list(PANDA_ARM_JOINTS),
            "position": {"columns": "pos_{joint}", "unit": "deg"},
            "velocity": {"columns": "vel_{joint}", "unit": "deg"},
            "effort": {
                "columns": "cur_{joint}",
                "unit": "A",
                "gear_ratio": 100,
                "torque_constant": dict(zip(PANDA_ARM_JOINTS, constants.tolist())),
                "sign": dict(zip(PANDA_ARM_JOINTS, signs.tolist())),
            },
        },
    }
    described = tmp_path / "arm.yaml"
    described.write_text(json.dumps(text))
    options = ["--urdf", example_robot_urdf("panda"), *payload_torques_options(links)]
    results = []
    for log_argument in ([bag], ["--input", described]):
        out = tmp_path / "r.json"
        code, _, err = run(capsys, "replay", *log_argument, *options, "--json", out)
        assert code == 0, err
        results.append(json.loads(out.read_text()))
    csv_theta, bag_theta = (np.array(r["bodies"][0]["theta"]) for r in results)
    assert csv_theta[0] == pytest.approx(bag_theta[0], rel=1e-5)
    assert (
        np.linalg.norm(inertia_from_theta(csv_theta)[1] - inertia_from_theta(bag_theta)[1]) < 1e-5
    )
    text["streams"]["arm"]["time_unit"] = "s"
    described.write_text(json.dumps(text))
    code, _, err = run(capsys, "replay", "--input", described, *options)
    assert code == 2 and "Milliseconds?" in err and err.count("\n") == 1


def test_whole_body_replay_input_equals_the_bag_replay(capsys, tmp_path):
    """A simulated Go1 bag (joint states, IMU, four foot F/T topics) and an input description of
    the same bag's topics (F/T sensors by frame, signs kept): the same updates and final
    estimate in whole_body mode."""
    bag = tmp_path / "go1"
    assert (
        cli.main(
            [
                "sim-whole-body",
                "--robot",
                "go1",
                "--bag",
                str(bag),
                "--duration",
                "3",
                "--rate",
                "200",
                "--seed",
                "2",
            ]
        )
        == 0
    )
    feet = ("FL_foot", "FR_foot", "RL_foot", "RR_foot")
    streams = {
        "joints": {"file": str(bag), "topic": "/joint_states"},
        "imu": {"file": str(bag), "topic": "/imu"},
        **{foot: {"file": str(bag), "topic": f"/{foot}/wrench"} for foot in feet},
    }
    described = tmp_path / "go1.yaml"
    described.write_text(
        json.dumps(
            {
                "streams": streams,
                "imu": {"frame": "imu_link", "stream": "imu"},
                "joints": {
                    "stream": "joints",
                    "position": {"unit": "rad"},
                    "velocity": {"unit": "rad"},
                },
                "ft_sensors": [
                    {"frame": foot, "stream": foot, "kind": "contact", "sign": "keep"}
                    for foot in feet
                ],
            }
        )
    )
    results = []
    for log in ([bag], ["--input", described]):
        out = tmp_path / "r.json"
        code, _, err = run(
            capsys,
            "replay",
            *log,
            "--params-file",
            CONFIG / "go1_whole_body.yaml",
            "-p",
            "sample_rate_hz:=100.0",
            "-p",
            "update_rate_hz:=2.0",
            "--json",
            out,
        )
        assert code == 0, err
        results.append(json.loads(out.read_text()))
    bag_run, described_run = results
    assert [u["status"] for u in described_run["updates"]] == [
        u["status"] for u in bag_run["updates"]
    ]
    assert np.allclose(
        [b["theta"] for b in described_run["bodies"]],
        [b["theta"] for b in bag_run["bodies"]],
        rtol=1e-6,
        atol=1e-9,
    )


def test_bad_replay_input_and_record_options_exit_2_with_one_line(capsys, payload_bag, tmp_path):
    described = description(tmp_path / "log.yaml", payload_bag, wrenches=True)
    urdf = example_robot_urdf("panda")
    for argv, fragment in [
        (["replay"], "one of the arguments bag --input is required"),
        (["replay", payload_bag, "--input", described], "not allowed with argument bag"),
        (["replay", "--input", described], "--input needs --urdf"),
        (
            ["replay", "--input", described, "--urdf", urdf, "--wrench-topic", "/w"],
            "apply to a bag",
        ),
        (["replay", "--input", tmp_path / "none.yaml", "--urdf", urdf], "none.yaml"),
        (
            ["record-sim", tmp_path / "b", "--robot", "panda_torques", "--grasp-at", 3],
            "--grasp-at applies to --robot panda",
        ),
        (
            ["record-sim", tmp_path / "b", "--links-json", tmp_path / "l.json"],
            "--links-json applies to --robot panda_torques",
        ),
    ]:
        code, _, err = run(capsys, *argv)
        assert code == 2, (argv, err)
        assert err.count("\n") == 1 and fragment in err, (argv, err)


def test_payload_torques_replay_warns_of_a_links_result_with_a_wide_filter(
    capsys, torque_bag, tmp_path
):
    """The replay checks ``torques_links_result`` as the node does at start-up: a result
    differentiated over 1.5 times wider than ``torques_filter_half_width`` is warned about."""
    bag, _, links = torque_bag
    wide = tmp_path / "wide.json"
    wide.write_text(
        json.dumps(
            {
                **json.loads(Path(links).read_text()),
                "differentiation": {"source": "velocities", "half_width_s": 0.12, "order": 2},
            }
        )
    )
    out_json = tmp_path / "r.json"
    code, _, err = run(
        capsys,
        "replay",
        bag,
        "--params-file",
        CONFIG / "panda_payload_torques.yaml",
        "-p",
        f"torques_links_result:={wide}",
        "-p",
        "update_rate_hz:=1.0",
        "--json",
        out_json,
    )
    assert code == 0, err
    assert f"warning: {wide}: the links were fitted with a +-0.120 s derivative filter" in err
    assert [f["kind"] for f in json.loads(out_json.read_text())["findings"]] == ["link_filter"]


def test_a_flipped_joint_torque_refuses_the_replay_naming_the_fix_in_its_terms(
    capsys, torque_bag, tmp_path
):
    """One joint's efforts of the other sign (the node's ``torques_effort_signs``, or an input
    description's ``sign``): the payload_torques replay refuses its estimate (exit 3), naming the
    joint and the fix in the terms of what configured it."""
    bag, _, links = torque_bag
    options = payload_torques_options(links)
    signs = "[1.0, 1.0, 1.0, -1.0, 1.0, 1.0, 1.0]"
    code, out, err = run(capsys, "replay", bag, *options, "-p", f"torques_effort_signs:={signs}")
    assert code == 3, err
    assert "joint 'panda_joint4'" in out + err and "torques_effort_signs" in out + err
    renamed = renamed_in_degrees(bag, tmp_path / "renamed", RENAMED, False)
    described = description(tmp_path / "log.yaml", renamed, False)
    text = json.loads(described.read_text())
    text["joints"]["effort"]["sign"] = {"axis_4": -1}
    described.write_text(json.dumps(text))
    urdf = example_robot_urdf("panda")
    code, out, err = run(capsys, "replay", "--input", described, "--urdf", urdf, *options)
    assert code == 3, err
    assert "sign: {panda_joint4: -1} in joints.effort" in out + err
