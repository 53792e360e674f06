"""Settings and estimate of the online whole-body estimator
(:class:`~inertia_id_ros.online.whole_body_estimator.WholeBodyEstimator`): the sync of its
inputs, the gyro filter, the prior, its window's blocks and the F/T sensors' calibration; what a
solve gives (:class:`WholeBodyEstimate`)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np

from inertia_id_ros.chain.whole_body_fit import (
    DEFAULT_PRIOR_WEIGHT,
    DEFAULT_WEIGHTING,
)
from inertia_id_ros.core.base_motion import DEFAULT_GYRO_HALF_WIDTH
from inertia_id_ros.online.estimator import OnlineEstimatorConfig
from inertia_id_ros.online.ft_calibrator import OnlineCalibrationConfig
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
    online_calibration: OnlineCalibrationConfig | None = None
    """Calibrate the internal F/T sensors it names online against the URDF's links
    (:mod:`~inertia_id_ros.online.ft_calibrator`), each starting from its ``ft_calibrations``;
    ``None``: off."""

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


@dataclass(frozen=True)
class WholeBodyEstimate:
    """A fully physically consistent estimate of every identified URDF link.

    ``link_names`` (L,) and ``thetas`` (L, 10) about and in each link's frame; ``labels`` (L,)
    ``identified``, ``partly identified`` or ``prior only`` with ``identified_fraction`` (L,),
    and ``rank`` base parameters of ``n_params`` (these three of the window as it was at most
    ``IDENTIFIABILITY_PERIOD_SEC`` of sample time before ``t_last``, see
    :mod:`~inertia_id_ros.online.whole_body_estimator`); ``offsets`` {sensor frame: (6,)} (N,
    N m); ``min_pseudo_inertia_eigs`` (L,) (kg m²); ``residual_rms`` of the rows;
    ``n_samples`` clock stamps from ``t_first`` to ``t_last`` (s); ``stopped_sensors``: frames
    whose rows were dropped at the solve; ``method``; ``solve_time`` (s, every solve of a
    weighted fit's iteration); ``message``: non-empty if the solver stopped early.
    """

    link_names: tuple[str, ...]
    thetas: np.ndarray
    labels: tuple[str, ...]
    identified_fraction: np.ndarray
    offsets: dict[str, np.ndarray]
    min_pseudo_inertia_eigs: np.ndarray
    residual_rms: float
    rank: int
    n_params: int
    n_samples: int
    t_first: float
    t_last: float
    method: str
    solve_time: float
    stopped_sensors: tuple[str, ...] = ()
    message: str = ""
    x: np.ndarray = field(default_factory=lambda: np.zeros(0), repr=False)
    noise_sigma: dict[str, float] = field(default_factory=dict)
    """``weighting="channel"``: the residual standard deviation per row of each noise group
    (:func:`~inertia_id_ros.chain.whole_body_fit.noise_groups`; N or N m) that weighted the fit
    (weights ``1 / sigma^2``); empty when unweighted."""
    imu_fixed_tilt: tuple[float, float] | None = None
    """A fixed base with an IMU: the fixed frame's (roll, pitch) (rad) the IMU measures, the
    mean over every sample processed so far (``None`` without)."""
