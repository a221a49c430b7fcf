"""tunecli.autotvm.callback: tuning callbacks (TVM's ``autotvm.callback``)."""

from tunecli.engine.tuner.callback import Monitor, log_to_database, log_to_file, progress_bar

__all__ = ["Monitor", "log_to_database", "log_to_file", "progress_bar"]
