"""CommandFollower: the simulated controller takes over commands continuously, late by its lag."""

from __future__ import annotations

import numpy as np
import pytest

from inertia_id_ros.motion.trajectory import rest_to_rest
from inertia_id_ros.sim.follower import CommandFollower, at_rest

NAMES = ("a", "b")
HOME = np.array([0.2, -0.3])


def swinging(t):
    """A built-in motion: q = HOME + [0.1 sin t, 0.2 sin 2t]."""
    t = np.atleast_1d(t)[:, None]
    w = np.array([1.0, 2.0])
    amp = np.array([0.1, 0.2])
    return HOME + amp * np.sin(w * t), amp * w * np.cos(w * t), -amp * w**2 * np.sin(w * t)


def test_commands_are_followed_late_by_the_lag_from_where_the_robot_is():
    follower = CommandFollower(swinging, NAMES, lag=0.02)
    t = np.linspace(0.0, 2.0, 201)
    assert np.allclose(follower(t)[0], swinging(t)[0])  # before any command: on time
    before = follower(np.linspace(0.0, 3.0, 301))
    move = rest_to_rest(HOME, HOME + [0.5, 0.4], 2.0, joint_names=NAMES)
    assert follower.command(3.0, 3.1, move.t, move.q, move.dq, move.ddq)
    assert np.array_equal(follower(np.linspace(0.0, 3.0, 301))[0], before[0])  # the past stays
    q, dq, ddq = follower(np.array([3.1 + 0.02 + 1.0, 3.1 + 0.02 + 2.0, 10.0]))
    assert np.allclose(q[0], move.sample(1.0)[0][0], atol=1e-6)  # the lag: 20 ms late
    assert np.allclose(q[1:], HOME + [0.5, 0.4]) and np.allclose(dq[1:], 0.0)
    fine = np.linspace(2.5, 6.0, 35001)
    q, dq, ddq = follower(fine)
    step = fine[1] - fine[0]
    # continuous through the switch (q and dq), dq the derivative of q
    assert np.max(np.abs(np.diff(q, axis=0))) <= step * np.abs(dq).max() * 1.01
    assert np.max(np.abs(np.diff(dq, axis=0))) <= step * np.abs(ddq).max() * 1.01
    assert np.allclose(np.gradient(q, step, axis=0)[1:-1], dq[1:-1], atol=1e-3)


def test_a_later_command_takes_over_mid_motion_and_the_robot_then_holds():
    follower = CommandFollower(at_rest(HOME), NAMES, lag=0.0)
    move = rest_to_rest(HOME, HOME + [1.0, 1.0], 4.0, joint_names=NAMES)
    follower.command(0.0, 0.0, move.t, move.q, move.dq, move.ddq)
    q_mid, dq_mid, _ = follower(np.array([2.0]))
    assert np.linalg.norm(dq_mid) > 0.3
    hold = q_mid[0] + [0.01, 0.01]
    assert follower.command(
        2.0, 0.0, np.array([2.2]), hold[None], np.zeros((1, 2)), np.zeros((1, 2))
    )
    q, dq, _ = follower(np.array([2.0, 2.2, 5.0]))
    assert np.allclose(q[0], q_mid[0]) and np.allclose(dq[0], dq_mid[0])
    assert np.allclose(q[1:], hold) and np.allclose(dq[1:], 0.0)
    assert follower.commands == 2


def test_a_command_wholly_in_the_past_is_ignored():
    follower = CommandFollower(at_rest(HOME), NAMES)
    assert not follower.command(
        5.0, 1.0, np.array([0.5, 1.0]), np.zeros((2, 2)), np.zeros((2, 2)), np.zeros((2, 2))
    )
    assert follower.commands == 0 and np.allclose(follower(np.array([6.0]))[0], HOME)
    with pytest.raises(ValueError, match="lag"):
        CommandFollower(at_rest(HOME), NAMES, lag=-1.0)
