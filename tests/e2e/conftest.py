"""End-to-end tier: the CLI, daemons, the hook listener and agent stand-ins as real
processes. Spawn the CLI with ``base_kit.run_cli`` (or ``cli_argv`` for Popen);
daemons with tests/daemon_kit.py.
"""

# -- the real agent CLIs against a scripted model server (tests/agent_clis.py, model_server.py)
import pytest

from tests.agent_clis import AgentClis, agent_clis_or_reason
from tests.model_server import ModelServer


@pytest.fixture(scope="session")
def agent_clis() -> AgentClis:
    """Claude Code and Codex at their pinned versions (npm-installed once into a cache)."""
    clis, reason = agent_clis_or_reason()
    if clis is None:
        pytest.skip(reason)
    return clis


@pytest.fixture
def model_server():
    """``model_server(script, **options)`` starts a scripted model server; all stop after."""
    servers: list[ModelServer] = []

    def start(script, **options) -> ModelServer:
        server = ModelServer(script, **options)
        server.start()
        servers.append(server)
        return server

    yield start
    for server in servers:
        server.stop()
