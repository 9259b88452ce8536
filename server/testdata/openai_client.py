"""Drives the server with PyPI's official openai client (server/python_test.go
runs it): completions and chat, whole and streamed, usage in the last
streamed chunk, penalties and logit_bias, logprobs (chat and the legacy
completions shape, whole and streamed), the errors as the client raises
them, structured output (response_format json_schema through the client's
parse() with a pydantic model, and streamed), and llama-server's
/tokenize and /detokenize through httpx (the
client's own HTTP library). It prints one line per check and exits non-zero
on the first failure."""
import json
import math
import os
import sys
from typing import Literal

import httpx
import openai
from pydantic import BaseModel, Field

base = os.environ["HIPGO_BASE_URL"]
client = openai.OpenAI(base_url=base + "/v1", api_key="k", max_retries=0)
model = "hipgo-demo"

c = client.completions.create(model=model, prompt="And God said", max_tokens=8, seed=3, temperature=0.8)
assert c.choices[0].finish_reason == "length", c
assert c.usage.completion_tokens == 8, c.usage
print("completion:", repr(c.choices[0].text))

text = ""
last = None
for chunk in client.completions.create(model=model, prompt="And God said", max_tokens=8, seed=3, temperature=0.8,
                                       stream=True, stream_options={"include_usage": True}):
    if chunk.choices:
        text += chunk.choices[0].text
    last = chunk
assert text == c.choices[0].text, (text, c.choices[0].text)
assert last.usage is not None and last.usage.completion_tokens == 8, last
print("streamed completion matches, usage in the last chunk")

msgs = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Who made the light?"}]
r = client.chat.completions.create(model=model, messages=msgs, max_tokens=12, seed=5)
assert r.choices[0].message.role == "assistant"
print("chat:", repr(r.choices[0].message.content))
streamed = ""
for chunk in client.chat.completions.create(model=model, messages=msgs, max_tokens=12, seed=5, stream=True):
    if chunk.choices and chunk.choices[0].delta.content:
        streamed += chunk.choices[0].delta.content
assert streamed == r.choices[0].message.content, (streamed, r.choices[0].message.content)
print("streamed chat matches")

auth = {"Authorization": "Bearer k"}
tok = httpx.post(base + "/tokenize", json={"content": "And God said", "with_pieces": True}, headers=auth).raise_for_status().json()
ids = [t["id"] for t in tok["tokens"]]
assert "".join(t["piece"] for t in tok["tokens"]) == "And God said", tok
detok = httpx.post(base + "/detokenize", json={"tokens": ids}, headers=auth).raise_for_status().json()
assert detok == {"content": "And God said"}, detok
print("tokenize:", ids)

said, piece = ids[-1], tok["tokens"][-1]["piece"]
c = client.completions.create(model=model, prompt="And God said", max_tokens=6, temperature=0, logit_bias={str(said): 100})
assert c.choices[0].text == piece * 6, c.choices[0].text
print("greedy under logit_bias 100 repeats the token:", repr(c.choices[0].text))

# The same options as python_test.go's model.Generate, whose text it passes.
pen = dict(model=model, prompt="And God said", max_tokens=16, seed=7, temperature=0.8, presence_penalty=0.5,
           frequency_penalty=1.5, logit_bias={str(ids[0]): 4}, extra_body={"repetition_penalty": 1.3})
p = client.completions.create(**pen)
assert p.choices[0].text == os.environ["HIPGO_PENALISED_TEXT"], (p.choices[0].text, os.environ["HIPGO_PENALISED_TEXT"])
streamed = "".join(ch.choices[0].text for ch in client.completions.create(stream=True, **pen) if ch.choices)
assert streamed == p.choices[0].text, (streamed, p.choices[0].text)
print("penalised completion is model.Generate's, whole and streamed:", repr(p.choices[0].text))

lp = dict(model=model, messages=msgs, max_tokens=8, temperature=0, logprobs=True, top_logprobs=4)
r = client.chat.completions.create(**lp)
content = r.choices[0].logprobs.content
assert content and "".join(t.token for t in content).startswith(r.choices[0].message.content), content
for t in content:
    assert bytes(t.bytes).decode() == t.token, t
    assert len(t.top_logprobs) == 4 and sum(math.exp(a.logprob) for a in t.top_logprobs) <= 1, t
    assert t.top_logprobs[0].token == t.token and t.top_logprobs[0].logprob == t.logprob, t  # greedy: the top-1
streamed = [t for ch in client.chat.completions.create(stream=True, **lp) if ch.choices and ch.choices[0].logprobs
            for t in ch.choices[0].logprobs.content]
assert [t.model_dump() for t in streamed] == [t.model_dump() for t in content], (streamed, content)
print("chat logprobs, greedy picks the top-1, streamed the same:", [(t.token, round(t.logprob, 3)) for t in content[:3]])

clp = dict(model=model, prompt="And God said", max_tokens=8, seed=5, temperature=0.8, logprobs=3)
c = client.completions.create(**clp)
l = c.choices[0].logprobs
assert len(l.tokens) == len(l.token_logprobs) == len(l.top_logprobs) == len(l.text_offset) == 8, l
assert all(len(t) == 3 and sum(math.exp(v) for v in t.values()) <= 1 for t in l.top_logprobs), l.top_logprobs
assert all(c.choices[0].text[o:].startswith(t) for o, t in zip(l.text_offset, l.tokens)), l
s = {"tokens": [], "token_logprobs": [], "top_logprobs": [], "text_offset": []}
for ch in client.completions.create(stream=True, **clp):
    if ch.choices and ch.choices[0].logprobs:
        for k in s:
            s[k] += getattr(ch.choices[0].logprobs, k)
assert s == {k: getattr(l, k) for k in s}, (s, l)
print("completion logprobs, streamed the same:", list(zip(l.tokens, l.token_logprobs))[:3])

class Tribe(BaseModel):
    name: Literal["Judah", "Levi", "Dan"]
    count: int = Field(ge=1, le=12)
    note: str = Field(max_length=6)

for temperature in (0, 0.9):
    parsed = client.chat.completions.parse(model=model, messages=msgs, max_tokens=200, temperature=temperature, seed=4, response_format=Tribe)
    assert parsed.choices[0].finish_reason == "stop", parsed
    tribe = parsed.choices[0].message.parsed
    assert isinstance(tribe, Tribe) and 1 <= tribe.count <= 12 and len(tribe.note) <= 6, tribe
    print("json_schema through parse():", repr(parsed.choices[0].message.content))
schema = {"type": "object", "properties": {"ok": {"type": "boolean"}, "n": {"type": "integer", "minimum": -3, "maximum": 3}},
          "required": ["ok", "n"], "additionalProperties": False}
rf = {"type": "json_schema", "json_schema": {"name": "s", "schema": schema, "strict": True}}
streamed = "".join(chunk.choices[0].delta.content or "" for chunk in client.chat.completions.create(
    model=model, messages=msgs, max_tokens=100, temperature=0.8, seed=1, response_format=rf, stream=True) if chunk.choices)
value = json.loads(streamed)
assert set(value) == {"ok", "n"} and isinstance(value["ok"], bool) and -3 <= value["n"] <= 3, value
print("streamed json_schema:", streamed)
for i, schema in enumerate(json.loads(os.environ["HIPGO_SCHEMAS"])):
    rf = {"type": "json_schema", "json_schema": {"name": "s%d" % i, "schema": schema, "strict": True}}
    r = client.chat.completions.create(model=model, messages=msgs, max_tokens=300, temperature=0, response_format=rf)
    assert r.choices[0].finish_reason == "stop", r
    value = json.loads(r.choices[0].message.content)
    if schema.get("type") == "object":  # the Go test validates fully; here the shape and the required keys
        assert isinstance(value, dict) and set(schema.get("required", [])) <= set(value), (schema, value)
print("json_schema: %d schemas parsed" % (i + 1))
try:
    bad = {"type": "json_schema", "json_schema": {"name": "s", "schema": {"type": "string", "pattern": "^a"}}}
    client.chat.completions.create(model=model, messages=msgs, response_format=bad)
    sys.exit("a schema with pattern was accepted")
except openai.BadRequestError as e:
    assert e.body["param"] == "response_format.json_schema.schema" and e.body["code"] == "unsupported_value" and "pattern" in e.body["message"], e.body
    print("pattern:", e.status_code, e.body["code"])

try:
    client.chat.completions.create(model=model, messages=msgs, logprobs=True, top_logprobs=21)
    sys.exit("top_logprobs 21 was accepted")
except openai.BadRequestError as e:
    assert e.body["param"] == "top_logprobs" and e.body["code"] == "invalid_value", e.body
    print("top_logprobs 21:", e.status_code, e.body["code"])

try:
    client.chat.completions.create(model=model, messages=msgs, presence_penalty=2.5)
    sys.exit("presence_penalty 2.5 was accepted")
except openai.BadRequestError as e:
    assert e.status_code == 400 and e.body["param"] == "presence_penalty" and e.body["code"] == "invalid_value", e.body
    print("presence_penalty 2.5:", e.status_code, e.body["code"])

try:
    client.completions.create(model="gpt-4", prompt="x")
    sys.exit("an unknown model was accepted")
except openai.BadRequestError as e:
    assert e.status_code == 400 and e.body["param"] == "model", e.body
    print("unknown model:", e.status_code, e.body["code"])

try:
    client.chat.completions.create(model=model, messages=msgs, n=2)
    sys.exit("n = 2 was accepted")
except openai.BadRequestError as e:
    assert e.body["param"] == "n", e.body
    print("n = 2:", e.status_code, e.body["code"])

try:
    openai.OpenAI(base_url=base + "/v1", api_key="wrong", max_retries=0).models.list()
    sys.exit("a wrong key was accepted")
except openai.AuthenticationError as e:
    print("wrong key:", e.status_code)

print("ok")
