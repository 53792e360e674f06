"""Running sums that regress measurements on a model's prediction per channel
(:class:`GainSums`), and the thresholds that call a channel's sign or scale wrong: the offline
checks (:mod:`inertia_id_ros.offline.plausibility`) and the online payload-from-torques estimator
share them."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

URDF_GAIN_SIGN = -0.5
"""A sensor or joint whose measurements follow the URDF's prediction with a gain below this
(correlation below ``-URDF_CORRELATION``) has the opposite sign: refused."""


URDF_GAIN_RANGE = (1.0 / 3.0, 3.0)
"""Gains outside this range (correlation above ``URDF_CORRELATION``) are warned about (scale:
torque constant, gear ratio, units); real sensors' gains lie within 0.6-2.65."""


URDF_CORRELATION = 0.5
"""The gain is judged only where measurement and URDF prediction correlate at least this much
(else the URDF says too little about the channel)..."""


URDF_MIN_SHARE = 0.05
"""... and where the URDF predicts at least this share of the largest prediction in the same
unit (RMS about the mean): the real KUKA's wrist joints, predicted at under 1 % of the shoulder's
torque, follow the URDF with gains of -1.4 to -5 (its wrist inertials are off), a flipped joint
with -0.95."""


@dataclass
class GainSums:
    """Running sums per subject to regress measured on predicted with an intercept per
    channel: ``n`` samples; per channel (C,) ``sp``, ``sm`` (sums), ``spp``, ``spm``, ``smm``
    (sums of products)."""

    n: int
    sp: np.ndarray
    sm: np.ndarray
    spp: np.ndarray
    spm: np.ndarray
    smm: np.ndarray

    @classmethod
    def of(cls, predicted: np.ndarray, measured: np.ndarray) -> GainSums:
        """The sums of ``predicted``, ``measured`` (N, C)."""
        p, m = np.asarray(predicted, dtype=float), np.asarray(measured, dtype=float)
        return cls(p.shape[0], p.sum(0), m.sum(0), (p * p).sum(0), (p * m).sum(0), (m * m).sum(0))

    def add(self, other: GainSums) -> GainSums:
        """The sums of both."""
        return GainSums(
            self.n + other.n,
            *(getattr(self, k) + getattr(other, k) for k in ("sp", "sm", "spp", "spm", "smm")),
        )

    def channel(self, c: int) -> GainSums:
        """The sums of channel ``c`` alone."""
        return GainSums(self.n, *(getattr(self, k)[[c]] for k in ("sp", "sm", "spp", "spm", "smm")))

    def predicted_rms(self) -> float:
        """RMS of the prediction about each channel's mean."""
        n = max(self.n, 1)
        return float(np.sqrt(max(np.sum(self.spp - self.sp**2 / n), 0.0) / (n * self.sp.size)))

    def gain(self) -> tuple[float, float]:
        """``(gain, correlation)`` of measured on predicted, each channel centred."""
        n = max(self.n, 1)
        cpp = float(np.sum(self.spp - self.sp**2 / n))
        cpm = float(np.sum(self.spm - self.sp * self.sm / n))
        cmm = float(np.sum(self.smm - self.sm**2 / n))
        if cpp <= 0 or cmm <= 0:
            return float("nan"), 0.0
        return cpm / cpp, cpm / np.sqrt(cpp * cmm)


def flipped_channels(sums: GainSums) -> list[tuple[int, float, float]]:
    """``(channel, gain, correlation)`` of each channel of ``sums`` whose measurements follow
    the prediction with the opposite sign: gain below :data:`URDF_GAIN_SIGN`, correlation below
    ``-URDF_CORRELATION``, where the prediction is at least :data:`URDF_MIN_SHARE` of the largest
    channel's (RMS about the mean)."""
    channels = [sums.channel(c) for c in range(sums.sp.size)]
    sizes = [channel.predicted_rms() for channel in channels]
    flipped = []
    for c, channel in enumerate(channels):
        gain, correlation = channel.gain()
        judged = sizes[c] >= URDF_MIN_SHARE * max(sizes)
        if judged and gain < URDF_GAIN_SIGN and correlation < -URDF_CORRELATION:
            flipped.append((c, gain, correlation))
    return flipped
