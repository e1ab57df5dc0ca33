"""Doorbells: datagram sockets in a wake folder that writers ring after a commit."""

from __future__ import annotations

import os
import socket
from pathlib import Path

import pytest

from goalsui.store import doorbell


def test_a_ring_reaches_every_bell_with_the_writers_origin(tmp_path: Path) -> None:
    a, b = doorbell.Bell(tmp_path), doorbell.Bell(tmp_path)
    a.open()
    b.open()
    try:
        assert a.origins() == []  # nothing waiting: never blocks
        assert doorbell.ring(tmp_path, "writer-1") == 2
        assert doorbell.ring(tmp_path, "writer-2") == 2
        assert a.origins() == ["writer-1", "writer-2"]
        assert b.origins() == ["writer-1", "writer-2"]
    finally:
        a.close()
        b.close()
    assert list(tmp_path.iterdir()) == []  # closing removes the bell


def test_a_bell_nobody_holds_is_removed_by_the_next_ring(tmp_path: Path) -> None:
    stale = tmp_path / f"999999-dead{doorbell.SUFFIX}"
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    sock.bind(str(stale))
    sock.close()  # the process that bound it is gone; the file stays
    assert stale.exists()
    live = doorbell.Bell(tmp_path)
    live.open()
    try:
        assert doorbell.ring(tmp_path, "w") == 1
        assert not stale.exists()
        assert live.origins() == ["w"]
    finally:
        live.close()


def test_ringing_an_empty_or_missing_folder_is_harmless(tmp_path: Path) -> None:
    assert doorbell.ring(tmp_path, "w") == 0
    assert doorbell.ring(tmp_path / "missing", "w") == 0
    (tmp_path / "wake").write_text("x")  # a file that is not a bell
    assert doorbell.ring(tmp_path, "w") == 0


@pytest.mark.skipif(not Path("/proc/self/fd").is_dir(), reason="needs /proc (Linux)")
def test_a_folder_too_deep_for_a_socket_path_still_has_bells(tmp_path: Path) -> None:
    deep = tmp_path / ("d" * 60) / ("e" * 60)
    deep.mkdir(parents=True)
    bell = doorbell.Bell(deep)
    assert len(str(bell.path)) > 108  # longer than AF_UNIX can address
    bell.open()
    try:
        assert bell.path.is_socket()
        assert doorbell.ring(deep, "far") == 1
        assert bell.origins() == ["far"]
    finally:
        bell.close()
    assert not bell.path.exists()


def test_a_full_bell_counts_as_rung(tmp_path: Path) -> None:
    bell = doorbell.Bell(tmp_path)
    bell.open()
    try:
        rung = [doorbell.ring(tmp_path, "x" * 100) for _ in range(2000)]
        assert all(r == 1 for r in rung)  # a full queue already has wakes waiting
        assert len(bell.origins()) >= 1
        assert os.listdir(tmp_path) == [bell.path.name]
    finally:
        bell.close()
