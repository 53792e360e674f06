"""A simulated iCub bag replayed through the node's whole-body session, update by update.

Run: ``OPENBLAS_NUM_THREADS=1 .venv/bin/python benchmarks/whole_body_replay.py [--duration 60]``

What ``inertia-id sim-whole-body --robot icub --bag B`` and ``inertia-id replay B --params-file
config/icub_whole_body.yaml`` do, timed: record the bag (60 s at 200 Hz: joint states, IMU, seven
F/T sensors; the URDF differs from the true robot), replay it through the session the node builds
from ``config/icub_whole_body.yaml`` (60 s window, 1 update/s, ``lmi``, 50 Hz samples), count the
updates, the estimates and (independently, :func:`~inertia_id_ros.core.inertia.check_consistency`)
the inconsistent links over every estimate. Held out: the estimate published at 70 % of the bag
(from the first 70 % only) predicts the last 30 %'s wrenches (every sample of the bag, synced as
``fit-whole-body --bag`` does), beside the URDF's and the offline ``fit-whole-body`` lmi and OLS
fits on the same first 70 %: force RMS per row group (N), and that error over the sensor's
force noise (internal 0.2 N, contact 0.5 N per axis; the base row group sums the contacts).
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

import numpy as np

from inertia_id_ros.chain.whole_body_fit import holdout_comparison, prediction_errors
from inertia_id_ros.core.inertia import check_consistency
from inertia_id_ros.formats.whole_body_log import read_whole_body_bag, whole_body_inputs
from inertia_id_ros.modes.parameters import (
    build_session,
    parameters_from_file,
    settings_from_parameters,
)
from inertia_id_ros.modes.whole_body_offline import replay_whole_body
from inertia_id_ros.offline.replay import bag_robot_description
from inertia_id_ros.sim import whole_body_robots as wb
from inertia_id_ros.sim.recorders import record_whole_body

CONFIG = Path(__file__).resolve().parents[1] / "config" / "icub_whole_body.yaml"
HOLDOUT = 0.3


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--duration", type=float, default=60.0, help="seconds of bag (60)")
    parser.add_argument("--seed", type=int, default=0, help="simulator seed (0)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        bag = Path(folder) / "icub"
        sim = wb.icub(seed=args.seed)
        start = time.perf_counter()
        record_whole_body(bag, sim, args.duration, 200.0, args.seed)
        record_s = time.perf_counter() - start

        start = time.perf_counter()
        values = parameters_from_file(CONFIG)
        values["robot_description"] = bag_robot_description(bag)
        settings = settings_from_parameters(values)
        session = build_session(settings)
        own = settings.mode_settings
        replay = replay_whole_body(bag, session, settings)
        replay_s = time.perf_counter() - start

        estimates = [u.estimate for u in replay.estimates]
        inconsistent = sum(
            not check_consistency(theta).fully_consistent for e in estimates for theta in e.thetas
        )
        split_time = replay.start_time + (1.0 - HOLDOUT) * args.duration
        held = [e for e in estimates if e.t_last <= split_time][-1]

        recording = read_whole_body_bag(bag, list(zip(own.ft_topics, own.ft_types)))
        model, samples = whole_body_inputs(recording, bag_urdf(bag, folder))
        assert model.n_params == session.estimator.model.n_params
        assert len(samples) == recording.states.t.size
        split = int(np.searchsorted(recording.states.t, held.t_last, side="right"))
        fraction = 1.0 - split / len(samples)
        _, table = holdout_comparison(model, samples, fraction, "lmi")
        online = prediction_errors(model, held.x, samples.subset(slice(split, None)))

    print(
        f"iCub bag: {args.duration:g} s at 200 Hz, {len(sim.joint_names)} joints, "
        f"{len(sim.ft_sensors)} F/T sensors; recorded in {record_s:.1f} s"
    )
    print(
        f"replay ({settings.method}, window {settings.window_sec:g} s, "
        f"{settings.update_rate_hz:g} update/s, samples at {own.sample_rate_hz:g} Hz): "
        f"{len(replay.updates)} updates, {len(estimates)} estimates, "
        f"{sum(session.failed_solves.values())} failed solves, {inconsistent} inconsistent "
        f"links over all estimates; {replay_s:.1f} s "
        f"({replay_s / args.duration:.2f} s per s of bag); dropped {replay.dropped}"
    )
    solve_ms = [1e3 * e.solve_time for e in estimates]
    print(
        f"solve per update: median {np.median(solve_ms):.0f} ms, max {max(solve_ms):.0f} ms; "
        f"final: {estimates[-1].n_samples} samples, rank {estimates[-1].rank} of "
        f"{estimates[-1].n_params}"
    )
    noise = {frame: std[0] for (frame, _), std in zip(sim.ft_sensors, sim.ft_noise_std)}
    contact_noise = np.sqrt(sum(noise[f] ** 2 for f, k in sim.ft_sensors if k == "contact"))
    print(
        f"\nheld out: the estimate of {held.t_last - replay.start_time:.1f} s "
        f"({held.n_samples} samples) predicts the last {100 * fraction:.0f} % "
        f"({len(samples) - split} samples); force RMS (N), / noise"
    )
    print(
        f"{'rows':<18}{'replay':>9}{'offline lmi':>12}{'OLS':>9}{'URDF':>9}{'URDF+off':>9}"
        f"{'replay/(URDF+off)':>19}{'replay/OLS':>12}{'replay/noise':>14}"
    )
    for group, row in table.items():
        if group == "tau":
            continue
        ours = online.force[group]
        yardstick = contact_noise if group == "base" else noise[group]
        force = row["force"]
        urdf = force.get("urdf_offsets", force["urdf"])  # offsets are nuisances: fitted
        print(
            f"{group:<18}{ours:9.3f}{force['fit']:12.3f}{force['ols']:9.3f}"
            f"{force['urdf']:9.3f}{urdf:9.3f}{ours / urdf:19.3f}{ours / force['ols']:12.3f}"
            f"{ours / yardstick:14.2f}"
        )
    ols_bad = next(iter(table.values()))["ols_inconsistent_links"]
    print(f"OLS on the same rows leaves {ols_bad} links inconsistent")


def bag_urdf(bag: Path, folder: str) -> Path:
    """The bag's URDF (the CAD, the prior) as a file."""
    path = Path(folder) / "robot.urdf"
    path.write_text(bag_robot_description(bag))
    return path


if __name__ == "__main__":
    main()
