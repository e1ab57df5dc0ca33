"""KB tools, confined to one goal tree: list (paged, optionally recursive), read (paged
by bytes), write, log append, update_worker."""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING, Annotated, Any

from pydantic import Field
from typing_extensions import TypedDict

from goalsui.mcp.instructions import READ_DEFAULT_BYTES
from goalsui.mcp.tools import MAX_PAGE, Cursor, GoalArg, Paged, ToolContext, ToolFailure, page
from goalsui.mcp.tools.goals import WorkerInfo

if TYPE_CHECKING:
    from goalsui.service import Service

#: the most entries a recursive listing walks (beyond: truncated, total is a lower bound)
MAX_WALK = 50_000
MAX_READ = 1024 * 1024


class Entry(TypedDict):
    """A file or folder; path relative to the goal directory."""

    name: str
    path: str
    dir: bool
    size: int
    modified: str


class Listing(Paged):
    """One page of a folder's entries (depth first when recursive)."""

    path: str
    entries: list[Entry]


class FileText(TypedDict):
    """A slice of a file: bytes offset .. next_offset of total_bytes."""

    path: str
    text: str
    offset: int
    bytes: int
    total_bytes: int
    remaining_bytes: int
    next_offset: int | None


class Written(TypedDict):
    path: str
    bytes: int


class LogLine(TypedDict):
    path: str
    line: int


class WorkerChange(WorkerInfo):
    """The worker after the change; changed false: it already was so (nothing written)."""

    changed: bool


PathArg = Annotated[
    str,
    Field(description="Path relative to the goal directory, e.g. 'notes/today.md' (no '..')."),
]


def _walk(svc: Service, goal_id: str, rel: str, recursive: bool) -> list[dict[str, Any]]:
    """A folder's entries; recursive: depth first, each folder visited once."""
    tree = svc.files.tree(goal_id)
    out: list[dict[str, Any]] = []
    seen = {tree.resolve(rel)}
    stack: list[Iterator[dict[str, Any]]] = [iter(svc.files.list(goal_id, rel))]
    while stack and len(out) < MAX_WALK:
        entry = next(stack[-1], None)
        if entry is None:
            stack.pop()
            continue
        out.append(entry)
        if recursive and entry["dir"]:
            real = tree.resolve(entry["path"])
            if real not in seen:
                seen.add(real)
                stack.append(iter(svc.files.list(goal_id, entry["path"])))
    return out


def _utf8_start(data: bytes, at: int) -> int:
    """``at`` moved back to the start of the character it falls in."""
    while 0 < at < len(data) and (data[at] & 0xC0) == 0x80:
        at -= 1
    return at


def register(ctx: ToolContext) -> None:
    svc, scope = ctx.service, ctx.scope

    @ctx.tool(
        "List goal files",
        "List a folder of the goal tree, paged (pass next_cursor back as cursor while "
        "truncated is true). recursive: every file and folder below, depth first.",
        read_only=True,
    )
    def goal_kb_list(
        path: Annotated[
            str, Field(description="Folder relative to the goal directory; '.' is the goal.")
        ] = ".",
        recursive: Annotated[bool, Field(description="Also list everything below.")] = False,
        cursor: Cursor = None,
        limit: Annotated[int, Field(description=f"Entries per page, 1 to {MAX_PAGE}.")] = 200,
        goal_id: GoalArg = None,
    ) -> Listing:
        gid = scope.goal(goal_id)
        entries = _walk(svc, gid, path, recursive)
        chunk, paging = page(entries, cursor, limit)
        for entry in chunk:
            entry["modified"] = entry["modified"].isoformat(timespec="seconds")
        return {"path": path, "entries": chunk, **paging}  # type: ignore[typeddict-item]  # the entries are the KB's plain dicts, modified now text

    @ctx.tool(
        "Read a goal file",
        (
            "Read a text file of the goal tree (UTF-8), by bytes: offset and limit "
            f"(default {READ_DEFAULT_BYTES} bytes). remaining_bytes says how much is left; "
            "next_offset continues (null at the end)."
        )
        if scope.readable is None
        else "Read your own instructions: "
        + " or ".join(f"'{'/'.join(parts)}'" for parts in scope.readable)
        + " (path relative to the goal; other files need the read_kb capability). "
        f"offset and limit page by bytes (default {READ_DEFAULT_BYTES}).",
        read_only=True,
    )
    def goal_kb_read(
        path: PathArg,
        offset: Annotated[
            int, Field(description="First byte to return (0 = start); next_offset continues.")
        ] = 0,
        limit: Annotated[
            int, Field(description=f"Bytes to return, 1 to {MAX_READ}.")
        ] = READ_DEFAULT_BYTES,
        goal_id: GoalArg = None,
    ) -> FileText:
        gid = scope.goal(goal_id)
        if scope.readable is not None:
            tree = svc.files.tree(gid)
            if tree.parts(tree.resolve(path)) not in scope.readable:
                allowed = ", ".join("/".join(parts) for parts in scope.readable)
                raise ToolFailure(
                    f"{path!r}: this worker reads only {allowed} (read_kb is not granted)"
                )
        if not 1 <= limit <= MAX_READ:
            raise ToolFailure(f"limit must be between 1 and {MAX_READ} bytes")
        data = svc.files.read(gid, path).encode("utf-8")
        if not 0 <= offset <= len(data):
            raise ToolFailure(f"offset must be between 0 and {len(data)} (the file's size)")
        start = _utf8_start(data, offset)
        end = _utf8_start(data, min(start + limit, len(data)))
        if end == start and start < len(data):  # a limit smaller than one character
            end = min(len(data), start + 4)
            while end < len(data) and (data[end] & 0xC0) == 0x80:
                end += 1
        return {
            "path": path,
            "text": data[start:end].decode("utf-8"),
            "offset": start,
            "bytes": end - start,
            "total_bytes": len(data),
            "remaining_bytes": len(data) - end,
            "next_offset": end if end < len(data) else None,
        }

    @ctx.tool(
        "Write a goal file",
        "Replace (or create) a text file of the goal tree atomically. YAML must parse; "
        "state.yaml must stay within the state bound (state_max_bytes, see get_context); "
        "definition.yaml files are refused (use update_worker); log/ is append-only (use "
        "goal_log_append).",
        read_only=False,
        destructive=True,
        idempotent=True,
    )
    def goal_kb_write(
        path: PathArg,
        text: Annotated[str, Field(description="The file's whole new content (UTF-8, <= 2 MiB).")],
        goal_id: GoalArg = None,
    ) -> Written:
        gid = scope.goal(goal_id)
        rel = svc.files.write(gid, path, text, definitions=False)
        return {"path": rel, "bytes": len(text.encode("utf-8"))}

    @ctx.tool(
        "Append to the goal log",
        "Append one timestamped entry to the goal's log (log/YYYY-MM-DD.md, UTC date); "
        "the log is append-only.",
        read_only=False,
    )
    def goal_log_append(
        text: Annotated[str, Field(description="The entry (20000 characters at most).")],
        goal_id: GoalArg = None,
    ) -> LogLine:
        logged, line = svc.agents.log_append(scope.goal(goal_id), text)
        return {"path": f"log/{logged.name}", "line": line}

    @ctx.tool(
        "Update a worker",
        "Change a worker's schedule, timeout or prompt.md (comments in its definition are "
        "kept); the runner is never changed here. A value it already has writes nothing "
        "(changed false).",
        read_only=False,
        idempotent=True,
    )
    def update_worker(
        worker: Annotated[str, Field(description="The worker's name (workers/<name>/).")],
        schedule: Annotated[
            dict[str, Any] | None,
            Field(
                description="{cron: '<5-field cron>', timezone: '<IANA zone>'} or {every: "
                "'<duration like 30m, 2h>'} or {at: '<ISO 8601 instant with offset>'}."
            ),
        ] = None,
        timeout: Annotated[
            str | None, Field(description="How long a turn may run: a duration like '10m'.")
        ] = None,
        prompt: Annotated[
            str | None, Field(description="The new prompt.md: the worker's instructions.")
        ] = None,
        goal_id: GoalArg = None,
    ) -> WorkerChange:
        from goalsui.service.workers import worker_files

        gid = scope.goal(goal_id)
        before = worker_files(svc, gid, worker)
        view = svc.workers.update(gid, worker, schedule=schedule, timeout=timeout, prompt=prompt)
        changed = worker_files(svc, gid, worker) != before
        return {**view.as_json(), "changed": changed}  # type: ignore[typeddict-item]  # as_json() returns a plain dict with the TypedDict's keys
