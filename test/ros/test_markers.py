"""rviz markers of an estimate: the geometry against the covariance's eigen-decomposition and the
inertia, rendered offscreen with matplotlib; colours, label, message validity; the rviz config."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import yaml
from visualization_msgs.msg import Marker, MarkerArray

from helpers.paths import REPO
from inertia_id_ros.core.inertia import inertia_from_theta
from inertia_id_ros.core.robots import example_robot_urdf
from inertia_id_ros.online.payload_estimator import Estimate
from inertia_id_ros.ros.conversions import theta_to_msg
from inertia_id_ros.ros.markers import (
    COM_ELLIPSOID_ID,
    COM_ID,
    INERTIA_ELLIPSOID_ID,
    LABEL_ID,
    MARKERS_TOPIC,
    estimate_markers,
    format_with_std,
)
from inertia_id_ros.sim.payload import default_payload_theta

FRAME = "panda_link8"
PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


def theta_covariance(scale: float = 1.0) -> np.ndarray:
    """A (10, 10) covariance whose COM part is anisotropic and rotated (mm-level stds)."""
    rng = np.random.default_rng(0)
    a = rng.normal(size=(10, 10)) * np.array([1e-3, 2e-3, 1e-3, 4e-4, *[2e-5] * 6])
    return scale * (a @ a.T)


def estimate_of(theta: np.ndarray, covariance: np.ndarray) -> Estimate:
    return Estimate(
        theta=theta,
        sensor_offset=np.zeros(6),
        covariance=covariance,
        min_pseudo_inertia_eig=1e-3,
        residual_rms=0.07,
        n_samples=2000,
        method="lmi",
        solve_time=1e-3,
        t_first=1.7e9,
        t_last=1.7e9 + 10.25,
        offset_identifiable=True,
        orientation_spread_deg=np.ones(3),
    )


def by_id(markers: MarkerArray) -> dict[int, Marker]:
    return {marker.id: marker for marker in markers.markers}


def rotation_of(marker: Marker) -> np.ndarray:
    """Rotation matrix of the marker's pose quaternion (written out, not pinocchio's)."""
    o = marker.pose.orientation
    x, y, z, w = o.x, o.y, o.z, o.w
    return np.array(
        [
            [1 - 2 * (y * y + z * z), 2 * (x * y - z * w), 2 * (x * z + y * w)],
            [2 * (x * y + z * w), 1 - 2 * (x * x + z * z), 2 * (y * z - x * w)],
            [2 * (x * z - y * w), 2 * (y * z + x * w), 1 - 2 * (x * x + y * y)],
        ]
    )


def semi_axes_of(marker: Marker) -> np.ndarray:
    return 0.5 * np.array([marker.scale.x, marker.scale.y, marker.scale.z])


def center_of(marker: Marker) -> np.ndarray:
    p = marker.pose.position
    return np.array([p.x, p.y, p.z])


def surface(marker: Marker, n: int = 60) -> np.ndarray:
    """(n, n, 3) points of the ellipsoid a SPHERE marker draws."""
    u, v = np.meshgrid(np.linspace(0, 2 * np.pi, n), np.linspace(0, np.pi, n))
    unit = np.stack([np.cos(u) * np.sin(v), np.sin(u) * np.sin(v), np.cos(v)], axis=-1)
    return center_of(marker) + (unit * semi_axes_of(marker)) @ rotation_of(marker).T


def expected_com_covariance(theta: np.ndarray, covariance: np.ndarray) -> np.ndarray:
    """First-order covariance of c = h / m, written out here."""
    m, h = theta[0], theta[1:4]
    jacobian = np.hstack([-h[:, None] / m**2, np.eye(3) / m, np.zeros((3, 6))])
    return jacobian @ covariance @ jacobian.T


def test_marker_geometry_matches_the_covariance_and_the_inertia(tmp_path: Path):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    theta, covariance = default_payload_theta(), theta_covariance()
    markers = by_id(estimate_markers(estimate_of(theta, covariance), FRAME))
    mass, com, inertia_com = inertia_from_theta(theta)
    assert set(markers) == {COM_ID, COM_ELLIPSOID_ID, INERTIA_ELLIPSOID_ID, LABEL_ID}
    for marker in markers.values():
        assert marker.header.frame_id == FRAME and marker.frame_locked
        assert marker.header.stamp.sec == 1_700_000_010 and marker.ns == "inertia_id"
    assert np.allclose(center_of(markers[COM_ID]), com)

    # COM ellipsoid: 3 sigma along the eigenvectors of the COM covariance
    ellipsoid = markers[COM_ELLIPSOID_ID]
    assert ellipsoid.type == Marker.SPHERE and np.allclose(center_of(ellipsoid), com)
    r, s = rotation_of(ellipsoid), semi_axes_of(ellipsoid)
    assert np.allclose(r.T @ r, np.eye(3), atol=1e-12) and np.isclose(np.linalg.det(r), 1.0)
    com_cov = expected_com_covariance(theta, covariance)
    eigenvalues, eigenvectors = np.linalg.eigh(com_cov)
    assert len(set(np.round(eigenvalues / eigenvalues.max(), 3))) == 3  # distinct axes
    order = np.argsort(s)
    assert np.allclose(s[order], 3.0 * np.sqrt(eigenvalues), rtol=1e-9)
    assert np.allclose(np.abs(np.sum(r[:, order] * eigenvectors, axis=0)), 1.0, atol=1e-9)
    assert np.allclose(r @ np.diag(s**2) @ r.T, 9.0 * com_cov, rtol=1e-9, atol=1e-16)

    # equivalent uniform ellipsoid: I = m / 5 diag(b² + c², a² + c², a² + b²) in its axes
    body = markers[INERTIA_ELLIPSOID_ID]
    r, (a, b, c) = rotation_of(body), semi_axes_of(body)
    moments = mass / 5.0 * np.diag([b * b + c * c, a * a + c * c, a * a + b * b])
    assert np.allclose(r @ moments @ r.T, inertia_com, rtol=1e-9, atol=1e-15)
    assert np.allclose(center_of(body), com)

    # offscreen rendering of the same geometry; its extents are the covariance's 3 sigma
    com_points, body_points = surface(ellipsoid), surface(body)
    figure = plt.figure(figsize=(5, 5))
    axis = figure.add_subplot(projection="3d")
    for points, colour in ((body_points, body.color), (com_points, ellipsoid.color)):
        axis.plot_surface(
            *(1e3 * points.transpose(2, 0, 1)), alpha=colour.a, color=(colour.r, colour.g, colour.b)
        )
    axis.scatter(*(1e3 * com), color="k")
    axis.set(xlabel="x (mm)", ylabel="y (mm)", zlabel="z (mm)", title=markers[LABEL_ID].text)
    axis.set_box_aspect((1, 1, 1))
    png = tmp_path / "markers.png"
    figure.savefig(png, dpi=60)
    plt.close(figure)
    assert png.read_bytes()[:8] == PNG_SIGNATURE and png.stat().st_size > 5000
    half_extent = (com_points - com).reshape(-1, 3).max(axis=0)
    assert np.allclose(half_extent, 3.0 * np.sqrt(np.diag(com_cov)), rtol=0.01)


def test_markers_from_a_message_take_its_frame_stamp_and_name():
    theta, covariance = default_payload_theta(), theta_covariance()
    msg = theta_to_msg(theta, FRAME, "gripper", stamp=12.5)
    msg.covariance = covariance.reshape(100)
    markers = by_id(estimate_markers(msg, ns="payload_markers"))
    direct = by_id(estimate_markers(estimate_of(theta, covariance), FRAME))
    for marker_id, marker in markers.items():
        assert marker.header.frame_id == FRAME and marker.ns == "payload_markers"
        assert (marker.header.stamp.sec, marker.header.stamp.nanosec) == (12, 500_000_000)
        assert marker.scale == direct[marker_id].scale
    std = np.sqrt(covariance[0, 0])
    assert markers[LABEL_ID].text == f"gripper: m = {format_with_std(1.5, std)} kg"
    assert markers[LABEL_ID].text.startswith("gripper: m = 1.50000 ± 0.0007")
    assert markers[LABEL_ID].type == Marker.TEXT_VIEW_FACING


def test_colours_go_from_green_to_red_with_the_relative_std():
    theta = default_payload_theta()
    precise = by_id(estimate_markers(estimate_of(theta, theta_covariance(1e-4)), FRAME))
    vague = by_id(estimate_markers(estimate_of(theta, theta_covariance(1e8)), FRAME))
    for marker_id in (COM_ID, INERTIA_ELLIPSOID_ID, LABEL_ID):
        good, bad = precise[marker_id].color, vague[marker_id].color
        assert (good.r, good.g) == (0.0, 1.0) and (bad.r, bad.g) == (1.0, 0.0)
    assert 0 < precise[INERTIA_ELLIPSOID_ID].color.a < 1  # translucent, the COM shows through


def test_markers_serialise_and_need_a_frame_for_an_estimate():
    from rclpy.serialization import deserialize_message, serialize_message

    array = estimate_markers(estimate_of(default_payload_theta(), theta_covariance()), FRAME)
    data = serialize_message(array)
    back = deserialize_message(data, MarkerArray)  # colours are float32: compare the bytes
    assert serialize_message(back) == data and [m.id for m in back.markers] == [0, 1, 2, 3]
    with pytest.raises(ValueError, match="frame_id"):
        estimate_markers(estimate_of(default_payload_theta(), theta_covariance()))


def test_format_with_std():
    assert format_with_std(1.50312, 0.0021) == "1.5031 ± 0.0021"
    assert format_with_std(1.5, 0.25) == "1.50 ± 0.25"
    assert format_with_std(1.5, 0.0) == "1.5"


def test_rviz_config_shows_the_robot_tf_and_the_markers():
    config = yaml.safe_load((REPO / "config" / "inertia_id.rviz").read_text())
    manager = config["Visualization Manager"]
    displays = {display["Class"]: display for display in manager["Displays"]}
    robot = displays["rviz_default_plugins/RobotModel"]
    assert robot["Description Source"] == "Topic"
    assert robot["Description Topic"]["Value"] == "/robot_description"
    assert displays["rviz_default_plugins/TF"]["Enabled"]
    markers = displays["rviz_default_plugins/MarkerArray"]
    assert markers["Topic"]["Value"] == MARKERS_TOPIC and markers["Enabled"]
    assert markers["Namespaces"] == {"inertia_id": True}
    fixed_frame = manager["Global Options"]["Fixed Frame"]
    assert f'<link name="{fixed_frame}"' in example_robot_urdf("panda").read_text()
    assert {panel["Class"] for panel in config["Panels"]} >= {"rviz_common/Displays"}
