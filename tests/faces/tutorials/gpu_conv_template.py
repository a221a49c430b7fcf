"""A user's GPU template file (``tune_conv2d_cuda``'s kind of script, written for tunecli): a
direct NCHW convolution tiled for a GPU. Output tiles are split into blocks, virtual threads,
threads and per-thread work; the input and weight tiles a block needs are staged in shared
memory, loaded cooperatively by its threads, and copied to registers per reduction step; the
loop nest's unrolling is a knob. On ``llvm`` the thread bindings stay serial loops.

Registered as ``faces/gpu_direct_conv``; ``scripts/gpu_check.py`` loads this file as a template
file.
"""

from __future__ import annotations

from tunecli import autotvm, te, topi

SPATIAL = (("tile_f", "threadIdx.z", "blockIdx.z"), ("tile_y", "threadIdx.y", "blockIdx.y"),
           ("tile_x", "threadIdx.x", "blockIdx.x"))
REDUCTION = ("tile_rc", "tile_ry", "tile_rx")


@autotvm.template("faces/gpu_direct_conv")
def gpu_direct_conv(batch: int, height: int, width: int, out_channels: int, in_channels: int,
                    kernel_h: int, kernel_w: int, stride: tuple, padding: tuple) -> tuple:
    """``conv(data [batch, in_channels, height, width], weight [out_channels, in_channels, kernel_h,
    kernel_w])`` with the given stride and padding, for one image at a time."""
    if batch != 1:
        raise ValueError("gpu_direct_conv: one image at a time")
    data = te.placeholder((batch, in_channels, height, width), name="data")
    weight = te.placeholder((out_channels, in_channels, kernel_h, kernel_w), name="weight")
    conv = topi.nn.conv2d_nchw(data, weight, stride, padding, dilation=1, out_dtype="float32")
    s = te.create_schedule([conv.op])

    cfg = autotvm.get_config()
    for (knob, _, _), axis in zip(SPATIAL, s[conv].op.axis[1:], strict=True):
        cfg.define_split(knob, axis, num_outputs=4)
    for knob, axis in zip(REDUCTION, s[conv].op.reduce_axis, strict=True):
        cfg.define_split(knob, axis, num_outputs=3)
    cfg.define_knob("auto_unroll_max_step", [0, 512, 1500])
    cfg.define_knob("unroll_explicit", [0, 1])

    padded = s[conv].op.input_tensors[0]
    s[padded].compute_inline()
    acc = s.cache_write(conv, "local")
    staged = [s.cache_read(t, "shared", [acc]) for t in (padded, weight)]
    registers = [s.cache_read(t, "local", [acc]) for t in staged]

    image = s[conv].op.axis[0]
    pieces = [cfg[knob].apply(s, conv, axis)
              for (knob, _, _), axis in zip(SPATIAL, s[conv].op.axis[1:], strict=True)]
    blocks, virtual, threads, inner = (list(level) for level in zip(*pieces, strict=True))
    for axis, (_, _, block_tag) in zip(blocks, SPATIAL, strict=True):
        s[conv].bind(axis, te.thread_axis(block_tag))
    for axis in virtual:
        s[conv].bind(axis, te.thread_axis("vthread"))
    for axis, (_, thread_tag, _) in zip(threads, SPATIAL, strict=True):
        s[conv].bind(axis, te.thread_axis(thread_tag))
    s[conv].reorder(image, *blocks, *virtual, *threads, *inner)
    s[acc].compute_at(s[conv], threads[-1])

    steps = [cfg[knob].apply(s, acc, axis)
             for knob, axis in zip(REDUCTION, s[acc].op.reduce_axis, strict=True)]
    outer, middle, innermost = (list(level) for level in zip(*steps, strict=True))
    s[acc].reorder(*outer, *middle, *innermost, *s[acc].op.axis)
    for tile in staged:
        s[tile].compute_at(s[acc], outer[-1])
    for tile in registers:
        s[tile].compute_at(s[acc], middle[-1])
    for tile in staged:  # every thread of the block loads a share of the tile
        flat = s[tile].fuse(*s[tile].op.axis)
        for knob, thread_tag, _ in SPATIAL:
            bound, flat = s[tile].split(flat, nparts=cfg[knob].size[2])
            s[tile].bind(bound, te.thread_axis(thread_tag))

    s[conv].pragma(image, "auto_unroll_max_step", cfg["auto_unroll_max_step"].val)
    s[conv].pragma(image, "unroll_explicit", cfg["unroll_explicit"].val)
    return s, [data, weight, conv]
