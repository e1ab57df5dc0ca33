"""Console tier: the real Textual app driven through its pilot. ``template`` and ``demo``
(tests/conftest.py) give each test a fresh copy of the demo KB on the fake clock;
helpers are in tests/tui_kit.py.
"""
