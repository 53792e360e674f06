"""The docs run as written: every how-to page's and the README's shell commands, in order, in a
folder of their own, exit as the page says and print the figures it quotes (within the
tolerances of ``docs/figures.yaml``). Blocks marked ``long`` (and the figures they print) run in
``benchmarks/run_docs.py``, which the README names; ``skip`` blocks say why they cannot run here
(see ``test/helpers/howtos.py``)."""

from __future__ import annotations

import os
import random

import pytest

from helpers.howtos import (
    PAGES,
    blocks,
    figure_table,
    figure_value,
    page_figures,
    page_name,
    run_page,
    within,
)


@pytest.fixture
def own_domain(monkeypatch):
    """A DDS domain of its own for the nodes a page starts, discovery on this machine only."""
    monkeypatch.setenv("ROS_DOMAIN_ID", str(random.Random(os.getpid()).randrange(120, 200)))
    monkeypatch.setenv("ROS_AUTOMATIC_DISCOVERY_RANGE", "LOCALHOST")


@pytest.mark.long_running
@pytest.mark.parametrize("page", PAGES, ids=page_name)
def test_a_page_runs_as_written(page, tmp_path, own_domain):
    run = run_page(page, tmp_path)
    for outcome in run.outcomes:
        assert outcome.code == outcome.command.exit, (
            f"{page_name(page)}, block {outcome.command.block}: `{outcome.command.text}` exited "
            f"{outcome.code}, the page says {outcome.command.exit}:\n{outcome.output[-3000:]}"
        )
    quoted = page_figures(page)
    for name, spec in figure_table().items():
        if spec["page"] != page_name(page):
            continue
        value = figure_value(run, name, spec)
        if value is None:  # a long block's: benchmarks/run_docs.py checks it
            assert blocks(page)[spec["block"]].mark == "long", f"{name}: its command did not run"
            continue
        assert within(value, float(spec["value"]), str(spec["tolerance"])), (
            f"{page_name(page)} quotes {name} = {spec['value']}, the run printed {value:g} "
            f"(tolerance {spec['tolerance']}); regenerate: .venv/bin/python benchmarks/run_docs.py "
            "--write"
        )
        assert quoted.get(name) == spec["format"].format(float(spec["value"])), (
            f"{page_name(page)} shows {name} as {quoted.get(name)!r}, docs/figures.yaml has "
            f"{spec['value']}; regenerate: .venv/bin/python benchmarks/run_docs.py --write"
        )


def test_every_quoted_figure_is_in_the_table_and_every_block_is_run_or_says_why():
    table = figure_table()
    for page in PAGES:
        for name in page_figures(page):
            assert table.get(name, {}).get("page") == page_name(page), (
                f"{page_name(page)} quotes {name}, which docs/figures.yaml does not list for it"
            )
        for block in blocks(page):
            assert block.mark in ("", "long", "until-stopped") or (
                block.skipped and "(" in block.mark
            ), f"{page_name(page)}: block marked {block.mark!r} (skip needs a reason in brackets)"
    pages = {page_name(page) for page in PAGES}
    assert {spec["page"] for spec in table.values()} <= pages
