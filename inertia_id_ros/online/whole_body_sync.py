"""Whole-body samples: which stamps of the clock become samples (:func:`spaced_samples`, once
every live F/T sensor's wrench is in, :func:`synced_until`; the sensors that stopped,
:func:`stopped_sensors`), what every sensor measured at each, as one row of
columns (:func:`sync_samples`, the estimator's ``batch.measured``), and back
(:class:`SampleColumns`).

Columns of a sample (S F/T sensors, n joints)::

    [0:3] angular velocity (rad/s), [3:6] specific force (m/s²): the IMU's reading at the stamp
    [6:9] angular acceleration (rad/s²): the gyro's local quadratic fit; NaN with too few readings
    [9 : 9 + 6 S] each sensor's wrench (N, N m) within the sync tolerance of the stamp
    [9 + 6 S : 9 + 7 S] 1 where that wrench is present, 0 where it is missing
    [9 + 7 S :] the joints' efforts at the stamp, interpolated (only with efforts)

Without an IMU its nine columns stay 0. The rows of a sample that need a missing wrench
(:func:`wrench_dependencies`: the sensor's own rows, and, for a contact sensor, the base rows
and the rows of the sensors and joints it lies beyond) are dropped, not filled with zeros; so is
every row of a sample with too few IMU readings around it for the gyro's derivative (at most two
within ``gyro_half_width``: readings lost or rejected) (:meth:`SampleColumns.dropped_rows`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from inertia_id_ros.core.filtering import fit_window, local_polynomial_derivatives
from inertia_id_ros.core.whole_body_model import BaseMotion, WholeBodyModel, WholeBodySamples
from inertia_id_ros.online.window import SampleBuffer

IMU_COLUMNS = 9
"""Columns of the IMU: angular velocity, specific force, angular acceleration."""
GYRO_FIT_ORDER = 2
"""Degree of the local polynomial fit of the gyro (it needs one reading more)."""


def stopped_sensors(
    last_stamps: Sequence[float | None], first: float, now: float, timeout: float
) -> list[int]:
    """Indices of the F/T sensors stopped at ``now`` (s): whose newest wrench (``last_stamps``,
    s; ``None``: none yet, counted from ``first``, the first input's stamp) is more than
    ``timeout`` s older."""
    horizon = now - timeout
    return [k for k, last in enumerate(last_stamps) if (first if last is None else last) < horizon]


def synced_until(
    until: float, last_stamps: Sequence[float | None], stopped: Sequence[int], tolerance: float
) -> float:
    """The newest stamp (s), no later than ``until``, at or before which every live F/T sensor
    (not in ``stopped``) has a wrench, within ``tolerance`` s (``last_stamps``: each sensor's
    newest, s; ``None``: none yet, so ``-inf``): a sample waits for every live sensor."""
    for k, last in enumerate(last_stamps):
        if k not in stopped:
            until = min(until, -np.inf if last is None else last + tolerance)
    return until


def spaced_samples(
    stamps: np.ndarray, after: float, until: float, previous: float, spacing: float, limit: int
) -> np.ndarray:
    """Indices into the clock's ``stamps`` (s, increasing) of those after ``after`` and up to
    ``until`` (s) that become samples: each at least ``spacing`` s after the sample before
    (the first after ``previous``, s); at most ``limit``."""
    start = int(np.searchsorted(stamps, after, side="right"))
    stop = int(np.searchsorted(stamps, until, side="right"))
    index: list[int] = []
    last = previous
    for i in range(start, stop):
        if stamps[i] - last >= spacing:
            index.append(i)
            last = stamps[i]
            if len(index) == limit:
                break
    return np.array(index, dtype=int)


@dataclass(frozen=True)
class SyncedSamples:
    """Samples at ``N`` stamps: ``measured`` (N, columns) as the module docstring lays them out;
    ``sparse_imu`` of them lack the gyro's derivative, ``missing_wrenches`` wrenches are
    missing (counted over every sensor and sample)."""

    measured: np.ndarray
    sparse_imu: int
    missing_wrenches: int


def sync_samples(
    t: np.ndarray,
    imu: tuple[SampleBuffer, np.ndarray] | None,
    wrenches: Sequence[SampleBuffer],
    gyro_half_width: float,
    sync_tolerance_sec: float,
    efforts: tuple[np.ndarray, np.ndarray] | None = None,
) -> SyncedSamples:
    """The samples at the stamps ``t`` (N,) (s) from the buffered readings: ``imu``, the IMU's
    buffer (fields ``t``, ``w``, ``f``) and each stamp's index in it (the IMU is the clock;
    ``None`` without an IMU), the gyro's derivative from its readings within
    ``gyro_half_width`` s; each F/T sensor's ``wrenches`` (fields ``t``, ``f``; the nearest
    within ``sync_tolerance_sec`` s); ``efforts``: the joint states' stamps (M,) and efforts
    (M, n), or ``None``."""
    n, n_sensors = t.size, len(wrenches)
    measured = np.zeros((n, IMU_COLUMNS + 7 * n_sensors))  # the IMU's 9 columns stay 0 without
    sparse = missing = 0
    if n and imu is not None:
        readings, index = imu
        measured[:, :3] = readings["w"][index]
        measured[:, 3:6] = readings["f"][index]
        lo, hi = fit_window(readings["t"], t, gyro_half_width)
        fitted = hi - lo > GYRO_FIT_ORDER
        measured[~fitted, 6:9] = np.nan  # no angular acceleration: the rows are dropped
        measured[fitted, 6:9] = local_polynomial_derivatives(
            readings["t"],
            readings["w"],
            t[fitted],
            gyro_half_width,
            order=GYRO_FIT_ORDER,
            n_derivatives=1,
        )[:, 1]
        sparse = int(n - fitted.sum())
    if n:
        for k, buffer in enumerate(wrenches):
            stamps = buffer["t"]
            if not stamps.size:
                continue
            index = np.clip(np.searchsorted(stamps, t), 1, stamps.size) - 1
            nearer = np.minimum(index + 1, stamps.size - 1)
            index = np.where(np.abs(stamps[nearer] - t) < np.abs(stamps[index] - t), nearer, index)
            present = np.abs(stamps[index] - t) <= sync_tolerance_sec
            columns = slice(IMU_COLUMNS + 6 * k, IMU_COLUMNS + 6 * k + 6)
            measured[present, columns] = buffer["f"][index[present]]
            measured[:, IMU_COLUMNS + 6 * n_sensors + k] = present
        missing = n * n_sensors - int(measured[:, IMU_COLUMNS + 6 * n_sensors :].sum())
    if efforts is not None and n:
        joint_t, joint_efforts = efforts
        interpolated = np.column_stack(
            [np.interp(t, joint_t, column) for column in joint_efforts.T]
        )
        measured = np.hstack([measured, interpolated])
    return SyncedSamples(measured, sparse, missing)


@dataclass(frozen=True)
class SampleColumns:
    """The columns of ``N`` samples (the module docstring), unpacked: the IMU's
    ``angular_velocity``, ``specific_force`` and ``angular_acceleration`` (N, 3) (zero where
    ``sparse_imu`` (N,): no derivative), ``wrenches`` (N, S, 6) with ``present`` (N, S), and
    ``efforts`` (N, n) or ``None``."""

    angular_velocity: np.ndarray
    specific_force: np.ndarray
    angular_acceleration: np.ndarray
    sparse_imu: np.ndarray
    wrenches: np.ndarray
    present: np.ndarray
    efforts: np.ndarray | None

    @classmethod
    def unpack(cls, measured: np.ndarray, n_sensors: int, with_efforts: bool) -> SampleColumns:
        """The columns of ``measured`` (N, columns) of ``n_sensors`` F/T sensors, with the
        joints' efforts or not."""
        m = measured.copy()
        sparse_imu = np.isnan(m[:, 6:9]).any(axis=1)  # no angular acceleration (sparse_imu)
        m[sparse_imu, 6:9] = 0.0
        wrenches_end = IMU_COLUMNS + 6 * n_sensors
        return cls(
            angular_velocity=m[:, :3],
            specific_force=m[:, 3:6],
            angular_acceleration=m[:, 6:9],
            sparse_imu=sparse_imu,
            wrenches=m[:, IMU_COLUMNS:wrenches_end].reshape(len(m), n_sensors, 6),
            present=m[:, wrenches_end : wrenches_end + n_sensors] > 0.5,
            efforts=m[:, wrenches_end + n_sensors :] if with_efforts else None,
        )

    def dropped_rows(self, depends: np.ndarray) -> np.ndarray:
        """(N, C) the rows to drop: those that need a missing wrench (``depends`` (S, C),
        :func:`wrench_dependencies`), and every row of a sample without the gyro's derivative."""
        dropped = (~self.present).astype(float) @ depends.astype(float) > 0
        dropped[self.sparse_imu] = True
        return dropped


def wrench_dependencies(model: WholeBodyModel, with_efforts: bool) -> np.ndarray:
    """(S, C) which of a sample's ``C`` rows (``model.rows``, with the joints' efforts or not)
    change with each of the ``S`` F/T sensors' wrench (one random sample: the dependence is
    structural)."""
    n_sensors = len(model.sensors)
    rng = np.random.default_rng(0)
    n = len(model.joint_names)
    q = rng.uniform(-0.5, 0.5, (1, n))
    base = BaseMotion.at_rest(1)
    efforts = np.zeros((1, n)) if with_efforts else None
    wrenches = np.zeros((1, n_sensors, 6))
    _, b0, _ = model.rows(WholeBodySamples(q, q * 0, q * 0, base, wrenches, efforts), with_efforts)
    depends = np.zeros((n_sensors, b0.size), dtype=bool)
    for k in range(n_sensors):
        probe = wrenches.copy()
        probe[0, k] = rng.normal(size=6)
        _, b, _ = model.rows(WholeBodySamples(q, q * 0, q * 0, base, probe, efforts), with_efforts)
        depends[k] = np.abs(b - b0) > 1e-12
    return depends


def sensor_channels(
    model: WholeBodyModel, channels: Sequence[str], frames: Sequence[str]
) -> list[tuple[int, np.ndarray]]:
    """Per internal F/T sensor of ``frames``: its index in ``model.sensors`` and the rows (6,)
    of its channels among a sample's ``channels``; ValueError naming a frame that is not an
    internal sensor."""
    internal = [s.frame for s in model.sensors if s.kind == "internal"]
    unknown = sorted(set(frames) - set(internal))
    if unknown:
        raise ValueError(f"{unknown} are not internal F/T sensors ({internal})")
    sensors = [s.frame for s in model.sensors]
    return [(sensors.index(f), channels.index(f"{f}.fx") + np.arange(6)) for f in frames]
