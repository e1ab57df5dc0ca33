"""Contract tier: behaviour that must be the same on every engine. Tests take ``db_url``
(SQLite, then a fresh PostgreSQL database; ``pg_url`` / ``pg_db`` from tests/conftest.py).
"""
