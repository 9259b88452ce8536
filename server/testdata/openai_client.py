"""Drives the server with PyPI's official openai client (server/python_test.go
runs it): completions and chat, whole and streamed, usage in the last
streamed chunk, and the errors as the client raises them. It prints one
line per check and exits non-zero on the first failure."""
import os
import sys

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
