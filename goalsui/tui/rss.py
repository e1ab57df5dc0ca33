"""This process's peak memory; standard library only, so the bare reference app of
``goalsui bench console`` (:mod:`goalsui.bench.bare_app`) measures itself the same way
without importing the console."""

from __future__ import annotations


def peak_rss_kb() -> int:
    """This process's peak resident set (``VmHWM`` in ``/proc/self/status``), in KiB.

    Not ``ru_maxrss``: that survives ``exec``, so a child started by a big parent reports
    the parent's peak. Falls back to it where there is no ``/proc``.
    """
    try:
        with open("/proc/self/status", encoding="ascii") as fh:
            for line in fh:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1])
    except (OSError, ValueError, IndexError):
        pass
    import resource

    return int(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)
