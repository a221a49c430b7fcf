"""``BaseGraphTuner``: what TVM's ``DPTuner`` and ``PBQPTuner`` share (TVM's ``base_graph_tuner``).

Construction reads the graph's tunable convolutions (``conv_graph``) and each one's candidate
records (``candidates``: the fastest record per pair of layouts, of the direct and the Winograd
kernel alike, so the chosen record's template says which implementation the build uses,
``apply_graph_best``).  ``benchmark_layout_transform`` times every ``layout_transform`` kernel a pair of
adjacent candidates needs (or reads it from ``layout_records``, or infers it from their time per
element with ``infer_layout=True``); ``run`` (the subclass's solver) picks one candidate per
convolution; ``get_optimal_records`` / ``write_opt_sch2record_file`` give the chosen records,
one per convolution in graph order, for ``apply_graph_best``.

A candidate's kernel cost is its record's mean cost.  Transform costs are those of the tensor
actually transformed (the consumer's input, after any pooling in between).
"""

from __future__ import annotations

import logging
import os
from collections.abc import Mapping, Sequence
from typing import TypedDict, Unpack

import numpy as np

from tunecli.engine.graph.graph_expr import Function
from tunecli.engine.graph.ir_module import IRModule
from tunecli.engine.graph.layout import convert_shape
from tunecli.engine.graph.op_registry import Op
from tunecli.engine.graph_tuner.candidates import (
    Record,
    RecordSource,
    fetch_candidates,
    read_records,
    record_layouts,
)
from tunecli.engine.graph_tuner.conv_graph import ConvGraph, conv_graph, input_shapes_checked, main_function
from tunecli.engine.graph_tuner.default_layouts import default_layout_configs
from tunecli.engine.graph_tuner.layout_cost import INVALID_LAYOUT_TIME, LayoutCostProblem
from tunecli.engine.graph_tuner.layout_transform_task import TASK_NAME
from tunecli.engine.log.record import encode
from tunecli.engine.measure.batch import MeasureBatch, MeasureOption, create_measure_batch
from tunecli.engine.measure.batch import measure_option as _measure_option
from tunecli.engine.measure.builder import BuildFunc, LocalBuilder
from tunecli.engine.measure.local_runner import LocalRunner
from tunecli.engine.measure.result import MeasureErrorNo, MeasureInput, MeasureResult
from tunecli.engine.measure.runner import Runner
from tunecli.engine.rpc.rpc_runner import RPCRunner
from tunecli.engine.target import Target, as_target
from tunecli.engine.task.task import Task
from tunecli.engine.task.task import create as create_task
from tunecli.engine.task.workload_args import Workload
from tunecli.errors import GraphError, TuneError


class SolveOptions(TypedDict, total=False):
    """Keywords of ``run`` (TVM's), passed on to the subclass's ``solve``."""

    #: ``DPTuner``: the most states its tables may hold (None: no bound).
    max_num_states: int | None


class BaseGraphTuner:
    """Choose one schedule per convolution considering kernel and layout-transform times.

    Parameters
    ----------
    graph : IRModule or Function
    input_shapes : dict of str to tuple
        The graph's data inputs.
    records : str or iterable of (MeasureInput, MeasureResult)
        Kernel tuning records (a log path, or records).
    target_ops : list of Op or str
        Operators to tune (TVM's ``[relay.op.get("nn.conv2d")]``).
    target : str or Target
    max_sch_num : int
        Candidates kept per workload.
    dtype : str
    verbose : bool
        Log progress to the console.
    log_file : str, optional
        Also log progress to this file (TVM writes ``graph_tuner.log`` by default; here only when
        given).
    log_level : int
    name : str
    """

    def __init__(self, graph: IRModule | Function, input_shapes: Mapping[str, Sequence[int]],
                 records: RecordSource, target_ops: Sequence[Op | str], target: Target | str,
                 max_sch_num: int = 20, dtype: str = "float32",
                 verbose: bool = True, log_file: str | None = None, log_level: int = logging.DEBUG,
                 name: str = "graph_tuner") -> None:
        self._target = as_target(target)
        self._dtype = dtype
        self._max_sch_num = max_sch_num
        self._input_shapes = dict(input_shapes)
        self._logger = _logger(name, verbose, log_file, log_level)
        fn = main_function(graph)
        input_shapes_checked(fn, self._input_shapes)
        self._graph: ConvGraph = conv_graph(fn, list(self._input_shapes), target_ops, self._target)
        if not self._graph.nodes:
            raise TuneError(f"graph tuner: no call of {list(target_ops)} with a tunable workload "
                            "in the graph")
        self._candidates = fetch_candidates(self._graph, read_records(records), self._target, max_sch_num)
        self._layouts = [[record_layouts(record, self._target) for record in cands]
                         for cands in self._candidates]
        self._layout_transform_perf_records: dict[Workload, Record | tuple[None, MeasureResult]] = {}
        self._problem: LayoutCostProblem | None = None
        self._optimal_choice: tuple[int, ...] | None = None

    def _transform_workload(self, edge_index: int, src_cand: int, dst_cand: int) -> Workload | None:
        """The layout_transform workload of an edge for two candidates; None when no transform is
        needed; ``()`` when it is impossible (a block that does not divide the channels)."""
        edge = self._graph.edges[edge_index]
        src_layout = self._layouts[edge.src][src_cand][1]
        dst_layout = self._layouts[edge.dst][dst_cand][0 if edge.to_input else 1]
        if src_layout == dst_layout:
            return None
        try:
            shape = convert_shape(edge.shape, "NCHW", src_layout)
            convert_shape(edge.shape, "NCHW", dst_layout)
        except GraphError:  # the block does not divide the axis
            return ()
        return (TASK_NAME, ("TENSOR", shape, self._dtype), src_layout, dst_layout)

    def _transform_workloads(self) -> list[Workload]:
        found: dict[Workload, None] = {}
        for e, edge in enumerate(self._graph.edges):
            for a in range(len(self._candidates[edge.src])):
                for b in range(len(self._candidates[edge.dst])):
                    wkl = self._transform_workload(e, a, b)
                    if wkl:
                        found[wkl] = None
        return list(found)

    def benchmark_default_layouts(self, measure_option: MeasureOption | None = None,
                                  top: int = 3, remeasure: bool = False, tasks: Sequence[Task] = ()) -> None:
        """Measure each convolution's configs in its default layouts and make the fastest one a
        candidate (see ``default_layouts``); call it before ``benchmark_layout_transform``.

        Without it the candidates are the log's records only (TVM's); with it a choice without
        layout transforms between convolutions of default-blocked channels is always among the
        choices, at the speed of the best register tiles the log found.

        Parameters
        ----------
        measure_option : dict, optional
            ``measure_option(builder, runner)`` to measure with, as the kernel records were
            (default: a ``LocalBuilder`` and a ``LocalRunner(number=10, repeat=3,
            min_repeat_ms=50)``).
        top : int
            The fastest records of a workload whose other knobs are tried in its default layouts.
        remeasure : bool
            Also time the log's candidates again, beside the new configs, and use those times:
            every kernel cost of the problem then comes from one session of measurements (a
            log's fastest record of a layout pair is the luckiest of its measurements, taken
            under other conditions, and the log may have been measured with other threads than
            the network will run with).
        tasks : sequence of Task
            Tasks already made for the convolutions' workloads (an extraction's); the others are
            created.
        """
        self._logger.info("Start to benchmark convolutions in their default layouts...")
        made = {task.workload: task for task in tasks}
        own = measure_option is None
        if own:
            measure_option = _measure_option(LocalBuilder(n_parallel=1),
                                             LocalRunner(number=10, repeat=3, min_repeat_ms=50))
        fastest: dict[Workload, Record] = {}
        again: dict[Workload, list[Record]] = {}
        try:
            for node, cands in zip(self._graph.nodes, self._candidates, strict=True):
                if node.workload in fastest:
                    continue
                task = made.get(node.workload) or create_task(node.task_name, node.workload[1:], self._target)
                with self._target:
                    configs = default_layout_configs(
                        task, [inp.config for inp, _ in cands if inp.task.name == node.task_name][:top])
                batch = create_measure_batch(task, measure_option)
                measured = _successful(batch, [MeasureInput(self._target, task, cfg) for cfg in configs])
                if measured:
                    fastest[node.workload] = min(measured, key=lambda r: r[1].mean_cost)
                    self._logger.debug("%s: %s", node.workload, fastest[node.workload][1])
                if remeasure:  # the log's inputs, of the same workload as ``task``
                    again[node.workload] = _successful(batch, [inp for inp, _ in cands])
        finally:
            if own:
                measure_option["builder"].close()
                measure_option["runner"].close()
        for v, node in enumerate(self._graph.nodes):
            if again.get(node.workload):
                self._candidates[v], self._layouts[v] = [], []
                for record in again[node.workload]:
                    self._add_candidate(v, record)
            if node.workload in fastest:
                self._add_candidate(v, fastest[node.workload])
        self._problem = None
        self._logger.info("Benchmarking default layouts successful.")

    def _add_candidate(self, v: int, record: Record) -> None:
        """``record`` as a candidate of convolution ``v``: in place of the one of its layouts when
        faster, else beside the others (kept even beyond ``max_sch_num``), costs ascending."""
        res = record[1]
        layouts = record_layouts(record, self._target)
        pairs = list(zip(self._candidates[v], self._layouts[v], strict=True))
        same = [i for i, (_, lay) in enumerate(pairs) if lay == layouts]
        if same and pairs[same[0]][0][1].mean_cost <= res.mean_cost:
            return
        if same:
            pairs.pop(same[0])
        pairs.append((record, layouts))
        pairs.sort(key=lambda p: p[0][1].mean_cost)
        self._candidates[v] = [c for c, _ in pairs]
        self._layouts[v] = [lay for _, lay in pairs]

    def benchmark_layout_transform(self, min_exec_num: int = 100, timeout: float = 10, use_rpc: bool = False,
                                   device_key: str | None = None, host: str = "127.0.0.1", port: int = 9190,
                                   n_parallel: int = 1, build_func: str | BuildFunc = "default",
                                   layout_records: RecordSource = None,
                                   target_host: Target | str | None = None, infer_layout: bool = False,
                                   runner: Runner | None = None) -> None:
        """Time every layout transform between adjacent candidates (TVM's arguments).

        Parameters
        ----------
        min_exec_num : int
            Runs averaged per kernel (the runner's ``number``).
        timeout : float
        use_rpc : bool
            Measure on ``device_key`` through the RPC tracker at ``host:port``.
        device_key, host, port, n_parallel, build_func
            As TVM's.
        layout_records : str or iterable of records, optional
            Earlier layout_transform records: their workloads are not measured again.
        target_host : str or Target, optional
        infer_layout : bool
            Instead of measuring, estimate each missing transform from ``layout_records``' mean
            time per element.
        runner : Runner, optional
            Measure with this runner (default a ``LocalRunner(number=min_exec_num, repeat=1)``).
        """
        self._logger.info("Start to benchmark layout transformation...")
        if layout_records is None and infer_layout:
            raise TuneError("benchmark_layout_transform: infer_layout=True requires layout_records")
        known = self._layout_transform_perf_records
        elements, seconds = 0, 0.0
        for inp, res in read_records(layout_records):
            known[inp.task.workload] = (inp, res)
            elements += int(np.prod(inp.task.workload[1][1]))
            seconds += res.mean_cost
        if infer_layout and not elements:
            raise TuneError("benchmark_layout_transform: layout_records holds no record to infer from")
        missing = [w for w in self._transform_workloads() if w not in known]
        if infer_layout:
            per_element = seconds / elements
            for wkl in missing:
                cost = int(np.prod(wkl[1][1])) * per_element
                known[wkl] = (None, MeasureResult((cost,), MeasureErrorNo.NO_ERROR, -1, -1))
            missing = []
        if missing:
            own_runner = runner is None or use_rpc
            if use_rpc:
                if device_key is None:
                    raise TuneError("benchmark_layout_transform: use_rpc=True needs device_key")
                runner = RPCRunner(device_key, host, port, n_parallel=n_parallel, number=min_exec_num,
                                   repeat=1, timeout=timeout)
            elif runner is None:
                runner = LocalRunner(number=min_exec_num, repeat=1, timeout=timeout)
            builder = LocalBuilder(n_parallel=n_parallel, build_func=build_func)
            try:
                self._measure_transforms(missing, _measure_option(builder, runner), target_host)
            finally:
                builder.close()
                if own_runner:
                    runner.close()
        self._problem = self._cost_problem()
        self._logger.info("Benchmarking layout transformation successful.")

    def _measure_transforms(self, workloads: list[Workload], option: MeasureOption,
                            target_host: Target | str | None) -> None:
        """Build and time one layout_transform kernel per workload (a failure is an error record)."""
        for wkl in workloads:
            task = create_task(TASK_NAME, wkl[1:], self._target, target_host)
            inp = MeasureInput(self._target, task, task.config_space.get(0))
            (res,) = create_measure_batch(task, option)([inp])
            self._layout_transform_perf_records[wkl] = (inp, res)
            self._logger.debug("%s: %s", wkl, res)

    def _transform_cost(self, wkl: Workload | None) -> float:
        if wkl is None:
            return 0.0
        if wkl == ():
            return INVALID_LAYOUT_TIME
        record = self._layout_transform_perf_records.get(wkl)
        if record is None:
            raise TuneError(f"graph tuner: no layout transform time for {wkl}: call "
                            "benchmark_layout_transform() before run()")
        res = record[1]
        return res.mean_cost if res.error_no == MeasureErrorNo.NO_ERROR else INVALID_LAYOUT_TIME

    def _cost_problem(self) -> LayoutCostProblem:
        edges = []
        for e, edge in enumerate(self._graph.edges):
            ns, nd = len(self._candidates[edge.src]), len(self._candidates[edge.dst])
            m = np.array([[self._transform_cost(self._transform_workload(e, a, b)) for b in range(nd)]
                          for a in range(ns)])
            edges.append((edge.src, edge.dst, m))
        node_costs = [[res.mean_cost for _, res in cands] for cands in self._candidates]
        return LayoutCostProblem.create(node_costs, edges)

    @property
    def problem(self) -> LayoutCostProblem:
        """The cost problem the solver minimises (after ``benchmark_layout_transform``)."""
        if self._problem is None:
            self._problem = self._cost_problem()
        return self._problem

    @property
    def layout_transform_perf_records(self) -> dict[Workload, Record | tuple[None, MeasureResult]]:
        """Layout transform workload -> (MeasureInput, MeasureResult) of its timing."""
        return self._layout_transform_perf_records

    @property
    def conv_graph(self) -> ConvGraph:
        """The graph's tunable convolutions and the edges between them."""
        return self._graph

    @property
    def candidates(self) -> list[list[Record]]:
        """Candidate records of each convolution (``conv_graph.nodes`` order)."""
        return self._candidates

    def solve(self, problem: LayoutCostProblem, **kwargs: Unpack[SolveOptions]) -> tuple[int, ...]:
        """The subclass's solver: a candidate index per convolution."""
        raise NotImplementedError

    def run(self, **kwargs: Unpack[SolveOptions]) -> None:
        """Choose one candidate per convolution (TVM's ``run``)."""
        self._logger.info("Start to run %s...", type(self).__name__)
        self._optimal_choice = self.solve(self.problem, **kwargs)
        self._logger.info("Finished %s run: %.6g s in total", type(self).__name__,
                          self.problem.total(self._optimal_choice))

    def get_optimal_records(self) -> list[Record]:
        """The chosen record of each convolution, in graph order.

        Returns
        -------
        list of (MeasureInput, MeasureResult)
        """
        if self._optimal_choice is None:
            raise TuneError("graph tuner: call run() before get_optimal_records()")
        return [cands[c] for cands, c in zip(self._candidates, self._optimal_choice, strict=True)]

    def write_opt_sch2record_file(self, record_file: str | os.PathLike = "graph_opt_schedule.log") -> None:
        """Append the chosen records to ``record_file`` in the log format (TVM's).

        Parameters
        ----------
        record_file : str or path
        """
        with open(record_file, "a") as out:
            for inp, res in self.get_optimal_records():
                out.write(encode(inp, res) + "\n")
        self._logger.info("Writing optimal schedules to %s successfully.", record_file)


def _successful(batch: MeasureBatch, inputs: list[MeasureInput]) -> list[Record]:
    """The records of ``inputs``, measured in one ``batch``, that ran without error."""
    results = batch(inputs) if inputs else []
    return [(inp, res) for inp, res in zip(inputs, results, strict=True)
            if res.error_no == MeasureErrorNo.NO_ERROR]


def _logger(name: str, verbose: bool, log_file: str | None, level: int) -> logging.Logger:
    logger = logging.getLogger(name + "_logger")
    logger.setLevel(level)
    kinds = {type(h) for h in logger.handlers}
    fmt = logging.Formatter("%(asctime)s %(levelname)s %(message)s")
    if log_file is not None and logging.FileHandler not in kinds:
        handler: logging.Handler = logging.FileHandler(log_file)
        handler.setFormatter(fmt)
        logger.addHandler(handler)
    if verbose and logging.StreamHandler not in kinds:
        handler = logging.StreamHandler()
        handler.setFormatter(fmt)
        logger.addHandler(handler)
        logger.propagate = False
    return logger
