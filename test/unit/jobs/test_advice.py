"""Fixes in the user's terms (:func:`inertia_id_ros.findings.advice`): a refusal names the input
description's key when the log came through one, the command line's flag otherwise, the node's
parameter on the node; in the printed text and in the result JSON alike."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import yaml

from inertia_id_ros.core.robots import example_robot_urdf
from inertia_id_ros.findings import advice
from inertia_id_ros.formats.source import LogSource
from inertia_id_ros.formats.units import check_time_units
from inertia_id_ros.jobs.fit_links import fit_links

PANDA_ARM = [f"panda_joint{i}" for i in range(1, 8)]


def test_a_fix_in_each_terms() -> None:
    (finding,) = check_time_units(np.arange(100) * 2.0, "joint state stamps")  # 2 ms steps
    assert "Convert the stamps to seconds (multiply by 0.001)" in finding.fix
    assert finding.in_terms("flags").fix.startswith("Give --time-unit ms")
    assert "time_unit: ms" in finding.in_terms("description").fix
    assert finding.in_terms("description").message == finding.message
    fix, fixes = advice("effort_sign", "joint 'a3'")
    assert "Flip the effort column's sign" in fix
    assert "sign: {a3: -1}" in fixes["description"]
    assert "torques_effort_signs" in fixes["node"]


@pytest.mark.parametrize("through", ["input", "data"])
def test_a_log_in_degrees_is_refused_naming_the_key_or_the_flag(
    tmp_path: Path, through: str
) -> None:
    t = np.arange(600) / 200.0
    q = np.rad2deg(0.8 * np.sin(np.outer(t, np.linspace(0.5, 1.5, 7)) + 0.3))  # degrees
    np.savez(
        tmp_path / "log.npz", t=t, q=q, effort=np.ones_like(q), joint_names=np.array(PANDA_ARM)
    )
    description = {
        "streams": {"log": {"file": "log.npz", "time": "t", "time_unit": "s"}},
        "joints": {
            "position": {"key": "q", "unit": "rad"},
            "effort": {"key": "effort", "unit": "Nm"},
        },
    }
    (tmp_path / "log.yaml").write_text(yaml.safe_dump(description))
    source = (
        LogSource(input=str(tmp_path / "log.yaml"))
        if through == "input"
        else LogSource(data=str(tmp_path / "log.npz"))
    )
    result = fit_links(str(example_robot_urdf("panda")), source)
    assert result.refused and result.estimate is None
    (degrees,) = [f for f in result.findings if f.kind == "degrees"]
    expected = "unit: deg in joints.position" if through == "input" else "Give --angle-unit deg."
    assert expected in degrees.fix
    (entry,) = [d for d in result.document["findings"] if d["kind"] == "degrees"]
    assert expected in entry["fix"]
