"""A warm tool-server host: ``python -m goalsui.cli.mcp_host SOCKET``.

The host imports the MCP SDK, the store and the tool server once, then listens on a
Unix socket in a private (0700) folder. For each connection from the same user
(checked with ``SO_PEERCRED``) it receives the caller's stdin, stdout and stderr, forks,
and the child runs the caller's ``goalsui`` command line on them with the caller's
working folder and environment, exactly as a cold ``goalsui mcp`` would. The child
reports its exit code back and ends when the caller goes away.

The host lives no longer than the scheduler that started it: it exits when its stdin
(a pipe from the scheduler) reaches end of file, and the scheduler also asks the kernel
to kill it when the scheduler's thread ends (see :mod:`goalsui.runners.mcp_host`).
It stays single-threaded, so forking it is safe.
"""

from __future__ import annotations

import contextlib
import json
import os
import select
import signal
import socket
import struct
import sys
import threading
from pathlib import Path
from typing import Any

from goalsui.mcp.handoff import PROTOCOL

__all__ = ["main", "preload"]

_PEERCRED = struct.Struct("3i")  # pid, uid, gid


#: Packages whose modules a session may import lazily (the store's migration scripts
#: excepted: importing them runs them).
_WARM_PACKAGES = ("goalsui.domain", "goalsui.service", "goalsui.mcp.tools")


def preload() -> None:
    """Import what a tool-server session needs, so that a forked child starts warm."""
    import importlib
    import pkgutil

    import anyio.to_thread  # noqa: F401 - imported for its side effect: a warm child
    import mcp.server.stdio  # noqa: F401

    import goalsui.cli
    import goalsui.cli.mcp
    import goalsui.mcp.scope
    import goalsui.mcp.server

    for name in _WARM_PACKAGES:
        package = importlib.import_module(name)
        for info in pkgutil.walk_packages(package.__path__, name + "."):
            if ".migrations" not in info.name:
                importlib.import_module(info.name)
    goalsui.cli.build_parser("mcp")


def warm_up(global_args: list[str]) -> None:
    """Set up one read-only session on the KB without serving it, then drop it.

    This loads what imports alone do not: mapper configuration, the SDK's logging
    set-up, the tool schemas' first builds. ``global_args`` are the command line's
    ``--kb``/``--state-dir`` options; a failure here is harmless (sessions start
    slower) and ignored.
    """
    from goalsui.cli import build_parser
    from goalsui.cli.common import open_service
    from goalsui.mcp.scope import operator_scope
    from goalsui.mcp.server import build_server

    with contextlib.suppress(Exception, SystemExit):
        args = build_parser("mcp").parse_args([*global_args, "mcp"])
        service = open_service(args, actor="agent", sync=False)
        try:
            build_server(service, operator_scope(service, None, None, None))
        finally:
            service.close()


def _peer_uid(conn: socket.socket) -> int:
    raw = conn.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, _PEERCRED.size)
    return int(_PEERCRED.unpack(raw)[1])


def _receive(conn: socket.socket) -> tuple[dict[str, Any], list[int]]:
    """The caller's request and its three descriptors; raises ValueError if malformed."""
    conn.settimeout(5.0)
    data, fds, _flags, _addr = socket.recv_fds(conn, 1 << 20, 3)
    while not data.endswith(b"\n"):
        more = conn.recv(1 << 16)
        if not more:
            break
        data += more
    request = json.loads(data)
    if len(fds) != 3:
        for fd in fds:
            os.close(fd)
        raise ValueError("expected three descriptors")
    if not isinstance(request, dict) or request.get("protocol") != PROTOCOL:
        raise ValueError("another protocol")
    if request.get("python") != sys.executable:
        raise ValueError("another interpreter")
    return request, fds


def _watch_caller(conn: socket.socket) -> None:
    """In the child: exit as soon as the caller's end of the connection closes."""

    def watch() -> None:
        with contextlib.suppress(OSError):
            while conn.recv(1):
                pass
        os._exit(143)

    threading.Thread(target=watch, name="goalsui-mcp-caller", daemon=True).start()


def _child(conn: socket.socket, request: dict[str, Any], fds: list[int]) -> None:
    """In the forked child: take over the caller's stdio and run its command line."""
    signal.signal(signal.SIGCHLD, signal.SIG_DFL)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    for target, fd in enumerate(fds):
        os.dup2(fd, target)
        os.close(fd)
    code = 1
    try:
        os.chdir(str(request["cwd"]))
        os.environ.clear()
        os.environ.update({str(k): str(v) for k, v in dict(request["env"]).items()})
        conn.settimeout(None)
        conn.sendall(b"ok\n")
        _watch_caller(conn)
        from goalsui.cli import main

        argv = [str(a) for a in request["argv"]]
        sys.argv = ["goalsui", *argv]
        code = main(argv)
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else 1
    except BaseException:  # noqa: BLE001 - the child must always report and exit
        code = 1
    finally:
        for stream in (sys.stdout, sys.stderr):
            with contextlib.suppress(Exception):
                stream.flush()
        with contextlib.suppress(OSError):
            conn.sendall(f"exit {code}\n".encode())
        os._exit(code)


def _serve_one(listener: socket.socket) -> None:
    """Accept one caller and fork its child; a bad caller is dropped, the host goes on."""
    conn, _ = listener.accept()
    try:
        if _peer_uid(conn) != os.getuid():
            raise ValueError("another user")
        request, fds = _receive(conn)
    except (OSError, ValueError):
        conn.close()
        return
    pid = os.fork()
    if pid == 0:
        listener.close()
        _child(conn, request, fds)
    for fd in fds:
        os.close(fd)
    conn.close()


def serve(path: Path, global_args: list[str]) -> int:
    """Listen on ``path`` until stdin ends (the scheduler went away) or SIGTERM."""
    signal.signal(signal.SIGCHLD, signal.SIG_IGN)  # children are reaped by the kernel
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    preload()
    warm_up(global_args)
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    with contextlib.suppress(FileNotFoundError):
        path.unlink()
    partial = path.with_name(path.name + ".new")
    with contextlib.suppress(FileNotFoundError):
        partial.unlink()
    listener.bind(str(partial))
    os.chmod(partial, 0o600)
    listener.listen(16)
    os.replace(partial, path)  # callers see the socket only once it accepts
    try:
        while True:
            ready, _, _ = select.select([listener, sys.stdin], [], [])
            if sys.stdin in ready and not os.read(sys.stdin.fileno(), 1):
                return 0
            if listener in ready:
                _serve_one(listener)
    finally:
        listener.close()
        with contextlib.suppress(FileNotFoundError):
            path.unlink()


def main(argv: list[str] | None = None) -> int:
    """``python -m goalsui.cli.mcp_host SOCKET [GLOBAL OPTIONS...]``."""
    args = sys.argv[1:] if argv is None else argv
    if not args:
        sys.stderr.write("usage: python -m goalsui.cli.mcp_host SOCKET [--kb KB --state-dir S]\n")
        return 2
    try:
        return serve(Path(args[0]), args[1:])
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    raise SystemExit(main())
