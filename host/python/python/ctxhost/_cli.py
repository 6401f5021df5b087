"""The `ctxhost` script: the command's own code (not a re-implementation), run in process."""

from __future__ import annotations

import os
import sys


def main() -> None:
    """Runs the `ctxhost` command with this process's arguments and exits with its status."""
    import ctxhost  # noqa: F401  (embeds the package: its plugins directory, its script)
    from ctxhost import _native

    script = os.path.abspath(sys.argv[0])
    sys.stdout.flush()
    sys.exit(_native.run_command([script, *sys.argv[1:]], script))


def _installed_script() -> str | None:
    """The path of the `ctxhost` script this package installed, if it did."""
    from importlib import metadata

    try:
        files = metadata.distribution("ctxhost").files or []
    except metadata.PackageNotFoundError:
        return None
    for file in files:
        if file.name in ("ctxhost", "ctxhost.exe") and file.parent.name in ("bin", "Scripts"):
            path = os.path.realpath(str(file.locate()))
            if os.path.isfile(path):
                return path
    return None
