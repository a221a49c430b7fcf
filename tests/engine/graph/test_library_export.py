"""relay.build for a processor this machine is not, and export_library: shared libraries linked by
a (cross) compiler, ``.tar`` archives a device loads itself."""

from __future__ import annotations

import shutil
import tarfile

import numpy as np
import pytest

from tests.arm_board import ARM_BOARD, tiny_network
from tunecli.engine.graph.build_module import build
from tunecli.engine.runtime import load_module
from tunecli.engine.runtime.linker import NDK_CC_ENV, cross_compiler, ndk_create_shared
from tunecli.engine.target import host_features
from tunecli.errors import GraphError, TargetError

CROSS_GCC = "aarch64-linux-gnu-gcc"
needs_cross_gcc = pytest.mark.skipif(shutil.which(CROSS_GCC) is None,
                                     reason=f"{CROSS_GCC} is not installed (Debian: gcc-aarch64-linux-gnu)")


def _elf_machine(path) -> int:
    with open(path, "rb") as f:
        head = f.read(20)
    assert head[:4] == b"\x7fELF"
    return int.from_bytes(head[18:20], "little")


def _run(lib, x: np.ndarray) -> np.ndarray:
    module = lib["default"](None)
    module.set_input("data", x)
    module.run()
    return module.get_output(0).numpy()


@pytest.fixture(scope="module")
def arm_lib():
    mod, params = tiny_network()
    return build(mod, target=ARM_BOARD, params=params)


def test_an_arm_build_folds_its_constants_here_and_refuses_to_run_here(arm_lib):
    with pytest.raises(TargetError, match="compiled for .*aarch64.* cannot run on this machine"):
        arm_lib["default"](None)


@needs_cross_gcc
def test_a_cross_compiler_links_an_aarch64_library_that_this_machine_refuses_to_open(arm_lib, tmp_path):
    path = tmp_path / "net.so"
    arm_lib.export_library(path, cross_compiler(CROSS_GCC))
    assert _elf_machine(path) == 183  # EM_AARCH64
    with pytest.raises(TargetError, match="AArch64"):
        load_module(path)


@needs_cross_gcc
def test_the_default_compiler_of_a_cross_target_is_its_triples_gcc(arm_lib, tmp_path):
    arm_lib.export_library(tmp_path / "net.so")
    assert _elf_machine(tmp_path / "net.so") == 183


def test_without_a_compiler_for_the_target_the_error_says_which_to_give(arm_lib, tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(GraphError, match="cross_compiler"):
        arm_lib.export_library(tmp_path / "net.so")


@needs_cross_gcc
def test_ndk_create_shared_links_with_the_driver_tvm_ndk_cc_names(arm_lib, tmp_path, monkeypatch):
    monkeypatch.delenv(NDK_CC_ENV, raising=False)
    with pytest.raises(GraphError, match=NDK_CC_ENV):
        arm_lib.export_library(tmp_path / "net.so", ndk_create_shared)
    monkeypatch.setenv(NDK_CC_ENV, CROSS_GCC)
    arm_lib.export_library(tmp_path / "net.so", fcompile=ndk_create_shared)
    assert _elf_machine(tmp_path / "net.so") == 183


def test_a_tar_holds_the_objects_graph_and_parameters_and_is_refused_on_the_wrong_machine(arm_lib, tmp_path):
    path = tmp_path / "net.tar"
    arm_lib.export_library(path)
    with tarfile.open(path) as tar:
        names = set(tar.getnames())
    assert {"kernels.json", "graph.bin"} <= names
    assert sum(n.endswith(".o") for n in names) == len(arm_lib.kernels)
    with pytest.raises(TargetError, match="cannot run on this machine"):
        load_module(path)


@pytest.mark.parametrize("name", ["net.so", "net.tar"])
def test_a_host_build_exported_and_loaded_computes_what_the_build_computes(tmp_path, name):
    mod, params = tiny_network()
    lib = build(mod, target="llvm", params=params)
    lib.export_library(tmp_path / name)
    x = np.random.default_rng(1).standard_normal((1, 3, 16, 16)).astype("float32")
    np.testing.assert_allclose(_run(load_module(tmp_path / name), x), _run(lib, x), rtol=1e-6)


def test_an_x86_build_needing_features_this_cpu_lacks_folds_here_and_refuses_to_run():
    lacking = [f[1:] for f in host_features().split(",") if f in ("-amx-tile", "-avx512f", "-avx2")]
    if not lacking:
        pytest.skip("this CPU has every feature the test could ask for")
    mod, params = tiny_network()
    lib = build(mod, target=f"llvm -mattr=+{lacking[0]}", params=params)
    with pytest.raises(TargetError, match="cannot run on this machine"):
        lib["default"](None)
