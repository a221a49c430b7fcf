"""The runner registry: every ``measure.runner.kind`` a job can name and how to make one.

A runner kind takes the job's :class:`TimingOptions` whole (those of its settings the kind
accepts in a job file) plus options of its own. The job schema (``tuning_spec``) reads
:data:`RUNNERS` to check ``measure.runner`` and
:func:`tunecli.engine.job.measure_setup.make_measure_option` to make the runner.
Adding a runner kind is adding one :class:`RunnerKind` here.

A job's ``cluster`` section (``cluster_spec``) names a :data:`CLUSTERS` kind instead: the
cluster's nodes then build and time the configs (builder and runner both), with the same timing.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TypeAlias

from tunecli.engine.cluster.connection import check_address
from tunecli.engine.cluster.ray_runner import cluster_measure_option
from tunecli.engine.measure import LocalRunner, Runner, TimingOptions
from tunecli.engine.measure.batch import MeasureOption
from tunecli.engine.measure.timing_options import TIMING_OPTIONS
from tunecli.engine.option import Option, OptionValue
from tunecli.engine.rpc.rpc_runner import RPCRunner
from tunecli.engine.rpc.sockets import parse_host_port

#: A plugin's option values by name.
OptionValues: TypeAlias = dict[str, OptionValue]


@dataclass(frozen=True)
class RunnerKind:
    """One registered runner kind.

    Attributes
    ----------
    name : str
        What a job's ``measure.runner.kind`` says.
    summary : str
        One line saying where kernels are measured.
    factory : callable
        ``factory(timing, options) -> Runner``; ``options`` holds the kind's own options.
    timing : tuple of str
        The :class:`TimingOptions` settings a job may give for this kind.
    options : tuple of Option
        The kind's own options.
    """

    name: str
    summary: str
    factory: Callable[[TimingOptions, OptionValues], Runner]
    timing: tuple[str, ...]
    options: tuple[Option, ...] = ()

    def make(self, timing: TimingOptions, options: OptionValues) -> Runner:
        """A runner of this kind measuring with ``timing``; options not given take their default."""
        defaults = {opt.name: opt.default for opt in self.options if opt.default is not None}
        return self.factory(timing, {**defaults, **options})


def _rpc_runner(timing: TimingOptions, options: OptionValues) -> Runner:
    host, port = options["tracker"]
    return RPCRunner(options["key"], host, port, priority=options["priority"], timing=timing)


_ALL_TIMING = tuple(opt.name for opt in TIMING_OPTIONS)

_KINDS = (
    RunnerKind("local", "a worker process on this machine", lambda timing, _: LocalRunner(timing=timing),
               _ALL_TIMING),
    RunnerKind("rpc", "the devices of a key registered with an RPC tracker", _rpc_runner, _ALL_TIMING, (
                   Option("key", str, required=True, help="device key the servers registered with"),
                   Option("tracker", str, convert=parse_host_port, required=True,
                          help="the tracker's HOST:PORT"),
                   Option("priority", int, 1, help="priority of this job's device requests"),
               )),
)

#: Every runner kind by name.
RUNNERS: dict[str, RunnerKind] = {kind.name: kind for kind in _KINDS}


@dataclass(frozen=True)
class ClusterKind:
    """One registered cluster kind.

    Attributes
    ----------
    name : str
        What a job's ``cluster.kind`` says.
    summary : str
        One line saying where configs are built and timed.
    check_address : callable
        ``check_address(text) -> text``; ValueError saying which forms are accepted.
    factory : callable
        ``factory(address, resources, builders, build_timeout, timing) -> measure_option dict``.
    """

    name: str
    summary: str
    check_address: Callable[[str], str]
    factory: Callable[..., MeasureOption]

    def make(self, address: str, resources: dict[str, float], builders: int | None, build_timeout: float,
             timing: TimingOptions) -> MeasureOption:
        """``measure_option`` whose builds and measurements run on the cluster at ``address``."""
        return self.factory(address, resources or None, builders, build_timeout, timing)


#: Every cluster kind by name.
CLUSTERS: dict[str, ClusterKind] = {kind.name: kind for kind in (
    ClusterKind("ray", "the nodes of a Ray cluster with the target's CPU (extra tunecli[ray])", check_address,
                cluster_measure_option),
)}
