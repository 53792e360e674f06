"""The lines the commands print of a result (no numpy: the command line imports this module for
``--help``): a body of a result JSON (:func:`body_lines`), the samples dropped
(:func:`dropped_text`), a whole-body result's links (:func:`whole_body_table`)."""

from __future__ import annotations

from typing import Any


def body_lines(body: dict[str, Any]) -> list[str]:
    """Human summary of a ``bodies`` entry."""
    lines = [f"  mass      {body['mass']:.4f} kg"]
    if body["com"] is not None:
        com = ", ".join(f"{1e3 * c:.2f}" for c in body["com"])
        inertia = ", ".join(f"{1e3 * i:.4f}" for i in body["inertia_com"])
        lines += [
            f"  COM       [{com}] mm",
            f"  inertia about the COM [ixx, ixy, ixz, iyy, iyz, izz]: [{inertia}] 1e-3 kg m²",
        ]
    verdict = "yes" if body["fully_consistent"] else "NO"
    lines.append(
        f"  fully physically consistent: {verdict} "
        f"(λmin(J) = {body['min_pseudo_inertia_eig']:.3e} kg m²)"
        + (" at_bound: on the consistency boundary" if body.get("at_bound") else "")
    )
    return lines


def dropped_text(dropped: dict[str, int]) -> str:
    """``{"gap": 3, "no_joint_state": 11}`` -> ``"3 gap, 11 no_joint_state"``."""
    return ", ".join(f"{count} {reason}" for reason, count in sorted(dropped.items()))


def whole_body_table(result: dict[str, Any]) -> list[str]:
    """The table of a whole-body result's links and its sensor offsets."""
    lines = [f"{'link':<22}{'mass (kg)':>10}{'λmin(J)':>12}  consistent  identifiability"]
    for body in result["bodies"]:
        lines.append(
            f"{body['name']:<22}{body['mass']:10.3f}{body['min_pseudo_inertia_eig']:12.2e}"
            f"  {'yes' if body['fully_consistent'] else 'NO ':<10}  "
            f"{body['identifiability']}" + ("  at_bound" if body.get("at_bound") else "")
        )
    for frame, offset in result["sensor_offsets"].items():
        lines.append(f"offset {frame:<20} " + " ".join(f"{v:8.3f}" for v in offset))
    return lines
