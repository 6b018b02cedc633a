"""Runs a test script inside the venv that python.package.install made (install_package.py):
the one test helper that finds it. A script calls use_package_venv(venv_dir) first; started with
another interpreter, it re-executes itself with the venv's. Without the venv (the install
skipped: no PyPI) it prints SKIPPED and exits 0, except under CI (CI=true), where it fails."""
import os
import sys


def use_package_venv(venv_dir):
    python = os.path.join(os.path.abspath(venv_dir), "bin", "python")
    if os.path.abspath(sys.prefix) == os.path.abspath(venv_dir):
        return
    if not os.path.exists(python):
        if os.environ.get("CI") == "true":
            sys.exit("%s is missing: the python.package.install test failed (CI=true)" % python)
        print("SKIPPED: no %s (pip install ./python skipped)" % python)
        sys.exit(0)
    os.execv(python, [python] + sys.argv)


def use_package_venv_from_argv():
    """use_package_venv() with the script's `--venv DIR` argument, for scripts that import the
    package at their top (before their own argument parsing)."""
    argv = sys.argv
    if "--venv" not in argv or argv.index("--venv") + 1 >= len(argv):
        sys.exit("%s: --venv DIR is required" % argv[0])
    use_package_venv(argv[argv.index("--venv") + 1])
