"""Link identification on real KUKA LWR4+ joint torques (FloBaRoID recordings, LGPL-3.0).

Run: ``.venv/bin/python benchmarks/kuka_lwr4.py [data_dir]`` (default
``<repo>/../shared/data/kuka_lwr4``; see its README.md for provenance and reference numbers).

Model: 7 links (10 inertial parameters each, nominal URDF as prior) plus viscous, Coulomb (exact
sign), offset and armature per joint: 98 parameters. Everything is fitted on run 1 only; runs 2
(same trajectory: repeatability) and 3 (a different, faster trajectory: generalisation) are held
out.

Compared: the nominal URDF (zero friction), unconstrained least squares ("OLS") and the physically
consistent fit ("LMI": every link's pseudo-inertia J >= 0, viscous/Coulomb/armature >= 0, prior
toward the URDF).

How the prior weight is chosen: 5-fold cross-validation over contiguous time blocks of run 1
(``select_prior_weight``: fit on four fifths of run 1, predict the held-out fifth, on a log grid
1e-5 ... 1e-1), taking the weight with the smallest held-out RMS. Neither run 2 nor run 3 is used
for the choice; run 2 is only used for the acceptance check against OLS, run 3 only for reporting.

Acceptance (printed at the end, exit status 1 if any fails): every consistent link passes
``check_consistency``; run-2 RMS <= 1.15 x OLS's; run-3 RMS <= 0.45 N·m.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import numpy as np

from inertia_id_ros.chain.friction import DRIVE_TERMS
from inertia_id_ros.core.inertia import check_consistency
from inertia_id_ros.chain.links import (
    JointTorqueData,
    LinkModel,
    base_parameters,
    fit_links,
    select_prior_weight,
    torque_error,
)

DEFAULT_DATA_DIR = Path(__file__).resolve().parents[1].parent / "shared" / "data" / "kuka_lwr4"
README_REFERENCE = {"URDF": (1.07, 0.97), "OLS": (0.22, 1.49)}
"""Overall RMS (N·m) on runs 2 and 3 stated by the data's README (to check our conventions)."""


def load_run(data_dir: Path, index: int) -> JointTorqueData:
    """Run ``index`` (1, 2 or 3): measured positions, velocities, accelerations and torques."""
    path = data_dir / f"measurements_{index}.npz"
    run = np.load(path)
    return JointTorqueData(run["positions"], run["velocities"], run["accelerations"],
                           run["torques"])


def main(data_dir: Path = DEFAULT_DATA_DIR) -> int:
    if not (data_dir / "kuka_lwr4.urdf").is_file():
        print(f"KUKA LWR4+ data not found in {data_dir}", file=sys.stderr)
        return 2
    runs = {i: load_run(data_dir, i) for i in (1, 2, 3)}
    model = LinkModel.from_urdf(data_dir / "kuka_lwr4.urdf")
    print(f"model: {model.n_joints} joints, {model.n_parameters} parameters; "
          f"{runs[1].n_samples} samples per run")

    base = base_parameters(model, runs[1])
    print(f"run 1 base parameters: rank {base.rank} of {model.n_parameters}; "
          f"{len(base.no_effect)} parameters without effect, "
          f"{len(base.unidentifiable)} not individually identifiable")

    start = time.perf_counter()
    selection = select_prior_weight(model, runs[1])
    print(f"\nprior weight by 5-fold blocked cross-validation on run 1 "
          f"({time.perf_counter() - start:.1f} s):")
    for w, rms in zip(selection.weights, selection.cv_rms):
        chosen = "  <- chosen" if w == selection.best else ""
        print(f"  {w:9.2e}  held-out RMS {rms:.4f} N·m{chosen}")

    ols = fit_links(model, runs[1], method="ols", prior_weight=0.0)
    start = time.perf_counter()
    lmi = fit_links(model, runs[1], method="lmi", prior_weight=selection.best, initvals=ols)
    run1 = torque_error(model, lmi.x, runs[1]).overall
    print(f"consistent fit: {time.perf_counter() - start:.2f} s, solver status "
          f"{lmi.solution.status!r}, run-1 RMS {run1:.4f} N·m")
    fits = {"URDF": model.prior, "OLS": ols.x, "LMI": lmi.x}
    errors = {(name, i): torque_error(model, x, runs[i])
              for name, x in fits.items() for i in (2, 3)}

    print("\nreference check (README):")
    for name, (ref2, ref3) in README_REFERENCE.items():
        print(f"  {name}: run 2 {errors[name, 2].overall:.3f} (README {ref2}), "
              f"run 3 {errors[name, 3].overall:.3f} (README {ref3}) N·m")

    print("\nheld-out joint-torque RMS (N·m), fitted on run 1:")
    header = "joint          " + "".join(f"{f'{n} r{i}':>10}" for i in (2, 3) for n in fits)
    print(header)
    for j, joint in enumerate(model.joint_names):
        print(f"{joint:<15}"
              + "".join(f"{errors[n, i].per_joint[j]:10.3f}" for i in (2, 3) for n in fits))
    print(f"{'overall':<15}"
          + "".join(f"{errors[n, i].overall:10.3f}" for i in (2, 3) for n in fits))

    print("\nlink consistency: mass (kg) and min eigenvalue of J (kg·m²)")
    print(f"{'link':<12}" + "".join(f"{f'{n} m':>10}{f'{n} λmin':>12}{'':>4}" for n in fits))
    reports = {n: [check_consistency(t) for t in model.link_parameters(x)] for n, x in fits.items()}
    for k, link in enumerate(model.link_names):
        cells = []
        for n, x in fits.items():
            r = reports[n][k]
            cells.append(f"{model.link_parameters(x)[k, 0]:10.3f}{r.min_pseudo_inertia_eig:12.2e}"
                         f"{'  ok' if r.fully_consistent else '  NO'}")
        print(f"{link:<12}" + "".join(cells))

    print("\nestimated drive parameters (consistent fit):")
    print(f"{'joint':<15}" + "".join(f"{t:>10}" for t in DRIVE_TERMS))
    for joint, terms in model.drive_parameters(lmi.x).items():
        print(f"{joint:<15}" + "".join(f"{terms[t]:10.4f}" for t in DRIVE_TERMS))

    checks = {
        "every link fully consistent": all(r.fully_consistent for r in reports["LMI"]),
        f"run 2 RMS {errors['LMI', 2].overall:.4f} <= 1.15 x OLS {errors['OLS', 2].overall:.4f}":
            errors["LMI", 2].overall <= 1.15 * errors["OLS", 2].overall,
        f"run 3 RMS {errors['LMI', 3].overall:.4f} <= 0.45 N·m": errors["LMI", 3].overall <= 0.45,
    }
    print("\nacceptance:")
    for label, ok in checks.items():
        print(f"  {'PASS' if ok else 'FAIL'}  {label}")
    return 0 if all(checks.values()) else 1


if __name__ == "__main__":
    sys.exit(main(Path(sys.argv[1]) if len(sys.argv) > 1 else DEFAULT_DATA_DIR))
