"""What a worker's next turn will get, before it runs: argv, environment names, MCP config. Built by
the functions a turn uses; values only a live run has are placeholders."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any

from goalsui.domain.capabilities import speaks_mcp
from goalsui.runners.presets import (
    RUN_ID,
    McpLaunch,
    ToolEndpoint,
    TurnTools,
    mcp_documents,
    preset_env,
    runner_argv,
)

if TYPE_CHECKING:
    from goalsui.service import Service


#: what stands for the values only a live run has
RUN_PLACEHOLDER = "<run id>"
TOKEN_PLACEHOLDER = "<per-run token>"
URL_PLACEHOLDER = "http://127.0.0.1:<port>/mcp"

#: the variables every turn gets (docs/agents.md, "The environment of a turn")
TURN_ENV = (
    "GOALSUI_GOAL",
    "GOALSUI_WORKER",
    "GOALSUI_RUN_ID",
    "GOALSUI_INTENT_ID",
    "GOALSUI_THREAD",
    "GOALSUI_KB",
    "GOALSUI_OUTBOX",
    "GOALSUI_MODEL",
)


@dataclass(frozen=True)
class TurnPreview:
    """A worker turn's argv (placeholders of a live run left in), env names and configs."""

    runner: dict[str, Any]
    argv: list[str]
    env: list[str]
    gets_tools: bool
    mcp_configs: dict[str, dict[str, Any]]

    def as_json(self) -> dict[str, Any]:
        return asdict(self)


def preview_worker_turn(service: Service, goal_id: str, worker: str) -> TurnPreview:
    """The argv, environment names and MCP configs worker ``worker``'s turn would get."""
    from goalsui.runners.turn import resolve_runner

    intent = service.workers.intent(goal_id, worker)
    spec = resolve_runner(service, intent)
    root, state = service.kb.root, service.state_dir
    stdio = McpLaunch.for_run(root, state, "<database url>", RUN_PLACEHOLDER, python="python")
    agent = spec.get("agent")
    http = None if agent == "goose" else ToolEndpoint(URL_PLACEHOLDER, TOKEN_PLACEHOLDER)
    tools = TurnTools(stdio, http)
    argv = [x.replace(RUN_ID, RUN_PLACEHOLDER) for x in runner_argv(spec, tools)] if spec else []
    gets_tools = bool(spec) and speaks_mcp(spec)
    env = [*TURN_ENV, *(sorted(preset_env(agent, tools)) if gets_tools else [])]
    configs = {k.strip("{}"): v for k, v in mcp_documents(argv, tools, agent).items()}
    return TurnPreview(dict(spec), argv, env, gets_tools, configs)
