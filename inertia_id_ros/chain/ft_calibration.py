"""In-situ F/T sensor calibration from a reference wrench (Andrade Chavez et al., Humanoids 2016).

A sensor's reading ``r`` (N, 6) (the logged wrench, or raw counts) and the reference ``ŵ`` (N, 6)
the model of what the sensor carries predicts (N, N m, the sensor frame) give the calibration
``ŵ ≈ C r + o``: ``C`` (6, 6) full, or per-axis gains ``C = diag(g) C₀``, regularised toward the
current ``C₀``, ``min Σ‖ŵ − C r − o‖² + λ‖C − C₀‖²``. The offset is removed by centring both
signals, so each output axis ``i`` is one ridge regression toward ``C₀``'s row ``i``, with its own
``λ`` chosen by cross-validation on contiguous time blocks (:func:`fit_ft_calibration`).

API for offline and online use: fit from arrays (:func:`fit_ft_calibration`), apply to arrays
(:meth:`FTCalibration.apply`), the covariance of each row (:attr:`FTCalibration.row_covariance`).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from inertia_id_ros.core.whole_body_model import FTSensor, WholeBodyModel, WholeBodySamples
from inertia_id_ros.errors import ProblemError
from inertia_id_ros.options import FT_CALIBRATION_KINDS

DEFAULT_LAMBDAS = (0.0, 1e-4, 1e-3, 1e-2, 1e-1, 1.0, 10.0, 100.0)
"""Candidate ``λ`` relative to the mean variance of the centred readings per sample."""
DEFAULT_FOLDS = 5
"""Contiguous time blocks of the cross-validation of ``λ``."""
_CHUNK = 400  # samples per block of model rows


@dataclass(frozen=True)
class FTCalibration:
    """A sensor's calibration: ``matrix`` (6, 6) and ``offset`` (6,) with ``w = matrix r +
    offset`` (N, N m); ``current`` (6, 6) the calibration it replaces (``C₀``); ``kind`` (one of
    :data:`FT_CALIBRATION_KINDS`); ``lambdas`` (6,) the absolute regularisation per output axis;
    ``row_covariance`` (6, 6, 6): per output axis the covariance of its matrix row;
    ``matrix_std``, ``offset_std`` the standard errors; ``n_samples`` fitted."""

    matrix: np.ndarray
    offset: np.ndarray
    current: np.ndarray
    kind: str
    lambdas: np.ndarray
    row_covariance: np.ndarray
    matrix_std: np.ndarray
    offset_std: np.ndarray
    n_samples: int

    def apply(self, readings: np.ndarray) -> np.ndarray:
        """(N, 6) wrenches of ``readings`` (N, 6) (or (6,))."""
        return np.asarray(readings, dtype=float) @ self.matrix.T + self.offset


@dataclass(frozen=True)
class SensorCalibration:
    """A sensor's calibration as applied: ``matrix`` (6, 6) and ``offset`` (6,) (N, N m),
    ``wrench = matrix reading + offset``, readings in this package's sign convention (the wrench
    the sensor exerts on the body beyond it, in its frame)."""

    frame: str
    matrix: np.ndarray
    offset: np.ndarray

    def apply(self, readings: np.ndarray) -> np.ndarray:
        """(N, 6) calibrated wrenches of ``readings`` (N, 6) (or (6,) of one)."""
        return np.asarray(readings, dtype=float) @ self.matrix.T + self.offset

    def before_sign(self, sign: float) -> SensorCalibration:
        """The same calibration for readings taken before their sign ``sign`` (±1): the reading
        ``r`` of a sensor whose convention is ``sign r`` maps to ``sign (matrix sign r + offset)
        = matrix r + sign offset``."""
        return SensorCalibration(self.frame, self.matrix, sign * self.offset)


def calibrations_as_read(
    sensors: Sequence[FTSensor], calibrations: Mapping[str, SensorCalibration]
) -> list[Callable[[np.ndarray], np.ndarray]]:
    """Per sensor of ``sensors``, the function calibrating its readings (6,) or (N, 6) as they
    come, before the sign the model gives them (``flip_wrench_sign``), by its calibration in
    ``calibrations`` (by frame; without one: the readings unchanged); ValueError naming a
    calibrated frame that is not one of the sensors."""
    frames = [s.frame for s in sensors]
    unknown = sorted(set(calibrations) - set(frames))
    if unknown:
        raise ValueError(f"ft_calibrations: {unknown} are not F/T sensors ({frames})")
    return [
        np.asarray
        if s.frame not in calibrations
        else calibrations[s.frame].before_sign(-1.0 if s.flip_wrench_sign else 1.0).apply
        for s in sensors
    ]


def identity_calibration() -> np.ndarray:
    """(6, 6) the calibration of a reading that is already the wrench."""
    return np.eye(6)


def check_calibration_matrix(matrix: np.ndarray, name: str) -> np.ndarray:
    """``matrix`` as a (6, 6) float array; :class:`ProblemError` naming ``name`` when it is not
    6×6, not finite or singular (it could not map readings to wrenches)."""
    m = np.asarray(matrix, dtype=float)
    if m.shape != (6, 6):
        raise ProblemError(f"{name}: a calibration matrix must be 6x6, got shape {m.shape}")
    if not np.all(np.isfinite(m)):
        raise ProblemError(f"{name}: the calibration matrix has non-finite entries")
    if np.linalg.cond(m) > 1e12:
        raise ProblemError(f"{name}: the calibration matrix is singular (condition > 1e12)")
    return m


def _design(readings: np.ndarray, current: np.ndarray, kind: str, axis: int) -> np.ndarray:
    """(N, k) the regressors of output ``axis``: the readings (full) or the current
    calibration's wrench on that axis (gains, k = 1)."""
    if kind == "full":
        return readings
    return readings @ current[axis][:, None]


def _ridge(
    X: np.ndarray, y: np.ndarray, prior: np.ndarray, lam: float
) -> tuple[np.ndarray, np.ndarray]:
    """``(β, A⁻¹)``: ``β = argmin ‖y − X β‖² + lam ‖β − prior‖²`` (X, y centred), ``A = XᵀX +
    lam I``."""
    A = X.T @ X + lam * np.eye(X.shape[1])
    inverse = np.linalg.pinv(A)
    return inverse @ (X.T @ y + lam * prior), inverse


def _select_lambda(
    X: np.ndarray, y: np.ndarray, prior: np.ndarray, candidates: np.ndarray, folds: int
) -> float:
    """The candidate ``λ`` (absolute, per whole-data sample count; ties: the largest) with the
    least squared error predicting each of ``folds`` contiguous blocks from the others (each
    block centred with its training part's means: the offset is refitted per fold)."""
    n = len(y)
    edges = np.linspace(0, n, folds + 1).astype(int)
    errors = np.zeros(len(candidates))
    for start, stop in zip(edges[:-1], edges[1:]):
        test = np.zeros(n, dtype=bool)
        test[start:stop] = True
        Xt, yt = X[~test], y[~test]
        mx, my = Xt.mean(axis=0), yt.mean()
        for c, lam in enumerate(candidates):
            beta, _ = _ridge(Xt - mx, yt - my, prior, lam * (~test).sum() / n)
            errors[c] += np.sum((y[test] - my - (X[test] - mx) @ beta) ** 2)
    best = np.flatnonzero(errors <= errors.min() * (1.0 + 1e-9) + 1e-300)
    return float(candidates[best[-1]])  # ties: the strongest pull toward the current


def correlation_time(residual: np.ndarray, max_lag: int = 200) -> float:
    """The integrated autocorrelation time (samples; 1 for white noise) of ``residual`` (N,):
    ``1 + 2 Σ ρ_k`` over the lags up to the first non-positive correlation (at most
    ``max_lag``). Residuals of smoothed readings against a filtered reference are correlated
    over the filter's width: their variance over ``N`` samples is that of ``N / τ``
    independent ones."""
    r = np.asarray(residual, dtype=float) - np.mean(residual)
    variance = float(r @ r)
    tau = 1.0
    if variance <= 0.0:
        return tau
    for k in range(1, min(max_lag, len(r) // 4)):
        rho = float(r[:-k] @ r[k:]) / variance
        if rho <= 0.0:
            break
        tau += 2.0 * rho
    return tau


def fit_ft_calibration(
    readings: np.ndarray,
    reference: np.ndarray,
    current: np.ndarray | None = None,
    kind: str = "full",
    lambdas: tuple[float, ...] = DEFAULT_LAMBDAS,
    folds: int = DEFAULT_FOLDS,
) -> FTCalibration:
    """The calibration mapping ``readings`` (N, 6) onto ``reference`` (N, 6), regularised toward
    ``current`` (6, 6; default the identity: the readings are the current wrench); ``kind`` per
    :data:`FT_CALIBRATION_KINDS`; each output axis's ``λ`` from ``lambdas`` (relative, see
    :data:`DEFAULT_LAMBDAS`) by ``folds``-fold cross-validation on contiguous blocks. Standard
    errors from the residual variance per axis, widened by the residual's
    :func:`correlation_time` (they still hold no bias: a reference whose model is wrong, or
    axes the motion does not separate)."""
    if kind not in FT_CALIBRATION_KINDS:
        raise ProblemError(f"calibration kind {kind!r} is not one of {FT_CALIBRATION_KINDS}")
    r = np.asarray(readings, dtype=float)
    w = np.asarray(reference, dtype=float)
    if r.ndim != 2 or r.shape[1] != 6 or w.shape != r.shape:
        raise ProblemError(f"readings {r.shape} and reference {w.shape} must both be (N, 6)")
    if len(r) < 4 * folds:
        raise ProblemError(f"{len(r)} samples are too few to calibrate ({4 * folds} at least)")
    C0 = identity_calibration() if current is None else check_calibration_matrix(current, "current")
    n = len(r)
    matrix, lams = np.zeros((6, 6)), np.zeros(6)
    covariance = np.zeros((6, 6, 6))
    offset_var = np.zeros(6)
    for i in range(6):
        X = _design(r, C0, kind, i)
        prior = C0[i] if kind == "full" else np.ones(1)
        scale = float(np.mean(np.var(X, axis=0))) or 1.0
        lam = _select_lambda(X, w[:, i], prior, scale * n * np.asarray(lambdas), folds)
        mx, my = X.mean(axis=0), w[:, i].mean()
        beta, inverse = _ridge(X - mx, w[:, i] - my, prior, lam)
        residual = w[:, i] - my - (X - mx) @ beta
        sigma2 = float(residual @ residual) / max(n - X.shape[1] - 1, 1)
        sigma2 *= correlation_time(residual)
        Xc = X - mx
        cov_beta = sigma2 * inverse @ (Xc.T @ Xc) @ inverse
        if kind == "full":
            matrix[i], covariance[i] = beta, cov_beta
        else:
            matrix[i] = beta[0] * C0[i]
            covariance[i] = cov_beta[0, 0] * np.outer(C0[i], C0[i])
        lams[i] = lam
        offset_var[i] = sigma2 / n + float(r.mean(axis=0) @ covariance[i] @ r.mean(axis=0))
    offset = w.mean(axis=0) - matrix @ r.mean(axis=0)
    matrix_std = np.sqrt(np.maximum(np.einsum("ijj->ij", covariance), 0.0))
    return FTCalibration(
        matrix, offset, C0, kind, lams, covariance, matrix_std, np.sqrt(offset_var), n
    )


def fitted_offset(readings: np.ndarray, reference: np.ndarray, current: np.ndarray) -> np.ndarray:
    """(6,) the offset that best maps ``readings`` through ``current`` onto ``reference`` (the
    current calibration with a fitted offset: the yardstick of a new calibration)."""
    return np.mean(np.asarray(reference) - np.asarray(readings) @ current.T, axis=0)


def rms_per_axis(error: np.ndarray) -> np.ndarray:
    """(6,) the RMS over samples of ``error`` (N, 6) per axis."""
    return np.sqrt(np.mean(np.asarray(error) ** 2, axis=0))


def sensor_references(
    model: WholeBodyModel, samples: WholeBodySamples, link_prior: np.ndarray | None = None
) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """Per internal sensor of ``model`` (frame): ``(readings, reference)`` (N, 6) each, as
    logged (the sensor's own sign convention): its recorded wrenches and the wrench the links
    ``link_prior`` (L, 10) (default :attr:`WholeBodyModel.link_prior`: the URDF's) predict from
    the motion of ``samples`` (every link known: no parameter is fitted)."""
    known = dataclasses.replace(model, bodies=())
    if link_prior is not None:
        known = dataclasses.replace(known, link_prior=np.asarray(link_prior, dtype=float))
    channels = known.channels()
    frames = [s.frame for s in model.sensors]
    signs = {s.frame: (-1.0 if s.flip_wrench_sign else 1.0) for s in model.sensors}
    parts: dict[str, list[np.ndarray]] = {}
    for start in range(0, len(samples), _CHUNK):
        chunk = samples.subset(slice(start, start + _CHUNK))
        for (rows, _), (_, right) in zip(known.row_groups(), known.group_rows(chunk)):
            frame = channels[rows[0]].rsplit(".", 1)[0]
            if frame == "base":
                continue
            measured = chunk.wrenches[:, frames.index(frame)] * signs[frame]
            parts.setdefault(frame, []).append((measured - right) * signs[frame])
    return {
        frame: (samples.wrenches[:, frames.index(frame)], np.concatenate(blocks))
        for frame, blocks in parts.items()
    }


def smooth_readings(readings: np.ndarray, period: float, half_width: float) -> np.ndarray:
    """(N, 6) ``readings`` smoothed by the local quadratic fit over ± ``half_width`` s (sample
    ``period`` s; Savitzky–Golay, its closed-form weights) that differentiates the joint states:
    the reference is as smooth, and white sensor noise is no calibration error. The first and
    last half-windows are kept as they are."""
    m = max(int(round(half_width / period)), 1)
    out = np.array(readings, dtype=float)
    if len(out) < 2 * m + 1:
        return out
    k = np.arange(-m, m + 1, dtype=float)
    weights = (3 * (3 * m**2 + 3 * m - 1) - 15 * k**2) / ((2 * m - 1) * (2 * m + 1) * (2 * m + 3))
    for axis in range(out.shape[1]):
        out[m:-m, axis] = np.convolve(readings[:, axis], weights, mode="valid")
    return out


@dataclass(frozen=True)
class HeldOutErrors:
    """RMS errors per axis (6,) (N, N m) on held-out samples of the ``current`` calibration with
    its offset fitted on the training samples, and of the new one (``calibrated``)."""

    current: np.ndarray
    calibrated: np.ndarray

    @property
    def ratio(self) -> np.ndarray:
        """(6,) calibrated / current."""
        return self.calibrated / np.maximum(self.current, 1e-300)


def held_out_errors(
    calibration: FTCalibration,
    train: tuple[np.ndarray, np.ndarray],
    test: tuple[np.ndarray, np.ndarray],
) -> HeldOutErrors:
    """How ``calibration`` and its current one (offset fitted on ``train``) predict the
    reference of ``test`` (each ``(readings, reference)``, (N, 6))."""
    offset = fitted_offset(*train, calibration.current)
    readings, reference = test
    return HeldOutErrors(
        rms_per_axis(readings @ calibration.current.T + offset - reference),
        rms_per_axis(calibration.apply(readings) - reference),
    )


def reading_prediction_error(
    readings: np.ndarray, reference: np.ndarray, folds: int = DEFAULT_FOLDS
) -> float:
    """How well ``reference`` (N, 6) predicts the raw ``readings`` (N, 6) through an affine map
    fitted on the other contiguous blocks: the held-out squared error summed over ``folds``
    blocks, each axis divided by its readings' variance. The readings' own noise is the same
    whatever filter made the reference, so the filter with the least error made the best
    reference (the score by which a calibration chooses its derivative filter)."""
    n = len(readings)
    X = np.column_stack([reference, np.ones(n)])
    edges = np.linspace(0, n, folds + 1).astype(int)
    total = 0.0
    variance = np.maximum(np.var(readings, axis=0), 1e-300)
    for start, stop in zip(edges[:-1], edges[1:]):
        test = np.zeros(n, dtype=bool)
        test[start:stop] = True
        beta = np.linalg.lstsq(X[~test], readings[~test], rcond=None)[0]
        total += float(np.sum((readings[test] - X[test] @ beta) ** 2 / variance))
    return total
