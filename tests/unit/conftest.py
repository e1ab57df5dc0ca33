"""Unit tier: domain rules, the KB, the runners' pieces and the service in one process,
on real files and real SQLite; no server, no subprocess of goalsui.
"""
