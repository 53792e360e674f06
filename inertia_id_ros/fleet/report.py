"""A fleet's report (``inertia-id fleet report``): one self-contained HTML page (inline CSS, SVG
plots drawn here, no script or file from elsewhere): the fleet's robots with their runs and
alarms; per robot with an alarm, each drifting parameter over time with its ±2 standard-error
band, its reference and where the change began; the failed and refused runs with their errors
and findings."""

from __future__ import annotations

import html
from collections.abc import Sequence
from datetime import datetime
from pathlib import Path

from inertia_id_ros.fleet.drift import Alarm, DriftOptions, detect_drift, false_alarm_rate
from inertia_id_ros.fleet.store import History, Store
from inertia_id_ros.fleet.tasks import OK, RunRecord

STYLE = """
body{font-family:system-ui,sans-serif;margin:2em;color:#222}
table{border-collapse:collapse;margin:1em 0}td,th{border:1px solid #ccc;padding:.3em .6em}
th{background:#f3f3f3}td:first-child{white-space:nowrap}.alarm{color:#b00;font-weight:bold}.ok{color:#070}
svg{background:#fff;border:1px solid #ddd;margin:.5em 0}
"""
SCRIPT = """
document.addEventListener("DOMContentLoaded", function () {
  var plots = document.querySelectorAll("svg.plot");
  document.body.setAttribute("data-plots", String(plots.length));
});
"""
"""Counts the page's plots once loaded (``data-plots`` on ``<body>``: what a browser test reads)."""
WIDTH, HEIGHT, MARGIN = 640, 220, 56
"""A plot's size and left margin (px)."""


def write_report(store: Store, path: str | Path, options: DriftOptions = DriftOptions()) -> Path:
    """Write the report of the fleet in ``store`` to ``path`` (HTML); its path."""
    alarms = detect_drift(store, options)
    runs = store.runs()
    parts = [
        "<!DOCTYPE html><html><head><meta charset='utf-8'><title>Fleet report</title>",
        f"<style>{STYLE}</style><script>{SCRIPT}</script></head><body>",
        "<h1>Fleet report</h1>",
        f"<p>{len(store.robots())} robots, {len(runs)} runs stored in {html.escape(store.url)}; "
        f"drift test: CUSUM (slack {options.slack:g}, threshold {options.threshold:g} standard "
        f"errors) after {options.reference_runs} reference runs; false-alarm rate of a "
        f"drift-free 20-run history {false_alarm_rate(options):.1e}.</p>",
        _fleet_table(store, runs, alarms),
    ]
    for robot in sorted({a.robot for a in alarms}):
        parts.append(f"<h2 id='{html.escape(robot)}'>{html.escape(robot)}</h2>")
        histories = {h.name: h for h in store.histories(robot)}
        for alarm in (a for a in alarms if a.robot == robot):
            parts.append(_plot(histories[alarm.parameter], alarm))
    parts.append(_failures(runs))
    parts.append("</body></html>")
    path = Path(path)
    path.write_text("\n".join(parts), encoding="utf-8")
    return path


def _fleet_table(store: Store, runs: Sequence[RunRecord], alarms: Sequence[Alarm]) -> str:
    """The robots' table: runs identified, failed, and alarms."""
    rows = [
        "<h2>Robots</h2><table><tr><th>robot</th><th>mode</th><th>runs</th><th>failed</th>"
        "<th>last run</th><th>alarms</th></tr>"
    ]
    for robot in store.robots():
        mine = [r for r in runs if r.robot == robot]
        failed = sum(r.status != OK for r in mine)
        found = [a for a in alarms if a.robot == robot]
        text = (
            "; ".join(
                f"<a class='alarm' href='#{html.escape(robot)}'>{html.escape(a.parameter)}</a> "
                f"from {a.began[:10]} ({a.size:+.3g}, {a.z:.1f} SE)"
                for a in found
            )
            or "<span class='ok'>none</span>"
        )
        rows.append(
            f"<tr><td>{html.escape(robot)}</td><td>{html.escape(mine[0].mode)}</td>"
            f"<td>{len(mine)}</td><td>{failed}</td><td>{mine[-1].time[:10]}</td><td>{text}</td>"
            "</tr>"
        )
    return "".join(rows) + "</table>"


def _failures(runs: Sequence[RunRecord]) -> str:
    """The failed and refused runs: error and findings."""
    failed = [r for r in runs if r.status != OK]
    if not failed:
        return "<h2>Failed runs</h2><p>none</p>"
    rows = [
        "<h2>Failed runs</h2><table><tr><th>robot</th><th>run</th><th>time</th>"
        "<th>status</th><th>error</th><th>findings</th></tr>"
    ]
    for r in failed:
        findings = "<br>".join(
            html.escape(f"{f.get('severity', '')}: {f.get('message', '')}") for f in r.findings
        )
        rows.append(
            f"<tr><td>{html.escape(r.robot)}</td><td>{html.escape(r.run)}</td>"
            f"<td>{r.time[:16]}</td><td>{r.status}</td><td>{html.escape(r.error)}</td>"
            f"<td>{findings}</td></tr>"
        )
    return "".join(rows) + "</table>"


def _plot(history: History, alarm: Alarm) -> str:
    """An SVG of ``history`` (its ``alarm.tool`` runs) over time: the values with their ±2
    standard-error band, the reference and the change's start."""
    import numpy as np

    keep = [i for i, t in enumerate(history.tools) if alarm.tool in ("*", t)]
    times = np.array([datetime.fromisoformat(history.times[i]).timestamp() for i in keep])
    values = np.array([history.values[i] for i in keep])
    stds = np.nan_to_num(np.array([history.stds[i] for i in keep]))
    low, high = float(np.min(values - 2 * stds)), float(np.max(values + 2 * stds))
    low, high = min(low, alarm.reference), max(high, alarm.reference)
    pad = 0.05 * (high - low or 1.0)
    low, high = low - pad, high + pad
    t0, t1 = float(times[0]), float(times[-1]) if times[-1] > times[0] else float(times[0]) + 1

    def x(t: float) -> float:
        return MARGIN + (WIDTH - MARGIN - 10) * (t - t0) / (t1 - t0)

    def y(v: float) -> float:
        return HEIGHT - 30 - (HEIGHT - 50) * (v - low) / (high - low)

    band = [f"{x(t):.1f},{y(v + 2 * s):.1f}" for t, v, s in zip(times, values, stds)]
    band += [
        f"{x(t):.1f},{y(v - 2 * s):.1f}" for t, v, s in reversed(list(zip(times, values, stds)))
    ]
    line = " ".join(f"{x(t):.1f},{y(v):.1f}" for t, v in zip(times, values))
    began = x(datetime.fromisoformat(alarm.began).timestamp())
    title = f"{alarm.parameter}" + ("" if alarm.tool == "*" else f" (tool {alarm.tool})")
    return (
        f"<h3>{html.escape(title)}</h3>"
        f"<svg class='plot' width='{WIDTH}' height='{HEIGHT}' viewBox='0 0 {WIDTH} {HEIGHT}' "
        "xmlns='http://www.w3.org/2000/svg'>"
        f"<polygon points='{' '.join(band)}' fill='#9ecae1' opacity='0.6'/>"
        f"<line x1='{MARGIN}' x2='{WIDTH - 10}' y1='{y(alarm.reference):.1f}' "
        f"y2='{y(alarm.reference):.1f}' stroke='#555' stroke-dasharray='4 3'/>"
        f"<line x1='{began:.1f}' x2='{began:.1f}' y1='10' y2='{HEIGHT - 30}' stroke='#b00'/>"
        f"<polyline points='{line}' fill='none' stroke='#08519c' stroke-width='1.5'/>"
        + "".join(
            f"<circle cx='{x(t):.1f}' cy='{y(v):.1f}' r='2.5' fill='#08519c'/>"
            for t, v in zip(times, values)
        )
        + f"<text x='4' y='16' font-size='11'>{high:.4g}</text>"
        f"<text x='4' y='{HEIGHT - 32}' font-size='11'>{low:.4g}</text>"
        f"<text x='{MARGIN}' y='{HEIGHT - 10}' font-size='11'>{history.times[keep[0]][:10]}</text>"
        f"<text x='{WIDTH - 90}' y='{HEIGHT - 10}' font-size='11'>"
        f"{history.times[keep[-1]][:10]}</text>"
        f"<text x='{began + 4:.1f}' y='22' font-size='11' fill='#b00'>began {alarm.began[:10]}"
        "</text></svg>"
        f"<p>reference {alarm.reference:.5g} ± {alarm.reference_std:.2g}, change "
        f"{alarm.size:+.3g} ({alarm.z:.1f} standard errors), detected {alarm.detected[:10]}; "
        "band: ±2 standard errors of each run; dashed: the reference.</p>"
    )
