"""A log's units judged from its values (:mod:`inertia_id_ros.formats.units`): stamps in other
units than seconds, positions in degrees, radians read as degrees."""

from __future__ import annotations

import numpy as np
import pytest

from inertia_id_ros.findings import REFUSE, WARN
from inertia_id_ros.formats import units


@pytest.mark.parametrize(
    "step, unit",
    [(1.0, "milliseconds"), (5.0, "milliseconds"), (1e6, "nanoseconds"), (2e3, "microseconds")],
)
def test_time_steps_in_other_units_are_named(step: float, unit: str) -> None:
    (finding,) = units.check_time_units(np.arange(100) * step, "stamps")
    assert finding.severity == REFUSE and finding.kind == "time_units"
    assert f"{unit.capitalize()}?" in finding.message and finding.figures["unit"] == unit


@pytest.mark.parametrize("step", [1e-3, 5e-3, 0.01, 0.1])
def test_time_steps_in_seconds_pass(step: float) -> None:
    assert units.check_time_units(np.arange(100) * step, "stamps") == []


def test_degrees_refused_and_a_small_excursion_warned() -> None:
    lower, upper = np.array([-2.9, -2.0, -1.0]), np.array([2.9, 2.0, 1.0])
    q = np.column_stack(
        [np.linspace(-120.0, 150.0, 50), np.linspace(-1.0, 1.0, 50), np.linspace(0.0, 1.3, 50)]
    )
    findings = units.check_angle_units(q, ["a", "b", "c"], lower, upper)
    assert [(f.kind, f.subject, f.severity) for f in findings] == [
        ("degrees", "a", REFUSE),
        ("joint_limits", "c", WARN),
    ]
    assert "Degrees?" in findings[0].message


def test_radians_read_as_degrees_warned_as_still() -> None:
    """A Panda-like arm's radians divided by 57.3 stay within the limits divided as much: warned
    alone, also for a joint beyond 2.9 rad and one whose limits exclude zero; a moving joint
    or a prismatic joint's values are no such sign."""
    lower = np.array([-2.9, -0.1, 0.5, -0.1])
    upper = np.array([2.9, 3.75, 2.5, 0.1])
    radians = np.column_stack(
        [
            np.linspace(-2.5, 2.0, 50),
            np.linspace(0.0, 3.6, 50),
            np.linspace(0.6, 2.4, 50),
            np.linspace(0.0, 0.05, 50),
        ]
    )
    names = ["a", "b", "c", "d"]
    findings = units.check_angle_units(np.deg2rad(radians), names, lower, upper)
    assert [(f.kind, f.subject, f.severity) for f in findings] == [("still", "a, b, c", WARN)]
    assert "radians read as degrees" in findings[0].message
    assert units.check_angle_units(radians, names, lower, upper) == []
    moving = np.deg2rad(radians)  # a near zero, b and c moving in radians
    moving[:, 1:3] = radians[:, 1:3]
    assert units.check_angle_units(moving, names, lower, upper) == []
    prismatic = np.array([False, False, False, True])
    assert (
        units.check_angle_units(np.deg2rad(radians), names, lower, upper, ~prismatic)[0].subject
        == "a, b, c"
    )
