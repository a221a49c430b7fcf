"""Turning the ``tasks`` of a job into AutoTVM tasks, with line-numbered errors.

A task's ``template`` is either a built-in template name (``dense.x86``; names and argument names
come from the strategy table ``tunecli.engine.ops.registry.STRATEGIES``) or
``"path/to/file.py:function"``: the file is imported (once per process, by
``task.template_file.load_template_file``, as the workers do) and the template registered by
``@autotvm.template("name")`` on ``function`` is used.  ``args`` is a list in parameter order or
a mapping by parameter name; defaults of the template fill the rest, so the workload written to
the log is always complete.  Tasks of built-in templates carry
their numpy ``reference`` (set by ``task.create``), so a runner with ``check_correctness``
compares against numpy rather than against config 0.
"""

from __future__ import annotations

import inspect
from typing import Any

from tunecli.engine.job.spec import Job, TaskSpec
from tunecli.engine.ops.registry import STRATEGIES, builtin_names, is_builtin, make_args
from tunecli.engine.task.task import TASK_TABLE, Task, TaskTemplate, create
from tunecli.engine.task.template_file import load_template_file
from tunecli.errors import InstantiationError, JobError, TemplateFileError, TuneError

#: Exceptions a template may raise for arguments it cannot handle (shapes that do not fit).
_TEMPLATE_ERRORS = (TuneError, ValueError, TypeError, AssertionError, ZeroDivisionError, IndexError)


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
    raise where.error(f"unknown template {spec.template!r} (built-in templates: "
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


def _tuples(value: Any) -> Any:
    if isinstance(value, list):
        return tuple(_tuples(v) for v in value)
    if isinstance(value, dict):
        return {k: _tuples(v) for k, v in value.items()}
    return value


def create_task(job: Job, index: int) -> Task:
    """Create the AutoTVM task of ``job.tasks[index]`` (traces the template once).

    A built-in template's task gets its numpy ``reference`` (see ``task.create``).

    Parameters
    ----------
    job : Job
    index : int

    Returns
    -------
    Task

    Raises
    ------
    JobError
        When the template is unknown or rejects the arguments (an impossible shape).
    """
    spec = job.tasks[index]
    template = resolve_template(spec)
    args = bind_args(spec, template)
    where = spec.node.items().get("args", spec.node)
    try:
        task = create(template.name, args, job.target)
    except _TEMPLATE_ERRORS as err:
        raise where.error(f"template {template.name} rejects {_show(args)}: {err}") from err
    if task.config_space is None or len(task.config_space) == 0:
        raise where.error(f"template {template.name} has an empty config space for {_show(args)}")
    return task


def create_tasks(job: Job) -> list[Task]:
    """Create every task of a job, so that all are checked before any is tuned.

    Parameters
    ----------
    job : Job

    Returns
    -------
    list of Task

    Raises
    ------
    JobError
        Also when two entries describe the same task (same template and arguments).
    """
    tasks: list[Task] = []
    for i in range(len(job.tasks)):
        task = create_task(job, i)
        for j, other in enumerate(tasks):
            if other.workload == task.workload:
                raise job.tasks[i].node.error(f"the same task as tasks[{j}] ({task.name}{_show(task.args)})")
        tasks.append(task)
    return tasks


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
