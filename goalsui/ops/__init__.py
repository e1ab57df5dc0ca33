"""Operations: Prometheus metrics, health and readiness endpoints, structured logs. Used by
``goalsui daemon``; see docs/operations.md."""
