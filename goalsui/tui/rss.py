"""This process's peak memory, standard library only (the bare app of ``goalsui bench
console`` measures itself the same way)."""

from __future__ import annotations


def peak_rss_kb() -> int:
    """Peak resident set (``VmHWM``) in KiB; not ``ru_maxrss`` (it survives ``exec``: a
    child of a big parent reports the parent's peak) unless there is no ``/proc``."""
    try:
        with open("/proc/self/status", encoding="ascii") as fh:
            for line in fh:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1])
    except (OSError, ValueError, IndexError):
        pass
    import resource

    return int(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)
