"""Workspace limits of the Panda's frames: regions, files, the check of a motion and of one pose."""

from __future__ import annotations

import numpy as np
import pytest

from inertia_id_ros.core.robots import example_robot_urdf, load_model
from inertia_id_ros.errors import ConfigError, FrameNotFound
from inertia_id_ros.motion.trajectory import rest_to_rest
from inertia_id_ros.motion.workspace import (
    Box,
    HalfSpace,
    Sphere,
    Workspace,
    WorkspaceChecker,
    WorkspaceLimit,
    parse_region,
)

JOINTS = tuple(f"panda_joint{i}" for i in range(1, 8))
HOME = np.array([0.0, -0.785, 0.0, -2.356, 0.0, 1.571, 0.785])
REACH = np.array([0.3, 0.4, 0.0, -1.6, 0.0, 2.0, 0.785])  # the hand forward and lower
TOOL = "panda_hand_tcp"


@pytest.fixture(scope="module")
def model():
    return load_model(example_robot_urdf("panda"))


def tool_heights(model, trajectory) -> tuple[np.ndarray, np.ndarray]:
    """Stamps (s) and the tool's height (m) at them, by a checker of that frame alone."""
    checker = WorkspaceChecker(
        model, Workspace((WorkspaceLimit("any", (TOOL,), Sphere(np.zeros(3), 100.0)),))
    )
    times = np.linspace(0.0, trajectory.duration, 801)
    return times, checker.positions(JOINTS, trajectory.sample(times)[0])[:, 0, 2]


def table(height: float) -> Workspace:
    """The tool stays above ``z = height``."""
    return Workspace(
        (WorkspaceLimit("table", (TOOL,), HalfSpace(np.array([0.0, 0.0, -1.0]), -height)),)
    )


def test_the_regions_measure_how_far_a_point_is_outside():
    points = np.array([[0.0, 0.0, 0.0], [0.0, 0.0, 2.0], [3.0, 4.0, 0.0]])
    assert HalfSpace(np.array([0.0, 0.0, 1.0]), 0.5).excess(points) == pytest.approx(
        [-0.5, 1.5, -0.5]
    )
    assert Sphere(np.zeros(3), 1.0).excess(points) == pytest.approx([-1.0, 1.0, 4.0])
    box = Box(np.zeros(3), np.array([2.0, 2.0, 2.0]), np.eye(3))
    assert box.excess(points) == pytest.approx([-1.0, 1.0, np.hypot(2.0, 3.0)])
    # turned by 90 degrees about z: a 4 x 2 box becomes 2 x 4
    _, turned = parse_region(
        {"box": {"center": [0, 0, 0], "size": [4, 2, 2], "rpy": [0, 0, np.pi / 2]}}, "test"
    )
    assert turned.excess(np.array([[0.0, 1.9, 0.0], [1.5, 0.0, 0.0]])) == pytest.approx([-0.1, 0.5])


def test_a_workspace_file_is_read_and_its_mistakes_are_named(tmp_path):
    path = tmp_path / "workspace.yaml"
    path.write_text(
        "limits:\n"
        "  - name: table\n    frames: [panda_hand_tcp, panda_link7]\n"
        "    half_space: {normal: [0, 0, -2], offset: -0.1}\n"
        "  - frames: panda_hand\n    box: {min: [-1, -1, 0], max: [1, 1, 1.5]}\n"
        "  - frames: [panda_hand]\n    sphere: {center: [0, 0, 0.3], radius: 1.2}\n"
    )
    workspace = Workspace.load_yaml(path)
    assert [limit.name for limit in workspace.limits] == ["table", "box 1", "sphere 2"]
    plane = workspace.limits[0].region
    assert plane.normal == pytest.approx([0, 0, -1]) and plane.offset == pytest.approx(-0.05)
    assert workspace.limits[1].region.size == pytest.approx([2, 2, 1.5])
    for text, message in (
        ("limits: []\n", "non-empty list 'limits'"),
        (
            "limits:\n  - frames: [a]\n    sphere: {center: [0, 0], radius: 1}\n",
            r"limits\[0\] sphere: 'center' must be 3 finite numbers",
        ),
        (
            "limits:\n  - frames: [a]\n    box: {center: [0, 0, 0], size: [1, 0, 1]}\n",
            "edges must be > 0",
        ),
        ("limits:\n  - sphere: {center: [0, 0, 0], radius: 1}\n", "'frames' must list"),
        ("limits:\n  - frames: [a]\n", "exactly one of half_space, box"),
    ):
        path.write_text(text)
        with pytest.raises(ConfigError, match=message):
            Workspace.load_yaml(path)


def test_an_unknown_frame_is_named(model):
    with pytest.raises(FrameNotFound, match="panda_tool"):
        WorkspaceChecker(
            model, Workspace((WorkspaceLimit("x", ("panda_tool",), Sphere(np.zeros(3), 1.0)),))
        )


def test_a_plane_5_cm_above_the_lowest_point_of_the_tool_path_is_a_violation_of_5_cm(model):
    motion = rest_to_rest(HOME, REACH, 4.0, joint_names=JOINTS)
    times, z = tool_heights(model, motion)
    lowest = float(z.min())
    violation = WorkspaceChecker(model, table(lowest + 0.05)).check(motion, rate_hz=200.0)
    assert violation is not None
    assert (violation.limit.name, violation.frame) == ("table", TOOL)
    assert violation.excess == pytest.approx(0.05, abs=1e-4)
    assert violation.position[2] == pytest.approx(lowest, abs=1e-4)
    below = times[z > lowest + 0.05]  # before the first violation the tool is above the plane
    assert violation.time >= below[0] and np.all(z[times < violation.time - 0.01] > lowest + 0.05)
    assert "table" in str(violation) and "by 0.050 m" in str(violation)
    assert WorkspaceChecker(model, table(lowest - 0.01)).check(motion) is None


def test_the_run_time_check_flags_the_first_pose_beyond_a_box(model):
    motion = rest_to_rest(HOME, REACH, 4.0, joint_names=JOINTS)
    times, z = tool_heights(model, motion)
    floor = 0.5 * (z.min() + z.max())
    box = Workspace(
        (
            WorkspaceLimit(
                "cell",
                (TOOL,),
                Box(np.array([0.0, 0.0, floor + 5.0]), np.array([10.0, 10.0, 10.0]), np.eye(3)),
            ),
        )
    )
    checker = WorkspaceChecker(model, box)
    Q = motion.sample(times)[0]
    flagged = [
        k for k, (q, t) in enumerate(zip(Q, times)) if checker.check_pose(JOINTS, q, t) is not None
    ]
    first = int(np.argmax(z < floor))
    assert flagged and flagged[0] == first
    violation = checker.check_pose(JOINTS, Q[first], times[first])
    assert violation.time == times[first] and violation.excess == pytest.approx(floor - z[first])


def test_the_one_pose_check_agrees_with_the_sampled_check(model):
    motion = rest_to_rest(HOME, REACH, 4.0, joint_names=JOINTS)
    times, z = tool_heights(model, motion)
    workspace = Workspace(
        (
            WorkspaceLimit(
                "table",
                (TOOL, "panda_link7"),
                HalfSpace(np.array([0.0, 0.0, -1.0]), -float(np.median(z))),
            ),
            WorkspaceLimit("ball", (TOOL,), Sphere(np.array([0.3, 0.0, 0.5]), 0.25)),
        )
    )
    checker = WorkspaceChecker(model, workspace)
    Q = motion.sample(times)[0]
    outside = 0
    for q, t in zip(Q[::20], times[::20]):
        one, sampled = (
            checker.check_pose(JOINTS, q, t),
            checker.first_violation(JOINTS, q[None], np.array([t])),
        )
        assert (one is None) == (sampled is None)
        if one is not None:
            outside += 1
            assert (one.limit.name, one.frame) == (sampled.limit.name, sampled.frame)
            assert one.excess == pytest.approx(sampled.excess)
            assert np.allclose(one.position, sampled.position)
    assert 0 < outside < len(Q[::20])
