"""Online whole-body identification: joint states, an IMU and several F/T sensors in, every URDF
link out, each fully physically consistent, with its identifiability.

The counterpart of :mod:`~inertia_id_ros.online.link_estimator` for a floating-base (or fixed,
suspended) robot (:class:`~inertia_id_ros.core.whole_body_model.WholeBodyModel`'s rows, solved by
:func:`~inertia_id_ros.chain.whole_body_fit.fit_whole_body`: scaled, with a prior toward the
URDF). A *sample* is a stamp of the *clock*: every F/T sensor's wrench with the same header
stamp (within ``sync_tolerance_sec``) and the joint states interpolated and differentiated there
(the shared coverage loop of :class:`~inertia_id_ros.online.estimator.OnlineEstimator`).

The clock is the IMU when the model has one (:attr:`~WholeBodyModel.imu_frame`; a floating base
needs it): its reading (angular velocity, specific force; the angular acceleration from a local
quadratic fit of the gyro around it, :func:`~inertia_id_ros.core.base_motion.gyro_derivative`'s
filter) gives the base motion (:meth:`~WholeBodyModel.base_motion_from_imu`). A ``fixed`` base
moves as its fixed frame (the root, or e.g. a stance sole) requires, still and tilted by the
model's ``fixed_tilt`` (:meth:`~WholeBodyModel.fixed_base_motion`, as offline); an IMU there
either corrects the tilt (the mean of its specific force over the samples so far, as offline over
the recording) or only checks it (``imu_tilt``; its tilt in the estimate either way). Without
an IMU a ``suspended`` base is at rest and level
(:meth:`~inertia_id_ros.core.base_motion.BaseMotion.at_rest`, as offline); the clock is then
the first live F/T sensor, else (none, or all stopped) the joint states.

Sync: a sample waits until every live sensor has a wrench at or after its stamp. A sensor whose
newest wrench is more than ``sensor_timeout_sec`` older than the newest input stamp (the IMU's;
without an IMU, any wrench's or joint state's) has *stopped*
(:attr:`WholeBodyEstimator.stopped_sensors`): samples no longer wait for it (the clock moves on
to the next live one if it was the clock), and the rows that need its wrench are dropped, as
those of a single missing wrench (counted ``missing_wrench``) and of a sample without the gyro's
derivative (``sparse_imu``; :mod:`~inertia_id_ros.online.whole_body_sync`). A contact sensor
reading exactly zero (a foot in the air) is used as it reads (no contact, no wrench) and reported
(:attr:`WholeBodyEstimator.contacts_reading_zero`). The window keeps normal equations per block
of samples (:class:`~inertia_id_ros.online.window.BlockWindow`): a humanoid's rows do not fit in
memory; with ``weighting="channel"``, per block and noise group
(:func:`~inertia_id_ros.chain.whole_body_fit.noise_groups`), each group's rows then weighted by
its inverse residual variance over the window, iterated at every solve.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import replace

import numpy as np

from inertia_id_ros.chain.ft_calibration import SensorCalibration, calibrations_as_read
from inertia_id_ros.chain.whole_body_fit import (
    Identifiability,
    NormalEquations,
    fit_whole_body,
    noise_groups,
)
from inertia_id_ros.core.base_motion import BaseMotion, tilt_from_up
from inertia_id_ros.core.whole_body_model import WholeBodyModel, WholeBodySamples
from inertia_id_ros.errors import SampleRejected
from inertia_id_ros.online import whole_body_sync
from inertia_id_ros.online.estimator import OnlineEstimator, SampleBatch
from inertia_id_ros.online.ft_calibrator import OnlineFTCalibrator
from inertia_id_ros.online.inputs import (
    ClockResetDetector,
    JointStateValidator,
    check_frame,
    check_stamp,
    check_vector,
    passes_at_once,
    rejections,
)
from inertia_id_ros.online.solving import (
    KeptForPeriod,
    check_bodies,
    ellipsoid_matrices,
    solver_failures,
)
from inertia_id_ros.online.whole_body_config import WholeBodyEstimate, WholeBodyEstimatorConfig
from inertia_id_ros.online.window import BlockWindow, SampleBuffer

IMU = "imu"
"""Input kind: an IMU reading (the window's samples when the model has an IMU)."""
SAMPLE = "sample"
"""Input kind of the window's samples without an IMU (F/T or joint-state stamps)."""
_IMU_CLOCK = -1
"""Clock index of the IMU (F/T sensors are 0 .. S - 1, the joint states S)."""
IDENTIFIABILITY_PERIOD_SEC = 10.0
"""The links' identifiability (a rank-revealing factorisation of the window's Gram matrix, as
costly as a solve) is recomputed at most this often (s of sample time) on the same window."""


class WholeBodyEstimator(OnlineEstimator[WholeBodyEstimatorConfig, BlockWindow]):
    """Identify every link of a floating-base, fixed or suspended robot online (see the module
    docstring). Thread-safe under the locking rule of :mod:`inertia_id_ros.online.estimator`.
    Raises ValueError for a floating base without an IMU, or a model with no rows (a fixed base
    without internal F/T sensors or efforts)."""

    def __init__(
        self, model: WholeBodyModel, config: WholeBodyEstimatorConfig | None = None
    ) -> None:
        config = config or WholeBodyEstimatorConfig()
        self._has_imu = model.imu_frame is not None
        if model.base == "floating" and not self._has_imu:
            raise ValueError("a floating base needs an IMU (the model's imu_frame)")
        self.model = model
        self._channels = model.channels(config.with_efforts)
        if not self._channels:
            raise ValueError(
                f"a {model.base} base without internal F/T sensors or joint "
                "efforts gives no rows to identify from"
            )
        self.sample_kind, self.sample_name = (
            (IMU, "IMU samples") if self._has_imu else (SAMPLE, "samples")
        )
        self.noise_groups, group_rows = noise_groups(model, config.with_efforts)
        """Names of the groups of rows a ``weighting="channel"`` solve weights."""
        super().__init__(
            config,
            JointStateValidator(
                model.joint_names,
                model.joint_names,
                config.ignore_unknown_joints,
                config.use_measured_velocity,
                need_effort=config.with_efforts,
            ),
            BlockWindow(
                config.window_sec,
                model.n_params,
                len(self._channels),
                config.block_sec,
                model.row_groups(config.with_efforts),
                None if config.weighting == "none" else group_rows,
            ),
        )
        self.sensor_frames = tuple(sensor.frame for sensor in model.sensors)
        capacity = config.max_pending_samples
        self._imu = SampleBuffer(capacity, t=(), w=(3,), f=(3,))
        self._wrenches = [SampleBuffer(capacity, t=(), f=(6,)) for _ in model.sensors]
        self._last_imu_t: float | None = None
        self._first_t: float | None = None
        """The first stamp of an input that sets the clock's time (s; see :meth:`_now`)."""
        self._last_wrench_t: list[float | None] = [None] * len(model.sensors)
        self._imu_clock = ClockResetDetector(config.clock_jump_sec)
        self._wrench_clocks = [ClockResetDetector(config.clock_jump_sec) for _ in model.sensors]
        """The IMU's and each sensor's clock-reset detection (as the joint states')."""
        self._is_contact = [sensor.kind == "contact" for sensor in model.sensors]
        self._ft_calibrations = dict(config.ft_calibrations)
        self._calibrated = calibrations_as_read(model.sensors, self._ft_calibrations)
        self._signs = [-1.0 if sensor.flip_wrench_sign else 1.0 for sensor in model.sensors]
        online = config.online_calibration
        self._calibrated_rows = whole_body_sync.sensor_channels(
            model, self._channels, online.sensors if online else ()
        )
        """Per sensor calibrated online: its index and the rows of its six channels."""
        if online is not None:
            self.ft_calibrator = OnlineFTCalibrator(
                self._ft_calibrations, replace(online, filter_half_width=config.filter_half_width)
            )
        self._reads_zero = [False] * len(model.sensors)
        """Per sensor: its newest wrench was exactly zero (contact sensors only)."""
        self._zero_wrenches: Counter[str] = Counter()
        self._t_consumed = -np.inf
        self._t_sampled = -np.inf
        """Stamp of the newest clock stamp made a sample (s)."""
        self._pending_clock = _IMU_CLOCK
        self._pending_index = np.zeros(0, dtype=int)
        """The clock and its buffer's indices of the stamps the last :meth:`_pending_stamps`
        returned."""
        self._depends = whole_body_sync.wrench_dependencies(model, config.with_efforts)
        """(S, C) bool: the rows that need sensor s's wrench."""
        self._imu_proper_sum = np.zeros(3)
        """A fixed base's IMU: the sum of its fixed frame's proper accelerations (m/s²)."""
        self._identifiability = KeptForPeriod[Identifiability](IDENTIFIABILITY_PERIOD_SEC)

    # ---- inputs ----------------------------------------------------------------------------

    def add_imu(
        self,
        t: float,
        angular_velocity: np.ndarray,
        linear_acceleration: np.ndarray,
        frame_id: str | None = None,
    ) -> None:
        """Buffer an IMU reading: stamp ``t`` (s), ``angular_velocity`` (3,) rad/s and
        ``linear_acceleration`` (3,) m/s² (specific force, +9.81 up at rest), both in the IMU
        frame ``frame_id`` (checked when given, not empty). Raises :class:`SampleRejected`
        (``no_imu``: the model has none, ``non_finite``, ``length_mismatch``, ``wrong_frame``,
        ``duplicate_stamp``, ``out_of_order``); when ``max_pending_samples`` wait, the oldest is
        dropped (``overflow``). Stamps going on from more than ``clock_jump_sec`` behind the
        newest accepted one (the IMU's clock reset, or one reading from the future before them)
        restart the estimator, counted in ``clock_jumps``."""
        with self._lock:
            self.received[IMU] += 1
            if self._imu_clock.is_reset(float(t), self._last_imu_t):
                self._restart_after_clock_reset(float(t))
            try:
                imu_frame = self.model.imu_frame
                if imu_frame is None:
                    raise SampleRejected(
                        "no_imu", f"the {self.model.base} base was set up without an IMU"
                    )
                w, f = (
                    check_vector(x, 3, "IMU " + name)
                    for name, x in (
                        ("angular velocity", angular_velocity),
                        ("linear acceleration", linear_acceleration),
                    )
                )
                check_frame(frame_id or None, imu_frame, "IMU reading")
                check_stamp(float(t), self._last_imu_t, "IMU")
            except SampleRejected as rejected:
                self.dropped[rejected.reason] += 1
                raise
            self._last_imu_t = float(t)
            self._note_first(float(t))
            self._count_overflow(self._imu, np.array([float(t)]))
            self._imu.append(t=float(t), w=w, f=f)

    def add_wrench(
        self, frame: str, t: float, wrench: np.ndarray, frame_id: str | None = None
    ) -> None:
        """Buffer the wrench (6,) ``[fx, fy, fz, tx, ty, tz]`` (N, N m) of the F/T sensor at URDF
        ``frame``, stamped ``t`` (s), in that frame (``frame_id`` checked when given, not empty).
        Raises :class:`SampleRejected` (``unknown_sensor``, ``non_finite``, ``length_mismatch``,
        ``wrong_frame``, ``duplicate_stamp``, ``out_of_order``); when ``max_pending_samples``
        wait, the oldest is dropped (``overflow``); a clock reset as in :meth:`add_imu`. A
        contact sensor's wrench of exactly zero is no contact (:attr:`contacts_reading_zero`)."""
        with self._lock:
            self.received[f"wrench.{frame}"] += 1
            try:
                if frame not in self.sensor_frames:
                    raise SampleRejected(
                        "unknown_sensor",
                        f"no F/T sensor at frame {frame!r} (sensors: {list(self.sensor_frames)})",
                    )
                k = self.sensor_frames.index(frame)
                if self._wrench_clocks[k].is_reset(float(t), self._last_wrench_t[k]):
                    self._restart_after_clock_reset(float(t))
                f = check_vector(wrench, 6, f"wrench of {frame!r}")
                check_frame(frame_id or None, frame, f"wrench of F/T sensor {frame!r}")
                check_stamp(float(t), self._last_wrench_t[k], f"wrench of {frame!r}")
            except SampleRejected as rejected:
                self.dropped[rejected.reason] += 1
                raise
            self._last_wrench_t[k] = float(t)
            if self._is_contact[k]:
                self._reads_zero[k] = not f.any()
                if self._reads_zero[k]:
                    self._zero_wrenches[frame] += 1
            if not self._has_imu:
                self._note_first(float(t))
            self._count_overflow(self._wrenches[k], np.array([float(t)]))
            self._wrenches[k].append(t=float(t), f=self._calibrated[k](f))

    def add_imus(
        self,
        t: np.ndarray,
        angular_velocity: np.ndarray,
        linear_acceleration: np.ndarray,
        frame_ids: Sequence[str | None] | None = None,
    ) -> list[SampleRejected]:
        """:meth:`add_imu` for ``N`` readings in turn: stamps ``t`` (N,) (s), (N, 3) each,
        ``frame_ids`` (N,) (``None``: not checked); returns the rejections, in order. A batch
        that passes every check is buffered at once."""
        t = np.asarray(t, dtype=float).reshape(-1)
        w, f = np.asarray(angular_velocity, dtype=float), np.asarray(linear_acceleration, float)
        frames = [None] * t.size if frame_ids is None else [x or None for x in frame_ids]
        with self._lock:
            imu_frame = self.model.imu_frame
            if (
                imu_frame is not None
                and w.shape == f.shape
                and passes_at_once(t, np.hstack([w, f]), 6, frames, imu_frame, self._last_imu_t)
            ):
                self.received[IMU] += t.size
                self._imu_clock.in_step()
                self._last_imu_t = float(t[-1])
                self._note_first(float(t[0]))
                self._count_overflow(self._imu, t)
                self._imu.extend(t=t, w=w, f=f)
                return []
        return rejections(self.add_imu, t, w, f, frames)

    def add_wrenches(
        self,
        frame: str,
        t: np.ndarray,
        wrenches: np.ndarray,
        frame_ids: Sequence[str | None] | None = None,
    ) -> list[SampleRejected]:
        """:meth:`add_wrench` for ``N`` wrenches (N, 6) of the F/T sensor at ``frame`` in turn,
        stamped ``t`` (N,) (s), ``frame_ids`` (N,) (``None``: not checked); returns the
        rejections, in order. A batch that passes every check is buffered at once."""
        t, wrenches = np.asarray(t, dtype=float).reshape(-1), np.asarray(wrenches, dtype=float)
        frames = [None] * t.size if frame_ids is None else [x or None for x in frame_ids]
        with self._lock:
            k = self.sensor_frames.index(frame) if frame in self.sensor_frames else -1
            if k >= 0 and passes_at_once(t, wrenches, 6, frames, frame, self._last_wrench_t[k]):
                self.received[f"wrench.{frame}"] += t.size
                self._wrench_clocks[k].in_step()
                self._last_wrench_t[k] = float(t[-1])
                if self._is_contact[k]:
                    zero = np.logical_not(np.any(wrenches, axis=1))
                    self._reads_zero[k] = bool(zero[-1])
                    if zero.any():
                        self._zero_wrenches[frame] += int(zero.sum())
                if not self._has_imu:
                    self._note_first(float(t[0]))
                self._count_overflow(self._wrenches[k], t)
                self._wrenches[k].extend(t=t, f=self._calibrated[k](wrenches))
                return []
        return rejections(lambda *sample: self.add_wrench(frame, *sample), t, wrenches, frames)

    def _count_overflow(self, buffer: SampleBuffer, t: np.ndarray) -> None:
        """Count as ``overflow`` the samples not yet processed that appending the stamps ``t``
        (N,) (s) to the full ``buffer`` pushes out (lock held)."""
        excess = len(buffer) + t.size - buffer.capacity
        if excess > 0:
            pushed = np.concatenate([buffer["t"], t])[:excess]
            if lost := int(np.count_nonzero(pushed > self._t_consumed)):
                self.dropped["overflow"] += lost

    def _joint_accepted(self, t: np.ndarray) -> None:
        if not self._has_imu and t.size:
            self._note_first(float(t[0]))

    def _note_first(self, t: float) -> None:
        """An input that sets the clock's time arrived, stamped ``t`` (s) (lock held)."""
        if self._first_t is None:
            self._first_t = t

    # ---- sync ------------------------------------------------------------------------------

    @property
    def stopped_sensors(self) -> tuple[str, ...]:
        """Frames of the F/T sensors that have stopped (see the module docstring)."""
        with self._lock:
            return tuple(self.sensor_frames[k] for k in self._stopped())

    @property
    def zero_wrenches(self) -> dict[str, int]:
        """Wrenches of exactly zero so far per contact sensor frame (a foot in the air)."""
        with self._lock:
            return dict(self._zero_wrenches)

    @property
    def contacts_reading_zero(self) -> tuple[str, ...]:
        """Frames of the live contact sensors whose newest wrench is exactly zero (no contact:
        a foot in the air, or a sensor that reads nothing)."""
        with self._lock:
            stopped = self._stopped()
            return tuple(
                frame
                for k, frame in enumerate(self.sensor_frames)
                if self._reads_zero[k] and k not in stopped
            )

    def _now(self) -> float | None:
        """The newest stamp (s) of the inputs that set the time sensors are judged by: the
        IMU's, else any wrench's or joint state's; ``None`` before any (lock held)."""
        if self._has_imu:
            return self._last_imu_t
        stamps = [t for t in (*self._last_wrench_t, self._joint_input.last_t) if t is not None]
        return max(stamps) if stamps else None

    def _stopped(self) -> list[int]:
        """Indices of the stopped sensors (lock held)."""
        now, first = self._now(), self._first_t
        if now is None or first is None:  # first is set with the first input that sets now
            return []
        timeout = self.config.sensor_timeout_sec
        return whole_body_sync.stopped_sensors(self._last_wrench_t, first, now, timeout)

    def _clock(self, stopped: list[int]) -> int:
        """The clock (lock held): the IMU; without one, the first live F/T sensor, else the
        joint states (see :data:`_IMU_CLOCK`)."""
        if self._has_imu:
            return _IMU_CLOCK
        return next(
            (k for k in range(len(self.sensor_frames)) if k not in stopped), len(self.sensor_frames)
        )

    def _clock_stamps(self, clock: int) -> np.ndarray:
        """The buffered stamps (s) of ``clock`` (lock held)."""
        if clock == _IMU_CLOCK:
            return self._imu["t"]
        if clock < len(self._wrenches):
            return self._wrenches[clock]["t"]
        return self._joints["t"]

    def _pending_stamps(self, limit: int) -> np.ndarray:
        config = self.config
        stopped = self._stopped()
        clock = self._clock(stopped)
        ready_until = np.inf
        if self._has_imu:
            if self._last_imu_t is None:
                return np.zeros(0)
            ready_until = self._last_imu_t - config.gyro_half_width  # the gyro fit's look-ahead
        ready_until = whole_body_sync.synced_until(
            ready_until, self._last_wrench_t, stopped, config.sync_tolerance_sec
        )
        t_all = self._clock_stamps(clock)
        self._pending_clock = clock
        self._pending_index = whole_body_sync.spaced_samples(
            t_all,
            self._t_consumed,
            ready_until,
            self._t_sampled,
            0.999 / config.max_sample_rate_hz,
            limit,
        )
        return t_all[self._pending_index]

    def _take_samples(self, consumed: int, ready: np.ndarray) -> np.ndarray:
        """The ready stamps' samples (:func:`~inertia_id_ros.online.whole_body_sync.sync_samples`;
        their drops counted); the readings no later sample needs are dropped from the buffers."""
        config = self.config
        imu = self._imu
        clock_t = self._clock_stamps(self._pending_clock)
        chosen = self._pending_index[ready]
        synced = whole_body_sync.sync_samples(
            clock_t[chosen],
            (imu, chosen) if self._has_imu else None,
            self._wrenches,
            config.gyro_half_width,
            config.sync_tolerance_sec,
            (self._joints["t"], self._joints["effort"]) if config.with_efforts else None,
        )
        if synced.sparse_imu:
            self.dropped["sparse_imu"] += synced.sparse_imu
        if synced.missing_wrenches:
            self.dropped["missing_wrench"] += synced.missing_wrenches
        self._t_consumed = self._t_sampled = float(clock_t[self._pending_index[consumed - 1]])
        keep_from = self._t_consumed - 2 * config.gyro_half_width
        imu.drop_front(int(np.searchsorted(imu["t"], keep_from)))
        for buffer in self._wrenches:
            buffer.drop_front(
                int(np.searchsorted(buffer["t"], self._t_consumed - config.sync_tolerance_sec))
            )
        return synced.measured

    def _pending_count(self) -> int:
        """Clock stamps not yet consumed (not all will become samples)."""
        stamps = self._clock_stamps(self._clock(self._stopped()))
        return stamps.size - int(np.searchsorted(stamps, self._t_consumed, side="right"))

    def reset(self) -> None:
        """Forget all samples, the previous solution and the counters (:attr:`zero_wrenches`
        too)."""
        super().reset()
        with self._lock:
            self._zero_wrenches.clear()

    def _clear_pending(self) -> None:
        self._imu.clear()
        for buffer in self._wrenches:
            buffer.clear()
        self._last_imu_t = self._first_t = None
        self._last_wrench_t = [None] * len(self.sensor_frames)
        self._reads_zero = [False] * len(self.sensor_frames)
        self._t_consumed = self._t_sampled = -np.inf
        self._imu_proper_sum = np.zeros(3)

    # ---- rows ------------------------------------------------------------------------------

    def _rows(self, batch: SampleBatch) -> tuple[np.ndarray, np.ndarray]:
        model = self.model
        m = whole_body_sync.SampleColumns.unpack(
            batch.measured, len(self.sensor_frames), self.config.with_efforts
        )
        if model.base == "fixed":
            tilt: tuple[float, ...] | None = None
            if self._has_imu:
                proper = model.fixed_frame_acceleration_from_imu(
                    batch.q, batch.dq, batch.ddq, m.specific_force
                )
                with self._lock:
                    self._imu_proper_sum += proper.sum(axis=0)
                    measured = tilt_from_up(self._imu_proper_sum)
                if self.config.imu_tilt == "correct":
                    tilt = tuple(measured.tolist())
            base = model.fixed_base_motion(batch.q, batch.dq, batch.ddq, tilt)
        elif self._has_imu:
            base = model.base_motion_from_imu(
                batch.q,
                batch.dq,
                batch.ddq,
                m.angular_velocity,
                m.specific_force,
                m.angular_acceleration,
            )
        else:
            base = BaseMotion.at_rest(batch.t.size)
        Y, b, _ = model.rows(
            WholeBodySamples(batch.q, batch.dq, batch.ddq, base, m.wrenches, m.efforts),
            self.config.with_efforts,
        )
        C = len(self._channels)
        Y, b = Y.reshape(-1, C, model.n_params), b.reshape(-1, C)
        dropped = m.dropped_rows(self._depends)
        Y[dropped] = 0.0
        b[dropped] = 0.0
        return Y, b

    def _feed_calibrator(
        self, calibrator: OnlineFTCalibrator, batch: SampleBatch, Y: np.ndarray, y: np.ndarray
    ) -> None:
        """Per sensor calibrated online, its readings and the wrench the URDF's links predict
        from the rows (``Y`` (N, C, P) at the prior, less ``y`` (N, C), plus the reading: the
        rows' other terms); the samples whose rows were dropped are left out."""
        m = whole_body_sync.SampleColumns.unpack(
            batch.measured, len(self.sensor_frames), self.config.with_efforts
        )
        dropped = m.dropped_rows(self._depends)
        for k, rows in self._calibrated_rows:
            frame = self.sensor_frames[k]
            measured = m.wrenches[:, k] * self._signs[k]
            reference = Y[:, rows] @ self.model.prior - y[:, rows] + measured
            reference[dropped[:, rows].any(axis=1)] = np.nan
            calibrator.add(frame, batch.t, calibrator.readings(frame, measured), reference)

    def _use_ft_calibrations(self, calibrations: Mapping[str, SensorCalibration]) -> None:
        self._ft_calibrations.update(calibrations)
        self._calibrated = calibrations_as_read(self.model.sensors, self._ft_calibrations)

    # ---- solving ---------------------------------------------------------------------------

    def solve(
        self, method: str | None = None, duration: float = 0.0, until: float | None = None
    ) -> WholeBodyEstimate:
        """Estimate from the newest ``duration`` s of the window (0: all) with ``method``
        (default ``config.method``; ``lmi``, ``pointmass`` or ``ols``), warm-started. Raises
        :class:`EstimateUnavailable` (``too_few_samples``, ``solver_failed``, ``inconsistent``:
        never returns an inconsistent link, e.g. with ``ols``); ValueError with ``until``: the
        window keeps 1 s blocks of normal equations, not samples, so it cannot solve on a past
        interval."""
        if until is not None:
            raise ValueError("the whole-body window cannot solve on a past interval (until=)")
        model = self.model
        with self._lock:
            method, options = self._solver_settings(method or None)
            n_samples, t_first, t_last = self._samples_to_solve(duration)
            equations = (
                NormalEquations(*self.window.normal_equations(duration))
                if self.config.weighting == "none"
                else self.window.channel_normal_equations(duration)
            )
            initvals = self._warm_start(None)
            weights = self._warm_weights(initvals)
            generation = self._generation
            stopped = tuple(self.sensor_frames[k] for k in self._stopped())
            imu_tilt = (
                tuple(tilt_from_up(self._imu_proper_sum).tolist())
                if self._imu_proper_sum.any()
                else None
            )
        with solver_failures(method):
            fit = fit_whole_body(
                model,
                equations,
                method,
                self.config.prior_weight,
                with_efforts=self.config.with_efforts,
                initvals=initvals,
                weighting=self.config.weighting,
                initial_weights=weights,
                bounding_ellipsoids=ellipsoid_matrices(self.config.bounding_ellipsoids, method),
                **options,
            )
        reports = check_bodies(dict(zip(model.bodies, fit.thetas)), method)
        self._keep_solution(
            fit.solution, generation, None if fit.weights is None else fit.weights.weights
        )
        ident = self._identifiability.get(
            (generation, duration), t_last, lambda: fit.identifiability
        )
        return WholeBodyEstimate(
            link_names=model.bodies,
            thetas=fit.thetas.copy(),
            labels=ident.labels,
            identified_fraction=np.asarray(ident.identified_fraction),
            offsets={k: np.asarray(v).copy() for k, v in fit.offsets.items()},
            min_pseudo_inertia_eigs=np.array([r.min_pseudo_inertia_eig for r in reports]),
            residual_rms=fit.residual_rms,
            rank=ident.rank,
            n_params=ident.n_params,
            n_samples=n_samples,
            t_first=t_first,
            t_last=t_last,
            method=method,
            solve_time=fit.solve_time,
            stopped_sensors=stopped,
            message="" if fit.solution.found else f"solver stopped early ({fit.solution.status})",
            x=fit.x.copy(),
            noise_sigma=(
                {}
                if fit.weights is None
                else dict(zip(self.noise_groups, fit.weights.sigma.tolist()))
            ),
            imu_fixed_tilt=imu_tilt,
        )
