"""TVM 0.6's ``autotvm.task.register(name, func=None, override=False)``: registers a function, as it
is, as the template of task ``name`` (a decorator, or a direct call that returns the function);
``create`` and ``instantiate`` run it under the task's config, which it reads with ``get_config``.
A second function under a taken name is an error unless ``override=True``, which replaces it."""

from __future__ import annotations

import numpy as np
import pytest

import tunecli as tvm
from tunecli import autotvm
from tunecli.errors import TuneError

NAMES = ("v06_register/scale", "v06_register/direct", "v06_register/taken")


@pytest.fixture(autouse=True)
def _forget_the_test_templates():
    yield
    for name in NAMES:
        dict.pop(autotvm.task.TASK_TABLE, name, None)


def scale_by_knob(n):
    a = tvm.te.placeholder((n,), name="a")
    cfg = autotvm.get_config()
    cfg.define_knob("factor", [2, 3, 5])
    b = tvm.te.compute((n,), lambda i: a[i] * float(cfg["factor"].val), name="b")
    return tvm.te.create_schedule(b.op), [a, b]


def add_one(n):
    a = tvm.te.placeholder((n,), name="a")
    b = tvm.te.compute((n,), lambda i: a[i] + 1.0, name="b")
    s = tvm.te.create_schedule(b.op)
    autotvm.get_config().define_knob("unroll", [0, 1])
    return s, [a, b]


def test_the_decorator_registers_the_function_itself_and_its_tasks_run_under_their_config():
    registered = autotvm.task.register("v06_register/scale")(scale_by_knob)
    assert registered is scale_by_knob

    task = autotvm.task.create("v06_register/scale", args=(8,), target="llvm")
    assert task.workload == ("v06_register/scale", 8)
    assert len(task.config_space) == 3
    config = task.config_space.get(2)
    s, args = task.instantiate(config)
    func = tvm.build(s, args, "llvm")
    a = np.arange(8, dtype="float32")
    b = tvm.nd.empty((8,))
    func(tvm.nd.array(a), b)
    np.testing.assert_allclose(b.numpy(), a * config["factor"].val)


def test_a_direct_call_registers_and_returns_the_function():
    assert autotvm.task.register("v06_register/direct", add_one) is add_one
    assert autotvm.task.TASK_TABLE["v06_register/direct"].func is add_one
    assert len(autotvm.task.create("v06_register/direct", args=(4,), target="llvm").config_space) == 2


def test_a_taken_name_is_an_error_without_override_and_replaced_with_it():
    autotvm.task.register("v06_register/taken", scale_by_knob)
    with pytest.raises(TuneError, match="'v06_register/taken' is already registered"):
        autotvm.task.register("v06_register/taken", add_one)
    assert autotvm.task.TASK_TABLE["v06_register/taken"].func is scale_by_knob

    autotvm.task.register("v06_register/taken", add_one, override=True)
    assert autotvm.task.TASK_TABLE["v06_register/taken"].func is add_one
    assert len(autotvm.task.create("v06_register/taken", args=(4,), target="llvm").config_space) == 2


def test_registering_the_same_function_again_is_not_a_conflict():
    # a script run twice in one process (its module re-imported) registers the same function again
    autotvm.task.register("v06_register/taken", scale_by_knob)
    autotvm.task.register("v06_register/taken", scale_by_knob)
    assert autotvm.task.TASK_TABLE["v06_register/taken"].func is scale_by_knob


@pytest.mark.parametrize("name", ["", None, 3])
def test_a_name_that_is_not_a_string_is_refused(name):
    with pytest.raises(TuneError, match="task name must be a non-empty string"):
        autotvm.task.register(name, add_one)


def test_a_template_that_is_not_callable_is_refused():
    with pytest.raises(TuneError, match=r"register\('v06_register/direct'\): the template must be a"):
        autotvm.task.register("v06_register/direct", "add_one")
