"""Which log records belong to a task: same workload, same target (options in any order), same config."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tunecli.engine.log.best_of_logs import best_of_logs
from tunecli.engine.log.history_best import ApplyHistoryBest, pick_best
from tunecli.engine.log.record import encode, load_from_file
from tunecli.engine.log.task_records import belongs_to, lowest_per_config, record_key, records_of
from tunecli.engine.measure.result import MeasureInput, MeasureResult
from tunecli.engine.ops import registry  # noqa: F401  (registers the built-in templates)
from tunecli.engine.target import Target, host_cpu
from tunecli.engine.task.task import create

X = "llvm -mcpu=x86-64 -mattr=+avx2"
X_REORDERED = "llvm -mattr=+avx2 -mcpu=x86-64"
Y = "llvm -mcpu=skylake"
MATMUL = ("tutorial/matmul", (16, 16, 16, "float32"))
DENSE = ("dense.x86", (8, 16, 4, "float32"))


def line(workload: tuple, target: str, index: int, cost: float, *, stale: bool = False) -> str:
    task = create(*workload, target)
    text = encode(MeasureInput(Target(target), task, task.config_space.get(index)),
                  MeasureResult((cost,), 0, cost, 0.0))
    if not stale:
        return text
    row = json.loads(text)  # the entities of config `index` written under another index
    row["config"]["index"] = index + 1
    return json.dumps(row)


@pytest.fixture()
def mixed_log(tmp_path: Path) -> tuple[Path, list[str]]:
    """Records of one workload on two targets (one spelled two ways), of a second workload, and a
    record whose index no longer denotes its config."""
    lines = [
        line(MATMUL, X, 1, 2.0),
        line(MATMUL, X_REORDERED, 2, 3.0),
        line(MATMUL, Y, 3, 0.5),
        line(DENSE, X, 1, 1.0),
        line(MATMUL, X, 4, 9.0, stale=True),
    ]
    path = tmp_path / "mixed.log"
    path.write_text("\n".join(lines) + "\n")
    return path, lines


def test_records_of_a_task_are_those_of_its_workload_target_and_config(mixed_log) -> None:
    path, lines = mixed_log
    records = list(load_from_file(path))
    chosen = {
        (MATMUL, X): [0, 1],  # both spellings of X; not Y, not dense, not the stale record
        (MATMUL, X_REORDERED): [0, 1],
        (MATMUL, Y): [2],
        (DENSE, X): [3],
        (DENSE, Y): [],
    }
    for (workload, target), expected in chosen.items():
        task = create(*workload, target)
        assert [encode(inp, res) for inp, res in records_of(records, task)] == [lines[i] for i in expected]
    stale, _ = records[4]
    task = create(*MATMUL, X)
    assert record_key(stale) == (Target(X), task.workload) and not belongs_to(stale, task)


def test_lowest_per_config_takes_each_config_once_by_its_lowest_valid_record() -> None:
    task = create(*MATMUL, X)

    def rec(index: int, cost: float, error_no: int = 0) -> tuple:
        inp = MeasureInput(task.target, task, task.config_space.get(index))
        return inp, MeasureResult((cost,), error_no, 0.1, 0.0)

    records = [rec(5, 2.0), rec(2, 1.0), rec(8, 0.0, 4), rec(5, 0.5), rec(2, 3.0, 4), rec(8, 0.7),
               rec(9, 0.0, 4), rec(2, 1.0), rec(9, 0.0, 2)]
    chosen = lowest_per_config(records)
    assert [(int(inp.config.index), res.error_no, res.costs) for inp, res in chosen] == [
        (5, 0, (0.5,)), (2, 0, (1.0,)), (8, 0, (0.7,)), (9, 4, (0.0,))]  # first appearance order
    assert chosen[1][1] is records[1][1]  # of equal costs, the earlier record
    assert chosen[3][1] is records[6][1]  # no valid record: the first


def test_target_strings_in_a_users_measure_input_follow_the_same_rule() -> None:
    task = create(*MATMUL, X)
    inp = MeasureInput(X_REORDERED, task, task.config_space.get(1))
    assert belongs_to(inp, task) and not belongs_to(inp._replace(target=Y), task)


def test_apply_history_best_prefers_the_queried_target_then_falls_back_by_key(mixed_log) -> None:
    path, _ = mixed_log
    workload = create(*MATMUL, X).workload
    for context in (ApplyHistoryBest(str(path)), ApplyHistoryBest(_picked(path))):
        # config 1 on X (2.0) beats config 2 on X (3.0); config 3 (0.5) was measured on Y
        assert context.query(Target(X_REORDERED), workload).index == 1
        assert context.query(Target(Y), workload).index == 3
        # a target without records of its own gets the fastest of its key (cpu), as in TVM
        assert context.query(Target("llvm -mcpu=znver4"), workload).index == 3


def test_apply_history_best_prefers_records_of_the_cpu_the_query_compiles_for(tmp_path: Path) -> None:
    if host_cpu() in ("x86-64", "skylake", "icelake-server"):
        pytest.skip("this machine's CPU is one of the others the test names")
    here = f"llvm -mcpu={host_cpu()}"
    path = tmp_path / "two_machines.log"
    path.write_text("\n".join([line(MATMUL, Y, 3, 0.5), line(MATMUL, here, 2, 5.0),
                               line(MATMUL, X, 1, 2.0)]) + "\n")
    workload = create(*MATMUL, X).workload
    for context in (ApplyHistoryBest(str(path)), ApplyHistoryBest(_picked(path))):
        # another target of a CPU with records: that CPU's record, though slower than Y's
        assert context.query(Target("llvm -mcpu=x86-64 -mattr=+fma"), workload).index == 1
        # a host target compiles for this machine's CPU: its record
        assert context.query(Target("llvm"), workload).index == 2
        # a CPU without records: the fastest of the key (cpu)
        assert context.query(Target("llvm -mcpu=icelake-server"), workload).index == 3


def _picked(path: Path) -> str:
    out = path.with_name("picked.log")
    pick_best(path, out)
    return str(out)


def test_best_of_logs_groups_records_by_task(mixed_log) -> None:
    path, _ = mixed_log
    report = best_of_logs([str(path)])
    groups = sorted((w.target, w.name, w.records, w.best[0].index) for w in report.workloads)
    assert groups == [(Y, "tutorial/matmul", 1, 3), (X, "dense.x86", 1, 1), (X, "tutorial/matmul", 3, 1)]
