"""relay.build through the kernel cache: a second build of a network compiles nothing and runs the
same; a change of tunecli's or llvmlite's version, of the target or of a config misses; a corrupted
entry is compiled again with a warning; concurrent builds share the cache; TUNECLI_NO_CACHE turns
it off; groups lowered in parallel processes are the ones lowered here."""

from __future__ import annotations

import dataclasses
import json
import logging
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

from tunecli import relay
from tunecli.engine import graph as g
from tunecli.engine.codegen import kernel_cache
from tunecli.engine.codegen.kernel_cache import KernelCache
from tunecli.engine.graph import group_compiler
from tunecli.engine.graph.build_module import BuiltGraph, build, optimize
from tunecli.engine.graph.extract import extract_from_program
from tunecli.engine.graph.graph_codegen import GraphProgram, distinct_groups, graph_program
from tunecli.engine.graph.group_compiler import GroupCompiler
from tunecli.engine.graph.passes import PassContext
from tunecli.engine.log.history_best import ApplyHistoryBest
from tunecli.engine.measure import MeasureInput, MeasureResult
from tunecli.engine.target import Target
from tunecli.engine.task.task import Task
from tunecli.errors import GraphError

RNG = np.random.default_rng(0)
HOST = Target("llvm")


def _conv_net() -> tuple[g.IRModule, dict]:
    x = relay.var("data", shape=(1, 8, 8, 8))
    y = relay.nn.relu(relay.nn.conv2d(x, relay.var("w1", shape=(16, 8, 3, 3)), padding=(1, 1)))
    y = relay.nn.relu(relay.nn.conv2d(y, relay.var("w2", shape=(16, 16, 1, 1))))
    params = {"w1": RNG.uniform(-1, 1, (16, 8, 3, 3)).astype("float32"),
              "w2": RNG.uniform(-1, 1, (16, 16, 1, 1)).astype("float32")}
    return g.IRModule.from_expr(y), params


def _dense_net() -> tuple[g.IRModule, dict]:
    x = relay.var("data", shape=(1, 64))
    y = relay.nn.relu(relay.nn.dense(x, relay.var("w", shape=(32, 64))))
    return g.IRModule.from_expr(y), {"w": RNG.uniform(-1, 1, (32, 64)).astype("float32")}


def _program(mod: g.IRModule, params: dict, compiler: GroupCompiler) -> GraphProgram:
    with PassContext(opt_level=3):
        return graph_program(optimize(mod, params, compiler.target)["main"], compiler)


def _run(lib: BuiltGraph, data: np.ndarray) -> np.ndarray:
    m = lib["default"](None)
    m.set_input("data", data)
    m.run()
    return m.get_output(0).numpy()


def _objects(program: GraphProgram) -> dict[str, bytes]:
    return {name: k.obj for name, k in program.kernels.items()}


@pytest.fixture
def cache(tmp_path: Path) -> KernelCache:
    return KernelCache(tmp_path / "kernels")


def test_a_second_build_compiles_nothing_and_gives_the_same_kernels(
    cache: KernelCache, monkeypatch: pytest.MonkeyPatch
) -> None:
    mod, params = _conv_net()
    first = GroupCompiler(HOST, cache, jobs=1)
    program = _program(mod, params, first)
    assert (first.hits, first.misses) == (0, len(program.kernels))
    assert len(cache.entries()) == len(program.kernels)

    def no_lowering(*args: object, **kwargs: object) -> None:
        raise AssertionError("a cached group was lowered")

    monkeypatch.setattr(group_compiler, "lower_group", no_lowering)
    second = GroupCompiler(HOST, cache, jobs=1)
    again = _program(mod, params, second)
    assert (second.hits, second.misses) == (len(program.kernels), 0)
    assert _objects(again) == _objects(program)
    assert again.graph_json == program.graph_json
    assert [lk.anchor for lk in again.lowered] == [lk.anchor for lk in program.lowered]
    assert {n: np.asarray(v).tobytes() for n, v in again.params.items()} == {
        n: np.asarray(v).tobytes() for n, v in program.params.items()}


def test_a_new_tunecli_or_llvmlite_version_misses(cache: KernelCache,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    mod, params = _dense_net()
    _program(mod, params, GroupCompiler(HOST, cache, jobs=1))
    real = kernel_cache.code_versions()
    for change in ({"tunecli": "99.0"}, {"llvmlite": "0.99.0"}, {"sources": "edited"}):
        changed = dataclasses.replace(real, **change)
        monkeypatch.setattr(kernel_cache, "code_versions", lambda changed=changed: changed)
        compiler = GroupCompiler(HOST, cache, jobs=1)
        _program(mod, params, compiler)
        assert compiler.hits == 0 and compiler.misses > 0, change
    monkeypatch.setattr(kernel_cache, "code_versions", lambda: real)
    compiler = GroupCompiler(HOST, cache, jobs=1)
    _program(mod, params, compiler)
    assert compiler.misses == 0


def test_another_target_misses(cache: KernelCache) -> None:
    mod, params = _dense_net()
    _program(mod, params, GroupCompiler(HOST, cache, jobs=1))
    other = GroupCompiler(Target("llvm -mcpu=x86-64 -mattr=+sse2"), cache, jobs=1)
    _program(mod, params, other)
    assert other.hits == 0 and other.misses > 0
    same = GroupCompiler(Target("llvm"), cache, jobs=1)
    _program(mod, params, same)
    assert same.misses == 0


def _dense_task(mod: g.IRModule, params: dict) -> Task:
    """The dense layer's own task (the one an untuned build runs; ``dense_pack.x86`` follows it)."""
    task, _packed = extract_from_program(mod, params, "llvm")
    return task


def _record(mod: g.IRModule, params: dict, index: int) -> ApplyHistoryBest:
    task = _dense_task(mod, params)
    config = task.config_space.get(index)
    return ApplyHistoryBest([(MeasureInput(task.target, task, config), MeasureResult((1e-3,), 0, 0.1, 0.0))],
                            pretuned=False)


def test_another_config_misses_and_each_config_hits_its_own_kernel(cache: KernelCache) -> None:
    mod, params = _dense_net()
    task = _dense_task(mod, params)
    a, b = 0, len(task.config_space) - 1
    objects = {}
    for index in (a, b):
        compiler = GroupCompiler(HOST, cache, jobs=1)
        with _record(mod, params, index):
            program = _program(mod, params, compiler)
        assert compiler.hits == 0 and compiler.misses > 0
        assert all(lk.anchor.tuned for lk in program.lowered if lk.anchor is not None)
        objects[index] = _objects(program)
    assert objects[a] != objects[b]
    compiler = GroupCompiler(HOST, cache, jobs=1)
    with _record(mod, params, a):
        program = _program(mod, params, compiler)
    assert compiler.misses == 0 and _objects(program) == objects[a]


def test_a_fallback_config_is_not_changed_by_lowering_so_the_next_build_hits(cache: KernelCache) -> None:
    mod, params = _dense_net()
    with ApplyHistoryBest([], pretuned=False):
        first = GroupCompiler(HOST, cache, jobs=1)
        _program(mod, params, first)
        second = GroupCompiler(HOST, cache, jobs=1)
        program = _program(mod, params, second)
    assert first.misses > 0 and second.misses == 0
    assert not any(lk.anchor.tuned for lk in program.lowered if lk.anchor is not None)


def test_a_corrupted_entry_is_compiled_again_with_a_warning(cache: KernelCache,
                                                             caplog: pytest.LogCaptureFixture) -> None:
    mod, params = _conv_net()
    program = _program(mod, params, GroupCompiler(HOST, cache, jobs=1))
    path, _, _ = max(cache.entries(), key=lambda e: e[1])
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 0x55
    path.write_bytes(bytes(data))
    compiler = GroupCompiler(HOST, cache, jobs=1)
    with caplog.at_level(logging.WARNING, logger="tunecli.kernel_cache"):
        again = _program(mod, params, compiler)
    assert "corrupted" in caplog.text
    assert compiler.misses == 1 and compiler.hits == len(program.kernels) - 1
    assert _objects(again) == _objects(program)
    assert cache.get(path.name.removesuffix(".kernel")) is not None  # written again


def test_groups_lowered_in_parallel_processes_equal_those_lowered_here(tmp_path: Path) -> None:
    mod, params = _conv_net()
    serial = _program(mod, params, GroupCompiler(HOST, None, jobs=1))
    parallel = _program(mod, params, GroupCompiler(HOST, None, jobs=2))
    assert _objects(parallel) == _objects(serial)
    assert parallel.graph_json == serial.graph_json
    assert [len(lk.inputs) for lk in parallel.lowered] == [len(lk.inputs) for lk in serial.lowered]


def test_relay_build_uses_the_environment_s_cache_and_no_cache_turns_it_off(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    mod, params = _conv_net()
    data = RNG.uniform(-1, 1, (1, 8, 8, 8)).astype("float32")
    monkeypatch.setenv(kernel_cache.DIR_ENV, str(tmp_path / "env-cache"))
    monkeypatch.setenv(kernel_cache.OFF_ENV, "1")
    with PassContext(opt_level=3):
        uncached = build(mod, "llvm", params=params)
    assert not (tmp_path / "env-cache").exists()
    monkeypatch.delenv(kernel_cache.OFF_ENV)
    with PassContext(opt_level=3):
        stored = build(mod, "llvm", params=params)
        cached = build(mod, "llvm", params=params)
    assert len(KernelCache(tmp_path / "env-cache").entries()) == len(stored.kernels)
    expected = _run(uncached, data)
    np.testing.assert_array_equal(_run(stored, data), expected)
    np.testing.assert_array_equal(_run(cached, data), expected)
    np.testing.assert_allclose(expected, g.evaluate(mod, [data], params), rtol=1e-4, atol=1e-5)


_BUILD_SCRIPT = textwrap.dedent("""
    import json, sys
    import numpy as np
    from tunecli import relay
    from tunecli.engine import graph as g
    from tunecli.engine.graph.build_module import build
    from tunecli.engine.graph.passes import PassContext
    rng = np.random.default_rng(1)
    x = relay.var("data", shape=(1, 8, 8, 8))
    y = relay.nn.relu(relay.nn.conv2d(x, relay.var("w1", shape=(16, 8, 3, 3)), padding=(1, 1)))
    y = relay.nn.dense(relay.nn.batch_flatten(y), relay.var("w2", shape=(10, 1024)))
    params = {"w1": rng.uniform(-1, 1, (16, 8, 3, 3)).astype("float32"),
              "w2": rng.uniform(-1, 1, (10, 1024)).astype("float32")}
    with PassContext(opt_level=3):
        lib = build(g.IRModule.from_expr(y), "llvm", params=params)
    m = lib["default"](None)
    m.set_input("data", rng.uniform(-1, 1, (1, 8, 8, 8)).astype("float32"))
    m.run()
    np.save(sys.argv[1], m.get_output(0).numpy())
    print(json.dumps(sorted(lib.kernels)))
""")


def test_two_concurrent_builds_of_one_network_share_the_cache(tmp_path: Path) -> None:
    env = {**os.environ, kernel_cache.DIR_ENV: str(tmp_path / "shared")}
    env.pop(kernel_cache.OFF_ENV, None)
    procs = [subprocess.Popen([sys.executable, "-c", _BUILD_SCRIPT, str(tmp_path / f"out{k}.npy")],
                              env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for k in range(2)]
    outs = [p.communicate(timeout=300) for p in procs]
    for p, (_, err) in zip(procs, outs, strict=True):
        assert p.returncode == 0, err
    assert json.loads(outs[0][0]) == json.loads(outs[1][0])
    np.testing.assert_array_equal(np.load(tmp_path / "out0.npy"), np.load(tmp_path / "out1.npy"))
    cache = KernelCache(tmp_path / "shared")
    assert len(cache.entries()) == len(json.loads(outs[0][0]))
    assert all(cache.get(p.name.removesuffix(".kernel")) is not None for p, _, _ in cache.entries())
    assert not list((tmp_path / "shared").rglob("*.tmp"))


_FORK_AFTER_KERNELS = textwrap.dedent("""
    import numpy as np
    from tunecli import relay
    from tunecli.engine import graph as g
    from tunecli.engine.graph.build_module import build
    from tunecli.engine.graph.passes import PassContext
    rng = np.random.default_rng(2)
    for width in (16, 24):  # the second build forks its build processes after the first one ran
        x = relay.var("data", shape=(1, 8, 16, 16))
        w = relay.var("w", shape=(width, 8, 3, 3))
        y = relay.nn.relu(relay.nn.conv2d(x, w, padding=(1, 1)))
        params = {"w": rng.uniform(-1, 1, (width, 8, 3, 3)).astype("float32")}
        with PassContext(opt_level=3):
            lib = build(g.IRModule.from_expr(y), "llvm", params=params)
        m = lib["default"](None)
        m.set_input("data", rng.uniform(-1, 1, (1, 8, 16, 16)).astype("float32"))
        m.run()
        assert m.get_output(0).numpy().shape == (1, width, 16, 16)
    print("done")
""")


def test_build_processes_forked_after_parallel_kernels_ran_here_finish(tmp_path: Path) -> None:
    env = {**os.environ, kernel_cache.OFF_ENV: "1", group_compiler.JOBS_ENV: "2",
           "TUNECLI_NUM_THREADS": "2"}
    done = subprocess.run([sys.executable, "-c", _FORK_AFTER_KERNELS], env=env, capture_output=True,
                          text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip().endswith("done")


def test_a_group_that_raises_in_a_build_process_raises_its_own_error_here(
    monkeypatch: pytest.MonkeyPatch
) -> None:
    mod, params = _conv_net()
    real = group_compiler.lower_group

    def failing(fn: g.Function, target: Target, name: str, *args: object) -> object:
        if "conv2d" in name and "relu" in name:
            raise GraphError(f"{name}: cannot be compiled (a test's failure)")
        return real(fn, target, name, *args)

    monkeypatch.setattr(group_compiler, "lower_group", failing)
    with pytest.raises(GraphError, match="cannot be compiled \\(a test's failure\\)"):
        _program(mod, params, GroupCompiler(HOST, None, jobs=2))


def test_groups_a_dead_build_process_left_are_compiled_here(monkeypatch: pytest.MonkeyPatch,
                                                             caplog: pytest.LogCaptureFixture) -> None:
    mod, params = _conv_net()
    serial = _program(mod, params, GroupCompiler(HOST, None, jobs=1))
    parent = os.getpid()
    real = group_compiler.lower_group

    def dying(*args: object) -> object:
        if os.getpid() != parent:
            os._exit(3)  # as an LLVM abort ends a process
        return real(*args)

    monkeypatch.setattr(group_compiler, "lower_group", dying)
    with caplog.at_level(logging.WARNING, logger="tunecli.kernel_cache"):
        program = _program(mod, params, GroupCompiler(HOST, None, jobs=2))
    assert "a build process died" in caplog.text
    assert _objects(program) == _objects(serial)


def test_a_gpu_kernel_s_key_names_the_libdevice_it_links(monkeypatch: pytest.MonkeyPatch,
                                                         tmp_path: Path) -> None:
    mod, params = _dense_net()
    cuda = Target("cuda -arch=sm_80")
    with PassContext(opt_level=3):
        fused = optimize(mod, params, cuda)
    _, (job, *_) = distinct_groups(fused["main"])
    anchor = group_compiler.group_anchor(job.fn, cuda)
    config = group_compiler.anchor_config(*anchor, cuda) if anchor else None
    keys = set()
    for version in ("10.bc-a", "10.bc-b"):
        fake = tmp_path / version
        fake.write_bytes(version.encode())
        monkeypatch.setattr(group_compiler, "libdevice_path", lambda fake=fake: fake)
        keys.add(group_compiler.group_key(job, cuda, anchor, config))
    assert len(keys) == 2
