"""Drives the server with PyPI's official openai client (server/python_test.go
runs it): completions and chat, whole and streamed, usage in the last
streamed chunk, penalties and logit_bias, the errors as the client raises
them, and llama-server's /tokenize and /detokenize through httpx (the
client's own HTTP library). It prints one line per check and exits non-zero
on the first failure."""
import os
import sys

import httpx
import openai

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
