"""Where ``tunecli tracker`` / ``server`` listen: one loopback default everywhere, and the README's
cross-machine recipe run as written (on loopback: tests bind 127.0.0.1 only)."""

from __future__ import annotations

import inspect
import json
import os
import re
import shlex
import subprocess
import time
from pathlib import Path

import pytest

import tunecli.rpc
from tunecli.commands import cli
from tunecli.engine.rpc.connections import DEFAULT_HOST

from .conftest import TUNECLI, Invoke
from .test_rpc import free_port

README = Path(__file__).resolve().parents[2] / "README.md"


def option_default(command: str, name: str) -> object:
    return next(p.default for p in cli.commands[command].params if p.name == name)


def test_every_face_binds_loopback_by_default():
    defaults = {
        "tunecli tracker --host": option_default("tracker", "host"),
        "tunecli server --host": option_default("server", "host"),
        "tunecli.rpc.run_tracker": inspect.signature(tunecli.rpc.run_tracker).parameters["host"].default,
        "tunecli.rpc.run_server": inspect.signature(tunecli.rpc.run_server).parameters["host"].default,
        "tunecli.rpc.Tracker": inspect.signature(tunecli.rpc.Tracker).parameters["host"].default,
        "tunecli.rpc.Server": inspect.signature(tunecli.rpc.Server).parameters["host"].default,
    }
    assert DEFAULT_HOST == "127.0.0.1"
    assert defaults == dict.fromkeys(defaults, DEFAULT_HOST)


def test_server_help_says_it_runs_the_code_clients_send(invoke: Invoke):
    text = " ".join(invoke("server", "--help").stdout.split())
    assert "A server runs native code that its clients send: only trusted clients may reach it." in text
    assert "pass --host 0.0.0.0 together with a token" in text
    assert "native code that its clients" in " ".join(README.read_text().split())


def cross_machine_recipe() -> list[str]:
    """The lines of the README's second ``sh`` block under "Distributed measurement"."""
    section = README.read_text().split("### Distributed measurement", 1)[1].split("\n## ", 1)[0]
    blocks = re.findall(r"```sh\n(.*?)```", section, re.S)
    lines = [line.split("#", 1)[0].strip() for line in blocks[1].splitlines()]
    return [line for line in lines if line]


def test_readme_cross_machine_recipe_works_as_written(invoke: Invoke, tmp_path: Path,
                                                      monkeypatch: pytest.MonkeyPatch):
    recipe = cross_machine_recipe()
    assert [shlex.split(line)[:2] for line in recipe] == [
        ["export", "TUNECLI_RPC_TOKEN=replace-with-your-secret"], ["tunecli", "tracker"],
        ["tunecli", "server"], ["tunecli", "query"]]
    assert all("--host" in line.split() for line in recipe[1:3])
    port = free_port()
    on_loopback = [shlex.split(line.replace("0.0.0.0", "127.0.0.1").replace("HOST", "127.0.0.1")
                               .replace("9190", str(port))) for line in recipe]
    name, value = on_loopback[0][1].split("=", 1)
    monkeypatch.setenv(name, value)
    procs = []
    try:
        for args in on_loopback[1:3]:
            procs.append(subprocess.Popen([str(TUNECLI), *args[1:]], stdout=subprocess.PIPE,
                                          stderr=subprocess.PIPE, text=True, env=dict(os.environ)))
            assert "listening on 127.0.0.1:" in procs[-1].stdout.readline()
        for _ in range(100):
            query = invoke(*on_loopback[3][1:])
            if "server:rk3399" in query.stdout:
                break
            time.sleep(0.1)
        assert query.exit_code == 0 and "server:rk3399" in query.stdout, query.output
        job = tmp_path / "rpc.yaml"
        job.write_text(f"name: rpc\nlog: {tmp_path / 'rpc.log'}\ntasks:\n  - template: tutorial/matmul\n"
                       "    args: [16, 16, 16]\ntuner: {kind: random, n_trial: 2, seed: 1}\nmeasure:\n"
                       f"  runner: {{kind: rpc, key: rk3399, tracker: '127.0.0.1:{port}', number: 1, "
                       "repeat: 1}\n")
        result = invoke("tune", str(job), "--json")
        assert result.exit_code == 0, result.output
        assert json.loads(result.stdout)["tasks"][0]["measured"] == 2
        monkeypatch.setenv(name, "not-" + value)           # the token is really in force
        assert invoke(*on_loopback[3][1:]).exit_code != 0
    finally:
        for proc in procs:
            proc.terminate()
            proc.communicate(timeout=10)


def test_server_warns_when_the_trackers_clients_cannot_reach_it():
    proc = subprocess.Popen([str(TUNECLI), "server", "--key", "k", "--tracker", "192.0.2.1:9190",
                             "--port", str(free_port())], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)
    try:
        line = proc.stderr.readline()
    finally:
        proc.terminate()
        proc.communicate(timeout=10)
    assert line.startswith("warning: server bound to 127.0.0.1 registers with the tracker at 192.0.2.1:9190")
    assert "bind 0.0.0.0 (with a token)" in line
