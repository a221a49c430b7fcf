"""A convolution's candidates: the kernel records the graph tuner chooses among.

Per convolution workload, of the records of that workload without error, the fastest one per
distinct pair of (input, output) layouts (``infer_layout`` of the template: configs with the same
``tile_ic``/``tile_oc`` give the same layouts), the ``max_sch_num`` fastest of those; a 3x3
stride-1 convolution's candidates are those of both its workloads, the direct
``conv2d_NCHWc.x86`` and the ``conv2d_NCHWc_winograd.x86`` one (the same arguments, the same
``infer_layout``), so the chosen record's template says which implementation the build uses.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable
from typing import TypeAlias

from tunecli.engine.graph.op_strategy import winograd_implementation
from tunecli.engine.graph_tuner.conv_graph import ConvGraph
from tunecli.engine.log.record import Record, load_from_file
from tunecli.engine.measure.result import MeasureErrorNo
from tunecli.engine.ops.x86.conv2d_nchwc import infer_layout as conv2d_infer_layout
from tunecli.engine.target import Target
from tunecli.engine.task.space import ConfigEntity
from tunecli.engine.task.workload_args import Workload
from tunecli.errors import TuneError

#: Records as TVM's graph tuner takes them: a log's path, or the records themselves.
RecordSource: TypeAlias = "str | os.PathLike[str] | Iterable[Record] | None"
#: A tensor's ``(shape, layout)``.
ShapeLayout: TypeAlias = tuple[tuple[int, ...], str]
#: ``infer_layout(workload, config)``: ``((input shape, layout),), ((output shape, layout),)``.
InferLayout: TypeAlias = Callable[[Workload, ConfigEntity],
                                  tuple[tuple[ShapeLayout, ...], tuple[ShapeLayout, ...]]]


def get_infer_layout(task_name: str) -> InferLayout:
    """The ``infer_layout`` of a tunable task (TVM's ``get_infer_layout``)."""
    if task_name.startswith(("conv2d", "depthwise_conv2d")):
        return conv2d_infer_layout
    raise TuneError(f"graph tuner: no infer_layout for task {task_name!r}")


def record_layouts(record: Record, target: Target) -> tuple[str, str]:
    """The (input, output) layouts of a record's kernel on ``target``."""
    inp = record[0]
    infer = get_infer_layout(inp.task.name)
    with target:
        (((_, in_layout),), ((_, out_layout),)) = infer(inp.task.workload, inp.config)
    return in_layout, out_layout


def read_records(records: RecordSource) -> Iterable[Record]:
    """Records of a log path, or the given iterable (TVM's ``records`` argument); none for None."""
    if records is None:
        return []
    if isinstance(records, (str, os.PathLike)):
        return load_from_file(records)
    return records


def fetch_candidates(graph: ConvGraph, records: Iterable[Record], target: Target,
                     max_sch_num: int) -> list[list[Record]]:
    """Each convolution's candidates (``graph.nodes`` order), fastest first (see the module docstring).

    Raises
    ------
    TuneError
        When a convolution has no record without error.
    """
    by_workload: dict[Workload, list[Record]] = {}
    for inp, res in records:
        if res.error_no == MeasureErrorNo.NO_ERROR and inp.task is not None:
            by_workload.setdefault(inp.task.workload, []).append((inp, res))
    cache: dict[Workload, list[Record]] = {}
    out = []
    for node in graph.nodes:
        if node.workload not in cache:
            workloads = [node.workload]
            winograd = winograd_implementation(node.call, target)
            if winograd is not None and node.task_name == "conv2d_NCHWc.x86":
                workloads.append(winograd.workload)
            own = [record for w in workloads for record in by_workload.get(w, [])]
            if not own:
                raise TuneError(f"graph tuner: no tuning record of {node.task_name} for the workload "
                                f"{node.workload}: tune that task first")
            best: dict[tuple[str, str], Record] = {}
            for record in own:
                layouts = record_layouts(record, target)
                if layouts not in best or record[1].mean_cost < best[layouts][1].mean_cost:
                    best[layouts] = record
            ranked = sorted(best.values(), key=lambda r: r[1].mean_cost)
            cache[node.workload] = ranked[:max_sch_num]
        out.append(cache[node.workload])
    return out
