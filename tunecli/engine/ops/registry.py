"""The built-in autotvm templates: name -> template, argument names, numpy reference.

Importing this module registers every built-in template with ``autotvm.task.template`` (so
``autotvm.task.create("dense.x86", ...)`` works); ``Task.template_module`` of their tasks names
the module that defines each one, which a worker process imports to find it again.

Every template returns ``(schedule, [inputs..., output])``: the kernel's last argument is its
only output.  ``reference_outputs`` computes the expected output from the input arrays, for the
runner's correctness check.

A user template registered under a built-in name (``@autotvm.template("tutorial/matmul")`` in
a port of TVM's tutorial) replaces the built-in one (see ``autotvm.task``); ``is_builtin(name)``
tells whether the template registered under ``name`` is still tunecli's.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from functools import partial
from typing import Any

import numpy as np

from tunecli.engine.ops import reference as ref
from tunecli.engine.ops import tutorial
from tunecli.engine.ops.x86 import batch_matmul, conv2d, dense, depthwise_conv2d
from tunecli.engine.ops.x86.dense import out_dtype_for
from tunecli.engine.task.task import TASK_TABLE
from tunecli.errors import InstantiationError

_NO_DEFAULT = object()


@dataclass(frozen=True)
class TemplateInfo:
    """A built-in template.

    Attributes
    ----------
    name : str
        Registered task name.
    func : callable
        The template (``func(*args) -> (schedule, tensors)``).
    arg_names : tuple of str
        Names of the template arguments, in order.
    defaults : dict
        Default values of trailing arguments.
    reference : callable
        ``reference(*args)`` gives ``f(*inputs) -> expected output`` (numpy), a picklable
        ``functools.partial`` (it travels with a pickled Task).
    """

    name: str
    func: Callable[..., Any]
    arg_names: tuple[str, ...]
    defaults: Mapping[str, Any]
    reference: Callable[..., Callable[..., np.ndarray]]

    @property
    def module(self) -> str:
        """The module that registers the template (what a worker imports)."""
        return getattr(self.func, "__module__", "")


def _ref_dense(M: int, N: int, K: int, dtype: str = "float32") -> Callable[..., np.ndarray]:
    return partial(ref.dense_python, out_dtype=out_dtype_for(dtype))


def _ref_batch_matmul(B: int, M: int, N: int, K: int, dtype: str = "float32") -> Callable[..., np.ndarray]:
    return partial(ref.batch_matmul, out_dtype=out_dtype_for(dtype))


def _ref_conv2d(N: int, H: int, W: int, CI: int, CO: int, KH: int, KW: int, stride: Any, padding: Any,
                dilation: Any = 1, dtype: str = "float32") -> Callable[..., np.ndarray]:
    return partial(ref.conv2d_nchw_python, stride=stride, padding=padding, dilation=dilation,
                   out_dtype=out_dtype_for(dtype))


def _ref_depthwise(N: int, H: int, W: int, C: int, multiplier: int, KH: int, KW: int, stride: Any,
                   padding: Any, dilation: Any = 1, dtype: str = "float32") -> Callable[..., np.ndarray]:
    return partial(ref.depthwise_conv2d_python_nchw, stride=stride, padding=padding, dilation=dilation,
                   out_dtype=out_dtype_for(dtype))


def _matmul_wrapping(a: np.ndarray, b: np.ndarray, dtype: str) -> np.ndarray:
    """``a @ b`` summed in ``dtype`` as the kernel does (integer sums wrap around)."""
    wide = np.float64 if np.dtype(dtype).kind == "f" else np.int64
    return (a.astype(wide) @ b.astype(wide)).astype(dtype)


def _ref_matmul(N: int, L: int, M: int, dtype: str) -> Callable[..., np.ndarray]:
    return partial(_matmul_wrapping, dtype=dtype)


def _ref_conv2d_no_batching(N: int, H: int, W: int, CO: int, CI: int, KH: int, KW: int, stride: Any,
                            padding: Any) -> Callable[..., np.ndarray]:
    return partial(ref.conv2d_nchw_python, stride=stride, padding=padding)


_CONV_ARGS = ("N", "H", "W", "CI", "CO", "KH", "KW", "stride", "padding", "dilation", "dtype")
_TEMPLATES = [
    TemplateInfo("dense.x86", dense.dense_x86, ("M", "N", "K", "dtype"), {"dtype": "float32"}, _ref_dense),
    TemplateInfo("batch_matmul.x86", batch_matmul.batch_matmul_x86, ("B", "M", "N", "K", "dtype"),
                 {"dtype": "float32"}, _ref_batch_matmul),
    TemplateInfo("conv2d_nchw.x86", conv2d.conv2d_nchw_x86, _CONV_ARGS, {"dilation": 1, "dtype": "float32"},
                 _ref_conv2d),
    TemplateInfo("depthwise_conv2d_nchw.x86", depthwise_conv2d.depthwise_conv2d_nchw_x86,
                 ("N", "H", "W", "C", "multiplier", "KH", "KW", "stride", "padding", "dilation", "dtype"),
                 {"dilation": 1, "dtype": "float32"}, _ref_depthwise),
    TemplateInfo("tutorial/matmul", tutorial.matmul, ("N", "L", "M", "dtype"), {"dtype": "float32"},
                 _ref_matmul),
    TemplateInfo("tutorial/conv2d_no_batching", tutorial.conv2d_no_batching,
                 ("N", "H", "W", "CO", "CI", "KH", "KW", "stride", "padding"), {}, _ref_conv2d_no_batching),
]
BUILTIN_TEMPLATES: dict[str, TemplateInfo] = {t.name: t for t in _TEMPLATES}


def builtin_names() -> list[str]:
    """Names of the built-in templates."""
    return list(BUILTIN_TEMPLATES)


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
    info = BUILTIN_TEMPLATES.get(name)
    registered = TASK_TABLE.get(name)
    if info is None or registered is None:
        return False
    return registered.func is getattr(info.func, "__wrapped__", info.func)


def get_template_info(name: str) -> TemplateInfo:
    """The built-in template called ``name`` (InstantiationError when there is none)."""
    try:
        return BUILTIN_TEMPLATES[name]
    except KeyError:
        known = ", ".join(BUILTIN_TEMPLATES)
        raise InstantiationError(f"no built-in template {name!r}; known: {known}") from None


def make_args(name: str, args: Sequence[Any] | Mapping[str, Any]) -> tuple:
    """Complete template arguments given by position or by name, filling defaults.

    Parameters
    ----------
    name : str
        A built-in template name.
    args : sequence or mapping
        Positional values, or ``{arg_name: value}``; lists become tuples.

    Returns
    -------
    tuple
        One value per ``arg_names`` entry.
    """
    info = get_template_info(name)
    if isinstance(args, Mapping):
        unknown = set(args) - set(info.arg_names)
        if unknown:
            raise InstantiationError(f"{name}: unknown arguments {sorted(unknown)}; "
                                     f"expected {info.arg_names}")
        values = [args.get(a, info.defaults.get(a, _NO_DEFAULT)) for a in info.arg_names]
    else:
        given = list(args)
        if len(given) > len(info.arg_names):
            raise InstantiationError(f"{name}: {len(given)} arguments given, expected {info.arg_names}")
        values = given + [info.defaults.get(a, _NO_DEFAULT) for a in info.arg_names[len(given):]]
    missing = [a for a, v in zip(info.arg_names, values, strict=True) if v is _NO_DEFAULT]
    if missing:
        raise InstantiationError(f"{name}: missing arguments {missing}; expected {info.arg_names}")
    return tuple(tuple(v) if isinstance(v, list) else v for v in values)


def reference_outputs(name: str, args: Sequence[Any], arrays: Sequence[np.ndarray]) -> list[np.ndarray]:
    """Expected kernel outputs of template ``name`` with ``args`` for the given arrays.

    Parameters
    ----------
    name : str
    args : sequence
        Template arguments (as stored in a task; defaults are filled in).
    arrays : sequence of numpy.ndarray
        The kernel's arguments in order; the trailing output array is ignored.

    Returns
    -------
    list of numpy.ndarray
        One expected array (the output).
    """
    info = get_template_info(name)
    full = make_args(name, list(args))
    inputs = list(arrays)[:-1]
    return [np.asarray(info.reference(*full)(*inputs))]


def attach_reference(task: Any) -> Any:
    """Set ``task.reference`` (input arrays -> expected output) when ``task`` is a built-in template.

    The reference is a picklable ``functools.partial``, so the task still pickles for the build
    and measurement workers.

    Parameters
    ----------
    task : Task

    Returns
    -------
    Task
        The same task; unchanged when its template is not built in (also when a user template
        replaced the built-in one of its name).
    """
    info = BUILTIN_TEMPLATES.get(task.name)
    if info is not None and _task_is_builtin(task, info):
        task.reference = info.reference(*make_args(task.name, list(task.args)))
    return task


def _task_is_builtin(task: Any, info: TemplateInfo) -> bool:
    """True when ``task`` was made from the built-in template ``info`` (not a user's of that name)."""
    func = getattr(task, "func", None)
    return getattr(func, "func", None) is getattr(info.func, "__wrapped__", info.func)


def tolerance(dtype: Any) -> tuple[float, float]:
    """``(rtol, atol)`` for comparing a kernel output of ``dtype`` with its reference."""
    kind = np.dtype(dtype).kind
    if kind != "f":
        return 0.0, 0.0
    return (1e-3, 1e-3) if np.dtype(dtype).itemsize <= 2 else (1e-4, 1e-4)
