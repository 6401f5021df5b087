"""The Python examples of the READMEs (the repository's and the package's) run as written."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

CHECKOUT = Path(__file__).resolve().parents[3]


def python_blocks(readme: Path) -> list[str]:
    return re.findall(r"^```python\n(.*?)^```$", readme.read_text(), re.M | re.S)


@pytest.mark.parametrize("readme", ["README.md", "host/python/README.md"])
def test_the_readmes_python_runs(readme: str, home: Path) -> None:
    blocks = python_blocks(CHECKOUT / readme)
    assert blocks, f"{readme} shows no Python"
    for block in blocks:
        scope: dict = {}
        exec(compile(block, readme, "exec"), scope)  # noqa: S102 (the README's own code)
        assert scope["session"].engine_name == "compressor"
        assert scope["messages"] and all("role" in m for m in scope["messages"])
