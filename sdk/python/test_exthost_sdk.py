"""Tests of exthost_sdk: an extension driven over real pipes by a scripted host."""

import json
import os
import sys
import threading
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import exthost_sdk  # noqa: E402

TIMEOUT = 20  # seconds; every wait is bounded


class Harness:
    """Runs an Extension on a thread, with pipes for its stdin and stdout."""

    def __init__(self, extension_factory):
        host_to_ext_r, host_to_ext_w = os.pipe()
        ext_to_host_r, ext_to_host_w = os.pipe()
        self.to_ext = os.fdopen(host_to_ext_w, "wb", buffering=0)
        self.from_ext = os.fdopen(ext_to_host_r, "rb")
        self.ext = extension_factory(os.fdopen(host_to_ext_r, "rb"), os.fdopen(ext_to_host_w, "wb"))
        self.status = None
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self):
        self.status = self.ext.run()

    def send_raw(self, data):
        self.to_ext.write(data)

    def send(self, message):
        body = json.dumps(message).encode()
        self.send_raw(b"Content-Length: %d\r\n\r\n" % len(body) + body)

    def request(self, request_id, method, params=None):
        self.send({"jsonrpc": "2.0", "id": request_id, "method": method, "params": params})

    def read(self):
        result = {}

        def reader():
            length = None
            while True:
                line = self.from_ext.readline()
                if not line:
                    return
                line = line.strip()
                if not line:
                    break
                name, _, value = line.decode().partition(":")
                if name.lower() == "content-length":
                    length = int(value)
            result["message"] = json.loads(self.from_ext.read(length))

        t = threading.Thread(target=reader, daemon=True)
        t.start()
        t.join(TIMEOUT)
        if "message" not in result:
            raise AssertionError("the extension did not write a frame within %d s" % TIMEOUT)
        return result["message"]

    def close(self):
        self.to_ext.close()
        self.thread.join(TIMEOUT)


def make_extension(stdin, stdout):
    ext = exthost_sdk.Extension(stdin=stdin, stdout=stdout)

    @ext.tool("echo", "Echo text back", {"type": "object", "properties": {"text": {"type": "string"}}})
    def echo(call):
        return {"content": "echo: " + call.input.get("text", "")}

    @ext.tool("remember", "Store a note")
    def remember(call):
        return ext.memory_append(call.input["note"], tags=["@note"])

    @ext.tool("wait_cancel", "Waits until cancelled")
    def wait_cancel(call):
        for _ in range(2000):
            if call.cancelled:
                return {"cancelled": True}
            threading.Event().wait(0.005)
        return {"cancelled": False}

    @ext.tool("boom", "Fails")
    def boom(call):
        raise exthost_sdk.ExtensionError("it broke", -32000)

    @ext.hook("before_tool_call")
    def guard(call):
        if "rm -rf" in json.dumps(call.params.get("tool_input")):
            return {"action": "block", "reason": "no"}
        return None

    @ext.tool("infinite", "Answers a number JSON cannot carry", {})
    def infinite(call):
        return {"value": float("inf")}

    @ext.command("report")
    def report(call, args):
        ext.task_start("t1", "Counting", "work")
        ext.task_update("t1", current=1, total=2)
        call.table(["name", "n"], [["a", 1]])
        ext.task_done("t1")
        call.done()
        return {"status": "ok", "args": args}

    return ext


class SdkTest(unittest.TestCase):
    def setUp(self):
        self.h = Harness(make_extension)

    def tearDown(self):
        self.h.close()

    def initialize(self):
        self.h.request(1, "initialize", {"plugin_id": "notes", "plugin_root": "/p", "config": {"k": "v"}})
        return self.h.read()

    def test_initialize_declares_tools_hooks_and_cancellation(self):
        reply = self.initialize()
        self.assertEqual(reply["id"], 1)
        caps = reply["result"]["capabilities"]
        self.assertEqual(reply["result"]["protocol_version"], 1)
        self.assertEqual([t["name"] for t in caps["tools"]], ["echo", "remember", "wait_cancel", "boom", "infinite"])
        self.assertTrue(caps["cancellation"])
        self.assertTrue(caps["hooks"])
        self.assertEqual(self.h.ext.config, {"k": "v"})

    def test_tool_calls_echo_ids_verbatim_and_errors_are_json_rpc_errors(self):
        self.initialize()
        self.h.request("evt-7", "tool.call", {"name": "echo", "input": {"text": "hi"}})
        self.assertEqual(self.h.read(), {"jsonrpc": "2.0", "id": "evt-7", "result": {"content": "echo: hi"}})
        self.h.request(8, "tool.call", {"name": "nope", "input": {}})
        self.assertEqual(self.h.read()["error"], {"code": -32602, "message": "unknown tool: nope"})
        self.h.request(9, "tool.call", {"name": "boom", "input": {}})
        self.assertEqual(self.h.read()["error"], {"code": -32000, "message": "it broke"})
        self.h.request(10, "no.such.method", {})
        self.assertEqual(self.h.read()["error"], {"code": -32601, "message": "method not found: no.such.method"})

    def test_a_result_with_a_non_finite_number_is_answered_as_an_error(self):
        self.initialize()
        self.h.request(11, "tool.call", {"name": "infinite", "input": {}})
        error = self.h.read()["error"]
        self.assertEqual(error["code"], -32000)
        self.assertTrue(error["message"].startswith("message cannot be sent as JSON: Out of range float values"),
                        error["message"])
        self.h.request(12, "tool.call", {"name": "echo", "input": {"text": "after"}})
        self.assertEqual(self.h.read()["result"], {"content": "echo: after"})

    def test_frames_split_at_every_byte_are_read_whole(self):
        body = json.dumps({"jsonrpc": "2.0", "id": 2, "method": "tool.call",
                           "params": {"name": "echo", "input": {"text": "split"}}}).encode()
        frame = b"Content-Length: %d\r\n\r\n" % len(body) + body
        self.initialize()
        for i in range(len(frame)):
            self.h.send_raw(frame[i:i + 1])
        self.assertEqual(self.h.read()["result"], {"content": "echo: split"})

    def test_hooks_default_to_continue(self):
        self.initialize()
        self.h.request(3, "hook.handle", {"kind": "before_tool_call", "tool_input": {"command": "rm -rf /"}})
        self.assertEqual(self.h.read()["result"], {"action": "block", "reason": "no"})
        self.h.request(4, "hook.handle", {"kind": "before_tool_call", "tool_input": {"command": "ls"}})
        self.assertEqual(self.h.read()["result"], {"action": "continue"})
        self.h.request(5, "hook.handle", {"kind": "before_message", "message": "x"})
        self.assertEqual(self.h.read()["result"], {"action": "continue"})

    def test_commands_stream_output_and_tasks_before_their_answer(self):
        self.initialize()
        self.h.request(6, "command.invoke", {"command": "report", "args": ["a"], "request_id": "r-1"})
        methods = []
        while True:
            m = self.h.read()
            if "id" in m:
                self.assertEqual(m["result"], {"status": "ok", "args": ["a"]})
                break
            methods.append(m["method"])
            if m["method"] == "command.output":
                self.assertEqual(m["params"]["request_id"], "r-1")
        self.assertEqual(methods, ["task.start", "task.update", "command.output", "task.done", "command.output"])

    def test_requests_to_the_host_wait_for_its_reply(self):
        self.initialize()
        self.h.request(11, "tool.call", {"name": "remember", "input": {"note": "buy milk"}})
        req = self.h.read()
        self.assertEqual(req["method"], "memory.append")
        self.assertEqual(req["params"], {"namespace": "notes", "content": "buy milk", "tags": ["@note"]})
        self.h.send({"jsonrpc": "2.0", "id": req["id"], "result": {"ok": True, "timestamp_ms": 5}})
        self.assertEqual(self.h.read(), {"jsonrpc": "2.0", "id": 11, "result": {"ok": True, "timestamp_ms": 5}})
        self.h.request(12, "tool.call", {"name": "remember", "input": {"note": "x"}})
        req = self.h.read()
        self.h.send({"jsonrpc": "2.0", "id": req["id"],
                     "error": {"code": -32602, "message": "permission denied: memory.write required"}})
        reply = self.h.read()
        self.assertIn("permission denied: memory.write required", reply["error"]["message"])

    def test_cancel_request_reaches_the_running_handler(self):
        self.initialize()
        self.h.request(13, "tool.call", {"name": "wait_cancel", "input": {}})
        self.h.send({"jsonrpc": "2.0", "method": "$/cancelRequest", "params": {"id": 13}})
        self.assertEqual(self.h.read()["result"], {"cancelled": True})

    def test_shutdown_is_answered_and_ends_run(self):
        self.initialize()
        self.h.request(14, "shutdown", None)
        self.assertEqual(self.h.read(), {"jsonrpc": "2.0", "id": 14, "result": None})
        self.h.thread.join(TIMEOUT)
        self.assertFalse(self.h.thread.is_alive())
        self.assertEqual(self.h.status, 0)


if __name__ == "__main__":
    unittest.main()
