"""Settings of the online whole-body estimator
(:class:`~inertia_id_ros.online.whole_body_estimator.WholeBodyEstimator`): the sync of its
inputs, the gyro filter, the prior and its window's blocks."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from inertia_id_ros.chain.whole_body_fit import (
    DEFAULT_PRIOR_WEIGHT,
    DEFAULT_WEIGHTING,
)
from inertia_id_ros.core.base_motion import DEFAULT_GYRO_HALF_WIDTH
from inertia_id_ros.online.estimator import OnlineEstimatorConfig
from inertia_id_ros.online.solving import (
    ellipsoid_values,
)
from inertia_id_ros.options import (
    DEFAULT_IMU_TILT,
    IMU_TILT_USES,
    WHOLE_BODY_SAMPLE_RATE_HZ,
    WHOLE_BODY_SENSOR_TIMEOUT_SEC,
)

if TYPE_CHECKING:
    from inertia_id_ros.chain.ft_calibration import SensorCalibration


@dataclass
class WholeBodyEstimatorConfig(OnlineEstimatorConfig):
    """Settings of the whole-body estimator: the shared ones (samples are stamps of the clock:
    the IMU, else an F/T sensor or the joint states) and the sync, the gyro filter, the prior and
    the window's blocks (s)."""

    prior_weight: float = DEFAULT_PRIOR_WEIGHT
    """Weight of the prior toward the URDF (scaled coordinates, see
    :mod:`~inertia_id_ros.chain.whole_body_fit`)."""
    weighting: str = DEFAULT_WEIGHTING
    """``none`` or ``channel``: the noise groups weighted by their inverse residual variance
    (:func:`~inertia_id_ros.chain.whole_body_fit.fit_whole_body`)."""
    sync_tolerance_sec: float = 1e-3
    """A wrench belongs to the sample whose stamp is within this (s)."""
    sensor_timeout_sec: float = WHOLE_BODY_SENSOR_TIMEOUT_SEC
    """An F/T sensor silent for this long (behind the newest IMU stamp; without an IMU, the
    newest wrench or joint state) has stopped (s)."""
    gyro_half_width: float = DEFAULT_GYRO_HALF_WIDTH
    """Half-width of the local quadratic fit that differentiates the gyro (s)."""
    block_sec: float = 1.0
    """Samples per block of the window's normal equations (s)."""
    max_pending_samples: int = 10000
    """IMU readings and wrenches (per sensor) buffered to be processed (bounded memory)."""
    with_efforts: bool = False
    """Use the joint states' efforts (joint-torque rows)."""
    imu_tilt: str = DEFAULT_IMU_TILT
    """With a fixed base's IMU: ``correct`` (the fixed frame's tilt from the IMU) or ``check``
    (the model's ``fixed_tilt``, the IMU's reported); see
    :data:`~inertia_id_ros.options.IMU_TILT_USES`."""
    max_sample_rate_hz: float = WHOLE_BODY_SAMPLE_RATE_HZ
    """Clock stamps closer than ``1 / max_sample_rate_hz`` to the previous sample are not made
    samples (IMU readings still feed the gyro's derivative): a humanoid's rows cost milliseconds
    per sample, and the motion is slow next to the sensors' rates (Hz)."""

    bounding_ellipsoids: tuple[tuple[float, ...] | None, ...] | None = None
    """Per identified link (:attr:`WholeBodyModel.bodies` order) ``None`` or the ``Q`` (4x4, row
    by row: 16 values, link frame) of an ellipsoid holding it (Wensing et al. 2017; see
    :func:`~inertia_id_ros.chain.whole_body_fit.fit_whole_body`). ``None``: no such
    constraint."""
    ft_calibrations: Mapping[str, SensorCalibration] = field(default_factory=dict)
    """Per F/T sensor frame, the calibration (``inertia-id calibrate-ft``'s, of the readings in
    this package's sign convention) its readings go through; a sensor not in it: its readings as
    they come."""

    def __post_init__(self) -> None:
        super().__post_init__()
        self.bounding_ellipsoids = ellipsoid_values(self.bounding_ellipsoids)
        self._check_positive(
            "sync_tolerance_sec",
            "sensor_timeout_sec",
            "gyro_half_width",
            "block_sec",
            "max_sample_rate_hz",
        )
        if not self.prior_weight >= 0.0:
            raise self._invalid("prior_weight", "must be >= 0")
        if self.imu_tilt not in IMU_TILT_USES:
            raise self._invalid("imu_tilt", f"must be one of {IMU_TILT_USES}")
        self._check_at_least_one("max_pending_samples")
