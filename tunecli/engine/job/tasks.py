"""Turning the ``tasks`` of a job into AutoTVM tasks, with line-numbered errors.

A task's ``template`` is either a built-in template name (``dense.x86``; names and argument names
come from the strategy table ``tunecli.engine.ops.registry.STRATEGIES``) or
``"path/to/file.py:function"``: the file is imported (once per process, by
``task.template_file.load_template_file``, as the workers do) and the template registered by
``@autotvm.template("name")`` on ``function`` is used.  ``args`` is a list in parameter order or
a mapping by parameter name; defaults of the template fill the rest, so the workload written to
the log is always complete.  Tasks of built-in templates carry
their numpy ``reference`` (set by ``task.create``), so a runner with ``check_correctness``
compares against numpy rather than against config 0.  A ``conv2d_nchw.x86`` task on an x86
target runs as ``conv2d_nchw_blocked.x86``, ``conv2d_nchw_winograd.x86`` or ``conv2d_nchw_1x1.x86``
(:func:`kernel_job_template`): NCHW data and result as the job states, the weight taken in the
config's layout as ``relay.build`` prepares a constant weight.

Shapes are checked against what a kernel can address and this machine can hold, before a
template is traced (integer arguments beyond 32-bit indexing) and after (every kernel buffer within
32-bit indexing, all of them together within the machine's memory).  Every problem of a job's
tasks is reported at once (``create_tasks``).
"""

from __future__ import annotations

import inspect
import math
import os
from collections.abc import Sequence
from typing import TYPE_CHECKING

from tunecli.engine.ir.dtype import parse_dtype
from tunecli.engine.job.nodes import Problems
from tunecli.engine.ops.registry import STRATEGIES, builtin_names, is_builtin, make_args
from tunecli.engine.ops.x86.conv2d_nchw_blocked import kernel_job_template as conv2d_nchw_job_template
from tunecli.engine.target import Target
from tunecli.engine.task.task import TASK_TABLE, Task, TaskTemplate, create
from tunecli.engine.task.template_file import load_template_file
from tunecli.errors import InstantiationError, JobError, TemplateFileError, TuneError

if TYPE_CHECKING:  # spec.load_job checks task entries with this module's rules
    from tunecli.engine import te
    from tunecli.engine.job.spec import Job, TaskSpec, TemplateArg
    from tunecli.engine.task.workload_args import TaskArg, WorkloadArg

#: Exceptions a template may raise for arguments it cannot handle (shapes that do not fit).
_TEMPLATE_ERRORS = (TuneError, ValueError, TypeError, AssertionError, ZeroDivisionError, IndexError,
                    OverflowError, MemoryError, RecursionError)
#: The template a kernel job's NCHW convolution names, run through blocked layouts on x86
#: (:func:`kernel_job_template`).
CONV2D_NCHW = "conv2d_nchw.x86"
#: Most elements of one tensor: kernels index buffers with 32-bit integers.
MAX_ELEMENTS = 2**31 - 1


def resolve_template(spec: TaskSpec) -> TaskTemplate:
    """Find the registered template a task entry names, importing a template file if needed.

    Parameters
    ----------
    spec : TaskSpec

    Returns
    -------
    TaskTemplate

    Raises
    ------
    JobError
        When the name is unknown, the file cannot be imported, or the function is not a template.
    """
    where = spec.node.items()["template"]
    if ":" in spec.template and spec.template.split(":", 1)[0].endswith(".py"):
        file, func_name = spec.template.rsplit(":", 1)
        try:
            module = load_template_file(file)
        except TemplateFileError as err:
            raise where.error(str(err)) from err.__cause__
        func = getattr(module, func_name, None)
        if func is None:
            raise where.error(f"{file} has no function {func_name!r}")
        original = getattr(func, "__wrapped__", func)
        for template in TASK_TABLE.values():
            if template.func is original:
                return template
        raise where.error(f"{file}:{func_name} is not decorated with @autotvm.template(\"name\")")
    if spec.template in STRATEGIES:
        return TASK_TABLE[spec.template]
    raise where.error(f"unknown template {where.describe()} (built-in templates: "
                      f"{', '.join(builtin_names())}; or use \"path/to/file.py:function\")")


def bind_args(spec: TaskSpec, template: TaskTemplate) -> tuple:
    """Return the task's arguments in parameter order, with the template's defaults filled in.

    Parameters
    ----------
    spec : TaskSpec
    template : TaskTemplate

    Returns
    -------
    tuple
        Lists in the job become tuples (as TVM serializes them).
    """
    args = _tuples(spec.args)
    if is_builtin(template.name):
        try:
            return make_args(template.name, args)
        except InstantiationError as err:
            raise spec.node.items().get("args", spec.node).error(str(err)) from None
    signature = inspect.signature(template.func)
    try:
        bound = signature.bind(**args) if isinstance(args, dict) else signature.bind(*args)
    except TypeError as err:
        fields = spec.node.items()
        where = fields.get("args", spec.node)
        raise where.error(f"template {template.name}{signature}: {err}") from None
    bound.apply_defaults()
    return tuple(bound.args)


def _tuples(value: TemplateArg | dict[str, TemplateArg]) -> WorkloadArg | dict[str, WorkloadArg]:
    if isinstance(value, list):
        return tuple(_tuples(v) for v in value)
    if isinstance(value, dict):
        return {k: _tuples(v) for k, v in value.items()}
    return value


def physical_memory() -> int:
    """Bytes of memory this machine has."""
    return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")


def buffer_problem(buffers: Sequence[te.Tensor], memory: int) -> str | None:
    """What keeps a kernel with these argument tensors from running here, or None.

    Parameters
    ----------
    buffers : sequence of te.Tensor
        The kernel's arguments (``shape`` of ints, ``dtype``, ``name``).
    memory : int
        Bytes the buffers may take together (:func:`physical_memory`).

    Returns
    -------
    str or None
        E.g. a tensor with more elements than 32-bit indexing addresses.
    """
    total = 0
    for buf in buffers:
        shape = tuple(int(d) for d in buf.shape)
        elements = math.prod(shape)
        if elements > MAX_ELEMENTS:
            return (f"tensor {buf.name}{list(shape)} has {elements} elements, more than 32-bit indexing "
                    f"addresses ({MAX_ELEMENTS})")
        dtype = parse_dtype(str(buf.dtype))
        total += elements * max(1, dtype.bits * dtype.lanes // 8)
    if total > memory:
        return (f"the kernel's buffers take {_bytes(total)}, more than this machine's memory "
                f"({_bytes(memory)})")
    return None


def _bytes(n: float) -> str:
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if n < 1024 or unit == "TiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.2f} {unit}"
        n /= 1024
    raise AssertionError("unreachable")


def _leaves(value: TaskArg) -> list[TaskArg]:
    """The scalars of an argument (nested tuples flattened)."""
    if isinstance(value, (tuple, list)):
        return [leaf for v in value for leaf in _leaves(v)]
    return [value]


def _checked_args(spec: TaskSpec) -> tuple[TaskTemplate, tuple]:
    """The template and complete arguments of a task entry, refusing sizes no kernel can address."""
    template = resolve_template(spec)
    args = bind_args(spec, template)
    where = spec.node.items().get("args", spec.node)
    for leaf in _leaves(args):
        if isinstance(leaf, bool) and is_builtin(template.name):  # YAML's true/false/yes/no
            raise where.error(f"template {template.name} takes sizes, not {str(leaf).lower()} (YAML reads "
                              "true/false, yes/no, on/off as booleans)")
        if isinstance(leaf, float) and leaf.is_integer() and is_builtin(template.name):  # YAML's 1e1, 8.0
            raise where.error(f"template {template.name} takes whole-number sizes, not {leaf!r} "
                              f"(write {int(leaf)})")
        if isinstance(leaf, int) and not isinstance(leaf, bool) and abs(leaf) > MAX_ELEMENTS:
            raise where.error(f"{leaf} is beyond what 32-bit indexing addresses (sizes up to {MAX_ELEMENTS})")
    return template, args


def create_task(job: Job, index: int, memory: int | None = None) -> Task:
    """Create the AutoTVM task of ``job.tasks[index]`` (traces the template once).

    A built-in template's task gets its numpy ``reference`` (see ``task.create``).

    Parameters
    ----------
    job : Job
    index : int
    memory : int, optional
        Bytes the kernel's buffers may take together (default: :func:`physical_memory`).

    Returns
    -------
    Task

    Raises
    ------
    JobError
        When the template is unknown or rejects the arguments (an impossible shape), or the
        kernel's buffers are beyond 32-bit indexing or this machine's memory.
    """
    return _create(job.tasks[index], job.target, memory)


def kernel_job_template(name: str, args: tuple, target: Target) -> str:
    """The template a job's task of template ``name`` runs as on ``target``.

    A built-in ``conv2d_nchw.x86`` task runs as ``conv2d_nchw_blocked.x86``,
    ``conv2d_nchw_winograd.x86`` or ``conv2d_nchw_1x1.x86`` where those serve it
    (``ops.x86.conv2d_nchw_blocked.kernel_job_template``): the blocked layouts and Winograd
    ``relay.build`` gives the same convolution, or a GEMM over pixels for a 1x1 one, with the NCHW
    data and result the job states.  The log, ``inspect`` and ``apply`` name the template it runs as.

    Parameters
    ----------
    name : str
        The template the job names (registered).
    args : tuple
        Its complete arguments.
    target : Target

    Returns
    -------
    str
    """
    if name == CONV2D_NCHW and is_builtin(name):
        steered = conv2d_nchw_job_template(args, target)
        if steered is not None and is_builtin(steered):
            return steered
    return name


def _create(spec: TaskSpec, target: Target, memory: int | None = None) -> Task:
    """The task of one entry on ``target`` (see ``create_task``)."""
    template, args = _checked_args(spec)
    where = spec.node.items().get("args", spec.node)
    try:
        runs_as = kernel_job_template(template.name, args, target)
        if runs_as != template.name:  # the arguments pass the named template's checks first
            create(template.name, args, target)
        task = create(runs_as, args, target)
    except Exception as err:  # noqa: BLE001 - a template is the user's code: any failure is a bad task
        reason = str(err) if isinstance(err, _TEMPLATE_ERRORS) else f"{type(err).__name__}: {err}"
        raise where.error(f"template {template.name} rejects {_show(args)}: {reason}") from err
    if task.config_space is None or len(task.config_space) == 0:
        raise where.error(f"template {template.name} has an empty config space for {_show(args)}")
    try:
        _, buffers = task.instantiate(task.config_space.get(0))
    except _TEMPLATE_ERRORS:
        return task  # a config that fails to instantiate is measured as an error, not refused here
    problem = buffer_problem(buffers, physical_memory() if memory is None else memory)
    if problem:
        raise where.error(f"template {template.name}{_show(args)}: {problem}")
    return task


def create_tasks(job: Job, indices: Sequence[int] | None = None) -> list[Task]:
    """Check every task of a job and create those of ``indices`` (all by default).

    Every task entry is checked (template, arguments, the same task listed twice) whichever are
    created, so that ``tune`` and ``inspect`` accept the same jobs.

    Parameters
    ----------
    job : Job
    indices : sequence of int, optional
        The tasks to create (see :func:`check_task_index`).

    Returns
    -------
    list of Task
        In the order of ``indices``.

    Raises
    ------
    JobError
        Listing every problem: also two entries describing the same task (same template and
        arguments).
    """
    problems = Problems()
    selected = range(len(job.tasks)) if indices is None else indices
    created = _create_all(job.tasks, job.target, selected, problems)
    problems.raise_any()
    return [created[i] for i in selected]


def check_task_specs(specs: Sequence[TaskSpec], target: Target, problems: Problems) -> None:
    """Add the problems of task entries to ``problems`` (``create_tasks``' checks, every entry).

    ``load_job`` calls it when the rest of a job file has problems, so that the problems of its
    tasks are listed with them rather than after they are fixed.

    Parameters
    ----------
    specs : sequence of TaskSpec
    target : Target
    problems : Problems
    """
    named = [spec for spec in specs if spec.template]  # an entry without one was reported already
    _create_all(named, target, range(len(named)), problems)


def _create_all(specs: Sequence[TaskSpec], target: Target, selected: Sequence[int],
                problems: Problems) -> dict[int, Task]:
    """Check every entry and create those of ``selected``; problems go to ``problems``."""
    seen: dict[tuple, str] = {}  # workload -> the field of its first entry
    created: dict[int, Task] = {}
    for i, spec in enumerate(specs):
        checked = problems.collect(lambda spec=spec: _checked_args(spec), None)
        if checked is None:
            continue
        runs_as = kernel_job_template(checked[0].name, checked[1], target)
        workload = (runs_as, *checked[1])
        if workload in seen:
            problems.add(spec.node.error(f"the same task as {seen[workload]} "
                                         f"({runs_as}{_show(checked[1])})"))
        seen.setdefault(workload, spec.node.field)
        if i in selected:
            task = problems.collect(lambda spec=spec: _create(spec, target), None)
            if task is not None:
                created[i] = task
    return created


def _show(args: tuple) -> str:
    return "(" + ", ".join(repr(a) for a in args) + ")"


def check_task_index(job: Job, index: int | None) -> list[int]:
    """Return the task indices selected by ``index`` (all when None).

    Raises
    ------
    JobError
        When ``index`` is out of range.
    """
    if index is None:
        return list(range(len(job.tasks)))
    if not 0 <= index < len(job.tasks):
        raise JobError(f"{job.path}: there is no task {index}: the job has {len(job.tasks)} task(s), "
                       f"numbered 0..{len(job.tasks) - 1}")
    return [index]
