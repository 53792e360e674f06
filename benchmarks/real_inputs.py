"""The usual input mistakes, injected into real and simulated recordings: what ``inertia-id``
says about each (exit code, the findings' kinds and subjects), beside the identification figures
of the undisturbed and the corrected runs, and the residual ratios the thresholds of
:mod:`inertia_id_ros.offline.plausibility` were chosen from.

    .venv/bin/python benchmarks/real_inputs.py [--kuka DIR]

Inputs: the simulated Panda with a payload (12 s at 200 Hz), the simulated Panda arm's links
(15 s at 100 Hz), the real KUKA LWR4+ runs (``--kuka``, default /work/shared/data/kuka_lwr4;
skipped when absent: every 10th sample of run 1 to fit, run 2 to validate), the simulated iCub
standing on one sole (2 s at 200 Hz, noisy, offsets). Exit codes: 0 done, 2 bad input, 3 refused
by a plausibility check (:mod:`inertia_id_ros.cli`).
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import tempfile
from collections.abc import Callable
from pathlib import Path

import numpy as np

from inertia_id_ros import cli
from inertia_id_ros.core.inertia import inertia_from_theta
from inertia_id_ros.core.robots import example_robot_urdf
from inertia_id_ros.sim.payload import ExcitingTrajectory, PayloadSimulator

PANDA_ARM = tuple(f"panda_joint{i}" for i in range(1, 8))
KUKA_JOINTS = tuple(f"lwr_{i}_joint" for i in range(7))
SENSOR = "panda_link8"
RATIOS_OUT: str | None = None
"""``--ratios-out``: every scenario's residual ratios and URDF gains, one JSON line each."""


def run(argv: list[str]) -> tuple[int, str, str]:
    """``inertia-id argv`` in this process: ``(exit code, stdout, stderr)``."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = cli.main(argv)
    return code, out.getvalue(), err.getvalue()


def said(code: int, err: str, result: dict | None) -> str:
    """The findings by severity and kind (``refuse urdf_sign: A, B``, at most three subjects
    each, then their count), else the first stderr line, else ``ok``."""
    findings = (result or {}).get("findings") or []
    if findings:
        groups: dict[str, list[str]] = {}
        for f in findings:
            subject = f["subject"].replace("F/T sensor '", "'").replace("joint '", "'")
            groups.setdefault(f"{f['severity']} {f['kind']}", []).append(subject)
        return "; ".join(
            f"{key}: {', '.join(subjects[:3])}"
            + (f" (+{len(subjects) - 3})" if len(subjects) > 3 else "")
            for key, subjects in groups.items()
        )
    first = err.strip().splitlines()[:1]
    return first[0][:90] if first else "ok"


def told(err: str, width: int = 400) -> list[str]:
    """What ``inertia-id`` told the user on stderr: its refusals, warnings and errors (not its
    notes), each cut to ``width`` characters."""
    lines = [line.split(": ", 1)[1] if ": " in line else line for line in err.splitlines()]
    return [
        line[:width] + ("..." if len(line) > width else "")
        for line in lines
        if line.strip() and not line.startswith("note:")
    ]


def max_ratio(result: dict | None) -> float:
    """The largest residual ratio of a result (NaN without one)."""
    ratios = (result or {}).get("residual_ratios") or {}
    return max((r["ratio"] for r in ratios.values()), default=float("nan"))


# ---- inputs --------------------------------------------------------------------------------


def payload_npz(
    directory: Path,
    name: str,
    sim: PayloadSimulator,
    seed: int = 0,
    sign: float = 1.0,
    time_scale: float = 1.0,
    angle_scale: float = 1.0,
) -> Path:
    """12 s of ``sim`` at 200 Hz, NPZ; the mistakes: ``sign`` of the wrenches, ``time_scale``
    of the stamps, ``angle_scale`` of the joint positions and velocities."""
    t = np.arange(2400) / 200.0
    q, dq, wrench = sim.measure(t, np.random.default_rng(seed))
    path = directory / f"{name}.npz"
    np.savez(
        path,
        t=t * time_scale,
        joint_names=np.array(PANDA_ARM),
        q=q * angle_scale,
        dq=dq * angle_scale,
        wrench=sign * wrench,
        wrench_frame=SENSOR,
    )
    return path


def one_path_trajectory(model_sim: PayloadSimulator) -> Callable:
    """All joints along one chirp (positions correlated 1.0): a vendor's calibration path."""
    base = model_sim.trajectory

    def trajectory(t: np.ndarray):
        q0 = base(np.zeros(1))[0][0]
        phase = 0.4 * np.sin(2 * np.pi * (0.05 + 0.02 * t) * t)
        dphase = 0.4 * np.cos(2 * np.pi * (0.05 + 0.02 * t) * t) * 2 * np.pi * (0.05 + 0.04 * t)
        direction = np.linspace(1.0, 0.4, len(q0))
        q = q0 + phase[:, None] * direction
        dq = dphase[:, None] * direction
        ddq = np.gradient(dq, t, axis=0)
        return q, dq, ddq

    return trajectory


def payload_figures(result: dict | None, sim: PayloadSimulator) -> str:
    """Mass error (%) and COM error (mm) against the simulator's truth."""
    if not result or "bodies" not in result:
        return "-"
    body = result["bodies"][0]
    mass, com, _ = inertia_from_theta(sim.true_theta)
    com_error = (
        float("nan") if body["com"] is None else 1e3 * np.linalg.norm(np.array(body["com"]) - com)
    )
    return (
        f"mass {body['mass']:.3f} kg ({100 * (body['mass'] - mass) / mass:+.1f} %), "
        f"COM error {com_error:.1f} mm"
    )


def panda_links_npz(directory: Path, name: str, one_path: bool) -> Path:
    """15 s at 100 Hz of the Panda arm (the URDF's links, noise 0.05 N m), moving along a
    multi-sine or (``one_path``) all joints along one chirp."""
    import pinocchio as pin

    from inertia_id_ros.core.robots import load_model, reduce_model

    model = reduce_model(load_model(example_robot_urdf("panda")), PANDA_ARM)
    t = np.arange(1500) / 100.0
    trajectory = ExcitingTrajectory.for_model(
        model, PANDA_ARM, period=15.0, seed=3, position_fraction=0.6, velocity_fraction=0.6
    )
    if one_path:
        sim = PayloadSimulator.panda(seed=3)
        trajectory = one_path_trajectory(sim)
    q, dq, ddq = trajectory(t)
    data = model.createData()
    effort = np.array([pin.rnea(model, data, *x) for x in zip(q, dq, ddq)])
    effort += np.random.default_rng(0).normal(0.0, 0.05, effort.shape)
    path = directory / f"{name}.npz"
    np.savez(path, t=t, joint_names=np.array(PANDA_ARM), q=q, dq=dq, ddq=ddq, effort=effort)
    return path


def identifiability_figures(result: dict | None) -> str:
    """The rank and how many parameters the data do not excite individually."""
    if not result or "identifiability" not in result:
        return "-"
    ident = result["identifiability"]
    return (
        f"rank {ident['rank']} of {ident['n_params']}; {len(ident['not_excited'])} not "
        f"excited individually; fit rms {result['residual_rms']:.3f}"
    )


def kuka_npz(
    directory: Path,
    run_path: Path,
    name: str,
    sign_joint: int | None = None,
    time_scale: float = 1.0,
    angle_scale: float = 1.0,
    step: int = 10,
) -> Path:
    """Every ``step``-th sample of a KUKA run as the NPZ fit-links reads; the mistakes: the
    torque sign of joint ``sign_joint``, ``time_scale``, ``angle_scale``."""
    content = np.load(run_path)
    effort = content["torques"][::step].copy()
    if sign_joint is not None:
        effort[:, sign_joint] *= -1.0
    path = directory / f"{name}.npz"
    np.savez(
        path,
        t=content["times"][::step] * time_scale,
        joint_names=np.array(KUKA_JOINTS),
        q=content["positions"][::step] * angle_scale,
        dq=content["velocities"][::step] * angle_scale,
        ddq=content["accelerations"][::step] * angle_scale,
        effort=effort,
    )
    return path


def kuka_figures(result: dict | None, urdf: str, held_out: Path) -> str:
    """Held-out joint torque RMS of the result on run 2 (and the URDF's)."""
    from inertia_id_ros.jobs.validate import validate
    from inertia_id_ros.offline.validation import DataSource

    if not result or "bodies" not in result:
        return "-"
    errors = {
        k: e.rms for k, e in validate(result, DataSource(str(held_out)), urdf).estimate.items()
    }
    return (
        f"run 2 RMS {errors['fit']:.3f} N m (URDF {errors['urdf']:.3f}); "
        f"fit rms {result['residual_rms']:.3f}"
    )


def icub_npz(
    directory: Path,
    name: str,
    flip: tuple[str, ...] = (),
    drop_contact: bool = False,
    time_scale: float = 1.0,
) -> Path:
    """2 s of the simulated iCub on one sole at 200 Hz; the mistakes: ``flip`` the sensors'
    signs (forgetting the real iCub's child_to_parent convention), ``drop_contact``,
    ``time_scale``."""
    from inertia_id_ros.sim.whole_body_robots import icub

    path = directory / f"{name}.npz"
    cache = directory / "icub_clean.npz"
    if not cache.exists():
        np.savez(cache, **icub(seed=1).record(2.0, 200.0))
    data = dict(np.load(cache))
    frames = list(data["ft_frames"])
    wrench = data["ft_wrench"].copy()
    for frame in flip:
        wrench[:, frames.index(frame)] *= -1.0
    data["ft_wrench"] = wrench
    data["t"] = data["t"] * time_scale
    if drop_contact:
        keep = [k for k, kind in enumerate(data["ft_types"]) if kind != "contact"]
        data.update(
            ft_frames=data["ft_frames"][keep],
            ft_types=data["ft_types"][keep],
            ft_wrench=wrench[:, keep],
        )
    np.savez(path, **data)
    return path


def icub_figures(result: dict | None) -> str:
    """Links at 0 kg, inconsistent links, the residual RMS."""
    if not result or "bodies" not in result:
        return "-"
    light = sum(b["mass"] < 1e-3 for b in result["bodies"])
    return (
        f"{light} links < 1 g of {len(result['bodies'])}; residual rms {result['residual_rms']:.3f}"
    )


# ---- real logs through input descriptions (issue 33) ----------------------------------------


def describe(directory: Path, name: str, description: dict) -> Path:
    """``description`` as ``name``.yaml in ``directory``."""
    import yaml

    path = directory / f"{name}.yaml"
    path.write_text(yaml.safe_dump(description, allow_unicode=True, sort_keys=False))
    return path


def canonical_layout(file: str, **signals: dict) -> dict:
    """The layout of a canonical NPZ (keys t, q, dq, ddq, effort; joint names in the file)."""
    joints = {
        "position": {"key": "q", "unit": "rad"},
        "velocity": {"key": "dq"},
        "acceleration": {"key": "ddq"},
        "effort": {"key": "effort", "unit": "N·m"},
    }
    for kind, changes in signals.items():
        joints[kind] = {**joints[kind], **changes}
    return {"streams": {"log": {"file": file, "time": "t", "time_unit": "s"}}, "joints": joints}


def bracketed_dump(directory: Path, npz: Path, repeats: int) -> Path:
    """The NPZ as a data dumper writes it: ``n stamp (q) [ok] (dq) [ok] (ddq) [ok] (tau)
    [ok]``, space-separated, no header row; ``repeats`` lines repeat the previous stamp."""
    content = np.load(npz)
    lines = []
    rng = np.random.default_rng(1)
    repeated = set(rng.choice(np.arange(1, content["t"].size), repeats, replace=False).tolist())
    for k, t in enumerate(content["t"]):
        stamp = content["t"][k - 1] if k in repeated else t
        groups = " ".join(
            "(" + " ".join(f"{v:.9g}" for v in content[key][k]) + ") [ok]"
            for key in ("q", "dq", "ddq", "effort")
        )
        lines.append(f"{k} {stamp:.6f} {groups}")
    path = directory / "dump.log"
    path.write_text("\n".join(lines) + "\n")
    return path


WRIST_COUPLING = np.eye(7)
WRIST_COUPLING[6, 5] = 1.0
"""Motor 7 turns with joints 6 and 7 (a coupled wrist)."""
GEAR_RATIOS = np.array([160.0, 160.0, 120.0, 120.0, 100.0, 80.0, 80.0])
ZERO_OFFSETS = np.array([0.0, np.pi / 2, 0.0, -np.pi / 2, 0.0, np.pi / 2, 0.0])


def motor_side_npz(directory: Path, npz: Path) -> Path:
    """The joint-side NPZ as a drive logs it: motor positions, velocities and currents (0.1
    N·m/A) through a coupled wrist, gear ratios and zero offsets, at its own rate."""
    content = np.load(npz)
    matrix = np.diag(GEAR_RATIOS) @ WRIST_COUPLING
    path = directory / "drives.npz"
    np.savez(
        path,
        stamp=content["t"],
        q_motor=(content["q"] + ZERO_OFFSETS) @ matrix.T,
        dq_motor=content["dq"] @ matrix.T,
        current=np.linalg.solve(matrix.T, content["effort"].T).T / 0.1,
    )
    return path


def motor_side_description(directory: Path) -> Path:
    """The description of :func:`motor_side_npz`'s log: the transmission, no code."""
    motors = [f"m{i}" for i in range(1, 8)]
    return describe(
        directory,
        "drives",
        {
            "streams": {"drives": {"file": "drives.npz", "time": "stamp", "time_unit": "s"}},
            "joints": {
                "names": dict(zip(motors, PANDA_ARM)),
                "position": {"key": "q_motor", "unit": "rad"},
                "velocity": {"key": "dq_motor"},
                "effort": {"key": "current", "unit": "A", "torque_constant": 0.1},
                "transmission": {
                    "gear_ratio": dict(zip(motors, GEAR_RATIOS.tolist())),
                    "coupling": WRIST_COUPLING.tolist(),
                    "zero_offset": dict(zip(motors, ZERO_OFFSETS.tolist())),
                },
            },
        },
    )


def validation_figure(out: str) -> str:
    """The held-out overall line of a fit's printed validation, in short."""
    lines = [line for line in out.splitlines() if line.startswith("overall")]
    if not lines:
        return "-"
    fit_rms, fit_pct, urdf_rms = lines[-1].split()[1:4]
    return f"held out: fit {fit_rms} ({fit_pct} %), URDF {urdf_rms}"


def description_scenarios(rows: list, d: Path, out: Path, kuka: Path) -> None:
    """Real logs' layouts and mistakes through input descriptions alone: units, signs and
    names refused naming the description's key; several runs per fit; a bracketed dump with
    repeated stamps; a motor-side log with a coupled wrist; differencing with the unloaded run
    described and started 1.17 s later."""
    panda = str(example_robot_urdf("panda"))
    links = panda_links_npz(d, "desc_links", one_path=False)
    fit_links = ["fit-links", "--urdf", panda, "--input"]
    ms = d / "desc_ms.npz"
    np.savez(ms, **{**np.load(links), "t": np.load(links)["t"] * 1e3})
    scenario(
        rows,
        "description: ms stamps, time_unit: s",
        fit_links + [str(describe(d, "ms", canonical_layout(ms.name)))],
        out,
        identifiability_figures,
    )
    deg = d / "desc_deg.npz"
    content = np.load(links)
    np.savez(deg, **{**content, **{k: np.degrees(content[k]) for k in ("q", "dq", "ddq")}})
    scenario(
        rows,
        "description: degrees, unit: rad",
        fit_links + [str(describe(d, "deg", canonical_layout(deg.name)))],
        out,
        identifiability_figures,
    )
    flipped = d / "desc_flip.npz"
    effort = content["effort"].copy()
    effort[:, 3] *= -1.0
    np.savez(flipped, **{**content, "effort": effort})
    scenario(
        rows,
        "description: torque sign of joint 4 flipped",
        fit_links + [str(describe(d, "flip", canonical_layout(flipped.name)))],
        out,
        identifiability_figures,
    )
    scenario(
        rows,
        "description: sign keyed by an unknown joint",
        fit_links
        + [
            str(
                describe(
                    d,
                    "unknown",
                    canonical_layout(links.name, effort={"sign": {"panda_joint9": -1}}),
                )
            )
        ],
        out,
        identifiability_figures,
    )
    scenario(
        rows,
        "description: corrected (sign: {panda_joint4: -1})",
        fit_links
        + [
            str(
                describe(
                    d,
                    "fixed",
                    canonical_layout(flipped.name, effort={"sign": {"panda_joint4": -1}}),
                )
            )
        ],
        out,
        identifiability_figures,
    )
    dump = bracketed_dump(d, links, repeats=6)
    header = ["n", "stamp", *(f"{s}{i}" for s in ("q", "v", "a", "e") for i in range(1, 8))]
    scenario(
        rows,
        "bracketed dump, 6 repeated stamps in 1500",
        fit_links
        + [
            str(
                describe(
                    d,
                    "dump",
                    {
                        "streams": {
                            "dump": {
                                "file": dump.name,
                                "time": "stamp",
                                "time_unit": "s",
                                "delimiter": " ",
                                "header": header,
                            }
                        },
                        "joints": {
                            "names": {str(i): j for i, j in enumerate(PANDA_ARM, 1)},
                            "position": {"columns": "q{joint}", "unit": "rad"},
                            "velocity": {"columns": "v{joint}"},
                            "acceleration": {"columns": "a{joint}"},
                            "effort": {"columns": "e{joint}", "unit": "N·m"},
                        },
                    },
                )
            )
        ],
        out,
        identifiability_figures,
    )
    motor_side_npz(d, links)
    scenario(
        rows,
        "motor-side log, coupled wrist, zeros ±π/2",
        fit_links + [str(motor_side_description(d))],
        out,
        identifiability_figures,
    )
    if (kuka / "measurements_1.npz").exists():
        urdf = str(kuka / "kuka_lwr4.urdf")
        layout = {
            "streams": {"run": {"file": "measurements_1.npz", "time": "times", "time_unit": "s"}},
            "joints": {
                "names": list(KUKA_JOINTS),
                "position": {"key": "positions", "unit": "rad"},
                "velocity": {"key": "velocities"},
                "acceleration": {"key": "accelerations"},
                "effort": {"key": "torques", "unit": "N·m"},
            },
        }
        for held_out in ("2", "3"):
            trained = [r for r in ("1", "2", "3") if r != held_out]
            runs = [{"name": f"run{r}", "file": str(kuka / f"measurements_{r}.npz")} for r in "123"]
            path = describe(
                d,
                f"kuka_runs{held_out}",
                {**layout, "runs": runs, "held_out_runs": [f"run{held_out}"]},
            )
            code, stdout, err = run(["fit-links", "--urdf", urdf, "--input", str(path)])
            label = f"KUKA runs {' + '.join(trained)} fitted, run {held_out} held out"
            rows.append(
                (
                    label,
                    code,
                    "; ".join(told(err, 90)) or "ok",
                    float("nan"),
                    validation_figure(stdout),
                )
            )
            print(f"{label:<44} exit {code}  {validation_figure(stdout)}", flush=True)
            for line in told(err):
                print(f"      said: {line}", flush=True)
    differencing_scenario(rows, d, out)


def differencing_scenario(rows: list, d: Path, out: Path) -> None:
    """fit-payload-torques with both runs described, the unloaded one started 1.17 s later."""
    from inertia_id_ros.sim.torques import panda_payload_torque_runs

    runs = panda_payload_torque_runs(duration=12.0, rate=200.0, seed=2)
    paths = {}
    for name, rec in (("unloaded", runs.unloaded), ("loaded", runs.loaded)):
        np.savez(d / f"{name}.npz", t=rec.t, q=rec.q, dq=rec.dq, effort=rec.effort)
        layout = canonical_layout(f"{name}.npz")
        del layout["joints"]["acceleration"]
        layout["joints"]["names"] = list(PANDA_ARM)
        if name == "unloaded":
            layout["window"] = [1.17, 100.0]
        paths[name] = describe(d, name, layout)
    truth = runs.payload_theta

    def figures(result: dict | None) -> str:
        if not result or "bodies" not in result:
            return "-"
        shift = (result.get("alignment") or {}).get("shift_s", float("nan"))
        return (
            f"shift {shift:+.3f} s; mass {result['bodies'][0]['mass']:.3f} kg "
            f"(truth {truth[0]:.3f})"
        )

    scenario(
        rows,
        "differencing: unloaded described, 1.17 s later",
        ["fit-payload-torques", "--urdf", str(example_robot_urdf("panda")), "--frame", SENSOR]
        + ["--input", str(paths["loaded"]), "--unloaded", str(paths["unloaded"])],
        out,
        figures,
    )


# ---- the table -----------------------------------------------------------------------------


def scenario(
    rows: list, label: str, argv: list[str], json_path: Path, figures: Callable[[dict | None], str]
) -> dict | None:
    """Run, read the JSON, append a row ``(label, code, said, max ratio, figures)``."""
    json_path.unlink(missing_ok=True)
    code, _, err = run(argv + ["--json", str(json_path)])
    result = json.loads(json_path.read_text()) if json_path.exists() else None
    rows.append((label, code, said(code, err, result), max_ratio(result), figures(result)))
    if RATIOS_OUT is not None and result and result.get("residual_ratios"):
        with open(RATIOS_OUT, "a") as f:
            f.write(
                json.dumps(
                    {
                        "label": label,
                        "ratios": result["residual_ratios"],
                        "gains": result.get("urdf_gains"),
                    }
                )
                + "\n"
            )
    print(
        f"{label:<44} exit {code}  ratio {max_ratio(result):7.2f}  {figures(result)}\n"
        f"    {said(code, err, result)}",
        flush=True,
    )
    for line in told(err):
        print(f"      said: {line}", flush=True)
    return result


def main() -> None:
    """Print one line per scenario and a Markdown table at the end."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--kuka", default="/work/shared/data/kuka_lwr4", help="directory of the KUKA LWR4+ runs"
    )
    parser.add_argument(
        "--ratios-out",
        metavar="JSONL",
        help="append every scenario's residual ratios and URDF gains to JSONL",
    )
    args = parser.parse_args()
    global RATIOS_OUT
    RATIOS_OUT = args.ratios_out
    rows: list = []
    with tempfile.TemporaryDirectory() as tmp:
        d = Path(tmp)
        out = d / "result.json"
        panda = str(example_robot_urdf("panda"))
        fit_payload = ["fit-payload", "--urdf", panda, "--sensor-frame", SENSOR, "--data"]
        sim = PayloadSimulator.panda(seed=2)
        figures = lambda r: payload_figures(r, sim)  # noqa: E731
        for seed in (0, 1, 2):
            scenario(
                rows,
                f"payload: undisturbed (noise seed {seed})",
                fit_payload + [str(payload_npz(d, f"p{seed}", sim, seed))],
                out,
                figures,
            )
        scenario(
            rows,
            "payload: F/T sign flipped",
            fit_payload + [str(payload_npz(d, "sign", sim, sign=-1.0))],
            out,
            figures,
        )
        scenario(
            rows,
            "payload: joint angles in degrees",
            fit_payload + [str(payload_npz(d, "deg", sim, angle_scale=np.degrees(1.0)))],
            out,
            figures,
        )
        scenario(
            rows,
            "payload: time in milliseconds",
            fit_payload + [str(payload_npz(d, "ms", sim, time_scale=1e3))],
            out,
            figures,
        )
        offset_sim = PayloadSimulator.panda(
            seed=2, offset=np.array([20.0, -15.0, 12.0, 0.5, -0.4, 0.2])
        )
        offset_data = str(payload_npz(d, "offset", offset_sim))
        offset_figures = lambda r: payload_figures(r, offset_sim)  # noqa: E731
        scenario(
            rows,
            "payload: --no-offset, sensor offset 28 N",
            fit_payload + [offset_data, "--no-offset"],
            out,
            offset_figures,
        )
        scenario(
            rows,
            "payload: corrected (offset fitted)",
            fit_payload + [offset_data],
            out,
            offset_figures,
        )
        chirp = PayloadSimulator.panda(seed=2)
        chirp.trajectory = one_path_trajectory(chirp)
        scenario(
            rows,
            "payload: one-path chirp",
            fit_payload + [str(payload_npz(d, "chirp", chirp))],
            out,
            lambda r: payload_figures(r, chirp),
        )

        panda_links = ["fit-links", "--urdf", panda, "--data"]
        scenario(
            rows,
            "Panda links (sim.): multi-sine",
            panda_links + [str(panda_links_npz(d, "links", one_path=False))],
            out,
            identifiability_figures,
        )
        scenario(
            rows,
            "Panda links (sim.): one-path chirp",
            panda_links + [str(panda_links_npz(d, "links_chirp", one_path=True))],
            out,
            identifiability_figures,
        )

        kuka = Path(args.kuka)
        if (kuka / "measurements_1.npz").exists():
            urdf = str(kuka / "kuka_lwr4.urdf")
            held_out = kuka_npz(d, kuka / "measurements_2.npz", "kuka_run2")
            fit_links = ["fit-links", "--urdf", urdf, "--data"]
            figures = lambda r: kuka_figures(r, urdf, held_out)  # noqa: E731
            for run_index in (1, 2, 3):
                scenario(
                    rows,
                    f"KUKA run {run_index}: undisturbed",
                    fit_links
                    + [str(kuka_npz(d, kuka / f"measurements_{run_index}.npz", f"k{run_index}"))],
                    out,
                    figures,
                )
            for joint in (1, 3):
                scenario(
                    rows,
                    f"KUKA run 1: torque sign of {KUKA_JOINTS[joint]} flipped",
                    fit_links
                    + [
                        str(
                            kuka_npz(d, kuka / "measurements_1.npz", f"ks{joint}", sign_joint=joint)
                        )
                    ],
                    out,
                    figures,
                )
            scenario(
                rows,
                "KUKA run 1: joint angles in degrees",
                fit_links
                + [
                    str(
                        kuka_npz(
                            d, kuka / "measurements_1.npz", "kdeg", angle_scale=np.degrees(1.0)
                        )
                    )
                ],
                out,
                figures,
            )
            scenario(
                rows,
                "KUKA run 1: time in milliseconds",
                fit_links + [str(kuka_npz(d, kuka / "measurements_1.npz", "kms", time_scale=1e3))],
                out,
                figures,
            )
        else:
            print(f"KUKA runs not found in {kuka}: skipped", flush=True)

        icub_urdf = str(example_robot_urdf("icub"))
        whole = ["fit-whole-body", "--urdf", icub_urdf, "--data"]
        scenario(rows, "iCub: undisturbed", whole + [str(icub_npz(d, "icub"))], out, icub_figures)
        scenario(
            rows,
            "iCub: undisturbed, --bounding-ellipsoid",
            whole + [str(icub_npz(d, "icub")), "--bounding-ellipsoid"],
            out,
            icub_figures,
        )
        legs = ("l_leg_ft_sensor", "l_foot_ft_sensor", "r_leg_ft_sensor", "r_foot_ft_sensor")
        flipped = str(icub_npz(d, "icub_flip", flip=legs))
        scenario(
            rows, "iCub: leg sensors' sign flips forgotten", whole + [flipped], out, icub_figures
        )
        scenario(
            rows,
            "iCub: corrected (--flip-wrench-sign)",
            whole + [flipped] + [item for leg in legs for item in ("--flip-wrench-sign", leg)],
            out,
            icub_figures,
        )
        no_contact = str(icub_npz(d, "icub_nc", drop_contact=True))
        scenario(
            rows, "iCub: no contact sensor (floating base)", whole + [no_contact], out, icub_figures
        )
        scenario(
            rows,
            "iCub: no contact sensor, --free-fall",
            whole + [no_contact, "--free-fall"],
            out,
            icub_figures,
        )
        scenario(
            rows,
            "iCub: time in milliseconds",
            whole + [str(icub_npz(d, "icub_ms", time_scale=1e3))],
            out,
            icub_figures,
        )
        description_scenarios(rows, d, out, Path(args.kuka))
    print("\n| input and mistake | exit | what the tool said | max residual ratio | figures |")
    print("| --- | --- | --- | --- | --- |")
    for label, code, text, ratio, figures in rows:
        print(f"| {label} | {code} | {text} | {ratio:.2f} | {figures} |")


if __name__ == "__main__":
    main()
