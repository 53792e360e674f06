"""``inertia-id export``: the body in a new URDF (checked with pinocchio, the original untouched,
only the inertial changed), frames moved through fixed joints, the gravity-compensation YAML."""

from __future__ import annotations

import difflib
import hashlib
import json
from pathlib import Path

import numpy as np
import pinocchio as pin
import pytest
import yaml

from inertia_id_ros import cli
from inertia_id_ros.core.inertia import inertia_from_theta, theta_from_inertia
from inertia_id_ros.core.robots import example_robot_urdf, load_model
from inertia_id_ros.formats.export import (
    GRAVITY_COMPENSATION_TYPE,
    IdentifiedBody,
    body_json,
    inertial_theta,
    with_link_inertial,
)
from inertia_id_ros.sim.payload import default_payload_theta

SENSOR = "panda_link8"
OFFSET = [4.0, -3.0, 6.0, 0.2, -0.15, 0.1]
LINK8_INERTIAL = """        <inertial>
          <mass value="0"/>
          <origin rpy="0 0 0" xyz="0 0 0"/>
          <inertia ixx="0" ixy="0" ixz="0" iyy="0" iyz="0" izz="0"/>
        </inertial>
"""


@pytest.fixture
def panda_urdf(tmp_path: Path) -> Path:
    """The Panda URDF whose flange link panda_link8 has no inertial."""
    text = example_robot_urdf("panda").read_text()
    assert LINK8_INERTIAL in text
    path = tmp_path / "panda.urdf"
    path.write_text(text.replace(LINK8_INERTIAL, ""))
    return path


@pytest.fixture
def result_json(tmp_path: Path) -> Path:
    """A fit-payload result: the default payload about and in the flange frame."""
    path = tmp_path / "fit.json"
    path.write_text(
        json.dumps(
            {
                "method": "lmi",
                "bodies": [body_json("payload", SENSOR, default_payload_theta())],
                "sensor_offset": OFFSET,
                "residual_rms": 0.07,
                "samples": 2000,
                "solve_time_s": 0.001,
            }
        )
    )
    return path


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def joint_inertia_change(original: Path, exported: Path, joint: str = "panda_joint7") -> np.ndarray:
    """theta (joint frame) of the exported model's body at ``joint`` minus the original's:
    pinocchio merges the links beyond fixed joints into it."""
    before, after = load_model(original), load_model(exported)
    j = before.getJointId(joint)
    return after.inertias[j].toDynamicParameters() - before.inertias[j].toDynamicParameters()


def in_joint_frame(urdf: Path, frame: str, theta: np.ndarray) -> np.ndarray:
    """theta about and in ``frame`` -> about and in its parent joint's frame (pinocchio)."""
    model = load_model(urdf)
    placement = model.frames[model.getFrameId(frame)].placement
    return placement.act(pin.Inertia.FromDynamicParameters(theta)).toDynamicParameters()


def run(capsys, *argv: str) -> tuple[int, str, str]:
    code = cli.main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_export_into_the_sensor_link_without_inertial(capsys, tmp_path, panda_urdf, result_json):
    before = digest(panda_urdf)
    out = tmp_path / "with_payload.urdf"
    code, stdout, err = run(
        capsys,
        "export",
        "--json",
        str(result_json),
        "--urdf",
        str(panda_urdf),
        "--link",
        SENSOR,
        "--urdf-out",
        str(out),
    )
    assert code == 0, err
    assert f"wrote {out}" in stdout and digest(panda_urdf) == before
    theta = default_payload_theta()
    change = joint_inertia_change(panda_urdf, out)
    assert np.allclose(change, in_joint_frame(panda_urdf, SENSOR, theta), rtol=0, atol=1e-12)
    # the written inertial: origin at the COM, link axes; the estimate's mass, COM and inertia
    model = load_model(out)  # the fixed joint's frame carries its child link's inertia
    link = model.frames[model.getFrameId("panda_joint8", pin.FrameType.FIXED_JOINT)]
    assert np.allclose(link.inertia.toDynamicParameters(), theta, atol=1e-15)
    mass, com, inertia_com = inertia_from_theta(theta)
    written = out.read_text()
    start = written.index('<link name="panda_link8">')
    inertial = written[
        written.index("<inertial>", start) : written.index("</inertial>", start) + 11
    ]
    import xml.etree.ElementTree as ET

    element = ET.fromstring(inertial)
    assert element.find("origin").get("rpy") == "0 0 0"
    assert np.allclose(inertial_theta(element), theta, rtol=0, atol=1e-15)
    assert np.array_equal(np.fromstring(element.find("origin").get("xyz"), sep=" "), com)
    # nothing else changed: the inserted lines are the whole diff
    diff = [
        line
        for line in difflib.unified_diff(
            panda_urdf.read_text().splitlines(), written.splitlines(), lineterm="", n=0
        )
        if line[:1] in "+-" and line[:3] not in ("+++", "---")
    ]
    assert len(diff) == 5 and all(line.startswith("+") for line in diff)


def test_export_into_a_rotated_child_link_moves_the_body_through_the_fixed_joint(
    capsys, tmp_path, panda_urdf, result_json
):
    """panda_hand hangs 45 deg about z from the flange: add the payload to the hand's inertial,
    or replace it."""
    theta = default_payload_theta()
    added, replaced = tmp_path / "added.urdf", tmp_path / "replaced.urdf"
    for mode, out in (("add", added), ("replace", replaced)):
        code, _, err = run(
            capsys,
            "export",
            "--json",
            str(result_json),
            "--urdf",
            str(panda_urdf),
            "--link",
            "panda_hand",
            "--urdf-out",
            str(out),
            "--mode",
            mode,
        )
        assert code == 0, err
    payload = in_joint_frame(panda_urdf, SENSOR, theta)
    assert np.allclose(joint_inertia_change(panda_urdf, added), payload, atol=1e-12)
    hand = theta_from_inertia(
        0.73, np.array([-0.01, 0.0, 0.03]), np.diag([0.001, 0.0025, 0.0017])
    )  # the URDF's hand
    assert np.allclose(
        joint_inertia_change(panda_urdf, replaced),
        payload - in_joint_frame(panda_urdf, "panda_hand", hand),
        atol=1e-12,
    )
    model = load_model(replaced)
    hand_frame = model.frames[model.getFrameId("panda_hand_joint", pin.FrameType.FIXED_JOINT)]
    assert np.allclose(
        hand_frame.inertia.toDynamicParameters(),
        pin.SE3(pin.utils.rotate("z", np.pi / 4), np.zeros(3))
        .act(pin.Inertia.FromDynamicParameters(theta))
        .toDynamicParameters(),
        atol=1e-12,
    )


@pytest.mark.parametrize("empty_link", ['<link name="tool"/>', '<link name="tool"></link>'])
def test_links_without_children_get_an_inertial(tmp_path, empty_link):
    urdf = f"""<?xml version="1.0"?>
<!-- a comment that stays -->
<robot name="arm">
  <link name="base"/>
  <link name="upper">
    <inertial><mass value="1"/>
      <inertia ixx="0.01" ixy="0" ixz="0" iyy="0.01" iyz="0" izz="0.01"/></inertial>
  </link>
  <joint name="shoulder" type="revolute">
    <parent link="base"/><child link="upper"/><axis xyz="0 0 1"/>
    <limit effort="10" lower="-1" upper="1" velocity="1"/>
  </joint>
  {empty_link}
  <joint name="mount" type="fixed">
    <parent link="upper"/><child link="tool"/><origin xyz="0 0 0.3" rpy="0 1.5707963267948966 0"/>
  </joint>
</robot>
"""
    theta = default_payload_theta()
    exported = with_link_inertial(urdf, "tool", theta)
    assert "<!-- a comment that stays -->" in exported
    assert exported.count("<inertial>") == 2
    original, written = tmp_path / "arm.urdf", tmp_path / "arm_tool.urdf"
    original.write_text(urdf)
    written.write_text(exported)
    change = joint_inertia_change(original, written, "shoulder")
    assert np.allclose(change, in_joint_frame(original, "tool", theta), atol=1e-12)


def test_gravity_compensation_yaml(capsys, tmp_path, panda_urdf, result_json):
    out = tmp_path / "gravity.yaml"
    code, stdout, err = run(
        capsys,
        "export",
        "--json",
        str(result_json),
        "--urdf",
        str(panda_urdf),
        "--gravity-yaml",
        str(out),
    )
    assert code == 0, err
    document = yaml.safe_load(out.read_text())
    filter1 = document["/**"]["ros__parameters"]["sensor_filter_chain"]["filter1"]
    assert filter1["type"] == GRAVITY_COMPENSATION_TYPE
    assert GRAVITY_COMPENSATION_TYPE == "control_filters/GravityCompensationWrench"
    params = filter1["params"]
    assert params["world_frame"] == "panda_link0" and params["sensor_frame"] == SENSOR
    _, com, _ = inertia_from_theta(default_payload_theta())
    assert np.allclose(params["CoG"]["pos"], com)
    assert np.allclose(params["CoG"]["force"], [0.0, 0.0, -9.81 * 1.5])
    assert "F/T offset" in out.read_text() and "world frame 'panda_link0'" in stdout
    code, _, err = run(
        capsys,
        "export",
        "--json",
        str(result_json),
        "--gravity-yaml",
        str(out),
        "--world-frame",
        "world",
        "--node",
        "ft_broadcaster",
        "--chain",
        "filters",
    )
    assert code == 0, err
    params = yaml.safe_load(out.read_text())["ft_broadcaster"]["ros__parameters"]["filters"]
    assert params["filter1"]["params"]["world_frame"] == "world"


def test_bad_exports_exit_2_with_one_line(capsys, tmp_path, panda_urdf, result_json):
    inconsistent = tmp_path / "ols.json"
    theta = default_payload_theta()
    theta[4] = -1.0  # Ixx < 0
    inconsistent.write_text(json.dumps({"bodies": [body_json("payload", SENSOR, theta)]}))
    out = str(tmp_path / "out.urdf")
    common = ["--urdf", str(panda_urdf), "--urdf-out", out]
    cases = [
        (["--json", str(result_json), *common, "--link", "no_such_link"], "no link 'no_such_link'"),
        (["--json", str(result_json), *common, "--link", "panda_link3"], "not rigidly connected"),
        (["--json", str(inconsistent), *common, "--link", SENSOR], "not physically consistent"),
        (
            [
                "--json",
                str(result_json),
                "--urdf",
                str(panda_urdf),
                "--urdf-out",
                str(panda_urdf),
                "--link",
                SENSOR,
            ],
            "is the input URDF",
        ),
        (
            ["--json", str(result_json), "--urdf", str(panda_urdf), "--link", SENSOR],
            "nothing to write",
        ),
        (["--json", str(result_json), "--urdf-out", out, "--link", SENSOR], "needs --urdf"),
        (["--json", str(result_json), "--gravity-yaml", out], "--world-frame"),
        (
            ["--json", str(result_json), *common, "--link", SENSOR, "--body", "gripper"],
            "no body 'gripper'",
        ),
        (["--json", str(tmp_path / "missing.json"), *common, "--link", SENSOR], "cannot read"),
    ]
    before = digest(panda_urdf)
    for argv, fragment in cases:
        code, _, err = run(capsys, "export", *argv)
        assert code == 2, (argv, err)
        assert err.count("\n") == 1 and fragment in err, (argv, err)
    assert digest(panda_urdf) == before and not Path(out).exists()


def test_identified_body_round_trips_through_the_result_json(result_json):
    from inertia_id_ros.formats.export import read_body

    body = read_body(result_json)
    assert isinstance(body, IdentifiedBody) and body.frame == SENSOR and body.name == "payload"
    assert np.array_equal(body.theta, default_payload_theta())
    assert np.array_equal(body.sensor_offset, OFFSET)
