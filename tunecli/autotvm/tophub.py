"""TVM's ``autotvm.tophub``: pre-tuned config packages (re-exports of ``tunecli.engine.log``)."""

from tunecli.engine.log.history_best import tophub_context as context
from tunecli.engine.log.tophub import PACKAGE_VERSION, locations, package_files, set_locations

__all__ = ["PACKAGE_VERSION", "context", "locations", "package_files", "set_locations"]
