"""The capture schema, copied here from format/schema/ when the package is built (setup.py)."""
