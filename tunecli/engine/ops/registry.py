"""The built-in templates: the strategy table, and one autotvm template per strategy.

``STRATEGIES`` holds every operator strategy (see ``ops.strategy``), keyed by operator and
target key; the ARM and CUDA backends add their rows to ``_ROWS``.  Importing this module
registers each strategy's template with ``autotvm.task.template`` under the strategy's name (so
``autotvm.task.create("dense.x86", ...)`` works) together with its numpy reference, which
``task.create`` stores in ``Task.reference``.  ``Task.template_module`` of their tasks is this
module, which a worker process imports to find them again.

The job validation (template names and argument names), the README's template table and the
template tests all read this table.  A user template registered under a built-in name
(``@autotvm.template("tutorial/matmul")`` in a port of TVM's tutorial) replaces the built-in one
(see ``autotvm.task``); ``is_builtin(name)`` tells whether the template registered under ``name``
is still tunecli's.
"""

from __future__ import annotations

import inspect
from collections.abc import Mapping, Sequence

from tunecli.engine.ops import tutorial
from tunecli.engine.ops.arm_cpu import conv2d_spatial_pack
from tunecli.engine.ops.arm_cpu import depthwise_conv2d as arm_depthwise_conv2d
from tunecli.engine.ops.baseline import Baseline
from tunecli.engine.ops.cuda import conv2d_direct
from tunecli.engine.ops.cuda import dense as cuda_dense
from tunecli.engine.ops.cuda import dense_int8 as cuda_dense_int8
from tunecli.engine.ops.cuda import depthwise_conv2d as cuda_depthwise_conv2d
from tunecli.engine.ops.strategy import Strategy, StrategyTable
from tunecli.engine.ops.x86 import (
    batch_matmul,
    conv2d,
    conv2d_nchw_1x1,
    conv2d_nchw_blocked,
    conv2d_nchw_pixels,
    conv2d_nchwc,
    conv2d_transpose,
    conv2d_winograd,
    conv3d,
    dense,
    dense_pack,
    depthwise_conv2d,
    depthwise_nchwc,
)
from tunecli.engine.task.task import TASK_TABLE, Task, TemplateFunc, TemplateResult, get_config, template
from tunecli.engine.task.workload_args import TaskArg
from tunecli.engine.task.workload_flop import RETIRED_WORKLOAD_FLOP, WorkloadFlop

_ROWS = (
    dense.DENSE_PACK,
    dense_pack.DENSE_PACK_TVM,
    dense_pack.DENSE_NOPACK_TVM,
    batch_matmul.BATCH_MATMUL_X86,
    conv2d.CONV2D_NCHW,
    conv2d_nchwc.CONV2D_NCHWC,
    conv2d_winograd.CONV2D_NCHWC_WINOGRAD,
    conv2d_nchw_blocked.CONV2D_NCHW_BLOCKED,
    conv2d_nchw_blocked.CONV2D_NCHW_WINOGRAD,
    conv2d_nchw_1x1.CONV2D_NCHW_1X1,
    conv2d_nchw_pixels.CONV2D_NCHW_PIXELS,
    depthwise_conv2d.DEPTHWISE_CONV2D_NCHW,
    depthwise_nchwc.DEPTHWISE_CONV2D_NCHWC,
    conv3d.CONV3D_NCDHW,
    conv2d_transpose.CONV2D_TRANSPOSE_NCHW,
    tutorial.MATMUL,
    tutorial.CONV2D_NO_BATCHING,
    conv2d_spatial_pack.CONV2D_NCHW_SPATIAL_PACK,
    arm_depthwise_conv2d.DEPTHWISE_CONV2D_NCHW_ARM,
    conv2d_direct.CONV2D_NCHW_CUDA,
    cuda_depthwise_conv2d.DEPTHWISE_CONV2D_NCHW_CUDA,
    cuda_dense.DENSE_SMALL_BATCH_GPU,
    cuda_dense_int8.DENSE_INT8_CUDA,
)
#: Every built-in strategy, by ``(operator, target key)`` and by template name.
STRATEGIES = StrategyTable(_ROWS)


def _template_function(strategy: Strategy) -> TemplateFunc:
    """The autotvm template of ``strategy``: its compute and schedule under the current config."""

    def run(*args: TaskArg) -> TemplateResult:
        return strategy.instantiate(get_config(), *args)

    run.__name__ = run.__qualname__ = strategy.name
    run.__module__ = __name__
    run.__doc__ = f"{strategy.name}: {strategy.compute.__name__} + {strategy.schedule.__name__}"
    run.__signature__ = inspect.signature(strategy.declare)  # type: ignore[attr-defined]
    return run


#: name -> registered template function (what ``autotvm.task.create`` traces).
TEMPLATES: dict[str, TemplateFunc] = {
    s.name: template(s.name, _template_function(s), reference=s.reference_for) for s in STRATEGIES
}


def builtin_names() -> list[str]:
    """Names of the built-in templates."""
    return STRATEGIES.names()


def get_strategy(name: str) -> Strategy:
    """The strategy of the built-in template ``name`` (InstantiationError when there is none)."""
    return STRATEGIES.get(name)


def baseline_of(task: Task) -> Baseline | None:
    """The numpy timing baseline of a task of a built-in template (``Strategy.baseline`` bound to
    the task's attributes); None for other tasks and rows without one.

    Parameters
    ----------
    task : Task

    Returns
    -------
    Baseline or None
    """
    if task.reference is None or not is_builtin(task.name):
        return None
    return get_strategy(task.name).baseline_for(*task.args)


def workload_flop_rule(name: str) -> WorkloadFlop | None:
    """The FLOP rule of template ``name``'s workloads (its row's ``workload_flop``, or one of
    TVM's retired template names); None when there is none.

    Parameters
    ----------
    name : str

    Returns
    -------
    callable or None
    """
    if name in STRATEGIES:
        return get_strategy(name).workload_flop
    return RETIRED_WORKLOAD_FLOP.get(name)


def is_builtin(name: str) -> bool:
    """True when the template registered under ``name`` is a built-in one (not a user's that
    replaced it).

    Parameters
    ----------
    name : str

    Returns
    -------
    bool
    """
    builtin = TEMPLATES.get(name)
    registered = TASK_TABLE.get(name)
    if builtin is None or registered is None:
        return False
    return registered.func is builtin.__wrapped__  # type: ignore[attr-defined]


def make_args(name: str, args: Sequence[TaskArg] | Mapping[str, TaskArg]) -> tuple[TaskArg, ...]:
    """Complete the arguments of built-in template ``name`` given by position or by name.

    Parameters
    ----------
    name : str
    args : sequence or mapping
        Positional values, or ``{arg_name: value}``; lists become tuples.

    Returns
    -------
    tuple
        One value per argument of the template, defaults filled in.
    """
    return get_strategy(name).bind(args)


def template_table() -> str:
    """The README's table of built-in templates (markdown), one row per strategy."""
    rows = ["| template | arguments |", "|---|---|"]
    for s in STRATEGIES:
        params = ", ".join(p.name if p.default is inspect.Parameter.empty else f"{p.name}={p.default}"
                           for p in s.parameters)
        rows.append(f"| `{s.name}` | `{params}`" + (f" — {s.summary}" if s.summary else "") + " |")
    return "\n".join(rows)

