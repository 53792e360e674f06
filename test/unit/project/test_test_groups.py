"""The suite's scheduling holds: the installed pytest and pytest-xdist run a group's tests on one
worker (pytest 9.2 with pytest-xdist 3.8 silently does not), the modules ``test/conftest.py``
names for the second DDS group exist, and the long tests come first."""

from __future__ import annotations

import re
import subprocess
import sys

import pytest

from helpers.paths import REPO

GROUPED = """
import pytest

@pytest.mark.xdist_group("lane")
@pytest.mark.parametrize("k", range(4))
def test_grouped(k):
    pass

@pytest.mark.parametrize("k", range(4))
def test_free(k):
    pass
"""


def test_a_groups_tests_run_on_one_worker_under_xdist(tmp_path):
    pytest.importorskip("xdist")
    (tmp_path / "test_grouped.py").write_text(GROUPED)
    (tmp_path / "pytest.ini").write_text("[pytest]\n")
    run = subprocess.run(
        [sys.executable, "-m", "pytest", "-n", "2", "--dist", "loadgroup", "-v"]
        + ["-p", "no:cacheprovider", str(tmp_path)],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert run.returncode == 0, run.stdout[-2000:]
    workers = set(re.findall(r"\[(gw\d+)\].*PASSED \S*test_grouped\[\d\]@lane", run.stdout))
    assert len(workers) == 1, f"the group's tests ran on {workers or 'no group'}:\n{run.stdout}"


def test_the_second_groups_modules_exist_and_the_long_tests_come_first():
    from conftest import ROS_TESTS, SECOND_DDS_LANE

    assert all((ROS_TESTS / name).is_file() for name in SECOND_DDS_LANE), SECOND_DDS_LANE
    collected = subprocess.run(
        [sys.executable, "-m", "pytest", "--collect-only", "-q", "-n", "0"]
        + ["-p", "no:cacheprovider", "test/ros/test_node.py", "test/unit/project/test_types.py"],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert collected.returncode == 0, collected.stdout[-2000:]
    ids = [line for line in collected.stdout.splitlines() if "::" in line]
    assert ids[0].startswith("test/unit/project/test_types.py::"), ids[:3]
