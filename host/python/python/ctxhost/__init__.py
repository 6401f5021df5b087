"""ctxhost: pluggable LLM context engines as Python objects, and the `ctxhost` command.

    import ctxhost
    engines = ctxhost.Engines()                 # the command's config lookup
    session = engines.session("chat-1")          # the engine `context.engine` names
    if session.should_compress(prompt_tokens):
        messages = session.compress(messages)

Everything runs in the host's own code (the Rust library behind the `ctxhost` command).
"""

from __future__ import annotations

import os as _os

from . import _native
from ._cli import _installed_script
from ._native import (
    ConfigError,
    EngineError,
    Engines,
    Error,
    NotSupported,
    Session,
    __version__,
)

# The shipped engines' libraries sit in the package (a binary finds them beside itself), and
# isolated engines run in the package's `ctxhost` script (an interpreter cannot run them).
_native.embed(
    _os.path.join(_os.path.dirname(_os.path.abspath(__file__)), "plugins"),
    _installed_script(),
)

__all__ = [
    "ConfigError",
    "EngineError",
    "Engines",
    "Error",
    "NotSupported",
    "Session",
    "__version__",
]
