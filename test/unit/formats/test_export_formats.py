"""Robot controllers' payload settings (UR SetPayload, franka SetLoad, KUKA load data, the
``ros2 service call`` lines, the gravity-compensation YAML): each round-trips to ``theta``; the
KUKA angles and principal moments match a hand-worked example."""

from __future__ import annotations

import json

import numpy as np
import pinocchio as pin
import pytest
import yaml

from inertia_id_ros.cli import main
from inertia_id_ros.core.inertia import theta_from_inertia
from inertia_id_ros.core.robots import example_robot_urdf, load_model
from inertia_id_ros.errors import ExportError
from inertia_id_ros.formats.controller_payloads import (
    franka_set_load,
    kuka_load_data,
    payload_formats,
    principal_frame,
    ros2_service_call,
    theta_from_franka_set_load,
    theta_from_kuka_load_data,
    theta_from_ur_set_payload,
    ur_set_payload,
)
from inertia_id_ros.formats.export import (
    IdentifiedBody,
    body_json,
    gravity_compensation_parameters,
    transform_theta,
)


def rz(deg: float) -> np.ndarray:
    c, s = np.cos(np.radians(deg)), np.sin(np.radians(deg))
    return np.array([[c, -s, 0.0], [s, c, 0.0], [0.0, 0.0, 1.0]])


def ry(deg: float) -> np.ndarray:
    c, s = np.cos(np.radians(deg)), np.sin(np.radians(deg))
    return np.array([[c, 0.0, s], [0.0, 1.0, 0.0], [-s, 0.0, c]])


def rx(deg: float) -> np.ndarray:
    c, s = np.cos(np.radians(deg)), np.sin(np.radians(deg))
    return np.array([[1.0, 0.0, 0.0], [0.0, c, -s], [0.0, s, c]])


# A 2 kg box, 0.3 x 0.2 x 0.1 m along its own x, y, z, COM at (10, 20, 50) mm in the flange,
# its axes turned from the flange's by Rz(30°) Ry(20°) Rx(10°). By hand:
#   about its own axes (through the COM): Jx = m (b² + c²) / 12 = 2 (0.04 + 0.01) / 12 = 0.0083333
#                                          Jy = m (a² + c²) / 12 = 2 (0.09 + 0.01) / 12 = 0.0166667
#                                          Jz = m (a² + b²) / 12 = 2 (0.09 + 0.04) / 12 = 0.0216667
#   the moments differ, so the principal axes are the box's up to order and sign; the box's own
#   frame turns 30° about z, 20° about y, 10° about x away from the flange, every other
#   right-handed choice (an axis swapped or two flipped) at least 90° further: the closest one
#   is the box's frame, so A, B, C = 30, 20, 10 deg and JX, JY, JZ = Jx, Jy, Jz.
BOX_MASS, BOX_COM = 2.0, np.array([0.010, 0.020, 0.050])
BOX_ROTATION = rz(30.0) @ ry(20.0) @ rx(10.0)
BOX_MOMENTS = np.array([2 * (0.04 + 0.01) / 12, 2 * (0.09 + 0.01) / 12, 2 * (0.09 + 0.04) / 12])
BOX_KUKA = {
    "M": 2.0,
    "X": 10.0,
    "Y": 20.0,
    "Z": 50.0,
    "A": 30.0,
    "B": 20.0,
    "C": 10.0,
    "JX": 0.05 / 6,
    "JY": 0.1 / 6,
    "JZ": 0.13 / 6,
}


@pytest.fixture
def box_theta() -> np.ndarray:
    return theta_from_inertia(
        BOX_MASS, BOX_COM, BOX_ROTATION @ np.diag(BOX_MOMENTS) @ BOX_ROTATION.T
    )


def test_kuka_load_data_matches_the_hand_worked_box(box_theta):
    load = kuka_load_data(box_theta)
    assert load.keys() == BOX_KUKA.keys()
    for key, value in BOX_KUKA.items():
        assert load[key] == pytest.approx(value, abs=1e-9), key
    assert np.allclose(theta_from_kuka_load_data(load), box_theta, atol=1e-14)


def test_kuka_principal_frame_is_unique_and_closest_to_the_flange(box_theta):
    # body axes = flange axes, moments not sorted: no rotation, moments in flange order
    aligned = theta_from_inertia(1.0, np.zeros(3), np.diag([0.3, 0.1, 0.2]))
    load = kuka_load_data(aligned)
    assert [load[k] for k in "ABC"] == pytest.approx([0.0, 0.0, 0.0], abs=1e-9)
    assert [load[k] for k in ("JX", "JY", "JZ")] == pytest.approx([0.3, 0.1, 0.2])
    # KUKA -> theta -> KUKA is the identity (the choice is unique)
    again = kuka_load_data(theta_from_kuka_load_data(kuka_load_data(box_theta)))
    assert again == pytest.approx(kuka_load_data(box_theta), abs=1e-9)
    rotation, _ = principal_frame(BOX_ROTATION @ np.diag(BOX_MOMENTS) @ BOX_ROTATION.T)
    assert np.linalg.det(rotation) == pytest.approx(1.0)


@pytest.mark.parametrize(
    "to_request, from_request",
    [
        (ur_set_payload, theta_from_ur_set_payload),
        (franka_set_load, theta_from_franka_set_load),
        (kuka_load_data, theta_from_kuka_load_data),
    ],
)
def test_each_format_round_trips_to_theta(box_theta, to_request, from_request):
    rng = np.random.default_rng(3)
    boxes = []
    for _ in range(5):  # random boxes, randomly turned and placed
        mass, (a, b, c) = rng.uniform(0.2, 5.0), rng.uniform(0.02, 0.4, 3)
        rotation = pin.exp3(rng.normal(size=3))
        moments = mass / 12 * np.array([b * b + c * c, a * a + c * c, a * a + b * b])
        boxes.append(
            theta_from_inertia(
                mass, rng.normal(0, 0.1, 3), rotation @ np.diag(moments) @ rotation.T
            )
        )
    for theta in [box_theta] + boxes:
        assert np.allclose(from_request(to_request(theta)), theta, rtol=1e-12, atol=1e-14)


def test_franka_load_inertia_is_column_major():
    inertia = np.array([[0.25, 0.01, 0.02], [0.01, 0.2, 0.03], [0.02, 0.03, 0.15]])
    request = franka_set_load(theta_from_inertia(1.0, [0.0, 0.0, 0.1], inertia))
    assert np.allclose(request["load_inertia"], inertia.flatten(order="F"))
    assert request["center_of_mass"] == pytest.approx([0.0, 0.0, 0.1])


def test_ur_request_fields_are_the_srv_fields(box_theta):
    request = ur_set_payload(box_theta)
    assert list(request) == [
        "mass",
        "center_of_gravity",
        "ixx",
        "iyy",
        "izz",
        "ixy",
        "ixz",
        "iyz",
        "transition_time",
    ]
    assert request["center_of_gravity"] == pytest.approx({"x": 0.01, "y": 0.02, "z": 0.05})
    line = ros2_service_call(
        "/io_and_status_controller/set_payload", "ur_msgs/srv/SetPayload", request
    )
    assert line.startswith(
        "ros2 service call /io_and_status_controller/set_payload "
        'ur_msgs/srv/SetPayload "{mass: 2.0, center_of_gravity: {x: 0.01'
    )
    parsed = yaml.safe_load(line.split(" ", 5)[5].strip('"'))  # the request as ros2 reads it
    assert np.allclose(theta_from_ur_set_payload(parsed), box_theta, atol=1e-15)


def test_payload_formats_file_round_trips(box_theta):
    body = IdentifiedBody("payload", "tool0", box_theta)
    text = payload_formats(body, "tool0")
    document = yaml.safe_load(text)
    assert np.allclose(theta_from_ur_set_payload(document["ur_set_payload"]), box_theta)
    assert np.allclose(theta_from_franka_set_load(document["franka_set_load"]), box_theta)
    assert np.allclose(theta_from_kuka_load_data(document["kuka_load_data"]), box_theta)
    calls = [line for line in text.splitlines() if "ros2 service call" in line]
    assert len(calls) == 2 and "franka_msgs/srv/SetLoad" in calls[1]
    assert "LOAD_DATA[1]={M 2,CM {X 10,Y 20,Z 50,A 30,B 20,C 10}" in text
    with pytest.raises(ExportError, match="not the flange"):
        payload_formats(body, "flange")


def test_gravity_compensation_round_trips_mass_and_first_moment(box_theta):
    params = gravity_compensation_parameters(
        IdentifiedBody("p", "tool0", box_theta), "base", np.array([0.0, 0.0, -9.81])
    )
    mass = -params["CoG"]["force"][2] / 9.81
    assert mass == pytest.approx(box_theta[0])
    assert np.allclose(mass * np.array(params["CoG"]["pos"]), box_theta[1:4])


def test_inconsistent_body_is_refused():
    theta = theta_from_inertia(1.0, np.zeros(3), np.diag([0.1, 0.1, 0.3]))  # triangle fails
    for export in (ur_set_payload, franka_set_load, kuka_load_data):
        with pytest.raises(ExportError, match="not physically consistent"):
            export(theta)


def test_cli_writes_formats_in_the_flange(tmp_path, box_theta, capsys):
    """A payload identified in panda_link8, written for the flange frame panda_hand (a fixed
    joint away): the file's settings are the body moved there, back to the same theta."""
    urdf = example_robot_urdf("panda")
    result = tmp_path / "result.json"
    result.write_text(
        json.dumps({"method": "lmi", "bodies": [body_json("payload", "panda_link8", box_theta)]})
    )
    out = tmp_path / "formats.yaml"
    assert (
        main(
            [
                "export",
                "--json",
                str(result),
                "--urdf",
                str(urdf),
                "--flange-frame",
                "panda_hand",
                "--payload-formats",
                str(out),
            ]
        )
        == 0
    )
    assert "wrote" in capsys.readouterr().out
    document = yaml.safe_load(out.read_text())
    in_hand = transform_theta(load_model(urdf), box_theta, "panda_link8", "panda_hand")
    assert not np.allclose(in_hand, box_theta)  # the hand is turned -45° about z
    for key, inverse in (
        ("ur_set_payload", theta_from_ur_set_payload),
        ("franka_set_load", theta_from_franka_set_load),
        ("kuka_load_data", theta_from_kuka_load_data),
    ):
        assert np.allclose(inverse(document[key]), in_hand, atol=1e-12), key
    back = pin.Inertia.FromDynamicParameters(in_hand)
    assert back.mass == pytest.approx(BOX_MASS)
