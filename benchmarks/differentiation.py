"""Which accelerations, which weighting: real KUKA LWR4+ runs and a simulated 1 kHz arm with truth.

Run: ``OPENBLAS_NUM_THREADS=1 .venv/bin/python benchmarks/differentiation.py [kuka_dir]``
(default ``<repo>/../shared/data/kuka_lwr4``; the KUKA part is skipped without it).

Rows (how the training and held-out accelerations are made; held-out data always the same way
as the training data, as ``inertia-id validate`` does):

- ``oracle``: the exact accelerations (simulation only);
- ``recorded``: the recording's own (KUKA only: filtered by its recording tool);
- ``velocities, CV``: the recorded velocities differentiated once by the zero-phase
  Savitzky-Golay filter that blocked cross-validation of the training torques chose
  (``inertia-id fit-links``' default), velocities smoothed by the same filter;
- ``velocities, 5 samples``: the same, narrowest window;
- ``old default``: a local line over +-0.05 s of the velocities, raw velocities in the regressor;
- ``positions twice, CV``: positions differentiated twice, filter by cross-validation.

Columns: for the simulation, the acceleration error against the truth split into noise (the
filter applied to the velocity noise alone) and distortion (the filter applied to the exact
velocities), RMS over joints (rad/s²); the filter's cross-validated torque RMS; held-out torque
RMS of plain OLS and of the consistent fit (prior weight by cross-validation) and their ratio;
for the simulation also the fit's error against the noise-free torques of the held-out part
("model", N·m: how wrong the parameters are). Simulation: the Panda arm at 1 kHz, q/dq/tau only,
noise, friction with a smooth sign the model does not have, links off the URDF; fitted on the first
60 %, held out the last 40 % (:func:`inertia_id_ros.sim.torques.panda_arm_recording`).

Held-out acceptance (simulation, three seeds): ``fit-links``' defaults
(:func:`~inertia_id_ros.chain.identify.identify_links`) on the first 60 %, the held-out RMS on
the last 40 % (differentiated by the chosen filter, as ``inertia-id validate`` does), against
plain OLS of the URDF's model on the same data ("OLS same") and against plain OLS as a user would
fit it (Savitzky-Golay derivative of the recorded velocities over 21, 51 or 101 samples, raw
velocities; "ratio best": against the best of these), every row paired with the torque delay
the fit estimated (none in this simulation: the estimates are within 0.1 ms of 0).

Torque lag: the same with the torques recorded 5 ms after the motion, the delay given as 0 and
estimated (fit-links' default).
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import numpy as np
from scipy.signal import savgol_filter

from inertia_id_ros.chain.differentiation import (
    SOURCE_VELOCITIES,
    DifferentiationFilter,
    derive_torque_data,
    sample_period,
    select_differentiation,
)
from inertia_id_ros.chain.identify import identify_links
from inertia_id_ros.chain.link_fit import build_link_problem, fit_links, select_prior_weight
from inertia_id_ros.chain.links import (
    JointTorqueData,
    LinkModel,
    link_channels,
    predict_torques,
    torque_error,
)
from inertia_id_ros.core.filtering import derivatives_at_samples
from inertia_id_ros.core.weighting import iterate_channel_weights, weighted_normal_equations
from inertia_id_ros.sim.torques import panda_arm_recording
from inertia_id_ros.solvers import solve

DEFAULT_DATA_DIR = Path(__file__).resolve().parents[1].parent / "shared" / "data" / "kuka_lwr4"
OLD_HALF_WIDTH = 0.05
"""The previous default: a local line (order 2) over +-0.05 s, raw velocities."""


def consistent_fit(model: LinkModel, train: JointTorqueData, weighting: str):
    """Prior weight by cross-validation (weighted when ``weighting`` is ``channel``), then the
    consistent fit, as ``fit-links`` does."""
    weights = None
    if weighting == "channel":
        channels = link_channels(model, train)
        weights = iterate_channel_weights(
            channels,
            lambda w: solve(
                build_link_problem(model, *weighted_normal_equations(channels, w), 0.0),
                method="ols",
            ).x,
        )[1].weights
    selection = select_prior_weight(model, train, channel_weights=weights)
    return fit_links(model, train, prior_weight=selection.best, weighting=weighting)


def old_default(t, q, dq, effort) -> JointTorqueData:
    """Accelerations of the previous default, velocities as recorded."""
    keep, _, _, ddq = derivatives_at_samples(t, q, dq, OLD_HALF_WIDTH, 2)
    return JointTorqueData(q[keep], dq[keep], ddq, effort[keep])


def header(columns: list[str]) -> str:
    return f"{'accelerations':<34}" + "".join(f"{c:>11}" for c in columns)


def simulated() -> None:
    start = time.perf_counter()
    rec = panda_arm_recording()
    sim, model = rec.simulator, rec.simulator.links
    split = int(0.6 * rec.t.size)
    parts = {"train": slice(0, split), "test": slice(split, None)}
    print(
        f"simulated Panda arm: {rec.t.size} samples at 1 kHz over {rec.t[-1]:.0f} s "
        f"(velocity noise 0.005 rad/s, torque noise 0.04-0.15 N·m); fit on the first 60 %, "
        f"held out the last 40 %"
    )
    cv = select_differentiation(
        model,
        rec.t[parts["train"]],
        rec.q[parts["train"]],
        rec.dq[parts["train"]],
        rec.effort[parts["train"]],
    )
    cv_pos = select_differentiation(
        model, rec.t[parts["train"]], rec.q[parts["train"]], None, rec.effort[parts["train"]]
    )
    scores = dict(zip(cv.candidates, cv.cv_rms)) | dict(zip(cv_pos.candidates, cv_pos.cv_rms))
    dt = sample_period(rec.t)
    narrow = DifferentiationFilter(SOURCE_VELOCITIES, 2.5 * dt, 2, dt)
    filters = {
        "velocities, CV": cv.chosen,
        "velocities, 5 samples": narrow,
        "positions twice, CV": cv_pos.chosen,
    }
    print("filter chosen by cross-validation: " + cv.chosen.describe())
    print(f"  ({len(cv.candidates)} candidates, {time.perf_counter() - start:.1f} s)")

    def data(name: str, part: slice) -> tuple[JointTorqueData, np.ndarray]:
        """(data, indices into the recording) of one part, made as the row says."""
        t, q, dq, effort = rec.t[part], rec.q[part], rec.dq[part], rec.effort[part]
        index = np.arange(rec.t.size)[part]
        if name == "oracle":
            return rec.truth.subset(part), index
        if name == "old default":
            keep = derivatives_at_samples(t, q, dq, OLD_HALF_WIDTH, 2)[0]
            return old_default(t, q, dq, effort), index[keep]
        f = filters[name]
        keep = derivatives_at_samples(t, q, dq, f.half_width, f.order)[0]
        return derive_torque_data(
            t, q, dq if f.source == SOURCE_VELOCITIES else None, effort, f
        ), index[keep]

    def acceleration_errors(name: str) -> tuple[float, float]:
        """(noise, distortion) RMS of the training accelerations (rad/s²)."""
        if name == "oracle":
            return 0.0, 0.0
        part = parts["train"]
        t, q, dq = rec.t[part], rec.q[part], rec.dq[part]
        true_q, true_dq = rec.truth.positions[part], rec.truth.velocities[part]
        f = (
            DifferentiationFilter(SOURCE_VELOCITIES, OLD_HALF_WIDTH, 2, dt)
            if name == "old default"
            else filters[name]
        )
        velocities = f.source == SOURCE_VELOCITIES
        keep, _, _, measured = derivatives_at_samples(
            t, q, dq if velocities else None, f.half_width, f.order
        )
        _, _, _, exact = derivatives_at_samples(
            t, true_q, true_dq if velocities else None, f.half_width, f.order
        )
        true_ddq = rec.truth.accelerations[part][keep]
        return (
            float(np.sqrt(np.mean((measured - exact) ** 2))),
            float(np.sqrt(np.mean((exact - true_ddq) ** 2))),
        )

    columns = ["noise", "distort.", "CV rms", "OLS", "fit", "fit/OLS", "model"]
    print("\n" + header(columns))
    rows = [
        "oracle",
        "velocities, CV",
        "velocities, 5 samples",
        "old default",
        "positions twice, CV",
    ]
    for name in rows:
        train, _ = data(name, parts["train"])
        test, test_index = data(name, parts["test"])
        ols = fit_links(model, train, method="ols", prior_weight=0.0)
        fit = consistent_fit(model, train, "none")
        e_ols = torque_error(model, ols.x, test).overall
        e_fit = torque_error(model, fit.x, test).overall
        noise, distortion = acceleration_errors(name)
        exact = rec.truth.subset(test_index)
        model_error = float(
            np.sqrt(
                np.mean(
                    (predict_torques(model, fit.x, exact) - sim.true_torques(rec.t[test_index]))
                    ** 2
                )
            )
        )
        score = scores.get(filters.get(name), float("nan"))
        print(
            f"{name:<34}{noise:11.3f}{distortion:11.3f}{score:11.4f}{e_ols:11.4f}"
            f"{e_fit:11.4f}{e_fit / e_ols:11.3f}{model_error:11.4f}",
            flush=True,
        )

    print("\nweighting (accelerations: velocities, CV):")
    print(
        f"{'weighting':<34}"
        + "".join(f"{c:>11}" for c in ["OLS", "fit", "fit/OLS", "model", "prior w"])
    )
    train, _ = data("velocities, CV", parts["train"])
    test, test_index = data("velocities, CV", parts["test"])
    e_ols = torque_error(
        model, fit_links(model, train, method="ols", prior_weight=0.0).x, test
    ).overall
    exact = rec.truth.subset(test_index)
    for weighting in ("none", "channel"):
        fit = consistent_fit(model, train, weighting)
        e_fit = torque_error(model, fit.x, test).overall
        model_error = float(
            np.sqrt(
                np.mean(
                    (predict_torques(model, fit.x, exact) - sim.true_torques(rec.t[test_index]))
                    ** 2
                )
            )
        )
        print(
            f"{weighting:<34}{e_ols:11.4f}{e_fit:11.4f}{e_fit / e_ols:11.3f}"
            f"{model_error:11.4f}{fit.prior_weight:11.2e}",
            flush=True,
        )
        if fit.channel_weights is not None:
            print(
                "  sigma per joint (N·m): "
                + " ".join(f"{s:.3f}" for s in fit.channel_weights.sigma)
                + "  (truth: "
                + " ".join(f"{s:.3f}" for s in sim.torque_noise_std)
                + ")"
            )
    print(f"({time.perf_counter() - start:.0f} s)")


def plain_ols_error(model: LinkModel, rec, train: slice, test: slice, window: int) -> float:
    """Held-out RMS of plain least squares as a user would fit it: accelerations by a
    Savitzky-Golay derivative (``window`` samples, order 2, uniform-spacing assumption) of the
    recorded velocities, velocities as recorded, the URDF's gravity, exact Coulomb sign."""

    def part(rows: slice) -> JointTorqueData:
        ddq = savgol_filter(rec.dq[rows], window, 2, deriv=1, delta=sample_period(rec.t), axis=0)
        return JointTorqueData(rec.q[rows], rec.dq[rows], ddq, rec.effort[rows])

    ols = fit_links(model, part(train), method="ols", prior_weight=0.0)
    return torque_error(model, ols.x, part(test)).overall


def held_out(seeds: int = 3) -> None:
    """fit-links' defaults on the first 60 % of simulated 1 kHz arm recordings (q, dq, tau only)
    against plain OLS on the last 40 %."""
    print(
        "\nheld-out acceptance (simulated Panda arm, 1 kHz, q/dq/tau only, fit-links defaults "
        "on the first 60 %, held out the last 40 %):"
    )
    windows = (21, 51, 101)
    print(
        f"{'seed':>4}{'fit':>9}{'OLS same':>10}{'ratio':>7}"
        + "".join(f"{f'OLS sg{w}':>10}" for w in windows)
        + f"{'ratio best':>11}"
        f"{'consistent':>11}  chosen"
    )
    for seed in range(seeds):
        rec = panda_arm_recording(seed=seed)
        model = rec.simulator.links
        split = int(0.6 * rec.t.size)
        train, test = slice(0, split), slice(split, None)
        ident = identify_links(
            model, rec.t[train], rec.q[train], rec.dq[train], None, rec.effort[train]
        )
        test_data = derive_torque_data(
            rec.t[test],
            rec.q[test],
            rec.dq[test],
            rec.effort[test],
            ident.differentiation,
            delay=ident.delay.delay,
        )
        error = torque_error(ident.model, ident.fit.x, test_data).overall
        same = torque_error(
            model, fit_links(model, ident.data, method="ols", prior_weight=0.0).x, test_data
        ).overall
        plain = [plain_ols_error(model, rec, train, test, w) for w in windows]
        chosen = (
            f"{ident.differentiation.window_samples}/{ident.differentiation.order}, "
            f"Coulomb {ident.coulomb_selection.best:g}, prior {ident.fit.prior_weight:.0e}, "
            f"delay {1e3 * ident.delay.delay:+.2f} ms"
        )
        print(
            f"{seed:4d}{error:9.4f}{same:10.4f}{error / same:7.3f}"
            + "".join(f"{e:10.4f}" for e in plain)
            + f"{error / min(plain):11.3f}"
            f"{str(ident.fit.fully_consistent):>11}  {chosen}",
            flush=True,
        )


def lagged(lag_samples: int = 5) -> None:
    """Seed 0 with the torques recorded ``lag_samples`` ms after the motion that caused them:
    fit-links' defaults with the delay given as 0 and as estimated (the held-out part paired
    with the same delay)."""
    rec = panda_arm_recording(seed=0)
    model, n = rec.simulator.links, rec.t.size
    t, q, dq, effort = (
        rec.t[lag_samples:],
        rec.q[lag_samples:],
        rec.dq[lag_samples:],
        rec.effort[: n - lag_samples],
    )
    split = int(0.6 * t.size)
    train, test = slice(0, split), slice(split, None)
    print(f"\ntorques lagging the motion by {lag_samples} ms (simulated Panda arm, seed 0):")
    print(f"{'torque delay':<22}{'value':>10}{'fit':>9}{'OLS same':>10}{'ratio':>7}{'time':>7}")
    for label, given in (("none (given 0)", 0.0), ("estimated (default)", None)):
        start = time.perf_counter()
        ident = identify_links(
            model, t[train], q[train], dq[train], None, effort[train], torque_delay=given
        )
        elapsed = time.perf_counter() - start
        test_data = derive_torque_data(
            t[test], q[test], dq[test], effort[test], ident.differentiation, delay=ident.delay.delay
        )
        error = torque_error(ident.model, ident.fit.x, test_data).overall
        same = torque_error(
            model, fit_links(model, ident.data, method="ols", prior_weight=0.0).x, test_data
        ).overall
        print(
            f"{label:<22}{1e3 * ident.delay.delay:8.2f}ms{error:9.4f}{same:10.4f}"
            f"{error / same:7.3f}{elapsed:6.1f}s",
            flush=True,
        )


def kuka(data_dir: Path) -> None:
    start = time.perf_counter()
    runs = {i: np.load(data_dir / f"measurements_{i}.npz") for i in (1, 2, 3)}
    model = LinkModel.from_urdf(data_dir / "kuka_lwr4.urdf")
    print(
        "\nKUKA LWR4+ (real, 200 Hz): fit on run 1, held out run 2 (same trajectory) and "
        "run 3 (faster)"
    )
    r1 = runs[1]
    cv = select_differentiation(
        model, r1["times"], r1["positions"], r1["velocities"], r1["torques"]
    )
    cv_pos = select_differentiation(model, r1["times"], r1["positions"], None, r1["torques"])
    scores = dict(zip(cv.candidates, cv.cv_rms)) | dict(zip(cv_pos.candidates, cv_pos.cv_rms))
    print("filter chosen by cross-validation: " + cv.chosen.describe())
    print(
        "CV torque RMS per candidate (N·m): "
        + ", ".join(
            f"{c.window_samples}/{c.order}: {r:.4f}" for c, r in zip(cv.candidates, cv.cv_rms)
        )
    )

    def data(name: str, run) -> JointTorqueData:
        t, q, dq, effort = run["times"], run["positions"], run["velocities"], run["torques"]
        if name == "recorded":
            return JointTorqueData(q, dq, run["accelerations"], effort)
        if name == "old default":
            return old_default(t, q, dq, effort)
        f = cv.chosen if name == "velocities, CV" else cv_pos.chosen
        return derive_torque_data(t, q, dq if f.source == SOURCE_VELOCITIES else None, effort, f)

    columns = ["CV rms", "OLS r2", "fit r2", "ratio r2", "OLS r3", "fit r3"]
    print("\n" + header(columns))
    for name in ("recorded", "velocities, CV", "old default", "positions twice, CV"):
        sets = {i: data(name, runs[i]) for i in (1, 2, 3)}
        ols = fit_links(model, sets[1], method="ols", prior_weight=0.0)
        fit = consistent_fit(model, sets[1], "none")
        e = {
            (k, i): torque_error(model, x, sets[i]).overall
            for k, x in (("ols", ols.x), ("fit", fit.x))
            for i in (2, 3)
        }
        f = {"velocities, CV": cv.chosen, "positions twice, CV": cv_pos.chosen}.get(name)
        score = scores.get(f, float("nan"))
        print(
            f"{name:<34}{score:11.4f}{e['ols', 2]:11.4f}{e['fit', 2]:11.4f}"
            f"{e['fit', 2] / e['ols', 2]:11.3f}{e['ols', 3]:11.4f}{e['fit', 3]:11.4f}",
            flush=True,
        )
    print(f"({time.perf_counter() - start:.0f} s)")


def main(data_dir: Path = DEFAULT_DATA_DIR) -> int:
    simulated()
    held_out()
    lagged()
    if (data_dir / "kuka_lwr4.urdf").is_file():
        kuka(data_dir)
    else:
        print(f"\nKUKA LWR4+ data not found in {data_dir}: skipped")
    return 0


if __name__ == "__main__":
    sys.exit(main(Path(sys.argv[1]) if len(sys.argv) > 1 else DEFAULT_DATA_DIR))
