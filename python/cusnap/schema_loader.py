"""The capture schema shipped inside the package (copied from format/schema/ at build time)."""
import os
import functools

import capnp

SCHEMA_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "schema")


def schema_path() -> str:
    """The capture.capnp this package reads with."""
    return os.path.join(SCHEMA_DIR, "capture.capnp")


@functools.lru_cache(maxsize=None)
def load_schema():
    """The parsed capture schema (pycapnp module). The schema imports /capnp/c++.capnp (a C++
    namespace annotation only), which pycapnp ships next to its own package."""
    path = schema_path()
    if not os.path.isfile(path):
        raise FileNotFoundError("%s is missing: install the package with pip (setup.py copies "
                                "the schema from format/schema/)" % path)
    pycapnp_root = os.path.dirname(os.path.dirname(os.path.abspath(capnp.__file__)))
    return capnp.load(path, imports=[pycapnp_root])
