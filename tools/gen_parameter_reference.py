#!/usr/bin/env python3
"""Write docs/reference/parameters.md from the node's parameter table.

The table is ``PARAMETERS`` in ``inertia_id_ros/modes/parameters.py`` (no rclpy needed): the
parameters of every mode (``COMMON_PARAMETERS``), each registered mode's own
(``inertia_id_ros.modes``: ``Mode.parameters``, a section per mode) and the excitation wizard's
(``EXCITE_TABLE``). Run after changing them:

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


def _sections() -> list[tuple[str, str, tuple]]:
    """(title, description prefix, parameters) of each section: the common parameters, each
    registered mode's (a parameter two modes share under the first), the excitation wizard's."""
    from inertia_id_ros import modes
    from inertia_id_ros.modes.parameters import COMMON_PARAMETERS, EXCITE_TABLE

    sections = [("Every mode", "", COMMON_PARAMETERS)]
    listed = {p.name for p in COMMON_PARAMETERS}
    for mode in modes.modes():
        own = tuple(p for p in mode.parameters if p.name not in listed)
        listed |= {p.name for p in own}
        sections.append((mode.title, f"{mode.title}: ", own))
    sections.append(("The excitation wizard (`~/excite`)", "~/excite: ", EXCITE_TABLE))
    return sections


def render() -> str:
    """The page's Markdown for the node's parameters (``PARAMETERS``), a section per mode."""
    from inertia_id_ros.modes.parameters import PARAMETERS

    intro = textwrap.fill(
        f"Every parameter of `inertia-id-node`, {len(PARAMETERS)} in all, as the node declares "
        "them (`inertia_id_ros/modes/parameters.py`, `PARAMETERS`: the common ones, then each "
        "mode's own, `Mode.parameters` in `inertia_id_ros/modes/`; `ros2 param describe` shows "
        "the same descriptions). **Run time** parameters may be changed while the node runs "
        "(`ros2 param set`); the others are read-only and are read at start-up. Types are ROS 2 "
        "parameter types; *unset* means the parameter has no default value.",
        width=100,
        break_on_hyphens=False,
    )
    lines = [
        "<!-- Generated from PARAMETERS in inertia_id_ros/modes/parameters.py by",
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
    for title, prefix, parameters in _sections():
        if not parameters:
            continue
        lines += [
            f"## {title}",
            "",
            "| name | type | default | changes | description |",
            "| --- | --- | --- | --- | --- |",
        ]
        for spec in parameters:
            description = spec.description
            if prefix and description.startswith(prefix):
                rest = description[len(prefix) :]
                description = rest[:1].upper() + rest[1:]
            changes = "run time" if spec.runtime else "read-only"
            lines.append(
                f"| `{spec.name}` | {_type_name(spec)} | {_default(spec)} | {changes} | "
                f"{_cell(description)} |"
            )
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
