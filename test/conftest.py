"""Shared fixtures: ROS 2 processes over real DDS, kept on this machine and in their own domain."""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

# The matrices here are small: a multi-threaded BLAS only contends for the 2 cores (as the ROS
# processes, see inertia_id_ros/ros/__init__.py). Set before numpy loads; overridable.
for _variable in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_variable, "1")

REPO = Path(__file__).resolve().parents[1]
SHARED_DATA = REPO.parent / "shared" / "data"


def shared_data(name: str) -> Path:
    """``../shared/data/<name>`` or skip the test, saying why."""
    path = SHARED_DATA / name
    if not path.exists():
        pytest.skip(f"real-robot data {path} is absent (it lives beside the repository in "
                    "../shared/data, which a user's clone does not have)")
    return path


@pytest.fixture(scope="session")
def ros_env() -> dict[str, str]:
    """Environment for ROS processes: a random domain of our own, discovery on localhost only."""
    domain = str(random.Random(os.getpid()).randint(1, 101))
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


def console_script(name: str, module: str) -> list[str]:
    """``.venv/bin/<name>`` as users run it, else ``python -m module``."""
    script = Path(sys.executable).parent / name
    return [str(script)] if script.exists() else [sys.executable, "-m", module]


class Process:
    """A child process whose output goes to a log file, stopped with SIGINT."""

    def __init__(self, argv: list[str], env: dict[str, str], log: Path) -> None:
        self.log_path = log
        self._log = open(log, "w")
        self.popen = subprocess.Popen(argv, env=env, stdout=self._log, stderr=subprocess.STDOUT)

    def output(self) -> str:
        self._log.flush()
        return self.log_path.read_text()

    def alive(self) -> bool:
        return self.popen.poll() is None

    def stop(self, timeout: float = 10.0) -> int:
        if self.alive():
            self.popen.send_signal(signal.SIGINT)
            try:
                self.popen.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                self.popen.kill()
                self.popen.wait()
        self._log.close()
        return self.popen.returncode


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


def spin_until(node, predicate, timeout: float) -> bool:
    """Spin ``node`` until ``predicate()`` is true or ``timeout`` (s) passes."""
    import rclpy

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        rclpy.spin_once(node, timeout_sec=0.05)
        if predicate():
            return True
    return predicate()


def solve_while_feeding(estimator, add_sample, n: int, allowed: tuple[str, ...]) -> int:
    """Call ``add_sample(k)`` for ``k < n`` from a producer thread while this thread processes
    and solves ``estimator``; halfway the producer waits for a successful solve, so the rest
    arrives while solves run, however the threads are scheduled. Every failed solve must have a
    reason in ``allowed``; returns the successful solves (> 0); re-raises the producer's error."""
    import threading

    from inertia_id_ros.estimator import EstimateUnavailable

    failures: list[BaseException] = []
    solved = threading.Event()

    def produce() -> None:
        try:
            for k in range(n):
                if k == n // 2 and not solved.wait(timeout=60.0):
                    raise TimeoutError("no successful solve within 60 s")
                add_sample(k)
        except BaseException as error:  # noqa: BLE001 - re-raised below
            failures.append(error)

    producer = threading.Thread(target=produce)
    producer.start()
    solves = 0
    while producer.is_alive():
        estimator.process()
        try:
            estimator.solve()
        except EstimateUnavailable as why:
            assert why.reason in allowed, why
        else:
            solves += 1
            solved.set()
    producer.join()
    if failures:
        raise failures[0]
    assert solves > 0
    estimator.process()
    return solves
