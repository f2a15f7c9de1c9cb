#!/usr/bin/env python3
"""The echo example extension: one tool, `echo`, answering "echo: <text>".

Standard library only. Speaks JSON-RPC 2.0 with Content-Length framing on stdin/stdout;
logs go to stderr, never to stdout.
"""
import json
import sys

stdin = sys.stdin.buffer
stdout = sys.stdout.buffer


def read_message():
    length = None
    while True:
        line = stdin.readline()
        if not line:
            return None
        line = line.strip()
        if not line:
            break
        name, _, value = line.decode("utf-8").partition(":")
        if name.strip().lower() == "content-length":
            length = int(value.strip())
    if length is None:
        return None
    return json.loads(stdin.read(length))


def send(message):
    body = json.dumps(message, separators=(",", ":")).encode("utf-8")
    stdout.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)
    stdout.flush()


TOOLS = [{
    "name": "echo",
    "description": "Echo text back",
    "input_schema": {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]},
}]


def main():
    while True:
        message = read_message()
        if message is None:
            return
        if "id" not in message or "method" not in message:
            continue
        request_id, method = message["id"], message["method"]
        params = message.get("params") or {}
        if method == "initialize":
            send({"jsonrpc": "2.0", "id": request_id,
                  "result": {"protocol_version": 1, "capabilities": {"tools": TOOLS}}})
        elif method == "tool.call" and params.get("name") == "echo":
            text = (params.get("input") or {}).get("text", "")
            send({"jsonrpc": "2.0", "id": request_id, "result": {"content": "echo: " + str(text)}})
        elif method == "tool.call":
            send({"jsonrpc": "2.0", "id": request_id, "error": {"code": -32602, "message": "unknown tool"}})
        elif method == "shutdown":
            send({"jsonrpc": "2.0", "id": request_id, "result": None})
            return
        else:
            send({"jsonrpc": "2.0", "id": request_id, "error": {"code": -32601, "message": "unknown method"}})


if __name__ == "__main__":
    main()
