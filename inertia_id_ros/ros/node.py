"""``inertia_id``: the online identification node, a thin ROS layer over a session.

The rules of the online loop live in :mod:`inertia_id_ros.online.session` (the same session
``inertia-id replay`` and the tests drive); the parameters in
:mod:`inertia_id_ros.modes.parameters`; what each mode adds in its
:class:`~inertia_id_ros.modes.Mode` (the registry :mod:`inertia_id_ros.modes`) and its ROS wiring
(:mod:`inertia_id_ros.ros.wiring`: the topics it takes and publishes, e.g. wrenches in and
``~/estimate`` out). This module asks the registry for the mode its ``mode`` parameter names,
declares the parameters, wires the mode's topics and services to the session, runs the periodic
update on a worker thread and publishes what it gives.

Every mode: ``~/identify`` (``Identify``), ``/diagnostics``; ``method``, ``solver_options``,
``window_sec`` and ``update_rate_hz`` may change at run time (validated in the on-set callback,
applied in the post-set callback; what a method needs of the session, the mode checks:
:meth:`~inertia_id_ros.modes.Mode.check_session_method`). The load-identification wizard
(``~/excite``, ``~/stop``, ``~/excitation``, commands on ``trajectory_topic``; the modes with an
excitation target, :meth:`~inertia_id_ros.modes.Mode.excitation`): :mod:`inertia_id_ros.ros.wizard`.
"""

from __future__ import annotations

import sys
import threading
import time
from typing import Any

import numpy as np
import rclpy
from diagnostic_msgs.msg import DiagnosticArray
from rcl_interfaces.msg import ParameterDescriptor, SetParametersResult
from rclpy.exceptions import InvalidParameterTypeException, ParameterUninitializedException
from rclpy.executors import SingleThreadedExecutor
from rclpy.node import Node
from rclpy.parameter import Parameter
from rclpy.signals import SignalHandlerOptions

from inertia_id_ros.errors import ConfigError, InputError, StartupError
from inertia_id_ros.modes import ParameterSpec
from inertia_id_ros.modes.base import import_object
from inertia_id_ros.modes.parameters import (
    MODE_PARAMETER,
    check_ellipsoid_method,
    mode_of,
    node_parameters,
    settings_from_parameters,
    validate_change,
)
from inertia_id_ros.msg import FTCalibration
from inertia_id_ros.online.session import Session, Update
from inertia_id_ros.ros.conversions import ft_calibration_to_msg
from inertia_id_ros.ros.diagnostics import diagnostics_msg
from inertia_id_ros.ros.markers import NODE_MARKERS_TOPIC
from inertia_id_ros.ros.memory import (
    MMAP_THRESHOLD_BYTES,
    fix_mmap_threshold,
    use_dynamic_reader_memory,
)
from inertia_id_ros.ros.qos import sensor_data
from inertia_id_ros.ros.shutdown import (
    create_node_or_exit,
    ends_quietly,
    spin_until,
    stop_on_signals,
)
from inertia_id_ros.ros.wiring.base import ModeWiring
from inertia_id_ros.ros.wizard import WizardWiring
from inertia_id_ros.srv import Identify
from inertia_id_ros.threads import limit_threads

MARKERS_PERIOD_SEC = 1.0
"""``~/markers`` are published at most this often (s; the estimate and ``/diagnostics`` at every
update), and only while something subscribes to them (rviz): rviz needs no more, and they cost
more than the estimate."""

DRAIN_PERIOD_SEC = 0.2
"""The worker hands the queued input messages to the session at least this often (s), and at
every update. A drain decodes and hands over a batch per input, at a cost per batch: at 0.05 s
a whole body's 6 inputs at 200 Hz cost the node 0.4 x its raw floor more (see the measurements).
The inboxes hold :data:`~inertia_id_ros.ros.wiring.base.INBOX_SEC` of messages."""

_ARRAY_TYPES = {
    "double_array": Parameter.Type.DOUBLE_ARRAY,
    "string_array": Parameter.Type.STRING_ARRAY,
}


class InertiaIdNode(Node):
    """The identification node; see the module docstring. Raises
    :class:`~inertia_id_ros.errors.StartupError` naming an invalid start-up parameter."""

    def __init__(self, **kwargs) -> None:
        self._stop = threading.Event()
        self._wake = threading.Event()
        """Set to end the worker's wait early: a stop, or a new update rate."""
        self._worker: threading.Thread | None = None
        super().__init__("inertia_id", **kwargs)
        self.mode = mode_of(self._declare(MODE_PARAMETER))
        """The node's :class:`~inertia_id_ros.modes.Mode` (parameter ``mode``)."""
        self.settings = settings_from_parameters(
            {p.name: self._declare(p) for p in node_parameters()}
        )
        self.session: Session = self.mode.build_session(self.settings)
        inputs_name = f"{self.get_name()}_inputs"
        self.inputs = Node(
            inputs_name,
            namespace=self.get_namespace(),
            context=self.context,
            cli_args=["--ros-args", "-r", f"__node:={inputs_name}"],
            start_parameter_services=False,
        )
        """The input subscriptions' own node: :func:`main` spins it on its own executor and
        thread, so that input messages cost as little as rclpy allows. Its own name remap wins
        over the process's ``-r __node:=...`` (``launch_ros`` passes one), which would give it
        the node's name (two nodes of one name: rosout warns, then drops the node's logs)."""
        self._last_warning: dict[str, float] = {}
        self._last_markers = -np.inf
        self._markers_topic = self.resolve_topic_name(NODE_MARKERS_TOPIC)
        try:
            io_class = import_object(self.mode.wiring)
        except ConfigError as error:
            raise StartupError(
                f"parameter 'mode': {self.mode.name} mode's ROS wiring: {error}"
            ) from error
        self._io: ModeWiring = io_class(
            self, self.session, self.settings, sensor_data(self.settings.qos_depth)
        )
        target = self.mode.excitation(self.session, self.settings)
        self._excitation = (
            None
            if target is None
            else WizardWiring(self, self._io, self.session, self.settings, target)
        )
        self._diagnostics = self.create_publisher(DiagnosticArray, "/diagnostics", 10)
        self._calibrations = (
            None
            if self.session.estimator.ft_calibrator is None
            else self.create_publisher(FTCalibration, "~/ft_calibration", 10)
        )
        self._last_diagnostics = -float("inf")
        self.create_service(Identify, "~/identify", self._on_identify)
        self.add_on_set_parameters_callback(self._validate_parameters)
        self.add_post_set_parameters_callback(self._apply_parameters)
        self._worker = threading.Thread(
            target=self._run_worker, name="inertia_id_solver", daemon=True
        )
        self._worker.start()
        self.get_logger().info(
            f"{self._io.description}; method {self.settings.method}, window "
            f"{self.settings.window_sec} s, update {self.settings.update_rate_hz} Hz"
        )

    def _declare(self, p: ParameterSpec) -> Any:
        """Declare the parameter ``p`` (a :class:`~inertia_id_ros.modes.ParameterSpec`) once;
        its value (``None``: an array not set)."""
        if not self.has_parameter(p.name):
            default = _ARRAY_TYPES[p.array_type] if p.array_type else p.default
            try:
                self.declare_parameter(
                    p.name,
                    default,
                    ParameterDescriptor(description=p.description, read_only=not p.runtime),
                )
            except InvalidParameterTypeException as error:
                raise StartupError(f"parameter '{p.name}': {error}") from error
        try:
            return self.get_parameter(p.name).value
        except ParameterUninitializedException:
            return None

    # ---- run-time parameters (rclpy's split: validate without side effects, then apply) ----

    def _validate_parameters(self, params: list[Parameter]) -> SetParametersResult:
        new = {p.name: p.value for p in params}
        window = self.session.estimator.window
        try:
            validate_change(
                self.settings,
                new,
                (window.rows_per_sample, window.n_params or 0),
                self.session,
            )
        except ValueError as error:
            self.get_logger().warning(f"rejected parameter change {new}: {error}")
            return SetParametersResult(successful=False, reason=str(error))
        return SetParametersResult(successful=True)

    def _apply_parameters(self, params: list[Parameter]) -> None:
        new = {p.name: p.value for p in params}
        window = self.session.estimator.window
        previous = self.settings
        self.settings = validate_change(
            previous,
            new,
            (window.rows_per_sample, window.n_params or 0),
            self.session,
        )
        self.session.configure_solver(self.settings.method, self.settings.solver_options)
        holding = self._excitation is not None and self._excitation.holds_window
        if self.settings.window_sec != previous.window_sec and not holding:  # else at its end
            self.session.resize_window(self.settings.window_sec)
        self._wake.set()  # a new update rate applies from the worker's next wait
        self.get_logger().info(f"parameters changed: {new}")

    # ---- warnings --------------------------------------------------------------------------

    def warn(self, warning: tuple[str, str] | None) -> None:
        """Log a session's ``(kind, message)`` warning, at most one per
        ``warning_period_sec`` of each kind (``None``: nothing to say)."""
        if warning is None:
            return
        kind, message = warning
        now = time.monotonic()
        if now - self._last_warning.get(kind, -np.inf) >= self.settings.warning_period_sec:
            self._last_warning[kind] = now
            self.get_logger().warning(message)

    # ---- the periodic update ---------------------------------------------------------------

    def _update(self) -> None:
        """One periodic update: the session's, then publish what it gave; the last estimate
        stays published whatever fails."""
        self._io.drain()
        update = self.session.update(self.get_clock().now().nanoseconds * 1e-9)
        for warning in update.warnings:
            self.warn(warning)
        if update.status == "too_few_samples":  # normal while the window fills
            self.get_logger().info(
                f"waiting for data: {update.message}", throttle_duration_sec=10.0
            )
        now = time.monotonic()
        markers = (
            update.ok
            and now - self._last_markers >= MARKERS_PERIOD_SEC
            and self.count_subscribers(self._markers_topic) > 0
        )
        if markers:
            self._last_markers = now
        self._io.publish(update, markers)
        self._publish_calibrations(update)
        self._publish_diagnostics()

    def _publish_calibrations(self, update: Update) -> None:
        """``~/ft_calibration``: each F/T calibration the update refitted online."""
        if self._calibrations is not None:
            for refit in update.calibrations:
                self._calibrations.publish(ft_calibration_to_msg(refit))

    def _publish_diagnostics(self) -> None:
        """The session's diagnostics and the node's own values on ``/diagnostics``."""
        self._last_diagnostics = time.monotonic()
        diagnostics = self.session.diagnostics()
        for warning in diagnostics.warnings:
            self.warn(warning)
        self._diagnostics.publish(
            diagnostics_msg(
                diagnostics,
                self._io.hardware_id,
                self.get_clock().now().to_msg(),
                {
                    "mode": self.mode.name,
                    "update_rate_hz": f"{self.settings.update_rate_hz:g}",
                    "dropped.input_queue_full": str(self._io.queue_overflow),
                    "dropped.undecodable": str(self._io.undecodable),
                    "input_path": self.settings.input_path,
                    **{
                        f"publishers.{topic}": str(count)
                        for topic, count in self._io.matched_publishers().items()
                    },
                    **({} if self._excitation is None else self._excitation.diagnostic_values()),
                },
            )
        )

    def _run_worker(self) -> None:
        next_time = time.monotonic()
        while not self._stop.is_set():
            started, period = time.monotonic(), 1.0 / self.settings.update_rate_hz
            next_time += period
            try:
                self._update()
            except Exception as error:  # the worker must outlive a failing publication
                if not self.context.ok():  # shut down while publishing: end quietly
                    return
                self.warn(("update_error", f"update failed: {error!r}"))
            while True:  # wait for the next update; a new rate applies from this update on
                self._wake.clear()
                if self._stop.is_set():
                    return
                if 1.0 / self.settings.update_rate_hz != period:
                    period = 1.0 / self.settings.update_rate_hz
                    next_time = started + period
                remaining = next_time - time.monotonic()
                if remaining <= 0.0:
                    break
                self._wake.wait(min(remaining, DRAIN_PERIOD_SEC))
                try:
                    self._io.drain()
                    since = time.monotonic() - self._last_diagnostics
                    if since >= self.settings.diagnostics_period_sec:
                        self._publish_diagnostics()
                except Exception as error:  # a bug must not stop the worker
                    if not self.context.ok():
                        return
                    self.warn(("drain_error", f"could not take the inputs: {error!r}"))
            next_time = max(next_time, time.monotonic() - 1.0)

    def _on_identify(self, request: Identify.Request, response: Identify.Response):
        try:
            if request.method:
                self.mode.check_method(request.method)
                check_ellipsoid_method(request.method, self.settings.bounding_ellipsoid)
            self.mode.check_session_method(self.session, request.method)
        except ValueError as error:
            response.success = False
            response.message = str(error)
            return response
        self._io.drain()  # what arrived before the call belongs to it (and to a reset)
        if request.reset:
            self.session.reset()
            response.success = False
            response.message = "window reset; call again once new data have arrived"
            return response
        update = self.session.identify(
            request.method, float(request.duration), self.get_clock().now().nanoseconds * 1e-9
        )
        for warning in update.warnings:
            self.warn(warning)
        self._io.publish_change(update)
        self._publish_calibrations(update)
        response.success = update.ok
        response.message = update.message if update.ok else f"{update.status}: {update.message}"
        if update.ok:
            self._io.respond(response, update)
        elif self.session.last is not None:
            response.message += "; the last estimate is attached"
            self._io.respond(response, self.session.last)
        return response

    def destroy_node(self) -> None:
        """Stop the solver worker (waiting up to 5 s), then destroy the input node and this one."""
        self._stop.set()
        self._wake.set()
        if self._worker is not None:
            self._worker.join(timeout=5.0)
        if hasattr(self, "inputs"):
            self.inputs.destroy_node()
        super().destroy_node()


def _input_executor():
    """Return the executor of the input subscriptions: rclpy's events executor if available.

    The events executor (C++; Jazzy and later) takes about half the single-threaded executor's
    CPU per message. (It serves no services in this rclpy, so the node's services stay on the
    single-threaded executor.)"""
    try:
        from rclpy.experimental import EventsExecutor
    except ImportError:  # rclpy before Jazzy
        return SingleThreadedExecutor()
    return EventsExecutor()


@ends_quietly
def main(args: list[str] | None = None) -> None:
    """Console script ``inertia-id-node``; exits 2 on an invalid start-up parameter, 1 when its
    node cannot be created (e.g. DDS-Security enforced and not available)."""
    try:
        limit_threads()
    except InputError as error:
        print(f"inertia_id: {error}", file=sys.stderr)
        sys.exit(2)
    middleware_memory = use_dynamic_reader_memory()
    # Two Python threads share the GIL: input callbacks and the solver. A short switch interval
    # (default 5 ms) keeps either from stalling the other for long, so solves stay within a few ms.
    sys.setswitchinterval(5e-4)
    stop = stop_on_signals()  # before anything of rclpy: a Ctrl-C while starting ends it then
    rclpy.init(args=args, signal_handler_options=SignalHandlerOptions.NO)
    node = create_node_or_exit(InertiaIdNode, "inertia_id", StartupError)
    malloc = (
        f"glibc's mmap threshold fixed at {MMAP_THRESHOLD_BYTES // 1024} kB"
        if node.mode.fixed_mmap_threshold and fix_mmap_threshold()
        else "the allocator's own mmap threshold"
    )
    node.get_logger().info(f"memory: {middleware_memory}; {malloc}")
    # Three threads: the input callbacks only queue messages (their own node and executor), the
    # worker takes them in batches and solves, this one serves the services and parameters.
    inputs = _input_executor()
    inputs.add_node(node.inputs)
    spinning_inputs = threading.Thread(
        target=spin_until, args=(inputs, stop), name="inertia_id_inputs", daemon=True
    )
    spinning_inputs.start()
    executor = SingleThreadedExecutor()
    executor.add_node(node)
    try:
        spin_until(executor, stop)
    finally:
        stop.set()
        spinning_inputs.join(timeout=2.0)
        inputs.shutdown(timeout_sec=1.0)
        executor.shutdown(timeout_sec=1.0)
        node.destroy_node()
        rclpy.try_shutdown()


if __name__ == "__main__":
    main()
