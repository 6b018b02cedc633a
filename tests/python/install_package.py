#!/usr/bin/env python3
"""`pip install ./python` into a fresh venv, as a user would (docs/python.md), from a copy of the
parts of the repository the package build reads (python/, format/schema/, the top-level
CMakeLists.txt for the version), so the source tree is left as it was, and the pinned test tools
of tests/requirements.txt beside it. The other python.* tests
and the format tests run with that venv's interpreter (ctest fixture python.package).

Without network or PyPI the install cannot succeed: outside CI that prints SKIPPED (the tests
that need it skip too); under CI (CI=true) it is a failure.

Usage: install_package.py --source REPO --workdir DIR
"""
import argparse
import os
import shutil
import subprocess
import sys
import venv


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--source", required=True)
    ap.add_argument("--workdir", required=True)
    args = ap.parse_args()
    stage = os.path.join(args.workdir, "stage")
    env_dir = os.path.join(args.workdir, "venv")
    for d in (stage, env_dir):
        shutil.rmtree(d, ignore_errors=True)
    shutil.copytree(os.path.join(args.source, "python"), os.path.join(stage, "python"),
                    ignore=shutil.ignore_patterns("build", "*.egg-info", "__pycache__",
                                                  "*.capnp", "_version.py"))
    shutil.copytree(os.path.join(args.source, "format", "schema"),
                    os.path.join(stage, "format", "schema"))
    shutil.copyfile(os.path.join(args.source, "CMakeLists.txt"),
                    os.path.join(stage, "CMakeLists.txt"))
    venv.EnvBuilder(with_pip=True).create(env_dir)
    python = os.path.join(env_dir, "bin", "python")
    env = dict(os.environ, PIP_CACHE_DIR=os.path.join(args.workdir, "pip-cache"),
               PIP_DISABLE_PIP_VERSION_CHECK="1")
    result = subprocess.run([python, "-m", "pip", "install", "-q", "./python"], cwd=stage,
                            env=env)
    if result.returncode != 0:
        shutil.rmtree(env_dir, ignore_errors=True)
        if os.environ.get("CI") == "true":
            print("pip install ./python failed (CI=true: a failure)")
            return 1
        print("SKIPPED: pip install ./python failed (no PyPI?); the python tests skip")
        return 0
    # The test-only tools of the tests that run in this venv (tests/requirements.txt: Perfetto's
    # trace protos for timeline.perfetto_python), pinned in one place.
    result = subprocess.run([python, "-m", "pip", "install", "-q", "-r",
                             os.path.join(args.source, "tests", "requirements.txt")], env=env)
    if result.returncode != 0:
        shutil.rmtree(env_dir, ignore_errors=True)
        if os.environ.get("CI") == "true":
            print("pip install -r tests/requirements.txt failed (CI=true: a failure)")
            return 1
        print("SKIPPED: pip install -r tests/requirements.txt failed (no PyPI?); the python "
              "tests skip")
        return 0
    subprocess.run([python, "-c", "import cusnap, sys; print('cusnap', cusnap.__version__, "
                    "'schema', cusnap.load_schema().schemaVersion, 'in', sys.prefix)"],
                   check=True, cwd=args.workdir)
    return 0


if __name__ == "__main__":
    sys.exit(main())
