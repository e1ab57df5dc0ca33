"""What a turn cost, from the agent's output (shapes: docs/operations.md, "Usage: what a run cost");
a missing or malformed field is None, never zero."""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from typing import Any

from goalsui.runners.base import Usage

_MAX_JSON = 4 * 1024 * 1024  # characters: larger outputs are not parsed as JSON documents


@dataclass(frozen=True)
class ParsedOutput:
    """The turn's usage (None: unknown) and the text to deliver as its result."""

    usage: Usage | None
    text: str


def parse_output(stdout: str) -> ParsedOutput:
    """Usage and result text from a runner's stdout; the text is unchanged if no shape fits."""
    stripped = stdout.strip()
    if not stripped or len(stripped) > _MAX_JSON:
        return ParsedOutput(None, stdout)
    if (found := _claude_document(_loads(stripped))) is not None:  # one JSON document
        return found
    if events := _json_lines(stripped):  # JSON lines: Claude's stream or Codex's events
        found = _claude_stream(events) or _codex(events)
        if found is not None:
            return found
    return _generic(stdout)


# -- Claude Code ---------------------------------------------------------------------------


def _claude_document(doc: Any) -> ParsedOutput | None:
    if isinstance(doc, dict):
        return _claude_result(doc, model=None) if doc.get("type") == "result" else None
    if isinstance(doc, list):
        return _claude_stream([m for m in doc if isinstance(m, dict)])
    return None


def _claude_stream(messages: list[dict[str, Any]]) -> ParsedOutput | None:
    results = [m for m in messages if m.get("type") == "result"]
    if not results:
        return None
    systems = [m for m in messages if m.get("type") == "system" and isinstance(m.get("model"), str)]
    return _claude_result(results[-1], model=systems[-1]["model"] if systems else None)


def _claude_result(doc: dict[str, Any], model: str | None) -> ParsedOutput:
    found = doc.get("usage")
    raw_usage: dict[str, Any] = found if isinstance(found, dict) else {}
    tokens_in = None  # input tokens, cache writes and reads included
    if _count(raw_usage.get("input_tokens")) is not None:
        inputs = ("input_tokens", "cache_creation_input_tokens", "cache_read_input_tokens")
        tokens_in = sum(_count(raw_usage.get(k)) or 0 for k in inputs)
    tokens_out = _count(raw_usage.get("output_tokens"))
    cost = _money(doc.get("total_cost_usd", doc.get("cost_usd")))
    per_model = doc.get("modelUsage")
    if isinstance(per_model, dict) and per_model:
        model = model or _main_model(per_model)
    if isinstance(doc.get("model"), str):
        model = doc["model"]
    text = doc.get("result")
    usage = _usage(tokens_in, tokens_out, cost, model)
    return ParsedOutput(usage, text if isinstance(text, str) else "")


def _main_model(per_model: dict[str, Any]) -> str | None:
    """The model that cost the most (Claude Code also bills a small model for chores)."""

    def weight(item: tuple[str, Any]) -> float:
        data = item[1] if isinstance(item[1], dict) else {}
        cost = _money(data.get("costUSD"))
        return cost if cost is not None else float(_count(data.get("outputTokens")) or 0)

    return str(max(per_model.items(), key=weight)[0]) or None  # Usage caps its length


# -- Codex -----------------------------------------------------------------------------------


def _codex(events: list[dict[str, Any]]) -> ParsedOutput | None:
    tokens_in = tokens_out = None
    model: str | None = None
    messages: list[str] = []
    seen = False
    for ev in events:
        kind = ev.get("type")
        msg = ev.get("msg") if isinstance(ev.get("msg"), dict) and "id" in ev else None
        if kind == "turn.completed" and isinstance(ev.get("usage"), dict):
            seen = True
            tokens_in = _add(tokens_in, _count(ev["usage"].get("input_tokens")))
            tokens_out = _add(tokens_out, _count(ev["usage"].get("output_tokens")))
        elif kind == "item.completed" and isinstance(ev.get("item"), dict):
            item = ev["item"]
            if item.get("type") in ("agent_message", "assistant_message"):
                seen = True
                if isinstance(item.get("text"), str):
                    messages.append(item["text"])
        elif msg is not None and isinstance(msg.get("type"), str):
            seen = True
            tokens_in, tokens_out, model = _codex_legacy(msg, tokens_in, tokens_out, model)
            if msg.get("type") == "agent_message" and isinstance(msg.get("message"), str):
                messages.append(msg["message"])
        elif kind in ("thread.started", "turn.started", "session.created"):
            seen = True
        if isinstance(ev.get("model"), str):
            model = ev["model"]
    if not seen:
        return None
    usage = _usage(tokens_in, tokens_out, None, model)
    return ParsedOutput(usage, messages[-1] if messages else "")


def _codex_legacy(
    msg: dict[str, Any], tokens_in: int | None, tokens_out: int | None, model: str | None
) -> tuple[int | None, int | None, str | None]:
    """Older ``codex exec --json`` events: ``{"id": .., "msg": {"type": ..}}``."""
    if msg.get("type") == "session_configured" and isinstance(msg.get("model"), str):
        model = msg["model"]
    if msg.get("type") == "token_count":
        info = msg.get("info") if isinstance(msg.get("info"), dict) else None
        totals = info.get("total_token_usage") if info else msg
        if isinstance(totals, dict):
            tokens_in = _count(totals.get("input_tokens"))
            tokens_out = _count(totals.get("output_tokens"))
    return tokens_in, tokens_out, model


# -- the generic line --------------------------------------------------------------------------


def _generic(stdout: str) -> ParsedOutput:
    found: dict[str, Any] | None = None
    kept: list[str] = []
    for line in stdout.splitlines(keepends=True):
        text = line.strip()
        if text.startswith('{"goalsui_usage"') or text.startswith('{ "goalsui_usage"'):
            data = _loads(text)
            if isinstance(data, dict) and isinstance(data.get("goalsui_usage"), dict):
                found = data["goalsui_usage"]
                continue
        kept.append(line)
    if found is None:
        return ParsedOutput(None, stdout)
    model = found.get("model")
    tokens_in, tokens_out = _count(found.get("tokens_in")), _count(found.get("tokens_out"))
    cost = _money(found.get("cost_usd"))
    usage = _usage(tokens_in, tokens_out, cost, model if isinstance(model, str) and model else None)
    return ParsedOutput(usage, "".join(kept))


# -- helpers -------------------------------------------------------------------------------------


def _loads(text: str) -> Any:
    if not text or text[0] not in "[{":
        return None
    try:
        return json.loads(text)
    except (ValueError, RecursionError):
        return None


def _json_lines(text: str) -> list[dict[str, Any]]:
    """Every non-blank line as a JSON object, or [] when any line is not one."""
    rows = [_loads(line.strip()) for line in text.splitlines() if line.strip()]
    return rows if all(isinstance(row, dict) for row in rows) else []


def _money(value: Any) -> float | None:
    """A finite, non-negative number (never a bool), else None."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    try:
        return float(value) if math.isfinite(value) and value >= 0 else None
    except OverflowError:  # an integer too large for a float (JSON allows 1000 digits)
        return None


def _count(value: Any) -> int | None:
    """A whole, non-negative number, else None."""
    number = _money(value)
    return int(number) if number is not None and number.is_integer() else None


def _add(total: int | None, value: int | None) -> int | None:
    if value is None:
        return total
    return value if total is None else total + value


def _usage(
    tokens_in: int | None, tokens_out: int | None, cost: float | None, model: str | None
) -> Usage | None:
    if tokens_in is None and tokens_out is None and cost is None and model is None:
        return None
    return Usage(tokens_in=tokens_in, tokens_out=tokens_out, cost_usd=cost, model=model)
