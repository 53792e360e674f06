"""The excite jobs from Python (no command line): a design's motion, summary and findings, a
check's verdict, one finding per broken limit."""

from __future__ import annotations

import re
from dataclasses import replace

import numpy as np
import pytest

from inertia_id_ros.core.robots import example_robot_urdf
from inertia_id_ros.errors import InputError, ProblemError
from inertia_id_ros.findings import REFUSE
from inertia_id_ros.jobs.excite import (
    DESIGNED_MOTION,
    DesignOptions,
    LimitOptions,
    check,
    design,
)
from inertia_id_ros.motion.objectives import OBJECTIVES
from inertia_id_ros.motion.trajectory import rest_to_rest

URDF = str(example_robot_urdf("panda"))
JOINTS = ("panda_joint5", "panda_joint6", "panda_joint7")
SENSOR = "panda_link8"


@pytest.fixture(scope="module")
def motion_file(tmp_path_factory):
    """A slow wrist motion (0.3 rad in 4 s) within the URDF's limits."""
    path = tmp_path_factory.mktemp("motion") / "wrist.npz"
    start = np.array([0.0, 1.5, 0.0])
    rest_to_rest(start, start + 0.3, 4.0, joint_names=JOINTS).save_npz(path)
    return str(path)


def test_a_motion_within_the_limits_passes_its_check(motion_file):
    result = check(URDF, motion_file)
    assert not result.refused and result.findings == () and result.verdict == ""
    assert result.estimate is not None and result.estimate.joint_names == JOINTS
    assert result.summary == (f"{motion_file}: 4 s of 3 joints within the limits checked",)
    assert result.document["refused"] is False and result.document["findings"] == []


def test_a_check_refuses_with_one_finding_per_broken_limit(motion_file):
    result = check(URDF, motion_file, LimitOptions(max_acceleration=0.01, collision_margin=0.5))
    assert result.refused and result.summary == ()
    # collision margin 0.5 m without --srdf or obstacles: not checked
    assert [f.kind for f in result.findings] == ["acceleration_limit"]
    finding = result.findings[0]
    assert finding.severity == REFUSE and finding.subject == motion_file
    assert finding.figures["excess"] > 0.0 and "rad/s²" in finding.message
    assert result.verdict == f"{motion_file} exceeds {finding.message}"
    assert result.document["refused"] is True


def test_a_design_returns_its_motion_summary_and_progress(tmp_path):
    lines: list[str] = []
    options = DesignOptions(JOINTS, "payload", 3.0, sensor_frame=SENSOR, time_limit=0.5)
    result = design(URDF, options, progress=lines.append)
    assert lines[0] == "limits used (position margin 0.1 rad):"
    assert any(line.startswith("payload: ") for line in lines)
    assert not result.refused and result.verdict == ""
    trajectory = result.estimate
    assert trajectory is result.design.trajectory and trajectory.joint_names == JOINTS
    assert trajectory.duration == pytest.approx(3.0)
    assert result.summary[0].startswith(f"achieved: {result.design.objective_name} ")
    assert result.document["target"] == "payload"
    assert result.document["objective"] == result.design.objective
    # the motion as the prior of the next design: the next one says so
    path = tmp_path / "recording.npz"
    np.savez(
        path,
        t=trajectory.t,
        joint_names=np.array(JOINTS),
        q=trajectory.q,
        dq=trajectory.dq,
        ddq=trajectory.ddq,
        wrench=np.zeros((trajectory.t.size, 6)),
    )
    following = design(URDF, replace(options, prior_recording=str(path)))
    assert f", prior: the information in {path})" in following.summary[0]


def test_a_designed_motion_leaving_the_workspace_is_refused(tmp_path):
    workspace = tmp_path / "workspace.yaml"
    workspace.write_text(
        "limits:\n  - name: tiny\n    frames: [panda_hand_tcp]\n"
        "    sphere: {center: [0.3, 0.0, 0.5], radius: 0.05}\n"
    )
    options = DesignOptions(
        JOINTS, "links", 3.0, time_limit=0.3, limits=LimitOptions(workspace=str(workspace))
    )
    result = design(URDF, options)
    assert result.refused and result.summary == ()
    assert [f.kind for f in result.findings] == ["workspace"]
    assert result.findings[0].subject == DESIGNED_MOTION
    assert result.findings[0].figures["limit"] == "tiny"
    assert result.verdict.startswith(f"{DESIGNED_MOTION} exceeds frame panda_hand_tcp leaves")


@pytest.mark.parametrize("kind", OBJECTIVES.values(), ids=OBJECTIVES.keys())
def test_a_sensor_frame_is_given_exactly_to_the_targets_that_take_one(kind):
    wrong = None if kind.takes_sensor_frame else SENSOR
    with pytest.raises(InputError, match="--sensor-frame is needed with --target payload"):
        design(URDF, DesignOptions(JOINTS, kind.target, 3.0, sensor_frame=wrong))


def test_a_links_design_with_a_coupling_file_models_the_coupled_motor(tmp_path):
    coupling = tmp_path / "wrist.yaml"  # motor 7 turns with joint 6 too (no gear ratios)
    coupling.write_text("joints: [panda_joint6, panda_joint7]\nmatrix: [[1, 0], [0.5, 1]]\n")
    options = DesignOptions(JOINTS, "links", 3.0, time_limit=0.3, coupling=str(coupling))
    result = design(URDF, options)
    links = result.design.evaluator.links
    assert links.parameter_names[-3:] == tuple(
        f"panda_joint7_motor.{t}" for t in ("armature", "viscous", "coulomb")
    )
    assert result.design.information.shape == (links.n_parameters,) * 2
    assert f", with the coupled motors of {coupling})" in result.summary[0]
    # a prior recording's information is taken with the motor's columns too
    trajectory = result.estimate
    recording = tmp_path / "recording.npz"
    samples = {"q": trajectory.q, "dq": trajectory.dq, "ddq": trajectory.ddq}
    np.savez(
        recording, t=trajectory.t, joint_names=np.array(JOINTS), effort=0 * trajectory.q, **samples
    )
    following = design(URDF, replace(options, prior_recording=str(recording)))
    assert following.design.evaluator.prior_information.shape == (links.n_parameters,) * 2


@pytest.mark.parametrize(
    "text, message",
    [
        ("joints: [panda_joint6]\n", "needs 'joints' and a square 'matrix'"),
        ("joints: [a, b]\nmatrix: [[1, 0]]\nextra: 1\n", "it has ['extra', 'joints', 'matrix']"),
        ("joints: [a, b]\nmatrix: [[1, 0]]\n", "one row and column per distinct joint"),
        ("matrix: [", "cannot read --coupling"),
    ],
)
def test_a_bad_coupling_file_is_bad_input(tmp_path, text, message):
    path = tmp_path / "coupling.yaml"
    path.write_text(text)
    with pytest.raises(InputError, match=re.escape(message)):
        design(URDF, DesignOptions(JOINTS, "links", 3.0, coupling=str(path)))


def test_a_coupling_is_for_the_links_target_only(tmp_path):
    path = tmp_path / "coupling.yaml"
    path.write_text("joints: [panda_joint6, panda_joint7]\nmatrix: [[1, 0], [0.5, 1]]\n")
    options = DesignOptions(JOINTS, "payload", 3.0, sensor_frame=SENSOR, coupling=str(path))
    with pytest.raises(ProblemError, match="target 'payload' takes no coupling"):
        design(URDF, options)
