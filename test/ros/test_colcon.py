"""The package builds with colcon in an ordinary ROS 2 workspace (here: on the ROS 2 wheels)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from helpers.paths import REPO


@pytest.mark.long_running
def test_colcon_build_installs_messages_library_and_executables(tmp_path):
    bin_dir = Path(sys.executable).parent
    if not (bin_dir / "colcon").exists():
        pytest.skip("colcon is not installed (pip install -r requirements-test.txt)")
    if shutil.which("git") is None or not (REPO / ".git").exists():
        pytest.skip("needs a git checkout to copy the package's tracked files")
    package = tmp_path / "src" / "inertia_id_ros"
    tracked = subprocess.run(
        ["git", "-C", str(REPO), "ls-files"], check=True, text=True, capture_output=True
    ).stdout.split()
    for name in tracked:
        (package / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(REPO / name, package / name)
    env = dict(
        os.environ,
        AMENT_PREFIX_PATH=sys.prefix,
        CMAKE_PREFIX_PATH=sys.prefix,
        PATH=f"{bin_dir}{os.pathsep}{os.environ['PATH']}",
    )
    build = subprocess.run(
        [str(bin_dir / "colcon"), "build", "--cmake-args", "-DBUILD_TESTING=OFF"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert build.returncode == 0, build.stdout[-3000:] + build.stderr[-3000:]

    install = tmp_path / "install" / "inertia_id_ros"
    site = next(install.glob("lib/python3*/site-packages"))
    # like sourcing the workspace's setup script: the install space first on both paths
    library_path = os.pathsep.join(
        p for p in (str(install / "lib"), os.environ.get("LD_LIBRARY_PATH", "")) if p
    )
    run_env = dict(env, PYTHONPATH=str(site), LD_LIBRARY_PATH=library_path)
    code = (
        "import inertia_id_ros.msg as m; from inertia_id_ros.srv import Identify; "
        "from inertia_id_ros.msg import InertialParameters; print(m.__file__)"
    )
    imported = subprocess.run(
        [sys.executable, "-c", code],
        env=run_env,
        cwd=tmp_path,
        capture_output=True,
        text=True,
        check=True,
    )
    assert imported.stdout.strip().startswith(str(install)), imported.stdout
    assert (install / "share" / "inertia_id_ros" / "launch" / "identify.launch.py").exists()
    node_script = install / "lib" / "inertia_id_ros" / "inertia_id_node"
    node = subprocess.run(
        [
            sys.executable,
            str(node_script),
            "--ros-args",
            "-p",
            "urdf_path:=/nonexistent.urdf",
            "-p",
            "sensor_frame:=tool0",
        ],
        env=run_env,
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert node.returncode == 2 and "'urdf_path'" in node.stderr
