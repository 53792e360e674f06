"""``inertia-id excite`` with safety files: a refusal (exit 3) names the limit and the amount."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest

from inertia_id_ros import cli
from inertia_id_ros.core.robots import example_robot_urdf, load_model
from inertia_id_ros.motion.trajectory import concatenate, rest_to_rest
from inertia_id_ros.motion.workspace import Sphere, Workspace, WorkspaceChecker, WorkspaceLimit

JOINTS = tuple(f"panda_joint{i}" for i in range(1, 8))
HOME = np.array([0.0, -0.785, 0.0, -2.356, 0.0, 1.571, 0.785])
REACH = np.array([0.3, 0.4, 0.0, -1.6, 0.0, 2.0, 0.785])
TOOL = "panda_hand_tcp"
URDF = str(example_robot_urdf("panda"))


@pytest.fixture(scope="module")
def motion_file(tmp_path_factory):
    """A Panda motion (home, forward and down, back) and its tool's lowest height (m)."""
    motion = concatenate(
        rest_to_rest(HOME, REACH, 3.0, joint_names=JOINTS),
        rest_to_rest(REACH, HOME, 3.0, joint_names=JOINTS),
    )
    path = tmp_path_factory.mktemp("motion") / "motion.npz"
    motion.save_npz(path)
    checker = WorkspaceChecker(
        load_model(URDF), Workspace((WorkspaceLimit("all", (TOOL,), Sphere(np.zeros(3), 9.0)),))
    )
    lowest = checker.positions(JOINTS, motion.sample(np.linspace(0.0, 6.0, 1201))[0])[:, 0, 2]
    return path, float(lowest.min())


def table_file(tmp_path, height: float):
    path = tmp_path / "workspace.yaml"
    path.write_text(
        f"limits:\n  - name: table\n    frames: [{TOOL}]\n"
        f"    half_space: {{normal: [0, 0, -1], offset: {-height!r}}}\n"
    )
    return str(path)


def test_a_trajectory_through_a_workspace_plane_is_refused_with_the_amount(
    motion_file, tmp_path, capsys
):
    path, lowest = motion_file
    code = cli.main(
        [
            "excite",
            "--urdf",
            URDF,
            "--check",
            str(path),
            "--workspace",
            table_file(tmp_path, lowest + 0.05),
        ]
    )
    err = capsys.readouterr().err
    assert code == 3 and err.count("\n") == 1
    assert "refused" in err and f"frame {TOOL} leaves workspace limit 'table'" in err
    assert "by 0.050 m" in err
    code = cli.main(
        [
            "excite",
            "--urdf",
            URDF,
            "--check",
            str(path),
            "--workspace",
            table_file(tmp_path, lowest - 0.01),
        ]
    )
    assert code == 0 and "within the limits checked" in capsys.readouterr().out


def test_a_trajectory_into_an_obstacle_or_too_fast_is_refused(motion_file, tmp_path, capsys):
    path, _ = motion_file
    environment = tmp_path / "environment.yaml"
    environment.write_text(
        "obstacles:\n  - name: lamp\n    sphere: {center: [0.64, 0.2, 0.3], radius: 0.05}\n"
    )
    code = cli.main(
        ["excite", "--urdf", URDF, "--check", str(path), "--environment", str(environment)]
    )
    err = capsys.readouterr().err
    assert code == 3 and "and lamp overlap by" in err and "collision margin 10 mm" in err
    code = cli.main(["excite", "--urdf", URDF, "--check", str(path), "--max-acceleration", "0.5"])
    err = capsys.readouterr().err
    assert code == 3 and "--max-acceleration by" in err and "rad/s²" in err


def test_check_keeps_the_effort_limits_with_torque_limits(motion_file, tmp_path, capsys):
    """--check --torque-limits: the URDF links' torques against the effort limits (here cut to
    1 N·m, which holding the arm up breaks); without the flag they are not checked."""
    weak = tmp_path / "weak_panda.urdf"
    weak.write_text(re.sub(r'effort="[0-9.]+"', 'effort="1"', Path(URDF).read_text()))
    argv = ["excite", "--urdf", str(weak), "--check", str(motion_file[0])]
    assert cli.main([*argv, "--torque-limits"]) == 3
    err = capsys.readouterr().err
    assert "the URDF's effort limit by" in err and err.count("\n") == 1
    assert cli.main(argv) == 0


def test_a_designed_motion_leaving_the_workspace_is_not_written(tmp_path, capsys):
    workspace = tmp_path / "workspace.yaml"
    workspace.write_text(
        f"limits:\n  - name: tiny\n    frames: [{TOOL}]\n"
        "    sphere: {center: [0.3, 0.0, 0.5], radius: 0.05}\n"
    )
    out = tmp_path / "motion.npz"
    code = cli.main(
        [
            "excite",
            "--urdf",
            URDF,
            "--joints",
            ",".join(JOINTS),
            "--target",
            "links",
            "--duration",
            "3",
            "--out",
            str(out),
            "--time-limit",
            "0.5",
            "--workspace",
            str(workspace),
        ]
    )
    captured = capsys.readouterr()
    assert code == 3 and not out.exists()
    assert "the designed motion exceeds" in captured.err and "limit 'tiny'" in captured.err


@pytest.mark.parametrize(
    "text, message",
    [
        (
            "limits:\n  - frames: [nowhere]\n    sphere: {center: [0, 0, 0], radius: 1}\n",
            "frame 'nowhere' is not in the model",
        ),
        (
            "limits:\n  - frames: [panda_hand]\n    sphere: {center: [0, 0], radius: 1}\n",
            "'center' must be 3 finite numbers",
        ),
    ],
)
def test_a_bad_workspace_file_exits_2_with_one_line(motion_file, tmp_path, capsys, text, message):
    path = tmp_path / "workspace.yaml"
    path.write_text(text)
    code = cli.main(
        ["excite", "--urdf", URDF, "--check", str(motion_file[0]), "--workspace", str(path)]
    )
    err = capsys.readouterr().err
    assert code == 2 and message in err and err.count("\n") == 1


def test_designing_without_the_design_options_is_bad_input(capsys):
    code = cli.main(["excite", "--urdf", URDF, "--joints", "panda_joint1"])
    assert code == 2 and "needs --target, --duration, --out" in capsys.readouterr().err


def test_a_check_refuses_the_design_options_a_coupling_included(motion_file, capsys):
    code = cli.main(["excite", "--urdf", URDF, "--check", str(motion_file[0]), "--coupling", "c"])
    assert code == 2 and "--check takes no --target, --duration, --out or --coupling" in (
        capsys.readouterr().err
    )


def test_a_links_design_takes_the_coupled_motors_of_a_coupling_file(tmp_path, capsys):
    coupling = tmp_path / "wrist.yaml"
    coupling.write_text("joints: [panda_joint6, panda_joint7]\nmatrix: [[1, 0], [0.5, 1]]\n")
    out = tmp_path / "motion.npz"
    argv = ["excite", "--urdf", URDF, "--joints", ",".join(JOINTS[4:]), "--target", "links"]
    argv += ["--duration", "3", "--out", str(out), "--time-limit", "0.3"]
    assert cli.main([*argv, "--coupling", str(coupling)]) == 0 and out.exists()
    assert f", with the coupled motors of {coupling})" in capsys.readouterr().out
    coupling.write_text("joints: [panda_joint6, panda_joint7]\n")
    assert cli.main([*argv, "--coupling", str(coupling)]) == 2
    err = capsys.readouterr().err
    assert "needs 'joints' and a square 'matrix'" in err and err.count("\n") == 1
