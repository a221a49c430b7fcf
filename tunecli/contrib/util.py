"""TVM's older name of ``tvm.contrib.utils`` (``from tvm.contrib import util``, TVM 0.6/0.7):
the same ``tempdir``."""

from tunecli.contrib.utils import TempDirectory, tempdir

__all__ = ["TempDirectory", "tempdir"]
