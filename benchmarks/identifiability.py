"""What fit-links says the data determine, judged against their noise: the still joints, the
rank with and without their noise, how many parameters are identified (``|t| >= 3``) and the
smallest ``|t|`` among them, and whether the base tilt was reported or kept level.

    .venv/bin/python benchmarks/identifiability.py [--kuka DIR] [--step N]

Cases: the real KUKA LWR4+ runs 1 to 3 (every ``--step``-th sample; skipped when absent), a
planar variant of KUKA run 1 (joints 1, 5, 6 and 7 replaced by their mean plus 2e-4 rad of
encoder noise: their torques no longer match, a stress case), the simulated Panda arm moving
joints 2 to 4 only (the others within 1e-4 rad of noise on a 2e-4 rad encoder) and the simulated
Panda moving every joint.
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

import numpy as np

from inertia_id_ros.core.robots import example_robot_urdf
from inertia_id_ros.formats.source import LogSource
from inertia_id_ros.jobs.fit_links import FitLinksOptions, fit_links

PANDA_ARM = tuple(f"panda_joint{i}" for i in range(1, 8))
KUKA_JOINTS = tuple(f"lwr_{i}_joint" for i in range(7))


def kuka_case(directory: Path, run: Path, step: int, still: tuple[int, ...] = ()) -> Path:
    """Every ``step``-th sample of a KUKA run as fit-links' NPZ; the ``still`` joints (columns)
    replaced by their mean plus 2e-4 rad of noise (velocities and accelerations zero)."""
    content = np.load(run)
    q = content["positions"][::step].copy()
    dq = content["velocities"][::step].copy()
    ddq = content["accelerations"][::step].copy()
    rng = np.random.default_rng(0)
    for j in still:
        q[:, j] = q[:, j].mean() + rng.normal(0.0, 2e-4, q.shape[0])
        dq[:, j] = ddq[:, j] = 0.0
    path = directory / f"{run.stem}_{step}_{'_'.join(map(str, still))}.npz"
    t = content["times"][::step]
    effort = content["torques"][::step]
    np.savez(path, t=t, joint_names=np.array(KUKA_JOINTS), q=q, dq=dq, ddq=ddq, effort=effort)
    return path


def panda_case(directory: Path, moving: tuple[int, ...]) -> Path:
    """12 s at 100 Hz of the Panda arm (the URDF's links, 0.05 N m of torque noise): the
    ``moving`` joints (columns) swing along multisines, the others sit at home within 1e-4 rad
    of noise on a 2e-4 rad encoder; positions only (the fit differentiates them)."""
    import pinocchio as pin

    from inertia_id_ros.core.robots import load_model, reduce_model
    from inertia_id_ros.sim.payload import PANDA_HOME

    model = reduce_model(load_model(example_robot_urdf("panda")), PANDA_ARM)
    rng = np.random.default_rng(4)
    t = np.arange(0.0, 12.0, 0.01)
    q, dq, ddq = (np.tile(PANDA_HOME, (t.size, 1)).astype(float), *np.zeros((2, t.size, 7)))
    for j in moving:
        for a, f, phase in zip(rng.uniform(0.1, 0.3, 3), (0.1, 0.23, 0.37), rng.uniform(0, 6, 3)):
            w = 2 * np.pi * f * (1 + 0.3 * j)
            q[:, j] += a * np.sin(w * t + phase)
            dq[:, j] += a * w * np.cos(w * t + phase)
            ddq[:, j] -= a * w * w * np.sin(w * t + phase)
    data = model.createData()
    effort = np.array([pin.rnea(model, data, *x) for x in zip(q, dq, ddq)])
    effort += rng.normal(0.0, 0.05, effort.shape)
    recorded = np.round((q + rng.normal(0.0, 1e-4, q.shape)) / 2e-4) * 2e-4
    path = directory / f"panda_{''.join(map(str, moving))}.npz"
    np.savez(path, t=t, joint_names=np.array(PANDA_ARM), q=recorded, effort=effort)
    return path


def said(urdf: str, data: Path) -> str:
    """fit-links' identifiability and tilt on ``data``, in one line."""
    start = time.perf_counter()
    result = fit_links(urdf, LogSource(data=str(data)), FitLinksOptions())
    document = result.document
    ident = document["identifiability"]
    determination = ident["determination"]
    t = [abs(determination["t"][name]) for name in determination["identified"]]
    tilt = document["base_tilt"]
    tilt_text = (
        "-"
        if tilt is None
        else f"kept level (twin {tilt['separation']['twin_joint']}, "
        f"t {tilt['separation']['t']:.1f})"
        if tilt["kept_level"]
        else f"roll {np.degrees(tilt['roll_rad']):+.2f} pitch {np.degrees(tilt['pitch_rad']):+.2f}"
        f" deg (t {tilt['separation']['t']:.1f})"
    )
    return (
        f"still {ident['still_joints'] or 'none'}; rank {ident['rank']} of {ident['n_params']}"
        f" (counting noise: {ident['rank_counting_noise'] or ident['rank']}); identified "
        f"{len(t)} (min |t| {min(t) if t else float('nan'):.1f}), poorly determined "
        f"{len(determination['poorly_determined'])}; tilt {tilt_text}; findings "
        f"{sorted({f['kind'] for f in document.get('findings', [])})}; at bound "
        f"{sum(body['at_bound'] for body in document['bodies'])} of {len(document['bodies'])}; "
        f"prior weight {document['prior_weight']:.2g}"
        f"{' (guarded)' if document['prior_weight_guard'] else ''}; "
        f"{time.perf_counter() - start:.0f} s"
    )


def main() -> None:
    """One line per case."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--kuka",
        default=str(Path(__file__).resolve().parents[1].parent / "shared" / "data" / "kuka_lwr4"),
    )
    parser.add_argument("--step", type=int, default=2, help="KUKA: every N-th sample")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        directory = Path(tmp)
        panda = str(example_robot_urdf("panda"))
        for name, moving in (("every joint", tuple(range(7))), ("joints 2-4", (1, 2, 3))):
            print(f"Panda (sim.) moving {name}: {said(panda, panda_case(directory, moving))}")
        kuka = Path(args.kuka)
        if not (kuka / "measurements_1.npz").exists():
            print(f"KUKA runs not found in {kuka}: skipped")
            return
        urdf = str(kuka / "kuka_lwr4.urdf")
        for index in (1, 2, 3):
            data = kuka_case(directory, kuka / f"measurements_{index}.npz", args.step)
            print(f"KUKA run {index}: {said(urdf, data)}", flush=True)
        data = kuka_case(directory, kuka / "measurements_1.npz", args.step, (0, 4, 5, 6))
        print(f"KUKA run 1, joints 1, 5, 6, 7 made still: {said(urdf, data)}")


if __name__ == "__main__":
    main()
