"""``inertia_id``: the online payload-identification node.

Subscribes ``sensor_msgs/JointState`` and ``geometry_msgs/WrenchStamped`` (sensor-data QoS), feeds
a :class:`~inertia_id_ros.estimator.PayloadEstimator` and, in a worker thread, periodically solves
the fully consistent problem on the sliding window. Publishes ``~/estimate``
(``InertialParameters``, latched) and serves ``~/identify`` (``Identify``). Only estimates that
pass the full-consistency check (pseudo-inertia J >= 0, mass > 0) are ever published.
"""

from __future__ import annotations

import sys
import threading
import time
from dataclasses import dataclass

import numpy as np
import rclpy
from diagnostic_msgs.msg import DiagnosticArray, DiagnosticStatus, KeyValue
from geometry_msgs.msg import WrenchStamped
from rcl_interfaces.msg import ParameterDescriptor, SetParametersResult
from rclpy.executors import ExternalShutdownException, SingleThreadedExecutor
from rclpy.node import Node
from rclpy.parameter import Parameter
from rclpy.qos import DurabilityPolicy, HistoryPolicy, QoSProfile, ReliabilityPolicy
from sensor_msgs.msg import JointState

from inertia_id_ros.estimator import (EstimateUnavailable, EstimatorConfig, PayloadEstimator,
                                      SampleRejected)
from inertia_id_ros.inertia import check_consistency
from inertia_id_ros.kinematics import SensorKinematics
from inertia_id_ros.robots import FrameNotFound, load_model
from inertia_id_ros.ros.conversions import estimate_to_msg, stamp_to_seconds, wrench_to_array
from inertia_id_ros.solvers import METHODS
from inertia_id_ros.msg import InertialParameters
from inertia_id_ros.srv import Identify


class StartupError(RuntimeError):
    """A start-up parameter is invalid; the message names it."""


@dataclass(frozen=True)
class _Param:
    name: str
    default: object
    description: str


PARAMETERS: tuple[_Param, ...] = (
    _Param("urdf_path", "", "Path of the robot's URDF (or give robot_description)."),
    _Param("robot_description", "", "The robot's URDF as a string (used when urdf_path is empty)."),
    _Param("sensor_frame", "", "URDF frame of the F/T sensor; wrenches must carry this frame_id."),
    _Param("body_name", "payload", "Name of the identified body in the published estimate."),
    _Param("joint_states_topic", "/joint_states", "sensor_msgs/JointState input topic."),
    _Param("wrench_topic", "/ft_sensor/wrench", "geometry_msgs/WrenchStamped input topic."),
    _Param("window_sec", 10.0, "Length of the sliding window of samples (s), > 0."),
    _Param("update_rate_hz", 2.0, "Rate of the periodic consistent solve and publication (Hz), > 0."),
    _Param("method", "lmi", "Identification method: " + ", ".join(sorted(METHODS)) + "."),
    _Param("estimate_offset", True, "Estimate the 6-D F/T offset jointly with the inertia."),
    _Param("flip_wrench_sign", False,
           "Set for sensors reporting the wrench the body exerts on the sensor (the opposite of "
           "the convention: the wrench the sensor exerts on the body beyond it)."),
    _Param("max_input_rate_hz", 1000.0,
           "Highest expected rate of each input (Hz); sizes the window's buffers "
           "(window_sec x this rate samples)."),
    _Param("qos_depth", 2000,
           "Depth of the best-effort (sensor-data) input queues; deep enough to ride out solves "
           "at 1 kHz."),
    _Param("warning_period_sec", 5.0, "Minimum time between two warnings of the same kind (s)."),
)


PROCESSING_DROPS = {
    "gap": "the joint states have a gap longer than max_joint_gap around these wrench stamps",
    "no_joint_state": "no joint state reaches back to these wrench stamps",
    "sparse": "too few joint states around these wrench stamps for the derivative filter",
    "overflow": "too many wrenches waited for joint states (are joint states late or missing?)",
}
"""Wrench samples the estimator drops while processing (not on arrival), with the reason."""

RUNTIME_PARAMETERS = ("method",)
"""Parameters that may change while the node runs (applied from the next solve on)."""


class InertiaIdNode(Node):
    """The identification node; see the module docstring. Raises :class:`StartupError`."""

    def __init__(self, **kwargs) -> None:
        self._stop = threading.Event()
        self._worker: threading.Thread | None = None
        super().__init__("inertia_id", **kwargs)
        for p in PARAMETERS:
            self.declare_parameter(p.name, p.default, ParameterDescriptor(
                description=p.description, read_only=p.name not in RUNTIME_PARAMETERS))
        self._estimator = self._build_estimator()
        self._sensor_frame = self._param("sensor_frame")
        self._body_name = self._param("body_name")
        self._last_warning: dict[str, float] = {}
        self._last_estimate: InertialParameters | None = None
        self.published = 0
        self._drops_reported: dict[str, int] = {}
        self.timing: dict[str, float] = {}
        """Latest update's cost: process_us_per_sample, solve_ms, update_ms (process + solve)."""

        depth = int(self._param("qos_depth"))
        sensor_qos = QoSProfile(reliability=ReliabilityPolicy.BEST_EFFORT,
                                durability=DurabilityPolicy.VOLATILE,
                                history=HistoryPolicy.KEEP_LAST, depth=depth)
        latched = QoSProfile(depth=1, durability=DurabilityPolicy.TRANSIENT_LOCAL,
                             reliability=ReliabilityPolicy.RELIABLE)
        self._estimate_pub = self.create_publisher(InertialParameters, "~/estimate", latched)
        self._diagnostics_pub = self.create_publisher(DiagnosticArray, "/diagnostics", 10)
        self.create_subscription(JointState, self._param("joint_states_topic"),
                                 self._on_joint_state, sensor_qos)
        self.create_subscription(WrenchStamped, self._param("wrench_topic"),
                                 self._on_wrench, sensor_qos)
        self.create_service(Identify, "~/identify", self._on_identify)
        self.add_on_set_parameters_callback(self._on_set_parameters)

        self._worker = threading.Thread(target=self._run_worker, name="inertia_id_solver",
                                        daemon=True)
        self._worker.start()
        self.get_logger().info(
            f"identifying the body beyond '{self._sensor_frame}' from joints "
            f"{list(self._estimator.kinematics.joint_names)}; method {self._param('method')}, "
            f"window {self._param('window_sec')} s, update {self._param('update_rate_hz')} Hz")

    # -- set-up ---------------------------------------------------------------------------------
    def _param(self, name: str):
        return self.get_parameter(name).value

    def _build_estimator(self) -> PayloadEstimator:
        urdf_path, urdf_xml = self._param("urdf_path"), self._param("robot_description")
        if not urdf_path and not urdf_xml:
            raise StartupError("parameter 'urdf_path' (or 'robot_description') is required")
        try:
            model = load_model(urdf_path=urdf_path or None, urdf_xml=None if urdf_path else urdf_xml)
        except Exception as error:  # pinocchio raises ValueError/RuntimeError on bad URDFs
            name = "urdf_path" if urdf_path else "robot_description"
            raise StartupError(f"parameter '{name}': cannot load the URDF: {error}") from error
        sensor_frame = self._param("sensor_frame")
        if not sensor_frame:
            raise StartupError("parameter 'sensor_frame' is required")
        try:
            kinematics = SensorKinematics(model, sensor_frame)
        except FrameNotFound as error:
            raise StartupError(f"parameter 'sensor_frame': {error}") from error
        for name in ("window_sec", "update_rate_hz", "warning_period_sec", "max_input_rate_hz"):
            if not float(self._param(name)) > 0.0:
                raise StartupError(f"parameter '{name}' must be > 0, got {self._param(name)!r}")
        if int(self._param("qos_depth")) < 1:
            raise StartupError(f"parameter 'qos_depth' must be >= 1, got {self._param('qos_depth')}")
        if self._param("method") not in METHODS:
            raise StartupError(f"parameter 'method': unknown method {self._param('method')!r}; "
                               f"choose one of {sorted(METHODS)}")
        samples = int(1.1 * float(self._param("window_sec")) * float(self._param("max_input_rate_hz")))
        config = EstimatorConfig(window_sec=float(self._param("window_sec")),
                                 window_capacity=max(samples, 1000),
                                 joint_buffer_capacity=max(samples // 10, 10000),
                                 method=self._param("method"),
                                 estimate_offset=bool(self._param("estimate_offset")),
                                 wrench_sign=-1.0 if self._param("flip_wrench_sign") else 1.0)
        return PayloadEstimator(kinematics, config)

    def _on_set_parameters(self, params: list[Parameter]) -> SetParametersResult:
        for p in params:
            if p.name == "method" and p.value not in METHODS:
                return SetParametersResult(successful=False,
                                           reason=f"unknown method {p.value!r}; choose one of "
                                                  f"{sorted(METHODS)}")
        for p in params:
            if p.name == "method":
                self._estimator.config.method = p.value
        return SetParametersResult(successful=True)

    # -- inputs (light: validate and buffer; the worker does the rest) ----------------------------
    def _warn(self, kind: str, message: str) -> None:
        """Log a warning, at most one per ``warning_period_sec`` of each ``kind``."""
        now = time.monotonic()
        if now - self._last_warning.get(kind, -np.inf) >= float(self._param("warning_period_sec")):
            self._last_warning[kind] = now
            self.get_logger().warning(message)

    def _warn_dropped(self, rejected: SampleRejected, what: str) -> None:
        total = self._estimator.dropped[rejected.reason]
        self._warn(rejected.reason, f"dropped {what} ({rejected.reason}, {total} so far): "
                                    f"{rejected.message}")

    def _on_joint_state(self, msg: JointState) -> None:
        try:
            self._estimator.add_joint_state(stamp_to_seconds(msg.header.stamp), msg.name,
                                            msg.position, msg.velocity if len(msg.velocity) else None)
        except SampleRejected as rejected:
            self._warn_dropped(rejected, "joint state")

    def _on_wrench(self, msg: WrenchStamped) -> None:
        try:
            self._estimator.add_wrench(stamp_to_seconds(msg.header.stamp),
                                       wrench_to_array(msg.wrench), msg.header.frame_id)
        except SampleRejected as rejected:
            self._warn_dropped(rejected, "wrench")

    # -- solving --------------------------------------------------------------------------------
    def _solve(self, method: str | None = None, duration: float = 0.0) -> InertialParameters:
        """Process the buffered samples and solve; raises EstimateUnavailable. Records timings."""
        start = time.perf_counter()
        processed = self._estimator.process()
        if processed:
            self.timing["process_us_per_sample"] = 1e6 * (time.perf_counter() - start) / processed
        self._report_processing_drops()
        estimate = self._estimator.solve(method=method or None, duration=duration)
        report = check_consistency(estimate.theta)
        if not report.fully_consistent:  # the estimator should never return one; never publish it
            raise EstimateUnavailable("inconsistent", "the estimate failed the consistency check: "
                                      + "; ".join(report.problems))
        self.timing["solve_ms"] = 1e3 * estimate.solve_time
        self.timing["update_ms"] = 1e3 * (time.perf_counter() - start)
        return estimate_to_msg(estimate, self._sensor_frame, self._body_name)

    def _report_processing_drops(self) -> None:
        dropped = self._estimator.stats().dropped
        for reason, explanation in PROCESSING_DROPS.items():
            new = dropped.get(reason, 0) - self._drops_reported.get(reason, 0)
            if new > 0:
                self._drops_reported[reason] = dropped[reason]
                self._warn(reason, f"dropped {new} wrench samples ({reason}, {dropped[reason]} so "
                                   f"far): {explanation}")

    def _run_worker(self) -> None:
        next_time = time.monotonic()
        while not self._stop.is_set():
            next_time += 1.0 / float(self._param("update_rate_hz"))
            try:
                msg = self._solve()
            except EstimateUnavailable as why:
                if why.reason == "too_few_samples":  # normal while the window fills
                    self.get_logger().info(f"waiting for data: {why.message}",
                                           throttle_duration_sec=10.0)
                else:
                    self._warn(why.reason, f"no estimate ({why.reason}): {why.message}")
            except Exception as error:  # a solver failure keeps the last estimate
                self._warn("solver_error", f"solve failed, keeping the last estimate: {error!r}")
            else:
                self._last_estimate = msg
                self._estimate_pub.publish(msg)
                self.published += 1
            self._publish_diagnostics()
            self._stop.wait(max(0.0, next_time - time.monotonic()))
            next_time = max(next_time, time.monotonic() - 1.0)

    def _publish_diagnostics(self) -> None:
        stats = self._estimator.stats()
        status = DiagnosticStatus(name="inertia_id: inputs", hardware_id=self._sensor_frame)
        status.level = DiagnosticStatus.OK if self._last_estimate else DiagnosticStatus.WARN
        status.message = "estimating" if self._last_estimate else "waiting for an estimate"
        values = {"window_samples": stats.window_samples,
                  "pending_wrenches": stats.pending_wrenches, "published": self.published}
        values.update({k: f"{v:.4g}" for k, v in self.timing.items()})
        for group in ("received", "processed", "dropped"):
            values.update({f"{group}.{k}": v for k, v in getattr(stats, group).items()})
        status.values = [KeyValue(key=k, value=str(v)) for k, v in sorted(values.items())]
        msg = DiagnosticArray(status=[status])
        msg.header.stamp = self.get_clock().now().to_msg()
        self._diagnostics_pub.publish(msg)

    def _on_identify(self, request: Identify.Request, response: Identify.Response):
        if request.method and request.method not in METHODS:
            response.success = False
            response.message = f"unknown method {request.method!r}; choose one of {sorted(METHODS)}"
            return response
        if request.reset:
            self._estimator.reset()
            response.success = False
            response.message = "window reset; call again once new data have arrived"
            return response
        try:
            msg = self._solve(request.method, max(0.0, float(request.duration)))
        except EstimateUnavailable as why:
            response.success, response.message = False, f"{why.reason}: {why.message}"
            if self._last_estimate is not None:
                response.estimate = self._last_estimate
        except Exception as error:
            response.success, response.message = False, f"solve failed: {error!r}"
        else:
            response.success = True
            response.message = (f"{msg.method}: m = {msg.inertia.m:.4f} kg from {msg.num_samples} "
                                f"samples, residual RMS {msg.residual_rms:.4g}")
            response.estimate = msg
        return response

    def destroy_node(self) -> None:
        self._stop.set()
        if self._worker is not None:
            self._worker.join(timeout=5.0)
        super().destroy_node()


def main(args: list[str] | None = None) -> None:
    """Console script ``inertia-id-node``; exits 2 on an invalid start-up parameter."""
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
    # Callbacks only validate and buffer (the solver has its own worker thread), so one thread
    # serves 2 x 1 kHz of input; the service's solve briefly delays them (deep queues absorb it).
    executor = SingleThreadedExecutor()
    executor.add_node(node)
    try:
        executor.spin()
    except (KeyboardInterrupt, ExternalShutdownException):
        pass
    finally:
        node.destroy_node()
        rclpy.try_shutdown()


if __name__ == "__main__":
    main()
