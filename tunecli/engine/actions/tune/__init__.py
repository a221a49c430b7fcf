"""``tune_tasks``: tune every task of a job, appending to its log, resuming from it.

The tasks are created (and so checked) before any is tuned (``job.network.job_task_set``).  The
log is read once: each task's ``TaskHistory`` (``log.task_history``: its records, trials and best)
goes to its progress, to the task scheduler and to its tuner (``Tuner.resume``): the tuner never
proposes a config index that is in the log, and a model-based tuner starts from what those
records taught it.  Configs in the log count toward
``n_trial``: a task is done when the log holds ``n_trial`` of its configs (or its whole space).
Every measurement is appended to the log and flushed as soon as it finishes — not when its
batch is over (``log_to_file`` streams through the ``on_result`` hook of ``measure_batch``) — so
an interrupted or killed run loses no finished measurement, only the ones still in flight.

Each task's first trial is the config its untuned build runs (``tuner.untuned``: the pre-tuned
package's record or the template's fallback), unless the log holds it already: the log's best
is then never a config slower than not tuning, so a short tune cannot make a network slower.

With ``tuner.budget`` the tasks share one trial budget instead: a task scheduler
(``engine.tuner.task_scheduler``, the job's ``tuner.task_scheduler``) gives it round by round to
the task where the weighted latency ``sum(weight * best latency)`` is expected to gain most
(tasks that are alternatives of one operator counted once, at the faster's latency).
The records already in the log count toward the budget, each for its task.

With ``tuner.remeasure`` (K) each task's K best configs are measured again once its tuning ends
(``engine.tuner.remeasure``; with a budget, after the budget is spent) and those records are
appended too: a time inflated by other load during tuning is then corrected, as whoever reads
the log takes each config's lowest cost.  They count as ``remeasured``, not as trials, and a
resumed run does not measure a config again twice (two records of a config mean it was).
With ``tuner.rematch`` a task's untuned config and the config that beats it by more than the
margin are measured again first, in alternating turns (``engine.tuner.untuned.rematch_untuned``),
counted as ``remeasured`` too.

A model job's tasks are extracted from its network (``network.job_task_set``), each weighted by
how often the network runs it, with the groups of tasks that implement one operator.  After the tasks, a
model job measures the untuned configs of the implementations its untuned build runs where the job
tunes another (``measure_untuned_operators``), so apply compares the tuned build with what the
untuned one really runs.  The tune command's entry (``actions.job_file.tune_job``) loads the job
once, holds the log's lock and runs the graph tuner step after this one (``actions.tune_graph``)
with the same worker pools.

``tune_report`` holds what tuning reports (``TuneEvent``, ``TaskOutcome``, ``TuneSummary``);
``tuning`` the tuning itself.
"""

from tunecli.engine.actions.tune.tune_report import TaskOutcome, TuneEvent, TuneSummary
from tunecli.engine.actions.tune.tuning import measure_untuned_operators, prepare_log, tune_tasks

__all__ = ["TaskOutcome", "TuneEvent", "TuneSummary", "measure_untuned_operators", "prepare_log",
           "tune_tasks"]
