"""Hermes Agent's context-engine interface, driven in process over one recorded session: ctxhost's
lcm (`ctxhost-lcm`, this package's Hermes engine) or lossless-hermes-py (PyPI), each with the
same test model on 127.0.0.1 as Hermes' auxiliary compression model (the summarizer).

    python hermes_lcm.py ctxhost     # in a Python with Hermes Agent 0.19.0 and ctxhost
    python hermes_lcm.py lossless    # in a Python with Hermes Agent 0.19.0 and lossless-hermes-py

The session is the README's recorded one (examples/session.json: 468 messages, SWE-agent's
22 demonstration trajectories one after another). It is replayed as Hermes' agent loop drives
an engine: before each assistant message (a model call), the prompt's tokens (a quarter of its
JSON bytes, as the test model reports them) go to `update_from_response`, and when
`should_compress` says so the context becomes `compress`'s answer; the session ends with
`on_session_end`. Printed: the time spent in the engine's calls (wall clock), the CPU time
the replay took (this process and the engine processes it started: on a shared machine the
wall clock waits for other work, the CPU time much less), the compressions, the summarizer's
calls (requests the test model answered), the messages in the engine's store afterwards, and
what the model would be sent last.
Everything runs in a temporary directory (Hermes' home, ctxhost's home, the stores).
"""

from __future__ import annotations

import json
import os
import resource
import sqlite3
import subprocess
import sys
import tempfile
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

SESSION_FILE = Path(__file__).resolve().parents[3] / "examples" / "session.json"
MODEL = "bench-model"
SUMMARY_MODEL = "bench-summary-model"
KEY = "sk-bench"
CONTEXT_LENGTH = 64_000  # the least Hermes accepts
SESSION = "bench"


def recorded_session() -> list[dict[str, Any]]:
    return json.loads(SESSION_FILE.read_text())


def tokens(messages: list[dict[str, Any]]) -> int:
    return len(json.dumps(messages)) // 4


class TestModel:
    """An OpenAI-compatible model that answers every request with a short summary, counting
    the requests (the engines call it only to summarize)."""

    def __init__(self) -> None:
        self.calls = 0
        self.lock = threading.Lock()

    def serve(self) -> tuple[ThreadingHTTPServer, str]:
        model = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def send(self, body: dict[str, Any]) -> None:
                raw = json.dumps(body).encode()
                self.send_response(200)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(raw)))
                self.end_headers()
                self.wfile.write(raw)

            def do_GET(self) -> None:
                entry = {"id": MODEL, "object": "model", "context_length": CONTEXT_LENGTH}
                self.send({"object": "list", "data": [entry]})

            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers["content-length"])))
                with model.lock:
                    model.calls += 1
                text = "Summary: the agent inspected files, ran commands and fixed the issue."
                message = {"role": "assistant", "content": text}
                self.send({
                    "id": "s", "object": "chat.completion", "model": body.get("model"),
                    "choices": [{"index": 0, "message": message, "finish_reason": "stop"}],
                    "usage": {"prompt_tokens": 100, "completion_tokens": 20, "total_tokens": 120},
                })

        server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=server.serve_forever, daemon=True).start()
        return server, f"http://127.0.0.1:{server.server_address[1]}/v1"


def hermes_home(root: Path, url: str) -> Path:
    """Hermes' home: the test model as its main model and its auxiliary compression model."""
    home = root / "hermes-home"
    home.mkdir()
    (home / "config.yaml").write_text(
        f"model:\n  provider: custom\n  base_url: {url}\n  default: {MODEL}\n"
        f"  api_key: {KEY}\n  context_length: {CONTEXT_LENGTH}\n"
        f"auxiliary:\n  compression:\n    provider: custom\n    base_url: {url}\n"
        f"    model: {SUMMARY_MODEL}\n    api_key: {KEY}\n"
    )
    return home


def ctxhost_engine(root: Path) -> tuple[Any, Any]:
    """ctxhost's Hermes engine on lcm (installed from the package into a home of its own), and
    how to count its store's messages."""
    import ctxhost
    from ctxhost._cli import _installed_script
    from ctxhost.hermes import context_engine_class

    os.environ["CTXHOST_HOME"] = str(root / "ctxhost-home")
    os.environ["CTXHOST_CONFIG"] = str(root / "ctxhost-home" / "config.yaml")
    subprocess.run(
        [_installed_script(), "plugins", "install", "--shipped"],
        cwd=root, check=True, capture_output=True,
    )
    engine = context_engine_class()("ctxhost-lcm")

    def stored() -> dict[str, Any]:
        details = engine.session.status()["details"]
        return {"messages_stored": details["messages"], "summarizer": engine._engines.summarizer,
                "ctxhost": ctxhost.__version__}

    return engine, stored


def lossless_engine(root: Path, session: list[dict[str, Any]]) -> tuple[Any, Any]:
    """lossless-hermes-py's engine, as its plugin registers it, given Hermes' own LLM call: as
    released it never sets one, and has no summarizer in Hermes at all."""
    from importlib import metadata

    from agent.auxiliary_client import async_call_llm
    from lossless_hermes import LcmContextEngine

    engine = LcmContextEngine(model="", provider="")
    engine.call_llm_fn = async_call_llm

    def stored() -> dict[str, Any]:
        with sqlite3.connect(engine.config.database_path) as db:
            contents = {row[0] for row in db.execute("SELECT content FROM messages")}
            count = db.execute("SELECT count(*) FROM messages").fetchone()[0]
        recoverable = sum(str(m.get("content", "")) in contents for m in session)
        return {"messages_stored": count, "recorded_messages_found": recoverable,
                "lossless_hermes_py": metadata.version("lossless-hermes-py")}

    return engine, stored


def cpu_seconds() -> float:
    """The CPU time (user and system) of this process, of the child processes it has reaped,
    and of the processes descending from it that still run (an isolated engine's process)."""
    own = resource.getrusage(resource.RUSAGE_SELF)
    reaped = resource.getrusage(resource.RUSAGE_CHILDREN)
    total = own.ru_utime + own.ru_stime + reaped.ru_utime + reaped.ru_stime
    tick = os.sysconf("SC_CLK_TCK")
    parents: dict[int, int] = {}
    times: dict[int, float] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            stat = Path(f"/proc/{entry}/stat").read_text()
        except OSError:
            continue  # it ended meanwhile
        fields = stat[stat.rindex(")") + 2 :].split()
        parents[int(entry)] = int(fields[1])
        times[int(entry)] = (int(fields[11]) + int(fields[12])) / tick
    me = os.getpid()
    for pid, seconds in times.items():
        ancestor = parents.get(pid)
        while ancestor and ancestor != me:
            ancestor = parents.get(ancestor)
        if ancestor == me:
            total += seconds
    return total


def replay(engine: Any, session: list[dict[str, Any]], url: str) -> dict[str, Any]:
    """Hermes' agent loop over the recorded session; the seconds spent in the engine's calls,
    and the CPU seconds the replay took."""
    spent = 0.0
    cpu_before = cpu_seconds()
    compressions = 0

    def timed(call: Any, *args: Any, **kwargs: Any) -> Any:
        nonlocal spent
        start = time.perf_counter()
        try:
            return call(*args, **kwargs)
        finally:
            spent += time.perf_counter() - start

    timed(engine.update_model, model=MODEL, context_length=CONTEXT_LENGTH, base_url=url,
          api_key=KEY, provider="custom", api_mode="chat_completions")
    timed(engine.on_session_start, SESSION, model=MODEL)
    messages: list[dict[str, Any]] = []
    for message in session:
        if message["role"] == "assistant":
            prompt = tokens(messages)
            usage = {"prompt_tokens": prompt, "completion_tokens": 50,
                     "total_tokens": prompt + 50}
            timed(engine.update_from_response, usage)
            if timed(engine.should_compress, prompt):
                messages = timed(engine.compress, messages, current_tokens=prompt)
                compressions += 1
        messages.append(message)
    timed(engine.on_session_end, SESSION, messages)
    cpu = cpu_seconds() - cpu_before
    return {"engine_seconds": round(spent, 3), "cpu_seconds": round(cpu, 3),
            "compressions": compressions,
            "last_context_messages": len(messages), "last_context_tokens": tokens(messages)}


def main() -> None:
    which = sys.argv[1] if len(sys.argv) > 1 else ""
    if which not in ("ctxhost", "lossless"):
        sys.exit("usage: hermes_lcm.py ctxhost|lossless")
    model = TestModel()
    server, url = model.serve()
    session = recorded_session()
    with tempfile.TemporaryDirectory(prefix="hermes-lcm-bench-") as temp:
        root = Path(temp)
        os.environ["HERMES_HOME"] = str(hermes_home(root, url))
        if which == "ctxhost":
            engine, stored = ctxhost_engine(root)
        else:
            engine, stored = lossless_engine(root, session)
        report: dict[str, Any] = {"engine": which, "session_messages": len(session),
                                  "session_tokens": tokens(session),
                                  "context_length": CONTEXT_LENGTH}
        report.update(replay(engine, session, url))
        report["summarizer_calls"] = model.calls
        report.update(stored())
    server.shutdown()
    print(json.dumps(report))


if __name__ == "__main__":
    main()
