"""Collision distances of the Panda (convex hulls; SRDF pairs, obstacles) and their gradients."""

from __future__ import annotations

import numpy as np
import pytest

from inertia_id_ros.core.robots import example_robot_data_dir, example_robot_urdf
from inertia_id_ros.errors import ConfigError, ProblemError
from inertia_id_ros.motion.collision import CollisionChecker, load_environment
from inertia_id_ros.motion.trajectory import rest_to_rest

JOINTS = tuple(f"panda_joint{i}" for i in range(1, 8))
HOME = np.array([0.0, -0.785, 0.0, -2.356, 0.0, 1.571, 0.785])
FOLDED = np.array([0.0, 1.2, 0.0, -3.0, 0.0, 3.6, 0.0])  # hand folded back onto the arm


@pytest.fixture(scope="module")
def checker():
    return CollisionChecker(
        example_robot_urdf("panda"), example_robot_data_dir() / "panda_description/srdf/panda.srdf"
    )


def test_home_is_clear_and_folding_the_hand_onto_the_arm_is_not(checker):
    home, folded = checker.distances(JOINTS, np.vstack([HOME, FOLDED])).min(axis=1)
    assert home > 0.05 and folded < 0.01
    clearance = checker.clearance(rest_to_rest(HOME, FOLDED, 2.0, joint_names=JOINTS))
    assert clearance.distance == pytest.approx(folded, abs=1e-9)
    assert clearance.time == pytest.approx(2.0) and all(clearance.pair)


def test_distance_gradients_of_separated_pairs_match_finite_differences(checker):
    Q = FOLDED + np.random.default_rng(0).normal(scale=0.05, size=(5, 7))
    samples, pairs, distances, gradients = checker.near(JOINTS, Q, threshold=0.05)
    assert samples.size > 0 and np.all(distances < 0.05)
    separated = distances > 0.0  # penetration depths (EPA) have approximate gradients
    assert np.any(separated)
    direction = np.random.default_rng(1).normal(size=7)
    for i, pair, d, g in zip(
        samples[separated], pairs[separated], distances[separated], gradients[separated]
    ):
        assert checker.distances(JOINTS, Q[i][None])[0, pair] == pytest.approx(d)
        step = 1e-6 * direction
        plus, minus = checker.distances(JOINTS, np.vstack([Q[i] + step, Q[i] - step]))[:, pair]
        assert (plus - minus) / 2e-6 == pytest.approx(g @ direction, rel=1e-4, abs=1e-6)


def test_a_missing_srdf_is_a_problem_error():
    with pytest.raises(ProblemError, match="SRDF"):
        CollisionChecker(example_robot_urdf("panda"), "/nonexistent.srdf")


def test_obstacles_are_read_from_a_file_and_checked_against_the_moving_links(tmp_path):
    path = tmp_path / "environment.yaml"
    path.write_text(
        "obstacles:\n"
        "  - name: table\n    half_space: {normal: [0, 0, 1], offset: 0.1}\n"
        "  - name: post\n    box: {center: [0.0, -0.5, 0.3], size: [0.1, 0.1, 0.6]}\n"
        "    ignore: [panda_link1]\n"
        "  - name: lamp\n    sphere: {center: [0.0, 0.6, 1.0], radius: 0.1}\n"
    )
    obstacles = load_environment(path)
    assert [o.name for o in obstacles] == ["table", "post", "lamp"]
    checker = CollisionChecker(example_robot_urdf("panda"), None, obstacles=obstacles)
    names = {checker.pair_names(k) for k in range(checker.n_pairs)}
    assert all("table" in pair or "post" in pair or "lamp" in pair for pair in names)
    assert not any("panda_link0" in a for a, _ in names)  # fixed to the base: never paired
    assert not any(a.startswith("panda_link1") and b == "post" for a, b in names)
    home = checker.clearance(rest_to_rest(HOME, HOME + 0.01, 1.0, joint_names=JOINTS))
    assert home.distance > 0.03 and not home.shortfall(0.01)
    # the hand down through the table top
    down = np.array([0.0, 1.3, 0.0, -0.6, 0.0, 1.6, 0.785])
    low = checker.clearance(rest_to_rest(HOME, down, 2.0, joint_names=JOINTS))
    assert low.distance < 0.0 and "table" in low.pair
    assert (
        f"{1e3 * (0.01 - low.distance):.1f} mm closer than the collision margin 10 mm"
        in low.shortfall(0.01)
    )


def test_an_obstacle_ignoring_an_unknown_link_is_named(tmp_path):
    path = tmp_path / "environment.yaml"
    path.write_text(
        "obstacles:\n  - sphere: {center: [0, 0, 2], radius: 0.1}\n    ignore: [gripper]\n"
    )
    with pytest.raises(ConfigError, match=r"'sphere 0' ignores \['gripper'\]"):
        CollisionChecker(example_robot_urdf("panda"), None, obstacles=load_environment(path))
