"""Drives `ctxhost serve` with the official openai SDK's Responses API: plain, streamed, and a
function tool round trip (streamed and not), the whole input re-sent each turn with
`store: false` as Codex does. Prints one JSON object with what the SDK parsed and every body it
sent (captured on the wire); the Rust test checks them.

Usage: python openai_responses.py BASE_URL
"""

import json
import sys

import httpx
import openai

base_url = sys.argv[1]
sent = []


def capture(request):
    if request.url.path.endswith("/responses"):
        sent.append(json.loads(request.read()))


client = openai.OpenAI(
    base_url=base_url,
    api_key="sk-python-client",
    max_retries=0,
    http_client=httpx.Client(event_hooks={"request": [capture]}),
)
out = {"sdk_version": openai.__version__}
instructions = "You are a test assistant."


def final_of(stream):
    """The streamed response's event types, text and completed response."""
    types, text, final = [], "", None
    for event in stream:
        types.append(event.type)
        if event.type == "response.output_text.delta":
            text += event.delta
        if event.type == "response.completed":
            final = event.response
    return types, text, final


# Plain, not streamed; with_raw_response shows the gateway's headers.
raw = client.responses.with_raw_response.create(
    model="gpt-4o",
    instructions=instructions,
    input="Say hello.",
    store=False,
    extra_headers={"x-ctxhost-session": "py-responses-plain"},
)
plain = raw.parse()
out["plain"] = {
    "text": plain.output_text,
    "usage": plain.usage.total_tokens,
    "cached": plain.usage.input_tokens_details.cached_tokens,
    "session": raw.headers.get("x-ctxhost-session"),
    "engine": raw.headers.get("x-ctxhost-engine"),
}

# Streamed.
types, text, final = final_of(
    client.responses.create(
        model="gpt-4o",
        instructions=instructions,
        input=[{"role": "user", "content": "Stream a hello."}],
        store=False,
        stream=True,
        extra_headers={"x-ctxhost-session": "py-responses-stream"},
    )
)
out["stream"] = {
    "text": text,
    "final_text": final.output_text,
    "usage": final.usage.total_tokens,
    "types": types,
}

# A function tool: the model calls it twice at once; the client answers both; the model
# concludes. The whole input goes back each turn (store: false).
tools = [
    {
        "type": "function",
        "name": "get_weather",
        "description": "The weather in a city.",
        "parameters": {
            "type": "object",
            "properties": {"city": {"type": "string"}},
            "required": ["city"],
        },
    }
]
for streamed in (False, True):
    session = {"x-ctxhost-session": f"py-responses-tools-{streamed}"}
    items = [{"type": "message", "role": "user",
              "content": [{"type": "input_text", "text": "Weather in Paris and Rome?"}]}]

    def ask():
        if streamed:
            return final_of(client.responses.create(
                model="gpt-4o", instructions=instructions, input=items, tools=tools,
                store=False, stream=True, extra_headers=session))[2]
        return client.responses.create(
            model="gpt-4o", instructions=instructions, input=items, tools=tools,
            store=False, extra_headers=session)

    first = ask()
    calls = [item for item in first.output if item.type == "function_call"]
    items += [item.model_dump(exclude_none=True) for item in first.output]
    for call in calls:
        city = json.loads(call.arguments)["city"]
        items.append({"type": "function_call_output", "call_id": call.call_id,
                      "output": f"{city}: sunny"})
    second = ask()
    out[f"tools_streamed_{str(streamed).lower()}"] = {
        "calls": [{"call_id": c.call_id, "name": c.name, "arguments": c.arguments} for c in calls],
        "kinds": [item.type for item in first.output],
        "final": second.output_text,
    }

# Bad input comes back as an OpenAI error.
try:
    client.responses.create(model="gpt-4o", input=42, store=False)
    out["bad_request"] = None
except openai.APIStatusError as error:
    out["bad_request"] = {"status": error.status_code, "body": error.body}

out["sent"] = sent
print(json.dumps(out))
