"""Fixtures for the tests of the installed `ctxhost` package: a ctxhost home of its own for each
test, the package's `ctxhost` command, and a home with the shipped engines installed by it."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest


@pytest.fixture(scope="session")
def command() -> str:
    """The `ctxhost` script the wheel installed beside this interpreter."""
    script = Path(sys.executable).parent / "ctxhost"
    assert script.is_file(), f"the wheel's ctxhost script is not beside {sys.executable}"
    return str(script)


def _isolate(monkeypatch: pytest.MonkeyPatch, home: Path) -> None:
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("CTXHOST_HOME", str(home / ".ctxhost"))
    # The command's config lookup starts in the working directory: an empty one.
    work = home / "work"
    work.mkdir(exist_ok=True)
    monkeypatch.chdir(work)


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An empty ctxhost home (HOME and CTXHOST_HOME) and working directory for one test."""
    _isolate(monkeypatch, tmp_path)
    return tmp_path / ".ctxhost"


@pytest.fixture(scope="session")
def shipped_home(tmp_path_factory: pytest.TempPathFactory, command: str) -> Path:
    """A home where the wheel's command installed the shipped engines (lcm, window)."""
    root = tmp_path_factory.mktemp("shipped")
    env = {**os.environ, "HOME": str(root), "CTXHOST_HOME": str(root / ".ctxhost")}
    done = subprocess.run(
        [command, "plugins", "install", "--shipped"],
        cwd=root,
        env=env,
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stderr
    return root


@pytest.fixture
def with_shipped(shipped_home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A copy of the home with the shipped engines, for one test (engines keep their stores
    in the home)."""
    root = tmp_path / "home"
    shutil.copytree(shipped_home, root, symlinks=True)
    _isolate(monkeypatch, root)
    return root / ".ctxhost"
