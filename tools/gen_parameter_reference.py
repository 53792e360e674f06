#!/usr/bin/env python3
"""Write docs/reference/parameters.md from the node's parameter table.

The table is ``PARAMETERS`` in ``inertia_id_ros/ros/parameters.py`` (no rclpy needed). Run after
changing it:

    .venv/bin/python tools/gen_parameter_reference.py

``test/unit/project/test_docs.py`` regenerates the page in memory and fails when the committed
file differs.
"""

from __future__ import annotations

import sys
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
OUTPUT = ROOT / "docs" / "reference" / "parameters.md"
COMMAND = ".venv/bin/python tools/gen_parameter_reference.py"

# The table's groups, in its order: a parameter belongs to the group whose prefix starts its
# description (the prefix is dropped in the page); the rest are common to every mode.
GROUPS = (
    ("Every mode", None),
    ("Payload mode", "Payload mode: "),
    ("Links mode", "Links mode: "),
    ("Whole-body mode", "Whole-body mode: "),
    ("The excitation wizard (`~/excite`)", "~/excite: "),
)

_ROS_TYPES = ((bool, "bool"), (int, "integer"), (float, "double"), (str, "string"))


def _type_name(spec) -> str:
    if spec.array_type:
        return spec.array_type
    for python_type, name in _ROS_TYPES:
        if isinstance(spec.default, python_type):
            return name
    raise TypeError(f"parameter {spec.name!r}: no ROS type for default {spec.default!r}")


def _default(spec) -> str:
    value = spec.default
    if value is None:
        return "unset"
    if isinstance(value, bool):
        return "`true`" if value else "`false`"
    if isinstance(value, str):
        return f'`"{value}"`'
    return f"`{value!r}`"


def _cell(text: str) -> str:
    """Text for a Markdown table cell: no pipes, no HTML tags, no emphasis."""
    for raw, escaped in (("<", "&lt;"), ("|", "\\|"), ("*", "\\*")):
        text = text.replace(raw, escaped)
    return " ".join(text.split())


def _group_of(spec) -> tuple[str, str]:
    """(group title, description without the group's prefix)."""
    for title, prefix in GROUPS:
        if prefix and spec.description.startswith(prefix):
            rest = spec.description[len(prefix):]
            return title, rest[:1].upper() + rest[1:]
    return GROUPS[0][0], spec.description


def render(parameters=None) -> str:
    """The page's Markdown for ``parameters`` (default: the node's ``PARAMETERS``)."""
    if parameters is None:
        from inertia_id_ros.ros.parameters import PARAMETERS as parameters
    grouped: dict[str, list] = {title: [] for title, _ in GROUPS}
    for spec in parameters:
        title, description = _group_of(spec)
        grouped[title].append((spec, description))
    intro = textwrap.fill(
        f"Every parameter of `inertia-id-node`, {len(parameters)} in all, as the node declares "
        "them (`inertia_id_ros/ros/parameters.py`, `PARAMETERS`; `ros2 param describe` shows the "
        "same descriptions). **Run time** parameters may be changed while the node runs "
        "(`ros2 param set`); the others are read-only and are read at start-up. Types are ROS 2 "
        "parameter types; *unset* means the parameter has no default value.",
        width=100, break_on_hyphens=False)
    lines = [
        "<!-- Generated from PARAMETERS in inertia_id_ros/ros/parameters.py by",
        f"     {COMMAND}",
        "     Do not edit: change the table and run the command. -->",
        "",
        "# Node parameters",
        "",
        intro,
        "",
        "How the node validates and applies them: [The node](node.md).",
        "",
    ]
    for title, _ in GROUPS:
        rows = grouped[title]
        if not rows:
            continue
        lines += [f"## {title}", "",
                  "| name | type | default | changes | description |",
                  "| --- | --- | --- | --- | --- |"]
        for spec, description in rows:
            changes = "run time" if spec.runtime else "read-only"
            lines.append(f"| `{spec.name}` | {_type_name(spec)} | {_default(spec)} | {changes} | "
                         f"{_cell(description)} |")
        lines.append("")
    return "\n".join(lines)


def main() -> int:
    OUTPUT.parent.mkdir(parents=True, exist_ok=True)
    text = render()
    if OUTPUT.exists() and OUTPUT.read_text(encoding="utf-8") == text:
        print(f"{OUTPUT.relative_to(ROOT)} is up to date")
        return 0
    OUTPUT.write_text(text, encoding="utf-8")
    print(f"wrote {OUTPUT.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.path.insert(0, str(ROOT))
    sys.exit(main())
