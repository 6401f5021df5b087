"""The `ctxhost` command the wheel installs: the command's own code, run from the package."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import urllib.request
from pathlib import Path

import ctxhost


def test_the_command_reports_the_packages_version(command: str, home: Path) -> None:
    done = subprocess.run([command, "--version"], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == f"ctxhost {ctxhost.__version__}"


def test_a_usage_error_exits_2_as_the_binary_does(command: str, home: Path) -> None:
    done = subprocess.run([command, "no-such-command"], capture_output=True, text=True)
    assert done.returncode == 2
    assert "no-such-command" in done.stderr


def test_serve_answers_its_health_check_and_stops_on_sigterm(command: str, home: Path) -> None:
    gateway = subprocess.Popen(
        [command, "serve", "--listen", "127.0.0.1:0"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        address = None
        seen = []
        assert gateway.stderr is not None
        for line in gateway.stderr:
            seen.append(line)
            found = re.search(r"listening on (http://[0-9.]+:[0-9]+)", line)
            if found:
                address = found.group(1)
                break
        assert address, "".join(seen)
        with urllib.request.urlopen(f"{address}/healthz", timeout=30) as response:
            assert response.status == 200
            assert b"ok" in response.read()
        gateway.send_signal(signal.SIGTERM)
        assert gateway.wait(timeout=60) == 0
    finally:
        if gateway.poll() is None:
            gateway.kill()
            gateway.wait()


def test_plugins_install_shipped_takes_the_engines_from_the_wheel(command: str, home: Path) -> None:
    done = subprocess.run(
        [command, "plugins", "install", "--shipped"], capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr
    package = Path(ctxhost.__file__).parent
    assert f"in {package / 'plugins'}" in done.stdout
    for engine in ("lcm", "window"):
        installed = home / "plugins" / "context_engine" / engine
        assert (installed / "plugin.yaml").is_file()
        assert list(installed.glob("lib*.so")), f"{engine}'s library"
    listed = subprocess.run([command, "plugins", "list"], capture_output=True, text=True)
    assert listed.returncode == 0, listed.stderr
    assert re.search(r"^\s+lcm\s+user plugin dir\s+\S+\s+\S+\s+enabled", listed.stdout, re.M)
    # Selected, the engine runs in a child process started from the package's script.
    used = subprocess.run([command, "plugins", "use", "lcm"], capture_output=True, text=True)
    assert used.returncode == 0, used.stderr
    session = ctxhost.Engines().session("after-install")
    assert session.engine_name == "lcm"
    assert os.path.isfile(command)
