"""Offline stand-in for the get-pip.py that ansible-test downloads to bootstrap pip into its sanity venvs.

ansible-test (ansible_test/_util/target/setup/requirements.py, bootstrap()) creates each sanity test's
virtual environment without pip, then looks for ~/.ansible/test/cache/get_pip_<X_Y>.py and downloads
get-pip-<X.Y>.py from ci-files.testing.ansible.com only when that file is missing. It runs the file
through its quiet_pip.py wrapper (GET_PIP=<path>) with pip options and the pinned infrastructure
packages as arguments (pip==X.Y, and setuptools/wheel pins before ansible-core 2.18).

The real get-pip.py carries pip as an embedded zip, puts it on sys.path and runs
`pip install --upgrade --force-reinstall <arguments> pip [setuptools] [wheel]`. This file does the
same with pip's wheel from the package index, which tests/sanity/run.sh saves beside it as
pip-<X.Y>-py3-none-any.whl (a wheel on sys.path is importable: ensurepip runs its bundled pip so).
"""
from __future__ import annotations

import argparse
import os
import re
import sys


def pip_version(path: str) -> str:
    """get_pip_24_2.py -> 24.2 (the name ansible-test gives the cached script)."""
    match = re.fullmatch(r"get_pip_([0-9_]+)\.py", os.path.basename(path))
    if not match:
        raise SystemExit(f"{path}: expected a name like get_pip_24_2.py (ansible-test's cache name)")
    return match.group(1).replace("_", ".")


def install_arguments(argv: list[str]) -> list[str]:
    """pip install arguments, as get-pip.py's determine_pip_install_arguments() builds them."""
    parser = argparse.ArgumentParser(add_help=False)
    parser.add_argument("--no-setuptools", action="store_true")
    parser.add_argument("--no-wheel", action="store_true")
    known, rest = parser.parse_known_args(argv)
    rest.append("pip")
    if not known.no_setuptools:
        rest.append("setuptools")
    if not known.no_wheel:
        rest.append("wheel")
    return ["install", "--upgrade", "--force-reinstall"] + rest


def main() -> None:
    here = os.path.dirname(os.path.abspath(__file__))
    version = pip_version(__file__)
    wheel = os.path.join(here, f"pip-{version}-py3-none-any.whl")
    if not os.path.isfile(wheel):
        raise SystemExit(f"{wheel} is missing: tests/sanity/run.sh saves it there (pip download pip=={version})")
    sys.path.insert(0, wheel)
    from pip._internal.cli.main import main as pip_main  # pylint: disable=import-outside-toplevel

    sys.exit(pip_main(install_arguments(sys.argv[1:]) + ["--find-links", here]))


if __name__ == "__main__":
    main()
