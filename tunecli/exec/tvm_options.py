"""TVM's options of ``tvm.exec.rpc_tracker`` / ``rpc_server`` / ``query_rpc_tracker`` given to the
``tunecli`` command that does the same.

The options are the commands' own (``--host``, ``--port``, ``--port-end``, ``--tracker``,
``--key``, ``--custom-addr``), except that ``--silent`` and ``--no-fork`` are accepted and change
nothing (the commands print only their address and warnings; a server always runs kernels in a
worker process of its own), and ``--load-library`` is refused. Unlike TVM's, the tracker and the
server bind 127.0.0.1 unless given ``--host 0.0.0.0`` (then use a token, see ``tunecli server
--help``).
"""

from __future__ import annotations

import sys
from collections.abc import Sequence

from tunecli.commands import cli

#: TVM flags that change nothing here.
IGNORED_FLAGS = ("--silent", "--no-fork")
#: TVM options that tunecli does not offer, with why.
REFUSED = {"--load-library": "a device server loads the libraries its clients upload; "
                             "--load-library is not supported"}


def run_as(command: str, module: str, argv: Sequence[str] | None = None) -> None:
    """Run ``tunecli COMMAND`` with TVM's command-line ``argv`` (default: this process's) and exit
    (``--help`` shows the command's own help)."""
    args = list(sys.argv[1:] if argv is None else argv)
    prog = f"python -m tunecli.exec.{module}"
    for arg in args:
        name = arg.split("=", 1)[0]
        if name in REFUSED:
            print(f"{prog}: {REFUSED[name]}", file=sys.stderr)
            sys.exit(2)
    kept = [arg for arg in args if arg not in IGNORED_FLAGS]
    cli(args=[command, *kept], prog_name="tunecli")
