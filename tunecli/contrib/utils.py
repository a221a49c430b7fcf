"""TVM's ``tvm.contrib.utils`` face: ``tempdir``."""

from tunecli.engine.runtime.temp_directory import TempDirectory, tempdir

__all__ = ["TempDirectory", "tempdir"]
