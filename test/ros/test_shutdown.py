"""The node and the simulator end quietly, exit 0, on SIGINT or SIGTERM wherever it lands: while
Python still imports the libraries, in the middle of their start-up (rclpy objects made after
rclpy's own handler had shut the context down used to fail half-made, or abort the process at
exit), while the simulator waits for subscribers, or while they spin. The ``launch`` fixture
checks every log for a traceback."""

from __future__ import annotations

import signal
import time
from pathlib import Path

import pytest

from helpers.dds import wait_until_serving
from helpers.paths import REPO
from inertia_id_ros.core.robots import example_robot_urdf

pytestmark = pytest.mark.rate_insensitive  # no sample counted: outside the DDS groups

NODE = ("inertia-id-node", "inertia_id_ros.ros.node")
SIM = ("inertia-id-sim", "inertia_id_ros.ros.sim_node")
STARTED = "waiting for data"
"""The node's log line at its first update, as its start-up ends (its executors not yet made)."""


def wait_for_line(process, text: str, timeout: float = 30.0) -> None:
    """Until ``text`` is in ``process``'s log (polling every millisecond)."""
    deadline = time.monotonic() + timeout
    while text not in process.output():
        assert process.alive() and time.monotonic() < deadline, process.output()[-3000:]
        time.sleep(0.001)


def ends_with_0(process, timeout: float = 10.0) -> None:
    """``process`` exits 0 within ``timeout`` s."""
    assert process.popen.wait(timeout=timeout) == 0, process.output()[-3000:]


def test_a_sigint_at_the_end_of_the_start_up_ends_the_node_quietly(launch):
    """Four nodes, each sent SIGINT the moment it logs the end of its start-up (before this
    round, 2 in 20 such nodes aborted at exit)."""
    nodes = [
        launch(
            *NODE,
            "--params-file",
            str(REPO / "config" / "panda_links.yaml"),
            "-p",
            f"urdf_path:={example_robot_urdf('panda')}",
        )
        for _ in range(4)
    ]
    for node in nodes:
        wait_for_line(node, STARTED)
        node.popen.send_signal(signal.SIGINT)
    for node in nodes:
        ends_with_0(node)


@pytest.mark.parametrize("sent", [signal.SIGINT, signal.SIGTERM], ids=["sigint", "sigterm"])
def test_node_and_simulator_spinning_end_quietly(launch, rclpy_context, sent):
    import rclpy

    node = launch(
        *NODE, "-p", f"urdf_path:={example_robot_urdf('panda')}", "-p", "sensor_frame:=panda_link8"
    )
    sim = launch(*SIM)
    peer = rclpy.create_node("inertia_id_shutdown_peer")
    try:
        wait_until_serving(peer)
        wait_for_line(sim, "simulating")
    finally:
        peer.destroy_node()
    for process in (node, sim):
        process.popen.send_signal(sent)
    for process in (node, sim):
        ends_with_0(process)


@pytest.mark.parametrize(
    "robot",
    [[], ["-p", "robot:=panda_torques", "-p", "payload_mass:=0.0"]],
    ids=["panda", "panda_torques_without_payload"],
)
def test_the_simulator_waiting_for_subscribers_ends_at_once(launch, robot):
    """Nobody subscribes: the simulator (the Panda with a payload; without one, no truth to
    publish) waits (up to wait_for_subscribers_sec, 10 s) and a SIGINT ends the wait and the
    simulator within a second."""
    sim = launch(
        *SIM,
        "-p",
        "joint_states_topic:=/nobody/joint_states",
        "-p",
        "wrench_topic:=/nobody/wrench",
        *robot,
    )
    wait_for_line(sim, "simulating")
    time.sleep(0.5)
    sim.popen.send_signal(signal.SIGINT)
    started = time.monotonic()
    ends_with_0(sim)
    assert time.monotonic() - started < 1.5


def wait_until_numpy_loads(process, timeout: float = 30.0) -> None:
    """Until ``process`` has mapped numpy's compiled core (polling ``/proc/<pid>/maps`` every
    millisecond): the console script has taken SIGINT over and imports the libraries."""
    deadline = time.monotonic() + timeout
    maps = Path(f"/proc/{process.popen.pid}/maps")
    while "_multiarray_umath" not in maps.read_text():
        assert process.alive() and time.monotonic() < deadline, process.output()[-3000:]
        time.sleep(0.001)


@pytest.mark.parametrize("script", [NODE, SIM], ids=["node", "simulator"])
def test_a_sigint_while_the_libraries_load_ends_quietly(launch, script):
    """SIGINT 0, 0.3 or 0.6 s after the console script starts importing numpy, so while Python
    imports numpy, pinocchio and rclpy (about a second; the start-up before, Python's own and the
    package's, is left out: on a busy machine it can take longer than 0.4 s): exit 0 and no
    traceback (the ``launch`` fixture checks the logs too; before this round, 13 in 24 such
    starts of the node printed a KeyboardInterrupt traceback)."""
    for delay in (0.0, 0.3, 0.6):
        process = launch(
            *script,
            "-p",
            f"urdf_path:={example_robot_urdf('panda')}",
            "-p",
            "sensor_frame:=panda_link8",
        )
        wait_until_numpy_loads(process)
        time.sleep(delay)
        process.popen.send_signal(signal.SIGINT)
        assert process.popen.wait(timeout=10.0) == 0, process.output()[-3000:]
        assert "Traceback" not in process.output(), process.output()[-3000:]
