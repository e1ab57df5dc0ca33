"""The command runner: one program per isolated turn, in its own process group. A timeout or a
cancel stops the whole tree (SIGTERM, then SIGKILL); on Linux the turn supervisor adopts its
orphans, so a ``kill -9`` of the scheduler leaves nothing running. A program that cannot start is a
failed result, never an exception."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import signal
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import timedelta
from io import FileIO
from pathlib import Path

from goalsui.domain.durations import format_duration
from goalsui.domain.states import RunStatus
from goalsui.domain.untrusted import plain
from goalsui.runners.lifeline import child_setup, supervisor_setup
from goalsui.runners.supervisor import ARGV_ENV, encode_argv, kill_tree, live_processes

log = logging.getLogger("goalsui.runners")
DEFAULT_GRACE = 5.0
KILL_WAIT = 5.0  # seconds to wait for a SIGKILLed group to disappear
MAX_RESULT_BYTES = 1024 * 1024  # stdout kept in memory as the result; the log has it all
TAIL_BYTES = 4096
_CHUNK = 64 * 1024
_PARTIAL_LIMIT = 4096  # a line longer than this is written before its newline arrives
_PIPE_DRAIN_AFTER_EXIT = 1.0  # seconds to wait for pipes after the program exited
_LEFTOVER_GRACE = 1.0  # seconds a finished run's leftover processes get after SIGTERM


@dataclass(frozen=True)
class CommandResult:
    """How a command ended."""

    status: str  # ok | failed | timeout | cancelled
    exit_code: int | None
    stdout: str
    reason: str | None = None
    output_tail: str = ""  # the last few KiB of stdout+stderr, as logged
    truncated: bool = False  # stdout was longer than MAX_RESULT_BYTES
    config_error: bool = False  # it could not start: the program was not found


def expand_argv(argv: Sequence[str]) -> list[str]:
    """The argv with the element ``{python}`` replaced by this interpreter."""
    return [sys.executable if part == "{python}" else str(part) for part in argv]


def build_env(extra: Mapping[str, str], *, strip: Sequence[str] = ()) -> dict[str, str]:
    """The child's environment: os.environ plus ``extra``, minus ``strip``."""
    env = {**os.environ, **{k: str(v) for k, v in extra.items()}}
    for name in strip:  # a secret never comes through ``extra`` either
        env.pop(name, None)
    return env


def format_timeout(seconds: float) -> str:
    """``10m``, ``1h30m``; sub-second timeouts as ``0.5s``."""
    return f"{seconds:.1f}s" if seconds < 1 else format_duration(timedelta(seconds=seconds))


def _not_started(program: str, exc: Exception, cwd: Path | None) -> CommandResult:
    """The failed result of a program that could not start; not found is a config error."""
    if not isinstance(exc, OSError):  # e.g. a NUL byte in an argument
        why = plain(str(exc), limit=120)
    elif cwd is not None and getattr(exc, "filename", None) == str(cwd):
        why = f"working directory {cwd} is not usable ({exc.strerror})"
    elif isinstance(exc, FileNotFoundError):
        why = "program not found"
    elif isinstance(exc, PermissionError):
        why = "permission denied"
    else:
        why = exc.strerror or type(exc).__name__
    reason = f"cannot start '{plain(program, limit=80)}': {why}"
    missing = why == "program not found"
    return CommandResult("failed", None, "", reason=reason, config_error=missing)


class _LogSink:
    """Serialises writes to the log file from both streams; file I/O runs off the loop."""

    def __init__(self, path: Path | None) -> None:
        self.path = path
        self.queue: asyncio.Queue[bytes | None] = asyncio.Queue()
        self.tail = bytearray()
        self._fh: FileIO | None = None
        self._task: asyncio.Task[None] | None = None

    async def open(self, header: str) -> None:
        if self.path is not None:
            await asyncio.to_thread(self.path.parent.mkdir, parents=True, exist_ok=True)
            self._fh = await asyncio.to_thread(self.path.open, "ab", buffering=0)
        self._task = asyncio.create_task(self._run())
        self.put(header.encode("utf-8", "replace"), keep_tail=False)

    def put(self, data: bytes, *, keep_tail: bool = True) -> None:
        if not data:
            return
        if keep_tail:
            self.tail.extend(data)
            if len(self.tail) > TAIL_BYTES * 2:
                del self.tail[: len(self.tail) - TAIL_BYTES]
        self.queue.put_nowait(data)

    def note(self, text: str) -> None:
        """A line of goalsui's own in the log (never in the output tail)."""
        self.put(f"[goalsui] {text}\n".encode("utf-8", "replace"), keep_tail=False)

    async def _run(self) -> None:
        parts: list[bytes | None] = []
        while None not in parts:  # None, queued by close(), is the last item
            parts = [await self.queue.get()]
            while not self.queue.empty():  # what is already queued goes in the same write
                parts.append(self.queue.get_nowait())
            if self._fh is not None:
                # A full disk must not kill the run; the result still arrives.
                with contextlib.suppress(OSError):
                    await asyncio.to_thread(self._fh.write, b"".join(p for p in parts if p))

    async def close(self, footer: str) -> None:
        self.note(footer)
        self.queue.put_nowait(None)
        if self._task is not None:
            await self._task
        if self._fh is not None:
            await asyncio.to_thread(self._fh.close)


async def _pump(
    stream: asyncio.StreamReader,
    sink: _LogSink,
    *,
    prefix: bytes = b"",
    keep: bytearray | None = None,
    last_line: list[bytes] | None = None,
) -> bool:
    """Copy a pipe to the log, whole lines at a time; returns True when over the keep limit."""
    pending = b""
    over = False
    while chunk := await stream.read(_CHUNK):
        if keep is not None:
            room = MAX_RESULT_BYTES - len(keep)
            if room > 0:
                keep.extend(chunk[:room])
            if len(chunk) > room:
                over = True
        pending += chunk
        if b"\n" in pending:
            head, _, pending = pending.rpartition(b"\n")
            lines = head.split(b"\n")
            if last_line is not None and (nonblank := [ln for ln in lines if ln.strip()]):
                last_line[:] = [nonblank[-1]]
            sink.put(b"".join(prefix + ln + b"\n" for ln in lines))
        if len(pending) > _PARTIAL_LIMIT:
            sink.put(prefix + pending + b"\n")
            pending = b""
    if pending:
        if last_line is not None and pending.strip():
            last_line[:] = [pending]
        sink.put(prefix + pending + b"\n")
    return over


def _group_alive(pgid: int) -> bool:
    """True while a process of group ``pgid`` is alive (zombies awaiting a reaper are not)."""
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    if not os.path.isdir("/proc"):
        return True
    return any(pgid == group for _, group in live_processes().values())


class _ExitAwareProtocol(asyncio.subprocess.SubprocessStreamProtocol):
    """Signals the program's exit at once (``Process.wait`` also waits for the pipes)."""

    def __init__(self, limit: int, loop: asyncio.AbstractEventLoop) -> None:
        super().__init__(limit=limit, loop=loop)
        self.exited = asyncio.Event()

    def process_exited(self) -> None:
        super().process_exited()
        self.exited.set()


_SUPERVISOR = str(Path(__file__).with_name("supervisor.py"))


async def _start(
    args: list[str], cwd: Path | None, env: Mapping[str, str] | None, sink: _LogSink
) -> tuple[asyncio.subprocess.Process, asyncio.Event, int | None] | CommandResult:
    """Start ``args`` in a new session, on Linux under the turn supervisor; a failed result
    (logged and the log closed) when it cannot start."""
    loop = asyncio.get_running_loop()
    status_r: int | None = None
    pass_fds: tuple[int, ...] = ()
    spawned, preexec = args, child_setup()
    supervisor = supervisor_setup()
    if supervisor is not None and os.path.isdir("/proc"):  # the program's argv goes in its env
        preexec = supervisor
        env = {**(os.environ if env is None else env), ARGV_ENV: encode_argv(args)}
        status_r, status_w = os.pipe()
        os.set_blocking(status_r, False)
        head = [sys.executable, "-I", "-S", _SUPERVISOR, str(os.getpid()), str(_LEFTOVER_GRACE)]
        spawned = [*head, str(status_w)]
        pass_fds = (status_w,)
    try:
        transport, protocol = await loop.subprocess_exec(
            lambda: _ExitAwareProtocol(limit=_CHUNK, loop=loop),
            *spawned,
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            start_new_session=True,
            preexec_fn=preexec,
            pass_fds=pass_fds,
            cwd=str(cwd) if cwd is not None else None,  # an OSError names it as text
            env=env,
        )
    except BaseException as exc:
        if status_r is not None:
            os.close(status_r)
        if not isinstance(exc, OSError | ValueError | TypeError):
            raise
        failed = _not_started(args[0], exc, cwd)
        await sink.close(failed.reason or "")
        return failed
    finally:
        for fd in pass_fds:
            os.close(fd)
    return asyncio.subprocess.Process(transport, protocol, loop), protocol.exited, status_r


def _read_status(fd: int | None) -> tuple[int | None, int]:
    """The supervisor's report: (errno of a failed exec or None, leftovers it stopped)."""
    if fd is None:
        return None, 0
    data = b""
    try:
        while chunk := os.read(fd, 4096):
            data += chunk
    except OSError:  # nothing more (EAGAIN): its writers may still be alive
        pass
    finally:
        os.close(fd)
    failed: int | None = None
    left = 0
    for token in data.decode("ascii", "replace").split():
        with contextlib.suppress(ValueError):
            if token.startswith("E"):
                failed = int(token[1:])
            elif token.startswith("L"):
                left += int(token[1:])
    return failed, left


async def _stop_group(
    proc: asyncio.subprocess.Process, exited: asyncio.Event, grace: float, sink: _LogSink
) -> None:
    """SIGTERM the process group, then SIGKILL whatever is left after ``grace`` seconds."""
    pgid = proc.pid  # start_new_session: the leader's pid is the group id
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, signal.SIGTERM)
    deadline = time.monotonic() + grace
    while time.monotonic() < deadline:
        if not exited.is_set():
            with contextlib.suppress(asyncio.TimeoutError):
                await asyncio.wait_for(exited.wait(), timeout=max(0.0, deadline - time.monotonic()))
            continue
        if not _group_alive(pgid):
            return
        await asyncio.sleep(0.02)  # members of the group other than the leader
    if not exited.is_set() or _group_alive(pgid):
        sink.note(f"still running after {grace:g}s grace: SIGKILL")
        # Every descendant first (those that left the group included: the supervisor
        # keeps them in its tree while it lives), then the group.
        await asyncio.to_thread(kill_tree, pgid)
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(pgid, signal.SIGKILL)
    await exited.wait()
    # SIGKILL is delivered asynchronously: return once every member is really gone.
    deadline = time.monotonic() + KILL_WAIT
    while _group_alive(pgid) and time.monotonic() < deadline:
        await asyncio.sleep(0.01)


async def _stop_leftovers(
    proc: asyncio.subprocess.Process, exited: asyncio.Event, sink: _LogSink
) -> None:
    """After the program exited: stop what it left running in its process group."""
    try:
        os.killpg(proc.pid, 0)  # the usual case, an empty group, costs one system call
    except ProcessLookupError:
        return
    except PermissionError:
        pass
    if await asyncio.to_thread(_group_alive, proc.pid):
        sink.note("the run ended; stopping the processes it left in its group")
        await _stop_group(proc, exited, _LEFTOVER_GRACE, sink)


async def _feed_stdin(proc: asyncio.subprocess.Process, data: bytes) -> None:
    assert proc.stdin is not None
    try:
        if data:
            proc.stdin.write(data)
            await proc.stdin.drain()
    except (BrokenPipeError, ConnectionResetError):
        pass  # the program does not read its stdin: fine
    finally:
        with contextlib.suppress(BrokenPipeError, ConnectionResetError, RuntimeError):
            proc.stdin.close()


async def run_command(
    argv: Sequence[str],
    *,
    stdin: str = "",
    cwd: Path | None = None,
    env: Mapping[str, str] | None = None,
    timeout: float | None = None,
    cancel: asyncio.Event | None = None,
    log_path: Path | None = None,
    grace: float = DEFAULT_GRACE,
    log_header: str = "",
    on_spawn: Callable[[int], None] | None = None,
) -> CommandResult:
    """Run ``argv`` in a new process group and return how it ended (never raises OSError). A
    cancelled caller stops the group the same way before the cancellation propagates; ``on_spawn``
    gets the group id at start."""
    args = expand_argv(argv)
    refused = _refuse_start(args, cwd)
    if refused is not None:
        return refused
    sink = _LogSink(log_path)
    await sink.open(log_header or f"[goalsui] $ {' '.join(args)}\n")
    started = time.monotonic()
    spawned = await _start(args, cwd, env, sink)
    if isinstance(spawned, CommandResult):
        return spawned
    proc, exited, status_fd = spawned
    if on_spawn is not None:
        try:
            on_spawn(proc.pid)
        except Exception:  # the run goes on; recovery just knows less
            log.exception("on_spawn callback failed for process group %s", proc.pid)
    running = _Running(proc, exited, stdin, sink)
    try:
        ended_by = await _supervise(running, sink, timeout=timeout, cancel=cancel, grace=grace)
    finally:
        exec_errno, leftovers = _read_status(status_fd)
    if exec_errno is not None:  # the supervisor could not start the program
        with contextlib.suppress(Exception):
            await asyncio.wait_for(proc.wait(), timeout=_PIPE_DRAIN_AFTER_EXIT)
        failure = OSError(exec_errno, os.strerror(exec_errno), args[0])
        failed = _not_started(args[0], failure, None)
        await sink.close(failed.reason or "")
        return failed
    if leftovers:
        sink.note("the run ended; stopping the processes it left behind")
    out_task = running.out_task
    over = out_task.result() if out_task.done() and not out_task.cancelled() else False
    with contextlib.suppress(Exception):
        await asyncio.wait_for(proc.wait(), timeout=_PIPE_DRAIN_AFTER_EXIT)  # close the transport
    code = proc.returncode
    elapsed = time.monotonic() - started
    stdout = bytes(running.kept).decode("utf-8", "replace")
    status, reason = _ending(ended_by, code, timeout, running.last_err)
    await sink.close(
        f"{status}{' (' + reason + ')' if reason else ''}, exit {code}, {elapsed:.2f}s"
    )
    return CommandResult(
        status=status,
        exit_code=code,
        stdout=stdout,
        reason=reason,
        output_tail=bytes(sink.tail[-TAIL_BYTES:]).decode("utf-8", "replace"),
        truncated=over,
    )


def _refuse_start(args: list[str], cwd: Path | None) -> CommandResult | None:
    """A failed result for a command that cannot even be tried (no argv, no cwd)."""
    if not args:
        reason = "cannot start: the runner command is empty"
    elif cwd is not None and not Path(cwd).is_dir():
        reason = (
            f"cannot start '{plain(args[0], limit=80)}': working directory {cwd} does not exist"
        )
    else:
        return None
    return CommandResult("failed", None, "", reason=reason)


class _Running:
    """A started program and the tasks feeding its stdin and draining its pipes."""

    def __init__(
        self, proc: asyncio.subprocess.Process, exited: asyncio.Event, stdin: str, sink: _LogSink
    ) -> None:
        assert proc.stdout is not None and proc.stderr is not None
        self.proc, self.exited = proc, exited
        self.kept = bytearray()  # stdout, up to MAX_RESULT_BYTES
        self.last_err: list[bytes] = []  # the last non-blank stderr line
        self.feeder = asyncio.create_task(_feed_stdin(proc, stdin.encode("utf-8", "replace")))
        self.out_task = asyncio.create_task(_pump(proc.stdout, sink, keep=self.kept))
        stderr = _pump(proc.stderr, sink, prefix=b"[stderr] ", last_line=self.last_err)
        self.err_task = asyncio.create_task(stderr)


async def _supervise(
    running: _Running,
    sink: _LogSink,
    *,
    timeout: float | None,
    cancel: asyncio.Event | None,
    grace: float,
) -> str | None:
    """Wait for the program to end (stopping its group on timeout or cancel), drain its pipes and
    stop what it left behind; returns ``timeout``, ``cancelled`` or None. A cancelled caller stops
    the tree first: it is never left running."""
    proc, exited = running.proc, running.exited
    wait_task = asyncio.create_task(exited.wait())
    cancel_task = asyncio.create_task(cancel.wait()) if cancel is not None else None
    ended_by: str | None = None
    try:
        waiters = {wait_task} | ({cancel_task} if cancel_task else set())
        done, _ = await asyncio.wait(waiters, timeout=timeout, return_when=asyncio.FIRST_COMPLETED)
        if wait_task not in done:  # a timeout or a cancel: stop the group, say which it was
            cancelled = cancel_task is not None and cancel_task in done
            ended_by = RunStatus.CANCELLED if cancelled else RunStatus.TIMEOUT
            late = f"timed out after {format_timeout(timeout or 0)}"
            sink.note(f"{'cancel requested' if cancelled else late}: SIGTERM to the process group")
            await _stop_group(proc, exited, grace, sink)
        await _drain_pipes(running, sink, grace)
        await _stop_leftovers(proc, exited, sink)
    except BaseException:
        await asyncio.shield(_stop_group(proc, exited, grace, sink))
        for leftover in (running.out_task, running.err_task, running.feeder):
            leftover.cancel()
        await sink.close("runner task cancelled")
        raise
    finally:
        if cancel_task is not None:
            cancel_task.cancel()
        if not running.feeder.done():
            running.feeder.cancel()
        with contextlib.suppress(BaseException):
            await running.feeder
    return ended_by


async def _drain_pipes(running: _Running, sink: _LogSink, grace: float) -> None:
    """After exit: stop what holds the pipes open, then give up a pipe still open."""
    pipes = {running.out_task, running.err_task}
    _, pending = await asyncio.wait(pipes, timeout=_PIPE_DRAIN_AFTER_EXIT)
    if not pending:
        return
    sink.note("processes left behind still hold the output: stopping them")
    await _stop_group(running.proc, running.exited, min(grace, 1.0), sink)
    _, pending = await asyncio.wait(pending, timeout=_PIPE_DRAIN_AFTER_EXIT)
    for task in pending:
        task.cancel()


def _ending(
    ended_by: str | None, code: int | None, timeout: float | None, last_err: list[bytes]
) -> tuple[str, str | None]:
    """The result's status and reason, from what ended the run and its exit code."""
    if ended_by == RunStatus.TIMEOUT:
        return "timeout", f"timed out after {format_timeout(timeout or 0)}"
    if ended_by == RunStatus.CANCELLED:
        return "cancelled", "cancelled by the operator"
    if code == 0:
        return "ok", None
    if code is not None and code < 0:
        try:
            name = signal.Signals(-code).name
        except ValueError:
            name = f"signal {-code}"
        reason = f"killed by {name}"
    else:
        reason = f"exit {code}"
    if last_err:
        line = plain(last_err[-1].decode("utf-8", "replace").strip(), limit=200)
        reason += f": {line}"
    return "failed", reason
