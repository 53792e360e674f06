"""Self-collision distances of the Panda (convex hulls, SRDF pairs) and their gradients."""

from __future__ import annotations

import numpy as np
import pytest

from inertia_id_ros.core.robots import example_robot_data_dir, example_robot_urdf
from inertia_id_ros.errors import ProblemError
from inertia_id_ros.motion.collision import SelfCollisionChecker
from inertia_id_ros.motion.trajectory import rest_to_rest

JOINTS = tuple(f"panda_joint{i}" for i in range(1, 8))
HOME = np.array([0.0, -0.785, 0.0, -2.356, 0.0, 1.571, 0.785])
FOLDED = np.array([0.0, 1.2, 0.0, -3.0, 0.0, 3.6, 0.0])  # hand folded back onto the arm


@pytest.fixture(scope="module")
def checker():
    return SelfCollisionChecker(example_robot_urdf("panda"),
                                example_robot_data_dir() / "panda_description/srdf/panda.srdf")


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
    for i, pair, d, g in zip(samples[separated], pairs[separated], distances[separated],
                             gradients[separated]):
        assert checker.distances(JOINTS, Q[i][None])[0, pair] == pytest.approx(d)
        step = 1e-6 * direction
        plus, minus = checker.distances(JOINTS, np.vstack([Q[i] + step, Q[i] - step]))[:, pair]
        assert (plus - minus) / 2e-6 == pytest.approx(g @ direction, rel=1e-4, abs=1e-6)


def test_a_missing_srdf_is_a_problem_error():
    with pytest.raises(ProblemError, match="SRDF"):
        SelfCollisionChecker(example_robot_urdf("panda"), "/nonexistent.srdf")
