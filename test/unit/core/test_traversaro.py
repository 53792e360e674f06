"""Traversaro et al. 2016, Table I, in simulation: the paper's finding, ground truth, the CLI."""

from __future__ import annotations

import xml.etree.ElementTree as ET

import numpy as np
import pytest

from inertia_id_ros import cli
from inertia_id_ros.core.inertia import inertia_from_theta
from inertia_id_ros.core.robots import example_robot_urdf
from inertia_id_ros.sim import traversaro2016 as tr


@pytest.fixture(scope="module")
def experiment() -> tr.Experiment:
    """The paper's settings, seed 0 (about 1 s)."""
    return tr.run(seed=0)


def test_settings_are_the_papers(experiment: tr.Experiment) -> None:
    assert [p.completion_time for p in experiment.paths] == [10.0, 5.0, 2.0, 1.0, 0.5]
    assert [p.window for p in experiment.paths] == [499, 41, 21, 9, 7]
    assert all(p.samples == 6000 for p in experiment.paths)  # 60 s at 100 Hz
    assert all(list(p.results) == ["ols", "manifold", "lmi"] for p in experiment.paths)


def test_ground_truth_mass_is_the_urdf_links_beyond_the_sensor(experiment) -> None:
    """Independently of pinocchio: the URDF's links downstream of joint ``r_arm_ft_sensor``."""
    root = ET.parse(example_robot_urdf("icub")).getroot()
    children: dict[str, list[str]] = {}
    sensor_child = None
    for joint in root.iter("joint"):
        parent, child = joint.find("parent").get("link"), joint.find("child").get("link")
        children.setdefault(parent, []).append(child)
        if joint.get("name") == tr.SENSOR_FRAME:
            sensor_child = child
    beyond, stack = [], [sensor_child]
    while stack:
        link = stack.pop()
        beyond.append(link)
        stack += children.get(link, [])
    masses = {
        link.get("name"): float(link.find("inertial/mass").get("value"))
        for link in root.iter("link")
        if link.find("inertial") is not None
    }
    assert "r_forearm" in beyond and "r_hand" in beyond
    assert experiment.truth[0] == pytest.approx(sum(masses.get(link, 0.0) for link in beyond))


def test_reproduces_the_papers_finding(experiment: tr.Experiment) -> None:
    """OLS is inconsistent on slow paths; manifold and LMI are always consistent.

    OLS is inconsistent on the 10 s and 5 s paths; manifold and LMI are always consistent; on
    the 1 s and 0.5 s paths all three agree and are close to the truth. (Seed 0 is one of the 14
    in 20 seeds on which the slow-path statement holds for the 5 s path; see the module.)"""
    assert experiment.finding() == dict.fromkeys(experiment.finding(), True)
    for completion_time in (10.0, 5.0):
        ols = experiment.path(completion_time).results["ols"]
        assert not ols.consistency.fully_consistent
        assert ols.consistency.min_pseudo_inertia_eig < -1e-5
    for path in experiment.paths:
        for method in ("manifold", "lmi"):
            assert path.results[method].consistency.fully_consistent
    mass, com, inertia = inertia_from_theta(experiment.truth)
    for completion_time in tr.FAST_PATHS:
        path = experiment.path(completion_time)
        assert path.agree()
        for result in path.results.values():
            m, c, i = inertia_from_theta(result.theta)
            assert abs(m - mass) / mass < 0.005
            assert np.linalg.norm(c - com) < 0.003
            assert np.linalg.norm(i - inertia) / np.linalg.norm(inertia) < 0.1
            np.testing.assert_allclose(result.offset[:3], experiment.offset[:3], atol=0.05)


def test_cli_prints_table_i(capsys, experiment: tr.Experiment) -> None:
    assert cli.main(["traversaro", "--seed", "0"]) == 0
    out = capsys.readouterr().out
    lines = out.splitlines()
    assert any(line.split()[:2] == ["truth", "URDF"] for line in lines)
    rows = [line.split() for line in lines if len(line.split()) >= 12]  # table rows
    ols_rows = [row for row in rows if row[1] == "ols"]
    assert [row[0] for row in ols_rows] == ["10", "5", "2", "1", "0.5"]
    assert [row[-1] for row in ols_rows][:2] == ["NO", "NO"]
    consistent_rows = [row for row in rows if row[0] in ("manifold", "lmi")]
    assert len(consistent_rows) == 10 and all(row[-1] == "yes" for row in consistent_rows)
    assert "all methods agree on the fast paths: yes" in out
    expected = tr.format_table(experiment).splitlines()
    assert lines == expected
