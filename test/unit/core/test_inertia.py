"""Conventions and the independent consistency check."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pinocchio as pin
import pytest

from inertia_id_ros.core.inertia import (
    PSEUDO_INERTIA_BASIS,
    check_consistencies,
    check_consistency,
    inertia_from_msg_order,
    inertia_from_theta,
    inertia_to_msg_order,
    pseudo_inertia,
    theta_from_inertia,
    theta_from_pseudo_inertia,
)


def random_body(rng: np.random.Generator) -> tuple[float, np.ndarray, np.ndarray]:
    """A physically consistent body: a random box's inertia, rotated, with a random COM."""
    mass = rng.uniform(0.1, 5.0)
    sides = rng.uniform(0.02, 0.4, size=3)
    rotation = pin.exp3(rng.normal(size=3))
    box = (
        mass
        / 12.0
        * np.diag(
            [
                sides[1] ** 2 + sides[2] ** 2,
                sides[0] ** 2 + sides[2] ** 2,
                sides[0] ** 2 + sides[1] ** 2,
            ]
        )
    )
    return mass, rng.normal(scale=0.2, size=3), rotation @ box @ rotation.T


def test_theta_matches_pinocchio_and_round_trips():
    rng = np.random.default_rng(0)
    for _ in range(50):
        mass, com, i_com = random_body(rng)
        theta = theta_from_inertia(mass, com, i_com)
        reference = pin.Inertia(mass, com, i_com)
        np.testing.assert_allclose(theta, reference.toDynamicParameters(), atol=1e-12)
        np.testing.assert_allclose(
            pseudo_inertia(theta), reference.toPseudoInertia().toMatrix(), atol=1e-12
        )
        np.testing.assert_allclose(
            theta_from_pseudo_inertia(pseudo_inertia(theta)), theta, atol=1e-12
        )
        m, c, i = inertia_from_theta(theta)
        assert m == pytest.approx(mass)
        np.testing.assert_allclose(c, com, atol=1e-12)
        np.testing.assert_allclose(i, i_com, atol=1e-12)
        np.testing.assert_allclose(inertia_from_msg_order(inertia_to_msg_order(i)), i)
        report = check_consistency(theta)
        assert report.fully_consistent and report.min_pseudo_inertia_eig > 0, report


def test_pseudo_inertia_is_linear_in_theta():
    rng = np.random.default_rng(1)
    theta = rng.normal(size=10)
    np.testing.assert_allclose(
        pseudo_inertia(theta), sum(t * a for t, a in zip(theta, PSEUDO_INERTIA_BASIS))
    )


def test_geometry_msgs_order():
    i = np.array([[1.0, 2.0, 3.0], [2.0, 4.0, 5.0], [3.0, 5.0, 6.0]])
    # ixx ixy ixz iyy iyz izz
    np.testing.assert_array_equal(inertia_to_msg_order(i), [1, 2, 3, 4, 5, 6])


def test_negative_mass_is_inconsistent():
    report = check_consistency(theta_from_inertia(-1.0, np.zeros(3), np.eye(3) * 0.01))
    assert not report.fully_consistent and not report.positive_mass
    assert any("mass" in p for p in report.problems)


def test_indefinite_inertia_is_inconsistent():
    report = check_consistency(
        theta_from_inertia(1.0, np.array([0.1, 0, 0]), np.diag([0.01, 0.01, -0.002]))
    )
    assert not report.fully_consistent and not report.inertia_positive_definite
    assert report.min_pseudo_inertia_eig < 0


def test_broken_triangle_inequality_with_positive_definite_inertia_is_inconsistent():
    i_com = np.diag([0.01, 0.01, 0.03])  # positive definite, but 0.01 + 0.01 < 0.03
    report = check_consistency(theta_from_inertia(2.0, np.array([0.0, 0.05, 0.1]), i_com))
    assert report.inertia_positive_definite and report.positive_mass
    assert not report.triangle_inequalities and not report.fully_consistent
    assert report.min_pseudo_inertia_eig < 0


def test_point_mass_is_on_the_boundary_and_consistent():
    report = check_consistency(theta_from_inertia(1.0, np.array([0.1, 0.2, 0.3]), np.zeros((3, 3))))
    assert report.fully_consistent
    assert abs(report.min_pseudo_inertia_eig) < 1e-12


def test_non_finite_theta_is_inconsistent():
    theta = theta_from_inertia(1.0, np.zeros(3), np.eye(3) * 0.01)
    theta[4] = np.nan
    assert not check_consistency(theta).fully_consistent


def test_bodies_checked_at_once_as_one_at_a_time():
    rng = np.random.default_rng(8)
    bodies = [theta_from_inertia(*random_body(rng)) for _ in range(5)]
    bodies += [
        theta_from_inertia(-1.0, np.zeros(3), np.eye(3) * 0.01),
        theta_from_inertia(1.0, np.array([0.1, 0, 0]), np.diag([0.01, 0.01, -0.002])),
        theta_from_inertia(2.0, np.array([0.0, 0.05, 0.1]), np.diag([0.01, 0.01, 0.03])),
        np.full(10, np.nan),
    ]
    reports = check_consistencies(np.array(bodies))
    assert [r.fully_consistent for r in reports] == [True] * 5 + [False] * 4
    for theta, report in zip(bodies, reports):
        single = check_consistency(theta)
        assert (report.positive_mass, report.inertia_positive_definite) == (
            single.positive_mass,
            single.inertia_positive_definite,
        )
        assert report.triangle_inequalities == single.triangle_inequalities
        assert report.problems == single.problems
        if np.isfinite(theta).all():
            expected = np.linalg.eigvalsh(pseudo_inertia(theta))[0]
            assert report.min_pseudo_inertia_eig == pytest.approx(expected, abs=1e-14)
    assert check_consistencies(np.zeros((0, 10))) == []


def test_pure_library_does_not_import_rclpy():
    """Every module outside ros/ (and the generated msg/srv) imports without rclpy."""
    code = (
        "import importlib, pkgutil, sys\n"
        "import inertia_id_ros\n"
        "skip = ('inertia_id_ros.ros', 'inertia_id_ros.msg', 'inertia_id_ros.srv',\n"
        "        'inertia_id_ros.inertia_id_ros_s')\n"
        "names = [m.name for m in pkgutil.walk_packages(inertia_id_ros.__path__,\n"
        "                                               'inertia_id_ros.')\n"
        "         if not m.name.startswith(skip)]\n"
        "for name in names:\n"
        "    importlib.import_module(name)\n"
        "assert len(names) > 15, names\n"
        "assert 'rclpy' not in sys.modules, 'rclpy imported'\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)
