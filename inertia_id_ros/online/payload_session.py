"""The payload sessions: a rigid payload beyond an F/T sensor (:class:`PayloadSession`) or at a
frame of an arm, from its joint torques (:class:`PayloadTorqueSession`), with the rules of the
online loop (:mod:`~inertia_id_ros.online.session`) and the payload's own: change detection
(steps 1, 2 and 4 of the loop), the offsets' tare, the excitation in the diagnostics; and the
factories the node and ``inertia-id replay`` build them with (:func:`payload_session`,
:func:`payload_torque_session`).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

import numpy as np

from inertia_id_ros.chain.differentiation import payload_half_width, samples_each_side
from inertia_id_ros.chain.links import LinkModel
from inertia_id_ros.core.kinematics import SensorKinematics
from inertia_id_ros.errors import SampleRejected
from inertia_id_ros.online.change_detection import (
    ChangeDetectorConfig,
    ChangeEvent,
    PayloadChangeDetector,
    window_residual_sigma,
)
from inertia_id_ros.online.determination import excitation_report
from inertia_id_ros.online.estimator import RowsCallback, window_capacities
from inertia_id_ros.online.payload_estimator import (
    Estimate,
    EstimatorConfig,
    PayloadConfigBase,
    PayloadEstimator,
)
from inertia_id_ros.online.payload_torque_estimator import (
    TORQUE_NOISE_STD_FLOOR,
    PayloadTorqueEstimate,
    PayloadTorqueEstimator,
    PayloadTorqueEstimatorConfig,
)
from inertia_id_ros.online.session import (
    EstimateT_co,
    Session,
    SessionEstimator,
    SolvedEstimate,
    Update,
    Warning_,
)
from inertia_id_ros.online.tare import OffsetTare, Tare
from inertia_id_ros.online.window import SlidingWindow
from inertia_id_ros.options import PAYLOAD_TORQUES_MIN_SAMPLES

if TYPE_CHECKING:
    from inertia_id_ros.chain.ft_calibration import SensorCalibration
    from inertia_id_ros.online.ft_calibrator import OnlineCalibrationConfig

REFERENCE_PERIOD_SEC = 1.0
"""The payload-change detector's reference (the estimate and its window's residual scale) is
renewed at most this often (s of sample time): the payload does not change between solves, and
the residual scale costs a pass over the window."""


def min_reference_sec(window_sec: float) -> float:
    """The change detector's shortest reference span (s) for a window of ``window_sec``: the
    default, or half the window when it is shorter than twice that (or no reference would ever
    arm the detector)."""
    return min(ChangeDetectorConfig.min_reference_sec, 0.5 * window_sec)


class PayloadEstimate(SolvedEstimate, Protocol):
    """What a payload session reads of an estimate (both payload estimates have it:
    :class:`~inertia_id_ros.online.payload_estimator.PayloadEstimateBase` and its
    ``condition_number``)."""

    @property
    def theta(self) -> np.ndarray:
        """(10,) about and in the payload's frame."""

    @property
    def sensor_offset(self) -> np.ndarray:
        """The offsets, one per channel."""

    @property
    def covariance(self) -> np.ndarray:
        """(10, 10) of ``theta``."""

    @property
    def t_first(self) -> float:
        """Stamp of the oldest sample solved on (s)."""

    @property
    def t_last(self) -> float:
        """Stamp of the newest sample solved on (s)."""

    @property
    def condition_number(self) -> float:
        """Of the column-scaled regressor (the excitation)."""

    @property
    def min_pseudo_inertia_eig(self) -> float:
        """Smallest eigenvalue of the pseudo-inertia (kg m^2)."""


PayloadEstimateT = TypeVar("PayloadEstimateT", bound=PayloadEstimate)
T = TypeVar("T")


class PayloadSessionEstimator(SessionEstimator[EstimateT_co], Protocol[EstimateT_co]):
    """What a payload session calls on its estimator beyond a :class:`SessionEstimator`'s: its
    samples' generation, a restart (a payload change), its window read under its lock (the
    residual scale of a reference), its offsets' tare."""

    @property
    def config(self) -> PayloadConfigBase:
        """The estimator's settings (its prior)."""

    @property
    def window(self) -> SlidingWindow:
        """The window of regressor rows, every row kept."""

    @property
    def generation(self) -> int:
        """Increments whenever the estimator forgets its samples."""

    @property
    def offset_tare(self) -> OffsetTare:
        """The offsets' tare every solve uses."""

    def restart(self, since: float | None = None) -> None:
        """Forget the samples (``since``: only the window's stamped before it, s)."""

    def read_window(self, read: Callable[[SlidingWindow], T]) -> T:
        """``read(window)`` under the estimator's lock."""


PayloadEstimatorT = TypeVar("PayloadEstimatorT", bound=PayloadSessionEstimator[Any])


class PayloadSessionBase(Session[PayloadEstimatorT, PayloadEstimateT]):
    """A rigid payload, from an F/T sensor (:class:`PayloadSession`) or from joint torques
    (:class:`PayloadTorqueSession`): a consistent estimate per update; payload changes detected
    (unless ``detect_changes`` is False, with the CUSUM alarm level ``change_threshold``); the
    offsets (F/T or joint torque) tared on demand (:meth:`tare`)."""

    def __init__(
        self,
        estimator: PayloadEstimatorT,
        max_input_rate_hz: float = 1000.0,
        detect_changes: bool = True,
        change_threshold: float = ChangeDetectorConfig.threshold,
    ) -> None:
        super().__init__(estimator, max_input_rate_hz)
        if not change_threshold > 0.0:
            raise ValueError(f"the payload-change threshold must be > 0, got {change_threshold}")
        self.detector = (
            PayloadChangeDetector(
                ChangeDetectorConfig(
                    threshold=change_threshold,
                    min_reference_sec=min_reference_sec(estimator.config.window_sec),
                    **self._detector_channels(),
                )
            )
            if detect_changes
            else None
        )
        self.changes: list[ChangeEvent] = []
        """Every payload change detected so far."""
        self._detector_lock = threading.Lock()
        self._change: ChangeEvent | None = None
        self._reference_t = -np.inf
        """Stamp of the newest sample of the current reference (s)."""
        self._paused = False
        """Change detection paused (an excitation runs)."""

    def _detector_channels(self) -> dict[str, Any]:
        """The change detector's channel settings (:class:`ChangeDetectorConfig`; the default:
        an F/T sensor's wrench)."""
        return {}

    @property
    def prior_available(self) -> bool:
        """Whether the estimator has the payload's CAD values (``PayloadConfigBase.prior``)."""
        return self.estimator.config.prior is not None

    def _on_rows(self, t: np.ndarray, Y: np.ndarray, f: np.ndarray) -> None:
        """Test rows just added (under the estimator's lock) for a payload change."""
        with self._detector_lock:
            if self.detector is not None and self._change is None and not self._paused:
                self._change = self.detector.update(t, Y, f)

    def _rows_callback(self) -> RowsCallback:
        return self._on_rows

    def _take_change(self, warnings: list[Warning_]) -> ChangeEvent | None:
        """A payload change the rows raised: the window keeps the new payload's samples only."""
        with self._detector_lock:
            event, self._change = self._change, None
        if event is not None:
            self.estimator.restart(since=event.t_onset)  # the new payload's samples only
            self.changes.append(event)
            warnings.append(("payload_change", f"{event}; restarting the window"))
        return event

    def _solve(
        self, method: str | None, duration: float, until: float | None = None
    ) -> PayloadEstimateT:
        generation = self.estimator.generation
        estimate = super()._solve(method, duration, until)
        if (
            self.detector is not None
            and duration == 0.0
            and until is None
            and (  # whole window
                not self.detector.armed
                or estimate.t_last - self._reference_t >= REFERENCE_PERIOD_SEC
            )
        ):
            sigma = self._reference_sigma(estimate, generation)
            if sigma is not None:  # None: the samples were forgotten meanwhile (a restart)
                with self._detector_lock:
                    if self.detector.set_reference(
                        estimate.theta,
                        estimate.sensor_offset,
                        sigma,
                        span=estimate.t_last - estimate.t_first,
                    ):
                        self._reference_t = estimate.t_last
        return estimate

    def _reference_sigma(self, estimate: PayloadEstimateT, generation: int) -> np.ndarray | None:
        """The residual scale (one per channel) of the window's samples ``estimate`` was solved
        on, or ``None`` if the estimator forgot its samples since ``generation`` (read before
        the solve) or holds none of them
        (:func:`~inertia_id_ros.online.change_detection.window_residual_sigma`)."""
        estimator = self.estimator

        def read(window: SlidingWindow) -> np.ndarray | None:
            if estimator.generation != generation:
                return None
            return window_residual_sigma(
                window, estimate.t_first, estimate.theta, estimate.sensor_offset
            )

        return estimator.read_window(read)

    def _estimate_diagnostics(self, estimate: PayloadEstimateT) -> tuple[dict[str, str], str]:
        excitation = excitation_report(estimate.theta, estimate.covariance)
        tare = self.estimator.offset_tare.current
        values = {
            "excitation": excitation.message,
            "tare_age_sec": "none" if tare is None else f"{max(estimate.t_last - tare.t, 0.0):.1f}",
            "condition_number": f"{estimate.condition_number:.4g}",
            "min_pseudo_inertia_eig": f"{estimate.min_pseudo_inertia_eig:.4g}",
            **{
                f"relative_std.{name}": f"{value:.3g}"
                for name, value in excitation.relative_std.items()
            },
        }
        return values, "" if excitation.well_excited else excitation.message

    def pause_change_detection(self, paused: bool) -> None:
        """Pause (``True``) or resume change detection; either way the detector restarts."""
        with self._detector_lock:
            self._paused = bool(paused)
        self._forget_change()

    def _forget_change(self) -> None:
        with self._detector_lock:
            if self.detector is not None:
                self.detector.reset()
            self._change = None

    def reset(self) -> None:
        """Forget every sample, the estimates and any detected change."""
        self._forget_change()
        super().reset()

    def resize_window(self, window_sec: float) -> None:
        """Resize the window to ``window_sec`` (s) and the detector's minimum reference duration
        with it."""
        super().resize_window(window_sec)
        with self._detector_lock:
            if self.detector is not None:
                self.detector.config.min_reference_sec = min_reference_sec(window_sec)

    def tare(self, duration: float, theta_known: np.ndarray | None = None) -> Tare:
        """Tare the offsets (F/T, or joint torque) from the newest ``duration`` s of samples,
        with nothing beyond the sensor or frame (``theta_known=None``: the window restarts and
        the detector waits for a new reference) or the known payload ``theta_known`` (10,).
        Raises :class:`~inertia_id_ros.errors.EstimateUnavailable` (too few samples) or
        ValueError."""
        with self._lock:
            warnings: list[Warning_] = []
            self._process(warnings)
            tare = self.estimator.offset_tare.set(duration, theta_known)
            if theta_known is None:
                self._forget_change()
            return tare

    def clear_tare(self) -> None:
        """Forget the tare."""
        self.estimator.offset_tare.clear()


class PayloadSession(PayloadSessionBase[PayloadEstimator, Estimate]):
    """The payload beyond an F/T sensor: joint states and wrenches in, a consistent
    :class:`~inertia_id_ros.online.payload_estimator.Estimate` per update (the rules of
    :class:`PayloadSessionBase`)."""

    def add_wrench(
        self, t: float, wrench: np.ndarray, frame_id: str | None = None
    ) -> Warning_ | None:
        """Offer a wrench (see ``PayloadEstimator.add_wrench``): ``None`` when taken, else the
        warning that it was dropped."""
        try:
            self.estimator.add_wrench(t, wrench, frame_id)
        except SampleRejected as rejected:
            return self._dropped(rejected, "wrench")
        return None

    def add_wrenches(
        self, t: np.ndarray, wrenches: np.ndarray, frame_ids: Sequence[str | None] | None = None
    ) -> list[Warning_]:
        """Offer ``N`` wrenches (see ``PayloadEstimator.add_wrenches``): the warnings of those
        dropped."""
        return [
            self._dropped(why, "wrench")
            for why in self.estimator.add_wrenches(t, wrenches, frame_ids)
        ]

    def _summary(self, estimate: Estimate) -> str:
        return (
            f"{estimate.method}: m = {estimate.mass:.4f} kg from {estimate.n_samples} "
            f"samples, residual RMS {estimate.residual_rms:.4g}"
        )


class PayloadTorqueSession(PayloadSessionBase[PayloadTorqueEstimator, PayloadTorqueEstimate]):
    """The payload at a frame of an arm without an F/T sensor, from its joint torques: joint
    states with efforts in, a consistent
    :class:`~inertia_id_ros.online.payload_torque_estimator.PayloadTorqueEstimate` per update.
    The rules of :class:`PayloadSessionBase` (change detection on the joints' torque residuals, a
    tare of the joints' torque offsets with the payload removed); a payload the data leave
    poorly determined is warned about (kind ``poorly_determined``) and is the diagnostics'
    advice; a derivative filter too narrow for the joint states' rate is warned about too (kind
    ``filter_samples``)."""

    def _detector_channels(self) -> dict[str, Any]:
        n = len(self.estimator.joint_names)
        return {"sigma_floor": np.full(n, TORQUE_NOISE_STD_FLOOR), "measurement": "joint torques"}

    def _solve_update(
        self, now: float, method: str | None, duration: float, until: float | None = None
    ) -> Update:
        update = super()._solve_update(now, method, duration, until)
        if not update.ok:
            return update
        warnings = [("torque_sign", message) for message in self.estimator.sign_warnings()]
        warnings += [("poorly_determined", message) for message in update.estimate.warnings]
        narrow = self._narrow_filter_warning(update.estimate)
        if narrow is not None:
            warnings.append(("filter_samples", narrow))
        return update.with_warnings(list(update.warnings) + warnings)

    def _narrow_filter_warning(self, estimate: PayloadTorqueEstimate) -> str | None:
        """Why the filter is too narrow for the joint states' rate (fewer than
        :data:`~inertia_id_ros.options.PAYLOAD_TORQUES_MIN_SAMPLES` of them on each side: noisy
        accelerations, and the payload's inertia with them), or ``None``."""
        period = estimate.sample_period
        half_width = self.estimator.config.filter_half_width
        if not period > 0 or samples_each_side(half_width, period) >= PAYLOAD_TORQUES_MIN_SAMPLES:
            return None
        wider = payload_half_width(period)
        return (
            f"the joint states come every {1e3 * period:.1f} ms: the {half_width:g} s "
            "derivative filter (torques_filter_half_width) spans only "
            f"{samples_each_side(half_width, period)} of them on each side, so the "
            "accelerations are noisy and the payload's inertia with them. Set it to "
            f"{wider:g} s (and fit a fit-links link model with --filter-half-width "
            f"{wider:g})."
        )

    def _summary(self, estimate: PayloadTorqueEstimate) -> str:
        return (
            f"{estimate.method}: m = {estimate.mass:.4f} ± {estimate.theta_std[0]:.4f} kg "
            f"from {estimate.n_samples} joint states, residual RMS "
            f"{estimate.residual_rms:.4g} N m"
        )

    def _estimate_diagnostics(self, estimate: PayloadTorqueEstimate) -> tuple[dict[str, str], str]:
        values, advice = super()._estimate_diagnostics(estimate)
        values.update(
            {
                "mass_std": f"{estimate.theta_std[0]:.4g}",
                "identifiable_rank": f"{estimate.rank}/{estimate.n_parameters}",
            }
        )
        return values, " ".join(estimate.warnings) or advice


def payload_session(
    kinematics: SensorKinematics,
    *,
    window_sec: float = 10.0,
    method: str = "lmi",
    solver_options: Mapping[str, Any] | None = None,
    estimate_offset: bool = True,
    flip_wrench_sign: bool = False,
    wrench_limits: Sequence[float] | None = None,
    max_input_rate_hz: float = 1000.0,
    detect_payload_change: bool = True,
    payload_change_threshold: float = ChangeDetectorConfig.threshold,
    prior: Sequence[float] | None = None,
    weighting: str = EstimatorConfig.weighting,
    bounding_ellipsoid: np.ndarray | None = None,
    wrench_calibration: SensorCalibration | None = None,
    online_calibration: OnlineCalibrationConfig | None = None,
    calibration_body: Sequence[float] | None = None,
) -> PayloadSession:
    """The payload session the node runs for its parameters of the same names (the one place
    they become an estimator and a session; ``inertia-id replay`` uses it too); ``prior`` the
    payload's CAD ``theta`` (10,) in the sensor frame (the node's ``payload_prior``, resolved);
    ``bounding_ellipsoid`` the 4x4 ``Q`` of an ellipsoid holding the payload (sensor frame) or
    ``None``; ``wrench_calibration`` the sensor's (the node's ``wrench_calibration_file``);
    ``online_calibration`` against the known ``calibration_body`` (10,) (the node's
    ``wrench_calibration_online_body``)."""
    config = EstimatorConfig(
        window_sec=window_sec,
        method=method,
        solver_options=dict(solver_options or {}),
        estimate_offset=estimate_offset,
        wrench_sign=-1.0 if flip_wrench_sign else 1.0,
        wrench_limits=None if wrench_limits is None else tuple(wrench_limits),
        prior=None if prior is None else tuple(prior),
        weighting=weighting,
        bounding_ellipsoid=None if bounding_ellipsoid is None else _ellipsoid(bounding_ellipsoid),
        wrench_calibration=wrench_calibration,
        online_calibration=online_calibration,
        calibration_body=None if calibration_body is None else tuple(calibration_body),
        **window_capacities(window_sec, max_input_rate_hz),
    )
    return PayloadSession(
        PayloadEstimator(kinematics, config),
        max_input_rate_hz,
        detect_payload_change,
        payload_change_threshold,
    )


def payload_torque_session(
    links: LinkModel,
    links_x: np.ndarray,
    frame: str,
    *,
    window_sec: float = 10.0,
    method: str = "lmi",
    solver_options: Mapping[str, Any] | None = None,
    estimate_offset: bool = True,
    max_input_rate_hz: float = 1000.0,
    detect_payload_change: bool = True,
    payload_change_threshold: float = ChangeDetectorConfig.threshold,
    prior: Sequence[float] | None = None,
    weighting: str = PayloadTorqueEstimatorConfig.weighting,
    filter_half_width: float = PayloadTorqueEstimatorConfig.filter_half_width,
    bounding_ellipsoid: np.ndarray | None = None,
) -> PayloadTorqueSession:
    """The session of a payload at ``frame`` from joint torques, ``links``'s links and drives
    known as ``links_x`` (the URDF's ``links.prior`` or a fit-links result,
    :func:`~inertia_id_ros.formats.link_result.read_link_result`); the other arguments as
    :func:`payload_session`'s (``prior``: the payload's CAD ``theta`` (10,) in ``frame``;
    ``weighting`` by default each joint by its noise level: the wrist's quieter torques carry
    the inertia). ``filter_half_width`` (s): the joint states' differentiation (as the link
    model's fit, when it comes from one); ``bounding_ellipsoid`` the 4x4 ``Q`` of an ellipsoid
    holding the payload (in ``frame``) or ``None``."""
    config = PayloadTorqueEstimatorConfig(
        frame=frame,
        window_sec=window_sec,
        method=method,
        filter_half_width=filter_half_width,
        solver_options=dict(solver_options or {}),
        estimate_offset=estimate_offset,
        prior=None if prior is None else tuple(prior),
        weighting=weighting,
        bounding_ellipsoid=None if bounding_ellipsoid is None else _ellipsoid(bounding_ellipsoid),
        **window_capacities(window_sec, max_input_rate_hz),
    )
    return PayloadTorqueSession(
        PayloadTorqueEstimator(links, links_x, config),
        max_input_rate_hz,
        detect_payload_change,
        payload_change_threshold,
    )


def _ellipsoid(q: np.ndarray) -> tuple[float, ...]:
    """A 4x4 ``Q`` row by row, as a payload config holds it (which checks its 16 values)."""
    return tuple(float(v) for v in np.ravel(q))
