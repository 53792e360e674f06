"""PNG report of a payload's replay (:mod:`inertia_id_ros.offline.replay`; the payload modes'
:class:`~inertia_id_ros.modes.payload_replay.PayloadReplay`): how the estimate converged.

Six panels over bag time (s since the first message). Mass (g), COM (mm, sensor frame) and inertia
about the COM (kg mm², ``geometry_msgs/Inertia`` entries) are drawn as deviations from a reference
(the truth when given, else the final estimate; its values are in the legends) with their +-1 sigma
bands (first-order propagation of ``theta``'s covariance, :mod:`inertia_id_ros.core.covariance`), so
every curve converges to 0 on one scale; their value axes zoom on the later three quarters of the
updates. Then the residual RMS, the consistency margin ``lambda_min(J)`` and the excitation
(condition number of the column-scaled regressor). Rendered offscreen with matplotlib's Agg canvas
(no display, no pyplot state).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from inertia_id_ros.core.covariance import com_covariance, inertia_com_covariance
from inertia_id_ros.core.inertia import inertia_from_theta, inertia_to_msg_order
from inertia_id_ros.core.regressors import WRENCH_CHANNEL_NAMES

QUANTITIES: tuple[str, ...] = ("m", "cx", "cy", "cz", "ixx", "ixy", "ixz", "iyy", "iyz", "izz")
"""Plotted quantities, in the order of :func:`quantities`."""
SCALE = np.array([1e3] * 1 + [1e3] * 3 + [1e6] * 6)
"""SI -> plotted units: g, mm, kg mm²."""
ZOOM_FROM = 0.25
"""Value axes of the deviations cover the updates after this fraction of them."""


def quantities(
    theta: np.ndarray, covariance: np.ndarray | None = None
) -> tuple[np.ndarray, np.ndarray | None]:
    """(10,) mass, COM, inertia about the COM (msg order) of ``theta`` (SI), and their standard
    deviations from ``covariance`` (10, 10) (``None`` without it)."""
    mass, com, inertia_com = inertia_from_theta(theta)
    values = np.concatenate([[mass], com, inertia_to_msg_order(inertia_com)])
    if covariance is None:
        return values, None
    variances = np.concatenate(
        [
            [covariance[0, 0]],
            np.diag(com_covariance(theta, covariance)),
            np.diag(inertia_com_covariance(theta, covariance)),
        ]
    )
    return values, np.sqrt(np.clip(variances, 0.0, None))


def _band_panel(
    axis,
    t: np.ndarray,
    deviation: np.ndarray,
    std: np.ndarray,
    reference: np.ndarray,
    names: tuple[str, ...],
    unit: str,
) -> None:
    later = slice(int(ZOOM_FROM * t.size), None)
    for k, name in enumerate(names):
        (line,) = axis.plot(t, deviation[:, k], lw=1.2, label=f"{name} ({reference[k]:.4g})")
        axis.fill_between(
            t,
            deviation[:, k] - std[:, k],
            deviation[:, k] + std[:, k],
            color=line.get_color(),
            alpha=0.22,
            lw=0,
        )
    axis.axhline(0.0, color="black", ls="--", lw=0.8)
    low = min(0.0, float((deviation[later] - std[later]).min()))
    high = max(0.0, float((deviation[later] + std[later]).max()))
    pad = 0.1 * (high - low) or 1e-9
    axis.set_ylim(low - pad, high + pad)
    axis.set_ylabel(f"deviation ({unit})")
    axis.legend(
        loc="upper right",
        fontsize=7,
        ncol=min(len(names), 3),
        title_fontsize=7,
        title=f"estimate − reference ({unit}); reference",
    )
    axis.grid(alpha=0.3)


def plot_replay(
    replay: Any,
    path: str | Path,
    truth_theta: np.ndarray | None = None,
    title: str | None = None,
    dpi: int = 80,
) -> None:
    """Write the PNG report of ``replay`` (a payload's: its updates, ``sensor_frame``,
    ``offset_names`` and estimator ``config``) to ``path`` (see the module docstring);
    ``truth_theta`` (10,) (sensor frame) is the reference when given. Raises ``ValueError`` if
    the replay has no estimate."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    estimates = replay.estimates
    if not estimates:
        raise ValueError("the replay gave no estimate to plot")
    final = replay.final
    t = np.array([update.time - replay.start_time for update in estimates])
    values, stds = zip(*(quantities(u.estimate.theta, u.estimate.covariance) for u in estimates))
    reference = quantities(final.theta if truth_theta is None else np.asarray(truth_theta))[0]
    deviation = (np.array(values) - reference) * SCALE
    std = np.array(stds) * SCALE
    figure = Figure(figsize=(11, 9))
    FigureCanvasAgg(figure)  # offscreen
    axes = figure.subplots(3, 2, sharex=True)
    panels: tuple[tuple[Any, slice, str], ...] = (
        (axes[0, 0], slice(0, 1), "g"),
        (axes[0, 1], slice(1, 4), "mm"),
        (axes[1, 0], slice(4, 10), "kg mm²"),
    )
    for axis, columns, unit in panels:
        _band_panel(
            axis,
            t,
            deviation[:, columns],
            std[:, columns],
            reference[columns] * SCALE[columns],
            QUANTITIES[columns],
            unit,
        )
    axes[0, 0].set_title("mass", fontsize=9)
    axes[0, 1].set_title(f"centre of mass ({replay.sensor_frame or 'sensor frame'})", fontsize=9)
    axes[1, 0].set_title("inertia about the COM", fontsize=9)
    axes[1, 1].plot(t, [u.estimate.residual_rms for u in estimates], color="tab:gray")
    torques = tuple(replay.offset_names) != WRENCH_CHANNEL_NAMES  # joint torques, no F/T
    axes[1, 1].set_title(f"residual RMS ({'N m' if torques else 'N, N m mixed'})", fontsize=9)
    axes[2, 0].semilogy(
        t,
        np.clip([u.estimate.min_pseudo_inertia_eig for u in estimates], 1e-12, None),
        color="tab:green",
    )
    axes[2, 0].set_title("consistency margin λmin(J) (kg m²)", fontsize=9)
    axes[2, 1].semilogy(t, [u.estimate.condition_number for u in estimates], color="tab:purple")
    axes[2, 1].set_title("excitation: condition number of the scaled regressor", fontsize=9)
    for axis in axes[1:, :].ravel():
        axis.grid(alpha=0.3, which="both")
    for axis in axes[2]:
        axis.set_xlabel("bag time (s)")
    reference_name = "truth" if truth_theta is not None else "final estimate"
    figure.suptitle(
        title
        or (
            f"{Path(replay.source).name}: {final.method}, window {replay.config.window_sec:g} s, "
            f"updates at {replay.update_rate_hz:g} Hz; final m = {final.mass:.4f} ± "
            f"{final.theta_std[0]:.4f} kg from {final.n_samples} samples; reference: "
            f"{reference_name}"
        ),
        fontsize=10,
    )
    figure.tight_layout(rect=(0, 0, 1, 0.97))
    figure.savefig(path, dpi=dpi)
