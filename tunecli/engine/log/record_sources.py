"""What a dispatch context of tuning records loads (``RecordSources``), flattened to records.

A log's path, an open log, ``(MeasureInput, MeasureResult)`` pairs, ``record.LogRecord``s, or
(nested) iterables of these; each record comes with the file it was read from, when it was.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator
from typing import IO, TypeAlias

from tunecli.engine.log.record import LogRecord, Record, load_from_buffer, load_from_file
from tunecli.engine.measure.result import MeasureInput, MeasureResult

#: What ``ApplyHistoryBest`` loads: a log's path, a file object, records (pairs or ``LogRecord``s),
#: or iterables of these.
RecordSources: TypeAlias = ("str | bytes | os.PathLike[str] | IO[str] "
                             "| Iterable[Record | LogRecord | RecordSources]")


def iter_sourced(records: RecordSources | None) -> Iterator[tuple[MeasureInput, MeasureResult, str | None]]:
    """Flatten paths, file objects and (nested) iterables of records into (inp, res, path) triples
    (path None for records not read from a named file).

    Parameters
    ----------
    records : RecordSources or None

    Yields
    ------
    (MeasureInput, MeasureResult, str or None)
    """
    if records is None:
        return
    if isinstance(records, (str, bytes, os.PathLike)):
        path = os.fsdecode(records)
        for inp, res in load_from_file(path):
            yield inp, res, path
        return
    if hasattr(records, "read"):
        name = getattr(records, "name", None)
        for inp, res in load_from_buffer(records):
            yield inp, res, name if isinstance(name, str) else None
        return
    for item in records:
        if is_record_pair(item):
            yield item[0], item[1], None
        elif hasattr(item, "inp") and hasattr(item, "result"):  # a record.LogRecord
            yield item.inp, item.result, getattr(item, "path", None)
        else:
            yield from iter_sourced(item)


def is_record_pair(item: object) -> bool:
    """True for a ``(MeasureInput, MeasureResult)`` pair (or objects that look like one)."""
    return (isinstance(item, tuple) and len(item) == 2 and hasattr(item[0], "config")
            and hasattr(item[1], "error_no"))
