"""``inertia_id``: the online identification node.

Two modes (parameter ``mode``), one worker: input callbacks only validate and buffer; a worker
thread periodically processes the buffered samples and solves the fully consistent problem on the
sliding window (``update_rate_hz``), publishes the result (latched) and reports on
``/diagnostics``; ``~/identify`` (``Identify``) solves on demand. Only fully physically
consistent results (pseudo-inertia J >= 0, mass > 0, for every body) are ever published; a failed
solve keeps the last estimate and is reported (``failed_solves.<reason>`` on ``/diagnostics``).
``method``, ``solver_options``, ``window_sec`` and ``update_rate_hz`` may change at run time
(``ros2 param set``); invalid values are rejected with the reason.

- ``payload`` (default): ``sensor_msgs/JointState`` and ``geometry_msgs/WrenchStamped`` in
  (sensor-data QoS), a :class:`~inertia_id_ros.online.payload_estimator.PayloadEstimator`, ``~/estimate``
  (``InertialParameters``) out; the service fills ``estimate``; ``~/tare`` (``Tare``) sets the F/T
  offset from the newest wrenches, ``~/payload_change`` (``PayloadChange``) reports a grasp or a
  release.
- ``links``: ``sensor_msgs/JointState`` with efforts in, a
  :class:`~inertia_id_ros.online.link_estimator.LinkEstimator` of the chain ``joints`` (actuators from
  ``chain_config``), ``~/links`` (``InertialParametersArray``: every link about its own frame and
  every joint's drive) out; the service fills ``links``.
"""

from __future__ import annotations

import math
import sys
import threading
import time
from collections import Counter
from dataclasses import dataclass
from typing import Any

import numpy as np
import rclpy
import yaml
from diagnostic_msgs.msg import DiagnosticArray, DiagnosticStatus, KeyValue
from geometry_msgs.msg import WrenchStamped
from rcl_interfaces.msg import ParameterDescriptor, SetParametersResult
from rclpy.exceptions import InvalidParameterTypeException, ParameterUninitializedException
from rclpy.executors import ExternalShutdownException, SingleThreadedExecutor
from rclpy.node import Node
from rclpy.parameter import Parameter
from rclpy.qos import DurabilityPolicy, HistoryPolicy, QoSProfile, ReliabilityPolicy
from sensor_msgs.msg import JointState
from visualization_msgs.msg import MarkerArray

from inertia_id_ros.errors import StartupError
from inertia_id_ros.chain.actuators import ActuatorConfig, ChainConfig
from inertia_id_ros.errors import ConfigError
from inertia_id_ros.online.change_detection import ChangeDetectorConfig, PayloadChangeDetector
from inertia_id_ros.online.payload_estimator import (
    EstimatorConfig,
    PayloadEstimator,
)
from inertia_id_ros.online.estimator import window_capacities
from inertia_id_ros.errors import EstimateUnavailable, SampleRejected
from inertia_id_ros.online.excitation import excitation_report
from inertia_id_ros.chain.friction import DRIVE_TERMS
from inertia_id_ros.core.inertia import check_consistency, theta_from_inertia
from inertia_id_ros.core.kinematics import SensorKinematics
from inertia_id_ros.online.link_estimator import LinkEstimator, LinkEstimatorConfig
from inertia_id_ros.chain.links import DEFAULT_PRIOR_WEIGHT, LinkModel
from inertia_id_ros.core.robots import load_model
from inertia_id_ros.errors import FrameNotFound, JointNotFound
from inertia_id_ros.ros.conversions import (array_to_wrench, estimate_to_msg,
                                            link_estimate_to_msg, seconds_to_stamp,
                                            stamp_to_seconds, wrench_to_array)
from inertia_id_ros.ros.markers import estimate_markers
from inertia_id_ros.solvers import METHODS, check_options
from inertia_id_ros.errors import ProblemError
from inertia_id_ros.msg import InertialParameters, InertialParametersArray, PayloadChange
from inertia_id_ros.srv import Identify, Tare


@dataclass(frozen=True)
class _Param:
    name: str
    default: Any
    """The default value, or a ``Parameter.Type`` for a parameter without one."""
    description: str


PARAMETERS: tuple[_Param, ...] = (
    _Param("mode", "payload",
           "What to identify: 'payload' (the body beyond an F/T sensor, from joint states and "
           "wrenches) or 'links' (a chain's links and joint drives, from joint states with "
           "efforts)."),
    _Param("urdf_path", "", "Path of the robot's URDF (or give robot_description; in links mode "
                            "chain_config may give it)."),
    _Param("robot_description", "", "The robot's URDF as a string (used when urdf_path is empty)."),
    _Param("joint_states_topic", "/joint_states", "sensor_msgs/JointState input topic."),
    _Param("window_sec", 10.0, "Length of the sliding window of samples (s), > 0; run-time "
                               "changes keep the newest samples that fit."),
    _Param("update_rate_hz", 2.0, "Rate of the periodic consistent solve and publication (Hz), "
                                  "> 0 and <= 100."),
    _Param("method", "lmi", "Identification method: " + ", ".join(sorted(METHODS)) + "."),
    _Param("solver_options", "",
           "Options of the method's solver as a YAML/JSON mapping, e.g. '{tol: 1.0e-8}' or "
           "'{backend: cvxpy, solver: CLARABEL}' for lmi (inertia_id_ros.solvers: the keyword "
           "arguments of solve_<method>); empty = the method's defaults."),
    _Param("max_input_rate_hz", 1000.0,
           "Highest expected rate of each input (Hz); sizes the window's buffers "
           "(window_sec x this rate samples)."),
    _Param("qos_depth", 2000,
           "Depth of the best-effort (sensor-data) input queues; deep enough to ride out solves "
           "at 1 kHz."),
    _Param("warning_period_sec", 5.0, "Minimum time between two warnings of the same kind (s)."),
    # payload mode
    _Param("sensor_frame", "", "Payload mode: URDF frame of the F/T sensor; wrenches must carry "
                               "this frame_id."),
    _Param("body_name", "payload", "Payload mode: name of the identified body in the estimate."),
    _Param("wrench_topic", "/ft_sensor/wrench",
           "Payload mode: geometry_msgs/WrenchStamped input topic."),
    _Param("estimate_offset", True,
           "Payload mode: estimate the 6-D F/T offset jointly with the inertia."),
    _Param("wrench_limits", Parameter.Type.DOUBLE_ARRAY,
           "Payload mode: the F/T sensor's range [fx, fy, fz, tx, ty, tz] (N, N m, > 0; .inf for "
           "no limit on a channel): a wrench reaching it on any channel is saturated and dropped "
           "(reason 'saturated'). Unset: no check."),
    _Param("flip_wrench_sign", False,
           "Payload mode: set for sensors reporting the wrench the body exerts on the sensor (the "
           "opposite of the convention: the wrench the sensor exerts on the body beyond it)."),
    _Param("detect_payload_change", True,
           "Payload mode: detect a grasp or release (CUSUM of the wrench residuals), publish "
           "~/payload_change and restart the window."),
    _Param("payload_change_threshold", 50.0,
           "Payload mode: CUSUM alarm level (> 0); higher = fewer false alarms, later detection "
           "(see inertia_id_ros.online.change_detection)."),
    # links mode
    _Param("joints", Parameter.Type.STRING_ARRAY,
           "Links mode: the chain's joints (each moves one link to identify; the robot's other "
           "joints are locked). Default: chain_config's joints; required without it."),
    _Param("chain_config", "",
           "Links mode: path (absolute, or relative to the working directory) of a chain "
           "configuration YAML (inertia_id_ros.chain.actuators.ChainConfig, e.g. "
           "config/go1_front_left_leg.yaml): the URDF unless urdf_path/robot_description is "
           "given, the joints unless 'joints' is, locked positions, the drive terms to estimate, "
           "gear ratios, rotor inertias (armature priors) and effort scaling (torque constants)."),
    _Param("prior_weight", DEFAULT_PRIOR_WEIGHT,
           "Links mode: weight of the prior toward the URDF per torque sample ((N m)^2 per SI "
           "unit^2), >= 0; small (1e-6) for clean, exciting data, larger for noisy or short data."),
    _Param("coulomb_velocity", 0.0,
           "Links mode: width of the smooth Coulomb sign tanh(dq / v) (rad/s), >= 0, 0 = exact "
           "sign, for joints that chain_config does not configure."),
)

RUNTIME_PARAMETERS = ("method", "solver_options", "window_sec", "update_rate_hz")
"""Parameters that may change while the node runs (see ``_on_set_parameters``; the others are
read-only)."""

MAX_UPDATE_RATE_HZ = 100.0
"""Highest ``update_rate_hz``: a faster periodic solve would starve the input callbacks."""

MAX_WINDOW_MEMORY_BYTES = 2 * 1024**3
"""Largest memory the window may take (window_sec x max_input_rate_hz samples, preallocated
twice): a window_sec or max_input_rate_hz beyond it is refused."""

DEFAULT_TARE_SEC = 1.0
"""Seconds of wrenches ``~/tare`` averages when the request gives 0."""

_SOLVE_FAILURES = ("solver_failed", "inconsistent")
"""Reasons of EstimateUnavailable that are failures of a solve (reported as errors, counted in
``failed_solves``), unlike waiting for data."""

RATE_INTERVAL_SEC = 5.0
"""Input rates (diagnostics, and the warning above max_input_rate_hz) are averages over this (s)."""

_PROCESSING_DROPS = {
    "gap": "the joint states have a gap longer than max_joint_gap around these stamps",
    "no_joint_state": "no joint state reaches back to these stamps",
    "sparse": "too few joint states around these stamps for the derivative filter",
    "overflow": "too many samples waited for processing (are joint states late or missing?)",
    "window_overflow": "the inputs arrive faster than max_input_rate_hz, for which the window "
                       "was sized: the oldest samples leave it early (raise max_input_rate_hz)",
}
"""Samples the estimators drop after accepting them, with the reason."""


@dataclass(frozen=True)
class _Result:
    """A consistent result of a mode's solve: the message to publish, the solve time (s), one
    line for the service response and mode-specific values for ``/diagnostics``."""

    msg: Any
    solve_time: float
    summary: str
    diagnostics: dict[str, Any]
    advice: str = ""
    """When not empty, what the operator should do (the data do not yet determine everything)."""


class _Mode:
    """What a mode adds to the node: inputs, estimator, output message, service field.

    Subclasses build their estimator, publisher and subscriptions in ``__init__`` (raising
    :class:`StartupError` naming the parameter at fault) and say how a result is published.
    """

    name: str
    sample_name: str
    """What the window's samples are, plural (in warnings about dropped samples)."""
    estimator: PayloadEstimator | LinkEstimator
    hardware_id: str
    description: str
    """One line for the start-up log."""

    def solve(self, method: str | None, duration: float) -> _Result:
        """Solve on the window (thread-safe). Raises EstimateUnavailable."""
        raise NotImplementedError

    def process(self) -> int:
        """Turn the buffered samples into window rows (``estimator.process()``): rows added."""
        return self.estimator.process()

    def window_changed(self, window_sec: float) -> None:
        """The window's length changed at run time to ``window_sec`` (s)."""

    def reset(self) -> None:
        """Forget the samples and the counters (``identify`` with ``reset``)."""
        self.estimator.reset()

    def publish(self, msg: Any) -> None:
        raise NotImplementedError

    def respond(self, response: Identify.Response, msg: Any) -> None:
        """Put ``msg`` in its field of the service response."""
        raise NotImplementedError


def _latched() -> QoSProfile:
    return QoSProfile(depth=1, durability=DurabilityPolicy.TRANSIENT_LOCAL,
                      reliability=ReliabilityPolicy.RELIABLE)


class _PayloadMode(_Mode):
    """The body beyond an F/T sensor from joint states and wrenches -> ``~/estimate``."""

    name = "payload"
    sample_name = "wrench samples"

    def __init__(self, node: InertiaIdNode, sensor_qos: QoSProfile) -> None:
        model = node.load_robot()
        sensor_frame = node.param("sensor_frame")
        if not sensor_frame:
            raise StartupError("parameter 'sensor_frame' is required in payload mode")
        try:
            kinematics = SensorKinematics(model, sensor_frame)
        except FrameNotFound as error:
            raise StartupError(f"parameter 'sensor_frame': {error}") from error
        estimate_offset = bool(node.param("estimate_offset"))
        settings = node.window_settings(rows_per_sample=6, n_params=16 if estimate_offset else 10)
        wrench_limits = node.double_list("wrench_limits") or None
        try:
            config = EstimatorConfig(**settings, estimate_offset=estimate_offset,
                                     wrench_sign=-1.0 if node.param("flip_wrench_sign") else 1.0,
                                     wrench_limits=wrench_limits)
        except ValueError as error:
            raise StartupError(f"parameter 'wrench_limits': {error}") from error
        self.estimator = PayloadEstimator(kinematics, config)
        self._sensor_frame = self.hardware_id = sensor_frame
        self._body_name = node.param("body_name")
        self._publisher = node.create_publisher(InertialParameters, "~/estimate", _latched())
        self._markers = node.create_publisher(MarkerArray, "~/markers", _latched())
        node.create_subscription(JointState, node.param("joint_states_topic"),
                                 self._on_joint_state, sensor_qos)
        node.create_subscription(WrenchStamped, node.param("wrench_topic"), self._on_wrench,
                                 sensor_qos)
        self._warn_dropped = node.warn_dropped
        self._warn = node.warn
        threshold = float(node.param("payload_change_threshold"))
        if not threshold > 0.0:
            raise StartupError(f"parameter 'payload_change_threshold' must be > 0, got {threshold}")
        self._detector = (PayloadChangeDetector(ChangeDetectorConfig(
            threshold=threshold, min_reference_sec=_min_reference_sec(config.window_sec)))
            if node.param("detect_payload_change") else None)
        self._detector_lock = threading.Lock()
        self._change = None
        """A payload change the rows of the current ``process()`` showed (not yet handled)."""
        self._changes = node.create_publisher(PayloadChange, "~/payload_change", 10)
        self._process_inputs = node.process_inputs
        self._log = node.get_logger()
        node.create_service(Tare, "~/tare", self._on_tare)
        limits = "" if wrench_limits is None else f", wrench limits {list(wrench_limits)}"
        self.description = (f"identifying the body beyond '{sensor_frame}' from joints "
                            f"{list(kinematics.joint_names)}{limits}")

    def _on_joint_state(self, msg: JointState) -> None:
        try:
            self.estimator.add_joint_state(stamp_to_seconds(msg.header.stamp), msg.name,
                                           msg.position, msg.velocity)
        except SampleRejected as rejected:
            self._warn_dropped(rejected, "joint state")

    def _on_wrench(self, msg: WrenchStamped) -> None:
        try:
            self.estimator.add_wrench(stamp_to_seconds(msg.header.stamp),
                                      wrench_to_array(msg.wrench), msg.header.frame_id)
        except SampleRejected as rejected:
            self._warn_dropped(rejected, "wrench")

    def _on_rows(self, t: np.ndarray, Y: np.ndarray, f: np.ndarray) -> None:
        """Test the rows just added (under the estimator's lock) for a payload change."""
        with self._detector_lock:
            if self._detector is not None and self._change is None:
                self._change = self._detector.update(t, Y, f)

    def process(self) -> int:
        added = self.estimator.process(self._on_rows)
        with self._detector_lock:
            event, self._change = self._change, None
        if event is not None:
            self._warn("payload_change", f"{event}; restarting the window")
            msg = PayloadChange(onset_time=event.t_onset, num_samples=event.n_samples,
                                residual_mean=event.residual_mean, message=str(event))
            msg.header.stamp = seconds_to_stamp(event.t_detected)
            msg.header.frame_id = self._sensor_frame
            self._changes.publish(msg)
            self.estimator.restart()
        return added

    def window_changed(self, window_sec: float) -> None:
        with self._detector_lock:
            if self._detector is not None:
                self._detector.config.min_reference_sec = _min_reference_sec(window_sec)

    def reset(self) -> None:
        with self._detector_lock:
            if self._detector is not None:
                self._detector.reset()
            self._change = None
        self.estimator.reset()

    def _on_tare(self, request: Tare.Request, response: Tare.Response) -> Tare.Response:
        try:
            return self._tare(request, response)
        except Exception as error:  # never let a service call take the node down
            self._warn("tare_error", f"tare failed: {error!r}")
            response.success, response.message = False, f"tare failed: {error!r}"
            return response

    def _tare(self, request: Tare.Request, response: Tare.Response) -> Tare.Response:
        if request.clear:
            self.estimator.clear_tare()
            response.success, response.message = True, "tare cleared"
            self._log.info("F/T tare cleared")
            return response
        theta_known = _payload_theta(request.payload) if request.known_payload else None
        if theta_known is not None and not check_consistency(theta_known).fully_consistent:
            response.success = False
            response.message = ("the known payload's theta is not physically consistent: "
                                + "; ".join(check_consistency(theta_known).problems))
            return response
        duration = float(request.duration) or DEFAULT_TARE_SEC
        self._process_inputs()
        try:
            tare = self.estimator.set_tare(duration, theta_known)
            if theta_known is None:  # the window restarted
                with self._detector_lock:
                    if self._detector is not None:
                        self._detector.reset()
                    self._change = None
        except (EstimateUnavailable, ValueError) as error:
            response.success, response.message = False, f"no tare: {error}"
            return response
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
        self._log.info(response.message)
        return response

    def solve(self, method: str | None, duration: float) -> _Result:
        generation = self.estimator.generation
        estimate = self.estimator.solve(method=method, duration=duration)
        _check_consistent({self._body_name: estimate.theta})
        if self._detector is not None and duration == 0.0:  # the reference: the whole window
            sigma = self.estimator.residual_sigma(estimate, generation)
            if sigma is not None:  # None: the samples were forgotten meanwhile (a restart)
                with self._detector_lock:
                    self._detector.set_reference(estimate.theta, estimate.sensor_offset, sigma,
                                                 span=estimate.t_last - estimate.t_first)
        summary = (f"{estimate.method}: m = {estimate.mass:.4f} kg from {estimate.n_samples} "
                   f"samples, residual RMS {estimate.residual_rms:.4g}")
        excitation = excitation_report(estimate.theta, estimate.covariance)
        tare = self.estimator.tare
        diagnostics = {"excitation": excitation.message,
                       "tare_age_sec": "none" if tare is None
                       else f"{max(estimate.t_last - tare.t, 0.0):.1f}",
                       "condition_number": f"{estimate.condition_number:.4g}",
                       "min_pseudo_inertia_eig": f"{estimate.min_pseudo_inertia_eig:.4g}",
                       **{f"relative_std.{name}": f"{value:.3g}"
                          for name, value in excitation.relative_std.items()}}
        return _Result(estimate_to_msg(estimate, self._sensor_frame, self._body_name),
                       estimate.solve_time, summary, diagnostics,
                       "" if excitation.well_excited else excitation.message)

    def publish(self, msg: InertialParameters) -> None:
        self._publisher.publish(msg)
        self._markers.publish(estimate_markers(msg))

    def respond(self, response: Identify.Response, msg: InertialParameters) -> None:
        response.estimate = msg


class _LinksMode(_Mode):
    """A chain's links and joint drives from joint states with efforts -> ``~/links``."""

    name = "links"
    sample_name = "joint states"

    def __init__(self, node: InertiaIdNode, sensor_qos: QoSProfile) -> None:
        link_model, actuators = _link_model(node)
        prior_weight = float(node.param("prior_weight"))
        if not prior_weight >= 0.0:
            raise StartupError(f"parameter 'prior_weight' must be >= 0, got {prior_weight!r}")
        config = LinkEstimatorConfig(**node.window_settings(link_model.n_joints,
                                                            link_model.n_parameters),
                                     prior_weight=prior_weight)
        self.estimator = LinkEstimator(link_model, config, actuators)
        self.hardware_id = ",".join(link_model.joint_names)
        self._publisher = node.create_publisher(InertialParametersArray, "~/links", _latched())
        self._markers = node.create_publisher(MarkerArray, "~/markers", _latched())
        node.create_subscription(JointState, node.param("joint_states_topic"),
                                 self._on_joint_state, sensor_qos)
        self._warn_dropped = node.warn_dropped
        self.description = (f"identifying the links {list(link_model.link_names)} and the drives "
                            f"of joints {list(link_model.joint_names)} from joint torques, "
                            f"prior weight {prior_weight:g}")

    def _on_joint_state(self, msg: JointState) -> None:
        try:
            self.estimator.add_joint_state(stamp_to_seconds(msg.header.stamp), msg.name,
                                           msg.position, msg.velocity, msg.effort)
        except SampleRejected as rejected:
            self._warn_dropped(rejected, "joint state")

    def solve(self, method: str | None, duration: float) -> _Result:
        estimate = self.estimator.solve(method=method, duration=duration)
        _check_consistent(dict(zip(estimate.link_names, estimate.thetas)))
        unidentifiable = " ".join(estimate.unidentifiable)
        summary = (f"{estimate.method}: {len(estimate.link_names)} links and "
                   f"{len(estimate.drives)} joint drives from {estimate.n_samples} samples, "
                   f"residual RMS {estimate.residual_rms:.4g} N m, base-parameter rank "
                   f"{estimate.rank}; unidentifiable (the prior decides): "
                   f"{unidentifiable or 'none'}")
        return _Result(link_estimate_to_msg(estimate), estimate.solve_time, summary,
                       {"base_parameter_rank": estimate.rank, "unidentifiable": unidentifiable})

    def publish(self, msg: InertialParametersArray) -> None:
        self._publisher.publish(msg)
        markers = MarkerArray()
        for body in msg.bodies:  # one namespace per link: marker ids restart in each
            markers.markers += estimate_markers(body, ns=f"inertia_id/{body.body_name}").markers
        self._markers.publish(markers)

    def respond(self, response: Identify.Response, msg: InertialParametersArray) -> None:
        response.links = msg


MODES: dict[str, type[_Mode]] = {"payload": _PayloadMode, "links": _LinksMode}


def _min_reference_sec(window_sec: float) -> float:
    """The change detector's shortest reference span (s) for a window of ``window_sec``: the
    default, or half the window when it is shorter than twice that (or no reference would ever
    arm the detector)."""
    return min(ChangeDetectorConfig.min_reference_sec, 0.5 * window_sec)


def _payload_theta(msg: InertialParameters) -> np.ndarray:
    """theta (10,) of a payload message: its ``theta``, or, when that is all zero, its
    ``inertia`` (mass, COM, inertia about the COM) converted."""
    theta = np.array(msg.theta, dtype=float)
    if np.any(theta != 0.0):
        return theta
    i = msg.inertia
    inertia = np.array([[i.ixx, i.ixy, i.ixz], [i.ixy, i.iyy, i.iyz], [i.ixz, i.iyz, i.izz]])
    return theta_from_inertia(i.m, np.array([i.com.x, i.com.y, i.com.z]), inertia)


def _solver_options(method: str, text: str | dict[str, Any]) -> dict[str, Any]:
    """The ``solver_options`` parameter (YAML/JSON mapping text; "" = none) checked against
    ``method``'s solver; raises ValueError naming what is wrong."""
    if isinstance(text, dict):
        options = text
    else:
        try:
            options = yaml.safe_load(text) if text.strip() else {}
        except yaml.YAMLError as error:
            raise ValueError(f"not a YAML/JSON mapping: {error}") from error
    if not isinstance(options, dict) or not all(isinstance(k, str) for k in options):
        raise ValueError(f"must be a mapping of option names to values, got {text!r}")
    options = {k: _number(v) for k, v in options.items()}
    try:
        check_options(method, options)
    except ProblemError as error:
        raise ValueError(f"{error} (solver_options {options} do not apply to method "
                         f"{method!r}; set solver_options with it, '' for the defaults)") from error
    return options


def _number(value: Any) -> Any:
    """``value``, or the number a string spells (YAML 1.1 reads ``1e-8``, without a dot, as a
    string)."""
    if isinstance(value, str):
        try:
            return int(value)
        except ValueError:
            try:
                return float(value)
            except ValueError:
                return value
    return value


def _check_consistent(thetas: dict[str, np.ndarray]) -> None:
    """The node's own check before anything is published: raise if a body is inconsistent (the
    estimators never return one)."""
    for body, theta in thetas.items():
        report = check_consistency(theta)
        if not report.fully_consistent:
            raise EstimateUnavailable("inconsistent", f"{body} failed the consistency check: "
                                      + "; ".join(report.problems))


def _link_model(node: InertiaIdNode) -> tuple[LinkModel, dict[str, ActuatorConfig] | None]:
    """The chain of links mode from ``joints``, ``chain_config``, the URDF, ``coulomb_velocity``,
    and the chain config's actuators of its joints (``None`` without a chain config): the
    estimator fixes the armatures the data cannot identify by their motor type's rotor inertia."""
    chain = None
    if node.param("chain_config"):
        try:
            chain = ChainConfig.load(node.param("chain_config"))
        except ConfigError as error:
            raise StartupError(f"parameter 'chain_config': {error}") from error
    joints = node.string_list("joints") or (list(chain.joints) if chain else [])
    if not joints:
        raise StartupError("parameter 'joints' is required in links mode (or give "
                           "'chain_config')")
    coulomb_velocity = float(node.param("coulomb_velocity"))
    if not coulomb_velocity >= 0.0:
        raise StartupError(f"parameter 'coulomb_velocity' must be >= 0 rad/s, got "
                           f"{coulomb_velocity!r}")
    unconfigured = ActuatorConfig(coulomb_velocity=coulomb_velocity)
    estimate = chain.estimate if chain else DRIVE_TERMS
    drives = {j: (chain.actuators.get(j, unconfigured) if chain else unconfigured).drive(estimate)
              for j in joints}
    robot = node.load_robot(default_urdf=str(chain.urdf_path()) if chain else None)
    try:
        model = LinkModel.from_model(robot, joints, chain.locked_positions if chain else None,
                                     drives)
    except (JointNotFound, ValueError) as error:  # unknown, or not a 1-DoF joint
        raise StartupError(f"parameter 'joints': {error}") from error
    return model, ({j: chain.actuators[j] for j in joints if j in chain.actuators}
                   if chain else None)


class InertiaIdNode(Node):
    """The identification node; see the module docstring. Raises :class:`StartupError`."""

    def __init__(self, **kwargs) -> None:
        self._stop = threading.Event()
        self._wake = threading.Event()
        """Set to end the worker's wait early: a stop, or a new update rate."""
        self._worker: threading.Thread | None = None
        super().__init__("inertia_id", **kwargs)
        for p in PARAMETERS:
            try:
                self.declare_parameter(p.name, p.default, ParameterDescriptor(
                    description=p.description, read_only=p.name not in RUNTIME_PARAMETERS))
            except InvalidParameterTypeException as error:
                raise StartupError(f"parameter '{p.name}': {error}") from error
        self._check_common_parameters()
        self._update_period = 1.0 / float(self.param("update_rate_hz"))
        depth = int(self.param("qos_depth"))
        sensor_qos = QoSProfile(reliability=ReliabilityPolicy.BEST_EFFORT,
                                durability=DurabilityPolicy.VOLATILE,
                                history=HistoryPolicy.KEEP_LAST, depth=depth)
        mode = self.param("mode")
        if mode not in MODES:
            raise StartupError(f"parameter 'mode': unknown mode {mode!r}; choose one of "
                               f"{sorted(MODES)}")
        self._mode = MODES[mode](self, sensor_qos)
        self._estimator = self._mode.estimator
        self._last_warning: dict[str, float] = {}
        self._last: _Result | None = None
        self._problem: tuple[int, str] | None = None
        """(diagnostic level, why) the latest update gave no estimate; None when it gave one."""
        self._rate_counts: tuple[float, dict[str, int]] = (time.monotonic(), {})
        self.published = 0
        self.failed_solves: Counter[str] = Counter()
        """Periodic solves that failed, by reason (``solver_failed``, ``inconsistent``,
        ``exception``)."""
        self._drops_reported: dict[str, int] = {}
        self._clock_jumps_reported = 0
        self.timing: dict[str, float] = {}
        """Latest update's cost: process_us_per_sample, solve_ms, update_ms (process + solve)."""

        self._diagnostics_pub = self.create_publisher(DiagnosticArray, "/diagnostics", 10)
        self.create_service(Identify, "~/identify", self._on_identify)
        self.add_on_set_parameters_callback(self._on_set_parameters)

        self._worker = threading.Thread(target=self._run_worker, name="inertia_id_solver",
                                        daemon=True)
        self._worker.start()
        self.get_logger().info(
            f"{self._mode.description}; method {self.param('method')}, window "
            f"{self.param('window_sec')} s, update {self.param('update_rate_hz')} Hz")

    # -- set-up (also used by the modes) --------------------------------------------------------
    def param(self, name: str) -> Any:
        """The value of parameter ``name``."""
        return self.get_parameter(name).value

    def string_list(self, name: str) -> list[str]:
        """A string-array parameter's value; ``[]`` when not set."""
        try:
            return list(self.param(name) or [])
        except ParameterUninitializedException:
            return []

    def double_list(self, name: str) -> list[float]:
        """A double-array parameter's value; ``[]`` when not set."""
        try:
            return [float(v) for v in self.param(name) or []]
        except ParameterUninitializedException:
            return []

    def load_robot(self, default_urdf: str | None = None):
        """The robot's pinocchio model from ``urdf_path`` or ``robot_description``, else from
        ``default_urdf`` (a path); raises :class:`StartupError` naming the parameter."""
        urdf_path, urdf_xml = self.param("urdf_path"), self.param("robot_description")
        name = "urdf_path" if urdf_path else "robot_description" if urdf_xml else "chain_config"
        if not urdf_path and not urdf_xml:
            if default_urdf is None:
                raise StartupError("parameter 'urdf_path' (or 'robot_description') is required")
            urdf_path = default_urdf
        try:
            return load_model(urdf_path=urdf_path or None,
                              urdf_xml=None if urdf_path else urdf_xml)
        except Exception as error:  # pinocchio raises ValueError/RuntimeError on bad URDFs
            raise StartupError(f"parameter '{name}': cannot load the URDF: {error}") from error

    def window_settings(self, rows_per_sample: int, n_params: int) -> dict[str, Any]:
        """The estimator settings both modes take from the node's parameters, for a window of
        samples of ``rows_per_sample`` rows and ``n_params`` parameters (its memory is
        checked)."""
        window_sec = float(self.param("window_sec"))
        try:
            self.check_window_memory(window_sec, rows_per_sample, n_params)
        except ValueError as error:
            raise StartupError(f"parameter 'window_sec': {error}") from error
        return {"window_sec": window_sec, "method": self.param("method"),
                "solver_options": _solver_options(self.param("method"),
                                                  self.param("solver_options")),
                **window_capacities(window_sec, float(self.param("max_input_rate_hz")))}

    def check_window_memory(self, window_sec: float, rows_per_sample: int, n_params: int) -> None:
        """Raise ValueError if a window of ``window_sec`` at ``max_input_rate_hz`` would take
        more than :data:`MAX_WINDOW_MEMORY_BYTES`."""
        capacity = window_capacities(window_sec, float(self.param("max_input_rate_hz")))
        size = 2 * capacity["window_capacity"] * 8 * (rows_per_sample * (n_params + 1) + 1)
        if size > MAX_WINDOW_MEMORY_BYTES:
            raise ValueError(f"a {window_sec:g} s window at max_input_rate_hz "
                             f"{self.param('max_input_rate_hz'):g} Hz needs "
                             f"{size / 1024**3:.1f} GiB, more than "
                             f"{MAX_WINDOW_MEMORY_BYTES / 1024**3:g} GiB: shorten window_sec or "
                             "lower max_input_rate_hz")

    def _check_common_parameters(self) -> None:
        for name in ("window_sec", "update_rate_hz", "warning_period_sec", "max_input_rate_hz"):
            if not math.isfinite(value := float(self.param(name))) or value <= 0.0:
                raise StartupError(f"parameter '{name}' must be > 0, got {self.param(name)!r}")
        if float(self.param("update_rate_hz")) > MAX_UPDATE_RATE_HZ:
            raise StartupError(f"parameter 'update_rate_hz' must be <= {MAX_UPDATE_RATE_HZ:g} Hz, "
                               f"got {self.param('update_rate_hz')!r}")
        if int(self.param("qos_depth")) < 1:
            raise StartupError(f"parameter 'qos_depth' must be >= 1, got {self.param('qos_depth')}")
        if self.param("method") not in METHODS:
            raise StartupError(f"parameter 'method': unknown method {self.param('method')!r}; "
                               f"choose one of {sorted(METHODS)}")
        try:
            _solver_options(self.param("method"), self.param("solver_options"))
        except ValueError as error:
            raise StartupError(f"parameter 'solver_options': {error}") from error

    def _on_set_parameters(self, params: list[Parameter]) -> SetParametersResult:
        """Validate run-time changes (all of this call, or none, apply) and apply them between
        solves: the method and its options together (``configure_solver``), the window under
        the estimator's lock (``resize_window``), the rate from the worker's next wait."""
        new = {p.name: p.value for p in params}
        config = self._estimator.config
        method = new.get("method", config.method)
        try:
            if method not in METHODS:
                raise ValueError(f"unknown method {method!r}; choose one of {sorted(METHODS)}")
            options = (_solver_options(method, new["solver_options"]) if "solver_options" in new
                       else _solver_options(method, config.solver_options))
            for name in ("window_sec", "update_rate_hz"):
                if name in new and not (math.isfinite(new[name]) and new[name] > 0.0):
                    raise ValueError(f"{name} must be a finite number > 0, got {new[name]!r}")
            if new.get("update_rate_hz", 0.0) > MAX_UPDATE_RATE_HZ:
                raise ValueError(f"update_rate_hz must be <= {MAX_UPDATE_RATE_HZ:g} Hz, got "
                                 f"{new['update_rate_hz']!r}")
            if "window_sec" in new:
                window = self._estimator.window
                self.check_window_memory(new["window_sec"], window.rows_per_sample,
                                         window.n_params or 0)
        except ValueError as error:
            self.get_logger().warning(f"rejected parameter change {new}: {error}")
            return SetParametersResult(successful=False, reason=str(error))
        self._estimator.configure_solver(method, options)
        if "window_sec" in new:
            capacities = window_capacities(new["window_sec"],
                                           float(self.param("max_input_rate_hz")))
            self._estimator.resize_window(new["window_sec"], capacities["window_capacity"])
            self._mode.window_changed(new["window_sec"])
        if "update_rate_hz" in new:
            self._update_period = 1.0 / new["update_rate_hz"]
            self._wake.set()
        self.get_logger().info(f"parameters changed: {new}")
        return SetParametersResult(successful=True)

    # -- warnings -------------------------------------------------------------------------------
    def warn(self, kind: str, message: str) -> None:
        """Log a warning, at most one per ``warning_period_sec`` of each ``kind``."""
        now = time.monotonic()
        if now - self._last_warning.get(kind, -np.inf) >= float(self.param("warning_period_sec")):
            self._last_warning[kind] = now
            self.get_logger().warning(message)

    def warn_dropped(self, rejected: SampleRejected, what: str) -> None:
        """Warn (rate-limited) that an input sample ``what`` was rejected."""
        total = self._estimator.dropped[rejected.reason]
        self.warn(rejected.reason, f"dropped {what} ({rejected.reason}, {total} so far): "
                                    f"{rejected.message}")

    def _report_processing_drops(self) -> None:
        stats = self._estimator.stats()
        if stats.clock_jumps > self._clock_jumps_reported:
            self._clock_jumps_reported = stats.clock_jumps
            self.warn("clock_jump", "the input stamps jumped back by more than clock_jump_sec "
                       "(a driver restart, a looped bag or a simulated time reset): the window "
                       "starts afresh (a tare is kept); the last estimate stays published")
        dropped = stats.dropped
        for reason, explanation in _PROCESSING_DROPS.items():
            new = dropped.get(reason, 0) - self._drops_reported.get(reason, 0)
            if new > 0:
                self._drops_reported[reason] = dropped[reason]
                self.warn(reason, f"dropped {new} {self._mode.sample_name} ({reason}, "
                                   f"{dropped[reason]} so far): {explanation}")

    # -- solving --------------------------------------------------------------------------------
    def process_inputs(self) -> None:
        """Turn the buffered samples into window rows (and let the mode look at them); records
        the cost per sample and warns about samples dropped on the way."""
        start = time.perf_counter()
        processed = self._mode.process()
        if processed:
            self.timing["process_us_per_sample"] = 1e6 * (time.perf_counter() - start) / processed
        self._report_processing_drops()

    def _solve(self, method: str | None = None, duration: float = 0.0) -> _Result:
        """Process the buffered samples and solve; raises EstimateUnavailable. Records timings."""
        start = time.perf_counter()
        self.process_inputs()
        result = self._mode.solve(method or None, duration)
        self.timing["solve_ms"] = 1e3 * result.solve_time
        self.timing["update_ms"] = 1e3 * (time.perf_counter() - start)
        return result

    def _update(self) -> None:
        """One periodic update: solve, publish a consistent result, report failures; the last
        estimate stays published whatever fails."""
        try:
            result = self._solve()
            self._problem = None
        except EstimateUnavailable as why:
            failed = why.reason in _SOLVE_FAILURES
            message = f"no estimate ({why.reason}): {why.message}"
            if failed:
                self.failed_solves[why.reason] += 1
                message += "; the last estimate stays published"
            self._problem = (DiagnosticStatus.ERROR if failed else DiagnosticStatus.WARN, message)
            if why.reason == "too_few_samples":  # normal while the window fills
                self.get_logger().info(f"waiting for data: {why.message}",
                                       throttle_duration_sec=10.0)
            else:
                self.warn(why.reason, message)
        except Exception as error:  # a bug or an unexpected back-end error: never fatal
            self.failed_solves["exception"] += 1
            why = f"solve failed, keeping the last estimate: {error!r}"
            self._problem = (DiagnosticStatus.ERROR, why)
            self.warn("solver_error", why)
        else:
            self._last = result
            self._mode.publish(result.msg)
            self.published += 1
        try:
            self._publish_diagnostics()
        except Exception as error:  # the worker must outlive a failing report
            self.warn("diagnostics_error", f"could not publish diagnostics: {error!r}")

    def _run_worker(self) -> None:
        next_time = time.monotonic()
        while not self._stop.is_set():
            started, period = time.monotonic(), self._update_period
            next_time += period
            self._update()
            while True:  # wait for the next update; a new rate applies from this update on
                self._wake.clear()
                if self._stop.is_set():
                    return
                if self._update_period != period:
                    period = self._update_period
                    next_time = started + period
                remaining = next_time - time.monotonic()
                if remaining <= 0.0:
                    break
                self._wake.wait(remaining)
            next_time = max(next_time, time.monotonic() - 1.0)

    def _publish_diagnostics(self) -> None:
        stats = self._estimator.stats()
        status = DiagnosticStatus(name="inertia_id: inputs", hardware_id=self._mode.hardware_id)
        if self._problem is not None:
            status.level, status.message = self._problem
        elif self._last is not None and self._last.advice:
            status.level, status.message = DiagnosticStatus.WARN, self._last.advice
        else:
            status.level = DiagnosticStatus.OK if self._last else DiagnosticStatus.WARN
            status.message = "estimating" if self._last else "waiting for an estimate"
        values = {"mode": self._mode.name, "window_samples": stats.window_samples,
                  "pending_samples": stats.pending, "published": self.published,
                  "method": self._estimator.config.method,
                  "window_sec": f"{self._estimator.config.window_sec:g}",
                  "update_rate_hz": f"{1.0 / self._update_period:g}",
                  **{f"failed_solves.{k}": v for k, v in self.failed_solves.items()}}
        values.update({k: f"{v:.4g}" for k, v in self.timing.items()})
        if self._last is not None:
            values.update(self._last.diagnostics)
        for group in ("received", "processed", "dropped"):
            values.update({f"{group}.{k}": v for k, v in getattr(stats, group).items()})
        now, previous = time.monotonic(), self._rate_counts
        if now - previous[0] >= RATE_INTERVAL_SEC:  # sustained rates, not bursts
            limit = float(self.param("max_input_rate_hz"))
            for name, count in stats.received.items():
                rate = (count - previous[1].get(name, 0)) / (now - previous[0])
                values[f"rate_hz.{name}"] = f"{rate:.1f}"
                if rate > 1.2 * limit:
                    self.warn("input_rate", f"{name} samples arrive at {rate:.0f} Hz, above "
                               f"max_input_rate_hz ({limit:.0f} Hz) for which the window was "
                               "sized: it may hold less than window_sec")
            self._rate_counts = (now, dict(stats.received))
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
            self._mode.reset()
            response.success = False
            response.message = "window reset; call again once new data have arrived"
            return response
        try:
            result = self._solve(request.method, max(0.0, float(request.duration)))
        except Exception as error:  # EstimateUnavailable, or unexpected: answer with the last
            response.success = False
            response.message = (f"{error.reason}: {error.message}"
                                if isinstance(error, EstimateUnavailable)
                                else f"solve failed: {error!r}")
            if self._last is not None:
                response.message += "; the last estimate is attached"
                self._mode.respond(response, self._last.msg)
        else:
            response.success = True
            response.message = result.summary
            self._mode.respond(response, result.msg)
        return response

    def destroy_node(self) -> None:
        self._stop.set()
        self._wake.set()
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
