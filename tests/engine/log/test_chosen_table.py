"""A table of records chooses among a key's records in several layouts when the key is first read:
loading a whole package traces no template, and whatever is read, in any order, after any number of
loads, reads as the table chosen when the records were loaded."""

from __future__ import annotations

import random

import pytest

from tests.engine.log.test_layout_choice import TARGET, WORKLOAD, config_in, record, task  # noqa: F401
from tunecli.engine.codegen import kernel_cache
from tunecli.engine.log import layout_choice, tophub
from tunecli.engine.log.history_best import ApplyHistoryBest
from tunecli.engine.log.layout_choice import ChosenTable
from tunecli.engine.log.record import load_from_file

TABLES = ("best_by_target", "best_by_targetkey", "best_by_model", "best_by_cpu")


@pytest.fixture
def fresh_defaults(monkeypatch):
    """No default layout traced yet in this process; the dict of those traced."""
    traced: dict = {}
    monkeypatch.setattr(layout_choice, "_DEFAULTS", traced)
    return traced


def package_records() -> list:
    return [pair for path in tophub.package_files("llvm") for pair in load_from_file(str(path))]


def test_loading_a_package_traces_no_template(fresh_defaults):
    context = ApplyHistoryBest(package_records(), pretuned=False, nearest=False)
    assert context.best_by_target and fresh_defaults == {}
    key = next(iter(context.best_by_target))
    assert key in context.best_by_target and len(context.best_by_target) > 1
    assert fresh_defaults == {}  # keys, membership and size need no choice


def test_a_read_traces_only_its_own_workload(fresh_defaults):
    context = ApplyHistoryBest(package_records(), pretuned=False, nearest=False)
    table = next(getattr(context, name) for name in TABLES if getattr(context, name)._pending)
    key = next(iter(table._pending))
    assert table[key] is not None
    assert {workload for _, workload in fresh_defaults} == {key[1]}


def test_reads_in_any_order_give_the_tables_chosen_at_load():
    records = package_records()
    eager = ApplyHistoryBest(records, pretuned=False, nearest=False)
    chosen = {name: dict(getattr(eager, name).items()) for name in TABLES}
    lazy = ApplyHistoryBest(records, pretuned=False, nearest=False)
    reads = [(name, key) for name in TABLES for key in chosen[name]]
    random.Random(0).shuffle(reads)
    for name, key in reads:
        table = getattr(lazy, name)
        got = table.get(key) if len(key) % 2 else table[key]
        assert same(got, chosen[name][key]), (name, key)
    assert all(getattr(lazy, name) == chosen[name] for name in TABLES)


def same(record, other) -> bool:
    return record[0] is other[0] and record[1] is other[1]


def test_a_later_load_reopens_a_choice_already_read(task):  # noqa: F811
    default, other = config_in(task, True), config_in(task, False)
    first = [record(task, default, 1.00), record(task, other, 0.98)]
    later = [record(task, other, 0.80)]
    context = ApplyHistoryBest(first, pretuned=False, nearest=False)
    key = (TARGET, WORKLOAD)
    assert context.best_by_target[key][0].config.index == default.index  # a near tie
    context.load(later)
    assert same(context.best_by_target[key], later[0])
    assert dict(context.best_by_target.items()) == dict(
        ApplyHistoryBest(first + later, pretuned=False, nearest=False).best_by_target.items())


def test_storing_a_key_cancels_its_choice():
    table = ChosenTable()
    calls = []
    table.defer(("k",), lambda: calls.append(1) or [])
    assert ("k",) in table and len(table) == 1 and calls == []
    table[("k",)] = "stored"
    assert table[("k",)] == "stored" and dict(table) == {("k",): "stored"} and calls == []


def test_a_deferred_key_is_chosen_once_by_any_read(task):  # noqa: F811
    default, other = config_in(task, True), config_in(task, False)
    candidates = [record(task, other, 0.98), record(task, default, 1.00)]
    calls = []

    def read():
        calls.append(1)
        return candidates

    for reader in (lambda t: t[("k",)], lambda t: t.get(("k",)), lambda t: dict(t)[("k",)],
                   lambda t: list(t.values())[0], lambda t: dict(t.items())[("k",)],
                   lambda t: t.copy()[("k",)], lambda t: t.pop(("k",))):
        table = ChosenTable()
        table.defer(("k",), read)
        calls.clear()
        assert reader(table) is candidates[1] and calls == [1]


class Untraceable:
    """A ``create`` that counts its calls and fails (an untraceable record competes by cost: None)."""

    def __init__(self) -> None:
        self.calls = 0

    def __call__(self, *args, **kwargs):
        self.calls += 1
        raise ValueError("traced")


def test_a_traced_default_layout_is_kept_in_the_kernel_cache(fresh_defaults, monkeypatch, tmp_path):
    monkeypatch.setenv("TUNECLI_CACHE_DIR", str(tmp_path))
    monkeypatch.delenv("TUNECLI_NO_CACHE", raising=False)
    traced = layout_choice.default_layout(TARGET, WORKLOAD)
    assert traced == (("tile_ic", (32,)), ("tile_oc", (32,)))  # two AVX-512 vectors
    fresh_defaults.clear()  # as in a new process
    create = Untraceable()
    monkeypatch.setattr(layout_choice, "create", create)
    assert layout_choice.default_layout(TARGET, WORKLOAD) == traced and create.calls == 0
    # another target or no cache: traced, not read
    for other in ("llvm -mcpu=core-avx2", "llvm -mcpu=skylake-avx512 -keys=cpu,other"):
        assert layout_choice.default_layout(other, WORKLOAD) is None
    assert create.calls == 2
    fresh_defaults.clear()
    monkeypatch.setenv("TUNECLI_NO_CACHE", "1")
    assert layout_choice.default_layout(TARGET, WORKLOAD) is None and create.calls == 3


def test_an_unreadable_default_layout_entry_is_traced_again(fresh_defaults, monkeypatch, tmp_path, caplog):
    monkeypatch.setenv("TUNECLI_CACHE_DIR", str(tmp_path))
    monkeypatch.delenv("TUNECLI_NO_CACHE", raising=False)
    traced = layout_choice.default_layout(TARGET, WORKLOAD)
    cache = kernel_cache.default_cache()
    (entry,) = [path for path, _, _ in cache.entries()]
    cache.put(entry.stem, b"(('tile_ic',")
    fresh_defaults.clear()
    assert layout_choice.default_layout(TARGET, WORKLOAD) == traced
    assert "traced again" in caplog.text
    fresh_defaults.clear()
    create = Untraceable()
    monkeypatch.setattr(layout_choice, "create", create)
    assert layout_choice.default_layout(TARGET, WORKLOAD) == traced and create.calls == 0  # stored again
