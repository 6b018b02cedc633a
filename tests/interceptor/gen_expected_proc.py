#!/usr/bin/env python3
"""What the toolkit headers' model (driver_api.py's (name, version, stream) -> symbol mapping)
selects for a cuGetProcAddress request, by a deliberately separate implementation of the
selection rule (newest ABI not newer than the requested version; the per-thread variant when
flags ask for it and one exists). check_cudart_lookups.py uses it to measure how often the fake
driver chooses differently (the shim must follow the driver, not this model).
"""


def group_by_name(api):
    """name -> [(version, stream, symbol)] from driver_api.py's (name, version, stream) mapping."""
    by_name = {}
    for (name, version, stream), symbol in api.mapping.items():
        by_name.setdefault(name, []).append((version, stream, symbol))
    return by_name


def expected_symbol(by_name, name, version, per_thread):
    """The exported symbol cuGetProcAddress must answer for (name, version, per-thread flag), or
    None when the model has no ABI of `name` at `version` (the shim must pass the driver's answer
    through). Also used by check_cudart_lookups.py."""
    usable = [e for e in by_name.get(name, ()) if e[0] <= version]
    threaded = [e for e in usable if e[1]]
    plain = [e for e in usable if not e[1]]
    pool = threaded if per_thread and threaded else plain
    return max(pool)[2] if pool else None
