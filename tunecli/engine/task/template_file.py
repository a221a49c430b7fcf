"""Template files: a user's Python file of ``@template`` functions, imported once per process.

A job names a user template as ``path/to/file.py:function``.  The file is imported under a
module name made from its resolved path (``_tunecli_template_<sha1 of the path>``), so the
tuner and every worker that re-creates a pickled Task (``Task.__setstate__``) import it under
the same name, and a process executes the file at most once: later loads return the module
already in ``sys.modules``.
"""

from __future__ import annotations

import hashlib
import importlib.util
import os
import sys
from pathlib import Path
from types import ModuleType

from tunecli.errors import TemplateFileError

#: Prefix of the module names template files are imported under.
MODULE_PREFIX = "_tunecli_template_"


def template_module_name(path: str | os.PathLike) -> str:
    """Return the module name the template file at ``path`` is imported under.

    Parameters
    ----------
    path : str or path
        The file, relative to the current directory or absolute.

    Returns
    -------
    str
        ``_tunecli_template_`` followed by 12 hex digits of the SHA-1 of the resolved path.
    """
    resolved = str(Path(path).resolve())
    return MODULE_PREFIX + hashlib.sha1(resolved.encode()).hexdigest()[:12]


def is_template_file_module(name: str | None) -> bool:
    """True when ``name`` is a module name given by ``load_template_file``.

    Parameters
    ----------
    name : str or None

    Returns
    -------
    bool
    """
    return bool(name) and name.startswith(MODULE_PREFIX)


def load_template_file(path: str | os.PathLike) -> ModuleType:
    """Import the template file at ``path`` (once per process) and return its module.

    Parameters
    ----------
    path : str or path
        The file as the user wrote it; error messages name it so.

    Returns
    -------
    module
        Its ``@template`` functions are registered in ``TASK_TABLE``.

    Raises
    ------
    TemplateFileError
        When the file does not exist or executing it raises (the module is then not kept, so a
        fixed file can be loaded again).
    """
    shown = os.fspath(path)
    resolved = Path(path).resolve()
    name = template_module_name(resolved)
    module = sys.modules.get(name)
    if module is not None:
        return module
    if not resolved.is_file():
        raise TemplateFileError(f"no such template file {shown!r}")
    spec = importlib.util.spec_from_file_location(name, resolved)
    if spec is None or spec.loader is None:
        raise TemplateFileError(f"cannot import {shown!r}: not a Python source file")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
    except BaseException as err:  # a user's file: any failure is reported naming the file
        del sys.modules[name]
        if isinstance(err, (KeyboardInterrupt, GeneratorExit)):
            raise
        raise TemplateFileError(f"importing {shown} failed: {type(err).__name__}: {err}") from err
    return module
