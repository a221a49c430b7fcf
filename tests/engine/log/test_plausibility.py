"""Records faster than any machine could run them are skipped, naming their line."""

from __future__ import annotations

import logging
import time

from tunecli.engine.log.plausibility import judged, peak_flops, plausible, workload_flop
from tunecli.engine.log.record import encode, read_log
from tunecli.engine.measure.result import MeasureInput, MeasureResult
from tunecli.engine.task.task import create


def test_peak_scales_with_vector_width_and_element_type() -> None:
    avx512 = peak_flops("llvm -mcpu=skylake-avx512", (["TENSOR", [1, 8], "float32"],))
    assert avx512 == 512 * 2 * 2 * 16 * 6e9
    assert peak_flops("llvm -mcpu=skylake-avx512", (["TENSOR", [1, 8], "int8"], "int32")) == 4 * avx512
    assert peak_flops("llvm -mtriple=aarch64-linux-gnu", ()) == avx512 / 4  # 128-bit vectors
    assert peak_flops("cuda", ()) == 1e17


def test_workload_flop_of_templates_here_and_of_tvm_workloads() -> None:
    assert workload_flop("tutorial/matmul", (16, 16, 16, "float32"), "llvm") == 2 * 16**3
    nchwc = (("TENSOR", (1, 64, 56, 56), "float32"), ("TENSOR", (64, 64, 3, 3), "float32"), (1, 1),
             (1, 1, 1, 1), (1, 1), "NCHW", "NCHW", "float32")
    assert workload_flop("conv2d_NCHWc.x86", nchwc, "llvm") == 2 * 64 * 56 * 56 * 64 * 9
    assert workload_flop("no_such_template", (1,), "llvm") is None


def test_a_record_faster_than_any_machine_is_skipped_with_its_line(tmp_path, caplog) -> None:
    task = create("tutorial/matmul", (64, 64, 64, "float32"), "llvm")
    path = tmp_path / "fast.log"
    lines = []
    for index, cost in ((1, 1e-4), (2, 1e-15), (3, 2e-4), (4, 1e-16)):
        inp = MeasureInput(task.target, task, task.config_space.get(index))
        lines.append(encode(inp, MeasureResult((cost,), 0, 1.0, time.time())))
    path.write_text("\n".join(lines) + "\n")
    caplog.set_level(logging.WARNING, logger="autotvm")
    kept = list(plausible(read_log(path)))
    assert [r.inp.config.index for r in kept] == [1, 3]
    messages = [r.getMessage() for r in caplog.records]
    assert messages[0] == (f"{path}:2: skipping a record of 5.24288e+11 GFLOPS (524288 FLOP in 1e-15 s), "
                           f"more than any machine of target {task.target} reaches "
                           f"({peak_flops(task.target, task.args) / 1e9:.6g} GFLOPS)")
    assert messages[1] == f"{path}: skipped 1 more line of the same kind (faster than any machine): line 4"
    assert len(messages) == 2
    verdicts = [(r.inp.config.index, ok) for r, ok in judged(read_log(path))]
    assert verdicts == [(1, True), (2, False), (3, True), (4, False)]  # every record, each with its verdict
