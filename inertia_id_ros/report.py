"""PNG report of a replay (:mod:`inertia_id_ros.replay`): how the estimate converged.

Six panels over bag time (s since the first message): mass, COM (mm) and inertia about the COM
(1e-3 kg m^2, ``geometry_msgs/Inertia`` entries) each with its +-1 sigma band (first-order
propagation of ``theta``'s covariance, :mod:`inertia_id_ros.covariance`) and, if given, the truth
dashed; the residual RMS; the consistency margin ``lambda_min(J)``; the excitation (condition number
of the column-scaled regressor). The value axes zoom on the later three quarters of the updates
(the converging part). Rendered offscreen with matplotlib's Agg canvas (no display, no pyplot state).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from inertia_id_ros.covariance import com_covariance, inertia_com_covariance
from inertia_id_ros.inertia import inertia_from_theta, inertia_to_msg_order
from inertia_id_ros.replay import Replay

INERTIA_NAMES = ("ixx", "ixy", "ixz", "iyy", "iyz", "izz")
ZOOM_FROM = 0.25
"""Value axes cover the updates after this fraction of them (and the truth)."""


def _series(replay: Replay) -> dict[str, np.ndarray]:
    """Per estimate: elapsed time, mass/COM/inertia values and standard deviations, margins."""
    rows: dict[str, list] = {key: [] for key in ("t", "value", "std", "residual", "margin",
                                                   "condition")}
    for update in replay.estimates:
        estimate = update.estimate
        theta, covariance = estimate.theta, estimate.covariance
        mass, com, inertia_com = inertia_from_theta(theta)
        rows["t"].append(update.time - replay.start_time)
        rows["value"].append(np.concatenate([[mass], 1e3 * com,
                                             1e3 * inertia_to_msg_order(inertia_com)]))
        rows["std"].append(np.sqrt(np.clip(np.concatenate([
            [covariance[0, 0]], 1e6 * np.diag(com_covariance(theta, covariance)),
            1e6 * np.diag(inertia_com_covariance(theta, covariance))]), 0.0, None)))
        rows["residual"].append(estimate.residual_rms)
        rows["margin"].append(estimate.min_pseudo_inertia_eig)
        rows["condition"].append(estimate.condition_number)
    return {key: np.array(value) for key, value in rows.items()}


def _truth_values(theta: np.ndarray) -> np.ndarray:
    mass, com, inertia_com = inertia_from_theta(theta)
    return np.concatenate([[mass], 1e3 * com, 1e3 * inertia_to_msg_order(inertia_com)])


def _band_panel(axis, t: np.ndarray, values: np.ndarray, stds: np.ndarray, labels: list[str],
                truth: np.ndarray | None, unit: str) -> None:
    later = slice(int(ZOOM_FROM * t.size), None)
    low, high = [], []
    for k, label in enumerate(labels):
        line, = axis.plot(t, values[:, k], lw=1.2, label=label)
        axis.fill_between(t, values[:, k] - stds[:, k], values[:, k] + stds[:, k],
                          color=line.get_color(), alpha=0.25, lw=0)
        low.append((values[later, k] - stds[later, k]).min())
        high.append((values[later, k] + stds[later, k]).max())
        if truth is not None:
            axis.axhline(truth[k], color=line.get_color(), ls="--", lw=0.9)
            low.append(truth[k])
            high.append(truth[k])
    pad = 0.08 * (max(high) - min(low)) or 1e-6
    axis.set_ylim(min(low) - pad, max(high) + pad)
    axis.set_ylabel(unit)
    axis.legend(loc="upper right", fontsize=7, ncol=min(len(labels), 3))
    axis.grid(alpha=0.3)


def plot_replay(replay: Replay, path: str | Path, truth_theta: np.ndarray | None = None,
                title: str | None = None, dpi: int = 80) -> None:
    """Write the PNG report of ``replay`` to ``path`` (see the module docstring);
    ``truth_theta`` (10,) (sensor frame) draws the truth. Raises ``ValueError`` if the replay
    has no estimate."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    series = _series(replay)
    if series["t"].size == 0:
        raise ValueError("the replay gave no estimate to plot")
    truth = None if truth_theta is None else _truth_values(np.asarray(truth_theta, float))
    t = series["t"]
    figure = Figure(figsize=(11, 9))
    FigureCanvasAgg(figure)  # offscreen; no pyplot state
    axes = figure.subplots(3, 2, sharex=True)
    panels = ((axes[0, 0], slice(0, 1), ["m"], "mass (kg)"),
              (axes[0, 1], slice(1, 4), ["cx", "cy", "cz"], "COM (mm)"),
              (axes[1, 0], slice(4, 10), list(INERTIA_NAMES), "inertia about COM (1e-3 kg m²)"))
    for axis, columns, labels, unit in panels:
        _band_panel(axis, t, series["value"][:, columns], series["std"][:, columns], labels,
                    None if truth is None else truth[columns], unit)
    axes[1, 1].plot(t, series["residual"], color="tab:gray")
    axes[1, 1].set_ylabel("residual RMS (N, N m)")
    axes[2, 0].semilogy(t, np.clip(series["margin"], 1e-12, None), color="tab:green")
    axes[2, 0].set_ylabel("consistency margin λmin(J) (kg m²)")
    axes[2, 1].semilogy(t, series["condition"], color="tab:purple")
    axes[2, 1].set_ylabel("condition number (scaled Y)")
    for axis in axes[1:, :].ravel():
        axis.grid(alpha=0.3, which="both")
    for axis in axes[2]:
        axis.set_xlabel("bag time (s)")
    final = replay.final
    summary = (f"final m = {final.mass:.4f} ± {final.theta_std[0]:.4f} kg from "
               f"{final.n_samples} samples")
    figure.suptitle(title or f"{Path(replay.source).name}: {final.method}, window "
                    f"{replay.config.window_sec:g} s, updates at {replay.update_rate_hz:g} Hz; "
                    f"{summary}", fontsize=10)
    figure.tight_layout(rect=(0, 0, 1, 0.97))
    figure.savefig(path, dpi=dpi)
