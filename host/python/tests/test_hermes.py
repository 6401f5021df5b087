"""ctxhost's engines inside the real Hermes Agent (PyPI 0.19.0, the suite's pinned install), with
the ctxhost plugin selected (`context.engine: ctxhost-lcm`), against a scripted model served
here on 127.0.0.1: through its CLI (`hermes -z`) and in process (`AIAgent`).

Hermes runs in its own virtualenv, named by CTXHOST_TEST_HERMES (CI: the one the slow stage's
agent tests installed); this package reaches it on PYTHONPATH."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from importlib import metadata
from pathlib import Path
from typing import Any, Callable

import pytest

import ctxhost

MODEL = "fake-model"
API_KEY = "sk-hermes-agent"
CONTEXT_LENGTH = 64_000  # the least Hermes accepts
# How Hermes 0.19.0's own compression prompt begins: it must never be sent.
HERMES_COMPACTION_PROMPT = "You are a summarization agent creating a context checkpoint."
ROUNDS = 10
# How the built-in compressor's summary opens.
SUMMARY = "[CONTEXT SUMMARY"
ROWS = "seq -f 'row %g: the quick brown fox jumps over the lazy dog' 1 500"


@pytest.fixture(scope="session")
def hermes_venv() -> Path:
    venv = os.environ.get("CTXHOST_TEST_HERMES")
    if not venv:
        pytest.skip("CTXHOST_TEST_HERMES names no Hermes Agent virtualenv (CI sets it)")
    path = Path(venv)
    assert (path / "bin" / "hermes").is_file(), f"{venv} has no bin/hermes"
    return path


@pytest.fixture(scope="session")
def package_path(tmp_path_factory: pytest.TempPathFactory, command: str) -> Path:
    """A prefix holding only this installed package (its files, entry points and `ctxhost`
    script, where its record says), whose site-packages goes on Hermes' PYTHONPATH."""
    prefix = tmp_path_factory.mktemp("ctxhost-prefix")
    distribution = metadata.distribution("ctxhost")
    info = Path(str(distribution._path))  # type: ignore[attr-defined]
    installed = info.parent
    site = prefix / installed.relative_to(Path(sys.prefix))
    site.mkdir(parents=True)
    (site / "ctxhost").symlink_to(Path(ctxhost.__file__).parent)
    (site / info.name).symlink_to(info)
    # Isolated engines run in the package's script (found through its record).
    (prefix / "bin").mkdir()
    (prefix / "bin" / "ctxhost").symlink_to(command)
    return site


class Model:
    """A scripted chat-completions model: runs a command printing a marker and 500 rows through
    Hermes' terminal tool ROUNDS times (so the conversation outgrows the engine's threshold),
    then greps every marker with `lcm_grep`, then answers. It reports a quarter of each
    request's bytes as its prompt tokens.

    A model with a `tag` of its own uses it instead of the conversation's, and puts it in its
    calls' ids: it goes on with a conversation another model began (a model switch) without
    counting that model's calls as its own."""

    def __init__(self, tag: str | None = None, talk: int = 0) -> None:
        self.tag = tag
        # Words of its own said beside each call: text no pruning of tool output shortens.
        self.talk = talk
        self.requests: list[dict[str, Any]] = []
        self.authorizations: list[str | None] = []
        self.lock = threading.Lock()

    def answer(self, body: dict[str, Any], size: int) -> tuple[dict[str, Any], int]:
        """The assistant message for one request, and the prompt tokens to report."""
        with self.lock:
            self.requests.append(body)
        if not body.get("tools"):
            # Hermes' title call, or a summarizer's request.
            return {"role": "assistant", "content": "A title"}, 100
        messages = body["messages"]
        tag = self.tag or next(
            found.group(1)
            for m in messages
            if m["role"] == "user" and (found := re.search(r"tag (\w+)", str(m["content"])))
        )
        own = f"{self.tag}_" if self.tag else ""
        tools = [t["function"]["name"] for t in body["tools"]]
        # The last call answered (the engine may have dropped the earlier ones).
        echoed = last_answered(messages, f"call_echo_{own}")
        grepped = last_answered(messages, f"call_grep_{own}")
        if echoed < ROUNDS:
            n = echoed + 1
            command = f"echo marker-{tag}-{n}; {ROWS}"
            call = f"call_echo_{own}{n}", "terminal", {"command": command}
        elif grepped < ROUNDS and "lcm_grep" in tools:
            n = grepped + 1
            call = f"call_grep_{own}{n}", "lcm_grep", {"pattern": f"marker-{tag}-{n}"}
        else:
            return {"role": "assistant", "content": f"Done {tag}."}, size // 4
        call_id, name, args = call
        function = {"name": name, "arguments": json.dumps(args)}
        said = " ".join(f"{tag}-note-{i}" for i in range(self.talk)) if self.talk else None
        return {
            "role": "assistant",
            "content": said,
            "tool_calls": [{"id": call_id, "type": "function", "function": function}],
        }, size // 4


def last_answered(messages: list[dict[str, Any]], prefix: str) -> int:
    """The highest n of the tool answers to calls `<prefix><n>` in `messages` (0: none)."""
    ids = [str(m.get("tool_call_id", "")) for m in messages if m["role"] == "tool"]
    return max([int(i[len(prefix) :]) for i in ids if i.startswith(prefix)] or [0])


def serve(model: Model) -> tuple[ThreadingHTTPServer, str]:
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args: Any) -> None:
            pass

        def send(self, status: int, body: bytes, kind: str = "application/json") -> None:
            self.send_response(status)
            self.send_header("content-type", kind)
            self.send_header("content-length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def do_GET(self) -> None:
            if self.path == "/v1/models":
                entry = {"id": MODEL, "object": "model", "context_length": CONTEXT_LENGTH}
                models = {"object": "list", "data": [entry]}
                self.send(200, json.dumps(models).encode())
            else:
                self.send(404, b'{"error": {"message": "no such route"}}')

        def do_POST(self) -> None:
            raw = self.rfile.read(int(self.headers["content-length"]))
            body = json.loads(raw)
            with model.lock:
                model.authorizations.append(self.headers.get("authorization"))
            if not self.path.startswith("/v1/chat/completions"):
                self.send(404, b'{"error": {"message": "no such route"}}')
                return
            message, tokens = model.answer(body, len(raw))
            usage = {"prompt_tokens": tokens, "completion_tokens": 10, "total_tokens": tokens + 10}
            finish = "tool_calls" if message.get("tool_calls") else "stop"
            if not body.get("stream"):
                reply = {"id": "r", "object": "chat.completion", "model": MODEL, "usage": usage,
                         "choices": [{"index": 0, "message": message, "finish_reason": finish}]}
                self.send(200, json.dumps(reply).encode())
                return
            delta: dict[str, Any] = {"role": "assistant", "content": message.get("content")}
            if message.get("tool_calls"):
                calls = message["tool_calls"]
                delta["tool_calls"] = [dict(call, index=i) for i, call in enumerate(calls)]
            chunks = [
                {"choices": [{"index": 0, "delta": delta, "finish_reason": None}]},
                {"choices": [{"index": 0, "delta": {}, "finish_reason": finish}]},
                {"choices": [], "usage": usage},
            ]
            head = {"id": "r", "object": "chat.completion.chunk", "model": MODEL}
            events = [f"data: {json.dumps({**head, **chunk})}\n\n" for chunk in chunks]
            text = "".join(events) + "data: [DONE]\n\n"
            self.send(200, text.encode(), "text/event-stream")

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, f"http://127.0.0.1:{server.server_address[1]}/v1"


@pytest.fixture
def upstream() -> Any:
    model = Model()
    server, url = serve(model)
    yield model, url
    server.shutdown()


def hermes_home(root: Path, base_url: str, engine: str, extra: str = "") -> Path:
    """A Hermes home selecting the ctxhost plugin (its own compression left on: the engine
    replaces its compressor, and `compression.enabled: false` would stop the engine too);
    `extra` is more of its config.yaml."""
    home = root / "hermes-home"
    home.mkdir()
    (home / "config.yaml").write_text(
        f"model:\n  provider: custom\n  base_url: {base_url}\n  default: {MODEL}\n"
        f"  api_key: {API_KEY}\n  context_length: {CONTEXT_LENGTH}\n"
        f"compression:\n  enabled: true\n"
        f"context:\n  engine: {engine}\n"
        f"plugins:\n  enabled: [ctxhost]\n" + extra
    )
    return home


def hermes_env(home: Path, package_path: Path, ctxhost_home: Path) -> dict[str, str]:
    return {
        **os.environ,
        "HERMES_HOME": str(home),
        "PYTHONPATH": str(package_path),
        "CTXHOST_CONFIG": str(ctxhost_home / "config.yaml"),
    }


def run_in_hermes(
    hermes_venv: Path,
    program: str,
    args: list[str],
    tmp_path: Path,
    home: Path,
    package_path: Path,
    with_shipped: Path,
) -> subprocess.CompletedProcess[str]:
    """`program` (`hermes` or `python`) of Hermes' virtualenv with `args`, run in `tmp_path`
    with Hermes' home and the ctxhost package and config the tests give it."""
    return subprocess.run(
        [str(hermes_venv / "bin" / program), *args],
        cwd=tmp_path,
        env=hermes_env(home, package_path, with_shipped),
        capture_output=True,
        text=True,
        timeout=600,
    )


def found(answer: str, marker: str) -> bool:
    """Whether an `lcm_grep` answer has a stored message holding `marker`."""
    return any(marker in match["snippet"] for match in json.loads(answer)["matches"])


def check_tool_answers(requests: list[dict[str, Any]], tag: str) -> None:
    """Hermes' model was offered lcm_grep and each of its greps found its marker."""
    last = requests[-1]["messages"]
    answers = {m["tool_call_id"]: str(m["content"]) for m in last if m["role"] == "tool"}
    for n in range(1, ROUNDS + 1):
        answer = answers.get(f"call_grep_{n}")
        assert answer is not None, f"grep {n} never answered: {list(answers)}"
        assert found(answer, f"marker-{tag}-{n}"), answer


def test_hermes_cli_compresses_through_lcm_and_answers_lcm_grep(
    hermes_venv: Path, package_path: Path, with_shipped: Path, upstream: Any, tmp_path: Path
) -> None:
    model, url = upstream
    home = hermes_home(tmp_path, url, "ctxhost-lcm")
    usage = tmp_path / "usage.json"
    done = run_in_hermes(
        hermes_venv,
        "hermes",
        ["-z", "Run the echoes, tag cli", "--usage-file", str(usage)],
        tmp_path,
        home,
        package_path,
        with_shipped,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    chats = [r for r in model.requests if r.get("tools")]
    assert all("lcm_grep" in [t["function"]["name"] for t in r["tools"]] for r in chats)
    own = [r for r in model.requests if HERMES_COMPACTION_PROMPT in json.dumps(r)]
    assert own == [], "Hermes' own compressor ran"
    # The engine compressed: a later request is shorter than the one before it.
    sizes = [len(r["messages"]) for r in chats]
    assert any(b < a for a, b in zip(sizes, sizes[1:])), f"never compressed: {sizes}"
    check_tool_answers(chats, "cli")
    assert "Done cli." in done.stdout


IN_PROCESS = r"""
import json, sys
from run_agent import AIAgent
from agent.context_compressor import ContextCompressor
url, key, model = sys.argv[1:4]
agents = [AIAgent(base_url=url, api_key=key, provider="custom", model=model, quiet_mode=True,
                  session_id=f"agent-{i}", max_iterations=60) for i in range(2)]
engines = [a.context_compressor for a in agents]
report = {"types": [type(e).__name__ for e in engines], "names": [e.name for e in engines],
          "builtin": [isinstance(e, ContextCompressor) for e in engines],
          "distinct": engines[0] is not engines[1]}
for i, agent in enumerate(agents):
    result = agent.run_conversation(f"Run the echoes, tag agent{i}")
    agent.shutdown_memory_provider(result["messages"])
report["sessions"] = [e.session.session_id for e in engines]
report["compressions"] = [e.compression_count for e in engines]
report["status"] = [e.get_status() for e in engines]
print(json.dumps(report))
"""


def test_two_hermes_agents_in_process_are_two_lcm_sessions_of_one_store(
    hermes_venv: Path, package_path: Path, with_shipped: Path, upstream: Any, tmp_path: Path
) -> None:
    model, url = upstream
    home = hermes_home(tmp_path, url, "ctxhost-lcm")
    done = run_in_hermes(
        hermes_venv,
        "python",
        ["-c", IN_PROCESS, url, API_KEY, MODEL],
        tmp_path,
        home,
        package_path,
        with_shipped,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    report = json.loads(done.stdout.strip().splitlines()[-1])
    assert report["types"] == ["CtxhostContextEngine"] * 2
    assert report["names"] == ["ctxhost-lcm"] * 2
    assert report["builtin"] == [False, False]
    assert report["distinct"] is True
    assert report["sessions"] == ["agent-0", "agent-1"]
    assert all(count >= 1 for count in report["compressions"]), json.dumps(report)
    assert not any(HERMES_COMPACTION_PROMPT in json.dumps(r) for r in model.requests)

    # One store, two sessions: each has every marker of its own conversation and none of the
    # other's.
    engines = ctxhost.Engines()
    for i in range(2):
        session = engines.session(f"agent-{i}", engine="lcm")
        for n in range(1, ROUNDS + 1):
            marker = f"marker-agent{i}-{n}"
            answer = session.handle_tool_call("lcm_grep", {"pattern": marker})
            assert found(answer, marker), answer
        other = f"marker-agent{1 - i}-1"
        answer = session.handle_tool_call("lcm_grep", {"pattern": other})
        assert json.loads(answer)["matches"] == [], answer


AUX_MODEL = "aux-summary-model"
AUX_KEY = "sk-hermes-auxiliary"


@pytest.mark.parametrize("ctxhost_names_one", [False, True], ids=["hermes-aux", "ctxhost-own"])
def test_hermes_auxiliary_compression_model_summarizes_unless_ctxhosts_config_names_one(
    hermes_venv: Path,
    package_path: Path,
    with_shipped: Path,
    upstream: Any,
    tmp_path: Path,
    ctxhost_names_one: bool,
) -> None:
    model, url = upstream
    auxiliary = Model()
    aux_server, aux_url = serve(auxiliary)
    try:
        home = hermes_home(
            tmp_path,
            url,
            "ctxhost-lcm",
            f"auxiliary:\n  compression:\n    provider: custom\n    base_url: {aux_url}\n"
            f"    model: {AUX_MODEL}\n    api_key: {AUX_KEY}\n",
        )
        if ctxhost_names_one:
            with (with_shipped / "config.yaml").open("a") as config:
                config.write("auxiliary:\n  compression:\n    provider: offline\n")
        done = run_in_hermes(
            hermes_venv,
            "hermes",
            ["-z", "Run the echoes, tag aux"],
            tmp_path,
            home,
            package_path,
            with_shipped,
        )
    finally:
        aux_server.shutdown()
    assert done.returncode == 0, done.stdout + done.stderr
    chats = [r for r in model.requests if r.get("tools")]
    sizes = [len(r["messages"]) for r in chats]
    assert any(b < a for a, b in zip(sizes, sizes[1:])), f"never compressed: {sizes}"
    assert not any(HERMES_COMPACTION_PROMPT in json.dumps(r) for r in model.requests)
    if ctxhost_names_one:
        assert auxiliary.requests == [], "ctxhost's own summarizer was named, yet Hermes' ran"
    else:
        # lcm's summaries went to Hermes' auxiliary model, with its key, and nowhere else.
        assert auxiliary.requests, "Hermes' auxiliary model was never asked for a summary"
        assert {r["model"] for r in auxiliary.requests} == {AUX_MODEL}
        assert set(auxiliary.authorizations) == {f"Bearer {AUX_KEY}"}
        assert not any(r.get("model") == AUX_MODEL for r in model.requests)
    assert "Done aux." in done.stdout


SWITCH = r"""
import json, sys
from run_agent import AIAgent
first_url, first_key, second_url, second_key, model = sys.argv[1:6]
agent, other = [AIAgent(base_url=first_url, api_key=first_key, provider="custom", model=model,
                        quiet_mode=True, session_id=f"switch-{i}", max_iterations=60)
                for i in range(2)]
first = agent.run_conversation("Run the echoes, tag one")
counts = [agent.context_compressor.compression_count]
# Hermes' /model: the main model moves to the second endpoint, and the engine hears of it.
agent.switch_model(model, "custom", api_key=second_key, base_url=second_url)
second = agent.run_conversation("Run the echoes, tag two", conversation_history=first["messages"])
# Hermes' count, and the count of the session the switch reopened.
counts += [agent.context_compressor.compression_count,
           agent.context_compressor.session.status()["compression_count"]]
agent.shutdown_memory_provider(second["messages"])
# The other agent (its engine a copy of the same registered one) did not switch.
stayed = other.run_conversation("Run the echoes, tag stay")
other.shutdown_memory_provider(stayed["messages"])
print(json.dumps({"answers": [second["final_response"], stayed["final_response"]],
                  "compressions": counts}))
"""


def summaries(model: Model) -> list[dict[str, Any]]:
    """The requests a summarizer sent `model`: without tools, carrying the conversation's
    markers (Hermes' title calls carry none)."""
    return [r for r in model.requests if not r.get("tools") and "marker-" in json.dumps(r)]


def test_a_model_switch_moves_its_agents_summaries_to_the_new_models_endpoint(
    hermes_venv: Path, package_path: Path, with_shipped: Path, tmp_path: Path
) -> None:
    # No auxiliary model in Hermes' config: its "auto" compression model is the main one, so a
    # /model switch changes it, and ctxhost's summaries follow.
    first, second = Model(), Model(tag="two")
    first_server, first_url = serve(first)
    second_server, second_url = serve(second)
    second_key = "sk-hermes-second"
    try:
        home = hermes_home(tmp_path, first_url, "ctxhost-lcm")
        done = run_in_hermes(
            hermes_venv,
            "python",
            ["-c", SWITCH, first_url, API_KEY, second_url, second_key, MODEL],
            tmp_path,
            home,
            package_path,
            with_shipped,
        )
    finally:
        first_server.shutdown()
        second_server.shutdown()
    assert done.returncode == 0, done.stdout + done.stderr
    report = json.loads(done.stdout.strip().splitlines()[-1])
    assert report["answers"] == ["Done two.", "Done stay."], json.dumps(report)
    # Hermes' count of the conversation's compressions goes on across the switch: the first
    # session's, then the reopened one's.
    before_switch, after_switch, reopened = report["compressions"]
    assert before_switch >= 1 and reopened >= 1, json.dumps(report)
    assert after_switch == before_switch + reopened, json.dumps(report)
    assert not any(HERMES_COMPACTION_PROMPT in json.dumps(r) for r in first.requests)
    assert not any(HERMES_COMPACTION_PROMPT in json.dumps(r) for r in second.requests)
    # Before the switch the first endpoint summarized, and only the first conversation.
    before = summaries(first)
    assert before, "the first model's endpoint was never asked for a summary"
    assert not any("marker-two-" in json.dumps(r) for r in before), "summaries stayed behind"
    # After it, the second endpoint summarized the second conversation, with its own key.
    after = summaries(second)
    assert after, "the second model's endpoint was never asked for a summary"
    assert any("marker-two-" in json.dumps(r) for r in after)
    assert set(second.authorizations) == {f"Bearer {second_key}"}
    assert set(first.authorizations) == {f"Bearer {API_KEY}"}
    # The other agent's summaries stayed with its own model, after the first agent's switch.
    assert any("marker-stay-" in json.dumps(r) for r in before), "the other agent never summarized"
    assert not any("marker-stay-" in json.dumps(r) for r in after), "the other agent switched"


def test_a_resumed_hermes_session_folds_the_summary_the_compressor_wrote_before(
    hermes_venv: Path, package_path: Path, with_shipped: Path, tmp_path: Path
) -> None:
    # `hermes chat --continue` is a new process: its compressor never wrote the summary the
    # resumed history holds, but ctxhost's record of the session says it did. The offline
    # summary, so that what one summary carries to the next can be checked.
    (with_shipped / "config.yaml").write_text("auxiliary:\n  compression:\n    provider: offline\n")
    before = Model(talk=3000)
    server, url = serve(before)
    home = hermes_home(tmp_path, url, "ctxhost-compressor")
    args = ["chat", "-Q", "-q", "Run the echoes, tag before"]
    done = run_in_hermes(hermes_venv, "hermes", args, tmp_path, home, package_path, with_shipped)
    server.shutdown()
    assert done.returncode == 0, done.stdout + done.stderr
    sent = [r for r in before.requests if r.get("tools")]
    assert any(SUMMARY in json.dumps(r) for r in sent), "the first run never compressed"

    after = Model(tag="after", talk=3000)
    server, resumed_url = serve(after)
    config = home / "config.yaml"
    config.write_text(config.read_text().replace(url, resumed_url))
    args = ["chat", "-Q", "--continue", "-q", "Run the echoes again, tag after"]
    done = run_in_hermes(hermes_venv, "hermes", args, tmp_path, home, package_path, with_shipped)
    server.shutdown()
    assert done.returncode == 0, done.stdout + done.stderr
    sent = [r for r in after.requests if r.get("tools")]
    last = [str(m.get("content")) for m in sent[-1]["messages"]]
    summaries = [text for text in last if text.startswith(SUMMARY)]
    assert len(summaries) == 1, last
    # Folded: what the first run did is carried in the new summary's own sections, not
    # quoted as a turn (or lost with it).
    assert "marker-before-" in summaries[0], summaries[0]
    assert "(CONTEXT SUMMARY" not in summaries[0], summaries[0]
