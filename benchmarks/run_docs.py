"""Run every how-to page's and the README's commands as written, the long blocks included, and
print a table: per page, the commands run, how long they took, those that failed, the blocks
left out and why. ``--write`` regenerates the figures the pages quote (docs/figures.yaml and the
pages' ``<!-- fig NAME -->`` values) from this run.

    .venv/bin/python benchmarks/run_docs.py [--write] [--page replay-bag]
"""

from __future__ import annotations

import argparse
import re
import sys
import tempfile
from pathlib import Path

import yaml

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "test"))

from helpers.howtos import (  # noqa: E402
    FIGURES,
    PAGES,
    REPO,
    figure_table,
    figure_value,
    page_name,
    run_page,
)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--write", action="store_true", help="regenerate the quoted figures")
    parser.add_argument("--page", action="append", help="only pages whose name contains this")
    args = parser.parse_args()
    table, failed = figure_table(), 0
    print(f"{'page':<34}{'commands':>9}{'seconds':>9}  failed / left out")
    for page in PAGES:
        if args.page and not any(part in page_name(page) for part in args.page):
            continue
        with tempfile.TemporaryDirectory() as folder:
            run = run_page(page, Path(folder), long=True)
            bad = [o for o in run.outcomes if o.code != o.command.exit]
            failed += len(bad)
            seconds = sum(o.seconds for o in run.outcomes)
            notes = [f"FAILED `{o.command.text[:60]}` ({o.code})" for o in bad] + run.left_out
            print(
                f"{page_name(page):<34}{len(run.outcomes):>9}{seconds:>9.1f}  " + "; ".join(notes)
            )
            for name, spec in table.items():
                if spec["page"] == page_name(page):
                    value = figure_value(run, name, spec)
                    print(f"    {name} = {value} (quoted {spec['value']})")
                    if args.write and value is not None:
                        spec["value"] = float(spec["format"].format(value))
    if args.write:
        FIGURES.write_text(yaml.safe_dump(table, sort_keys=True, allow_unicode=True))
        for page in PAGES:
            text = page.read_text(encoding="utf-8")
            for name, spec in table.items():
                if spec["page"] == page_name(page):
                    shown = spec["format"].format(float(spec["value"]))
                    text = re.sub(
                        rf"(<!-- fig {re.escape(name)} -->)[^<]*(<!-- /fig -->)",
                        rf"\g<1>{shown}\g<2>",
                        text,
                    )
            page.write_text(text, encoding="utf-8")
        print(f"wrote {FIGURES.relative_to(REPO)} and the pages' figures")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
