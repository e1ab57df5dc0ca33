"""Secrets kept out of transcripts: an argv is stored with its secret values masked."""

from __future__ import annotations

import re
from collections.abc import Sequence

MASK = "***"
_SECRET_NAME = re.compile(r"(?i)(token|secret|passw(or)?d|api[-_]?key|auth|credential)")
_URL_PASSWORD = re.compile(r"(?P<head>[a-z][a-z0-9+.-]*://[^:/@\s]+:)(?P<pw>[^@\s]+)(?P<at>@)")


def _mask_text(arg: str) -> str:
    arg = _URL_PASSWORD.sub(lambda m: m["head"] + MASK + m["at"], arg)
    name, sep, value = arg.partition("=")
    if sep and value and _SECRET_NAME.search(name.rsplit(".", 1)[-1]):
        return f"{name}={MASK}"
    return arg


def redact_argv(argv: Sequence[str]) -> list[str]:
    """``argv`` with secrets masked: URL passwords, ``NAME=value`` and ``--token X`` for
    names mentioning a token, secret, password, API key, auth or credential."""
    out: list[str] = []
    hide_next = False
    for arg in map(str, argv):
        option = arg.startswith("-") and "=" not in arg and bool(_SECRET_NAME.search(arg))
        out.append(MASK if hide_next else arg if option else _mask_text(arg))
        hide_next = option and not hide_next  # the value after a secret-named option
    return out
