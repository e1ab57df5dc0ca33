"""The fast start of ``goalsui mcp``: hand the session to a warm tool-server host.

Importing the MCP SDK and the store takes a cold interpreter one to two seconds, and an
agent CLI waits for that before its first tool list. A scheduler therefore keeps one
warm host process (:mod:`goalsui.cli.mcp_host`) per KB and names its socket in the run's
MCP config (``GOALSUI_MCP_HOST``). ``goalsui mcp`` then connects, passes its own
stdin, stdout and stderr over the socket, and waits: the host forks a child that runs
the very same command line on those descriptors, already warm.

This module is imported before anything else of goalsui, so it uses the standard
library only. Any failure before the host confirms the hand-off returns None and the
command starts cold, as if no host existed: nothing has read stdin by then. After the
confirmation this process only waits for the child's exit code; if it is killed (an
agent that ends, a runner's process group killed) the child sees the connection close
and exits too. See docs/agents.md, "A warm tool server".
"""

from __future__ import annotations

import json
import os
import signal
import socket
import sys

__all__ = ["HOST_ENV", "PROTOCOL", "delegate", "read_line"]

#: The variable that names the host's socket (set by the scheduler in the MCP config).
HOST_ENV = "GOALSUI_MCP_HOST"
#: Bumped when the request or replies change; a host of another protocol is not used.
PROTOCOL = 1
_CONNECT_TIMEOUT = 2.0  # connect and the host's "ok" (a fork): seconds
_MAX_LINE = 1 << 16


def read_line(sock: socket.socket) -> bytes:
    """One ``\\n``-terminated line from ``sock`` (without it); b"" at end of stream."""
    chunks = bytearray()
    while not chunks.endswith(b"\n"):
        chunk = sock.recv(1)
        if not chunk:
            return b""
        chunks += chunk
        if len(chunks) > _MAX_LINE:
            raise OSError("line too long")
    return bytes(chunks[:-1])


def _request(argv: list[str]) -> bytes:
    body = {
        "protocol": PROTOCOL,
        "python": sys.executable,
        "argv": argv,
        "cwd": os.getcwd(),
        "env": {k: v for k, v in os.environ.items() if k != HOST_ENV},
    }
    return json.dumps(body).encode() + b"\n"


def delegate(argv: list[str]) -> int | None:
    """Run ``goalsui ARGV`` in the warm host named by ``GOALSUI_MCP_HOST``.

    Returns the command's exit code, or None when there is no usable host (the caller
    then runs the command itself).
    """
    path = os.environ.get(HOST_ENV)
    if not path:
        return None
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        sock.settimeout(_CONNECT_TIMEOUT)
        sock.connect(path)
        socket.send_fds(sock, [_request(argv)], [0, 1, 2])
        if read_line(sock) != b"ok":
            sock.close()
            return None
    except (OSError, ValueError):
        sock.close()
        return None
    # Committed: the child owns our stdio now. Ctrl-C or SIGTERM simply end this process,
    # which closes the connection and so ends the child.
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    sock.settimeout(None)
    try:
        reply = read_line(sock)
    except OSError:
        reply = b""
    finally:
        sock.close()
    word, _, code = reply.decode("ascii", "replace").partition(" ")
    return int(code) if word == "exit" and code.lstrip("-").isdigit() else 1
