"""A sampled joint trajectory, interpolated by quintic Hermite polynomials (no ROS).

:class:`ExcitationTrajectory` holds samples ``t`` (N,) s from 0, strictly increasing, and joint
positions, velocities, accelerations ``q``, ``dq``, ``ddq`` (N, n) in rad, rad/s, rad/s² (m, m/s,
m/s² for prismatic joints), columns in ``joint_names`` order. Between two samples the motion is the
quintic polynomial matching position, velocity and acceleration at both ends, so
:meth:`ExcitationTrajectory.sample` returns values that are mutually consistent (``dq`` is the time
derivative of ``q``, ``ddq`` that of ``dq``) and equal to the samples at the stamps; this is what
joint_trajectory_controller's quintic splines do with such points.

File format (``numpy.savez``): keys ``t``, ``joint_names``, ``q``, ``dq``, ``ddq``, the same as the
recorded-data NPZ of :mod:`inertia_id_ros.formats.data`.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from inertia_id_ros.errors import DataError, TrajectoryError

DEFAULT_RATE_HZ = 100.0
"""Hz: default sample rate of generated trajectories."""

START_TOLERANCE = 1e-9
"""s: how far the first stamp may be from 0."""

JOIN_TOLERANCE = 1e-6
"""rad, rad/s, rad/s²: largest jump allowed where :func:`concatenate` joins two trajectories."""

NPZ_KEYS = ("t", "joint_names", "q", "dq", "ddq")


@dataclass(frozen=True)
class ExcitationTrajectory:
    """Samples of a joint motion; see the module docstring. Validated on construction
    (:class:`~inertia_id_ros.errors.TrajectoryError` names the offending field)."""

    t: np.ndarray
    joint_names: tuple[str, ...]
    q: np.ndarray
    dq: np.ndarray
    ddq: np.ndarray

    def __post_init__(self) -> None:
        names = tuple(str(name) for name in self.joint_names)
        if not names:
            raise TrajectoryError("joint_names is empty")
        if len(set(names)) != len(names):
            raise TrajectoryError(f"joint_names has duplicates: {list(names)}")
        t = np.asarray(self.t, dtype=float)
        if t.ndim != 1 or t.size < 2:
            raise TrajectoryError(f"t must have shape (N,) with N >= 2, got {t.shape}")
        if not np.all(np.isfinite(t)):
            raise TrajectoryError("t has non-finite stamps")
        if abs(t[0]) > START_TOLERANCE:
            raise TrajectoryError(f"t must start at 0 s, starts at {t[0]:.9g} s")
        if np.any(np.diff(t) <= 0.0):
            k = int(np.argmax(np.diff(t) <= 0.0))
            raise TrajectoryError(
                f"t must be strictly increasing: t[{k + 1}] = {t[k + 1]:.9g} s "
                f"after t[{k}] = {t[k]:.9g} s"
            )
        object.__setattr__(self, "t", t)
        object.__setattr__(self, "joint_names", names)
        for field in ("q", "dq", "ddq"):
            value = np.asarray(getattr(self, field), dtype=float)
            if value.shape != (t.size, len(names)):
                raise TrajectoryError(
                    f"{field} must have shape (N, n) = {(t.size, len(names))} "
                    f"(N stamps, n joints), got {value.shape}"
                )
            if not np.all(np.isfinite(value)):
                raise TrajectoryError(f"{field} has non-finite values")
            object.__setattr__(self, field, value)

    @property
    def duration(self) -> float:
        """s: time of the last sample."""
        return float(self.t[-1])

    @property
    def n_joints(self) -> int:
        """Number of joints the trajectory moves (its columns)."""
        return len(self.joint_names)

    def fingerprint(self) -> str:
        """SHA-256 (hex) of the joint names and samples (the polynomials' coefficients): equal
        for the same motion, whatever file it came from."""
        digest = hashlib.sha256("\0".join(self.joint_names).encode())
        for array in (self.t, self.q, self.dq, self.ddq):
            digest.update(np.ascontiguousarray(array, dtype="<f8").tobytes())
        return digest.hexdigest()

    # ---- files ---------------------------------------------------------------------------

    def save_npz(self, path: str | Path) -> None:
        """Write the NPZ keys of the module docstring to ``path``."""
        np.savez(
            path,
            t=self.t,
            joint_names=np.array(self.joint_names),
            q=self.q,
            dq=self.dq,
            ddq=self.ddq,
        )

    @classmethod
    def load_npz(cls, path: str | Path) -> ExcitationTrajectory:
        """Read a file written by :meth:`save_npz`; :class:`~inertia_id_ros.errors.DataError` (one
        line naming the file) when it is unreadable, lacks a key or holds an invalid trajectory."""
        try:
            with np.load(path, allow_pickle=False) as npz:
                missing = [key for key in NPZ_KEYS if key not in npz.files]
                if missing:
                    raise DataError(
                        f"{path}: missing key(s) {', '.join(missing)} (a trajectory "
                        f"file has {', '.join(NPZ_KEYS)})"
                    )
                arrays = {key: npz[key] for key in NPZ_KEYS}
        except (OSError, ValueError) as exc:
            if isinstance(exc, DataError):
                raise
            raise DataError(f"{path}: not a readable NPZ file ({exc})") from exc
        try:
            return cls(
                t=arrays["t"],
                joint_names=tuple(np.atleast_1d(arrays["joint_names"])),
                q=arrays["q"],
                dq=arrays["dq"],
                ddq=arrays["ddq"],
            )
        except TrajectoryError as exc:
            raise DataError(f"{path}: {exc}") from exc

    # ---- evaluation ----------------------------------------------------------------------

    def sample(
        self, times: np.ndarray | Sequence[float] | float
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Positions, velocities, accelerations (M, n) at ``times`` (M,) s in ``[0, duration]``,
        from the quintic Hermite polynomial through the two neighbouring samples."""
        times = np.atleast_1d(np.asarray(times, dtype=float))
        if times.ndim != 1:
            raise TrajectoryError(f"times must be 1-D, got shape {times.shape}")
        if times.size and (
            np.min(times) < -START_TOLERANCE or np.max(times) > self.duration + START_TOLERANCE
        ):
            raise TrajectoryError(
                f"times must lie in [0, {self.duration:.6g}] s, got "
                f"[{np.min(times):.6g}, {np.max(times):.6g}] s"
            )
        k = np.clip(np.searchsorted(self.t, times, side="right") - 1, 0, self.t.size - 2)
        h = (self.t[k + 1] - self.t[k])[:, None]
        s = np.clip((times - self.t[k])[:, None] / h, 0.0, 1.0)
        p0, p1 = self.q[k], self.q[k + 1]
        v0, v1 = self.dq[k] * h, self.dq[k + 1] * h
        a0, a1 = self.ddq[k] * h**2, self.ddq[k + 1] * h**2
        dp = p1 - p0
        c2 = 0.5 * a0
        c3 = 10.0 * dp - 6.0 * v0 - 4.0 * v1 - 1.5 * a0 + 0.5 * a1
        c4 = -15.0 * dp + 8.0 * v0 + 7.0 * v1 + 1.5 * a0 - a1
        c5 = 6.0 * dp - 3.0 * v0 - 3.0 * v1 - 0.5 * a0 + 0.5 * a1
        q = p0 + s * (v0 + s * (c2 + s * (c3 + s * (c4 + s * c5))))
        dq = v0 + s * (2.0 * c2 + s * (3.0 * c3 + s * (4.0 * c4 + s * 5.0 * c5)))
        ddq = 2.0 * c2 + s * (6.0 * c3 + s * (12.0 * c4 + s * 20.0 * c5))
        return q, dq / h, ddq / h**2

    def time_scaled(self, speed_scale: float) -> ExcitationTrajectory:
        """The same path at ``speed_scale`` times the speed (< 1: slower, e.g. a dry run):
        stamps ``t / s``, velocities ``dq s``, accelerations ``ddq s²``."""
        if not np.isfinite(speed_scale) or speed_scale <= 0.0:
            raise TrajectoryError(f"speed_scale must be > 0, got {speed_scale}")
        s = float(speed_scale)
        return ExcitationTrajectory(
            self.t / s, self.joint_names, self.q.copy(), self.dq * s, self.ddq * s**2
        )


def rest_to_rest(
    q_from: np.ndarray | Sequence[float],
    q_to: np.ndarray | Sequence[float],
    duration: float,
    *,
    joint_names: Sequence[str],
    rate_hz: float = DEFAULT_RATE_HZ,
) -> ExcitationTrajectory:
    """Straight joint-space move from ``q_from`` to ``q_to`` (n,) in ``duration`` s along the
    quintic ``10τ³ − 15τ⁴ + 6τ⁵`` (zero velocity and acceleration at both ends), sampled at
    ``rate_hz`` or slightly faster so that the last stamp is exactly ``duration``."""
    q_from = np.asarray(q_from, dtype=float)
    q_to = np.asarray(q_to, dtype=float)
    if q_from.shape != (len(joint_names),) or q_to.shape != q_from.shape:
        raise TrajectoryError(
            f"q_from and q_to must have shape ({len(joint_names)},) (one per "
            f"joint), got {q_from.shape} and {q_to.shape}"
        )
    if not np.isfinite(duration) or duration <= 0.0:
        raise TrajectoryError(f"duration must be > 0 s, got {duration}")
    if not np.isfinite(rate_hz) or rate_hz <= 0.0:
        raise TrajectoryError(f"rate_hz must be > 0, got {rate_hz}")
    t = np.linspace(0.0, duration, int(np.ceil(duration * rate_hz)) + 1)
    tau = (t / duration)[:, None]
    delta = (q_to - q_from)[None, :]
    s = tau**3 * (10.0 + tau * (-15.0 + 6.0 * tau))
    ds = 30.0 * tau**2 * (1.0 - tau) ** 2 / duration
    dds = 60.0 * tau * (1.0 - tau) * (1.0 - 2.0 * tau) / duration**2
    return ExcitationTrajectory(t, tuple(joint_names), q_from + s * delta, ds * delta, dds * delta)


def concatenate(*trajectories: ExcitationTrajectory) -> ExcitationTrajectory:
    """One trajectory playing ``trajectories`` in turn: each one's stamps are shifted by the end
    of the previous one, whose last sample it must continue (its first sample, equal within
    ``JOIN_TOLERANCE``, is dropped). All must have the same joints in the same order."""
    if not trajectories:
        raise TrajectoryError("concatenate needs at least one trajectory")
    first = trajectories[0]
    t, q, dq, ddq = [first.t], [first.q], [first.dq], [first.ddq]
    end = first.duration
    for index, part in enumerate(trajectories[1:], start=1):
        if part.joint_names != first.joint_names:
            raise TrajectoryError(
                f"trajectory {index} has joints {list(part.joint_names)}, "
                f"trajectory 0 has {list(first.joint_names)}"
            )
        for field, previous in (("q", q), ("dq", dq), ("ddq", ddq)):
            jump = float(np.max(np.abs(getattr(part, field)[0] - previous[-1][-1])))
            if jump > JOIN_TOLERANCE:
                raise TrajectoryError(
                    f"trajectory {index} does not start where trajectory "
                    f"{index - 1} ends: {field} jumps by {jump:.3g}"
                )
        t.append(part.t[1:] + end)
        q.append(part.q[1:])
        dq.append(part.dq[1:])
        ddq.append(part.ddq[1:])
        end += part.duration
    return ExcitationTrajectory(
        np.concatenate(t),
        first.joint_names,
        np.concatenate(q),
        np.concatenate(dq),
        np.concatenate(ddq),
    )
