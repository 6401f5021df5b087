"""The session API of `ctxhost`, through the installed package, on real engines: the built-in
compressor, and lcm as `ctxhost plugins install --shipped` installed it from the wheel."""

from __future__ import annotations

import copy
import subprocess
import threading
from pathlib import Path

import pytest

import ctxhost


def conversation(turns: int, words: int = 60, topic: str = "the harbour") -> list[dict]:
    """A system prompt and `turns` user/assistant pairs of about `words` words each."""
    messages = [{"role": "system", "content": "You are a helpful assistant."}]
    for turn in range(turns):
        filler = " ".join(f"{topic}-{turn}-{word}" for word in range(words))
        messages.append({"role": "user", "content": f"Question {turn}: tell me about {filler}"})
        messages.append({"role": "assistant", "content": f"Answer {turn}: {filler}"})
    return messages


def unknown_keys(message: dict) -> list[str]:
    """The keys of `message` the host's message model does not know, in their order."""
    known = {"role", "content", "tool_calls", "tool_call_id", "name"}
    return [key for key in message if key not in known]


def test_a_session_offers_every_call_of_the_compressor(home: Path) -> None:
    engines = ctxhost.Engines()
    assert engines.default_engine == "compressor"
    session = engines.session("every-call", model="test-model", context_length=4000)
    assert session.engine_name == "compressor"
    assert session.session_id == "every-call"
    status = session.status()
    assert status["context_length"] == 4000
    threshold = status["threshold_tokens"]
    assert 0 < threshold < 4000

    assert session.should_compress(threshold + 1) is True
    assert session.should_compress(1) is False
    long = conversation(40)
    assert session.should_compress_preflight(long) is True
    assert session.should_compress_preflight(conversation(1, words=5)) is False

    session.update_from_response(
        {"prompt_tokens": 1234, "completion_tokens": 5, "total_tokens": 1239, "ignored": {"x": 1}}
    )
    assert session.status()["last_prompt_tokens"] == 1234

    compressed = session.compress(long, current_tokens=threshold * 3, focus_topic="the harbour")
    assert 2 <= len(compressed) < len(long)
    assert compressed[0] == long[0], "the system prompt is kept"
    assert compressed[-1] == long[-1], "the newest turn is kept"
    assert session.status()["compression_count"] == 1

    smaller = session.compress(long, force=True, target_tokens=1500)
    assert len(smaller) < len(long)

    assert session.tool_schemas() == []
    with pytest.raises(ctxhost.EngineError, match="no_such_tool"):
        session.handle_tool_call("no_such_tool", {})

    session.update_model("another-model", 8000)
    assert session.status()["context_length"] == 8000

    assert session.has_select_context is False
    with pytest.raises(ctxhost.NotSupported) as refused:
        session.select_context(long, incoming_message=long[-1], budget_tokens=1000)
    assert str(refused.value) == "engine 'compressor' has no operation 'select_context'"

    session.on_session_end(compressed)
    session.reset()
    assert session.status()["last_prompt_tokens"] == 0

    twin = session.clone()
    assert twin is not session
    assert (twin.session_id, twin.engine_name) == ("every-call", "compressor")
    assert twin.should_compress(1) is False


def summary_of(messages: list[dict]) -> str:
    """The one compressor summary in `messages`."""
    summaries = [
        m["content"]
        for m in messages
        if isinstance(m.get("content"), str) and m["content"].startswith("[CONTEXT SUMMARY")
    ]
    assert len(summaries) == 1, messages
    return summaries[0]


def test_a_resumed_session_folds_the_summary_its_earlier_process_wrote(home: Path) -> None:
    # An agent resumed in a new process (`hermes chat --continue`) compresses the history the
    # earlier one left: the summary there is the engine's own, so its facts stay.
    long = conversation(30)
    long[3:3] = [
        {"role": "user", "content": "Never reveal the vault code QX-7731."},
        {"role": "assistant", "content": "Understood."},
    ]
    first = ctxhost.Engines().session("resumed", context_length=4000)
    earlier = first.compress(long, force=True, target_tokens=1500)
    assert "QX-7731" in summary_of(earlier)

    later = earlier + conversation(30, topic="the lighthouse")[1:]
    resumed = ctxhost.Engines().session("resumed", context_length=4000)
    folded = summary_of(resumed.compress(later, force=True, target_tokens=1500))
    assert "QX-7731" in folded
    assert folded.count("## Standing Facts") == 1, folded

    # Another session's engine never wrote it: to that one it is a turn.
    stranger = ctxhost.Engines().session("stranger", context_length=4000)
    assert summary_of(stranger.compress(later, force=True, target_tokens=1500)) != folded


def test_a_message_with_unknown_fields_comes_back_unchanged(home: Path) -> None:
    odd = {
        "role": "user",
        "content": [
            {"type": "text", "text": "look at this"},
            {"type": "image_url", "image_url": {"url": "data:image/png;base64,AAAA"}},
        ],
        "x_client": {"nested": [1, 2.5, None, True, "é"], "big": 2**53},
        "name": "alice",
        "cache_control": {"type": "ephemeral"},
    }
    call = {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {
                "id": "call_1",
                "type": "function",
                "function": {"name": "read", "arguments": '{"path": "a.txt"}'},
                "x_call_extra": 7,
            }
        ],
        "reasoning_content": "hidden",
    }
    answer = {"role": "tool", "tool_call_id": "call_1", "content": "text", "x_tool": [1]}
    messages = [{"role": "system", "content": "sys", "x_sys": 1}, odd, call, answer]
    original = copy.deepcopy(messages)
    session = ctxhost.Engines().session("unknown-fields")
    # Nothing to compress: the conversation comes back whole, field for field and in order.
    back = session.compress(messages)
    assert back == original
    # The host's message model writes its own fields (role, content, tool_calls, tool_call_id,
    # name) first; the others keep their order.
    assert [unknown_keys(m) for m in back] == [unknown_keys(m) for m in original]
    assert [list(m) for m in back[1]["content"]] == [list(p) for p in original[1]["content"]]
    assert messages == original, "the input list is not changed"

    # Compressed: what survives of it is still unchanged.
    long = conversation(40) + [odd]
    compressed = session.compress(long, force=True, current_tokens=100_000)
    assert len(compressed) < len(long)
    assert compressed[-1] == odd
    assert unknown_keys(compressed[-1]) == unknown_keys(odd)


def test_errors_are_exceptions_with_the_hosts_one_line(home: Path, command: str) -> None:
    missing = home.parent / "missing.yaml"
    with pytest.raises(ctxhost.ConfigError) as error:
        ctxhost.Engines(config=missing)
    # The same line the command prints after "error: ".
    cli = subprocess.run(
        [command, "--config", str(missing), "engines"], capture_output=True, text=True
    )
    assert cli.returncode == 1
    assert cli.stderr.strip() == f"error: {error.value}"
    assert "\n" not in str(error.value)
    assert isinstance(error.value, ctxhost.Error)

    broken = home.parent / "broken.yaml"
    broken.write_text("model:\n  context_length: lots\n")
    with pytest.raises(ctxhost.ConfigError, match="context_length"):
        ctxhost.Engines(config=str(broken))

    engines = ctxhost.Engines()
    with pytest.raises(ctxhost.EngineError) as error:
        engines.session("s", engine="no-such-engine")
    assert str(error.value).startswith("context engine 'no-such-engine' not found")
    assert isinstance(error.value, ctxhost.Error)

    session = engines.session("s")
    with pytest.raises(ValueError, match="message 1"):
        session.compress([{"role": "system", "content": "x"}, {"content": "no role"}])
    with pytest.raises(TypeError):
        session.compress("not a list")
    with pytest.raises(ValueError, match="prompt_tokens"):
        session.update_from_response({"completion_tokens": 3})


def test_two_threads_run_two_sessions_at_once(home: Path) -> None:
    engines = ctxhost.Engines()
    sessions = [engines.session(f"thread-{i}", context_length=4000) for i in range(2)]
    inputs = [conversation(30, topic=f"topic{i}") for i in range(2)]
    barrier = threading.Barrier(2)
    results: list[list[list[dict]] | None] = [None, None]
    failures: list[BaseException] = []

    def work(index: int) -> None:
        try:
            barrier.wait()
            outputs = []
            for _ in range(5):
                outputs.append(sessions[index].compress(inputs[index], force=True))
            results[index] = outputs
        except BaseException as error:  # noqa: BLE001 (reported below)
            failures.append(error)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert failures == []
    for index, outputs in enumerate(results):
        assert outputs is not None and len(outputs) == 5
        for output in outputs:
            assert len(output) < len(inputs[index])
            assert output[-1] == inputs[index][-1]
            other = f"topic{1 - index}"
            assert all(other not in str(message.get("content")) for message in output)
    assert [s.status()["compression_count"] for s in sessions] == [5, 5]


def test_lcm_from_the_wheel_keeps_every_message_and_answers_its_tools(with_shipped: Path) -> None:
    engines = ctxhost.Engines()
    session = engines.session("lossless", engine="lcm", context_length=4000)
    assert session.engine_name == "lcm"
    names = [tool["function"]["name"] for tool in session.tool_schemas()]
    assert "lcm_grep" in names
    long = conversation(40)
    long[3]["content"] += " The secret word is pelican."
    view = session.compress(long, force=True)
    assert len(view) < len(long)
    found = session.handle_tool_call("lcm_grep", {"pattern": "pelican"})
    assert "pelican" in found

    # lcm offers select_context: a request keeps its messages, in order, and the same request
    # gets the same selection (the provider's prompt cache holds).
    assert session.has_select_context is True
    request = view + [{"role": "user", "content": "Which secret word did I give you?"}]
    selected = session.select_context(request, budget_tokens=2000)
    kept = [message for message in selected if message in request]
    assert kept == request
    assert session.select_context(request, budget_tokens=2000) == selected

    # A clone is another handle on the same engine and store.
    twin = session.clone()
    assert twin.engine_name == "lcm"
    assert "pelican" in twin.handle_tool_call("lcm_grep", {"pattern": "pelican"})


def test_lcm_runs_in_process_when_the_config_says_so(with_shipped: Path) -> None:
    config = with_shipped / "config.yaml"
    config.write_text(config.read_text() + "\nplugins:\n  lcm:\n    isolation: in_process\n")
    session = ctxhost.Engines().session("in-process", engine="lcm", context_length=4000)
    view = session.compress(conversation(40), force=True)
    assert len(view) < 81
    assert session.status()["compression_count"] == 1
