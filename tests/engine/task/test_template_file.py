"""User template files: one module name per file, executed once per process, clear import errors."""

from __future__ import annotations

import pickle
import re
import sys
from pathlib import Path

import pytest

from tunecli.engine.task.task import TASK_TABLE, create
from tunecli.engine.task.template_file import load_template_file, template_module_name
from tunecli.errors import TemplateFileError

COUNTING_TEMPLATE = '''\
from pathlib import Path

from tunecli.engine import te
from tunecli.engine.schedule import create_schedule
from tunecli.engine.task.task import get_config, template

with open(Path(__file__).with_suffix(".count"), "a") as _count:
    _count.write("executed\\n")


@template("{name}")
def add_one(n):
    a = te.placeholder((n,), name="a")
    b = te.compute((n,), lambda i: a[i] + 1.0, name="b")
    get_config().define_knob("k", [1, 2])
    return create_schedule(b.op), [a, b]
'''


@pytest.fixture()
def counting_file(tmp_path: Path, request: pytest.FixtureRequest):
    """A template file that appends a line to ``<file>.count`` each time it is executed."""
    name = f"template_file_test/{request.node.name}"
    path = tmp_path / "counting.py"
    path.write_text(COUNTING_TEMPLATE.format(name=name))
    yield path, name
    TASK_TABLE.pop(name, None)
    sys.modules.pop(template_module_name(path), None)


def executions(path: Path) -> int:
    count = path.with_suffix(".count")
    return len(count.read_text().splitlines()) if count.exists() else 0


def test_a_file_is_executed_once_per_process_under_a_name_made_from_its_path(counting_file,
                                                                             monkeypatch) -> None:
    path, name = counting_file
    first = load_template_file(path)
    monkeypatch.chdir(path.parent)
    again = load_template_file("counting.py")  # the same file named relative to the directory
    assert first is again and executions(path) == 1
    assert first.__name__ == template_module_name(path) == template_module_name("counting.py")
    assert TASK_TABLE[name].module == first.__name__


def test_a_task_recreated_elsewhere_loads_its_template_file_under_the_same_name(counting_file) -> None:
    path, name = counting_file
    module = load_template_file(path)
    task = create(name, (8,), "llvm")
    blob = pickle.dumps(task)
    # as in a fresh worker process: neither the module nor the template is known
    del sys.modules[module.__name__]
    del TASK_TABLE[name]
    clone = pickle.loads(blob)
    assert executions(path) == 2
    assert sys.modules[module.__name__] is not module and clone.func.module == module.__name__
    sch, args = clone.instantiate(task.config_space.get(1))
    assert [tuple(a.shape) for a in args] == [(8,), (8,)]
    pickle.loads(blob)  # a second task of the same file: nothing executed again
    assert executions(path) == 2


@pytest.mark.parametrize(("source", "message"), [
    ("import no_such_module_here\n", "ModuleNotFoundError: No module named 'no_such_module_here'"),
    ("def f(:\n", "SyntaxError: "),
    ("raise RuntimeError('template setup failed')\n", "RuntimeError: template setup failed"),
])
def test_a_file_that_fails_to_import_gives_one_error_naming_it(tmp_path: Path, monkeypatch, source: str,
                                                                 message: str) -> None:
    monkeypatch.chdir(tmp_path)
    Path("broken.py").write_text(source)
    with pytest.raises(TemplateFileError) as info:
        load_template_file("broken.py")
    assert str(info.value).startswith(f"importing broken.py failed: {message}")
    assert template_module_name("broken.py") not in sys.modules
    Path("broken.py").write_text("VALUE = 1\n")  # fixed: loads now
    assert load_template_file("broken.py").VALUE == 1
    sys.modules.pop(template_module_name("broken.py"))


def test_a_missing_file_is_named(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    with pytest.raises(TemplateFileError, match=r"^no such template file 'gone\.py'$"):
        load_template_file("gone.py")


def test_a_worker_whose_template_file_is_gone_reports_it(counting_file) -> None:
    path, name = counting_file
    module = load_template_file(path)
    blob = pickle.dumps(create(name, (8,), "llvm"))
    del sys.modules[module.__name__]
    del TASK_TABLE[name]
    path.unlink()
    with pytest.raises(TemplateFileError, match=f"^no such template file {re.escape(repr(str(path)))}$"):
        pickle.loads(blob)
