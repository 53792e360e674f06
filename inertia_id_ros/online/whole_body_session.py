"""The whole-body session: every link of a floating-base, fixed or suspended robot from joint
states, F/T sensors and an IMU (:class:`WholeBodySession`, the rules of
:mod:`~inertia_id_ros.online.session` and the reports of its sensors), and the factory the node
and ``inertia-id replay`` build it with (:func:`whole_body_session`)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any

import numpy as np

from inertia_id_ros.core.base_motion import TILT_CHECK_TOLERANCE, tilt_difference
from inertia_id_ros.core.whole_body_model import WholeBodyModel
from inertia_id_ros.errors import SampleRejected
from inertia_id_ros.online.estimator import window_capacities
from inertia_id_ros.online.ft_calibrator import OnlineCalibrationConfig
from inertia_id_ros.online.session import Diagnostics, Session, Warning_
from inertia_id_ros.online.solving import ellipsoid_values
from inertia_id_ros.online.whole_body_config import WholeBodyEstimate, WholeBodyEstimatorConfig
from inertia_id_ros.online.whole_body_estimator import WholeBodyEstimator

if TYPE_CHECKING:
    from inertia_id_ros.chain.ft_calibration import SensorCalibration


class WholeBodySession(Session[WholeBodyEstimator, WholeBodyEstimate]):
    """Every link of a floating-base, fixed or suspended robot from joint states, F/T sensors and
    an IMU (optional on a fixed or suspended base): a
    :class:`~inertia_id_ros.online.whole_body_estimator.WholeBodyEstimate` per update (each link
    fully consistent, with its identifiability); a sensor that stops or resumes, and a contact
    sensor that starts reading zero (a foot in the air), are reported."""

    def __init__(self, estimator: WholeBodyEstimator, max_input_rate_hz: float = 1000.0) -> None:
        super().__init__(estimator, max_input_rate_hz)
        self._stopped_reported: tuple[str, ...] = ()
        self._zero_reported: tuple[str, ...] = ()

    def add_imu(
        self,
        t: float,
        angular_velocity: np.ndarray,
        linear_acceleration: np.ndarray,
        frame_id: str | None = None,
    ) -> Warning_ | None:
        """Offer an IMU reading (see ``WholeBodyEstimator.add_imu``): ``None`` when taken, else
        the warning that it was dropped."""
        try:
            self.estimator.add_imu(t, angular_velocity, linear_acceleration, frame_id)
        except SampleRejected as rejected:
            return self._dropped(rejected, "IMU reading")
        return None

    def add_wrench(
        self, frame: str, t: float, wrench: np.ndarray, frame_id: str | None = None
    ) -> Warning_ | None:
        """Offer the wrench of the F/T sensor at ``frame`` (see
        ``WholeBodyEstimator.add_wrench``): ``None`` when taken, else the warning."""
        try:
            self.estimator.add_wrench(frame, t, wrench, frame_id)
        except SampleRejected as rejected:
            return self._dropped(rejected, f"wrench of {frame!r}")
        return None

    def add_imus(
        self,
        t: np.ndarray,
        angular_velocity: np.ndarray,
        linear_acceleration: np.ndarray,
        frame_ids: Sequence[str | None] | None = None,
    ) -> list[Warning_]:
        """Offer ``N`` IMU readings (see ``WholeBodyEstimator.add_imus``): the warnings of those
        dropped."""
        return [
            self._dropped(why, "IMU reading")
            for why in self.estimator.add_imus(t, angular_velocity, linear_acceleration, frame_ids)
        ]

    def add_wrenches(
        self,
        frame: str,
        t: np.ndarray,
        wrenches: np.ndarray,
        frame_ids: Sequence[str | None] | None = None,
    ) -> list[Warning_]:
        """Offer ``N`` wrenches of the F/T sensor at ``frame`` (see
        ``WholeBodyEstimator.add_wrenches``): the warnings of those dropped."""
        return [
            self._dropped(why, f"wrench of {frame!r}")
            for why in self.estimator.add_wrenches(frame, t, wrenches, frame_ids)
        ]

    def _processing_warnings(self) -> list[Warning_]:
        warnings = super()._processing_warnings()
        stopped = self.estimator.stopped_sensors
        if stopped != self._stopped_reported:
            new = [f for f in stopped if f not in self._stopped_reported]
            back = [f for f in self._stopped_reported if f not in stopped]
            if new:
                warnings.append(
                    (
                        "sensor_stopped",
                        f"F/T sensor(s) {new} stopped (no wrench for "
                        f"{self.estimator.config.sensor_timeout_sec:g} s): the rows "
                        "that need their wrenches are dropped",
                    )
                )
            if back:
                warnings.append(("sensor_resumed", f"F/T sensor(s) {back} resumed"))
            self._stopped_reported = stopped
        zero = self.estimator.contacts_reading_zero
        new = [f for f in zero if f not in self._zero_reported]
        if new:
            warnings.append(
                (
                    "contact_zero",
                    f"contact sensor(s) {new} read zero: taken as no "
                    "contact (a foot in the air); were that foot loaded, the sensor "
                    "would be faulty and the base rows wrong",
                )
            )
        self._zero_reported = zero
        return warnings

    def diagnostics(self, now: float | None = None) -> Diagnostics:
        """The shared diagnostics (:meth:`Session.diagnostics`) and the contact sensors reading
        zero: ``contacts_reading_zero`` (frames, now) and ``zero_wrenches.<frame>`` (counts)."""
        diagnostics = super().diagnostics(now)
        estimator = self.estimator
        values = {
            **diagnostics.values,
            "contacts_reading_zero": " ".join(estimator.contacts_reading_zero),
            **{
                f"zero_wrenches.{frame}": str(count)
                for frame, count in estimator.zero_wrenches.items()
            },
        }
        return replace(diagnostics, values=values)

    def _summary(self, estimate: WholeBodyEstimate) -> str:
        counts = Counter(estimate.labels)
        stopped = (
            f"; stopped sensors (rows dropped): {list(estimate.stopped_sensors)}"
            if estimate.stopped_sensors
            else ""
        )
        return (
            f"{estimate.method}: {len(estimate.link_names)} links from "
            f"{estimate.n_samples} samples, residual RMS {estimate.residual_rms:.4g}, "
            f"{estimate.rank} of {estimate.n_params} base parameters; "
            + ", ".join(f"{n} {label}" for label, n in sorted(counts.items()))
            + stopped
        )

    def _estimate_diagnostics(self, estimate: WholeBodyEstimate) -> tuple[dict[str, str], str]:
        counts = Counter(estimate.labels)
        values = {
            "base_parameter_rank": f"{estimate.rank}/{estimate.n_params}",
            "stopped_sensors": " ".join(estimate.stopped_sensors),
            "min_pseudo_inertia_eig": f"{estimate.min_pseudo_inertia_eigs.min():.4g}",
            **{f"links.{label.replace(' ', '_')}": str(n) for label, n in counts.items()},
            **{
                f"noise_sigma.{group}": f"{sigma:.4g}"
                for group, sigma in estimate.noise_sigma.items()
            },
        }
        advice = (
            f"F/T sensor(s) {list(estimate.stopped_sensors)} stopped: their rows are dropped"
            if estimate.stopped_sensors
            else ""
        )
        model, config = self.estimator.model, self.estimator.config
        if estimate.imu_fixed_tilt is not None:
            values["fixed_tilt.imu_deg"] = " ".join(
                f"{a:.2f}" for a in np.degrees(estimate.imu_fixed_tilt)
            )
            apart = tilt_difference(model.fixed_tilt, estimate.imu_fixed_tilt)
            if config.imu_tilt == "check" and apart > TILT_CHECK_TOLERANCE:
                tilted = (
                    f"the IMU tilts the fixed frame {np.degrees(apart):.1f} deg from the given "
                    "fixed_tilt (imu_tilt 'correct' uses the IMU's)"
                )
                advice = "; ".join(filter(None, (advice, tilted)))
        return values, advice


def whole_body_session(
    model: WholeBodyModel,
    *,
    window_sec: float = 10.0,
    method: str = "lmi",
    solver_options: Mapping[str, Any] | None = None,
    prior_weight: float | None = None,
    with_efforts: bool = False,
    max_input_rate_hz: float = 1000.0,
    sensor_timeout_sec: float | None = None,
    sample_rate_hz: float | None = None,
    weighting: str = WholeBodyEstimatorConfig.weighting,
    imu_tilt: str | None = None,
    bounding_ellipsoids: Sequence[np.ndarray | None] | None = None,
    ft_calibrations: Mapping[str, SensorCalibration] | None = None,
    online_calibration: OnlineCalibrationConfig | None = None,
) -> WholeBodySession:
    """The whole-body session the node runs for its parameters of the same names (None: the
    :class:`WholeBodyEstimatorConfig` default; ``sample_rate_hz`` is its
    ``max_sample_rate_hz``; ``bounding_ellipsoids`` per identified link ``None`` or its ``Q``
    (4x4, link frame); ``ft_calibrations`` per F/T frame its calibration, the node's
    ``ft_calibration_file``; ``online_calibration``: calibrate the internal sensors online, the
    node's ``ft_calibration_online``). A fixed base's frame and tilt are the ``model``'s."""
    extra: dict[str, Any] = {
        k: v
        for k, v in (
            ("prior_weight", prior_weight),
            ("sensor_timeout_sec", sensor_timeout_sec),
            ("max_sample_rate_hz", sample_rate_hz),
            ("imu_tilt", imu_tilt),
            ("bounding_ellipsoids", ellipsoid_values(bounding_ellipsoids)),
            ("ft_calibrations", ft_calibrations),
            ("online_calibration", online_calibration),
        )
        if v is not None
    }
    config = WholeBodyEstimatorConfig(
        window_sec=window_sec,
        method=method,
        solver_options=dict(solver_options or {}),
        with_efforts=with_efforts,
        weighting=weighting,
        **extra,
        **window_capacities(window_sec, max_input_rate_hz),
    )
    return WholeBodySession(WholeBodyEstimator(model, config), max_input_rate_hz)
