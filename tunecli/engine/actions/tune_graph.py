"""``tune_graph``: the graph tuner step of a model job (``graph_tuner: dp|pbqp``).

After kernel tuning, choose one record per convolution so that kernel times plus the layout
transforms between them are smallest, and write the choice next to the log
(``job.model_spec.graph_log_path``: ``logs/<name>.graph.log``), which ``apply`` builds under
(``apply_graph_best``).

The candidates are the job log's records (the best ``max_sch_num`` layouts of each convolution)
and each convolution's fastest config in its default layouts (without them a choice free of layout
transforms is rarely among the records), all timed again with the tune's builder and runner
(``benchmark_default_layouts(remeasure=True)``), so that kernel and transform times come from one
session of measurements; the layout transforms between them are timed in a measurement worker
(``min_exec_num`` runs each).  A graph the tuner cannot handle (a convolution without records,
more DP states than it allows) is the step's ``error``: the kernel tuning before it is kept.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from pathlib import Path

from tunecli.engine.graph_tuner.graph_tuner_kinds import GRAPH_TUNERS
from tunecli.engine.job.model_spec import GraphTuning, graph_log_path
from tunecli.engine.job.network import Network, input_shapes
from tunecli.engine.job.spec import Job
from tunecli.engine.log.plausibility import plausible
from tunecli.engine.log.record import read_log
from tunecli.engine.measure.batch import MeasureOption
from tunecli.engine.task.task import Task
from tunecli.errors import TuneError

#: The operators the graph tuner chooses layouts for.
GRAPH_TUNER_OPS = ("nn.conv2d",)


def tune_graph(job: Job, network: Network, measure_option: MeasureOption,
               tasks: Sequence[Task] = ()) -> GraphTuning:
    """Run the job's graph tuner over its log's records and write its choice (``graph_log_path``).

    Parameters
    ----------
    job : Job
        A model job with ``graph_tuner``.
    network : Network
    measure_option : MeasureOption
        The tune's ``measure_option`` (its worker pools), which times the candidates again.
    tasks : sequence of Task
        The tasks the tune extracted (the convolutions' tasks are not made again).

    Returns
    -------
    GraphTuning
    """
    spec = job.graph_tuner
    assert spec is not None
    out = graph_log_path(job.log)
    start = time.perf_counter()
    records = [(r.inp, r.result) for r in plausible(read_log(job.log))] if Path(job.log).exists() else []
    try:
        tuner = GRAPH_TUNERS[spec.kind](network.mod["main"], input_shapes(network), records,
                                        list(GRAPH_TUNER_OPS), job.target, max_sch_num=spec.max_sch_num,
                                        verbose=False)
        tuner.benchmark_default_layouts(measure_option, remeasure=True, tasks=tasks)
        tuner.benchmark_layout_transform(min_exec_num=spec.min_exec_num,
                                         timeout=job.runner.timing.timeout)
        tuner.run()
        chosen = tuner.get_optimal_records()
        candidates = tuner.candidates
        predicted = tuner.problem.total([c.index(r) for c, r in zip(candidates, chosen, strict=True)])
        kernel_only = tuner.problem.total([0] * tuner.problem.size)
        partial = out.with_name(out.name + ".partial")
        partial.unlink(missing_ok=True)
        tuner.write_opt_sch2record_file(partial)
        partial.replace(out)
    except TuneError as err:
        return GraphTuning(spec.kind, "", seconds=time.perf_counter() - start, error=str(err))
    return GraphTuning(spec.kind, str(out), len(chosen), len(tuner.layout_transform_perf_records),
                       float(predicted), float(kernel_only), time.perf_counter() - start)
