"""Target strings: parsing, keys, the LLVM view (triple/cpu/features) and the current target."""

from __future__ import annotations

import llvmlite.binding as llvm
import pytest

from tunecli.engine.target import Target, as_target, cuda, host_arch, host_triple
from tunecli.errors import TargetError


def test_parse_options_and_canonical_string():
    t = Target("llvm  -mcpu=skylake-avx512   -mattr=+avx512f,+fma -model=x1")
    assert t.kind == "llvm" and t.mcpu == "skylake-avx512" and t.mattr == ["+avx512f", "+fma"]
    assert t.model == "x1" and str(t) == "llvm -mcpu=skylake-avx512 -mattr=+avx512f,+fma -model=x1"
    assert Target(str(t)) == t and hash(Target(str(t))) == hash(t) and Target(t) == t
    assert Target("llvm").model == "unknown"
    assert Target("llvm -target=aarch64-linux-gnu").mtriple == "aarch64-linux-gnu"


@pytest.mark.parametrize("text,keys", [
    ("llvm", ["cpu"]),
    ("llvm -mtriple=aarch64-linux-gnu", ["arm_cpu", "cpu"]),
    ("llvm -device=arm_cpu -mtriple=aarch64-linux-gnu", ["arm_cpu", "cpu"]),
    ("llvm -device=foo", ["foo", "cpu"]),
    ("llvm -keys=a,b", ["a", "b"]),
    ("cuda", ["cuda", "gpu"]),
])
def test_keys_follow_tvm_rules(text, keys):
    assert Target(text).keys == keys


@pytest.mark.parametrize("text,gpu", [("cuda", True), ("nvptx", True), ("llvm", False),
                                      ("llvm -keys=cpu,gpu", True), ("cuda -keys=cuda", False)])
def test_a_gpu_target_is_one_whose_keys_include_gpu(text, gpu):
    assert Target(text).is_gpu is gpu


@pytest.mark.parametrize("text", ["", "   ", "-mcpu=x", "llvm mcpu", "llvm -mcpu", "llvm -x='unclosed"])
def test_malformed_strings_raise_target_error(text):
    with pytest.raises(TargetError):
        Target(text)


def test_host_target_resolves_to_this_machine():
    t = Target("llvm")
    assert t.is_host and t.llvm_triple == host_triple() == llvm.get_process_triple()
    assert t.llvm_cpu == llvm.get_host_cpu_name()
    assert t.llvm_features == llvm.get_host_cpu_features().flatten()
    pinned = Target("llvm -mcpu=x86-64 -mattr=+avx2")
    assert pinned.llvm_cpu == "x86-64" and pinned.llvm_features == "+avx2" and pinned.vector_bits == 256


def test_cross_target_is_not_host_and_uses_generic_cpu():
    t = Target("llvm -mtriple=aarch64-linux-gnu")
    assert not t.is_host and t.llvm_cpu == "generic" and t.llvm_features == "" and t.vector_bits == 128


def _host_flags() -> tuple[list[str], list[str]]:
    """This machine's CPU features as LLVM reports them: those it has and those it lacks."""
    flags = llvm.get_host_cpu_features().flatten().split(",")
    return [f[1:] for f in flags if f.startswith("+")], [f[1:] for f in flags if f.startswith("-")]


def test_a_target_of_the_hosts_own_cpu_and_features_is_the_host():
    have, _ = _host_flags()
    assert Target(f"llvm -mcpu={llvm.get_host_cpu_name()}").is_host
    assert Target("llvm -mattr=" + ",".join("+" + f for f in have)).is_host
    assert Target(f"llvm -mcpu={llvm.get_host_cpu_name()} -mattr=+{have[0]}").is_host
    assert Target("llvm -mcpu=x86-64" if host_arch() == "x86_64" else "llvm -mcpu=generic").is_host


def test_a_target_needing_a_feature_the_host_lacks_is_not_the_host():
    have, lacks = _host_flags()
    assert lacks, "LLVM lists no feature this CPU lacks"
    assert not Target(f"llvm -mattr=+{lacks[0]}").is_host
    assert not Target(f"llvm -mattr=+{have[0]},+{lacks[-1]}").is_host
    assert Target(f"llvm -mattr=+{have[0]},-{lacks[0]}").is_host  # a feature turned off is not needed


@pytest.mark.skipif(host_arch() != "x86_64", reason="x86 CPU names")
def test_an_mcpu_is_the_host_only_where_the_host_has_its_features():
    have, _ = _host_flags()
    assert Target("llvm -mcpu=skylake-avx512").is_host == ("avx512f" in have and "avx512bw" in have)
    assert Target("llvm -mcpu=x86-64-v3").is_host == ("avx2" in have and "fma" in have)
    assert Target("llvm -mcpu=x86-64-v2").is_host == ("sse4.2" in have)
    assert Target("llvm -mcpu=skylake-avx512").vector_bits == 512


def test_vector_bits_follow_the_features_an_mcpu_implies():
    assert Target("llvm -mcpu=znver3").vector_bits == 256  # AVX2: 8 float lanes
    assert Target("llvm -mcpu=haswell").vector_bits == 256
    assert Target("llvm -mcpu=sandybridge").vector_bits == 256
    assert Target("llvm -mcpu=nehalem").vector_bits == 128
    assert Target("llvm -mcpu=x86-64-v2").vector_bits == 128
    assert Target("llvm -mcpu=znver4").vector_bits == 512


def test_current_target_stack_and_as_target():
    assert Target.current() is None
    with pytest.raises(TargetError):
        Target.current(allow_none=False)
    outer, inner = Target("llvm"), Target("llvm -mcpu=x86-64")
    with outer:
        assert Target.current() is outer and as_target(None) is outer
        with inner:
            assert Target.current() is inner
        assert Target.current() is outer
    assert Target.current() is None
    assert as_target(None) == Target("llvm") and as_target("llvm -mcpu=znver4").mcpu == "znver4"


def test_tvm_spellings_of_kind_and_host():
    t = Target("cuda -model=v100", host="llvm -mcpu=skylake-avx512")
    assert t.kind == "cuda" and t.kind.name == "cuda"
    assert t.host is not None and t.host.kind.name == "llvm" and t.host.mcpu == "skylake-avx512"
    assert Target(t).host == t.host and Target("llvm").host is None


def test_a_target_is_immutable_and_pickles_whole():
    import pickle

    t = Target("llvm -mcpu=x86-64 -mattr=+avx2,+fma", host="llvm")
    with pytest.raises(AttributeError):
        t.kind = "cuda"
    t.attrs["mcpu"] = "znver4"  # a copy
    t.keys.append("gpu")  # a copy
    assert t.mcpu == "x86-64" and t.keys == ["cpu"]
    clone = pickle.loads(pickle.dumps(t))
    assert clone == t and str(clone) == str(t) and clone.host == t.host and clone.mattr == ["+avx2", "+fma"]


def test_targets_are_equal_whatever_the_order_of_their_options():
    a, b = Target("llvm -mcpu=x86-64 -mattr=+avx2"), Target("llvm  -mattr=+avx2 -mcpu=x86-64")
    assert a == b and hash(a) == hash(b) and str(a) != str(b)  # logs keep each spelling
    assert a != Target("llvm -mcpu=x86-64") and a != Target("llvm -mcpu=x86-64 -mattr=+avx2", host="llvm")
    assert as_target("llvm -mcpu=x86-64 -mattr=+avx2") is as_target("llvm -mcpu=x86-64 -mattr=+avx2")


def test_missing_features_on_another_processor():
    lacks_avx512 = ["+avx2", "+fma", "-avx512f", "-avx512bw", "-avx512vl"]
    assert Target("llvm -mcpu=skylake-avx512").missing_on("znver3", lacks_avx512) == ["avx512bw", "avx512f",
                                                                                      "avx512vl"]
    assert Target("llvm -mcpu=haswell -mattr=+avx512f").missing_on("znver3", lacks_avx512) == ["avx512f"]
    assert Target("llvm -mcpu=haswell").missing_on("znver3", lacks_avx512) == []
    assert Target("llvm -mcpu=skylake-avx512").missing_on("skylake-avx512", lacks_avx512) == []  # its own CPU
    assert Target("llvm -mcpu=cortex-a72 -mattr=+neon").missing_on("cortex-a53", ["+neon"]) == []


def test_cuda_makes_tvms_cuda_targets():
    assert cuda() == Target("cuda") and str(cuda()) == "cuda"
    assert cuda(arch="sm_80") == Target("cuda -arch=sm_80")
    want = Target("cuda -arch=sm_80 -model=a100 -max_num_threads=512")
    assert cuda("a100", "sm_80", "-max_num_threads=512") == want
    assert cuda("a100").model == "a100" and "gpu" in cuda().keys
