"""Compiling the groups of one network: each looked up in the kernel cache, the rest lowered and
compiled in parallel processes.

:class:`GroupCompiler` is the ``lower`` of ``graph_codegen.graph_program`` that ``relay.build``
uses.  Before anything is lowered, each group's cache key is computed from what decides its code
(``codegen.kernel_cache``): the group's text (operators, attributes, the config a blocked
convolution carries, parameter types), the data of any tensor constant inside it, which of its
parameters are constants, the kernel name, the anchor's strategy row, workload and config (asked
of ``DispatchContext.current`` once, here; lowering gets that config), the code of any compute or
strategy function defined outside tunecli, the target and this machine's CPU (build-time kernels
may be compiled for it), and for a GPU target which libdevice the toolkit links in.  A hit skips
lowering, scheduling and LLVM altogether.

The misses are lowered by ``lower_group`` in child processes forked from the building one (they
see its graph, operators, templates and dispatch contexts as they are; nothing is pickled but the
compiled kernels coming back), as many as the cores this process may use (``TUNECLI_BUILD_JOBS``
overrides; ``1`` lowers in this process).  A child whose group raises sends the traceback and
the group is lowered again here, so the error is the one a serial build raises; a child that dies
(an LLVM abort) fails only the groups it had not answered, which are then lowered here.
"""

from __future__ import annotations

import copy
import gc
import hashlib
import inspect
import itertools
import logging
import multiprocessing
import os
import pickle
import traceback
import zlib
from collections.abc import Callable, Sequence
from concurrent.futures import ProcessPoolExecutor, as_completed
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Final

import numpy as np

from tunecli.engine.codegen import CompiledKernel
from tunecli.engine.codegen.compile import LOCK
from tunecli.engine.codegen.kernel_cache import KernelCache, cache_key, default_cache, target_text
from tunecli.engine.codegen.nvptx_backend import libdevice_path
from tunecli.engine.target import Target, as_target
from tunecli.engine.task.space import ConfigSpace
from tunecli.errors import ArgumentError

from .graph_expr import Call, Constant, Function
from .graph_printer import astext
from .lower_group import (
    AnchorConfig,
    LoweredKernel,
    PrecomputedInput,
    anchor_config,
    group_anchor,
    lower_group,
)
from .op_compute import compute_of
from .op_registry import Op
from .op_strategy import Implementation
from .traversal import post_order

logger = logging.getLogger("tunecli.kernel_cache")

JOBS_ENV = "TUNECLI_BUILD_JOBS"

#: Groups waiting for forked children, by build (a child reads its build's entry, inherited).
_PENDING: dict[int, tuple[Target, list[GroupItem]]] = {}
_TOKENS = itertools.count()


@dataclass(frozen=True)
class GroupJob:
    """One distinct group of a network to compile.

    Attributes
    ----------
    fn : Function
        The primitive function.
    name : str
        The kernel's symbol.
    constant : frozenset of int
        Indices of its parameters that are constants.
    """

    fn: Function
    name: str
    constant: frozenset[int]


#: A group to lower and its anchor's config (None for a group without a tunable call).
GroupItem = tuple[GroupJob, ConfigSpace | None]


@dataclass(frozen=True)
class _Plan:
    anchor: tuple[Call, Implementation] | None
    config: ConfigSpace | None
    key: str  #: "" when no cache is read


class _Default:
    pass


DEFAULT: Final = _Default()


class GroupCompiler:
    """Compiles groups for ``target`` through the kernel cache and parallel children.

    Parameters
    ----------
    target : Target
    cache : KernelCache or None, optional
        Default: the environment's (``kernel_cache.default_cache``); None compiles everything.
    jobs : int, optional
        Processes lowering the misses (default: ``TUNECLI_BUILD_JOBS``, else the usable cores).
    """

    def __init__(self, target: Target, cache: KernelCache | _Default | None = DEFAULT,
                 jobs: int | None = None) -> None:
        self.target = target
        self.cache = default_cache() if isinstance(cache, _Default) else cache
        self.jobs = build_jobs() if jobs is None else max(1, int(jobs))
        self.hits = 0  #: groups found in the cache so far
        self.misses = 0  #: groups compiled so far

    def __call__(self, fn: Function, name: str, constant: frozenset[int]) -> LoweredKernel:
        """Compile one group (``graph_codegen.Lower``)."""
        return self.compile_all([GroupJob(fn, name, constant)])[0]

    def compile_all(self, jobs: Sequence[GroupJob]) -> list[LoweredKernel]:
        """The lowered kernel of each job, in order (``LoweredKernel.func`` is None: no loop nest
        is kept, and none exists for a cached kernel)."""
        plans = [self._plan(job) for job in jobs]
        results: list[LoweredKernel | None] = [None] * len(jobs)
        misses = []
        for i, (job, plan) in enumerate(zip(jobs, plans, strict=True)):
            payload = self.cache.get(plan.key) if self.cache is not None else None
            entry = _decode(payload, job.name) if payload is not None else None
            if entry is None:
                misses.append(i)
                continue
            kernel, inputs = entry
            results[i] = LoweredKernel(kernel, inputs, _anchor_record(plan))
        self.hits += len(jobs) - len(misses)
        self.misses += len(misses)
        compiled = self._lower([(jobs[i], plans[i].config) for i in misses])
        for i, lowered in zip(misses, compiled, strict=True):
            results[i] = lowered
            if self.cache is not None:
                self.cache.put(plans[i].key, _encode(lowered))
        if misses and self.cache is not None:
            self.cache.trim()
        return results  # type: ignore[return-value]

    # ------------------------------------------------------------------ keys
    def _plan(self, job: GroupJob) -> _Plan:
        anchor = group_anchor(job.fn, self.target)
        config = anchor_config(*anchor, self.target) if anchor is not None else None
        key = group_key(job, self.target, anchor, config) if self.cache is not None else ""
        return _Plan(anchor, config, key)

    # ------------------------------------------------------------------ lowering
    def _lower(self, items: list[GroupItem]) -> list[LoweredKernel]:
        workers = min(self.jobs, len(items))
        done: dict[int, LoweredKernel] = {}
        if workers > 1 and not multiprocessing.current_process().daemon:
            done = _lower_in_children(self.target, items, workers)
        return [done[i] if i in done else self._lower_here(job, config)
                for i, (job, config) in enumerate(items)]

    def _lower_here(self, job: GroupJob, config: ConfigSpace | None) -> LoweredKernel:
        lowered = lower_group(job.fn, self.target, job.name, job.constant, _private(config))
        return replace(lowered, func=None)


def build_jobs() -> int:
    """``TUNECLI_BUILD_JOBS`` (ArgumentError unless a positive integer), else the usable cores."""
    text = os.environ.get(JOBS_ENV, "").strip()
    if text:
        if not text.isdigit() or int(text) < 1:
            raise ArgumentError(f"{JOBS_ENV}={text!r}: expected a positive number of processes")
        return int(text)
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:
        return max(1, os.cpu_count() or 1)


def group_key(job: GroupJob, target: Target, anchor: tuple[Call, Implementation] | None,
              config: ConfigSpace | None) -> str:
    """The cache key of ``job`` compiled for ``target`` with ``config`` for its ``anchor``."""
    parts = {
        "group": astext(job.fn),
        "constants": _constant_digest(job.fn),
        "constant_params": ",".join(str(i) for i in sorted(job.constant)),
        "name": job.name,
        "host": target_text(as_target("llvm")),  # build-time kernels may be compiled for this machine
        "outside_code": _outside_code(job.fn),
    }
    if target.is_gpu:
        parts["libdevice"] = _file_identity(libdevice_path())
    if anchor is not None:
        strategy = anchor[1].strategy
        parts["anchor"] = f"{strategy.name} {anchor[1].workload!r}"
        parts["config"] = f"{config!r} fallback={bool(getattr(config, 'is_fallback', False))}"
        parts["strategy"] = " ".join(_code_identity(f) for f in (strategy.declare, strategy.compute,
                                                                   strategy.schedule, strategy.pack))
    return cache_key(parts, target)


def _file_identity(path: Path | None) -> str:
    """Which file ``path`` is: its path, size and modification time ("-" when none is found)."""
    if path is None:
        return "-"
    try:
        st = path.stat()
    except OSError:
        return f"{path}: unreadable"
    return f"{path}:{st.st_size}:{st.st_mtime_ns}"


def _constant_digest(fn: Function) -> str:
    digest = hashlib.sha256()
    for node in post_order(fn.body, into_functions=False):
        if isinstance(node, Constant) and np.asarray(node.data).ndim > 0:
            data = np.ascontiguousarray(node.data)
            digest.update(f"{data.dtype}{data.shape}".encode())
            digest.update(data.tobytes())
    return digest.hexdigest()


def _outside_code(fn: Function) -> str:
    """Identities of the compute functions of the group's operators defined outside tunecli (a
    user's registration), whose code the source digest does not cover."""
    found = []
    for node in post_order(fn.body, into_functions=False):
        if isinstance(node, Call) and isinstance(node.op, Op):
            try:
                compute = compute_of(node.op.name)
            except Exception:  # noqa: BLE001 - lowering reports the missing definition
                continue
            if not getattr(compute, "__module__", "").startswith("tunecli."):
                found.append(_code_identity(compute))
    return " ".join(sorted(set(found)))


def _code_identity(func: Callable[..., object] | None) -> str:
    """``module.qualname``, with a digest of the code for a function defined outside tunecli."""
    if func is None:
        return "-"
    module = getattr(func, "__module__", None) or "?"
    name = f"{module}.{getattr(func, '__qualname__', type(func).__name__)}"
    if module.startswith("tunecli."):
        return name
    try:
        code = inspect.getsource(func).encode()
    except (OSError, TypeError):
        code = pickle.dumps(getattr(getattr(func, "__code__", None), "co_code", repr(func)))
    return f"{name}:{hashlib.sha256(code).hexdigest()[:16]}"


def _anchor_record(plan: _Plan) -> AnchorConfig | None:
    if plan.anchor is None:
        return None
    impl = plan.anchor[1]
    return AnchorConfig.of(impl.task_name, impl.workload, plan.config)


def _private(config: ConfigSpace | None) -> ConfigSpace | None:
    """A fallback config is filled in by the template that lowers it; lowering gets a copy, so the
    context's entity (and the next build's key) stays as asked."""
    return copy.deepcopy(config) if getattr(config, "is_fallback", False) else config


# ---------------------------------------------------------------------- cache entries
def _encode(lowered: LoweredKernel) -> bytes:
    return zlib.compress(pickle.dumps((lowered.kernel, lowered.inputs), protocol=pickle.HIGHEST_PROTOCOL), 1)


def _decode(payload: bytes, name: str) -> tuple[CompiledKernel, tuple[int | PrecomputedInput, ...]] | None:
    """``(kernel, inputs)`` of an entry, or None when it cannot be read back (logged)."""
    try:
        kernel, inputs = pickle.loads(zlib.decompress(payload))
    except Exception as err:  # noqa: BLE001 - a stale or foreign entry is a miss
        logger.warning("kernel cache: the entry of %s cannot be read (%s); it is compiled again", name, err)
        return None
    if getattr(kernel, "entry_name", None) != name:
        logger.warning("kernel cache: the entry of %s holds %r; it is compiled again", name,
                       getattr(kernel, "entry_name", None))
        return None
    return kernel, inputs


# ---------------------------------------------------------------------- children
def _lower_forked(token: int, index: int) -> tuple[bool, LoweredKernel | str]:
    """In a forked child: lower group ``index`` of build ``token``; ``(True, LoweredKernel)`` or
    ``(False, traceback text)``."""
    target, items = _PENDING[token]
    job, config = items[index]
    try:
        lowered = lower_group(job.fn, target, job.name, job.constant, _private(config))
        return True, replace(lowered, func=None)
    except Exception:  # noqa: BLE001 - the parent lowers the group again and raises there
        return False, traceback.format_exc()


def _lower_in_children(target: Target, items: list[GroupItem],
                       workers: int) -> dict[int, LoweredKernel]:
    """Lower ``items`` in ``workers`` forked children; the kernels of those that succeeded, by index."""
    token = next(_TOKENS)
    _PENDING[token] = (target, items)
    done: dict[int, LoweredKernel] = {}
    order = sorted(range(len(items)), key=lambda i: items[i][1] is None)  # anchors (the long ones) first
    try:
        # No thread of this process is inside LLVM while the children fork, and the objects that
        # exist now are frozen, so the children's garbage collector leaves their pages shared.
        with LOCK:
            gc.freeze()
            try:
                pool = ProcessPoolExecutor(workers, mp_context=multiprocessing.get_context("fork"))
                futures = {pool.submit(_lower_forked, token, i): i for i in order}
            finally:
                gc.unfreeze()
        try:
            for future in as_completed(futures):
                ok, value = future.result()
                if ok:
                    done[futures[future]] = value
                else:
                    logger.debug("group %s failed in a build process:\n%s", items[futures[future]][0].name,
                                 value)
        except BrokenProcessPool:
            logger.warning("a build process died; %d of %d groups are compiled in this process instead",
                           len(items) - len(done), len(items))
        finally:
            pool.shutdown(wait=True, cancel_futures=True)
    except OSError as err:  # no processes could be started
        logger.warning("build processes could not be started (%s); groups are compiled in this process", err)
    finally:
        _PENDING.pop(token, None)
    return done
