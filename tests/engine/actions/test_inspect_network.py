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
        "dense.x86"]
    assert [op.tasks for op in view.operators] == [(0, 1), (2, 3), (4,)]
    assert sum(op.share for op in view.operators) == pytest.approx(1.0)
    assert [op.flop for op in view.operators] == [view.tasks[0].flop, view.tasks[2].flop, view.tasks[4].flop]
    assert view.tasks[1].flop == view.tasks[0].flop  # Winograd's FLOPs are the convolution's
    assert [round(op.share, 3) for op in view.operators] == [0.333, 0.666, 0.001]
    assert view.as_dict()["operators"][0] == {"index": 0, "tasks": (0, 1), "occurrences": 1,
                                              "flop": view.tasks[0].flop, "share": view.operators[0].share}
