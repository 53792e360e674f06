"""The node's two input paths (``input_path`` raw, the default, and typed) hand the session the
same samples, bit for bit: the same joint states and wrenches of the simulated Panda, with faults
(a NaN wrench, a repeated stamp, a wrench in another frame, joint states whose arrays do not
match their names), given to each node's subscription callbacks as rclpy gives them (serialized
bytes on the raw path, messages on the typed one), then drained and processed. Equal windows
make equal estimates: the solve is deterministic in them."""

from __future__ import annotations

import numpy as np
import pytest

from inertia_id_ros.core.robots import example_robot_urdf
from inertia_id_ros.sim.payload import PayloadSimulator

SENSOR = "panda_link8"
SAMPLES = 1500
"""1.5 s at 1 kHz: more than one batch and one block of the window's products."""


@pytest.fixture
def nodes(ros_env):
    """A payload node per input path, in this process, in a context of its own (its worker
    updates rarely)."""
    rclpy = pytest.importorskip("rclpy")
    from rclpy.parameter import Parameter

    from inertia_id_ros.ros.node import InertiaIdNode

    context = rclpy.Context()
    rclpy.init(context=context)
    made = {}
    try:
        for path in ("raw", "typed"):
            made[path] = InertiaIdNode(
                context=context,
                namespace=f"/{path}",
                parameter_overrides=[
                    Parameter("urdf_path", value=str(example_robot_urdf("panda"))),
                    Parameter("sensor_frame", value=SENSOR),
                    Parameter("input_path", value=path),
                    Parameter("update_rate_hz", value=0.1),
                ],
            )
        yield made
    finally:
        for node in made.values():
            node.destroy_node()
        context.try_shutdown()


def _messages(sim: PayloadSimulator) -> tuple[list, list]:
    """The joint states and wrenches of :data:`SAMPLES` stamps at 1 kHz, with faults."""
    from inertia_id_ros.ros.conversions import joint_state, wrench_stamped

    t = 100.0 + np.arange(SAMPLES) / 1000.0
    q, dq, wrench = sim.measure(t, np.random.default_rng(2))
    wrench[300, 2] = np.nan
    names = list(sim.kinematics.joint_names)
    joints = [joint_state(t[i], names, q[i], dq[i]) for i in range(SAMPLES)]
    joints[700].position = joints[700].position[:-1].tolist()  # arrays not matching the names
    wrenches = [wrench_stamped(t[i], SENSOR, wrench[i]) for i in range(SAMPLES)]
    wrenches[900].header.stamp = wrenches[899].header.stamp  # a repeated stamp
    wrenches[1100].header.frame_id = "panda_hand"
    return joints, wrenches


def _feed(node, path: str, joints: list, wrenches: list) -> None:
    """The messages to ``node``'s subscription callbacks as rclpy gives them on ``path``,
    drained and processed in batches, as the worker does."""
    from rclpy.serialization import serialize_message

    callbacks = {s.topic_name: s.callback for s in node._io._subscriptions}
    topics = (node.settings.joint_states_topic, node.settings.mode_settings.wrench_topic)
    for start in range(0, SAMPLES, 250):
        for topic, messages in zip(topics, (joints, wrenches)):
            for msg in messages[start : start + 250]:
                callbacks[topic](serialize_message(msg) if path == "raw" else msg)
        node._io.drain()
        node.session.estimator.process()


@pytest.mark.rate_insensitive  # nothing goes over DDS: outside the DDS groups
def test_raw_and_typed_inputs_give_the_session_the_same_samples(nodes):
    joints, wrenches = _messages(PayloadSimulator.panda(seed=3))
    for path, node in nodes.items():
        _feed(node, path, joints, wrenches)
    raw, typed = (nodes[path].session.estimator for path in ("raw", "typed"))
    assert raw.received == typed.received and raw.dropped == typed.dropped
    assert {"non_finite", "duplicate_stamp", "wrong_frame"} <= set(raw.dropped)
    assert len(raw.window) > 0.9 * SAMPLES  # all but the faults and the newest, pending
    for x, y in zip(raw.window.samples(), typed.window.samples()):
        assert np.array_equal(x, y)
    for x, y in zip(raw.window.normal_equations(), typed.window.normal_equations()):
        assert np.array_equal(x, y)


@pytest.mark.rate_insensitive
def test_an_idle_wizard_does_not_tick(nodes):
    """The wizard's checks tick only while a command moves the robot: an idle node wakes for
    nothing but its inputs and updates (the ticks took about a sixth of the payload node's CPU
    at 2 x 1 kHz)."""
    wizard = nodes["raw"]._excitation
    assert wizard is not None and wizard._ticks.is_canceled()
    wizard._ticks.reset()  # as a command sent does
    assert not wizard._ticks.is_canceled()
    wizard._tick()  # nothing moves: the tick cancels the ticks
    assert wizard._ticks.is_canceled()


@pytest.mark.rate_insensitive
def test_markers_are_built_only_while_something_subscribes(nodes):
    """``~/markers`` cost more than the estimate (39 links' in whole-body mode): an update
    builds them only while something (rviz) subscribes."""
    from visualization_msgs.msg import MarkerArray

    from inertia_id_ros.ros.qos import LATCHED

    node = nodes["raw"]
    _feed(node, "raw", *_messages(PayloadSimulator.panda(seed=3)))
    published = []
    publish = node._io.publish
    node._io.publish = lambda update, markers: published.append((update.ok, markers)) or publish(
        update, markers
    )
    node._update()
    listener = node.create_subscription(MarkerArray, "/raw/inertia_id/markers", list, LATCHED)
    node._update()
    node._last_markers = -np.inf  # the markers' period is over
    node._update()
    node.destroy_subscription(listener)
    node._last_markers = -np.inf
    node._update()
    assert published == [(True, False), (True, True), (True, True), (True, False)]
