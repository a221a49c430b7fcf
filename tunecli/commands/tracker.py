"""``tunecli tracker``: run an RPC tracker (TVM's ``python -m tvm.exec.rpc_tracker``)."""

from __future__ import annotations

import click

from tunecli.commands.app import App
from tunecli.engine.rpc.connections import DEFAULT_HOST
from tunecli.engine.rpc.tracker import run_tracker


@click.command()
@click.option("--host", default=DEFAULT_HOST, show_default=True,
              help="Address to bind; 0.0.0.0 accepts other machines (use a token then).")
@click.option("--port", default=9190, show_default=True, type=click.IntRange(1, 65535),
              help="First port to try.")
@click.option("--port-end", default=9199, show_default=True, type=click.IntRange(1, 65536),
              help="Ports up to (not including) this one are tried in turn.")
@click.option("--token", envvar="TUNECLI_RPC_TOKEN", default=None,
              help="Shared secret servers and clients must present [env: TUNECLI_RPC_TOKEN].")
@click.pass_obj
def tracker(app: App, host: str, port: int, port_end: int, token: str | None) -> None:
    """Run an RPC tracker in the foreground until Ctrl-C.

    Device servers register with it (``tunecli server``); tuning jobs with an rpc runner
    ask it for a device; ``tunecli query`` shows what it holds. It binds 127.0.0.1 by
    default (TVM's tracker binds 0.0.0.0); for devices on other machines pass --host 0.0.0.0
    together with a token.
    """
    run_tracker(host=host, port=port, port_end=max(port_end, port + 1), token=token,
                on_ready=lambda h, p: app.echo(f"tracker listening on {h}:{p}"))
