"""tunecli.autotvm.record: tuning-log records (TVM's ``autotvm.record``)."""

from tunecli.engine.log.history_best import ApplyHistoryBest, pick_best
from tunecli.engine.log.record import (
    AUTOTVM_LOG_VERSION,
    decode,
    encode,
    load_from_buffer,
    load_from_file,
    measure_str_key,
    split_workload,
)

__all__ = [
    "AUTOTVM_LOG_VERSION", "ApplyHistoryBest", "decode", "encode", "load_from_buffer", "load_from_file",
    "measure_str_key", "pick_best", "split_workload",
]
