"""``inspect_network``: a model job's tasks and the operators they implement, each operator's share
of the network's tunable FLOPs counted once however many alternative tasks it has."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from tests.engine.job.tiny_network import write_tiny_onnx
from tunecli.engine.actions.inspect import inspect_network
from tunecli.engine.job.network import load_network
from tunecli.engine.job.spec import load_job
from tunecli.engine.task.text import task_label

pytest.importorskip("onnx")


def test_alternatives_share_one_operators_flops_and_the_shares_sum_to_one(tmp_path: Path) -> None:
    onnx = write_tiny_onnx(tmp_path / "tiny.onnx")  # two 3x3 stride-1 convolutions and a dense layer
    job = tmp_path / "job.yaml"
    job.write_text(textwrap.dedent(f"""\
        name: t
        model: {{onnx: {onnx}}}
        ops: [conv2d, contrib_conv2d_NCHWc_winograd, dense]
        """))
    loaded = load_job(str(job))
    view = inspect_network(loaded, load_network(loaded))
    assert [t.label.split("(")[0] for t in view.tasks] == [
        "conv2d_NCHWc.x86", "conv2d_NCHWc_winograd.x86", "conv2d_NCHWc.x86", "conv2d_NCHWc_winograd.x86",
        "dense.x86", "dense_pack.x86"]
    assert [op.tasks for op in view.operators] == [(0, 1), (2, 3), (4, 5)]
    assert sum(op.share for op in view.operators) == pytest.approx(1.0)
    assert [op.flop for op in view.operators] == [view.tasks[0].flop, view.tasks[2].flop, view.tasks[4].flop]
    assert view.tasks[1].flop == view.tasks[0].flop  # Winograd's FLOPs are the convolution's
    assert [round(op.share, 3) for op in view.operators] == [0.333, 0.666, 0.001]
    assert view.as_dict()["operators"][0] == {"index": 0, "tasks": (0, 1), "occurrences": 1,
                                              "flop": view.tasks[0].flop, "share": view.operators[0].share}


def test_each_task_the_build_ran_says_where_its_config_came_from(tmp_path: Path) -> None:
    from tunecli.engine.job.network import job_tasks
    from tunecli.engine.log.record import encode
    from tunecli.engine.measure.result import MeasureInput, MeasureResult

    onnx = write_tiny_onnx(tmp_path / "tiny.onnx")
    job = tmp_path / "job.yaml"
    log = tmp_path / "tiny.log"
    # the shipped package holds Zen 4 records (-mcpu=znver4): convolutions and dense layers
    job.write_text(textwrap.dedent(f"""\
        name: t
        target: llvm -mcpu=znver4
        model: {{onnx: {onnx}}}
        ops: [conv2d, contrib_conv2d_NCHWc_winograd, dense]
        log: {log}
        """))
    loaded = load_job(str(job))
    network = load_network(loaded)
    tasks, _ = job_tasks(loaded, network)
    first = tasks[0]
    inp = MeasureInput(first.target, first, first.config_space.get(0))
    log.write_text(encode(inp, MeasureResult([1e-4], 0, 0.1, 0.0)) + "\n")
    view = inspect_network(loaded, network)
    # the first convolution runs its logged direct config; the second, without a record, Winograd
    # (the higher plevel) from the nearest Winograd record; the dense layer from the nearest dense one
    sources = [t.config_source for t in view.tasks]
    assert sources[0] == f"log: {log}" and sources[1] is None and sources[2] is None
    assert sources[3].startswith("nearest: conv2d_NCHWc_winograd.x86(") and "llvm.log" in sources[3]
    assert sources[4].startswith("nearest: dense.x86(")
    assert view.summary == "1 of 3 tasks tuned; 2 chosen from the nearest records"
    assert sorted(view.configs.values()) == sorted(sources[i] for i in (0, 3, 4))


def test_a_config_kept_or_displaced_by_the_margin_says_why(tmp_path: Path) -> None:
    """The first convolution's log holds its untuned config and a record 2% faster: the build runs the
    untuned config, and the view says why (``ApplyHistoryBest.why``)."""
    from tunecli.engine.job.network import job_tasks
    from tunecli.engine.log.record import encode
    from tunecli.engine.measure.result import MeasureInput, MeasureResult
    from tunecli.engine.tuner.untuned import untuned_config

    onnx = write_tiny_onnx(tmp_path / "tiny.onnx")
    job = tmp_path / "job.yaml"
    log = tmp_path / "tiny.log"
    job.write_text(textwrap.dedent(f"""\
        name: t
        model: {{onnx: {onnx}}}
        ops: [conv2d, contrib_conv2d_NCHWc_winograd, dense]
        log: {log}
        """))
    loaded = load_job(str(job))
    network = load_network(loaded)
    first = job_tasks(loaded, network)[0][0]
    untuned = untuned_config(first)
    assert untuned is not None and untuned.exact
    untuned.config.untuned = untuned.source
    other = next(i for i in range(len(first.config_space)) if i != untuned.config.index
                 and first.config_space.is_index_valid(i))
    records = [(untuned.config, 1e-4), (first.config_space.get(other), 0.98e-4)]
    log.write_text("".join(encode(MeasureInput(first.target, first, config),
                                  MeasureResult([cost], 0, 0.1, 0.0)) + "\n" for config, cost in records))
    view = inspect_network(loaded, network)
    [(label, why)] = view.why.items()
    assert label.startswith("conv2d_NCHWc.x86(") and view.configs[label] == f"log: {log}"
    assert why == f"the untuned config ({untuned.source}): config {other} is only 2.0% faster (margin 5%)"

    # the same log once the mark is on a config the untuned build no longer runs (the packages or the
    # fallback rules changed since the tune): the faster record answers and the view says why
    stale = first.config_space.get(other)
    stale.untuned = untuned.source
    records = [(stale, 1e-4), (first.config_space.get(untuned.config.index), 0.98e-4)]
    log.write_text("".join(encode(MeasureInput(first.target, first, config),
                                  MeasureResult([cost], 0, 0.1, 0.0)) + "\n" for config, cost in records))
    [(label, why)] = inspect_network(loaded, network).why.items()
    assert why == (f"the fastest record; config {other}, marked untuned ({untuned.source}) by the tune, "
                   "is no longer what the untuned build runs (the packages or fallback rules changed since): "
                   "ranked as an ordinary record")


def test_a_listed_task_the_network_does_not_call_is_numbered_as_tune_numbers_it(tmp_path: Path) -> None:
    from tunecli.engine.job.network import job_tasks

    onnx = write_tiny_onnx(tmp_path / "tiny.onnx")
    job = tmp_path / "job.yaml"
    job.write_text(textwrap.dedent(f"""\
        name: t
        model: {{onnx: {onnx}}}
        ops: [dense]
        tasks:
          - template: dense.x86
            args: {{M: 8, N: 8, K: 8}}
        """))
    loaded = load_job(str(job))
    network = load_network(loaded)
    view = inspect_network(loaded, network)
    tuned, _ = job_tasks(loaded, network)
    assert [t.label for t in view.tasks] == [task_label(t) for t in tuned]
    assert view.listed == [len(tuned) - 1] and view.tasks[-1].label.startswith("dense.x86(8, 8, 8")
    assert view.tasks[-1].occurrences == 0 and view.as_dict()["listed"] == view.listed
