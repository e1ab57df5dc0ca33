"""The turn supervisor: a runner's whole process tree ends with its scheduler. ``PR_SET_PDEATHSIG``
reaches only its own process, so on Linux the command runner starts this stdlib-only script in the
run's group: a child subreaper that kills every descendant when the scheduler dies, passes SIGTERM,
SIGINT and SIGHUP to those that left the group and stops leftovers when the program ends. The argv
travels in :data:`ARGV_ENV`; the status pipe says ``E<errno>`` or ``L<count>``."""

from __future__ import annotations

import os
import sys
import time
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import signal
else:  # the C module: ``signal`` imports enum, which costs start-up time
    import _signal as signal


ARGV_ENV = "GOALSUI_SUPERVISED_ARGV"
_FORWARDED = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP)
_ORPHANED = signal.SIGUSR1  # the scheduler's death (PR_SET_PDEATHSIG)


def encode_argv(argv: list[str]) -> str:
    """``len:text`` for each element (an argument can hold any character but NUL)."""
    return "".join(f"{len(part)}:{part}" for part in argv)


def decode_argv(text: str) -> list[str]:
    out: list[str] = []
    pos = 0
    while pos < len(text):
        colon = text.index(":", pos)
        size = int(text[pos:colon])
        out.append(text[colon + 1 : colon + 1 + size])
        pos = colon + 1 + size
    return out


def _stat(pid: int) -> tuple[int, int] | None:
    """``(ppid, pgid)`` of a live process, None for a zombie or a process gone."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as fh:
            data = fh.read()
    except OSError:
        return None
    fields = data[data.rfind(b")") + 2 :].split()  # comm may hold spaces and ')'
    if len(fields) < 3 or fields[0] in (b"Z", b"X"):
        return None
    return int(fields[1]), int(fields[2])


def _children(pid: int) -> list[int] | None:
    """Children of ``pid`` from ``/proc/PID/task/*/children``; None where there is none."""
    try:
        tasks = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return []
    out: list[int] = []
    for tid in tasks:
        try:
            with open(f"/proc/{pid}/task/{tid}/children", "rb") as fh:
                out.extend(int(x) for x in fh.read().split())
        except FileNotFoundError:
            return None  # a kernel without CONFIG_PROC_CHILDREN
        except OSError:
            continue
    return out


def live_processes() -> dict[int, tuple[int, int]]:
    """``pid -> (ppid, pgid)`` of every live process, from a walk of all of ``/proc``."""
    rows = {int(name): _stat(int(name)) for name in os.listdir("/proc") if name.isdigit()}
    return {pid: row for pid, row in rows.items() if row is not None}


def descendants(root: int) -> list[tuple[int, int]]:
    """``(pid, pgid)`` of every live descendant of ``root`` (not ``root`` itself)."""
    table: dict[int, list[int]] | None = None
    found: list[tuple[int, int]] = []
    todo = [root]
    while todo:
        parent = todo.pop()
        kids = _children(parent) if table is None else table.get(parent, [])
        if kids is None:  # no children files: every live process by parent, once
            table = {}
            for pid, (ppid, _) in live_processes().items():
                table.setdefault(ppid, []).append(pid)
            kids = table.get(parent, [])
        for pid in kids:
            row = _stat(pid)
            if row is not None:
                found.append((pid, row[1]))
                todo.append(pid)
    return found


def _send(pids: list[int], sig: int) -> None:
    for pid in pids:
        try:  # noqa: SIM105 (contextlib is not imported: start-up time)
            os.kill(pid, sig)
        except (ProcessLookupError, PermissionError):
            pass


def _reap() -> None:
    """Reap every child that has ended (orphans adopted by a subreaper included)."""
    while True:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return


def kill_tree(root: int, *, rounds: int = 50, reap: bool = False) -> int:
    """SIGKILL ``root``'s descendants, rescanning up to ``rounds`` times; returns the count."""
    hit = 0
    for _ in range(rounds):
        pids = [pid for pid, _ in descendants(root)]
        if reap:
            _reap()
        if not pids:
            break
        hit += len(pids)
        _send(pids, signal.SIGKILL)
        time.sleep(0.005)
    return hit


class _Supervisor:
    def __init__(self, grace: float, status_fd: int) -> None:
        self.grace = grace
        self.status_fd = status_fd
        self.me = os.getpid()
        self.group = os.getpgid(0)

    def report(self, text: str) -> None:
        try:  # noqa: SIM105
            os.write(self.status_fd, text.encode())
        except OSError:
            pass

    def on_orphaned(self, signum: int, frame: object) -> None:
        kill_tree(self.me, reap=True)
        os._exit(128 + signal.SIGKILL)

    def on_forward(self, signum: int, frame: object) -> None:
        # The group got the signal from the scheduler; those who left it did not.
        _send([pid for pid, pgid in descendants(self.me) if pgid != self.group], signum)

    def start(self, argv: list[str]) -> int:
        blocked: set[int] = {*_FORWARDED, _ORPHANED}
        signal.pthread_sigmask(signal.SIG_BLOCK, blocked)
        os.set_inheritable(self.status_fd, False)  # the program never holds it
        pid = os.fork()
        if pid == 0:
            self.exec_program(argv, blocked)
        signal.pthread_sigmask(signal.SIG_UNBLOCK, blocked)
        return pid

    def exec_program(self, argv: list[str], blocked: set[int]) -> None:
        try:
            for sig in (*blocked, signal.SIGPIPE, signal.SIGXFSZ):
                signal.signal(sig, signal.SIG_DFL)
            signal.pthread_sigmask(signal.SIG_UNBLOCK, blocked)
            os.execvpe(argv[0], argv, os.environ)
        except OSError as exc:
            self.report(f"E{exc.errno or 0} ")
        finally:
            os._exit(127)

    def wait_program(self, pid: int) -> int:
        while True:
            try:
                done, status = os.waitpid(-1, 0)
            except ChildProcessError:  # cannot happen while the program is our child
                return 0
            if done == pid:
                return status

    def stop_leftovers(self) -> None:
        """SIGTERM what the program left behind, SIGKILL it after the grace period."""
        try:  # the usual case, no child left at all, costs one system call
            os.waitpid(-1, os.WNOHANG)  # (an orphan is ours once its parent ended)
        except ChildProcessError:
            return
        left = [pid for pid, _ in descendants(self.me)]
        _reap()
        if not left:
            return
        self.report(f"L{len(left)} ")
        _send(left, signal.SIGTERM)
        deadline = time.monotonic() + self.grace
        while time.monotonic() < deadline:
            _reap()
            if not descendants(self.me):
                return
            time.sleep(0.02)
        kill_tree(self.me, reap=True)


def _exit_like(status: int) -> None:
    if os.WIFEXITED(status):
        os._exit(os.WEXITSTATUS(status))
    sig = os.WTERMSIG(status) if os.WIFSIGNALED(status) else signal.SIGKILL
    try:
        import resource

        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))  # the program dumped, if anyone
        signal.signal(sig, signal.SIG_DFL)
        signal.pthread_sigmask(signal.SIG_UNBLOCK, {sig})
    except (OSError, ValueError):
        pass
    os.kill(os.getpid(), sig)
    os._exit(128 + sig)


def main(args: list[str]) -> None:
    parent, grace, status_fd = int(args[0]), float(args[1]), int(args[2])
    argv = decode_argv(os.environ.pop(ARGV_ENV, ""))
    sup = _Supervisor(grace, status_fd)
    signal.signal(_ORPHANED, sup.on_orphaned)
    for sig in _FORWARDED:
        signal.signal(sig, sup.on_forward)
    if os.getppid() != parent or not argv:  # the scheduler died before the handler was set
        os._exit(128 + signal.SIGKILL)
    pid = sup.start(argv)
    devnull = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):  # the pipes are the program's: EOF comes when it closes them
        os.dup2(devnull, fd)
    os.close(devnull)
    status = sup.wait_program(pid)
    sup.stop_leftovers()
    os.close(status_fd)
    _exit_like(status)


if __name__ == "__main__":
    main(sys.argv[1:])
