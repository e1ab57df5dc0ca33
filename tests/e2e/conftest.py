"""End-to-end tier: the CLI, daemons, the hook listener and agent stand-ins as real
processes. Spawn the CLI with ``base_kit.run_cli`` (or ``cli_argv`` for Popen);
daemons with tests/daemon_kit.py.
"""
