"""``inertia_id``: the online identification node, a thin ROS layer over a session.

The rules of the online loop live in :mod:`inertia_id_ros.online.session` (the same session
``inertia-id replay`` and the tests drive); the parameters in :mod:`inertia_id_ros.ros.parameters`.
This module declares the parameters, wires the topics and services to the session, runs the
periodic update on a worker thread and publishes what it gives:

- ``payload`` (default): ``sensor_msgs/JointState`` and ``geometry_msgs/WrenchStamped`` in
  (sensor-data QoS); ``~/estimate`` (``InertialParameters``, latched) and ``~/markers`` out;
  ``~/payload_change`` (``PayloadChange``) on a grasp or release; ``~/tare`` (``Tare``).
- ``links``: ``sensor_msgs/JointState`` with efforts in; ``~/links``
  (``InertialParametersArray``, latched) and ``~/markers`` out.
- ``whole_body``: ``sensor_msgs/JointState``, ``sensor_msgs/Imu`` (none for a fixed or
  suspended base without ``imu_topic``) and one ``geometry_msgs/WrenchStamped`` topic per F/T
  sensor in; ``~/links`` (every URDF link with its
  identifiability, the sensor offsets) and ``~/markers`` out.

Every mode: ``~/identify`` (``Identify``), ``/diagnostics``; ``method``, ``solver_options``,
``window_sec`` and ``update_rate_hz`` may change at run time (validated in the on-set callback,
applied in the post-set callback). The load-identification wizard (``~/excite``, ``~/stop``,
``~/excitation``, commands on ``trajectory_topic``; payload and links modes):
:mod:`inertia_id_ros.ros.excitation`.
"""

from __future__ import annotations

import sys
import threading
import time
from collections import deque
from typing import Any

import numpy as np
import rclpy
from diagnostic_msgs.msg import DiagnosticArray
from geometry_msgs.msg import WrenchStamped
from rcl_interfaces.msg import ParameterDescriptor, SetParametersResult
from rclpy.exceptions import InvalidParameterTypeException, ParameterUninitializedException
from rclpy.executors import SingleThreadedExecutor
from rclpy.node import Node
from rclpy.parameter import Parameter
from rclpy.qos import DurabilityPolicy, HistoryPolicy, QoSProfile, ReliabilityPolicy
from sensor_msgs.msg import Imu, JointState
from visualization_msgs.msg import MarkerArray

from inertia_id_ros.core.inertia import check_consistency
from inertia_id_ros.errors import EstimateUnavailable, InputError, StartupError
from inertia_id_ros.msg import InertialParameters, InertialParametersArray, PayloadChange
from inertia_id_ros.online.estimator import window_capacities
from inertia_id_ros.online.payload_estimator import check_prior_available
from inertia_id_ros.online.session import (
    LinkSession,
    PayloadSession,
    Session,
    Update,
    WholeBodySession,
)
from inertia_id_ros.ros.conversions import (
    array_to_wrench,
    estimate_to_msg,
    imu_arrays,
    joint_state_arrays,
    joint_state_groups,
    link_estimate_to_msg,
    payload_theta_from_msg,
    seconds_to_stamp,
    stamp_to_seconds,
    whole_body_estimate_to_msg,
    wrench_batch,
    wrench_to_array,
)
from inertia_id_ros.ros.diagnostics import diagnostics_msg
from inertia_id_ros.ros.excitation import ExcitationIO
from inertia_id_ros.ros.markers import estimate_markers
from inertia_id_ros.ros.memory import fix_mmap_threshold, use_dynamic_reader_memory
from inertia_id_ros.ros.parameters import (
    PARAMETERS,
    NodeSettings,
    build_session,
    check_mode_method,
    settings_from_parameters,
    validate_change,
)
from inertia_id_ros.ros.security import RCLError
from inertia_id_ros.ros.shutdown import ends_quietly, until_shutdown
from inertia_id_ros.srv import Identify, Tare
from inertia_id_ros.threads import limit_threads

DEFAULT_TARE_SEC = 1.0
"""Seconds of wrenches ``~/tare`` averages when the request gives 0."""

MARKERS_PERIOD_SEC = 1.0
"""``~/markers`` are published at most this often (s; the estimate and ``/diagnostics`` at every
update): rviz needs no more, and they cost more than the estimate."""

DRAIN_PERIOD_SEC = 0.05
"""The worker hands the queued input messages to the session at least this often (s)."""

INBOX_SEC = 2.0
"""Each input queue holds up to this many seconds of messages at ``max_input_rate_hz`` (the
oldest are dropped beyond, and counted)."""

_ARRAY_TYPES = {"double_array": Parameter.Type.DOUBLE_ARRAY,
                "string_array": Parameter.Type.STRING_ARRAY}


def _latched() -> QoSProfile:
    """The current estimate: late subscribers get the latest one."""
    return QoSProfile(depth=1, durability=DurabilityPolicy.TRANSIENT_LOCAL,
                      reliability=ReliabilityPolicy.RELIABLE)


class _Inbox:
    """The messages of one input: the subscription callback only queues them (cheap: the
    callbacks keep up with the executor), the worker takes them in batches."""

    def __init__(self, limit: int) -> None:
        self._queue: deque = deque(maxlen=limit)
        self.overflow = 0
        """Messages dropped because the queue was full."""
        self.newest: Any = None
        """The newest message put (taken or not)."""

    def put(self, msg: Any) -> None:
        if len(self._queue) == self._queue.maxlen:
            self.overflow += 1
        self._queue.append(msg)
        self.newest = msg

    def take(self) -> list:
        """Every message queued so far, oldest first."""
        return [self._queue.popleft() for _ in range(len(self._queue))]


class _JointStateInput:
    """``sensor_msgs/JointState`` into a session, in batches (both modes)."""

    def __init__(self, node: InertiaIdNode, session: Session, settings: NodeSettings,
                 sensor_qos: QoSProfile) -> None:
        self._node, self._session = node, session
        self._inbox_limit = max(int(INBOX_SEC * settings.max_input_rate_hz), settings.qos_depth)
        self._joint_states = _Inbox(self._inbox_limit)
        self._drain_lock = threading.Lock()
        node.inputs.create_subscription(JointState, settings.joint_states_topic,
                                        self._joint_states.put, sensor_qos)

    def drain(self) -> None:
        """Hand every queued message to the session (any thread; one drain at a time, so the
        samples keep their order); warn about those it drops."""
        with self._drain_lock:
            session, warn = self._session, self._node.warn
            for group in joint_state_groups(self._joint_states.take()):
                arrays = joint_state_arrays(group)
                if arrays is None:  # arrays that do not match the names: rejected one by one
                    for m in group:
                        warn(session.add_joint_state(stamp_to_seconds(m.header.stamp), m.name,
                                                     m.position, m.velocity, m.effort))
                else:
                    for warning in session.add_joint_states(*arrays):
                        warn(warning)
            self._drain_more()

    def _drain_more(self) -> None:
        """The mode's other inputs (lock held)."""

    @property
    def queue_overflow(self) -> int:
        """Messages dropped because an input queue was full."""
        return self._joint_states.overflow

    @property
    def latest_joint_state(self) -> JointState | None:
        """The newest joint state received."""
        return self._joint_states.newest


class _PayloadIO(_JointStateInput):
    """The payload mode's topics and services around a :class:`PayloadSession`."""

    def __init__(self, node: InertiaIdNode, session: PayloadSession, settings: NodeSettings,
                 sensor_qos: QoSProfile) -> None:
        super().__init__(node, session, settings, sensor_qos)
        self._settings = settings
        self.hardware_id = settings.sensor_frame
        self._estimates = node.create_publisher(InertialParameters, "~/estimate", _latched())
        self._markers = node.create_publisher(MarkerArray, "~/markers", _latched())
        self._changes = node.create_publisher(PayloadChange, "~/payload_change", 10)
        self._wrenches = _Inbox(self._inbox_limit)
        node.inputs.create_subscription(WrenchStamped, settings.wrench_topic,
                                        self._wrenches.put, sensor_qos)
        node.create_service(Tare, "~/tare", self._on_tare)
        kinematics = session.estimator.kinematics
        limits = ("" if settings.wrench_limits is None
                  else f", wrench limits {list(settings.wrench_limits)}")
        self.description = (f"identifying the body beyond '{settings.sensor_frame}' from joints "
                            f"{list(kinematics.joint_names)}{limits}")

    def _drain_more(self) -> None:
        msgs = self._wrenches.take()
        if msgs:
            for warning in self._session.add_wrenches(*wrench_batch(msgs)):
                self._node.warn(warning)

    @property
    def queue_overflow(self) -> int:
        return self._joint_states.overflow + self._wrenches.overflow

    def to_msg(self, update: Update) -> InertialParameters:
        return estimate_to_msg(update.estimate, self._settings.sensor_frame,
                               self._settings.body_name)

    def publish_change(self, update: Update) -> None:
        """``~/payload_change`` when the update detected one (periodic or ``identify``)."""
        if update.change is not None:
            event = update.change
            msg = PayloadChange(onset_time=event.t_onset, num_samples=event.n_samples,
                                residual_mean=event.residual_mean, message=str(event))
            msg.header.stamp = seconds_to_stamp(event.t_detected)
            msg.header.frame_id = self._settings.sensor_frame
            self._changes.publish(msg)

    def publish(self, update: Update, markers: bool = True) -> None:
        """The update's payload change and estimate (and its markers, when ``markers``)."""
        self.publish_change(update)
        if update.ok:
            msg = self.to_msg(update)
            self._estimates.publish(msg)
            if markers:
                self._markers.publish(estimate_markers(msg))

    def respond(self, response: Identify.Response, update: Update) -> None:
        response.estimate = self.to_msg(update)

    def _on_tare(self, request: Tare.Request, response: Tare.Response) -> Tare.Response:
        try:
            if request.clear:
                self._session.clear_tare()
                response.success, response.message = True, "tare cleared"
            else:
                self._tare(request, response)
        except Exception as error:  # never let a service call take the node down
            response.success, response.message = False, f"tare failed: {error!r}"
        self._node.get_logger().info(f"tare: {response.message}")
        return response

    def _tare(self, request: Tare.Request, response: Tare.Response) -> None:
        theta_known = payload_theta_from_msg(request.payload) if request.known_payload else None
        if theta_known is not None and not check_consistency(theta_known).fully_consistent:
            response.success = False
            response.message = ("the known payload's theta is not physically consistent: "
                                + "; ".join(check_consistency(theta_known).problems))
            return
        self.drain()
        try:
            tare = self._session.tare(float(request.duration) or DEFAULT_TARE_SEC, theta_known)
        except (EstimateUnavailable, ValueError) as error:
            response.success, response.message = False, f"no tare: {error}"
            return
        response.success = True
        response.offset = array_to_wrench(tare.offset)
        response.offset_std = tare.offset_std.tolist()
        response.noise_std = tare.noise_std.tolist()
        response.num_samples = tare.n_samples
        payload = "the known payload" if theta_known is not None else "no payload"
        response.message = (f"tared from {tare.n_samples} wrenches with {payload}: force offset "
                            f"{np.round(tare.offset[:3], 4).tolist()} N, torque offset "
                            f"{np.round(tare.offset[3:], 5).tolist()} N m"
                            + ("; the window restarted" if theta_known is None else ""))


class _LinksIO(_JointStateInput):
    """The links mode's topics around a :class:`LinkSession`."""

    def __init__(self, node: InertiaIdNode, session: LinkSession, settings: NodeSettings,
                 sensor_qos: QoSProfile) -> None:
        super().__init__(node, session, settings, sensor_qos)
        model = session.estimator.link_model
        self.hardware_id = ",".join(model.joint_names)
        self._links = node.create_publisher(InertialParametersArray, "~/links", _latched())
        self._markers = node.create_publisher(MarkerArray, "~/markers", _latched())
        self.description = (f"identifying the links {list(model.link_names)} and the drives "
                            f"of joints {list(model.joint_names)} from joint torques, "
                            f"prior weight {settings.prior_weight:g}")

    def publish_change(self, update: Update) -> None:
        """No payload, no payload change in links mode."""

    def publish(self, update: Update, markers: bool = True) -> None:
        """The update's links and drives (and their markers, when ``markers``)."""
        if not update.ok:
            return
        msg = self.to_msg(update)
        self._links.publish(msg)
        if not markers:
            return
        array = MarkerArray()
        for body in msg.bodies:  # one namespace per link: marker ids restart in each
            array.markers += estimate_markers(body, ns=f"inertia_id/{body.body_name}").markers
        self._markers.publish(array)

    def to_msg(self, update: Update) -> InertialParametersArray:
        return link_estimate_to_msg(update.estimate)

    def respond(self, response: Identify.Response, update: Update) -> None:
        response.links = self.to_msg(update)


class _WholeBodyIO(_LinksIO):
    """The whole-body mode's topics around a :class:`WholeBodySession`: joint states, the IMU
    and one wrench topic per F/T sensor in; the links (with identifiability) out."""

    def __init__(self, node: InertiaIdNode, session: WholeBodySession, settings: NodeSettings,
                 sensor_qos: QoSProfile) -> None:
        _JointStateInput.__init__(self, node, session, settings, sensor_qos)
        model = session.estimator.model
        self._imu = _Inbox(self._inbox_limit)
        if model.imu_frame is not None:  # none: a fixed or suspended base at rest
            node.inputs.create_subscription(Imu, settings.imu_topic, self._imu.put, sensor_qos)
        self._ft = {frame: _Inbox(self._inbox_limit) for frame in settings.ft_frames}
        for frame, topic in zip(settings.ft_frames, settings.ft_topics):
            node.inputs.create_subscription(WrenchStamped, topic, self._ft[frame].put, sensor_qos)
        self.hardware_id = ",".join(filter(None, (model.imu_frame, *settings.ft_frames)))
        self._links = node.create_publisher(InertialParametersArray, "~/links", _latched())
        self._markers = node.create_publisher(MarkerArray, "~/markers", _latched())
        sensors = ", ".join(f"{f} ({k}, {t})" for f, k, t in
                            zip(settings.ft_frames, settings.ft_types, settings.ft_topics))
        imu = ("no IMU (the base at rest, level)" if model.imu_frame is None
               else f"the IMU at '{model.imu_frame}' ({settings.imu_topic})")
        self.description = (f"identifying {len(model.bodies)} links of a {model.base} base from "
                            f"{len(model.joint_names)} joints, {imu}, F/T sensors {sensors}"
                            + (" and joint efforts" if settings.use_efforts else ""))

    def _drain_more(self) -> None:
        session, warn = self._session, self._node.warn
        for msg in self._imu.take():
            t, _, angular_velocity, linear_acceleration = imu_arrays(msg)
            warn(session.add_imu(t, angular_velocity, linear_acceleration, msg.header.frame_id))
        for frame, inbox in self._ft.items():
            for msg in inbox.take():
                warn(session.add_wrench(frame, stamp_to_seconds(msg.header.stamp),
                                        wrench_to_array(msg.wrench), msg.header.frame_id))

    @property
    def queue_overflow(self) -> int:
        return (self._joint_states.overflow + self._imu.overflow
                + sum(inbox.overflow for inbox in self._ft.values()))

    def to_msg(self, update: Update) -> InertialParametersArray:
        return whole_body_estimate_to_msg(update.estimate)


class InertiaIdNode(Node):
    """The identification node; see the module docstring. Raises
    :class:`~inertia_id_ros.errors.StartupError` naming an invalid start-up parameter."""

    def __init__(self, **kwargs) -> None:
        self._stop = threading.Event()
        self._wake = threading.Event()
        """Set to end the worker's wait early: a stop, or a new update rate."""
        self._worker: threading.Thread | None = None
        super().__init__("inertia_id", **kwargs)
        self.settings = settings_from_parameters(self._declare_parameters())
        self.session: Session = build_session(self.settings)
        self.inputs = Node(f"{self.get_name()}_inputs", namespace=self.get_namespace(),
                           context=self.context, start_parameter_services=False)
        """The input subscriptions' own node: :func:`main` spins it on its own executor and
        thread, so that input messages cost as little as rclpy allows."""
        self._last_warning: dict[str, float] = {}
        self._last_markers = -np.inf
        sensor_qos = QoSProfile(reliability=ReliabilityPolicy.BEST_EFFORT,
                                durability=DurabilityPolicy.VOLATILE,
                                history=HistoryPolicy.KEEP_LAST, depth=self.settings.qos_depth)
        io_class = {"payload": _PayloadIO, "links": _LinksIO,
                    "whole_body": _WholeBodyIO}[self.settings.mode]
        self._io = io_class(self, self.session, self.settings, sensor_qos)
        self._excitation = (None if self.settings.mode == "whole_body"  # no wizard for a
                            else ExcitationIO(self, self._io, self.session, self.settings))
        self._diagnostics = self.create_publisher(DiagnosticArray, "/diagnostics", 10)
        self.create_service(Identify, "~/identify", self._on_identify)
        self.add_on_set_parameters_callback(self._validate_parameters)
        self.add_post_set_parameters_callback(self._apply_parameters)
        self._worker = threading.Thread(target=self._run_worker, name="inertia_id_solver",
                                        daemon=True)
        self._worker.start()
        self.get_logger().info(
            f"{self._io.description}; method {self.settings.method}, window "
            f"{self.settings.window_sec} s, update {self.settings.update_rate_hz} Hz")

    def _declare_parameters(self) -> dict[str, Any]:
        """Declare every parameter of the table; their values (``None``: an array not set)."""
        values = {}
        for p in PARAMETERS:
            default = _ARRAY_TYPES[p.array_type] if p.array_type else p.default
            try:
                self.declare_parameter(p.name, default, ParameterDescriptor(
                    description=p.description, read_only=not p.runtime))
                values[p.name] = self.get_parameter(p.name).value
            except InvalidParameterTypeException as error:
                raise StartupError(f"parameter '{p.name}': {error}") from error
            except ParameterUninitializedException:
                values[p.name] = None
        return values

    # ---- run-time parameters (rclpy's split: validate without side effects, then apply) ----

    def _validate_parameters(self, params: list[Parameter]) -> SetParametersResult:
        new = {p.name: p.value for p in params}
        window = self.session.estimator.window
        try:
            validate_change(self.settings, new, (window.rows_per_sample, window.n_params or 0),
                            self.session.prior_available)
        except ValueError as error:
            self.get_logger().warning(f"rejected parameter change {new}: {error}")
            return SetParametersResult(successful=False, reason=str(error))
        return SetParametersResult(successful=True)

    def _apply_parameters(self, params: list[Parameter]) -> None:
        new = {p.name: p.value for p in params}
        window = self.session.estimator.window
        previous = self.settings
        self.settings = validate_change(previous, new,
                                        (window.rows_per_sample, window.n_params or 0),
                                        self.session.prior_available)
        self.session.configure_solver(self.settings.method, self.settings.solver_options)
        holding = self._excitation is not None and self._excitation.holds_window
        if self.settings.window_sec != previous.window_sec and not holding:  # else at its end
            capacity = window_capacities(self.settings.window_sec,
                                         self.settings.max_input_rate_hz)["window_capacity"]
            self.session.resize_window(self.settings.window_sec, capacity)
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
            self.get_logger().info(f"waiting for data: {update.message}",
                                   throttle_duration_sec=10.0)
        now = time.monotonic()
        markers = update.ok and now - self._last_markers >= MARKERS_PERIOD_SEC
        if markers:
            self._last_markers = now
        self._io.publish(update, markers)
        diagnostics = self.session.diagnostics()
        for warning in diagnostics.warnings:
            self.warn(warning)
        self._diagnostics.publish(diagnostics_msg(
            diagnostics, self._io.hardware_id, self.get_clock().now().to_msg(),
            {"update_rate_hz": f"{self.settings.update_rate_hz:g}",
             "dropped.input_queue_full": str(self._io.queue_overflow),
             **({} if self._excitation is None else self._excitation.diagnostic_values())}))

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
                except Exception as error:  # a bug must not stop the worker
                    self.warn(("drain_error", f"could not take the inputs: {error!r}"))
            next_time = max(next_time, time.monotonic() - 1.0)

    def _on_identify(self, request: Identify.Request, response: Identify.Response):
        try:
            if request.method:
                check_mode_method(self.settings.mode, request.method)
            check_prior_available(request.method, self.session.prior_available)
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
        update = self.session.identify(request.method, float(request.duration),
                                       self.get_clock().now().nanoseconds * 1e-9)
        for warning in update.warnings:
            self.warn(warning)
        self._io.publish_change(update)
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
    fix_mmap_threshold()
    middleware_memory = use_dynamic_reader_memory()
    # Two Python threads share the GIL: input callbacks and the solver. A short switch interval
    # (default 5 ms) keeps either from stalling the other for long, so solves stay within a few ms.
    sys.setswitchinterval(5e-4)
    rclpy.init(args=args)
    try:
        node = InertiaIdNode()
    except StartupError as error:
        print(f"inertia_id: {error}", file=sys.stderr)
        rclpy.try_shutdown()
        sys.exit(2)
    except RCLError as error:  # e.g. DDS-Security asked for and not available: never unsecured
        print(f"inertia_id: cannot create the node: {error}", file=sys.stderr)
        rclpy.try_shutdown()
        sys.exit(1)
    node.get_logger().info(f"memory: {middleware_memory}")
    # Three threads: the input callbacks only queue messages (their own node and executor), the
    # worker takes them in batches and solves, this one serves the services and parameters.
    inputs = _input_executor()
    inputs.add_node(node.inputs)
    threading.Thread(target=_spin_inputs, args=(inputs,), name="inertia_id_inputs",
                     daemon=True).start()
    executor = SingleThreadedExecutor()
    executor.add_node(node)
    try:
        until_shutdown(executor.spin)
    finally:
        inputs.shutdown(timeout_sec=1.0)
        executor.shutdown(timeout_sec=1.0)
        node.destroy_node()
        rclpy.try_shutdown()


def _spin_inputs(executor) -> None:
    """Spin the input node until shutdown (``spin_once`` with a timeout: this rclpy's events
    executor busy-waits in ``spin()``)."""
    def spin() -> None:
        while rclpy.ok():
            executor.spin_once(timeout_sec=0.1)

    until_shutdown(spin)



if __name__ == "__main__":
    main()
