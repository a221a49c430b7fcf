"""``tunecli server``: run a device server (TVM's ``python -m tvm.exec.rpc_server``)."""

from __future__ import annotations

import click

from tunecli.commands.app import App, host_port, option_hint
from tunecli.engine.rpc.connections import DEFAULT_HOST
from tunecli.engine.rpc.protocol import AuthenticationError
from tunecli.engine.rpc.server import run_server


@click.command()
@click.option("--tracker", "tracker_addr", callback=host_port, metavar="HOST:PORT",
              help="Tracker to register with; without it clients connect with the plain key.")
@click.option("--key", default="", help="Device key clients ask the tracker for, e.g. rk3399 (needed with "
              "--tracker; without one, clients connect with this key, by default none).")
@click.option("--host", default=DEFAULT_HOST, show_default=True,
              help="Address to bind; 0.0.0.0 serves other machines (use a token then).")
@click.option("--port", default=9090, show_default=True, type=click.IntRange(1, 65535),
              help="First port to try.")
@click.option("--port-end", default=9199, show_default=True, type=click.IntRange(1, 65536),
              help="Ports up to (not including) this one are tried in turn.")
@click.option("--custom-addr", default=None, help="Address announced to the tracker (behind NAT).")
@click.option("--token", envvar="TUNECLI_RPC_TOKEN", default=None,
              help="Shared secret of the tracker and the clients [env: TUNECLI_RPC_TOKEN].")
@click.pass_obj
def server(app: App, tracker_addr: tuple[str, int] | None, key: str, host: str, port: int, port_end: int,
           custom_addr: str | None, token: str | None) -> None:
    """Run a device server that measures kernels for tuning jobs, until Ctrl-C.

    \b
    A server runs native code that its clients send: only trusted clients
    may reach it. It binds 127.0.0.1 by default; to serve other machines
    pass --host 0.0.0.0 together with a token (TUNECLI_RPC_TOKEN, the same
    for tracker, servers and tuners) and keep the port behind a firewall.
    """
    if tracker_addr is not None and not key:
        raise click.UsageError("--tracker needs --key: the device key clients ask the tracker for, "
                               "e.g. rk3399")
    with option_hint(AuthenticationError, "--token"):
        run_server(tracker_addr, key, host=host, port=port, port_end=max(port_end, port + 1), token=token,
                   custom_addr=custom_addr,
                   on_ready=lambda h, p: app.echo(f"server {key!r} listening on {h}:{p}" if key else
                                                  f"server listening on {h}:{p} (no key: clients give none)"),
                   on_device=lambda device: app.echo(f"serving {device.describe()}"),
                   on_registered=lambda again: app.echo(registered_line(tracker_addr, key, again)))


def registered_line(tracker_addr: tuple[str, int] | None, key: str, again: bool) -> str:
    """What the server prints when the tracker has taken it (clients can ask for it from then)."""
    host, port = tracker_addr or ("", 0)
    return f"registered with the tracker {host}:{port} as {key!r}{' again' if again else ''}"
