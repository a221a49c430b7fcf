"""Tuning tasks: a registered template plus its arguments and target.

``create(name, args, target)`` traces a template (see ``template_registry``) once with a fresh
``ConfigSpace`` to collect the space and count FLOPs.  A task pickles by name: the receiving
process imports ``task.template_module`` (or the template's source file) and looks the template
up again, so templates need not be picklable.  The registry's names are importable from here too.
"""

from __future__ import annotations

import pickle
from collections.abc import Iterable, Sequence

import cloudpickle

from tunecli.engine.target import Target, as_target
from tunecli.engine.task.dispatcher import ApplyConfig
from tunecli.engine.task.flop import compute_flop
from tunecli.engine.task.space import ConfigSpace
from tunecli.engine.task.template_registry import (
    BUILTIN_PACKAGE,
    OLD_TEMPLATE_NAMES,
    TASK_TABLE,
    MissingTask,
    ReferenceFunc,
    TaskTemplate,
    TemplateFunc,
    TemplateResult,
    _find_template,
    _template_name_of,
    get_config,
    register,
    register_template,
    template,
)
from tunecli.engine.task.workload_args import (
    Workload,
    WorkloadArg,
    args_to_workload,
    deserialize_args,
    serialize_args,
)
from tunecli.errors import TuneError

__all__ = [
    "BUILTIN_PACKAGE", "OLD_TEMPLATE_NAMES", "TASK_TABLE", "MissingTask", "ReferenceFunc", "Task",
    "TaskTemplate", "TemplateFunc", "TemplateResult", "Workload", "WorkloadArg", "args_to_workload", "create",
    "deserialize_args", "get_config", "register", "register_template", "serialize_args", "template",
]


class Task:
    """A tuning task: template name, serialized args, target, config space and FLOPs.

    Parameters
    ----------
    name : str
    args : tuple
        Serialized arguments (see ``serialize_args``).

    Attributes
    ----------
    reference : callable or None
        ``reference(*input_arrays)`` -> the kernel's expected output array (or a tuple of them, in
        output order), computed with numpy; set by ``create`` for templates registered with one
        (the built-in templates), else None and correctness is checked against the first config
        of the space.  Picklable (a ``functools.partial``).
    """

    def __init__(self, name: str, args: Iterable[WorkloadArg]):
        self.name = name
        self.args = tuple(args)
        self.kwargs: dict[str, object] = {}
        self.func: TaskTemplate | MissingTask = TASK_TABLE.get(name) or MissingTask(name)
        self.config_space: ConfigSpace | None = None
        self.flop: float | None = None
        self.target: Target | None = None
        self.target_host: Target | None = None
        self.template_module: str | None = self.func.module
        self.template_file: str | None = self.func.source_file
        self.reference: ReferenceFunc | None = None

    @property
    def workload(self) -> Workload:
        """The key of this task in dispatch contexts: ``(name,) + args``."""
        return args_to_workload(self.args, self.name)

    @workload.setter
    def workload(self, workload: Workload) -> None:
        """TVM 0.6 scripts set a converted task's workload to the extracted task's
        (``task.workload = tsk.workload``); here a task's workload is its name and arguments, so
        only the same workload is accepted, and another is a TuneError naming both."""
        if tuple(workload) != self.workload:
            raise TuneError(f"task {self.name}: its workload is its name and arguments, "
                            f"{self.workload}; it cannot be set to {tuple(workload)}")

    def instantiate(self, config: ConfigSpace) -> TemplateResult:
        """Run the template with ``config`` and return ``(schedule, tensors)``.

        Parameters
        ----------
        config : ConfigEntity

        Returns
        -------
        tuple
        """
        config.flop = 0
        with ApplyConfig(config):
            if self.target is not None:
                with self.target:
                    sch, arg_bufs = self.func(*self.args, **self.kwargs)
            else:
                sch, arg_bufs = self.func(*self.args, **self.kwargs)
        if not self.flop:
            config.flop = config.flop or compute_flop(sch)
            self.flop = config.flop
        return sch, arg_bufs

    def __getstate__(self) -> dict[str, object]:
        state = {k: v for k, v in self.__dict__.items() if k != "func"}
        if self.template_module == "__main__" and isinstance(self.func, TaskTemplate):
            # A template of the user's script (or notebook, or stdin) cannot be imported by a
            # worker: it travels by value, as TVM's tasks do.
            state["template_by_value"] = cloudpickle.dumps(self.func.func)
        return state

    def __setstate__(self, state: dict[str, object]) -> None:
        by_value = state.pop("template_by_value", None)
        self.reference = None
        self.__dict__.update(state)
        if isinstance(by_value, bytes):
            self.func = TaskTemplate(self.name, pickle.loads(by_value))
        else:
            self.func = _find_template(self.name, self.template_module, self.template_file)

    def __repr__(self) -> str:
        return (f"Task(func_name={self.name}, args={self.args}, kwargs={self.kwargs}, "
                f"workload={self.workload})")


def create(task_name: str | TemplateFunc, args: Sequence[object], target: Target | str,
           target_host: Target | str | None = None, template_key: str | None = None) -> Task:
    """Create a tuning task: trace template ``task_name`` with ``args`` to collect its space.

    A template registered with a numpy reference (the built-in ones) gives the task its
    ``reference``.

    Parameters
    ----------
    task_name : str or callable
        A name registered with ``@template``, or the template function itself (TVM 0.6): a
        ``@template`` wrapper, or a plain function, registered here under its ``__name__``.  An
        old TVM template name of :data:`OLD_TEMPLATE_NAMES` that nothing registers here gives
        the task of the current name (with the arguments the current name's tasks take).
    args : sequence
        Template arguments (tensors are serialized).
    target : str or Target
    target_host : str or Target, optional
    template_key : str, optional
        TVM 0.6's template variant: ``"direct"`` (or empty), kept as ``config_space.template_key``;
        another variant is a TuneError (a variant here is a task of its own name, e.g.
        ``conv2d_nchw_winograd.cuda``).

    Returns
    -------
    Task
    """
    if template_key not in (None, "", "direct"):
        raise TuneError(f"create({task_name!r}): template_key {template_key!r}: a template has one variant, "
                        "'direct'; another variant is a task of its own name")
    if callable(task_name):
        task_name = _template_name_of(task_name)
    elif task_name in OLD_TEMPLATE_NAMES and task_name not in TASK_TABLE:
        task_name = OLD_TEMPLATE_NAMES[task_name]
    args = serialize_args(args)
    task = Task(task_name, args)
    target = as_target(target)
    if target_host is not None:
        target_host = as_target(target_host)
    task.config_space = ConfigSpace()
    task.config_space.template_key = template_key or ""  # type: ignore[attr-defined]
    with ApplyConfig(task.config_space), target:
        sch, _ = task.func(*args)
    task.config_space.code_hash = getattr(sch, "code_hash", None)
    task.flop = task.config_space.flop or compute_flop(sch)
    task.target = target
    task.target_host = target_host
    if task.func.reference is not None:
        task.reference = task.func.reference(*args)
    return task
