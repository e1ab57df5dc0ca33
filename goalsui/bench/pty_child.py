"""A child process in a 160x48 pseudo-terminal whose output is drained (bench helpers)."""

from __future__ import annotations

import contextlib
import os
import pty
import signal
import struct
import subprocess
import termios
import threading
import time
from collections.abc import Callable
from fcntl import ioctl

COLS, ROWS = 160, 48


class PtyChild:
    """``argv`` started in a pseudo-terminal of COLS x ROWS; the last output is kept."""

    def __init__(self, argv: list[str], env: dict[str, str]) -> None:
        self.argv = argv
        master, slave = pty.openpty()
        ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", ROWS, COLS, 0, 0))
        self._master = master
        self.tail = bytearray()
        self._reader = threading.Thread(target=self._drain, daemon=True)
        self._reader.start()
        full_env = {**os.environ, **env, "TERM": "xterm-256color"}
        full_env.update(COLUMNS=str(COLS), LINES=str(ROWS))
        if "PYTHONPYCACHEPREFIX" in env:
            full_env.pop("PYTHONDONTWRITEBYTECODE", None)
        self.started = time.time()
        self.process = subprocess.Popen(
            argv, stdin=slave, stdout=slave, stderr=slave, env=full_env, close_fds=True
        )
        os.close(slave)

    def _drain(self) -> None:
        with contextlib.suppress(OSError):  # the terminal closed
            while chunk := os.read(self._master, 65536):
                self.tail.extend(chunk)
                del self.tail[:-4000]

    def shown(self) -> str:
        return self.tail.decode("utf-8", "replace")[-1500:]

    def check_alive(self) -> None:
        if self.process.poll() is not None:
            raise RuntimeError(
                f"{' '.join(self.argv[:6])} exited ({self.process.returncode}):\n{self.shown()}"
            )

    def wait_for(self, done: Callable[[], bool], timeout: float, what: str) -> None:
        deadline = time.monotonic() + timeout
        while not done():
            self.check_alive()
            if time.monotonic() > deadline:
                raise RuntimeError(f"{' '.join(self.argv[2:5])} did not {what} in {timeout:.0f}s")
            time.sleep(0.05)

    def stop(self, sig: int = signal.SIGTERM) -> int:
        if self.process.poll() is None:
            self.process.send_signal(sig)
        code = self.process.wait(30)
        with contextlib.suppress(OSError):
            os.close(self._master)
        self._reader.join(2)
        return code
