"""What every stage is given: the options, the table, the GPU (None in a dry run) and the clock."""

from __future__ import annotations

import random
import time
import traceback
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .table import DRY_RUN, FAILED, OK, SKIPPED, Row, Table


class CheckFailed(Exception):
    """A check found a wrong result; its message is the row's numbers."""


@dataclass
class Result:
    """What a check fills in: its figures, and a status other than the default if it must."""

    numbers: str = ""
    status: str | None = None


@dataclass
class Context:
    """One run of the checks."""

    out: Path
    dry_run: bool
    budget_s: float
    table: Table
    options: Any
    arch: str = "sm_90"
    device: Any = None  #: tunecli.cuda(0) when the GPU is usable, else None
    start: float = field(default_factory=time.perf_counter)
    rng: random.Random = field(default_factory=random.Random)

    #: what the kernels are built for: the GPU, or ``llvm`` where the tests let the CPU play the
    #: GPU's part to run the code paths a dry run stops short of
    kind: str = "cuda"

    @property
    def target(self) -> str:
        return f"cuda -arch={self.arch}" if self.kind == "cuda" else self.kind

    @property
    def elapsed(self) -> float:
        return time.perf_counter() - self.start

    @property
    def left(self) -> float:
        return self.budget_s - self.elapsed

    @contextmanager
    def check(self, stage: str, name: str) -> Iterator[Result]:
        """Time the block and add its row: ok (``dry-run`` in a dry run), or FAILED with the error
        when it raises (:class:`CheckFailed`: a wrong result; anything else: the exception)."""
        result = Result()
        begin = time.perf_counter()
        status = None
        try:
            yield result
        except CheckFailed as err:
            status, result.numbers = FAILED, str(err)
        except Exception as err:  # noqa: BLE001 - one failed check must not hide the others
            status = FAILED
            where = traceback.extract_tb(err.__traceback__)[-1]
            result.numbers = f"{type(err).__name__}: {err} (at {Path(where.filename).name}:{where.lineno})"
        status = status or result.status or (DRY_RUN if self.dry_run else OK)
        self.table.add(Row(stage, name, status, result.numbers[:600], time.perf_counter() - begin))

    def skip(self, stage: str, name: str, why: str) -> None:
        self.table.add(Row(stage, name, SKIPPED, why, 0.0))
