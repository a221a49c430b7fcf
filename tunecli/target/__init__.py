"""TVM-style ``target`` namespace: ``Target("llvm -mcpu=...")``, ``cuda()`` (re-exports of
tunecli.engine.target), ``arm_cpu("rasp4b64")`` for ARM boards, and the AutoTVM era's ``create``,
``current_target`` and ``rasp``."""

from __future__ import annotations

from tunecli.engine.target import Target, cuda
from tunecli.errors import TargetError

# The llvm options of the boards TVM's ``arm_cpu`` knows by name: (SoC model, triple, features, cpu).
_ARM_BOARDS: dict[str, tuple[str, str, str, str | None]] = {
    "rasp3b": ("bcm2837", "armv7l-linux-gnueabihf", "+neon", None),
    "rasp4b": ("bcm2711", "armv8l-linux-gnueabihf", "+neon", "cortex-a72"),
    "rasp4b64": ("bcm2711", "aarch64-linux-gnu", "+neon", "cortex-a72"),
    "rk3399": ("rk3399", "aarch64-linux-gnu", "+neon", None),
    "pynq": ("pynq", "armv7a-linux-eabi", "+neon", None),
    "ultra96": ("ultra96", "aarch64-linux-gnu", "+neon", None),
    "pixel2": ("snapdragon835", "arm64-linux-android", "+neon", None),
    "mate10": ("kirin970", "arm64-linux-android", "+neon", None),
    "mate10pro": ("kirin970", "arm64-linux-android", "+neon", None),
    "p20": ("kirin970", "arm64-linux-android", "+neon", None),
    "p20pro": ("kirin970", "arm64-linux-android", "+neon", None),
    "beagleai": ("beagleai", "armv7a-linux-gnueabihf", "+neon,+vfp4,+thumb2", "cortex-a15"),
    "stm32mp1": ("stm32mp1", "armv7a-linux-gnueabihf", "+neon,+vfp4,+thumb2", "cortex-a7"),
    "thunderx": ("thunderx", "aarch64-linux-gnu", "+neon,+crc,+lse", "thunderxt88"),
}


def _extra(options: str | list[str] | None) -> list[str]:
    if options is None:
        return []
    if isinstance(options, str):
        return options.split()
    if isinstance(options, (list, tuple)) and all(isinstance(o, str) for o in options):
        return list(options)
    raise TargetError(f"target options must be a string or a list of strings, got {options!r}")


def arm_cpu(model: str = "unknown", options: str | list[str] | None = None) -> Target:
    """TVM's ``tvm.target.arm_cpu``: an ``llvm -device=arm_cpu`` target for a board.

    Parameters
    ----------
    model : str
        A board TVM names (``"rasp3b"``, ``"rasp4b64"``, ``"rk3399"``, ``"pixel2"``...), whose SoC,
        triple, features and CPU are filled in; any other name is only the ``-model=``.
    options : str or list of str, optional
        More target options (``"-mcpu=cortex-a53"``), appended.

    Returns
    -------
    Target
    """
    opts = ["-device=arm_cpu"]
    board = _ARM_BOARDS.get(model)
    if board is None:
        opts.append(f"-model={model}")
    else:
        soc, triple, features, cpu = board
        opts += [f"-model={soc}", f"-mtriple={triple}", f"-mattr={features}"]
        if cpu is not None:
            opts.append(f"-mcpu={cpu}")
    return Target(" ".join(["llvm", *opts, *_extra(options)]))


def rasp(options: str | list[str] | None = None) -> Target:
    """The AutoTVM era's ``tvm.target.rasp()``: ``arm_cpu("rasp3b", options)``."""
    return arm_cpu("rasp3b", options)


def create(target: str | Target) -> Target:
    """TVM's older ``tvm.target.create("llvm -mcpu=...")``: the same as ``Target(target)``."""
    return Target(target)


def current_target(allow_none: bool = True) -> Target | None:
    """TVM's older ``tvm.target.current_target()``: the target of the innermost ``with target:``
    block (see :meth:`Target.current`)."""
    return Target.current(allow_none)


__all__ = ["Target", "arm_cpu", "create", "cuda", "current_target", "rasp"]
