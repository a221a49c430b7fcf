"""The registry of tunable templates (TVM's ``TASK_TABLE``, ``autotvm.template``,
``autotvm.task.register``): a name maps to a function ``f(*args) -> (schedule, tensors)`` that
reads its knobs from ``get_config()``.

Registering a name twice is an error, as in TVM (unless ``register(..., override=True)``) —
except over a *built-in* template (one defined in ``tunecli.engine.ops``, e.g.
``tutorial/matmul``): a user template of the same name replaces it (whichever is imported
first), so a port of TVM's tutorial runs unchanged.  Registering the same function again (its
module imported a second time) is not a conflict.
"""

from __future__ import annotations

import functools
import importlib
import inspect
import logging
from collections.abc import Callable
from typing import TYPE_CHECKING, TypeAlias, overload

from tunecli.engine import te
from tunecli.engine.target import Target
from tunecli.engine.task.dispatcher import ApplyConfig, DispatchContext
from tunecli.engine.task.space import ConfigSpace
from tunecli.engine.task.template_file import is_template_file_module, load_template_file
from tunecli.engine.task.template_table import TemplateTable
from tunecli.engine.task.workload_args import WorkloadArg, args_to_workload, deserialize_args
from tunecli.errors import InstantiationError, TuneError

if TYPE_CHECKING:
    import numpy as np

    from tunecli.engine.schedule import Schedule

#: What a template returns: its schedule and the tensors of the kernel's arguments.
TemplateResult: TypeAlias = "tuple[Schedule, list[te.Tensor]]"
#: A template: ``func(*args) -> (schedule, tensors)``; its arguments are any values a workload holds.
TemplateFunc: TypeAlias = "Callable[..., TemplateResult]"
#: ``reference(*input_arrays)``: a kernel's expected output array (or a tuple of them) in numpy.
ReferenceFunc: TypeAlias = "Callable[..., np.ndarray | tuple[np.ndarray, ...]]"

logger = logging.getLogger("autotvm")

#: TVM 0.6's names of x86 templates that tune_relay_x86 converts extracted tasks to, and the tunecli
#: templates (which extraction already gives, with the same arguments) they stand for.
OLD_TEMPLATE_NAMES = {
    "topi_x86_conv2d_NCHWc": "conv2d_NCHWc.x86",
    "topi_x86_depthwise_conv2d_NCHWc_from_nchw": "depthwise_conv2d_NCHWc.x86",
}

#: Templates defined in modules under this package are tunecli's built-in templates.
BUILTIN_PACKAGE = "tunecli.engine.ops."


class TaskTemplate:
    """A registered template function and where it came from.

    Parameters
    ----------
    name : str
    func : callable
        ``func(*args) -> (schedule, tensors)``.
    reference : callable, optional
        ``reference(*args) -> f`` where ``f(*input_arrays)`` gives the kernel's expected outputs
        (numpy); a picklable function (built-in templates: their strategy's reference).
    """

    def __init__(self, name: str, func: TemplateFunc,
                 reference: Callable[..., ReferenceFunc] | None = None):
        self.name = name
        self.func = func
        self.reference = reference
        self.module = func.__module__
        try:
            self.source_file: str | None = inspect.getsourcefile(func)
        except TypeError:
            self.source_file = None

    @property
    def builtin(self) -> bool:
        """True for tunecli's own templates (a user template of the same name replaces them)."""
        return (self.module or "").startswith(BUILTIN_PACKAGE)

    def __call__(self, *args: WorkloadArg, **kwargs: object) -> TemplateResult:
        return self.func(*deserialize_args(args), **kwargs)


class MissingTask:
    """Stands in for a template whose name is not registered in this process.

    Parameters
    ----------
    name : str
    """

    module = None
    source_file = None
    reference = None

    def __init__(self, name: str):
        self.name = name

    def __call__(self, *args: object, **kwargs: object) -> TemplateResult:
        raise InstantiationError(
            f"Attempting to invoke a missing task {self.name}. It is possible that the function is "
            "registered in a Python module that is not imported in this run, or the log is out-of-date.")


TASK_TABLE = TemplateTable()


def _same_function(old: TaskTemplate, f: TemplateFunc) -> bool:
    """True when ``f`` is the registered template again (a module re-imported, maybe by path)."""
    if old.func.__qualname__ != f.__qualname__:
        return False
    try:
        source = inspect.getsourcefile(f)
    except TypeError:
        source = None
    return old.module == f.__module__ or (source is not None and source == old.source_file)


@overload
def template(task_name: str, func: TemplateFunc, *,
             reference: Callable[..., ReferenceFunc] | None = None) -> TemplateFunc: ...


@overload
def template(task_name: str, func: None = None, *,
             reference: Callable[..., ReferenceFunc] | None = None
             ) -> Callable[[TemplateFunc], TemplateFunc]: ...


@overload
def template(task_name: TemplateFunc, func: None = None, *,
             reference: Callable[..., ReferenceFunc] | None = None) -> TemplateFunc: ...


def template(task_name: str | TemplateFunc, func: TemplateFunc | None = None, *,
             reference: Callable[..., ReferenceFunc] | None = None
             ) -> TemplateFunc | Callable[[TemplateFunc], TemplateFunc]:
    """Register a tunable template under ``task_name`` (usable as ``@template(name)``, or bare as
    ``@template``, TVM 0.6's form, where the function's own name is the task name).

    Parameters
    ----------
    task_name : str or callable
        The task name; a function instead is the template itself, registered under its ``__name__``.
    func : callable, optional
        The template; when omitted (and ``task_name`` is a name) a decorator is returned.
    reference : callable, optional
        ``reference(*args)`` gives the numpy function of a task's expected outputs (see
        ``Task.reference``).

    Returns
    -------
    callable
        A wrapper that runs the template with the config of the current dispatch context; its
        ``func_name`` is the task name (``create`` accepts the wrapper in place of the name).
    """
    if callable(task_name):
        if func is not None:
            raise TuneError("template(): give a task name and a function, or a function alone")
        func = task_name
        task_name = func.__name__
    name: str = task_name

    def _decorate(f: TemplateFunc) -> TemplateFunc:
        register_template(TaskTemplate(name, f, reference))

        @functools.wraps(f)
        def wrapper(*args: object, **kwargs: object) -> TemplateResult:
            if kwargs:
                raise TuneError(f"template {name!r}: keyword arguments are not supported")
            workload = args_to_workload(args, name)
            cfg = DispatchContext.current.query(Target.current(), workload)
            with ApplyConfig(cfg):
                return f(*args)

        wrapper.func_name = name  # type: ignore[attr-defined]
        return wrapper

    return _decorate(func) if func is not None else _decorate


def _template_name_of(func: TemplateFunc) -> str:
    """The task name of a template given as a function (TVM 0.6's ``create(func, ...)``): the name
    a ``@template`` wrapper was registered under, else the function's ``__name__``, under which a
    plain function is registered here (an error if another function holds that name)."""
    name = getattr(func, "func_name", None)
    if isinstance(name, str) and dict.get(TASK_TABLE, name) is not None:
        return name
    name = getattr(func, "__name__", None)
    if not isinstance(name, str) or name == "<lambda>":
        raise TuneError(f"create(): the template {func!r} has no name; register it with @template(name)")
    register_template(TaskTemplate(name, func))
    return name


def register_template(new: TaskTemplate) -> None:
    """Put ``new`` in TASK_TABLE; a user template replaces a built-in one of the same name."""
    old = dict.get(TASK_TABLE, new.name)  # registering loads nothing
    if old is None or _same_function(old, new.func):
        TASK_TABLE[new.name] = new
    elif old.builtin and not new.builtin:
        logger.debug("template %r of %s.%s replaces the built-in one", new.name, new.module,
                     new.func.__qualname__)
        TASK_TABLE[new.name] = new
    elif new.builtin and not old.builtin:
        logger.debug("built-in template %r not registered: %s.%s holds the name", new.name, old.module,
                     old.func.__qualname__)
    else:
        raise TuneError(f"template {new.name!r} is already registered by {old.module}."
                        f"{old.func.__qualname__}; cannot register {new.module}.{new.func.__qualname__}")


@overload
def register(name: str, func: TemplateFunc, override: bool = False) -> TemplateFunc: ...


@overload
def register(name: str, func: None = None, override: bool = False
             ) -> Callable[[TemplateFunc], TemplateFunc]: ...


def register(name: str, func: TemplateFunc | None = None, override: bool = False
             ) -> TemplateFunc | Callable[[TemplateFunc], TemplateFunc]:
    """Register ``func`` as the template of task ``name`` (TVM 0.6's ``autotvm.task.register``;
    a decorator when ``func`` is omitted).

    Unlike ``template``, the function is registered as it is: ``create`` and ``Task.instantiate``
    run it under the task's config, which it reads with ``get_config()``.

    Parameters
    ----------
    name : str
        The task name.
    func : callable, optional
        ``func(*args) -> (schedule, tensors)``.
    override : bool
        Replace a template already registered under ``name``; without it, a name another function
        holds is a TuneError (a built-in template is still replaced, as by ``template``).

    Returns
    -------
    callable
        ``func`` itself (or, without ``func``, a decorator that registers and returns its function).

    Raises
    ------
    TuneError
        When ``name`` is not a non-empty string, or ``func`` is not callable.
    """
    if not isinstance(name, str) or not name:
        raise TuneError(f"register(): the task name must be a non-empty string, not {name!r}")

    def _do_register(f: TemplateFunc) -> TemplateFunc:
        if not callable(f):
            raise TuneError(f"register({name!r}): the template must be a function, not {f!r}")
        if override:
            TASK_TABLE[name] = TaskTemplate(name, f)
        else:
            register_template(TaskTemplate(name, f))
        return f

    return _do_register(func) if func is not None else _do_register


def get_config() -> ConfigSpace:
    """Return the config of the current dispatch context (inside a template).

    Returns
    -------
    ConfigSpace
        A ConfigSpace while collecting, a ConfigEntity when measuring, or a fallback config.
    """
    return DispatchContext.current.query(Target.current(), None)


def _find_template(name: str, module: str | None, source_file: str | None) -> TaskTemplate | MissingTask:
    """Look a template up by name, importing the module that registers it when needed (also when
    only a built-in template of that name is registered here but the task's template is a user's).

    A template file loaded by ``load_template_file`` (in the tuner) is loaded the same way here,
    under the same module name; a module that cannot be imported by name but has a source file
    is loaded from that file by the same loader.

    Raises
    ------
    TemplateFileError
        When the template's source file is gone or fails to import.
    """

    def missing() -> bool:
        found = TASK_TABLE.get(name)
        return found is None or (found.builtin and found.module != module)

    if missing() and module and module != "__main__" and not is_template_file_module(module):
        try:
            importlib.import_module(module)
        except ImportError:
            pass
    if missing() and source_file:
        load_template_file(source_file)
    return TASK_TABLE.get(name) or MissingTask(name)
