"""The node under simulated time (``use_sim_time``, the feeder publishes ``/clock``), over real
DDS: the ``~/tare`` service, run-time parameter changes through rclpy's parameter services, a
forced solver failure and a reset of the simulated clock (a simulator restarting), in that order
(module-scoped: one node process meets them all)."""

from __future__ import annotations

import numpy as np
import pytest

from helpers.dds import Feeder, NodeUnderTest, identify, node_args, spin_until
from helpers.processes import Process, console_script
from inertia_id_ros.core.inertia import check_consistency
from inertia_id_ros.sim.payload import PayloadSimulator

NO_PAYLOAD = np.r_[1e-9, 0.0, 0.0, 0.0, 1e-12, 0.0, 1e-12, 0.0, 0.0, 1e-12]
"""The payload removed: a negligible body (the simulator needs one)."""
UPDATE_RATE = 5.0
"""The node's ``update_rate_hz`` at start (Hz)."""


def call(peer, client, request):
    import rclpy

    assert client.wait_for_service(timeout_sec=20.0)
    future = client.call_async(request)
    rclpy.spin_until_future_complete(peer, future, timeout_sec=60.0)
    assert future.done(), "no response"
    return future.result()


class RuntimeHarness(NodeUnderTest):
    """:class:`NodeUnderTest` with the node's ``~/tare`` and parameter services."""

    def __init__(self, *args) -> None:
        from rclpy.parameter_client import AsyncParameterClient

        from inertia_id_ros.srv import Tare

        super().__init__(*args)
        self.tare_client = self.peer.create_client(Tare, "/inertia_id/tare")
        self.parameters = AsyncParameterClient(self.peer, "inertia_id")

    def tare(self, **request):
        from inertia_id_ros.srv import Tare

        return call(self.peer, self.tare_client, Tare.Request(**request))

    def set(self, atomically: bool = False, **values) -> list:
        """Set parameters through the node's parameter service, one by one (one result each)
        or ``atomically`` (one result: all or none apply), as ``ros2 param set`` and ``ros2
        param load`` do."""
        import rclpy
        from rclpy.parameter import Parameter

        assert self.parameters.wait_for_services(timeout_sec=20.0)
        parameters = [Parameter(k, value=v) for k, v in values.items()]
        future = (
            self.parameters.set_parameters_atomically(parameters)
            if atomically
            else self.parameters.set_parameters(parameters)
        )
        rclpy.spin_until_future_complete(self.peer, future, timeout_sec=20.0)
        response = future.result()
        return [response.result] if atomically else list(response.results)

    def diagnostics_rate(self, seconds: float) -> float:
        """Diagnostics messages per second over ``seconds`` (one per update)."""
        start = self.diagnostics_received
        spin_until(self.peer, lambda: False, seconds)
        return (self.diagnostics_received - start) / seconds


@pytest.fixture(scope="module")
def node(ros_env, rclpy_context, tmp_path_factory):
    import rclpy
    from rosgraph_msgs.msg import Clock

    from inertia_id_ros.srv import Identify

    log = tmp_path_factory.mktemp("runtime") / "inertia-id-node.log"
    process = Process(
        console_script("inertia-id-node", "inertia_id_ros.ros.node")
        + [
            "--ros-args",
            *node_args(window_sec=10.0, update_rate_hz=UPDATE_RATE, use_sim_time=True),
        ],
        ros_env,
        log,
    )
    peer = rclpy.create_node("inertia_id_runtime_client")
    try:
        client = peer.create_client(Identify, "/inertia_id/identify")
        assert client.wait_for_service(timeout_sec=30.0), process.output()
        harness = RuntimeHarness(process, peer, client, Feeder(peer, PayloadSimulator.panda()))
        harness.feeder.clock = peer.create_publisher(Clock, "/clock", 10)
        harness.take_reference(12.0)
        assert abs(harness.diagnostics_stamp - (harness.feeder.t0 + 12.0)) < 1.0  # sim time
        yield harness
    finally:
        peer.destroy_node()
        process.stop()


def test_tare_with_the_payload_removed_then_identify_with_it(node):
    """Reset; a tare fails without data. The payload removed for 3 s: a 2 s tare gives the
    sensor's offset and restarts the window. The payload back on for 12 s: identified, with an
    offset that agrees with the tare."""
    from inertia_id_ros.core.inertia import inertia_from_theta
    from inertia_id_ros.ros.conversions import wrench_to_array

    sim = node.feeder.sim
    identify(node.peer, node.client, reset=True)
    empty = node.tare(duration=1.0)
    assert not empty.success and "too_few_samples" in empty.message
    inconsistent = node.tare(known_payload=True)  # theta zero: no body
    assert not inconsistent.success and "not physically consistent" in inconsistent.message
    node.feeder.sim = PayloadSimulator.panda(payload_theta=NO_PAYLOAD)
    node.feeder.publish(3.0)
    node.settle()
    tare = node.tare(duration=2.0)
    assert tare.success, tare.message
    assert "window restarted" in tare.message
    assert 0.9 * 2.0 * node.feeder.rate <= tare.num_samples <= 2.0 * node.feeder.rate + 1
    offset = wrench_to_array(tare.offset)
    assert np.linalg.norm(offset[:3] - sim.true_offset[:3]) < 0.02
    assert np.linalg.norm(offset[3:] - sim.true_offset[3:]) < 0.002
    assert np.all(np.array(tare.noise_std) < 1.5 * sim.wrench_noise_std)
    assert np.all(np.array(tare.offset_std) < 0.2 * np.array(tare.noise_std))

    node.feeder.sim = sim
    node.feeder.publish(12.0)
    node.settle()
    response = identify(node.peer, node.client)
    assert response.success, response.message
    mass, com, _ = inertia_from_theta(sim.true_theta)
    theta = np.array(response.estimate.theta)
    assert abs(theta[0] - mass) < 0.005 * mass
    assert np.linalg.norm(wrench_to_array(response.estimate.sensor_offset)[:3] - offset[:3]) < 0.05
    node.fresh_diagnostics()
    assert node.diagnostics["tare_age_sec"] != "none"
    assert 0.0 <= float(node.diagnostics["tare_age_sec"]) < 20.0
    cleared = node.tare(clear=True)
    assert cleared.success
    node.fresh_diagnostics()
    assert node.diagnostics["tare_age_sec"] == "none"
    assert node.process.alive()


def test_parameters_change_at_run_time_and_invalid_values_are_rejected(node):
    """window_sec, update_rate_hz, method and solver_options apply between solves; invalid values
    and read-only parameters are refused with the reason, and nothing of the refused call
    applies."""
    results = node.set(window_sec=4.0, update_rate_hz=20.0, method="manifold")
    assert all(r.successful for r in results), [r.reason for r in results]
    node.feeder.publish(6.0)
    node.settle()
    assert node.diagnostics["window_sec"] == "4" and node.diagnostics["update_rate_hz"] == "20"
    window = node.counter("window_samples")
    assert 0.95 * 4.0 * node.feeder.rate <= window <= 4.0 * node.feeder.rate + 1
    assert node.diagnostics_rate(2.0) > 8.0  # 20 Hz asked (5 before), on a shared machine
    response = identify(node.peer, node.client)
    assert response.success and response.estimate.method == "manifold", response.message
    assert response.estimate.num_samples == window

    refused = {
        "window_sec": (-1.0, "window_sec must be"),
        "update_rate_hz": (0.0, "update_rate_hz must be"),
        "method": ("magic", "unknown method"),
        "solver_options": ("{nope: 1}", "unexpected keyword argument 'nope'"),
    }
    for name, (value, reason) in refused.items():
        [result] = node.set(**{name: value})
        assert not result.successful and reason in result.reason, (name, result.reason)
    [huge] = node.set(window_sec=1e7)
    assert not huge.successful and "GiB" in huge.reason
    [fast] = node.set(update_rate_hz=1e6)
    assert not fast.successful and "<= 100" in fast.reason
    [options] = node.set(solver_options="{tol: 1e-8}")  # manifold takes tol (YAML 1.1: a string)
    assert options.successful, options.reason
    [ols] = node.set(method="ols")  # with options ols does not take
    assert not ols.successful and "do not apply to method 'ols'" in ols.reason
    [both] = node.set(atomically=True, method="ols", solver_options="")
    assert both.successful, both.reason
    assert all(r.successful for r in node.set(atomically=True, method="manifold"))
    [syntax] = node.set(solver_options="{tol: [1")
    assert not syntax.successful and "YAML" in syntax.reason
    [read_only] = node.set(sensor_frame="panda_link7")
    assert not read_only.successful
    [result] = node.set(atomically=True, window_sec=6.0, method="magic")
    assert not result.successful and "unknown method" in result.reason  # and nothing applied
    node.fresh_diagnostics()
    assert node.diagnostics["window_sec"] == "4" and node.diagnostics["method"] == "manifold"
    assert "rejected parameter change" in node.process.output()

    results = node.set(window_sec=10.0, update_rate_hz=UPDATE_RATE, method="lmi")
    assert all(r.successful for r in results)
    assert node.diagnostics_rate(2.0) < 2 * UPDATE_RATE
    node.feeder.publish(6.0)
    node.settle()
    assert node.counter("window_samples") > 0.95 * 10.0 * node.feeder.rate
    node.check_estimate_kept()
    node.check_memory()


def test_a_failing_solver_keeps_the_last_estimate_and_is_reported(node):
    """The lmi method on a solver that is not installed (cvxpy back end, MOSEK): every solve
    fails. The node stays up, publishes nothing new, reports the failures as errors on
    /diagnostics and answers identify with the last estimate; it recovers when the solver is
    set back."""
    node.settle()
    last = node.check_estimate_kept()
    mark = node.log_mark()
    [result] = node.set(solver_options="{backend: cvxpy, solver: MOSEK}")
    assert result.successful, result.reason
    node.fresh_diagnostics()
    node.fresh_diagnostics()
    published = node.counter("published")
    node.feeder.publish(2.0)
    node.fresh_diagnostics()
    assert node.counter("published") == published
    assert node.counter("failed_solves.solver_failed") >= 3
    level, message = node.status
    assert level == 2 and "solver_failed" in message and "MOSEK" in message, node.status
    response = identify(node.peer, node.client)
    assert not response.success and "MOSEK" in response.message
    assert "last estimate" in response.message
    assert np.allclose(np.array(response.estimate.theta), last, rtol=1e-6, atol=1e-9)
    assert node.warnings_since(mark, "solver_failed")
    assert node.process.alive()

    [result] = node.set(solver_options="")
    assert result.successful
    node.feeder.publish(1.0)
    node.fresh_diagnostics()
    assert node.counter("published") > published and node.status[0] == 0
    theta = node.check_estimate_kept()
    assert check_consistency(theta).fully_consistent


def test_a_reset_of_the_simulated_clock(node):
    """The simulator restarts: /clock and the stamps go back to 0. The node warns, starts its
    window afresh in the new time base, keeps updating (its rate is wall time, not simulated
    time) and keeps the last estimate; its diagnostics follow the simulated clock."""
    node.settle()
    mark = node.log_mark()
    processed = node.counter("processed.wrench")
    node.feeder.t0 = -node.feeder.k / node.feeder.rate  # the next stamp is 0 s
    node.feeder.publish(4.0)
    node.settle()
    assert node.process.alive(), node.process.output()[-3000:]
    assert "clock_jump_sec" in node.process.output()[mark:]
    assert node.counter("processed.wrench") - processed > 0.9 * 3.0 * node.feeder.rate
    assert node.diagnostics_stamp < 10.0  # simulated time, after the reset
    assert node.diagnostics_rate(1.0) > 0.5 * UPDATE_RATE
    node.check_estimate_kept()
    node.check_memory()
