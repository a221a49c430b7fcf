"""The whole-network part of the job schema: ``model:``, ``ops:`` and ``graph_tuner:``.

A model job tunes the tasks of a network instead of (or besides) a list of ``tasks``::

    model: resnet-18                  # a built-in network (MODELS), or a mapping:
    # model: {name: resnet-18, batch_size: 1, image_shape: [3, 224, 224], dtype: float32}
    # model: {name: bert-base, seq_len: 128}          # a text model: its sequence length(s)
    # model: {name: bert-base, seq_len: [32, 128], layers: 2, hidden: 256, heads: 4}
    # model: {onnx: path/to/model.onnx, input: {data: [1, 3, 224, 224]}}
    ops: [nn.conv2d, nn.dense]        # optional: the operators whose calls become tasks
    graph_tuner: dp                   # optional (x86): dp or pbqp, or a mapping:
    # graph_tuner: {kind: dp, max_sch_num: 20, min_exec_num: 100}

The network itself is loaded later (``network.load_network``: an ONNX file is imported there, so
an unsupported operator or a wrong input is reported naming the ``model`` field).  Here only the
form is checked: a known model name, sizes, an ONNX file that exists, known tunable operators.
A vision model takes ``image_shape``, a text model (token ids in) ``seq_len``: one length, or
several, each a network of its own whose tasks one log holds and ``apply`` builds one library
for; the transformers take ``layers``, ``hidden`` and ``heads`` (a reduced model of the same form).
The graph tuner's choice is written beside the job's log (``graph_log_path``); ``GraphTuning``
is what that step of ``tune`` reports.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field, replace
from pathlib import Path

from tunecli.engine.graph.op_registry import OPS
from tunecli.engine.graph_tuner.graph_tuner_kinds import GRAPH_TUNERS
from tunecli.engine.job.network_models import MODELS, BuiltinModel
from tunecli.engine.job.nodes import Node

#: The operators a model job tunes when it does not say (as TVM's tutorials extract them).
DEFAULT_OPS = ("nn.conv2d", "nn.dense", "nn.batch_matmul")
#: dtypes a built-in model may be built in.
MODEL_DTYPES = ("float32", "float64")
#: Largest batch size and image side of a built-in model.
MAX_BATCH, MAX_SIDE = 1024, 4096
#: Largest layer count, hidden width and head count of a built-in transformer.
MAX_SIZES = {"layers": 48, "hidden": 8192, "heads": 128}


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
        ``(C, H, W)`` of a built-in vision model (None: the model's default).
    seq_lens : tuple of int
        The sequence lengths of a built-in text model, each a network of its own (empty: the
        model's default length).
    sizes : dict of str to int
        The transformer sizes the job gives (``layers``, ``hidden``, ``heads``).
    dtype : str
    node : Node
        The ``model`` node (for errors found when the network is loaded).
    """

    name: str | None
    onnx: str | None = None
    inputs: dict[str, tuple[int, ...]] = field(default_factory=dict)
    batch_size: int = 1
    image_shape: tuple[int, ...] | None = None
    seq_lens: tuple[int, ...] = ()
    sizes: dict[str, int] = field(default_factory=dict)
    dtype: str = "float32"
    node: Node | None = field(default=None, compare=False, repr=False)

    @property
    def sample_shapes(self) -> tuple[tuple[int, ...], ...]:
        """The shape of one sample of each network's input: ``((C, H, W),)`` or ``((32,), (128,))``
        (an ONNX model: empty)."""
        if self.name is None:
            return ()
        if self.seq_lens:
            return tuple((n,) for n in self.seq_lens)
        return (self.image_shape or MODELS[self.name].sample_shape,)

    def single(self, sample_shape: tuple[int, ...]) -> ModelSpec:
        """This model at one of its :attr:`sample_shapes` (a job's network of one sequence length)."""
        if not self.seq_lens:
            return self
        return replace(self, seq_lens=(sample_shape[0],))

    @property
    def label(self) -> str:
        """``resnet-18 (1, 3, 224, 224) float32``, ``bert-base (1, 128) float32, layers 2`` or the ONNX
        file."""
        if self.onnx is not None:
            return self.onnx
        shapes = self.sample_shapes
        last = " | ".join(str(s[-1]) for s in shapes) if len(shapes) > 1 else str(shapes[0][-1])
        dims = [str(self.batch_size), *map(str, shapes[0][:-1]), last]
        sizes = "".join(f", {key} {value}" for key, value in self.sizes.items())
        return f"{self.name} ({', '.join(dims)}) {self.dtype}{sizes}"


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
    fields = n.items(("name", "batch_size", "image_shape", "seq_len", *MAX_SIZES, "dtype", "onnx", "input"))
    if ("name" in fields) == ("onnx" in fields):
        raise n.error("give either name (a built-in model) or onnx (a model file)")
    if "onnx" in fields:
        for key in ("batch_size", "image_shape", "seq_len", *MAX_SIZES, "dtype"):
            if key in fields:
                fields[key].report("applies to built-in models; an ONNX model's shapes are its inputs' "
                                   "(input: {name: [shape]})")
        inputs = n.problems.collect(lambda: _input_shapes(fields["input"]), {}) if "input" in fields else {}
        return ModelSpec(None, onnx=_onnx_file(fields["onnx"]), inputs=inputs, node=n)
    if "input" in fields:
        fields["input"].report("applies to ONNX models; a built-in model takes batch_size and image_shape")
    name = _model_name(fields["name"])
    model = MODELS[name]
    batch = (n.problems.collect(lambda: fields["batch_size"].as_int(minimum=1, maximum=MAX_BATCH), 1)
             if "batch_size" in fields else 1)  # a problem here leaves the other fields checked
    image = seq_lens = None
    if "image_shape" in fields:
        if model.is_text:
            fields["image_shape"].report(f"{name} takes token ids, not images: give seq_len (a sequence "
                                         "length, or a list of them)")
        else:
            image = n.problems.collect(lambda: _image_shape(fields["image_shape"]), None)
    if "seq_len" in fields:
        if not model.is_text:
            fields["seq_len"].report(f"{name} takes images, not token ids: give image_shape "
                                     "([channels, height, width])")
        else:
            seq_lens = n.problems.collect(lambda: _seq_lens(fields["seq_len"], model), None)
    sizes = _sizes(n, fields, model)
    dtype = (n.problems.collect(lambda: fields["dtype"].as_choice(MODEL_DTYPES), "float32")
             if "dtype" in fields else "float32")
    return ModelSpec(name, batch_size=batch, image_shape=image, seq_lens=seq_lens or (), sizes=sizes,
                     dtype=dtype, node=n)


def _seq_lens(n: Node, model: BuiltinModel) -> tuple[int, ...]:
    """``seq_len``: a length or a list of distinct lengths, each within the model's position table."""
    nodes = [n] if n.is_scalar() else list(n.elements())
    if not nodes:
        raise n.error("expected a sequence length or a list of them")
    lengths: list[int] = []
    for e in nodes:
        length = e.as_int(minimum=1, maximum=model.max_seq_len)
        if length in lengths:
            raise e.error(f"sequence length {length} is given twice")
        lengths.append(length)
    return tuple(lengths)


def _sizes(n: Node, fields: dict[str, Node], model: BuiltinModel) -> dict[str, int]:
    """``layers``, ``hidden``, ``heads`` of a transformer (``heads`` dividing ``hidden``)."""
    sizes: dict[str, int] = {}
    for key, largest in MAX_SIZES.items():
        if key not in fields:
            continue
        if key not in model.sizes:
            takes = ", ".join(m.name for m in MODELS.values() if key in m.sizes)
            fields[key].report(f"applies to the built-in transformers ({takes}), not {model.name}")
            continue
        value = n.problems.collect(lambda key=key, largest=largest: fields[key].as_int(1, largest), None)
        if value is not None:
            sizes[key] = value
    if "hidden" in sizes or "heads" in sizes:
        hidden, heads = sizes.get("hidden", 768), sizes.get("heads", 12)
        if hidden % heads:
            fields["heads" if "heads" in fields else "hidden"].report(
                f"hidden {hidden} must be a multiple of heads {heads} (bert-base: hidden 768, heads 12)")
    return sizes


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
