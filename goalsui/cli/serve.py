"""``goalsui serve``: watching consoles in a browser beside one ``goalsui daemon``; not on another
address than 127.0.0.1 without ``GOALSUI_SERVE_TOKEN``."""

from __future__ import annotations

import argparse
import contextlib
import fcntl
import os
import secrets
import shlex
import signal
import subprocess
import sys
from pathlib import Path
from typing import IO

from goalsui.bench import goalsui_argv
from goalsui.cli.common import (
    Subparsers,
    add_flags,
    check_ranges,
    command,
    db_settings,
    open_service,
)
from goalsui.errors import ValidationError
from goalsui.hooks.net import is_loopback

LOCK_NAME = "serve-scheduler.lock"
STOP_GRACE_S = 30


def register(sub: Subparsers) -> None:
    about = "serve the console in a browser (textual-serve; a token guards it)"
    p = command(sub, "serve", cmd_serve, about, json=False)
    p.add_argument("--host", default="127.0.0.1", help="address to listen on (default 127.0.0.1)")
    p.add_argument("--port", type=int, default=8000, help="port (default 8000)")
    p.add_argument("--public-url", help="the URL browsers use, when behind a proxy")
    add_flags(p, read_only="served consoles bind no action that changes state")
    p.add_argument("--theme", help="theme of the served consoles")
    add_flags(p, no_daemon="start no scheduler (one runs elsewhere: 'goalsui daemon' or a console)")


def acquire_lock(path: Path) -> IO[str] | None:
    """Hold an exclusive lock on ``path`` for this process's life; None when taken."""
    path.parent.mkdir(parents=True, exist_ok=True)
    handle = path.open("a+", encoding="utf-8")
    try:
        fcntl.flock(handle.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        handle.close()
        return None
    handle.seek(0)
    handle.truncate()
    handle.write(f"{os.getpid()}\n")
    handle.flush()
    return handle


def _check(args: argparse.Namespace) -> str | None:
    """Validate the options; returns the operator's token (``GOALSUI_SERVE_TOKEN``) if set."""
    from goalsui.cli.serve_auth import MIN_TOKEN_CHARS, TOKEN_ENV

    check_ranges(("--port", args.port, 1, 65535))
    token = os.environ.get(TOKEN_ENV) or None
    if token is not None and (len(token) < MIN_TOKEN_CHARS or not token.isprintable()):
        raise ValidationError(
            f"{TOKEN_ENV} must be at least {MIN_TOKEN_CHARS} printable characters"
        )
    if token is None and not is_loopback(args.host):
        raise ValidationError(
            f"refusing to serve on {args.host} without a token: set {TOKEN_ENV} "
            "(or keep the default --host 127.0.0.1)"
        )
    return token


def start_daemon(args: argparse.Namespace, kb: Path, state_dir: Path) -> subprocess.Popen[bytes]:
    argv = goalsui_argv(kb, state_dir, "daemon", db=db_settings(args)[0])
    log = (state_dir / "serve-daemon.log").open("ab")
    return subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)


def stop_daemon(process: subprocess.Popen[bytes]) -> None:
    """SIGTERM (the daemon gives running runs their grace period), then SIGKILL."""
    if process.poll() is not None:
        return
    process.send_signal(signal.SIGTERM)
    try:
        process.wait(STOP_GRACE_S)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()


def cmd_serve(args: argparse.Namespace) -> int:
    chosen = _check(args)
    from textual_serve.server import Server

    from goalsui.cli.serve_auth import TOKEN_ENV, with_token

    token = chosen or secrets.token_urlsafe(24)  # 32 URL-safe characters
    os.environ.pop(TOKEN_ENV, None)  # not inherited by the daemon, consoles or runners
    # opening the service checks the KB and creates the schema before anything is served
    with contextlib.closing(open_service(args, actor="operator")) as service:
        kb, state_dir = service.kb.root, service.state_dir
    # what textual-serve runs for each browser tab: a watch-only console
    console = goalsui_argv(kb, state_dir, "console", "--no-scheduler", db=db_settings(args)[0])
    console += ["--read-only"] if args.read_only else []
    command = shlex.join(console + (["--theme", args.theme] if args.theme else []))
    with contextlib.ExitStack() as stack:  # on the way out: the daemon stops, then the lock goes
        if args.no_daemon:
            print(
                "goalsui serve: no scheduler started (--no-daemon); run 'goalsui daemon' somewhere"
            )
        elif (lock := acquire_lock(state_dir / LOCK_NAME)) is None:
            print(
                "goalsui serve: a scheduler for this KB already runs beside another 'goalsui serve'"
            )
        else:
            stack.enter_context(lock)
            daemon = start_daemon(args, kb, state_dir)
            stack.callback(stop_daemon, daemon)
            print(f"goalsui serve: scheduler running (goalsui daemon, pid {daemon.pid})")
        if not is_loopback(args.host):
            print(
                f"goalsui serve: WARNING: listening on {args.host} over plain HTTP: "
                "put a TLS proxy in front, or the token can be read on the way",
                file=sys.stderr,
            )
        url = args.public_url or f"http://{args.host}:{args.port}"
        shown = "?token=<GOALSUI_SERVE_TOKEN>" if chosen else f"?token={token}"
        print(
            f"goalsui serve: open {url}/{shown} (each tab is a watch-only console; Ctrl+C stops)",
            flush=True,
        )
        server = with_token(Server, token)(
            command, host=args.host, port=args.port, title="goalsui", public_url=args.public_url
        )
        server.serve()
    return 0
