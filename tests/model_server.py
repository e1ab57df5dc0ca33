"""A scripted model server: real agent CLIs (Claude Code, Codex) run against it in tests.

It speaks just enough of two model APIs on 127.0.0.1:

- Anthropic Messages: ``POST /v1/messages`` (SSE when ``"stream": true``, else one JSON
  message), ``POST /v1/messages/count_tokens``, and ``HEAD /`` / ``GET /`` probes;
- OpenAI Responses: ``POST /v1/responses`` (SSE), what Codex speaks with
  ``wire_api = "responses"``.

The script is a list of steps, played once per conversation::

    [{"call": "goal_kb_read", "arguments": {"path": "notes.md"}},
     {"call": "list_intents"},
     {"answer": "done"}]

A ``call`` step names a tool by the end of its name. Claude offers MCP tools as
``mcp__goalsui__X``; Codex offers a namespace ``{"type": "namespace", "name":
"mcp__goalsui", "tools": [{"name": "X", ...}]}`` and expects the call back as
``{"type": "function_call", "namespace": "mcp__goalsui", "name": "X"}``: the server
records such a tool as ``mcp__goalsui__X`` too. A step whose tool is not offered is
skipped and recorded in ``missing``. The server makes one tool call per model request,
so the n-th request of a conversation that already holds k tool results plays the k-th
playable step: the position is read from the conversation itself, which makes retried
requests harmless and lets one server drive several runs (each plays the script from its
start). After the last step the server answers the last ``answer`` (or "done").
Any step may carry ``"sleep": SECONDS`` (the server waits before it answers) and a call
step ``"say": TEXT`` (text before the call).

Side requests (Claude's small haiku-model calls such as title generation, which carry no
tools and not Claude Code's agent system prompt) are answered with ``side_answer`` and
recorded with ``main=False``; they don't play the script.

Use in tests::

    with ModelServer([{"call": "list_intents"}, {"answer": "done"}]) as server:
        ... server.url ...
        server.offered_tools   # tool names offered, one list per main request
        server.tool_results    # the text of each tool result the client sent back
        server.calls           # (tool name as offered, arguments) per call made
        server.missing         # call steps skipped: their tool was not offered

or by hand: ``python tests/model_server.py --port-file F --script '[...]'`` (``--dump DIR``
writes every request body there).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import itertools
import json
import sys
import threading
import time
import uuid
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from aiohttp import web

DEFAULT_ANSWER = "done"
SIDE_ANSWER = "Scripted title"


@dataclass
class Request:
    """One model request as the server saw it."""

    api: str  # "anthropic" or "openai"
    path: str
    model: str
    main: bool  # False: a side request (answered with side_answer, no script step)
    tools: list[str]  # the tool names offered, as the model sees them
    tool_results: list[str]  # the text of every tool result in the conversation
    reply: dict[str, Any] = field(default_factory=dict)  # {"call": name, ...} or {"text": ...}
    body: dict[str, Any] = field(default_factory=dict, repr=False)


def _text_of(content: Any) -> str:
    """The text of a tool result's content: a string, or a list of text parts."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(_text_of(part) for part in content)
    if isinstance(content, dict):
        if "text" in content:
            return str(content["text"])
        if "content" in content:
            return _text_of(content["content"])
        return ""
    return str(content)


# -- reading each API's request -------------------------------------------------------------------
def _anthropic_tools(body: dict[str, Any]) -> list[str]:
    return [t["name"] for t in body.get("tools") or [] if isinstance(t, dict) and "name" in t]


def _anthropic_system(body: dict[str, Any]) -> str:
    return _text_of(body.get("system"))


def _anthropic_results(body: dict[str, Any]) -> tuple[list[str], int]:
    """(the text of each tool result, how many tool calls the assistant made)."""
    results: list[str] = []
    calls = 0
    for message in body.get("messages") or []:
        content = message.get("content")
        if not isinstance(content, list):
            continue
        for block in content:
            if not isinstance(block, dict):
                continue
            if block.get("type") == "tool_result":
                results.append(_text_of(block.get("content")))
            elif block.get("type") == "tool_use" and message.get("role") == "assistant":
                calls += 1
    return results, calls


def _qualified(namespace: str, name: str) -> str:
    """A namespaced tool's full name: ``mcp__goalsui`` + ``list_intents`` is
    ``mcp__goalsui__list_intents``, the name Claude gives the same tool."""
    return f"{namespace}{'' if namespace.endswith('_') else '__'}{name}"


def _openai_tools(body: dict[str, Any]) -> list[str]:
    """Tool names as the model sees them; a namespace's tools qualified (``_qualified``)."""
    names: list[str] = []
    for tool in body.get("tools") or []:
        if not isinstance(tool, dict):
            continue
        inner = tool.get("tools")
        if isinstance(inner, list):  # {"type": "namespace", "name": "mcp__goalsui", "tools": [...]}
            prefix = str(tool.get("name") or "")
            names += [_qualified(prefix, str(t.get("name"))) for t in inner if isinstance(t, dict)]
        elif tool.get("name"):
            names.append(str(tool["name"]))
        elif tool.get("type"):  # built-ins without a name: {"type": "web_search"}
            names.append(str(tool["type"]))
    return names


def _openai_namespaces(body: dict[str, Any]) -> dict[str, tuple[str, str]]:
    """Full name -> (namespace, bare name) for tools offered inside a namespace."""
    found: dict[str, tuple[str, str]] = {}
    for tool in body.get("tools") or []:
        if isinstance(tool, dict) and isinstance(tool.get("tools"), list):
            prefix = str(tool.get("name") or "")
            for t in tool["tools"]:
                if isinstance(t, dict) and t.get("name"):
                    found[_qualified(prefix, str(t["name"]))] = (prefix, str(t["name"]))
    return found


def _openai_results(body: dict[str, Any]) -> tuple[list[str], int]:
    results: list[str] = []
    calls = 0
    items = body.get("input")
    if not isinstance(items, list):
        return results, calls
    for item in items:
        if not isinstance(item, dict):
            continue
        kind = item.get("type")
        if kind in ("function_call_output", "custom_tool_call_output", "mcp_call_output"):
            results.append(_text_of(item.get("output")))
        elif kind in ("function_call", "custom_tool_call", "mcp_call"):
            calls += 1
    return results, calls


# -- the server -------------------------------------------------------------------------------------
class ModelServer:
    """The scripted model server, in a background thread (a context manager)."""

    def __init__(
        self,
        script: Iterable[dict[str, Any]] = (),
        *,
        port: int = 0,
        input_tokens: int = 120,
        output_tokens: int = 30,
        side_answer: str = SIDE_ANSWER,
        dump_dir: Path | str | None = None,
    ) -> None:
        self.script: list[dict[str, Any]] = [dict(step) for step in script]
        self.port = port
        self.input_tokens = input_tokens
        self.output_tokens = output_tokens
        self.side_answer = side_answer
        self.dump_dir = Path(dump_dir) if dump_dir else None
        self.requests: list[Request] = []
        self.missing: list[str] = []  # call steps skipped because their tool was not offered
        self.calls: list[tuple[str, dict[str, Any]]] = []  # (tool name as offered, arguments)
        self.other_paths: list[str] = []  # "METHOD /path" of requests no API route took
        self._ids = itertools.count(1)
        self._lock = threading.Lock()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._runner: web.AppRunner | None = None
        self._thread: threading.Thread | None = None
        self._ready = threading.Event()
        self._error: BaseException | None = None

    # -- what tests read -------------------------------------------------------------------------
    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def main_requests(self) -> list[Request]:
        return [r for r in self.requests if r.main]

    @property
    def offered_tools(self) -> list[list[str]]:
        """The tool names offered in each main request, in order."""
        return [r.tools for r in self.main_requests]

    @property
    def tool_results(self) -> list[str]:
        """Each tool result the clients sent back, once (the last request of each
        conversation holds them all; results are collected in the order first seen)."""
        seen: list[str] = []
        counts: dict[str, int] = {}
        for request in self.main_requests:
            here: dict[str, int] = {}
            for text in request.tool_results:
                here[text] = here.get(text, 0) + 1
                if here[text] > counts.get(text, 0):
                    counts[text] = here[text]
                    seen.append(text)
        return seen

    # -- running ---------------------------------------------------------------------------------
    def __enter__(self) -> ModelServer:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def start(self) -> None:
        self._thread = threading.Thread(target=self._serve, name="model-server", daemon=True)
        self._thread.start()
        self._ready.wait(10)
        if self._error is not None:
            raise RuntimeError(f"model server failed to start: {self._error}")

    def stop(self) -> None:
        loop, thread = self._loop, self._thread
        if loop is None or thread is None:
            return
        with contextlib.suppress(RuntimeError):  # the loop already ended
            loop.call_soon_threadsafe(self._stop_event.set)
        thread.join(10)
        self._loop = None

    def _serve(self) -> None:
        loop = asyncio.new_event_loop()
        self._loop = loop
        try:
            loop.run_until_complete(self._main())
        except BaseException as exc:  # noqa: BLE001 - reported to start()
            self._error = exc
            self._ready.set()
        finally:
            loop.close()

    async def _main(self) -> None:
        self._stop_event = asyncio.Event()
        runner = web.AppRunner(self.app(), access_log=None, handle_signals=False)
        await runner.setup()
        site = web.TCPSite(runner, "127.0.0.1", self.port)
        await site.start()
        server = site._server  # the bound port, when port 0 was asked for
        sockets = getattr(server, "sockets", None)  # asyncio.Server's, not AbstractServer's
        if sockets:
            self.port = sockets[0].getsockname()[1]
        self._ready.set()
        try:
            await self._stop_event.wait()
        finally:
            await runner.cleanup()

    def app(self) -> web.Application:
        app = web.Application(client_max_size=64 * 1024 * 1024)
        app.router.add_post("/v1/messages", self._anthropic)
        app.router.add_post("/v1/messages/count_tokens", self._count_tokens)
        app.router.add_post("/v1/responses", self._openai)
        app.router.add_post("/responses", self._openai)
        app.router.add_route("*", "/{tail:.*}", self._other)
        return app

    # -- playing the script ----------------------------------------------------------------------
    def _next(self, tools: list[str], done_calls: int) -> dict[str, Any]:
        """The reply to a main request: the step after ``done_calls`` playable calls."""
        played = 0
        last_answer = DEFAULT_ANSWER
        for step in self.script:
            if "call" in step:
                name = str(step["call"])
                offered = _match(name, tools)
                if offered is None:
                    with self._lock:
                        if name not in self.missing:
                            self.missing.append(name)
                    continue
                if played == done_calls:
                    return {
                        "call": offered,
                        "arguments": dict(step.get("arguments") or {}),
                        "say": step.get("say"),
                        "sleep": step.get("sleep", 0),
                    }
                played += 1
            else:
                answer = str(step.get("answer", step.get("text", DEFAULT_ANSWER)))
                last_answer = answer
                if played >= done_calls:
                    return {"text": answer, "sleep": step.get("sleep", 0)}
        return {"text": last_answer}

    def _record(self, request: Request) -> None:
        with self._lock:
            self.requests.append(request)
            index = len(self.requests)
            if "call" in request.reply:
                self.calls.append((request.reply["call"], request.reply["arguments"]))
        if self.dump_dir is not None:
            self.dump_dir.mkdir(parents=True, exist_ok=True)
            name = f"{index:03d}-{request.api}-{'main' if request.main else 'side'}.json"
            record = {"reply": request.reply, "tools": request.tools, "body": request.body}
            (self.dump_dir / name).write_text(json.dumps(record, indent=1))

    # -- Anthropic -------------------------------------------------------------------------------
    async def _count_tokens(self, request: web.Request) -> web.Response:
        return web.json_response({"input_tokens": self.input_tokens})

    async def _anthropic(self, request: web.Request) -> web.StreamResponse:
        body = await request.json()
        tools = _anthropic_tools(body)
        results, done_calls = _anthropic_results(body)
        main = bool(tools) or _looks_main(_anthropic_system(body))
        reply = self._next(tools, done_calls) if main else {"text": self.side_answer}
        record = Request(
            "anthropic", request.path, str(body.get("model", "")), main, tools, results, reply, body
        )
        self._record(record)
        if reply.get("sleep"):
            await asyncio.sleep(float(reply["sleep"]))
        model = str(body.get("model") or "scripted")
        blocks = _anthropic_blocks(reply, next(self._ids))
        stop = "tool_use" if "call" in reply else "end_turn"
        usage_in = {
            "input_tokens": self.input_tokens,
            "output_tokens": 1,
            "cache_creation_input_tokens": 0,
            "cache_read_input_tokens": 0,
        }
        message_id = f"msg_{uuid.uuid4().hex[:24]}"
        if not body.get("stream"):
            return web.json_response(
                {
                    "id": message_id,
                    "type": "message",
                    "role": "assistant",
                    "model": model,
                    "content": blocks,
                    "stop_reason": stop,
                    "stop_sequence": None,
                    "usage": {**usage_in, "output_tokens": self.output_tokens},
                }
            )
        events: list[tuple[str, dict[str, Any]]] = [
            (
                "message_start",
                {
                    "type": "message_start",
                    "message": {
                        "id": message_id,
                        "type": "message",
                        "role": "assistant",
                        "model": model,
                        "content": [],
                        "stop_reason": None,
                        "stop_sequence": None,
                        "usage": usage_in,
                    },
                },
            )
        ]
        for index, block in enumerate(blocks):
            if block["type"] == "text":
                start: dict[str, Any] = {"type": "text", "text": ""}
                delta = {"type": "text_delta", "text": block["text"]}
            else:
                start = {**block, "input": {}}
                delta = {"type": "input_json_delta", "partial_json": json.dumps(block["input"])}
            events += [
                (
                    "content_block_start",
                    {"type": "content_block_start", "index": index, "content_block": start},
                ),
                (
                    "content_block_delta",
                    {"type": "content_block_delta", "index": index, "delta": delta},
                ),
                ("content_block_stop", {"type": "content_block_stop", "index": index}),
            ]
        events += [
            (
                "message_delta",
                {
                    "type": "message_delta",
                    "delta": {"stop_reason": stop, "stop_sequence": None},
                    "usage": {"output_tokens": self.output_tokens},
                },
            ),
            ("message_stop", {"type": "message_stop"}),
        ]
        return await _sse(request, events)

    # -- OpenAI Responses ------------------------------------------------------------------------
    async def _openai(self, request: web.Request) -> web.StreamResponse:
        body = await request.json()
        tools = _openai_tools(body)
        results, done_calls = _openai_results(body)
        main = bool(tools) or _looks_main(_text_of(body.get("instructions")))
        reply = self._next(tools, done_calls) if main else {"text": self.side_answer}
        record = Request(
            "openai", request.path, str(body.get("model", "")), main, tools, results, reply, body
        )
        self._record(record)
        if reply.get("sleep"):
            await asyncio.sleep(float(reply["sleep"]))
        response_id = f"resp_{uuid.uuid4().hex[:24]}"
        items = _openai_items(reply, next(self._ids), _openai_namespaces(body))
        usage = {
            "input_tokens": self.input_tokens,
            "input_tokens_details": {"cached_tokens": 0},
            "output_tokens": self.output_tokens,
            "output_tokens_details": {"reasoning_tokens": 0},
            "total_tokens": self.input_tokens + self.output_tokens,
        }
        base = {
            "id": response_id,
            "object": "response",
            "created_at": int(time.time()),
            "model": str(body.get("model") or "scripted"),
        }
        completed = {**base, "status": "completed", "output": items, "usage": usage}
        if not body.get("stream", True):
            return web.json_response(completed)
        events: list[tuple[str, dict[str, Any]]] = [
            (
                "response.created",
                {
                    "type": "response.created",
                    "response": {**base, "status": "in_progress", "output": []},
                },
            )
        ]
        for index, item in enumerate(items):
            if item["type"] == "message":
                text = item["content"][0]["text"]
                opened = {**item, "status": "in_progress", "content": []}
                events += [
                    (
                        "response.output_item.added",
                        {
                            "type": "response.output_item.added",
                            "output_index": index,
                            "item": opened,
                        },
                    ),
                    (
                        "response.content_part.added",
                        {
                            "type": "response.content_part.added",
                            "item_id": item["id"],
                            "output_index": index,
                            "content_index": 0,
                            "part": {"type": "output_text", "text": "", "annotations": []},
                        },
                    ),
                    (
                        "response.output_text.delta",
                        {
                            "type": "response.output_text.delta",
                            "item_id": item["id"],
                            "output_index": index,
                            "content_index": 0,
                            "delta": text,
                        },
                    ),
                    (
                        "response.output_text.done",
                        {
                            "type": "response.output_text.done",
                            "item_id": item["id"],
                            "output_index": index,
                            "content_index": 0,
                            "text": text,
                        },
                    ),
                ]
            else:
                events.append(
                    (
                        "response.output_item.added",
                        {
                            "type": "response.output_item.added",
                            "output_index": index,
                            "item": {**item, "status": "in_progress", "arguments": ""},
                        },
                    )
                )
            events.append(
                (
                    "response.output_item.done",
                    {"type": "response.output_item.done", "output_index": index, "item": item},
                )
            )
        events.append(("response.completed", {"type": "response.completed", "response": completed}))
        return await _sse(request, events)

    async def _other(self, request: web.Request) -> web.Response:
        with self._lock:
            self.other_paths.append(f"{request.method} {request.path}")
        if request.path in ("/", ""):
            return web.Response(text="ok")
        if request.path.rstrip("/").endswith("/models"):
            return web.json_response({"object": "list", "data": [], "models": []})
        return web.json_response(
            {"type": "error", "error": {"type": "not_found_error", "message": request.path}},
            status=404,
        )


def _match(name: str, offered: list[str]) -> str | None:
    """The offered tool that ``name`` names: the same name, else one ending in ``_name``."""
    if name in offered:
        return name
    for tool in offered:
        if tool.endswith("_" + name):
            return tool
    return None


def _looks_main(system: str) -> bool:
    """Whether a request without tools is still the agent's own turn (not a side call):
    Claude Code's and Codex's agent prompts introduce the agent."""
    head = system[:2000].lower()
    return any(
        mark in head
        for mark in ("you are claude code", "claude agent sdk", "you are codex", "coding agent")
    )


def _anthropic_blocks(reply: dict[str, Any], n: int) -> list[dict[str, Any]]:
    blocks: list[dict[str, Any]] = []
    if reply.get("say"):
        blocks.append({"type": "text", "text": str(reply["say"])})
    if "call" in reply:
        blocks.append(
            {
                "type": "tool_use",
                "id": f"toolu_{n:04d}{uuid.uuid4().hex[:16]}",
                "name": reply["call"],
                "input": reply["arguments"],
            }
        )
    else:
        blocks.append({"type": "text", "text": str(reply.get("text", DEFAULT_ANSWER))})
    return blocks


def _openai_items(
    reply: dict[str, Any], n: int, namespaces: dict[str, tuple[str, str]]
) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = []
    texts = [str(reply["say"])] if reply.get("say") else []
    if "call" not in reply:
        texts.append(str(reply.get("text", DEFAULT_ANSWER)))
    for text in texts:
        items.append(
            {
                "type": "message",
                "id": f"msg_{n:04d}{uuid.uuid4().hex[:16]}",
                "role": "assistant",
                "status": "completed",
                "content": [{"type": "output_text", "text": text, "annotations": []}],
            }
        )
    if "call" in reply:
        name = reply["call"]
        item: dict[str, Any] = {
            "type": "function_call",
            "id": f"fc_{n:04d}{uuid.uuid4().hex[:16]}",
            "call_id": f"call_{n:04d}{uuid.uuid4().hex[:16]}",
            "name": name,
            "arguments": json.dumps(reply["arguments"]),
            "status": "completed",
        }
        if name in namespaces:
            item["namespace"], item["name"] = namespaces[name]
        items.append(item)
    return items


async def _sse(
    request: web.Request, events: list[tuple[str, dict[str, Any]]]
) -> web.StreamResponse:
    response = web.StreamResponse(
        headers={"Content-Type": "text/event-stream", "Cache-Control": "no-cache"}
    )
    await response.prepare(request)
    for event, data in events:
        await response.write(f"event: {event}\ndata: {json.dumps(data)}\n\n".encode())
    await response.write_eof()
    return response


# -- command line -----------------------------------------------------------------------------------
def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--port-file", help="write the bound port here once listening")
    parser.add_argument("--script", default="[]", help="the steps as JSON, or @FILE")
    parser.add_argument("--dump", help="write every request (and the reply) into this folder")
    args = parser.parse_args(argv)
    text = args.script
    if text.startswith("@"):
        text = Path(text[1:]).read_text()
    server = ModelServer(json.loads(text), port=args.port, dump_dir=args.dump)
    server.start()
    if args.port_file:
        Path(args.port_file).write_text(f"{server.port}\n")
    print(f"model server on {server.url}", flush=True)
    try:
        while True:
            time.sleep(3600)
    except KeyboardInterrupt:
        pass
    finally:
        server.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
