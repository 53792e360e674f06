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


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Mark every test under ``test/ros/`` ``ros``: ``-m "not ros"`` runs the numerical suite
    alone. The tests that run ROS processes (those using ``ros_env``) form one pytest-xdist
    group: they run one after another on one worker (two high-rate DDS scenarios at once on a
    2-core machine lose samples), beside the numerical tests on the others. Those marked
    ``rate_insensitive`` (start-up, shutdown, refusals: no sample counted) run beside them, like
    a numerical test (each worker has a DDS domain of its own)."""
    for item in items:
        if ROS_TESTS in Path(item.fspath).resolve().parents:
            item.add_marker(pytest.mark.ros)
        if "ros_env" in getattr(item, "fixturenames", ()) and not item.get_closest_marker(
            "rate_insensitive"
        ):
            item.add_marker(pytest.mark.xdist_group("dds"))


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
