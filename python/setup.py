"""Build step of the cusnap package (metadata: pyproject.toml).

Two facts come from the repository around this directory, so that neither has a second,
hand-edited copy in git: the capture schema (format/schema/*.capnp, copied into cusnap/schema/)
and the version (project(cusnap VERSION ...) in the top-level CMakeLists.txt, written to
cusnap/_version.py). Outside the repository (an sdist), the copies made when it was built are used.
"""
import os
import re
import shutil

from setuptools import setup
from setuptools.command.build_py import build_py

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
SCHEMA_SOURCE = os.path.join(REPO, "format", "schema")
SCHEMA_COPY = os.path.join(HERE, "cusnap", "schema")
VERSION_FILE = os.path.join(HERE, "cusnap", "_version.py")


def copy_repository_facts():
    cmake = os.path.join(REPO, "CMakeLists.txt")
    if os.path.isdir(SCHEMA_SOURCE):
        for name in sorted(os.listdir(SCHEMA_SOURCE)):
            if name.endswith(".capnp"):
                shutil.copyfile(os.path.join(SCHEMA_SOURCE, name), os.path.join(SCHEMA_COPY, name))
    if os.path.isfile(cmake):
        match = re.search(r"project\(cusnap\s+VERSION\s+([0-9.]+)", open(cmake).read())
        if not match:
            raise RuntimeError("no project(cusnap VERSION ...) in " + cmake)
        with open(VERSION_FILE, "w") as out:
            out.write("# Written by setup.py from the top-level CMakeLists.txt.\n")
            out.write("__version__ = %r\n" % match.group(1))
    if not os.path.isfile(os.path.join(SCHEMA_COPY, "capture.capnp")):
        raise RuntimeError("capture.capnp not found: build from the cusnap repository")
    if not os.path.isfile(VERSION_FILE):
        raise RuntimeError("cusnap/_version.py not found: build from the cusnap repository")


def read_version():
    namespace = {}
    exec(open(VERSION_FILE).read(), namespace)
    return namespace["__version__"]


class BuildPy(build_py):
    def run(self):
        copy_repository_facts()
        super().run()


copy_repository_facts()
setup(version=read_version(), cmdclass={"build_py": BuildPy})
