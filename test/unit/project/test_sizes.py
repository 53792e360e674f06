"""No function over 80 lines and no module over 600 in the package, unless the module's
docstring says why in a line starting ``Size:``."""

from __future__ import annotations

import ast

from helpers.paths import REPO

MAX_MODULE_LINES = 600
MAX_FUNCTION_LINES = 80


def test_modules_and_functions_stay_small_or_say_why() -> None:
    unexplained = []
    for path in sorted((REPO / "inertia_id_ros").rglob("*.py")):
        if path.parent.name in ("msg", "srv"):
            continue
        text = path.read_text()
        tree = ast.parse(text)
        explained = any(
            line.startswith("Size: ") for line in (ast.get_docstring(tree) or "").splitlines()
        )
        name = path.relative_to(REPO)
        too_long = [f"{name}: {len(text.splitlines())} lines"]
        too_long = too_long if len(text.splitlines()) > MAX_MODULE_LINES else []
        for node in ast.walk(tree):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                lines = node.end_lineno - node.lineno + 1 if node.end_lineno else 0
                if lines > MAX_FUNCTION_LINES:
                    too_long.append(f"{name}: {node.name} {lines} lines")
        if too_long and not explained:
            unexplained += too_long
    assert unexplained == []
