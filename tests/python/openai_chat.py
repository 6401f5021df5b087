"""Drives `ctxhost serve` with the official openai SDK: plain, streamed, and tool-calling
chat completions. Prints one JSON object with what the SDK parsed; the Rust test checks it.

Usage: python openai_chat.py BASE_URL
"""

import json
import sys

import openai

base_url = sys.argv[1]
client = openai.OpenAI(base_url=base_url, api_key="sk-python-client", max_retries=0)
out = {"sdk_version": openai.__version__}

system = {"role": "system", "content": "You are a test assistant."}

# Plain, not streamed; with_raw_response shows the gateway's headers.
raw = client.chat.completions.with_raw_response.create(
    model="gpt-4o",
    messages=[system, {"role": "user", "content": "Say hello."}],
    extra_headers={"x-ctxhost-session": "py-plain"},
)
plain = raw.parse()
out["plain"] = {
    "content": plain.choices[0].message.content,
    "finish_reason": plain.choices[0].finish_reason,
    "usage": plain.usage.total_tokens if plain.usage else None,
    "session": raw.headers.get("x-ctxhost-session"),
    "engine": raw.headers.get("x-ctxhost-engine"),
}

# Streamed, with usage asked for.
stream = client.chat.completions.create(
    model="gpt-4o",
    messages=[system, {"role": "user", "content": "Stream a hello."}],
    stream=True,
    stream_options={"include_usage": True},
    extra_headers={"x-ctxhost-session": "py-stream"},
)
text, usage, finish = "", None, None
for chunk in stream:
    if chunk.usage is not None:
        usage = chunk.usage.total_tokens
    for choice in chunk.choices:
        text += choice.delta.content or ""
        finish = choice.finish_reason or finish
out["stream"] = {"content": text, "usage": usage, "finish_reason": finish}

# Tools: the model asks for two calls at once; the client answers both; the model concludes.
tools = [
    {
        "type": "function",
        "function": {
            "name": "get_weather",
            "description": "Weather for a city.",
            "parameters": {
                "type": "object",
                "properties": {"city": {"type": "string"}},
                "required": ["city"],
            },
        },
    }
]
for streamed in (False, True):
    session = {"x-ctxhost-session": f"py-tools-{streamed}"}
    messages = [system, {"role": "user", "content": "Weather in Paris and Rome?"}]
    if streamed:
        calls = {}
        for chunk in client.chat.completions.create(
            model="gpt-4o", messages=messages, tools=tools, stream=True, extra_headers=session
        ):
            for choice in chunk.choices:
                for delta in choice.delta.tool_calls or []:
                    call = calls.setdefault(delta.index, {"id": "", "name": "", "arguments": ""})
                    call["id"] += delta.id or ""
                    if delta.function:
                        call["name"] += delta.function.name or ""
                        call["arguments"] += delta.function.arguments or ""
        tool_calls = [calls[i] for i in sorted(calls)]
    else:
        first = client.chat.completions.create(
            model="gpt-4o", messages=messages, tools=tools, extra_headers=session
        )
        tool_calls = [
            {"id": c.id, "name": c.function.name, "arguments": c.function.arguments}
            for c in first.choices[0].message.tool_calls
        ]
    messages.append(
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": c["id"],
                    "type": "function",
                    "function": {"name": c["name"], "arguments": c["arguments"]},
                }
                for c in tool_calls
            ],
        }
    )
    for c in tool_calls:
        city = json.loads(c["arguments"])["city"]
        messages.append({"role": "tool", "tool_call_id": c["id"], "content": f"{city}: sunny"})
    final = client.chat.completions.create(
        model="gpt-4o", messages=messages, tools=tools, extra_headers=session
    )
    out[f"tools_streamed_{str(streamed).lower()}"] = {
        "calls": tool_calls,
        "final": final.choices[0].message.content,
    }

# The SDK's own stream helper accumulates every delta into one message.
if hasattr(client.chat.completions, "stream"):
    with client.chat.completions.stream(
        model="gpt-4o",
        messages=[system, {"role": "user", "content": "Stream a hello."}],
        extra_headers={"x-ctxhost-session": "py-helper"},
    ) as helper:
        completion = helper.get_final_completion()
    out["helper"] = {
        "role": completion.choices[0].message.role,
        "content": completion.choices[0].message.content,
    }

# A gateway error parses as an API error with the gateway's message.
try:
    client.chat.completions.create(model="gpt-4o", messages=[])
except openai.BadRequestError as error:
    out["bad_request"] = {"status": error.status_code, "message": error.message}

print(json.dumps(out))
