"""DDS-Security over DDS: the node, the simulator and every caller in its own process and
enclave of one keystore (:mod:`inertia_id_ros.ros.keystore`). Only the operator's ``~/excite``
reaches the node; an observer's, a participant of another CA's and an unsecured one's never do.

Without DDS-Security in the middleware (the ROS 2 Kilted wheels' Fast DDS is built without it,
docs/measurements.md) the calls cannot be made secured: that test skips naming the missing
piece, and the node and the simulator are shown to refuse to start rather than run unsecured."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from helpers.dds import node_args
from helpers.processes import Process, console_script
from inertia_id_ros.motion.trajectory import concatenate, rest_to_rest
from inertia_id_ros.ros.keystore import (
    DEFAULT_OBSERVER,
    DEFAULT_OPERATOR,
    NODE_ENCLAVE,
    SIMULATOR_ENCLAVE,
    Keystore,
    create_keystore,
)
from inertia_id_ros.sim.payload import PANDA_ARM_JOINTS, PANDA_HOME

pytestmark = pytest.mark.rate_insensitive  # no sample counted: outside the DDS groups

CALLER = Path(__file__).with_name("excite_caller.py")

PROBE = """
import rclpy
from inertia_id_ros.ros.security import RCLError
rclpy.init()
try:
    rclpy.create_node("security_probe")
except RCLError as error:
    print(error)
"""
"""Creates a node under the environment's security settings; prints rcl's error if it fails."""


def new_keystore(ros_env: dict[str, str], directory: Path) -> Keystore:
    return create_keystore(directory, domain_id=int(ros_env["ROS_DOMAIN_ID"]))


def secured(ros_env: dict[str, str], keystore: Keystore, enclave: str) -> dict[str, str]:
    """``ros_env`` under DDS-Security with ``keystore``, ``enclave`` by the environment."""
    return dict(ros_env, **keystore.environment(), ROS_SECURITY_ENCLAVE_OVERRIDE=enclave)


@pytest.fixture
def keystore(ros_env, tmp_path) -> Keystore:
    return new_keystore(ros_env, tmp_path / "keystore")


@pytest.fixture
def missing_security(ros_env, keystore) -> str:
    """rcl's error when this middleware cannot make a secured participant (no DDS-Security),
    else ''. Any other failure fails the test (the keystore is at fault)."""
    from inertia_id_ros.ros.security import SECURITY_PLUGINS_MISSING

    probe = subprocess.run(
        [sys.executable, "-c", PROBE],
        capture_output=True,
        text=True,
        env=secured(ros_env, keystore, DEFAULT_OBSERVER),
        timeout=60,
    )
    assert probe.returncode == 0, probe.stderr
    error = probe.stdout.strip()
    assert not error or SECURITY_PLUGINS_MISSING in error, error
    return error


def test_without_dds_security_the_node_and_simulator_refuse_to_start(
    ros_env, keystore, missing_security, tmp_path
):
    if not missing_security:
        pytest.skip(
            "the middleware has DDS-Security: "
            "test_only_the_operator_starts_motion runs secured instead"
        )
    processes = [
        Process(
            console_script("inertia-id-node", "inertia_id_ros.ros.node")
            + ["--ros-args", *node_args()],
            secured(ros_env, keystore, NODE_ENCLAVE),
            tmp_path / "node.log",
        ),
        Process(
            console_script("inertia-id-sim", "inertia_id_ros.ros.sim_node")
            + ["--ros-args", "-p", "motion:=hold"],
            secured(ros_env, keystore, SIMULATOR_ENCLAVE),
            tmp_path / "sim.log",
        ),
    ]
    try:
        for process, name in zip(processes, ("inertia_id", "inertia_id_sim")):
            assert process.popen.wait(timeout=60) == 1, process.output()
            output = process.output()
            assert f"{name}: cannot create the node: " in output, output
            assert "doesn't have the security libraries" in output, output
            assert "Traceback" not in output, output
    finally:
        for process in processes:
            process.stop()


def call_excite(
    env: dict[str, str],
    trajectory: Path,
    enclave: str | None = None,
    wait_sec: float = 8.0,
    until_joint_states: bool = False,
) -> subprocess.Popen:
    """Start :data:`CALLER` (``enclave`` in ``env``'s keystore, unsecured without one)."""
    argv = [
        sys.executable,
        str(CALLER),
        "--trajectory",
        str(trajectory),
        "--wait-sec",
        str(wait_sec),
    ]
    argv += ["--enclave", enclave] if enclave else []
    argv += ["--until-joint-states"] if until_joint_states else []
    return subprocess.Popen(
        argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )


def caller_result(caller: subprocess.Popen) -> dict:
    out, err = caller.communicate(timeout=90)
    assert caller.returncode == 0, err
    return json.loads(out.strip().splitlines()[-1])


def test_only_the_operator_starts_motion(ros_env, keystore, missing_security, tmp_path):
    if missing_security:
        pytest.skip(
            "blocked: this middleware has no DDS-Security (Fast DDS built without "
            f"-DSECURITY=ON; rcl: {missing_security.splitlines()[0]})"
        )
    away = PANDA_HOME + np.array([0.3, -0.2, 0.25, 0.2, -0.3, 0.25, 0.4])
    motion = concatenate(
        rest_to_rest(PANDA_HOME, away, 8.0, joint_names=PANDA_ARM_JOINTS),
        rest_to_rest(away, PANDA_HOME, 8.0, joint_names=PANDA_ARM_JOINTS),
    )
    trajectory = tmp_path / "out_and_back.npz"
    motion.save_npz(trajectory)
    processes = [
        Process(
            console_script("inertia-id-sim", "inertia_id_ros.ros.sim_node")
            + ["--ros-args", "-p", "motion:=hold", "-p", "rate_hz:=200.0"],
            secured(ros_env, keystore, SIMULATOR_ENCLAVE),
            tmp_path / "sim.log",
        ),
        Process(
            console_script("inertia-id-node", "inertia_id_ros.ros.node")
            + ["--ros-args", *node_args(window_sec=10.0, update_rate_hz=1.0, allow_motion="true")],
            secured(ros_env, keystore, NODE_ENCLAVE),
            tmp_path / "node.log",
        ),
    ]
    node = processes[1]
    try:
        operator = caller_result(
            call_excite(
                secured(ros_env, keystore, DEFAULT_OPERATOR),
                trajectory,
                DEFAULT_OPERATOR,
                wait_sec=40.0,
                until_joint_states=True,
            )
        )
        assert operator["response"] is not None, (operator, node.output()[-3000:])
        assert operator["response"]["accepted"], operator
        # The node is busy with the 16 s motion: a call reaching it now would be refused as
        # "busy" (and logged); none may reach it.
        rogue = new_keystore(ros_env, tmp_path / "rogue")  # another CA, granting everything
        unauthorised = {
            "observer": call_excite(
                secured(ros_env, keystore, DEFAULT_OBSERVER), trajectory, DEFAULT_OBSERVER
            ),
            "other CA": call_excite(
                secured(ros_env, rogue, DEFAULT_OPERATOR), trajectory, DEFAULT_OPERATOR
            ),
            "unsecured": call_excite(dict(ros_env), trajectory),
        }
        started = time.monotonic()
        for who, caller in unauthorised.items():
            result = caller_result(caller)
            assert result["response"] is None and not result["discovered"], (who, result)
        assert time.monotonic() - started < 60.0
        assert node.alive(), node.output()[-3000:]
        assert "excite refused" not in node.output(), node.output()[-3000:]
    finally:
        for process in processes:
            process.stop()
