"""A throwaway PostgreSQL server for the test suite (standard library only).

Used by ``scripts/test.sh`` (one server for the whole run) and importable from tests.

As a script::

    python tests/pgserver.py find            # prints "<bindir> <version>", exit 1 if none
    python tests/pgserver.py start DIR       # prints the SQLAlchemy URL of database goalsui_test
    python tests/pgserver.py stop DIR        # stops the server and deletes DIR
    python tests/pgserver.py stop DIR --keep # stops the server, keeps DIR

From Python::

    server = start()                 # or start("/tmp/some-empty-dir")
    url = create_database(server.url, "goalsui_test_store")
    stop(server.dir)

The server binaries (``initdb``, ``pg_ctl``, ``postgres``) are looked up in
``$GOALSUI_PG_BINDIR`` (if set, only there), else on ``PATH``, then in ``/usr/lib/postgresql/*/bin`` (newest
first, Debian's layout). PostgreSQL refuses to run as root, so when we are root the
server runs as the ``postgres`` system user (``nobody`` if there is none) and the
directory is chowned to it. The server listens on 127.0.0.1 only, with ``trust`` auth,
and is tuned for speed, not durability.
"""

from __future__ import annotations

import glob
import os
import pwd
import re
import shlex
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import quote, urlsplit, urlunsplit

DEFAULT_DB = "goalsui_test"
SUPERUSER = "postgres"
_MARKER = ".goalsui-pgserver"
_SUN_PATH_MAX = 100  # sockaddr_un.sun_path is 108 bytes; keep room for ".s.PGSQL.NNNNN"

_SETTINGS = """\
# written by tests/pgserver.py: a throwaway test server, speed over durability
listen_addresses = '127.0.0.1'
unix_socket_directories = {sockdir}
max_connections = 200
fsync = off
synchronous_commit = off
full_page_writes = off
log_min_messages = warning
log_min_duration_statement = -1
"""

_HBA = """\
# written by tests/pgserver.py: trust on the private socket and on 127.0.0.1 only
local all all trust
host  all all 127.0.0.1/32 trust
"""


class PgServerError(RuntimeError):
    """The throwaway server could not be found, started or stopped."""


@dataclass(frozen=True)
class Server:
    dir: Path
    port: int
    bindir: Path
    version: str

    @property
    def url(self) -> str:
        return make_url(self.port, DEFAULT_DB)


# --- finding the binaries -------------------------------------------------------------


def _has_server(bindir: Path) -> bool:
    return all(os.access(bindir / name, os.X_OK) for name in ("initdb", "pg_ctl", "postgres"))


def _version_key(path: str) -> tuple[int, ...]:
    name = Path(path).parent.name  # /usr/lib/postgresql/<name>/bin
    return tuple(int(part) for part in re.findall(r"\d+", name)) or (0,)


def find_bindir() -> Path | None:
    """The directory holding initdb, pg_ctl and postgres, or None."""
    if env := os.environ.get("GOALSUI_PG_BINDIR"):  # an explicit choice: nothing else
        return Path(env) if _has_server(Path(env)) else None
    candidates: list[Path] = []
    if initdb := shutil.which("initdb"):
        # /usr/local/bin/initdb may be a symlink into the real bin directory.
        candidates.append(Path(os.path.realpath(initdb)).parent)
        candidates.append(Path(initdb).parent)
    debian = sorted(glob.glob("/usr/lib/postgresql/*/bin"), key=_version_key, reverse=True)
    candidates.extend(Path(p) for p in debian)
    for bindir in candidates:
        if _has_server(bindir):
            return bindir
    return None


def server_version(bindir: Path) -> str:
    """'15.18' from 'postgres (PostgreSQL) 15.18 (Debian 15.18-0+deb12u1)'."""
    out = subprocess.run(
        [str(bindir / "postgres"), "--version"], capture_output=True, text=True, check=True
    ).stdout
    match = re.search(r"\)\s*(\d+(?:\.\d+)*)", out) or re.search(r"(\d+(?:\.\d+)+)", out)
    return match.group(1) if match else out.strip()


# --- running as the right user --------------------------------------------------------


def _run_user() -> str | None:
    """The user the server must run as, or None to run as ourselves (not root)."""
    if os.geteuid() != 0:
        return None
    for name in ("postgres", "nobody"):
        try:
            pwd.getpwnam(name)
        except KeyError:
            continue
        return name
    raise PgServerError("running as root but there is no 'postgres' (or 'nobody') user")


def _as_user(cmd: list[str], user: str | None) -> list[str]:
    if user is None:
        return cmd
    if shutil.which("runuser"):
        return ["runuser", "-u", user, "--", *cmd]
    if shutil.which("su"):
        return ["su", user, "-s", "/bin/sh", "-c", shlex.join(cmd)]
    raise PgServerError(f"running as root and neither runuser nor su is available to become {user}")


def _run(cmd: list[str], user: str | None, input: str = "") -> subprocess.CompletedProcess[str]:
    # cwd="/": the server user may not be allowed into our working directory.
    return subprocess.run(
        _as_user(cmd, user), cwd="/", input=input, capture_output=True, text=True, timeout=120
    )


def _chown_tree(path: Path, user: str) -> None:
    entry = pwd.getpwnam(user)
    for root, dirs, files in os.walk(path):
        for name in [*dirs, *files]:
            os.lchown(os.path.join(root, name), entry.pw_uid, entry.pw_gid)
    os.chown(path, entry.pw_uid, entry.pw_gid)


# --- URLs -----------------------------------------------------------------------------


def make_url(port: int, dbname: str = DEFAULT_DB, host: str = "127.0.0.1") -> str:
    return f"postgresql+psycopg://{SUPERUSER}@{host}:{port}/{quote(dbname, safe='')}"


def libpq_url(url: str) -> str:
    """'postgresql+psycopg://...' (SQLAlchemy) -> 'postgresql://...' (psycopg/libpq)."""
    parts = urlsplit(url)
    return urlunsplit(parts._replace(scheme=parts.scheme.split("+", 1)[0]))


def with_database(url: str, name: str) -> str:
    parts = urlsplit(url)
    return urlunsplit(parts._replace(path="/" + quote(name, safe="")))


def _quote_ident(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


# --- start / stop ---------------------------------------------------------------------


def _log_tail(path: Path, lines: int = 30) -> str:
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return "(no server log)"


def start(dir: str | os.PathLike[str] | None = None, *, dbname: str = DEFAULT_DB) -> Server:
    """initdb + start a server in DIR (created if missing, must be empty) and create DBNAME.

    Without DIR a fresh /tmp/goalsui-pg-XXXX is used. Raises PgServerError.
    """
    bindir = find_bindir()
    if bindir is None:
        raise PgServerError(
            "no PostgreSQL server binaries found (install Debian's postgresql package)"
        )
    user = _run_user()

    if dir is None:
        base = Path(tempfile.mkdtemp(prefix="goalsui-pg-", dir="/tmp" if user else None))
    else:
        base = Path(dir).absolute()
        base.mkdir(parents=True, exist_ok=True)
        if any(base.iterdir()):
            raise PgServerError(f"{base} is not empty")
    try:
        server = _init_and_start(base, bindir, user, dbname)
    except BaseException:
        stop(base, keep=dir is not None)  # a directory we were given is the caller's to remove
        raise
    (base / "url").write_text(server.url + "\n")
    return server


def _init_and_start(base: Path, bindir: Path, user: str | None, dbname: str) -> Server:
    base.chmod(0o755)  # mkdtemp makes it 0700; the server user must get in
    (base / _MARKER).write_text("created by tests/pgserver.py; 'stop' deletes this directory\n")
    data, log = base / "data", base / "server.log"

    if user is not None:
        _chown_tree(base, user)
        if _run(["test", "-w", str(base)], user).returncode != 0:
            raise PgServerError(
                f"user {user!r} cannot write to {base}: every parent directory must be "
                "traversable by it (use a directory under /tmp)"
            )

    initdb = _run(
        [
            str(bindir / "initdb"),
            "-D",
            str(data),
            "-U",
            SUPERUSER,
            "-E",
            "UTF8",
            "--locale=C",
            "--auth=trust",
            "--no-sync",
        ],
        user,
    )
    if initdb.returncode != 0:
        raise PgServerError(f"initdb failed:\n{initdb.stdout}\n{initdb.stderr}")

    quoted = str(data).replace("'", "''")
    sockdir = f"'{quoted}'" if len(str(data)) <= _SUN_PATH_MAX else "''"
    conf = data / "postgresql.conf"
    conf.write_text(conf.read_text() + "\n" + _SETTINGS.format(sockdir=sockdir))
    (data / "pg_hba.conf").write_text(_HBA)

    # Create the database in single-user mode: needs no client tools and no driver.
    single = _run(
        [
            str(bindir / "postgres"),
            "--single",
            "-D",
            str(data),
            "-c",
            "exit_on_error=on",
            "postgres",
        ],
        user,
        input=f"CREATE DATABASE {_quote_ident(dbname)};\n",
    )
    if single.returncode != 0:
        raise PgServerError(f"creating database {dbname} failed:\n{single.stdout}\n{single.stderr}")

    # Another process may grab the port between _free_port() and the bind: retry.
    for attempt in range(3):
        port = _free_port()
        started = _run(
            [
                str(bindir / "pg_ctl"),
                "-D",
                str(data),
                "-l",
                str(log),
                "-o",
                f"-p {port}",
                "-w",
                "-t",
                "60",
                "start",
            ],
            user,
        )
        if started.returncode == 0:
            break
        if attempt < 2 and "already in use" in _log_tail(log):
            continue
        raise PgServerError(
            f"pg_ctl start failed:\n{started.stdout}\n{started.stderr}\n"
            f"--- {log} ---\n{_log_tail(log)}"
        )

    return Server(dir=base, port=port, bindir=bindir, version=server_version(bindir))


def stop(dir: str | os.PathLike[str], *, keep: bool = False) -> None:
    """Stop the server in DIR (fast shutdown); then delete DIR unless keep or not ours."""
    base = Path(dir).absolute()
    data = base / "data"
    if (data / "postmaster.pid").exists():
        bindir = find_bindir()
        if bindir is None:
            raise PgServerError("cannot stop the server: pg_ctl not found")
        user = _run_user()
        for mode in ("fast", "immediate"):
            res = _run(
                [str(bindir / "pg_ctl"), "-D", str(data), "-m", mode, "-w", "-t", "30", "stop"],
                user,
            )
            if res.returncode == 0 or not (data / "postmaster.pid").exists():
                break
        else:
            raise PgServerError(f"pg_ctl stop failed:\n{res.stdout}\n{res.stderr}")
    if not keep and (base / _MARKER).exists():
        shutil.rmtree(base, ignore_errors=True)


# --- per-test databases ---------------------------------------------------------------


def create_database(url: str, name: str) -> str:
    """(Re)create database NAME on the server of URL; return URL pointing at it.

    URL is a SQLAlchemy URL like 'postgresql+psycopg://postgres@127.0.0.1:5432/goalsui_test'.
    An existing database of that name is dropped first (WITH (FORCE)).
    """
    import psycopg
    from psycopg import sql

    with psycopg.connect(libpq_url(url), autocommit=True, connect_timeout=10) as conn:
        conn.execute(
            sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name))
        )
        conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
    return with_database(url, name)


def drop_database(url: str) -> None:
    """Drop the database URL points at (connecting to the 'postgres' database)."""
    import psycopg
    from psycopg import sql

    name = urlsplit(url).path.lstrip("/")
    admin = libpq_url(with_database(url, "postgres"))
    with psycopg.connect(admin, autocommit=True, connect_timeout=10) as conn:
        conn.execute(
            sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name))
        )


# --- command line ---------------------------------------------------------------------


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    usage = "usage: pgserver.py find | start DIR | stop DIR [--keep]"
    if not args or args[0] in ("-h", "--help"):
        print(usage, file=sys.stderr)
        return 0 if args else 2
    cmd, rest = args[0], args[1:]
    try:
        if cmd == "find" and not rest:
            bindir = find_bindir()
            if bindir is None:
                print("no PostgreSQL server binaries found", file=sys.stderr)
                return 1
            print(bindir, server_version(bindir))
            return 0
        if cmd == "start" and len(rest) == 1:
            t0 = time.monotonic()
            server = start(rest[0])
            print(
                f"pgserver: PostgreSQL {server.version} on 127.0.0.1:{server.port} in "
                f"{server.dir} ({time.monotonic() - t0:.1f}s)",
                file=sys.stderr,
            )
            print(server.url)
            return 0
        if cmd == "stop" and rest and set(rest[1:]) <= {"--keep"} and len(rest) <= 2:
            stop(rest[0], keep="--keep" in rest[1:])
            return 0
    except PgServerError as exc:
        print(f"pgserver: {exc}", file=sys.stderr)
        return 1
    print(usage, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main())
