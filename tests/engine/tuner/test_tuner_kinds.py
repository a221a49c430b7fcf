"""The tuner registry: one list of tuners, read by the job schema, the CLI and the README."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from tests.engine.tuner.tuner_helpers import make_task
from tunecli.engine.tuner.tuner_kinds import TUNERS, tuner_kind
from tunecli.errors import TuneError

README = Path(__file__).resolve().parents[3] / "README.md"


def readme_tuner_rows() -> dict[str, tuple[str, list[str]]]:
    """``kind -> (class, option names)`` from the table under "### Tuners" in the README."""
    text = README.read_text(encoding="utf-8")
    section = text.split("### Tuners", 1)[1].split("\n### ", 1)[0]
    rows = {}
    for line in section.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if line.startswith("| `") and len(cells) == 4:
            kind, cls, _how, options = cells
            rows[kind.strip("`")] = (cls.strip("`"), re.findall(r"`(\w+)`", options))
    return rows


def test_readme_lists_exactly_the_registered_tuners() -> None:
    rows = readme_tuner_rows()
    assert list(rows) == list(TUNERS)
    for name, kind in TUNERS.items():
        assert rows[name] == (kind.cls.__name__, [opt.name for opt in kind.options]), name
    text = README.read_text(encoding="utf-8")
    assert f"--tuner {'|'.join(TUNERS)}`" in text
    assert f"kind: xgb                      # {' | '.join(TUNERS)} " in text


def test_readme_lists_the_choices_of_choice_options() -> None:
    rows = README.read_text(encoding="utf-8").split("### Tuners", 1)[1].split("\n### ", 1)[0]
    for kind in TUNERS.values():
        for opt in kind.options:
            if opt.choices:
                assert f"`{opt.name}` ({', '.join(opt.choices)})" in rows, opt.name


def test_make_checks_options_by_their_declaration() -> None:
    task = make_task(n=8, parts=2)
    assert type(tuner_kind("ga").make(task, seed=1, pop_size=4, elite_num=2)).__name__ == "GATuner"
    assert tuner_kind("xgb").make(task, seed=1, min_seed_records=64).min_seed_records == 64
    bad: list[tuple[str, dict[str, Any], str]] = [
        ("ga", {"pop_size": 0}, "tuner ga: pop_size: expected an integer >= 1, got 0"),
        ("ga", {"mutation_prob": 1.5}, "tuner ga: mutation_prob: expected a number between 0 and 1, got 1.5"),
        ("ga", {"pop_size": 2}, "tuner ga: pop_size: elite_num (3) must not exceed pop_size (2)"),
        ("xgb", {"loss_type": "hinge"}, "tuner xgb: loss_type: expected one of reg, rank, rank-binary, "
                                        "got 'hinge'"),
        ("xgb", {"plan_size": 8, "first_fit": 9}, "tuner xgb: first_fit: must not exceed plan_size (9 > 8)"),
        ("xgb", {"min_seed_records": 0}, "tuner xgb: min_seed_records: expected an integer >= 1, got 0"),
        ("random", {"plan_size": 8}, "tuner random: plan_size: unknown option of tuner random "
                                     "(expected one of: none)"),
    ]
    for name, options, message in bad:
        with pytest.raises(TuneError) as info:
            tuner_kind(name).make(task, **options)
        assert str(info.value) == message
    with pytest.raises(TuneError) as info:
        tuner_kind("annealing")
    assert str(info.value) == "unknown tuner 'annealing' (registered: random, gridsearch, ga, xgb)"
