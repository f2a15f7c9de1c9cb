#!/usr/bin/env python3
"""The notes example extension: `add_note` and `find_notes` over the host's memory store
(memory.append / memory.query, in the extension's own namespace).
"""
from exthost_sdk import Extension

ext = Extension()


@ext.tool("add_note", "Remember a note",
          {"type": "object", "properties": {"text": {"type": "string"}, "tag": {"type": "string"}},
           "required": ["text"]})
def add_note(call):
    tags = ["#" + call.input["tag"]] if call.input.get("tag") else []
    stored = ext.memory_append(call.input["text"], tags=tags)
    return {"content": "noted at %d" % stored["timestamp_ms"]}


@ext.tool("find_notes", "Find notes containing some text (newest first)",
          {"type": "object", "properties": {"text": {"type": "string"}, "limit": {"type": "integer"}}})
def find_notes(call):
    filters = {"limit": int(call.input.get("limit", 10))}
    if call.input.get("text"):
        filters["content_contains"] = call.input["text"]
    records = ext.memory_query(**filters)
    return {"content": "\n".join(r["content"] for r in records), "count": len(records)}


if __name__ == "__main__":
    raise SystemExit(ext.run())
