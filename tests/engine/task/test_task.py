"""Tasks: templates register by name, ``create`` traces the space, tasks re-create themselves by name."""

from __future__ import annotations

import functools
import pickle

import numpy as np
import pytest

from tests.engine import autotvm_templates
from tunecli.engine import te
from tunecli.engine.build import lower
from tunecli.engine.target import Target
from tunecli.engine.task.dispatcher import ApplyConfig
from tunecli.engine.task.space import ConfigSpace
from tunecli.engine.task.task import (
    TASK_TABLE,
    Task,
    args_to_workload,
    create,
    deserialize_args,
    get_config,
    serialize_args,
    template,
)
from tunecli.errors import InstantiationError, TuneError


def test_create_collects_space_and_counts_flops() -> None:
    task = create("autotvm_test/matmul", (128, 128, 128, "float32"), "llvm")
    assert task.name == "autotvm_test/matmul"
    assert task.args == (128, 128, 128, "float32")
    assert task.kwargs == {}
    assert task.flop == 2 * 128**3 == 4194304
    assert isinstance(task.target, Target) and str(task.target) == "llvm"
    assert task.target_host is None
    assert len(task.config_space) == 64
    assert task.workload == ("autotvm_test/matmul", 128, 128, 128, "float32")
    assert repr(task) == ("Task(func_name=autotvm_test/matmul, args=(128, 128, 128, 'float32'), kwargs={}, "
                          "workload=('autotvm_test/matmul', 128, 128, 128, 'float32'))")
    assert task.template_module == autotvm_templates.__name__
    assert task.template_file == autotvm_templates.__file__


def test_add_flop_overrides_counting() -> None:
    task = create("autotvm_test/add_flop", (16,), "llvm")
    assert task.flop == 12345


def test_instantiate_applies_the_config() -> None:
    task = create("autotvm_test/matmul", (128, 128, 128, "float32"), "llvm")
    config = task.config_space.get(10)
    sch, args = task.instantiate(config)
    assert [t.name for t in args] == ["A", "B", "C"]
    assert config["tile_y"].size == [-1, 4] and config["tile_x"].size == [-1, 2]
    loops = str(lower(sch, args))
    for loop in ("i.outer, 0, 32", "j.outer, 0, 64", "k, 0, 128", "i.inner, 0, 4", "j.inner, 0, 2"):
        assert loop in loops


def test_tensor_args_are_serialized() -> None:
    A = te.placeholder((4, 8), name="A")
    B = te.placeholder((4, 8), name="B")
    task = create("autotvm_test/tensor_args", (A, B), "llvm")
    assert task.args == (("TENSOR", (4, 8), "float32"), ("TENSOR", (4, 8), "float32"))
    assert task.flop == 32
    placeholders = deserialize_args(task.args)
    assert [p.shape for p in placeholders] == [(4, 8), (4, 8)]
    sch, args = task.instantiate(task.config_space.get(1))
    assert args[0].shape == (4, 8)


def test_serialize_args() -> None:
    assert serialize_args([1, [2, 3], (4, [5]), "x", None, 1.5]) == (1, (2, 3), (4, (5,)), "x", None, 1.5)
    assert args_to_workload((1, [2]), "name") == ("name", 1, (2,))
    with pytest.raises(TuneError, match="cannot store an argument of type object"):
        serialize_args([object()])


def test_missing_task_fails_only_when_used() -> None:
    task = Task("no/such/template", (1, 2))
    assert task.template_module is None
    with pytest.raises(InstantiationError, match="Attempting to invoke a missing task no/such/template"):
        task.instantiate(ConfigSpace())
    with pytest.raises(InstantiationError):
        create("no/such/template", (1,), "llvm")


def test_reregistering_a_name_from_elsewhere_is_an_error() -> None:
    def other(n: int) -> None:
        return None

    with pytest.raises(TuneError, match="already registered"):
        template("autotvm_test/matmul", other)
    assert TASK_TABLE["autotvm_test/matmul"].func is autotvm_templates.matmul.__wrapped__


def test_template_queries_the_dispatch_context_with_its_workload() -> None:
    space = ConfigSpace()
    ctx = ApplyConfig(space)
    with ctx, Target("llvm"):
        autotvm_templates.matmul(16, 16, 16, "float32")
    assert ctx.workload == ("autotvm_test/matmul", 16, 16, 16, "float32")
    assert list(space.space_map) == ["tile_y", "tile_x"]
    with ApplyConfig(space):
        assert get_config() is space


def test_task_pickles_by_name() -> None:
    task = create("autotvm_test/matmul", (16, 16, 16, "float32"), "llvm -mcpu=generic")
    clone = pickle.loads(pickle.dumps(task))
    assert clone.workload == task.workload
    assert str(clone.target) == "llvm -mcpu=generic" and isinstance(clone.target, Target)
    assert clone.func.func is TASK_TABLE["autotvm_test/matmul"].func
    assert len(clone.config_space) == len(task.config_space)
    sch, _ = clone.instantiate(clone.config_space.get(3))
    assert sch is not None


TEMPLATE_FILE = '''
from tunecli.engine import te
from tunecli.engine.task.task import get_config, template
from tunecli.engine.schedule import create_schedule


@template("autotvm_test/from_file")
def plus_one(n):
    A = te.placeholder((n,), name="A")
    B = te.compute((n,), lambda i: A[i] + 1.0, name="B")
    get_config().define_knob("k", [1, 2])
    return create_schedule(B.op), [A, B]
'''


def test_unpickling_loads_the_template_file_when_its_module_is_not_importable(tmp_path) -> None:
    import importlib.util
    import sys

    path = tmp_path / "tpl_outside_sys_path.py"
    path.write_text(TEMPLATE_FILE)
    spec = importlib.util.spec_from_file_location("tpl_outside_sys_path", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    task = create("autotvm_test/from_file", (8,), "llvm")
    assert task.template_module == "tpl_outside_sys_path" and task.template_file == str(path)
    blob = pickle.dumps(task)
    del TASK_TABLE["autotvm_test/from_file"]  # as in a fresh worker process
    clone = pickle.loads(blob)
    assert "autotvm_test/from_file" in TASK_TABLE
    assert clone.flop == 8
    clone.instantiate(clone.config_space.get(1))
    assert sys.modules.get("tpl_outside_sys_path") is None


def test_entities_apply_to_a_real_schedule() -> None:
    from tunecli.engine.schedule import create_schedule

    A = te.placeholder((64, 64), name="A")
    B = te.compute((64, 64), lambda i, j: A[i, j] * 2.0, name="B")
    cfg = ConfigSpace()
    s = create_schedule(B.op)
    i, j = s[B].op.axis
    cfg.define_split("tile_j", j, num_outputs=2)
    cfg.define_reorder("order", [i, j], "all")
    cfg.define_annotate("ann", [i, j], "try_unroll_vec")
    entity = cfg.get(cfg.knob2point([3, 1, 5]))  # tile_j [-1, 8], order [1, 0], ann [unroll, vec]
    jo, ji = entity["tile_j"].apply(s, B, j)
    assert entity["order"].apply(s, B, [i, jo]) == [jo, i]
    entity["ann"].apply(s, B, [i, ji], axis_lens=[64, 8], max_unroll=16, vec_size=[4, 8], cfg=entity)
    assert entity.errors == ["Too large factor for unrolling"]
    text = str(lower(s, [A, B]))
    assert "for (j.outer, 0, 8)" in text
    assert "unrolled for (i, 0, 64)" in text
    assert "vectorized for (j.inner, 0, 8)" in text


USER_TEMPLATE = '''
from tunecli import autotvm, te


@autotvm.template("tutorial/matmul")  # a user's own template under the name of a built-in one
def matmul(N, L, M, dtype):
    lhs = te.placeholder((N, L), name="lhs", dtype=dtype)
    rhs = te.placeholder((L, M), name="rhs", dtype=dtype)
    red = te.reduce_axis((0, L), name="red")
    out = te.compute((N, M), lambda r, c: te.sum(lhs[r, red] * rhs[red, c], axis=red), name="out")
    sched = te.create_schedule(out.op)
    cfg = autotvm.get_config()
    pieces = []
    for knob, axis in zip(("tile_y", "tile_x"), sched[out].op.axis, strict=True):
        cfg.define_knob(knob, [1, 2, 4, 8, 16])  # 25 configs in all
        pieces.append(sched[out].split(axis, cfg[knob].val))
    (row_out, row_in), (col_out, col_in) = pieces
    sched[out].reorder(row_out, col_out, red, row_in, col_in)
    return sched, [lhs, rhs, out]
'''


def import_file(path, name: str):
    """Import a file under ``name`` without making it importable by name (like a user's script)."""
    import importlib.util

    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture()
def builtin_matmul(monkeypatch: pytest.MonkeyPatch):
    """The built-in ``tutorial/matmul`` template; TASK_TABLE's entry is restored after the test."""
    from tunecli.engine.ops import registry

    monkeypatch.setitem(TASK_TABLE, "tutorial/matmul", TASK_TABLE["tutorial/matmul"])
    assert registry.is_builtin("tutorial/matmul")
    return TASK_TABLE["tutorial/matmul"]


def test_a_user_template_replaces_a_builtin_of_the_same_name(builtin_matmul, tmp_path, caplog) -> None:
    import logging

    from tunecli.engine.ops import registry

    caplog.set_level(logging.DEBUG, logger="autotvm")
    path = tmp_path / "tune_simple_template.py"
    path.write_text(USER_TEMPLATE)
    port = import_file(path, "tune_simple_template_port")  # no error: "tutorial/matmul" was built in
    assert TASK_TABLE["tutorial/matmul"].func is port.matmul.__wrapped__
    assert "replaces the built-in one" in caplog.text
    assert not registry.is_builtin("tutorial/matmul")

    task = create("tutorial/matmul", (16, 16, 16, "float32"), "llvm")
    assert task.template_module == "tune_simple_template_port" and len(task.config_space) == 25
    assert task.reference is None  # not the built-in's reference

    # a worker where the built-in templates are registered first still runs the user's template
    TASK_TABLE["tutorial/matmul"] = builtin_matmul
    clone = pickle.loads(pickle.dumps(task))
    assert clone.func.source_file == str(path) and not clone.func.builtin
    assert list(clone.config_space.space_map) == ["tile_y", "tile_x"]
    clone.instantiate(clone.config_space.get(7))


def test_two_user_templates_of_a_builtin_name_still_conflict(builtin_matmul, tmp_path) -> None:
    for name in ("first_port", "second_port"):
        (tmp_path / f"{name}.py").write_text(USER_TEMPLATE)
    import_file(tmp_path / "first_port.py", "first_port")
    with pytest.raises(TuneError, match="'tutorial/matmul' is already registered by first_port.matmul"):
        import_file(tmp_path / "second_port.py", "second_port")


def test_a_builtin_does_not_replace_a_user_template(builtin_matmul, tmp_path) -> None:
    path = tmp_path / "port.py"
    path.write_text(USER_TEMPLATE)
    del TASK_TABLE["tutorial/matmul"]  # the user's module is imported before the built-ins
    port = import_file(path, "early_port")
    template("tutorial/matmul", builtin_matmul.func)  # what importing tunecli.engine.ops.tutorial does
    assert TASK_TABLE["tutorial/matmul"].func is port.matmul.__wrapped__



def _matmul_reference(n: int, l: int, m: int, dtype: str) -> functools.partial:
    """``reference(*args)``: the numpy function of a task's expected output (picklable)."""
    return functools.partial(np.matmul)


def test_a_template_registered_with_a_reference_gives_its_tasks_one() -> None:
    name = "task_test/matmul_with_reference"
    template(name, autotvm_templates.matmul.__wrapped__, reference=_matmul_reference)
    try:
        task = create(name, (4, 3, 2, "float32"), "llvm")
    finally:
        del TASK_TABLE[name]
    clone = pickle.loads(pickle.dumps(task))
    a, b = np.ones((4, 3), "float32"), np.full((3, 2), 2, "float32")
    np.testing.assert_array_equal(clone.reference(a, b), np.full((4, 2), 6, "float32"))
    assert create("autotvm_test/matmul", (4, 3, 2, "float32"), "llvm").reference is None
    assert Task("task_test/no_such_template", ()).reference is None


def test_the_task_table_loads_the_builtin_templates_at_its_first_lookup() -> None:
    """No module has to be imported for its side effect: in a fresh process, the first lookup of
    a built-in name registers the built-in templates."""
    import subprocess
    import sys

    code = (
        "import sys\n"
        "from tunecli.engine.task.task import TASK_TABLE, create\n"
        "assert 'tunecli.engine.ops.registry' not in sys.modules\n"
        "task = create('dense.x86', (4, 8, 16, 'float32'), 'llvm')\n"
        "assert task.template_module == 'tunecli.engine.ops.registry' and len(task.config_space) > 1\n"
        "assert task.reference is not None and 'conv2d_nchw.x86' in TASK_TABLE\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
