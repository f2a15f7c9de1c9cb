#!/usr/bin/env python3
"""The echo example extension: one tool, `echo`, answering "echo: <text>".

Written with exthost_sdk (standard library only; the SDK file sits beside this one).
"""
from exthost_sdk import Extension

ext = Extension()


@ext.tool("echo", "Echo text back",
          {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]})
def echo(call):
    return {"content": "echo: " + str(call.input.get("text", ""))}


if __name__ == "__main__":
    raise SystemExit(ext.run())
