"""The annotation knob (``define_annotate``): ``AnnotateSpace`` enumerates one annotation per axis
(``none``/``unroll``/``vec``, GPU thread bindings, cache anchors) as TVM's
``tvm.autotvm.task.space.AnnotateSpace`` does: the Cartesian product with axis 0 slowest and at
most one ``vec``; an ``AnnotateEntity`` applies one such choice to a stage.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from typing import TYPE_CHECKING, TypedDict, Unpack

from tunecli.engine.task.space_entities import (
    Axis,
    StageKey,
    TransformSpace,
    VirtualAxis,
    check_count,
    required_option,
)
from tunecli.errors import SpaceError

if TYPE_CHECKING:
    from tunecli.engine.schedule import Schedule
    from tunecli.engine.task.space import ConfigSpace
    from tunecli.engine.te import IterVar, Tensor


class AnnotateOptions(TypedDict, total=False):
    """The keyword options of ``define_annotate``."""

    num_anchor: int


class AnnotateEntity:
    """One annotation per axis (``none``/``unroll``/``vec``/...), or anchor positions (locate_cache)."""

    def __init__(self, anns: Sequence[str] | Sequence[int]):
        self.anns = list(anns) if not isinstance(anns, tuple) else anns

    def apply(self, sch: Schedule, op: StageKey, axes: list[IterVar], axis_lens: Sequence[int] | None = None,
              max_unroll: int | None = None, vec_size: Sequence[int] | None = None,
              cfg: ConfigSpace | None = None, source: Sequence[Sequence[Tensor]] | None = None
              ) -> list[IterVar]:
        """Apply the annotations to ``axes`` of stage ``sch[op]``.

        Parameters
        ----------
        sch : Schedule
        op : Operation or Tensor
        axes : list of IterVar
        axis_lens : list of int, optional
            Extents of ``axes``, checked against ``max_unroll`` and ``vec_size``.
        max_unroll : int, optional
            Larger unrolls call ``cfg.raise_error``.
        vec_size : list of int, optional
            Allowed vector lengths; others call ``cfg.raise_error``.
        cfg : ConfigSpace, optional
            Receives the errors above.
        source : list of list of Tensor, optional
            For ``locate_cache``: tensors to ``compute_at`` the chosen anchors.

        Returns
        -------
        list of IterVar
        """
        if source is not None:
            for src, to in zip(source, self.anns, strict=False):
                for t in src:
                    sch[t].compute_at(sch[op], axes[to])
            return axes
        for i, ann in enumerate(self.anns):
            if ann == "none":
                continue
            if ann == "unroll":
                if max_unroll and axis_lens[i] > max_unroll:
                    cfg.raise_error("Too large factor for unrolling")
                sch[op].unroll(axes[i])
            elif ann == "vec":
                if vec_size and axis_lens[i] not in vec_size:
                    cfg.raise_error("Wrong size of lanes in vectorization")
                sch[op].vectorize(axes[i])
            elif ann == "fuse":
                axes[i + 1] = sch[op].fuse(axes[i], axes[i + 1])
            else:
                raise SpaceError(f"AnnotateEntity.apply: annotation {ann!r} is not supported on CPU")
        return axes

    def __repr__(self) -> str:
        return str(self.anns)


_GPU_BIND = {
    "bind_gpu": {6: ["blockIdx.z", "blockIdx.y", "blockIdx.x", "threadIdx.z", "threadIdx.y", "threadIdx.x"],
                 4: ["blockIdx.y", "blockIdx.x", "threadIdx.y", "threadIdx.x"],
                 2: ["blockIdx.x", "threadIdx.x"]},
    "bind_gpu_virtual": {
        9: ["blockIdx.z", "blockIdx.y", "blockIdx.x", "vthread", "vthread", "vthread",
            "threadIdx.z", "threadIdx.y", "threadIdx.x"],
        6: ["blockIdx.y", "blockIdx.x", "vthread", "vthread", "threadIdx.y", "threadIdx.x"],
        3: ["blockIdx.x", "vthread", "threadIdx.x"]},
}


class AnnotateSpace(TransformSpace[AnnotateEntity]):
    """Annotations of axes: generic ``try_*`` policies, ``locate_cache``, ``bind_gpu*``."""

    def __init__(self, axes: Sequence[VirtualAxis | Axis], policy: str, **kwargs: Unpack[AnnotateOptions]):
        super().__init__()
        self.ins = list(axes)
        self.policy = policy
        n = self.num_output = self.num_axis = len(axes)
        if policy in _GPU_BIND:
            for width, tail in _GPU_BIND[policy].items():
                if n >= width:
                    self.entities = [AnnotateEntity(["fuse"] * (n - width) + tail)]
                    break
            else:
                raise SpaceError(f"define_annotate: {policy} needs more axes than {n}")
        elif policy == "locate_cache":
            anchors = required_option(kwargs, "num_anchor", "define_annotate", policy)
            check_count("define_annotate", f"{anchors} anchors among {n} axes", math.comb(n, anchors))
            self.anns = list(itertools.combinations(range(n), anchors))
            self.entities = [AnnotateEntity(x) for x in self.anns]
        else:
            tokens = policy.replace("try", "none").split("_")
            if any(t not in ("none", "unroll", "vec") for t in tokens):
                raise SpaceError(f"define_annotate: invalid policy: {policy}")
            self.anns = [tokens] * n
            vec = tokens.count("vec")
            other = len(tokens) - vec
            count = other**n + n * vec * other ** max(0, n - 1)  # none or one "vec"
            check_count("define_annotate", f"{policy} on {n} axes", count)
            self._generate(tokens, [], False)

    def _generate(self, tokens: list[str], prefix: list[str], vectorized: bool) -> None:
        """The annotations in the order of ``itertools.product(tokens)``, at most one ``vec``."""
        if len(prefix) == self.num_axis:
            self.entities.append(AnnotateEntity(list(prefix)))
            return
        for token in tokens:
            if token == "vec" and vectorized:
                continue
            prefix.append(token)
            self._generate(tokens, prefix, vectorized or token == "vec")
            prefix.pop()

    def __repr__(self) -> str:
        return f"Annotate(policy={self.policy}) len={len(self)}"
