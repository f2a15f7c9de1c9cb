#!/usr/bin/env python3
"""The guard example extension: a before_tool_call hook that blocks `rm -rf` unless every
target is under /tmp. The manifest's matcher already limits it to inputs containing
"rm -rf"; this decides which of those may run.
"""
import shlex

from exthost_sdk import Extension

ext = Extension()


def targets_of(command):
    """The paths an `rm -rf …` command names (everything after the flags)."""
    try:
        words = shlex.split(command)
    except ValueError:
        return None  # unparseable: treat as unsafe
    if "rm" not in words:
        return []
    after = words[words.index("rm") + 1:]
    return [w for w in after if not w.startswith("-")]


@ext.hook("before_tool_call")
def guard(call):
    tool_input = call.params.get("tool_input") or {}
    command = tool_input.get("command", "") if isinstance(tool_input, dict) else str(tool_input)
    targets = targets_of(command)
    if targets is None or not targets or any(not t.startswith("/tmp/") for t in targets):
        return {"action": "block", "reason": "rm -rf outside /tmp is not allowed: " + command}
    return None  # continue


if __name__ == "__main__":
    raise SystemExit(ext.run())
