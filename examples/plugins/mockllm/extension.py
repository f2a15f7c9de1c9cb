#!/usr/bin/env python3
"""The mockllm example extension: a model provider without a model.

provider.complete asks for the tool `echo` once (a tool_use block), then answers with what
the tool returned. provider.stream streams a fixed answer word by word, then usage and
done, and returns the whole text. info.get describes the build and the model.
"""
from exthost_sdk import Extension

ext = Extension()

ANSWER = "Hello from a mock model that streams word by word."


def last_tool_result(messages):
    for message in reversed(messages or []):
        content = message.get("content")
        if isinstance(content, list):
            for block in content:
                if isinstance(block, dict) and block.get("type") == "tool_result":
                    return block.get("content")
    return None


def complete(call):
    result = last_tool_result(call.params.get("messages"))
    if result is None:
        return {"content": [{"type": "tool_use", "id": "toolu_1", "name": "echo", "input": {"text": "ping"}}],
                "stop_reason": "tool_use"}
    return {"content": [{"type": "text", "text": "The tool said: %s" % result}], "stop_reason": "end_turn"}


def stream(call):
    words = ANSWER.split(" ")
    for i, word in enumerate(words):
        call.stream({"type": "text", "text": word + (" " if i + 1 < len(words) else "")})
    call.stream({"type": "usage", "input_tokens": 5, "output_tokens": len(words)})
    call.stream({"type": "done"})
    return {"content": [{"type": "text", "text": ANSWER}], "stop_reason": "end_turn"}


ext.provider({"id": "mock", "display_name": "Mock LLM", "description": "Answers without a model",
              "models": [{"id": "mock-1", "display_name": "Mock 1",
                          "capabilities": {"tool_use": True, "streaming": True}, "context_window": 8192}]},
             complete=complete, stream=stream)

@ext.method("info.get")
def info(call):
    return {"build": {"backend": "none", "features": ["streaming", "tool_use"], "version": "1.0.0"},
            "models": [{"id": "mock-1", "display_name": "Mock 1", "installed": True}]}


if __name__ == "__main__":
    raise SystemExit(ext.run())
