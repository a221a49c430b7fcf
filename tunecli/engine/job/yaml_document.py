"""Reading a job file as untrusted input: its text checked, then composed into a ``Node`` tree.

``load_document(path)`` reads at most :data:`MAX_BYTES` of UTF-8 text without control
characters, refuses a tuning log passed as a job (naming the commands that read logs), and
limits nesting (:data:`MAX_DEPTH`) and values, counted again after expanding YAML aliases
(:data:`MAX_VALUES`), so that no file can make reading it slow or crash it.  A syntax error is
reported with its line.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import yaml

from tunecli.engine.job.nodes import JobLoader, Node, Problems
from tunecli.errors import JobError

#: Largest job file read (bytes).
MAX_BYTES = 1 << 20
#: Deepest nesting of lists and mappings (a job needs about 6 levels).
MAX_DEPTH = 32
#: Most values a document may hold once its aliases are expanded.
MAX_VALUES = 20_000
#: Characters YAML does not allow in a stream (its printable set, as PyYAML's reader checks it).
_NON_PRINTABLE = re.compile("[^\x09\x0a\x0d\x20-\x7e\x85\xa0-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")
#: The event parser used to check the limits before composing (libyaml's when PyYAML has it).
_EventLoader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def load_document(path: str | Path) -> Node:
    """Compose a YAML file into a ``Node`` tree, reporting syntax errors with their line.

    Parameters
    ----------
    path : str or Path

    Returns
    -------
    Node
        The root node (field path ""), with an empty :class:`Problems`.

    Raises
    ------
    JobError
        When the file cannot be read, is not UTF-8 text, is not valid YAML, is empty, or is
        beyond the limits (:data:`MAX_BYTES`, :data:`MAX_DEPTH`, :data:`MAX_VALUES`).
    """
    name = str(path)
    text = _read_text(path, name)
    bad = _NON_PRINTABLE.search(text)
    if bad:
        raise JobError(f"{name}:{text.count(chr(10), 0, bad.start()) + 1}: the job file contains the control "
                       f"character {bad.group()!r} (a job file is text)")
    if looks_like_a_log(text):
        raise JobError(f"{name}: is a tuning log (records of measured configs), not a job file: "
                       f"`tunecli best {name}` shows its best configs and `tunecli inspect {name}` its "
                       f"tasks; `tunecli tune` and `tunecli apply` take the job file that wrote it "
                       f"(with `--log {name}` to tune into or apply this log)")
    try:
        try:
            _check_size(text, name, _EventLoader)
        except yaml.YAMLError:  # checked again on the way to PyYAML's own message for the error
            _check_size(text, name, JobLoader)
        loader = JobLoader(text)
        root = loader.get_single_node()
    except yaml.MarkedYAMLError as err:
        mark = err.problem_mark or err.context_mark
        line = f"{mark.line + 1}:" if mark is not None else ""
        where = ""
        # YAML notices an unclosed bracket only at the next token, often a line later: name the
        # line where the bracket was opened too
        opened, noticed = err.context_mark, err.problem_mark
        if "flow" in (err.context or "") and opened and noticed and opened.line != noticed.line:
            where = f" ({err.context} on line {err.context_mark.line + 1})"
        problem = err.problem or err.context
        if err.context and problem.startswith("but "):  # "expected a single document ..., but found ..."
            problem = f"{err.context}, {problem}"
        raise JobError(f"{name}:{line} invalid YAML: {problem}{where}") from None
    except yaml.YAMLError as err:
        raise JobError(f"{name}: invalid YAML: {err}") from None
    if root is None:
        raise JobError(f"{name}: the job file is empty")
    _check_expansion(root, name)
    return Node(root, name, "", loader, Problems())


def _read_text(path: str | Path, name: str) -> str:
    """The job file's text (at most :data:`MAX_BYTES`, UTF-8)."""
    try:
        with open(path, "rb") as file:
            data = file.read(MAX_BYTES + 1)
    except (FileNotFoundError, NotADirectoryError):
        raise JobError(f"{name}: no such job file") from None
    except IsADirectoryError:
        raise JobError(f"{name}: is a directory, not a job file") from None
    except OSError as err:
        raise JobError(f"{name}: cannot read the job file: {err.strerror or err}") from None
    if len(data) > MAX_BYTES:
        raise JobError(f"{name}: the job file is larger than {MAX_BYTES >> 20} MiB")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as err:
        line = data.count(b"\n", 0, err.start) + 1
        raise JobError(f"{name}:{line}: not UTF-8 text (byte 0x{data[err.start]:02x}); save the job "
                       "file as UTF-8") from None


def _check_size(text: str, name: str, loader: type) -> None:
    """Refuse nesting deeper than :data:`MAX_DEPTH` and more than :data:`MAX_VALUES` values, from the
    event stream of ``loader`` (composing a deeply nested document would exhaust the stack)."""
    depth = values = 0
    for event in yaml.parse(text, Loader=loader):
        if isinstance(event, yaml.CollectionStartEvent):
            depth += 1
            if depth > MAX_DEPTH:
                raise JobError(f"{name}:{event.start_mark.line + 1}: lists and mappings nested more than "
                               f"{MAX_DEPTH} levels deep")
        elif isinstance(event, yaml.CollectionEndEvent):
            depth -= 1
        elif isinstance(event, (yaml.ScalarEvent, yaml.AliasEvent)):
            values += 1
            if values > MAX_VALUES:
                raise JobError(f"{name}:{event.start_mark.line + 1}: more than {MAX_VALUES} values")


def _check_expansion(root: yaml.Node, name: str) -> None:
    """Refuse aliases that refer to themselves or expand beyond the limits ("billion laughs")."""
    size: dict[int, int] = {}
    depth: dict[int, int] = {}
    on_path: set[int] = set()
    stack: list[tuple[yaml.Node, bool]] = [(root, False)]
    while stack:
        node, done = stack.pop()
        key = id(node)
        children = _children(node)
        if done:
            on_path.discard(key)
            size[key] = 1 + sum(size[id(c)] for c in children)
            depth[key] = 1 + max((depth[id(c)] for c in children), default=0)
            if size[key] > MAX_VALUES or depth[key] > MAX_DEPTH:
                limit = (f"more than {MAX_VALUES} values" if size[key] > MAX_VALUES
                         else f"lists and mappings nested more than {MAX_DEPTH} levels deep")
                raise JobError(f"{name}:{node.start_mark.line + 1}: YAML aliases expand to {limit}")
        elif key not in size:
            if key in on_path:
                raise JobError(f"{name}:{node.start_mark.line + 1}: a YAML alias refers to the value "
                               "that contains it")
            on_path.add(key)
            stack.append((node, True))
            stack.extend((c, False) for c in children if id(c) not in size)


def _children(node: yaml.Node) -> list[yaml.Node]:
    if isinstance(node, yaml.SequenceNode):
        return list(node.value)
    if isinstance(node, yaml.MappingNode):
        return [n for pair in node.value for n in pair]
    return []


def looks_like_a_log(text: str) -> bool:
    """True when the first line that is not blank or a comment is a tuning record (TVM v0.2 or v0.1)."""
    for line in text.splitlines():
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        if not line.startswith("{"):
            return False
        try:
            first = json.loads(line)
        except ValueError:
            return False
        return isinstance(first, dict) and ({"input", "result"} <= first.keys() or {"i", "r"} <= first.keys())
    return False
