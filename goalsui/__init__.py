"""goalsui: an operator console and embedded scheduler for long-lived agent work."""

__version__ = "0.1.0"
