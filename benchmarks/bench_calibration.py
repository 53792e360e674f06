"""Calibrations against simulated truth, a section each.

``drives``: a simulated Panda logging motor currents whose gains are off the datasheet's by 5 to
20 % (:func:`~inertia_id_ros.sim.torques.panda_current_runs`). For each robot (``--robots``
gain seeds), ``calibrate-drives`` (the job, from Python) on one unloaded/loaded pair with a
weighed 2.8 kg payload, 60 s at 100 Hz (timed); then ``fit-payload-torques`` (differencing) on
three other pairs of the same arm with 1.0, 2.0 and 4.0 kg, with the calibrated gains and with
the nominal ones. Prints each gain recovered against the truth (in standard errors) and each
held-out mass's error (the acceptance: within 5 % with the calibrated gains; calibration
≤ 10 s).

``filters``: fit-payload-torques' derivative filter, its default rule against cross-validation,
at 125-1000 Hz (the payload's mass and inertia errors).

``ft``: the simulated iCub balancing on its left sole (:func:`inertia_id_ros.sim.
whole_body_robots.icub_stance`), no IMU, its left leg and foot F/T sensors reading through a
drifted factory calibration (:mod:`inertia_id_ros.sim.ft_errors`: the leg sensor's fx at 2.65 ×,
other gains 0.6–0.9, 3 % cross-coupling, offsets up to 300 N), ``--duration`` s at 100 Hz.
Both sensors are calibrated (full 6×6, links from the URDF, rooted at the sole) on the first half
and checked on the second: per axis the recovered gain against the true one, the held-out RMS
error of the factory calibration with fitted offsets and of the new one, their ratio
(acceptance: ≤ 0.5 everywhere), the calibration's time (acceptance: ≤ 10 s on 60 s at 100 Hz);
then fit-whole-body with and without the calibration (links left inconsistent, held-out errors).
A Panda wrist sensor with the same drift, calibrated against its known payload, closes it.

``filter``: fit-whole-body's derivative filter chosen by cross-validation against five fixed
ones (±0.025–0.2 s) on the same robot without drift: held-out error ratio (acceptance ≤ 1.05).

Run: .venv/bin/python benchmarks/bench_calibration.py [--section drives|filters|ft|filter|all]
[--duration 60] [--robots 3] [--seed 0]
"""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path

from calibration_drives import drives_section
from calibration_drives import filter_section as payload_filter_section
from calibration_ft import filter_section as whole_body_filter_section
from calibration_ft import ft_section, ft_wrist_section

SECTIONS = ("drives", "filters", "ft", "filter", "all")


def main() -> None:
    """Print the sections' tables."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--section", choices=SECTIONS, default="all", help="what to run (all)")
    parser.add_argument("--duration", type=float, default=60.0, help="calibration log (s) (60)")
    parser.add_argument("--robots", type=int, default=3, help="drives: simulated arms (3)")
    parser.add_argument("--seed", type=int, default=0, help="ft, filter: simulation seed (0)")
    args = parser.parse_args()
    run = {args.section} if args.section != "all" else set(SECTIONS)
    if "drives" in run:
        print("\n".join(drives_section(args.robots, args.duration)), flush=True)
    if "filters" in run:
        print("\n".join(payload_filter_section()), flush=True)
    with tempfile.TemporaryDirectory() as tmp:
        if "ft" in run:
            ft_section(args.duration, args.seed, Path(tmp))
            ft_wrist_section(args.seed, Path(tmp))
        if "filter" in run:
            whole_body_filter_section(args.duration, args.seed, Path(tmp))


if __name__ == "__main__":
    main()
