"""ctxhost's engines as Hermes Agent context engines.

Hermes Agent loads this module through the `hermes_agent.plugins` entry point (or from
`$HERMES_HOME/plugins/ctxhost/`) and calls `register(ctx)`. Hermes accepts only an instance of
its own `agent.context_engine.ContextEngine`, so the engine class is made here, inside
`register`, as a subclass of that class: the package does not import Hermes, nor depend on it.

Hermes keeps one registered engine per process and deep-copies it for every agent; a copy is
a new handle on the same ctxhost engines and store (`ctxhost.Session.clone`), so two agents are
two sessions of one store. `name` must equal Hermes' `context.engine`: `ctxhost` serves the
engine ctxhost's own config names (`context.engine` there), `ctxhost-<engine>` that engine
(`ctxhost-lcm`, `ctxhost-window`, `ctxhost-compressor`, any installed plugin).

The summarizer is Hermes' auxiliary compression model (`auxiliary.compression` in Hermes'
config, else its main model, resolved as Hermes resolves it for its own compressor), unless
ctxhost's config names one (`auxiliary.compression.provider` there). It follows a `/model`
switch: the summarizer is a service of a `ctxhost.Engines` (an isolated engine's process builds
its own from the Engines' settled config), so each summarizer has its Engines on the same
config and store, and an engine whose agent's model resolves to another summarizer moves its
session to that one's Engines; the other agents' sessions stay where their models put them.
"""

from __future__ import annotations

import json
import logging
import os
import threading
from typing import Any

import ctxhost

logger = logging.getLogger(__name__)

# The name Hermes selects for the engine ctxhost's config names, and the prefix of a direct pick.
NAME = "ctxhost"
_PREFIX = NAME + "-"

# Where ctxhost's config comes from when not the command's own lookup.
CONFIG_ENV = "CTXHOST_CONFIG"

# ctxhost's summarizer reads its key from the environment: where Hermes' auxiliary key goes
# when no variable holds it already.
SUMMARIZER_KEY_ENV = "CTXHOST_HERMES_SUMMARIZER_KEY"


def hermes_summarizer(main_runtime: dict[str, Any]) -> dict[str, Any] | None:
    """Hermes' auxiliary compression model as ctxhost's `auxiliary.compression` settings, or
    None when Hermes resolves none that ctxhost can call (an OpenAI-compatible endpoint)."""
    try:
        from agent.auxiliary_client import get_text_auxiliary_client
        from openai import OpenAI

        client, model = get_text_auxiliary_client("compression", main_runtime=main_runtime)
    except Exception as error:  # noqa: BLE001 (Hermes' resolution: ctxhost's own summarizer)
        logger.warning("ctxhost: Hermes' auxiliary compression model not found: %s", error)
        return None
    key = getattr(client, "api_key", None)
    if not isinstance(client, OpenAI) or not model or not isinstance(key, str):
        # Codex' Responses, Anthropic's and Bedrock's adapters, a key made per request.
        logger.warning(
            "ctxhost: Hermes' auxiliary compression model (%s) is not an OpenAI-compatible "
            "endpoint; ctxhost's own summarizer serves",
            type(client).__name__,
        )
        return None
    settings: dict[str, Any] = {
        "provider": "custom",
        "model": str(model),
        "base_url": str(client.base_url).rstrip("/"),
    }
    if key and key != "no-key-required":
        settings["api_key_env"] = _key_variable(key)
    return settings


# The variables set to keys no variable held, by key: each key has its own, since a summarizer
# reads its variable on every call (and an isolated engine's process keeps the value it started
# with), so a later model's key must not replace an earlier one that another session still uses.
_key_variables: dict[str, str] = {}
_key_variables_lock = threading.Lock()


def _key_variable(key: str) -> str:
    """A variable of this process holding `key` (Hermes read it from one, usually), else
    SUMMARIZER_KEY_ENV (then SUMMARIZER_KEY_ENV_2, ... for further keys), set to it."""
    for name, value in os.environ.items():
        if value == key and name.isidentifier():
            return name
    with _key_variables_lock:
        name = _key_variables.get(key)
        if name is None:
            count = len(_key_variables)
            name = SUMMARIZER_KEY_ENV if count == 0 else f"{SUMMARIZER_KEY_ENV}_{count + 1}"
            _key_variables[key] = name
        os.environ[name] = key
    return name


# The engines of each summarizer Hermes' models resolved to in this process, on ctxhost's one
# config (so one store): by the summarizer's settings and the config named.
_engines_by_summarizer: dict[str, ctxhost.Engines] = {}
_engines_lock = threading.Lock()


def engines_for(summarizer: dict[str, Any] | None) -> ctxhost.Engines:
    """The engines whose summarizer is `summarizer` (unless ctxhost's config names one), opened
    once per process."""
    config = os.environ.get(CONFIG_ENV) or None
    key = json.dumps([config, summarizer], sort_keys=True)
    with _engines_lock:
        engines = _engines_by_summarizer.get(key)
        if engines is None:
            engines = ctxhost.Engines(config, summarizer=summarizer)
            _engines_by_summarizer[key] = engines
        return engines


def engine_of(name: str) -> str | None:
    """The ctxhost engine a Hermes engine name picks: None for ctxhost's configured one."""
    if name == NAME:
        return None
    if name.startswith(_PREFIX) and len(name) > len(_PREFIX):
        return name[len(_PREFIX) :]
    raise ValueError(
        f"'{name}' is not a ctxhost engine name (use '{NAME}' or '{_PREFIX}<engine>')"
    )


def _selected_name() -> str:
    """The name Hermes' `context.engine` asks for when it is a ctxhost one, else `ctxhost`
    (Hermes holds one plugin engine, and selects it by name)."""
    try:
        from hermes_cli.config import load_config

        selected = (load_config().get("context") or {}).get("engine") or ""
    except Exception as error:  # noqa: BLE001 (an older or newer Hermes: the default name)
        logger.debug("ctxhost: Hermes' context.engine could not be read: %s", error)
        return NAME
    if isinstance(selected, str) and (selected == NAME or selected.startswith(_PREFIX)):
        return selected
    return NAME


def register(ctx: Any) -> None:
    """Hermes' plugin hook: registers the ctxhost engine `context.engine` selects."""
    engine_class = context_engine_class()
    ctx.register_context_engine(engine_class(_selected_name()))


_engine_class: type | None = None


def context_engine_class() -> type:
    """The engine class, a subclass of Hermes' `ContextEngine` (imported here, from Hermes)."""
    global _engine_class
    if _engine_class is None:
        from agent.context_engine import ContextEngine

        _engine_class = _make_engine_class(ContextEngine)
    return _engine_class


def _make_engine_class(base: type) -> type:
    class CtxhostContextEngine(base):  # type: ignore[misc, valid-type]
        """A ctxhost engine in Hermes: each Hermes hook runs the ctxhost session's call."""

        def __init__(self, name: str = NAME, engines: ctxhost.Engines | None = None) -> None:
            self._name = name
            self._engine = engine_of(name)
            self._engines = engines
            self._session: ctxhost.Session | None = None
            self._session_id: str | None = None
            self._model: str | None = None
            # Hermes' main model and endpoint (update_model): what its auxiliary one
            # resolves against.
            self._main_runtime: dict[str, Any] = {}
            # The compressions of this conversation's sessions a model switch left behind.
            self._compressions_carried = 0
            self.awaiting_real_usage_after_compression = False
            self.last_compression_rough_tokens = 0

        # -- identity and the ctxhost session ------------------------------------------

        @property
        def name(self) -> str:
            return self._name

        @property
        def session(self) -> ctxhost.Session:
            """The ctxhost session (opened on first use, on Hermes' session id)."""
            if self._session is None:
                if self._engines is None:
                    self._engines = engines_for(hermes_summarizer(self._main_runtime))
                self._session = self._engines.session(
                    self._session_id or "hermes",
                    engine=self._engine,
                    model=self._model,
                    context_length=self.context_length or None,
                )
                self._mirror(self._session.status())
            return self._session

        def _mirror(self, status: dict[str, Any]) -> None:
            """Hermes reads the token state from attributes: copy the engine's."""
            if not self.awaiting_real_usage_after_compression:
                self.last_prompt_tokens = status["last_prompt_tokens"]
            self.threshold_tokens = status["threshold_tokens"]
            self.context_length = status["context_length"]
            self.compression_count = self._compressions_carried + status["compression_count"]

        def __deepcopy__(self, memo: dict[int, Any]) -> CtxhostContextEngine:
            # Hermes copies the registered engine for each agent: the copy shares the engines
            # (and so the store); its session is its own, opened on its agent's session id.
            twin = type(self)(self._name, self._engines)
            twin._model = self._model
            twin._main_runtime = dict(self._main_runtime)
            twin.context_length = self.context_length
            twin.threshold_tokens = self.threshold_tokens
            return twin

        def clone_for_agent(self, **kwargs: Any) -> CtxhostContextEngine:
            """Newer Hermes' per-agent copy."""
            return self.__deepcopy__({})

        # -- session lifecycle ---------------------------------------------------------

        def bind_session_state(
            self, session_db: Any = None, session_id: Any = None, **kwargs: Any
        ) -> None:
            # Called with the agent's session id before its tools are asked for.
            if session_id and self._session is None:
                self._session_id = str(session_id)

        def on_session_start(self, session_id: str, **kwargs: Any) -> None:
            if kwargs.get("boundary_reason") == "compression" and self._session is not None:
                # Hermes moves to a new session id after compressing; the conversation (and
                # its lossless store) goes on in the same ctxhost session.
                return
            session_id = str(session_id or "")
            if session_id and session_id != self._session_id:
                self._session_id = session_id
                self._session = None
                self._compressions_carried = 0
            if kwargs.get("model"):
                self._model = str(kwargs["model"])
            self.session  # noqa: B018 (opens it: the engine begins the session)

        def on_session_end(
            self, session_id: str, messages: list[dict[str, Any]], **kwargs: Any
        ) -> None:
            self.session.on_session_end(list(messages or []))

        def on_session_reset(self, **kwargs: Any) -> None:
            super().on_session_reset()
            self.awaiting_real_usage_after_compression = False
            self._compressions_carried = 0
            self.session.reset()
            self._mirror(self.session.status())

        # -- tokens and compression ----------------------------------------------------

        def update_from_response(self, usage: dict[str, Any], **kwargs: Any) -> None:
            usage = dict(usage or {})
            if "prompt_tokens" not in usage and "input_tokens" not in usage:
                return  # Hermes reports a call without usage as an empty dict
            self.awaiting_real_usage_after_compression = False
            self.session.update_from_response(usage)
            self.last_completion_tokens = int(usage.get("completion_tokens") or 0)
            self.last_total_tokens = int(usage.get("total_tokens") or 0)
            self._mirror(self.session.status())

        def should_compress(self, prompt_tokens: int | None = None, **kwargs: Any) -> bool:
            if prompt_tokens is None:
                prompt_tokens = max(self.last_prompt_tokens, 0)
            return self.session.should_compress(int(prompt_tokens))

        def should_compress_preflight(
            self, messages: list[dict[str, Any]], **kwargs: Any
        ) -> bool:
            return self.session.should_compress_preflight(list(messages))

        def compress(
            self,
            messages: list[dict[str, Any]],
            current_tokens: int | None = None,
            focus_topic: str | None = None,
            force: bool = False,
            memory_context: str = "",
            **kwargs: Any,
        ) -> list[dict[str, Any]]:
            compressed = self.session.compress(
                list(messages),
                current_tokens=current_tokens,
                focus_topic=focus_topic or None,
                force=bool(force),
            )
            self._mirror(self.session.status())
            return compressed

        def select_context(
            self,
            request_messages: list[dict[str, Any]],
            *,
            conversation_messages: list[dict[str, Any]] | None = None,
            incoming_message: dict[str, Any] | None = None,
            budget_tokens: int = 0,
            **kwargs: Any,
        ) -> list[dict[str, Any]] | None:
            """Newer Hermes: the context of one request; None leaves the request as it is."""
            # The session asks its engine once whether it selects, then remembers.
            if not self.session.has_select_context:
                return None
            try:
                return self.session.select_context(
                    list(request_messages),
                    incoming_message=incoming_message,
                    budget_tokens=int(budget_tokens or 0),
                )
            except ctxhost.NotSupported:
                return None  # its engine failed over to the compressor meanwhile

        def on_turn_complete(
            self,
            messages: list[dict[str, Any]],
            usage: dict[str, Any] | None = None,
            **kwargs: Any,
        ) -> None:
            """Newer Hermes: the turn's messages reach the engine's store (lcm keeps them)."""
            if usage:
                self.update_from_response(usage)
            self.session.should_compress_preflight(list(messages))

        # -- tools ---------------------------------------------------------------------

        def get_tool_schemas(self, **kwargs: Any) -> list[dict[str, Any]]:
            # Hermes wants the function part; ctxhost's are OpenAI tool objects.
            schemas = []
            for tool in self.session.tool_schemas():
                schemas.append(tool.get("function", tool) if isinstance(tool, dict) else tool)
            return schemas

        def handle_tool_call(self, name: str, args: dict[str, Any], **kwargs: Any) -> str:
            messages = kwargs.get("messages")
            if messages:
                # The conversation so far reaches the engine's store before it is searched.
                self.session.should_compress_preflight(list(messages))
            try:
                return self.session.handle_tool_call(name, dict(args or {}))
            except ctxhost.Error as error:
                return json.dumps({"error": str(error)})

        # -- status and model ----------------------------------------------------------

        def get_status(self, **kwargs: Any) -> dict[str, Any]:
            status = dict(super().get_status())
            status["engine"] = self.session.engine_name
            if self._engines is not None:
                status["summarizer"] = self._engines.summarizer
            status["details"] = self.session.status().get("details")
            return status

        def update_model(
            self,
            model: str,
            context_length: int,
            base_url: str = "",
            api_key: str = "",
            provider: str = "",
            api_mode: str = "",
            **kwargs: Any,
        ) -> None:
            self._model = model
            self.context_length = int(context_length)
            self._main_runtime = {
                "model": model,
                "provider": provider,
                "base_url": base_url,
                "api_key": api_key,
                "api_mode": api_mode,
            }
            self._follow_summarizer()
            if self._session is None:
                # The session opens with them (on the agent's id, once Hermes gives it).
                self.threshold_tokens = int(self.context_length * self.threshold_percent)
                return
            self._session.update_model(model, int(context_length))
            self._mirror(self._session.status())

        def _follow_summarizer(self) -> None:
            """After a model switch: when Hermes' auxiliary compression model now resolves to
            another summarizer, the session moves to that summarizer's engines (same config,
            same store), reopened on the same session id at its next use: its later
            compressions summarize there. Only this engine's session moves: the agents sharing
            the engines it leaves keep their summarizer."""
            if self._engines is None:
                return  # not opened yet: it opens on the engines of the model it has then
            engines = engines_for(hermes_summarizer(self._main_runtime))
            if engines is self._engines or engines.summarizer == self._engines.summarizer:
                return  # the same summarizer (or ctxhost's config names its own)
            logger.info(
                "ctxhost: the model switch moves the summaries from %s to %s",
                self._engines.summarizer,
                engines.summarizer,
            )
            self._engines = engines
            if self._session is not None:
                # Hermes counts the conversation's compressions (and warns on many): the count
                # goes on across the reopened session.
                self._compressions_carried = self.compression_count
                self._session = None

    return CtxhostContextEngine
