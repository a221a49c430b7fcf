"""Which machines' records may stand in for a workload's missing record, and how well.

A record's config carries over to a query's target in two ranks (:func:`machine_rank`):

- ``SAME_CPU`` (0): the same machine (:func:`same_machine`: kind, device, model, GPU
  architecture, and for ``llvm`` the same CPU, ``llvm_cpu``, and instruction-set class);
- ``SAME_ISA`` (1): another x86 CPU of the same instruction-set class (:func:`isa_class`: the
  widest vector registers and whether it fuses multiply-add), kind, device and model equal: its
  register tiles and vector lengths fit the query's registers.

Never across vector widths (an AVX2 query never takes an AVX-512 CPU's records), nor between CPUs
whose features are unknown here (not in ``target.X86_CPU_FEATURES``), nor across architectures.
"""

from __future__ import annotations

from tunecli.engine.target import X86_CPU_FEATURES, Target, triple_arch

SAME_CPU = 0
SAME_ISA = 1


def same_machine(record: Target, query: Target) -> bool:
    """True when ``record`` and ``query`` are the same machine: same kind, device, model, GPU
    architecture (``-arch``) and, for ``llvm``, the same CPU (``llvm_cpu``: a host target is this
    machine's) with the same instruction-set class (an ``-mattr`` taking AVX-512 away makes another)."""
    if not _same_kind(record, query):
        return False
    if record.kind != "llvm":
        return True
    return record.llvm_cpu == query.llvm_cpu and isa_class(record) == isa_class(query)


def isa_class(target: Target) -> tuple[str, int, bool] | None:
    """The instruction-set class of an ``llvm`` x86 target: (architecture, widest vector register
    in bits, fused multiply-add); None for another kind or architecture, or a CPU name whose
    features are unknown here.  ``-mattr`` (or a host target's own features) adds and removes
    features of the CPU's."""
    if target.kind != "llvm":
        return None
    arch = triple_arch(target.llvm_triple)
    implied = X86_CPU_FEATURES.get(target.llvm_cpu)
    if arch != "x86_64" or implied is None:
        return None
    features = set(implied)
    for flag in target.llvm_features.split(","):
        flag = flag.strip()
        if flag.startswith("+"):
            features.add(flag[1:])
        elif flag.startswith("-"):
            features.discard(flag[1:])
    width = 512 if "avx512f" in features else 256 if "avx" in features else 128
    return arch, width, "fma" in features


def machine_rank(record: Target, query: Target) -> int | None:
    """How well a record of ``record`` stands in on ``query``: ``SAME_CPU``, ``SAME_ISA`` or None
    (never).

    Parameters
    ----------
    record : Target
        The record's target.
    query : Target
        The query's target.

    Returns
    -------
    int or None
    """
    if same_machine(record, query):
        return SAME_CPU
    if not _same_kind(record, query):
        return None
    mine = isa_class(query)
    return SAME_ISA if mine is not None and isa_class(record) == mine else None


def _same_kind(record: Target, query: Target) -> bool:
    if record.kind != query.kind or record.model != query.model:
        return False
    if record.attrs.get("arch") != query.attrs.get("arch"):
        return False
    return record.keys[:1] == query.keys[:1]
