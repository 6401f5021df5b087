"""Drives `ctxhost serve` with the official anthropic SDK: messages.create and messages.stream
with tools, thinking with signatures, an image and a document; the beta client (`?beta=true`),
count_tokens, and a gateway error. Prints one JSON object with what the SDK parsed and the
request bodies it sent; the Rust test checks them against what reached the upstream.

Usage: python anthropic_messages.py BASE_URL
"""

import base64
import json
import sys

import anthropic

base_url = sys.argv[1]
client = anthropic.Anthropic(base_url=base_url, api_key="sk-ant-python", max_retries=0)
out = {"sdk_version": anthropic.__version__, "sent": []}

PNG = base64.b64encode(b"\x89PNG\r\n\x1a\n fake image bytes").decode()
system = [
    {"type": "text", "text": "You are a test assistant.", "cache_control": {"type": "ephemeral"}}
]
tools = [
    {
        "name": "get_weather",
        "description": "Weather for a city.",
        "input_schema": {
            "type": "object",
            "properties": {"city": {"type": "string"}},
            "required": ["city"],
        },
    }
]
first_turn = {
    "role": "user",
    "content": [
        {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": PNG}},
        {
            "type": "document",
            "source": {"type": "text", "media_type": "text/plain", "data": "Paris is sunny."},
            "title": "Forecast",
            "citations": {"enabled": True},
        },
        {"type": "text", "text": "Weather in Paris?", "cache_control": {"type": "ephemeral"}},
    ],
}


def blocks(content):
    """The response's blocks as the client sends them back."""
    return [b.to_dict() if hasattr(b, "to_dict") else b.model_dump(exclude_none=True) for b in content]


def summary(message):
    return [
        {
            "type": b.type,
            **({"text": b.text} if b.type == "text" else {}),
            **({"citations": len(b.citations or [])} if b.type == "text" else {}),
            **({"thinking": b.thinking, "signature": b.signature} if b.type == "thinking" else {}),
            **({"data": b.data} if b.type == "redacted_thinking" else {}),
            **({"id": b.id, "name": b.name, "input": b.input} if b.type == "tool_use" else {}),
        }
        for b in message.content
    ]


def conversation(streamed):
    session = {"x-ctxhost-session": f"py-anthropic-{str(streamed).lower()}", "anthropic-beta": "test-beta-1"}
    kwargs = dict(
        model="claude-sonnet-4-5",
        max_tokens=1024,
        system=system,
        tools=tools,
        thinking={"type": "enabled", "budget_tokens": 1024},
        messages=[first_turn],
        extra_headers=session,
    )
    if streamed:
        with client.messages.stream(**kwargs) as stream:
            texts = list(stream.text_stream)
            first = stream.get_final_message()
    else:
        raw = client.messages.with_raw_response.create(**kwargs)
        first = raw.parse()
        out["headers"] = {
            "session": raw.headers.get("x-ctxhost-session"),
            "engine": raw.headers.get("x-ctxhost-engine"),
        }
        texts = None
    out["sent"].append({k: kwargs[k] for k in ("system", "messages", "tools", "thinking")})
    call = next(b for b in first.content if b.type == "tool_use")
    second_messages = [
        first_turn,
        {"role": "assistant", "content": blocks(first.content)},
        {
            "role": "user",
            "content": [
                {
                    "type": "tool_result",
                    "tool_use_id": call.id,
                    "is_error": False,
                    "content": [
                        {"type": "text", "text": f"{call.input['city']}: sunny"},
                        {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": PNG}},
                    ],
                }
            ],
        },
    ]
    kwargs["messages"] = second_messages
    if streamed:
        with client.messages.stream(**kwargs) as stream:
            final = stream.get_final_message()
    else:
        final = client.messages.create(**kwargs)
    out["sent"].append({k: kwargs[k] for k in ("system", "messages", "tools", "thinking")})
    return {
        "first": summary(first),
        "first_stop": first.stop_reason,
        "first_usage": first.usage.to_dict() if hasattr(first.usage, "to_dict") else None,
        "texts": texts,
        "final": summary(final),
        "final_stop": final.stop_reason,
    }


out["create"] = conversation(False)
out["stream"] = conversation(True)

# The beta client posts to /v1/messages?beta=true, as Claude Code does.
beta = client.beta.messages.create(
    model="claude-sonnet-4-5",
    max_tokens=64,
    messages=[{"role": "user", "content": "Say hello."}],
    extra_headers={"x-claude-code-session-id": "cc-session-1"},
)
out["beta"] = summary(beta)

count = client.messages.count_tokens(
    model="claude-sonnet-4-5", messages=[{"role": "user", "content": "Count me."}]
)
out["count_tokens"] = count.input_tokens

try:
    client.messages.create(model="claude-sonnet-4-5", max_tokens=8, messages=[])
except anthropic.BadRequestError as error:
    out["bad_request"] = {"status": error.status_code, "body": error.body}

print(json.dumps(out))
