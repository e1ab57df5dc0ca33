"""Operations: Prometheus metrics, health and readiness endpoints, structured logs.

Used by ``goalsui daemon`` (``--metrics-port``, ``--log-format json``); see
docs/operations.md.
"""
