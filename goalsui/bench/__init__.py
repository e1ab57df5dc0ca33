"""Benchmarks (``goalsui bench ...``): each figure is printed beside a reference measured
in the same run on the same machine, with the target it is held to."""
