"""The result table of a GPU check run: one row per check, rewritten to disk after every stage."""

from __future__ import annotations

import json
import os
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

OK, FAILED, SKIPPED, DRY_RUN = "ok", "FAILED", "skipped", "dry-run"
STATUSES = (OK, FAILED, SKIPPED, DRY_RUN)
MARKDOWN = "gpu_check.md"
JSON = "gpu_check.json"


@dataclass(frozen=True)
class Row:
    """One check: the stage it belongs to, what it checked, its status, its figures, its seconds."""

    stage: str
    check: str
    status: str
    numbers: str
    seconds: float


@dataclass
class Table:
    """The rows so far, the stages finished, and facts about the run (``meta``)."""

    out: Path
    meta: dict[str, Any] = field(default_factory=dict)
    rows: list[Row] = field(default_factory=list)
    finished: list[str] = field(default_factory=list)

    def add(self, row: Row) -> None:
        if row.status not in STATUSES:
            raise ValueError(f"status {row.status!r} is not one of {STATUSES}")
        self.rows.append(row)
        print(f"[{row.status}] {row.stage} / {row.check}: {row.numbers} ({row.seconds:.1f} s)", flush=True)

    def finish_stage(self, stage: str) -> None:
        """Record ``stage`` as finished and write the table."""
        self.finished.append(stage)
        self.write()

    @property
    def failed(self) -> list[Row]:
        return [r for r in self.rows if r.status == FAILED]

    def markdown(self) -> str:
        lines = ["| stage | check | status | numbers | seconds |", "| --- | --- | --- | --- | --- |"]
        for r in self.rows:
            numbers = r.numbers.replace("|", "/").replace("\n", " ")
            lines.append(f"| {r.stage} | {r.check} | {r.status} | {numbers} | {r.seconds:.1f} |")
        head = [f"- {k}: {v}" for k, v in self.meta.items()]
        head.append(f"- stages finished: {', '.join(self.finished) or 'none'}")
        return "\n".join(head + [""] + lines) + "\n"

    def write(self) -> None:
        """Write ``gpu_check.md`` and ``gpu_check.json`` into ``out`` (each replaced whole)."""
        self.out.mkdir(parents=True, exist_ok=True)
        data = {"meta": self.meta, "finished_stages": self.finished, "rows": [asdict(r) for r in self.rows]}
        _replace(self.out / MARKDOWN, self.markdown())  # the JSON last: once it lists a stage, both do
        _replace(self.out / JSON, json.dumps(data, indent=1) + "\n")


def _replace(path: Path, text: str) -> None:
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(text, encoding="utf-8")
    os.replace(tmp, path)
