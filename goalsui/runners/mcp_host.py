"""The warm tool-server host a scheduler keeps for its agents' ``goalsui mcp`` sessions.

:class:`McpHost` starts ``python -m goalsui.cli.mcp_host SOCKET`` the first time a turn
needs an MCP config, and the run's config then names the socket (``GOALSUI_MCP_HOST``).
The first session may still start cold (the host is importing); later ones start warm.
See :mod:`goalsui.mcp.handoff` for the hand-off and docs/agents.md, "A warm tool server".

The host dies with whoever started it: its stdin is a pipe from this process (end of
file stops it), and ``PR_SET_PDEATHSIG`` kills it when the starting thread ends.
:meth:`McpHost.stop` ends it explicitly; a scheduler calls it when it stops.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import sys
import tempfile
import time
import weakref
from pathlib import Path
from typing import Any

from goalsui.runners.lifeline import child_setup
from goalsui.runners.presets import McpLaunch

__all__ = ["WARM_ENV", "McpHost", "host_for", "stop_host", "warm_host_enabled"]

#: ``GOALSUI_MCP_WARM=0`` turns the warm host off (every session starts cold): for
#: machines short of memory, and for test suites whose schedulers live a second.
WARM_ENV = "GOALSUI_MCP_WARM"

_RESTART_AFTER = 30.0  # seconds between attempts to restart a host that died


class McpHost:
    """One warm host process and its private socket folder (started on demand)."""

    def __init__(self) -> None:
        self._proc: subprocess.Popen[bytes] | None = None
        self._folder: Path | None = None
        self._started_at = 0.0

    @property
    def socket(self) -> Path | None:
        """The socket path callers should try, or None when there is no host."""
        return self._folder / "host.sock" if self._folder is not None else None

    @property
    def pid(self) -> int | None:
        return self._proc.pid if self._proc is not None else None

    def ensure(self, launch: McpLaunch | None = None) -> Path | None:
        """Start the host unless it runs; returns its socket path (maybe not ready yet).

        ``launch`` (a run's ``goalsui mcp`` command) names the KB, state folder and
        database the host warms itself up on.
        """
        proc = self._proc
        if proc is not None and proc.poll() is None:
            return self.socket
        if proc is not None and time.monotonic() - self._started_at < _RESTART_AFTER:
            return None  # it died recently: sessions start cold for a while
        self.stop()
        try:
            # a short private path: AF_UNIX paths are limited to about 100 bytes
            self._folder = Path(tempfile.mkdtemp(prefix="goalsui-mcp-"))
            socket = self._folder / "host.sock"
            argv = [sys.executable, "-m", "goalsui.cli.mcp_host", str(socket)]
            env = None
            if launch is not None:
                argv += _global_options(launch.args)
                env = {**os.environ, **launch.env}
            self._proc = subprocess.Popen(
                argv,
                env=env,
                stdin=subprocess.PIPE,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                preexec_fn=child_setup(),
                close_fds=True,
            )
        except OSError:
            self.stop()
            return None
        self._started_at = time.monotonic()
        return socket

    def ready(self, timeout: float = 10.0) -> bool:
        """Wait until the socket exists (for benches and tests); False on timeout."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            path = self.socket
            if path is not None and path.exists():
                return True
            if self._proc is None or self._proc.poll() is not None:
                return False
            time.sleep(0.02)
        return False

    def stop(self) -> None:
        """End the host (closing its stdin; SIGKILL if it lingers) and remove its folder."""
        proc, self._proc = self._proc, None
        if proc is not None:
            if proc.stdin is not None:
                with contextlib.suppress(OSError):
                    proc.stdin.close()
            try:
                proc.wait(timeout=2.0)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        folder, self._folder = self._folder, None
        if folder is not None:
            shutil.rmtree(folder, ignore_errors=True)


def _global_options(args: tuple[str, ...]) -> list[str]:
    """The ``--kb``/``--state-dir`` options of ``-m goalsui [OPTIONS] mcp ...``."""
    options = list(args[2:]) if args[:2] == ("-m", "goalsui") else []
    return options[: options.index("mcp")] if "mcp" in options else []


def warm_host_enabled() -> bool:
    """Whether schedulers keep a warm host (``GOALSUI_MCP_WARM`` is not ``0``)."""
    return os.environ.get(WARM_ENV, "1").strip() != "0"


_HOSTS: weakref.WeakKeyDictionary[Any, McpHost] = weakref.WeakKeyDictionary()


def host_for(owner: Any) -> McpHost:
    """The host kept for ``owner`` (a service), created on first use, ended with it."""
    host = _HOSTS.get(owner)
    if host is None:
        host = _HOSTS[owner] = McpHost()
        weakref.finalize(owner, host.stop)
    return host


def stop_host(owner: Any) -> None:
    """End ``owner``'s host, if it has one (a scheduler that stops calls this)."""
    host = _HOSTS.pop(owner, None)
    if host is not None:
        host.stop()
