"""A stand-in agent that reports its usage the way real agent CLIs do.

argv: SHAPE COST TOKENS_IN TOKENS_OUT [MODEL]; SHAPE is ``claude`` (the result object of
``claude -p --output-format json``), ``generic`` (a goalsui_usage line after the result),
``codex`` (``codex exec --json`` events) or ``none`` (no usage at all).
"""

import json
import sys

sys.stdin.read()
shape, cost, tin, tout = sys.argv[1], float(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
model = sys.argv[5] if len(sys.argv) > 5 else "stand-in-model"
text = f"## agent: done with {model}"
if shape == "claude":
    result = {
        "type": "result",
        "subtype": "success",
        "is_error": False,
        "duration_ms": 1234,
        "num_turns": 2,
        "result": text,
        "session_id": "0b5f",
        "total_cost_usd": cost,
        "usage": {
            "input_tokens": tin - 10,
            "cache_creation_input_tokens": 4,
            "cache_read_input_tokens": 6,
            "output_tokens": tout,
        },
        "modelUsage": {
            "claude-3-5-haiku": {"inputTokens": 5, "outputTokens": 1, "costUSD": cost / 100},
            model: {"inputTokens": tin, "outputTokens": tout, "costUSD": cost * 0.99},
        },
    }
    print(json.dumps(result))
elif shape == "codex":
    events = [
        {"type": "thread.started", "thread_id": "t1"},
        {"type": "turn.started"},
        {"type": "item.completed", "item": {"id": "i0", "type": "agent_message", "text": text}},
        {
            "type": "turn.completed",
            "usage": {"input_tokens": tin, "cached_input_tokens": 3, "output_tokens": tout},
        },
    ]
    for event in events:
        print(json.dumps(event))
elif shape == "generic":
    print(text)
    usage = {"tokens_in": tin, "tokens_out": tout, "cost_usd": cost, "model": model}
    print(json.dumps({"goalsui_usage": usage}))
else:
    print(text)
