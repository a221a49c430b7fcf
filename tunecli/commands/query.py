"""``tunecli query``: show a tracker's servers and queues (TVM's ``query_rpc_tracker``)."""

from __future__ import annotations

import click

from tunecli.commands.app import App, host_port, option_hint
from tunecli.engine.rpc.client import query_tracker
from tunecli.engine.rpc.protocol import AuthenticationError


@click.command()
@click.option("--tracker", "tracker_addr", callback=host_port, metavar="HOST:PORT",
              help="The tracker to ask (instead of --host and --port).")
@click.option("--host", default="127.0.0.1", show_default=True, help="The tracker's host (TVM's option).")
@click.option("--port", default=9190, show_default=True, type=click.IntRange(1, 65535),
              help="The tracker's port (TVM's option).")
@click.option("--token", envvar="TUNECLI_RPC_TOKEN", default=None,
              help="Shared secret of the tracker [env: TUNECLI_RPC_TOKEN].")
@click.pass_obj
def query(app: App, tracker_addr: tuple[str, int] | None, host: str, port: int, token: str | None) -> None:
    """Print the servers registered with a tracker and the pending requests per key."""
    host, port = tracker_addr or (host, port)
    with option_hint(AuthenticationError, "--token"):
        app.echo(query_tracker(host, port, token))
