"""YAML reading with clear errors (file, line, reason) and comment-keeping edits."""

from __future__ import annotations

import io
import re
from pathlib import Path
from typing import Any

import yaml

from goalsui.errors import KBError
from goalsui.kb.regular import read_text

MAX_DEPTH = 32


class _StrictLoader(yaml.SafeLoader):
    """SafeLoader without aliases (no alias bombs) and with a nesting limit."""

    def __init__(self, stream: Any) -> None:
        super().__init__(stream)
        self._depth = 0

    def _next_mark(self) -> yaml.Mark | None:
        """Where the next event starts (for an error message)."""
        event: yaml.Event = self.peek_event()  # type: ignore[no-untyped-call]  # unannotated in types-PyYAML
        mark = event.start_mark  # always the pure-Python Mark: this loader is not libyaml's
        return mark if isinstance(mark, yaml.Mark) else None

    def compose_node(self, parent: yaml.Node | None, index: int) -> yaml.Node | None:
        if self.check_event(yaml.AliasEvent):
            raise yaml.MarkedYAMLError(
                problem="aliases (*name) are not allowed in goalsui files",
                problem_mark=self._next_mark(),
            )
        self._depth += 1
        try:
            if self._depth > MAX_DEPTH:
                raise yaml.MarkedYAMLError(
                    problem=f"nested deeper than {MAX_DEPTH} levels",
                    problem_mark=self._next_mark(),
                )
            return super().compose_node(parent, index)
        finally:
            self._depth -= 1


def _no_duplicate_keys(
    loader: yaml.SafeLoader, node: yaml.MappingNode, deep: bool = False
) -> dict[Any, Any]:
    """A mapping constructor that refuses a key given twice (PyYAML keeps the last)."""
    seen: set[Any] = set()
    for key_node, _ in node.value:
        key = loader.construct_object(key_node, deep=deep)
        try:
            duplicate = key in seen
            seen.add(key)
        except TypeError:  # an unhashable key; construct_mapping reports it
            continue
        if duplicate:
            raise yaml.MarkedYAMLError(
                problem=f"key {str(key)[:60]!r} is given twice", problem_mark=key_node.start_mark
            )
    return yaml.SafeLoader.construct_mapping(loader, node, deep=deep)


_StrictLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _no_duplicate_keys)

try:  # libyaml, bundled with PyYAML's wheels: the same documents, parsed several times faster
    from yaml._yaml import CParser

    class _FastLoader(yaml.CSafeLoader):
        """libyaml's parser with the strict constructor (duplicate keys refused)."""

    _FastLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _no_duplicate_keys)
    LIBYAML = True
except (ImportError, AttributeError):  # pragma: no cover - PyYAML built without libyaml
    LIBYAML = False

_OPEN = (yaml.MappingStartEvent, yaml.SequenceStartEvent)
_CLOSE = (yaml.MappingEndEvent, yaml.SequenceEndEvent)


def _fast_load(text: str) -> tuple[bool, Any]:
    """``(True, data)`` when libyaml loads ``text`` cleanly, else ``(False, None)``."""
    if not LIBYAML:
        return False, None
    try:
        events = CParser(text)  # the bare parser: events only, no loader to set up
        depth = 0
        while not isinstance(event := events.get_event(), yaml.StreamEndEvent):
            if isinstance(event, _OPEN):
                depth += 1
                if depth >= MAX_DEPTH - 1:
                    return False, None
            elif isinstance(event, _CLOSE):
                depth -= 1
            elif isinstance(event, yaml.AliasEvent):
                return False, None
        return True, yaml.load(text, Loader=_FastLoader)  # strict safe loader
    except Exception:  # noqa: BLE001 - the strict loader says what is wrong
        return False, None


def parse_yaml(text: str, display: str) -> Any:
    """Parse YAML text; a syntax problem becomes a KBError with file, line and reason."""
    if "\x00" in text:
        raise KBError(
            display, "file contains a NUL byte", text[: text.index("\x00")].count("\n") + 1
        )
    done, data = _fast_load(text)
    if done:
        return data
    try:
        return yaml.load(text, Loader=_StrictLoader)  # strict safe loader
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line = mark.line + 1 if mark is not None else None
        reason = exc.problem or exc.context or "invalid YAML"
        if exc.context and exc.problem:
            reason = f"{exc.context}: {exc.problem}" if "alias" not in exc.problem else exc.problem
        raise KBError(display, reason, line) from None
    except yaml.YAMLError as exc:
        raise KBError(display, f"invalid YAML: {exc}") from None
    except RecursionError:
        raise KBError(display, "YAML nested too deeply") from None


def load_yaml_mapping(path: Path, display: str) -> tuple[dict[Any, Any], str]:
    """Load a YAML file that must hold a mapping; returns (data, text)."""
    text = read_text(path, display=display)
    data = parse_yaml(text, display)
    if data is None:
        data = {}
    if not isinstance(data, dict):
        raise KBError(display, f"expected a mapping at the top, found {type(data).__name__}", 1)
    return data, text


def line_of_key(text: str, key: str) -> int | None:
    """Best-effort 1-based line of ``key:`` in YAML text (for error messages)."""
    quoted = rf"['\"]?{re.escape(key)}['\"]?\s*:"
    # a block key first, then one inside a flow mapping: ``ci: {secret_env: [a]}``
    for pattern in (re.compile(rf"^\s*-?\s*{quoted}"), re.compile(rf"[{{,]\s*{quoted}")):
        for number, line in enumerate(text.splitlines(), start=1):
            if pattern.search(line):
                return number
    return None


def guess_indent(text: str) -> tuple[int, int]:
    """The file's own block indentation: (mapping indent, offset of "- " under its key)."""
    mapping: int | None = None
    offset: int | None = None
    prev_indent, prev_opens = 0, False
    for raw in text.splitlines():
        stripped = raw.strip()
        if not stripped or stripped.startswith("#") or stripped in ("---", "..."):
            continue
        indent = len(raw) - len(raw.lstrip(" "))
        if prev_opens:
            if stripped.startswith("- ") or stripped == "-":
                if offset is None and indent >= prev_indent:
                    offset = indent - prev_indent
            elif mapping is None and indent > prev_indent:
                mapping = indent - prev_indent
        if mapping is not None and offset is not None:
            break
        body = stripped[2:].lstrip() if stripped.startswith("- ") else stripped
        prev_indent = indent if body is stripped else indent + (len(stripped) - len(body))
        no_comment = re.sub(r"\s+#.*$", "", body)
        prev_opens = no_comment.endswith(":")
    return (mapping or 2), (offset if offset is not None else 2)


def roundtrip_update(text: str, updates: dict[str, Any], *, display: str) -> str:
    """Apply top-level ``updates`` to YAML ``text``, keeping comments and key order."""
    from ruamel.yaml import YAML

    rt = YAML(typ="rt")
    rt.preserve_quotes = True
    rt.width = 4096  # never re-wrap a human's long lines
    mapping_indent, seq_offset = guess_indent(text)
    rt.indent(mapping=mapping_indent, sequence=seq_offset + 2, offset=seq_offset)
    try:
        doc = rt.load(text) if text.strip() else None
    except Exception as exc:  # noqa: BLE001 - ruamel's own errors become a KBError
        mark = getattr(exc, "problem_mark", None)
        line = mark.line + 1 if mark is not None else None
        reason = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        raise KBError(display, f"cannot edit this file: {reason}", line) from None
    if doc is None:
        from ruamel.yaml.comments import CommentedMap

        doc = CommentedMap()
    for key, value in updates.items():
        if key in doc and isinstance(doc[key], dict) and isinstance(value, dict):
            existing = doc[key]
            for old in [k for k in existing if k not in value]:
                del existing[old]
            for sub, subval in value.items():
                existing[sub] = subval
        else:
            doc[key] = value
    out = io.StringIO()
    rt.dump(doc, out)
    return out.getvalue()


def dump_yaml(data: dict[str, Any], header: str | None = None) -> str:
    body = yaml.safe_dump(data, sort_keys=False, allow_unicode=True, default_flow_style=False)
    return (f"# {header}\n" if header else "") + body
