"""Shared fixtures: ROS 2 processes over real DDS, kept on this machine and in their own domain."""

from __future__ import annotations

import os
import random
from collections.abc import Iterator
from pathlib import Path

import pytest

from inertia_id_ros.threads import limit_threads

# The matrices here are small: a multi-threaded BLAS only contends for the cores. The tests and
# the processes they start take the entry points' rule, before numpy loads.
limit_threads()

from helpers.processes import Process, console_script  # noqa: E402 (after the BLAS settings)

ROS_TESTS = Path(__file__).resolve().parent / "ros"

SECOND_DDS_LANE = frozenset(
    {"test_excite.py", "test_whole_body_node.py", "test_runtime.py", "test_node.py"}
)
"""The modules whose DDS scenarios form the second pytest-xdist group ("dds-2"); the other DDS
scenarios form the first ("dds"). The two take about as long."""


@pytest.hookimpl(optionalhook=True)  # a pytest-xdist hook
def pytest_xdist_auto_num_workers(config: pytest.Config) -> int:
    """``-n auto``: one worker per core and one more. A DDS scenario's worker mostly waits (the
    simulator plays its motion at real time), so the numerical tests keep the cores busy."""
    return (os.cpu_count() or 1) + 1


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Mark every test under ``test/ros/`` ``ros``: ``-m "not ros"`` runs the numerical suite
    alone. The tests that run ROS processes (those using ``ros_env``) form two pytest-xdist
    groups (:data:`SECOND_DDS_LANE`): each group's tests run one after another on one worker, so
    that at most two DDS scenarios share the cores, beside the numerical tests. Those marked
    ``rate_insensitive`` (start-up, shutdown, refusals: no sample counted) run anywhere, like a
    numerical test (each worker has a DDS domain of its own). The tests marked ``long_running``
    come first, so that none is left to end the run alone. Runs before pytest-xdist's own hook,
    which reads the groups."""
    for item in items:
        if ROS_TESTS in Path(item.fspath).resolve().parents:
            item.add_marker(pytest.mark.ros)
        if "ros_env" in getattr(item, "fixturenames", ()) and not item.get_closest_marker(
            "rate_insensitive"
        ):
            lane = "dds-2" if Path(item.fspath).name in SECOND_DDS_LANE else "dds"
            item.add_marker(pytest.mark.xdist_group(lane))
    items.sort(key=lambda item: item.get_closest_marker("long_running") is None)


@pytest.fixture(scope="session")
def ros_env() -> dict[str, str]:
    """Environment for ROS processes: a domain of our own, discovery on localhost only. Under
    pytest-xdist each worker of a run has its own domain (``1 + (run + worker) % 101``)."""
    run = os.environ.get("PYTEST_XDIST_TESTRUNUID", str(os.getpid()))
    worker = int(os.environ.get("PYTEST_XDIST_WORKER", "gw0").removeprefix("gw"))
    domain = str(1 + (random.Random(run).randrange(101) + worker) % 101)
    os.environ["ROS_DOMAIN_ID"] = domain
    os.environ["ROS_AUTOMATIC_DISCOVERY_RANGE"] = "LOCALHOST"
    env = dict(os.environ, PYTHONUNBUFFERED="1")
    return env


@pytest.fixture(scope="session")
def rclpy_context(ros_env):
    """rclpy initialised once in the test process (the peer of the node under test)."""
    import rclpy

    rclpy.init()
    yield
    rclpy.try_shutdown()


@pytest.fixture
def launch(ros_env, tmp_path) -> Iterator:
    """``launch(name, module, *ros_args) -> Process``; every process is stopped after the test."""
    processes: list[Process] = []

    def start(name: str, module: str, *ros_args: str) -> Process:
        argv = console_script(name, module) + (["--ros-args", *ros_args] if ros_args else [])
        process = Process(argv, ros_env, tmp_path / f"{name}-{len(processes)}.log")
        processes.append(process)
        return process

    yield start
    for process in processes:
        process.stop()
    for process in processes:  # every process ends quietly after SIGINT or completion
        output = process.output()
        assert "Traceback" not in output and "context is invalid" not in output, (
            f"{process.log_path.name} did not end quietly:\n{output[-3000:]}"
        )
