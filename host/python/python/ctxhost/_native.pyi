"""Types of ctxhost's extension module (re-exported by `ctxhost`)."""

from os import PathLike
from pathlib import Path
from typing import Any

__version__: str

Message = dict[str, Any]

class Error(Exception):
    """Every error of ctxhost; its message is the host's one line."""

class ConfigError(Error):
    """The configuration could not be read or is wrong, or an engine refused its settings."""

class EngineError(Error):
    """An engine could not be opened, failed, panicked or broke its output contract."""

class NotSupported(Error):
    """The session's engine does not offer this operation."""

class Engines:
    """The engines of one configuration, opened as the `ctxhost` command opens them."""

    def __init__(
        self,
        config: str | PathLike[str] | None = None,
        summarizer: dict[str, Any] | None = None,
    ) -> None: ...
    @property
    def default_engine(self) -> str: ...
    @property
    def summarizer(self) -> str: ...
    @property
    def config_path(self) -> Path: ...
    def session(
        self,
        session_id: str,
        engine: str | None = None,
        model: str | None = None,
        context_length: int | None = None,
    ) -> Session: ...

class Session:
    """One conversation's engine, with the whole session API."""

    @property
    def session_id(self) -> str: ...
    @property
    def engine_name(self) -> str: ...
    @property
    def has_select_context(self) -> bool: ...
    def should_compress(self, prompt_tokens: int) -> bool: ...
    def should_compress_preflight(self, messages: list[Message]) -> bool: ...
    def compress(
        self,
        messages: list[Message],
        *,
        current_tokens: int | None = None,
        focus_topic: str | None = None,
        force: bool = False,
        target_tokens: int | None = None,
    ) -> list[Message]: ...
    def update_from_response(self, usage: dict[str, Any]) -> None: ...
    def tool_schemas(self) -> list[dict[str, Any]]: ...
    def handle_tool_call(self, name: str, args: dict[str, Any]) -> str: ...
    def status(self) -> dict[str, Any]: ...
    def select_context(
        self,
        messages: list[Message],
        *,
        incoming_message: Message | None = None,
        budget_tokens: int = 0,
    ) -> list[Message]: ...
    def update_model(self, model: str, context_length: int) -> None: ...
    def on_session_end(self, messages: list[Message]) -> None: ...
    def reset(self) -> None: ...
    def clone(self) -> Session: ...

def embed(libraries: str | PathLike[str], script: str | PathLike[str] | None = None) -> None: ...
def run_command(args: list[str], program: str | PathLike[str]) -> int: ...
