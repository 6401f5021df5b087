"""The summarizer a program brings (`Engines(summarizer=...)`, Hermes' auxiliary model): it
writes the engines' summaries unless ctxhost's config names a provider, whose summarizer then
wins. The model is an OpenAI-compatible one served here on 127.0.0.1."""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, Iterator

import pytest

import ctxhost
from test_session import conversation

KEY_ENV = "CTXHOST_TEST_SUMMARY_KEY"
KEY = "sk-summary-model"


class SummaryModel:
    """Answers every chat completion with a summary, keeping what each request carried."""

    def __init__(self) -> None:
        self.calls: list[dict[str, Any]] = []
        self.lock = threading.Lock()

    def serve(self) -> tuple[ThreadingHTTPServer, str]:
        model = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers["content-length"])))
                with model.lock:
                    model.calls.append(
                        {"path": self.path, "body": body, "auth": self.headers["authorization"]}
                    )
                message = {"role": "assistant", "content": "Summary: the harbour was discussed."}
                reply = {
                    "id": "s",
                    "object": "chat.completion",
                    "model": body.get("model"),
                    "choices": [{"index": 0, "message": message, "finish_reason": "stop"}],
                    "usage": {"prompt_tokens": 10, "completion_tokens": 8, "total_tokens": 18},
                }
                raw = json.dumps(reply).encode()
                self.send_response(200)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(raw)))
                self.end_headers()
                self.wfile.write(raw)

        server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=server.serve_forever, daemon=True).start()
        return server, f"http://127.0.0.1:{server.server_address[1]}/v1"


@pytest.fixture
def summary_model(monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[SummaryModel, str]]:
    monkeypatch.setenv(KEY_ENV, KEY)
    model = SummaryModel()
    server, url = model.serve()
    yield model, url
    server.shutdown()


def given(url: str) -> dict[str, Any]:
    return {"provider": "custom", "model": "aux-model", "base_url": url, "api_key_env": KEY_ENV}


def compress_once(engines: ctxhost.Engines) -> None:
    session = engines.session("summarized", model="test-model", context_length=4000)
    long = conversation(40)
    compressed = session.compress(long, force=True)
    assert len(compressed) < len(long)


def test_the_given_summarizer_writes_the_summaries_when_the_config_names_none(
    home: Path, summary_model: tuple[SummaryModel, str]
) -> None:
    model, url = summary_model
    engines = ctxhost.Engines(summarizer=given(url))
    assert engines.summarizer == f"custom:aux-model@{url}"
    compress_once(engines)
    assert model.calls, "the summary model was never asked"
    for call in model.calls:
        assert call["path"] == "/v1/chat/completions"
        assert call["body"]["model"] == "aux-model"
        assert call["auth"] == f"Bearer {KEY}"


def test_the_configs_summarizer_wins_over_the_given_one(
    home: Path, summary_model: tuple[SummaryModel, str], tmp_path: Path
) -> None:
    model, url = summary_model
    config = tmp_path / "config.yaml"
    config.write_text("auxiliary:\n  compression:\n    provider: offline\n")
    engines = ctxhost.Engines(config, summarizer=given(url))
    assert engines.summarizer == "offline"
    compress_once(engines)
    assert model.calls == []
    # A section without a provider names no summarizer: the given one serves.
    config.write_text("auxiliary:\n  compression:\n    timeout: 20\n")
    assert ctxhost.Engines(config, summarizer=given(url)).summarizer.startswith("custom:")


def test_a_given_summarizer_that_cannot_work_is_a_config_error(home: Path) -> None:
    with pytest.raises(ctxhost.ConfigError) as refused:
        ctxhost.Engines(summarizer={"provider": "custom", "model": "aux-model"})
    assert str(refused.value).startswith(
        "summarizer: auxiliary.compression.base_url: required when provider is custom"
    ), str(refused.value)
    with pytest.raises(ctxhost.ConfigError, match="summarizer: auxiliary.compression"):
        ctxhost.Engines(summarizer={"provider": "custom", "no_such_key": 1})
