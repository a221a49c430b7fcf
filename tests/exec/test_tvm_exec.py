"""The seed's RPC commands with ``tvm`` changed to ``tunecli``: ``python -m tunecli.exec.rpc_tracker``,
``rpc_server`` and ``query_rpc_tracker`` with TVM's options (real processes and sockets)."""

from __future__ import annotations

import subprocess
import sys

from tests.engine.rpc.cli_server import free_port


def python_m(module: str, *args: str) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", f"tunecli.exec.{module}", *args], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, stdin=subprocess.DEVNULL, text=True)


def test_the_seeds_tracker_server_and_query_commands_run_with_tvms_options() -> None:
    port, server_port = free_port(), free_port()
    tracker = python_m("rpc_tracker", "--host=127.0.0.1", f"--port={port}", f"--port-end={port + 1}",
                       "--silent")
    server = None
    try:
        assert tracker.stdout is not None
        assert tracker.stdout.readline().strip() == f"tracker listening on 127.0.0.1:{port}"
        server = python_m("rpc_server", f"--tracker=127.0.0.1:{port}", "--key=rk3399",
                          f"--port={server_port}", f"--port-end={server_port + 1}", "--no-fork")
        assert server.stdout is not None
        lines = [server.stdout.readline().strip() for _ in range(3)]
        assert lines[0] == f"server 'rk3399' listening on 127.0.0.1:{server_port}"
        assert lines[2] == f"registered with the tracker 127.0.0.1:{port} as 'rk3399'"
        query = subprocess.run([sys.executable, "-m", "tunecli.exec.query_rpc_tracker", "--host=127.0.0.1",
                                f"--port={port}"], capture_output=True, text=True, timeout=60)
        assert query.returncode == 0, query.stderr
        assert f"127.0.0.1:{server_port}    server:rk3399" in query.stdout
        assert "rk3399   1      1     0" in query.stdout
    finally:
        for proc in (server, tracker):
            if proc is not None:
                proc.terminate()
                proc.communicate(timeout=10)


def test_an_option_tunecli_does_not_offer_is_one_usage_error() -> None:
    out = subprocess.run([sys.executable, "-m", "tunecli.exec.rpc_server", "--key=k", "--load-library=x.so"],
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == 2
    assert out.stderr.strip() == ("python -m tunecli.exec.rpc_server: a device server loads the libraries "
                                  "its clients upload; --load-library is not supported")
    out = subprocess.run([sys.executable, "-m", "tunecli.exec.rpc_tracker", "--port=0"], capture_output=True,
                         text=True, timeout=60)
    assert out.returncode == 2 and "Invalid value for '--port'" in out.stderr
