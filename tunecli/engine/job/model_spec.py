"""The whole-network part of the job schema: ``model:``, ``ops:`` and ``graph_tuner:``.

A model job tunes the tasks of a network instead of (or besides) a list of ``tasks``::

    model: resnet-18                  # a built-in network (MODELS), or a mapping:
    # model: {name: resnet-18, batch_size: 1, image_shape: [3, 224, 224], dtype: float32}
    # model: {onnx: path/to/model.onnx, input: {data: [1, 3, 224, 224]}}
    ops: [nn.conv2d, nn.dense]        # optional: the operators whose calls become tasks
    graph_tuner: dp                   # optional (x86): dp or pbqp, or a mapping:
    # graph_tuner: {kind: dp, max_sch_num: 20, min_exec_num: 100}

The network itself is loaded later (``network.load_network``: an ONNX file is imported there, so
an unsupported operator or a wrong input is reported naming the ``model`` field).  Here only the
form is checked: a known model name, sizes, an ONNX file that exists, known tunable operators.
The graph tuner's choice is written beside the job's log (``graph_log_path``); ``GraphTuning``
is what that step of ``tune`` reports.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

from tunecli.engine.graph.op_registry import OPS
from tunecli.engine.graph_tuner.graph_tuner_kinds import GRAPH_TUNERS
from tunecli.engine.job.network_models import MODELS
from tunecli.engine.job.nodes import Node

#: The operators a model job tunes when it does not say (as TVM's tutorials extract them).
DEFAULT_OPS = ("nn.conv2d", "nn.dense")
#: dtypes a built-in model may be built in.
MODEL_DTYPES = ("float32", "float64")
#: Largest batch size and image side of a built-in model.
MAX_BATCH, MAX_SIDE = 1024, 4096


def tunable_ops() -> tuple[str, ...]:
    """Names of the graph operators with a tunable strategy (what ``ops:`` may list)."""
    return tuple(op.name for op in OPS if op.strategy_op is not None)


@dataclass(frozen=True)
class ModelSpec:
    """The ``model`` field: a built-in network or an ONNX file.

    Attributes
    ----------
    name : str or None
        A key of :data:`~tunecli.engine.job.network_models.MODELS` (None for an ONNX model).
    onnx : str or None
        The ONNX file (relative to the current directory).
    inputs : dict of str to tuple of int
        ONNX input shapes by name (``input:``); for a built-in model, empty.
    batch_size : int
    image_shape : tuple of int or None
        ``(C, H, W)`` of a built-in model (None: the model's default).
    dtype : str
    node : Node
        The ``model`` node (for errors found when the network is loaded).
    """

    name: str | None
    onnx: str | None = None
    inputs: dict[str, tuple[int, ...]] = field(default_factory=dict)
    batch_size: int = 1
    image_shape: tuple[int, ...] | None = None
    dtype: str = "float32"
    node: Node | None = field(default=None, compare=False, repr=False)

    @property
    def label(self) -> str:
        """``resnet-18 (1, 3, 224, 224)`` or the ONNX file."""
        if self.onnx is not None:
            return self.onnx
        shape = self.image_shape or MODELS[str(self.name)].image_shape
        return f"{self.name} ({self.batch_size}, {', '.join(map(str, shape))}) {self.dtype}"


@dataclass(frozen=True)
class GraphTunerSpec:
    """The ``graph_tuner`` field: which graph tuner runs after kernel tuning, and its settings.

    Attributes
    ----------
    kind : str
        A key of :data:`~tunecli.engine.graph_tuner.graph_tuner_kinds.GRAPH_TUNERS`.
    max_sch_num : int
        Candidate records kept per convolution workload.
    min_exec_num : int
        Runs averaged per layout-transform kernel.
    """

    kind: str
    max_sch_num: int = 20
    min_exec_num: int = 100


def graph_log_path(log: str | os.PathLike) -> Path:
    """Where the graph tuner writes its choice, beside a job's log: ``logs/r18.log`` ->
    ``logs/r18.graph.log`` (``tune`` writes it, ``apply`` builds under it)."""
    path = Path(log)
    return path.with_name((path.stem if path.suffix == ".log" else path.name) + ".graph.log")


@dataclass(frozen=True)
class GraphTuning:
    """What the graph tuner step of ``tune`` did.

    Attributes
    ----------
    kind : str
        ``dp`` or ``pbqp``.
    path : str
        The records it wrote (one per convolution, graph order); empty when it failed.
    convolutions, transforms : int
        Convolutions it chose for and layout transforms it timed.
    predicted, kernel_only : float or None
        Predicted seconds (kernels + transforms) of its choice and of each convolution's fastest
        record.
    seconds : float
        Time it took.
    error : str or None
        Why it chose nothing.
    """

    kind: str
    path: str
    convolutions: int = 0
    transforms: int = 0
    predicted: float | None = None
    kernel_only: float | None = None
    seconds: float = 0.0
    error: str | None = None


def read_model(n: Node) -> ModelSpec:
    """The ``model`` field (a name, or a mapping with ``name`` or ``onnx``)."""
    if n.is_scalar():
        return ModelSpec(_model_name(n), node=n)
    fields = n.items(("name", "batch_size", "image_shape", "dtype", "onnx", "input"))
    if ("name" in fields) == ("onnx" in fields):
        raise n.error("give either name (a built-in model) or onnx (a model file)")
    if "onnx" in fields:
        for key in ("batch_size", "image_shape", "dtype"):
            if key in fields:
                fields[key].report("applies to built-in models; an ONNX model's shapes are its inputs' "
                                   "(input: {name: [shape]})")
        return ModelSpec(None, onnx=_onnx_file(fields["onnx"]),
                         inputs=_input_shapes(fields["input"]) if "input" in fields else {}, node=n)
    if "input" in fields:
        fields["input"].report("applies to ONNX models; a built-in model takes batch_size and image_shape")
    name = _model_name(fields["name"])
    batch = fields["batch_size"].as_int(minimum=1, maximum=MAX_BATCH) if "batch_size" in fields else 1
    image = _image_shape(fields["image_shape"]) if "image_shape" in fields else None
    dtype = fields["dtype"].as_choice(MODEL_DTYPES) if "dtype" in fields else "float32"
    return ModelSpec(name, batch_size=batch, image_shape=image, dtype=dtype, node=n)


def _model_name(n: Node) -> str:
    name = n.as_str()
    if name not in MODELS:
        raise n.error(f"unknown model {name!r} (built-in models: {', '.join(MODELS)}; or "
                      "{onnx: path/to/model.onnx, input: {name: [shape]}})")
    return name


def _onnx_file(n: Node) -> str:
    path = n.as_str()
    if not os.path.exists(path):
        raise n.error(f"{path}: no such ONNX file")
    if not os.path.isfile(path):
        raise n.error(f"{path}: is not a file")
    return path


def _dims(n: Node, maximum: int) -> tuple[int, ...]:
    dims = tuple(e.as_int(minimum=1, maximum=maximum) for e in n.elements())
    if not dims:
        raise n.error("expected a shape: a list of sizes")
    return dims


def _image_shape(n: Node) -> tuple[int, ...]:
    shape = _dims(n, MAX_SIDE)
    if len(shape) != 3:
        raise n.error(f"expected [channels, height, width], got {list(shape)}")
    return shape


def _input_shapes(n: Node) -> dict[str, tuple[int, ...]]:
    shapes = {}
    for name, value in n.items().items():
        shape = n.problems.collect(lambda value=value: _dims(value, 1 << 20), None)
        if shape is not None:
            shapes[name] = shape
    return shapes


def read_ops(n: Node) -> tuple[str, ...]:
    """The ``ops`` field: tunable operator names (``nn.conv2d``; ``conv2d`` is read as it)."""
    choices = tunable_ops()
    names = []
    for e in n.elements():
        text = e.as_str()
        name = text if text in choices else f"nn.{text}"
        if name not in choices:
            e.report(f"expected a tunable operator ({', '.join(choices)}), got {text!r}")
        elif name not in names:
            names.append(name)
    if not n.node.value:
        raise n.error("expected at least one operator")
    return tuple(names)


def read_graph_tuner(n: Node) -> GraphTunerSpec:
    """The ``graph_tuner`` field: a kind (``dp``, ``pbqp``), or a mapping with ``kind`` and settings."""
    if n.is_scalar():
        return GraphTunerSpec(n.as_choice(tuple(GRAPH_TUNERS)))
    fields = n.items(("kind", "max_sch_num", "min_exec_num"))
    if "kind" not in fields:
        raise n.error(f"missing required field 'kind' ({', '.join(GRAPH_TUNERS)})")
    spec = GraphTunerSpec(fields["kind"].as_choice(tuple(GRAPH_TUNERS)))
    values = {key: n.problems.collect(lambda key=key: fields[key].as_int(minimum=1, maximum=100_000), None)
              for key in ("max_sch_num", "min_exec_num") if key in fields}
    return GraphTunerSpec(spec.kind, **{k: v for k, v in values.items() if v is not None})
