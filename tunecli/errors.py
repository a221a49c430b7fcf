"""The one exception hierarchy of tunecli.

Engine code raises these; only ``tunecli/commands/`` turns them into exit codes and messages.
Expected failures of a tuning candidate (a config that does not build, a kernel that crashes)
are *data* (a ``MeasureResult`` with an error number), not exceptions.
"""

from __future__ import annotations


class TuneError(Exception):
    """Base class of every error tunecli raises on purpose."""


class ExprError(TuneError):
    """A tensor expression is malformed (bad dtype, wrong index count, symbolic value used as bool)."""


class ScheduleError(TuneError):
    """A schedule primitive was used illegally (unknown axis, reorder across stages, ...)."""


class LoweringError(TuneError):
    """A schedule could not be lowered to a loop nest (bounds cannot be inferred, ...)."""


class CodegenError(TuneError):
    """The loop nest could not be turned into machine code."""


class TargetError(TuneError):
    """A target string is malformed or names something this machine cannot compile for."""


class ArgumentError(TuneError):
    """A compiled function was called with arrays of the wrong number, shape or dtype."""


class DeviceError(TuneError):
    """A device cannot be used: its runtime, driver or hardware is missing, or a call on it failed."""


class InstantiationError(TuneError):
    """A template could not be instantiated with a config (invalid config, template bug)."""


class TemplateFileError(TuneError):
    """A user's template file does not exist or failed to import; the message names the file."""


class SpaceError(TuneError, RuntimeError):
    """A config space was defined or indexed illegally (a ``RuntimeError``, as TVM's space errors)."""


class RecordError(TuneError):
    """A tuning log cannot be read, or one of its records is malformed.

    Parameters
    ----------
    message : str
    kind : str
        What is wrong, in a few words ("not JSON", "bad cost", ...): readers group skipped lines by it.
    """

    def __init__(self, message: str, kind: str = "malformed record"):
        super().__init__(message)
        self.kind = kind


class JobError(TuneError):
    """A YAML job file is invalid: one or more problems, each naming the file, line and field.

    Parameters
    ----------
    *problems : str
        One message per problem (``jobs/bad.yaml:7: tuner.n_trial: expected an integer, got
        'many'``), in the order found; ``str(err)`` is one problem per line.
    """

    def __init__(self, *problems: str):
        super().__init__("\n".join(problems))
        self.problems: tuple[str, ...] = problems


class LogInUseError(JobError):
    """Another tuning run holds the lock of the log this run would write."""


class LogPathError(JobError):
    """A log cannot be created, opened or written where its path says (a read-only or full disk)."""


class RPCError(TuneError):
    """A tracker or device server failed, refused a request, or sent a malformed message."""


class GraphError(TuneError):
    """A network graph is malformed or fails type inference; the message names the operator."""


class ModelImportError(GraphError):
    """A framework model cannot be imported (missing or corrupt file, unsupported operator or opset,
    input shapes that do not fit); the message names the file, input or node."""
