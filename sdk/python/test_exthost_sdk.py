"""Tests of exthost_sdk: an extension driven over real pipes by a scripted host."""

import json
import os
import select
import subprocess
import sys
import tempfile
import threading
import time
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import exthost_sdk  # noqa: E402

TIMEOUT = 20  # seconds; every wait is bounded


def frame(message):
    body = json.dumps(message).encode()
    return b"Content-Length: %d\r\n\r\n" % len(body) + body


def raw_frame(body):
    return b"Content-Length: %d\r\n\r\n" % len(body) + body


def request(request_id, method, params=None):
    return frame({"jsonrpc": "2.0", "id": request_id, "method": method, "params": params})


class Harness:
    """Runs an Extension on a thread, with pipes for its stdin and stdout."""

    def __init__(self, extension_factory, **options):
        host_to_ext_r, host_to_ext_w = os.pipe()
        ext_to_host_r, ext_to_host_w = os.pipe()
        os.set_blocking(host_to_ext_w, False)
        self.to_ext = os.fdopen(host_to_ext_w, "wb", buffering=0)
        self.from_ext = os.fdopen(ext_to_host_r, "rb")
        self._ext_in = os.fdopen(host_to_ext_r, "rb")
        self._ext_out = os.fdopen(ext_to_host_w, "wb")
        self.ext = extension_factory(self._ext_in, self._ext_out, **options)
        self.status = None
        self.notifications = []  # notifications skipped by read_reply, in order
        self._readers = []
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self):
        self.status = self.ext.run()

    def send_raw(self, data):
        """Writes all of `data` within TIMEOUT (the pipe is non-blocking)."""
        fd = self.to_ext.fileno()
        view = memoryview(data)
        deadline = time.monotonic() + TIMEOUT
        while view:
            _, ready, _ = select.select([], [fd], [], max(0.0, deadline - time.monotonic()))
            if not ready:
                raise AssertionError("the extension read nothing for %d s" % TIMEOUT)
            try:
                view = view[os.write(fd, view):]
            except BlockingIOError:
                pass

    def send(self, message):
        self.send_raw(frame(message))

    def request(self, request_id, method, params=None):
        self.send_raw(request(request_id, method, params))

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
            body = self.from_ext.read(length)
            body.decode("utf-8")  # strict: the extension must write UTF-8 only
            result["message"] = json.loads(body)

        t = threading.Thread(target=reader, daemon=True)
        self._readers.append(t)
        t.start()
        t.join(TIMEOUT)
        if "message" not in result:
            raise AssertionError("the extension did not write a frame within %d s" % TIMEOUT)
        return result["message"]

    def read_reply(self):
        """The next reply or request from the extension; notifications are kept aside."""
        while True:
            message = self.read()
            if "id" in message:
                return message
            self.notifications.append(message)

    def read_replies(self, count):
        """`count` replies, by id (any order)."""
        replies = {}
        for _ in range(count):
            reply = self.read_reply()
            replies[json.dumps(reply["id"])] = reply
        return replies

    def close(self):
        self.to_ext.close()
        self.thread.join(TIMEOUT)
        # The end of its output ends a read still waiting (closing a file another thread
        # reads would wait for that read).
        self._ext_out.close()
        for t in self._readers:
            t.join(TIMEOUT)
        if not any(t.is_alive() for t in self._readers):
            self.from_ext.close()
        self._ext_in.close()


def make_extension(stdin, stdout, **options):
    ext = exthost_sdk.Extension(stdin=stdin, stdout=stdout, **options)
    ext.hook_ran = threading.Event()
    ext.answered_calls = []
    active = {"now": 0, "most": 0}
    active_lock = threading.Lock()
    ext.active = active

    def enter():
        with active_lock:
            active["now"] += 1
            active["most"] = max(active["most"], active["now"])

    def leave():
        with active_lock:
            active["now"] -= 1

    @ext.tool("echo", "Echo text back", {"type": "object", "properties": {"text": {"type": "string"}}},
              idempotent=True)
    def echo(call):
        return {"content": "echo: " + call.input.get("text", "")}

    @ext.tool("remember", "Store a note")
    def remember(call):
        return ext.memory_append(call.input["note"], tags=["@note"])

    @ext.tool("wait_cancel", "Reports progress, then waits until cancelled")
    def wait_cancel(call):
        call.progress()  # tells the test it is running
        return {"cancelled": call.wait_cancelled(TIMEOUT)}

    @ext.tool("boom", "Fails")
    def boom(call):
        raise exthost_sdk.ExtensionError("it broke", -32000)

    @ext.tool("wait_hook", "Waits until a hook has run")
    def wait_hook(call):
        return {"hook_ran_first": ext.hook_ran.wait(TIMEOUT)}

    @ext.tool("gate", "Runs until request 31 is cancelled, counting handlers at once")
    def gate(call):
        enter()
        try:
            for _ in range(int(TIMEOUT / 0.005)):
                if ext.is_cancelled(call.input.get("wait_for", 31)):
                    return {"saw_cancel": True}
                threading.Event().wait(0.005)
            return {"saw_cancel": False}
        finally:
            leave()

    @ext.tool("progress", "Reports progress twice")
    def progress(call):
        ext.answered_calls.append(call)
        return {"sent": [call.progress(), call.progress()]}

    @ext.tool("huge", "Answers more than the frame cap")
    def huge(call):
        return {"content": "x" * exthost_sdk.MAX_FRAME_BODY}

    @ext.tool("surrogate", "Answers a string that is not Unicode")
    def surrogate(call):
        return {"content": "file-\udcff.txt"}

    @ext.tool("bytes", "Answers bytes")
    def answer_bytes(call):
        return {"content": b"\xff"}

    @ext.hook("before_tool_call")
    def guard(call):
        enter()
        try:
            ext.hook_ran.set()
            if "rm -rf" in json.dumps(call.params.get("tool_input")):
                return {"action": "block", "reason": "no"}
            return None
        finally:
            leave()

    @ext.tool("infinite", "Answers a number JSON cannot carry", {})
    def infinite(call):
        return {"value": float("inf")}

    @ext.tool("recall", "Every note tagged @note")
    def recall(call):
        return {"contents": [r["content"] for r in ext.memory_query(tag_prefix="@note", limit=5)]}

    @ext.method("test.bigint")
    def bigint(call):
        return {"n": 10 ** 400}

    @ext.method("test.deep")
    def deep(call):
        value = []
        for _ in range(200):
            value = [value]
        return value

    @ext.method("test.badcode")
    def badcode(call):
        raise exthost_sdk.ExtensionError("bad", code=call.params.get("code"))

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
    options = {}

    def setUp(self):
        self.h = Harness(make_extension, **self.options)

    def tearDown(self):
        self.h.close()

    def initialize(self):
        self.h.request(1, "initialize", {"plugin_id": "notes", "plugin_root": "/p", "config": {"k": "v"}})
        return self.h.read()

    def assert_still_serving(self, request_id=99):
        self.h.request(request_id, "tool.call", {"name": "echo", "input": {"text": "still here"}})
        self.assertEqual(self.h.read_reply(), {"jsonrpc": "2.0", "id": request_id,
                                               "result": {"content": "echo: still here"}})


class BasicsTest(SdkTest):
    def test_initialize_declares_tools_hooks_cancellation_and_concurrency(self):
        reply = self.initialize()
        self.assertEqual(reply["id"], 1)
        caps = reply["result"]["capabilities"]
        self.assertEqual(reply["result"]["protocol_version"], 1)
        self.assertEqual([t["name"] for t in caps["tools"]],
                         ["echo", "remember", "wait_cancel", "boom", "wait_hook", "gate", "progress", "huge",
                          "surrogate", "bytes", "infinite", "recall"])
        # Only the tool registered as idempotent says so.
        self.assertIs(caps["tools"][0]["idempotent"], True)
        self.assertNotIn("idempotent", caps["tools"][1])
        self.assertTrue(caps["cancellation"])
        self.assertTrue(caps["hooks"])
        self.assertEqual(caps["concurrency"], exthost_sdk.DEFAULT_CONCURRENCY)
        self.assertEqual(exthost_sdk.DEFAULT_CONCURRENCY, 8)
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
        self.assertIn("the result of tool.call", error["message"])
        self.assert_still_serving(12)

    def test_an_integer_beyond_64_bits_or_nesting_past_the_hosts_depth_is_answered_as_an_error(self):
        self.initialize()
        self.h.request(13, "test.bigint", {})
        error = self.h.read()["error"]
        self.assertEqual(error["code"], -32000)
        self.assertIn("an integer does not fit in 64 bits", error["message"])
        self.h.request(14, "test.deep", {})
        error = self.h.read()["error"]
        self.assertEqual(error["code"], -32000)
        self.assertIn("nested deeper than the host reads (128 levels)", error["message"])
        self.assert_still_serving(15)

    def test_an_error_code_that_is_not_a_32_bit_integer_still_gets_an_error_reply(self):
        self.initialize()
        for request_id, code in ((16, "x"), (17, 2 ** 40), (18, True)):
            self.h.request(request_id, "test.badcode", {"code": code})
            reply = self.h.read()
            self.assertEqual(reply["id"], request_id)
            self.assertEqual(reply["error"]["code"], -32000)
            self.assertIn("error code %r replaced" % code, reply["error"]["message"])
        self.assert_still_serving(19)

    def test_frames_split_at_every_byte_are_read_whole(self):
        data = request(2, "tool.call", {"name": "echo", "input": {"text": "split"}})
        self.initialize()
        for i in range(len(data)):
            self.h.send_raw(data[i:i + 1])
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

    def test_a_memory_query_follows_the_hosts_pages(self):
        self.initialize()
        self.h.request(13, "tool.call", {"name": "recall", "input": {}})
        first = self.h.read()
        self.assertEqual(first["method"], "memory.query")
        self.assertEqual(first["params"], {"namespace": "notes", "tag_prefix": "@note", "limit": 5})
        self.h.send({"jsonrpc": "2.0", "id": first["id"],
                     "result": {"records": [{"content": "a"}, {"content": "b"}], "next_cursor": "m1.9.2.3"}})
        second = self.h.read()
        self.assertEqual(second["params"], {"namespace": "notes", "tag_prefix": "@note", "limit": 5,
                                            "cursor": "m1.9.2.3"})
        self.h.send({"jsonrpc": "2.0", "id": second["id"],
                     "result": {"records": [{"content": "c"}], "next_cursor": None}})
        self.assertEqual(self.h.read(), {"jsonrpc": "2.0", "id": 13, "result": {"contents": ["a", "b", "c"]}})

    def test_shutdown_is_answered_and_ends_run(self):
        self.initialize()
        self.h.request(14, "shutdown", None)
        self.assertEqual(self.h.read(), {"jsonrpc": "2.0", "id": 14, "result": None})
        self.h.thread.join(TIMEOUT)
        self.assertFalse(self.h.thread.is_alive())
        self.assertEqual(self.h.status, 0)


class ConcurrencyTest(SdkTest):
    def test_a_hook_is_answered_while_a_long_tool_runs(self):
        self.initialize()
        self.h.request(20, "tool.call", {"name": "wait_hook", "input": {}})
        self.h.request(21, "hook.handle", {"kind": "before_tool_call", "tool_input": {"command": "ls"}})
        first = self.h.read_reply()
        self.assertEqual(first, {"jsonrpc": "2.0", "id": 21, "result": {"action": "continue"}})
        self.assertEqual(self.h.read_reply(), {"jsonrpc": "2.0", "id": 20, "result": {"hook_ran_first": True}})

    def test_pipelined_requests_are_all_answered_with_their_ids(self):
        self.initialize()
        ids = list(range(100, 116)) + ["s-%d" % i for i in range(16)]
        self.h.send_raw(b"".join(request(i, "tool.call", {"name": "echo", "input": {"text": str(i)}}) for i in ids))
        replies = self.h.read_replies(len(ids))
        self.assertEqual(sorted(replies), sorted(json.dumps(i) for i in ids))
        for i in ids:
            self.assertEqual(replies[json.dumps(i)]["result"], {"content": "echo: %s" % i})

    def test_cancel_request_reaches_the_running_handler(self):
        self.initialize()
        self.h.request(13, "tool.call", {"name": "wait_cancel", "input": {}})
        started = self.h.read()
        self.assertEqual(started, {"jsonrpc": "2.0", "method": "$/progress", "params": {"id": 13}})
        self.h.send({"jsonrpc": "2.0", "method": "$/cancelRequest", "params": {"id": 13}})
        # A request cancelled while it runs is still answered, with what its handler returns.
        self.assertEqual(self.h.read(), {"jsonrpc": "2.0", "id": 13, "result": {"cancelled": True}})

    def test_a_cancel_for_an_unknown_id_changes_nothing(self):
        self.initialize()
        for target in (999, "nope", None, [1]):
            self.h.send({"jsonrpc": "2.0", "method": "$/cancelRequest", "params": {"id": target}})
        self.h.send({"jsonrpc": "2.0", "method": "$/cancelRequest", "params": "junk"})
        self.assert_still_serving(15)
        self.assertEqual(self.h.ext._in_flight, {})

    def test_progress_is_sent_for_the_running_request_and_never_after_its_reply(self):
        self.initialize()
        self.h.request(40, "tool.call", {"name": "progress", "input": {}})
        reply = self.h.read_reply()
        self.assertEqual(reply["id"], 40)
        sent = reply["result"]["sent"]
        self.assertTrue(sent[0])
        progress = [n for n in self.h.notifications if n["method"] == "$/progress"]
        self.assertEqual(progress, [{"jsonrpc": "2.0", "method": "$/progress", "params": {"id": 40}}] * sent.count(True))
        self.assertFalse(self.h.ext.answered_calls[0].progress())


class SequentialTest(SdkTest):
    options = {"concurrency": 1}

    def test_concurrency_one_is_declared_and_runs_one_handler_at_a_time(self):
        self.assertEqual(self.initialize()["result"]["capabilities"]["concurrency"], 1)
        # 30 runs until 31 is cancelled; 31 and the hook 32 wait behind it.
        self.h.request(30, "tool.call", {"name": "gate", "input": {"wait_for": 31}})
        self.h.request(31, "tool.call", {"name": "echo", "input": {"text": "late"}})
        self.h.request(32, "hook.handle", {"kind": "before_tool_call", "tool_input": {}})
        self.h.send({"jsonrpc": "2.0", "method": "$/cancelRequest", "params": {"id": 31}})
        self.assertEqual(self.h.read_reply(), {"jsonrpc": "2.0", "id": 30, "result": {"saw_cancel": True}})
        # Cancelled before it started: answered at once, its handler never runs.
        self.assertEqual(self.h.read_reply(), {"jsonrpc": "2.0", "id": 31, "error": {
            "code": exthost_sdk.REQUEST_CANCELLED, "message": "tool.call was cancelled before it started"}})
        self.assertEqual(self.h.read_reply(), {"jsonrpc": "2.0", "id": 32, "result": {"action": "continue"}})
        self.assertEqual(self.h.ext.active["most"], 1)

    def test_concurrency_outside_one_to_sixty_four_is_refused(self):
        for bad in (0, 65, True, 2.0, "8"):
            with self.assertRaises(ValueError):
                exthost_sdk.Extension(concurrency=bad)
        self.assertEqual(exthost_sdk.Extension(concurrency=64).concurrency, 64)


class HostileInputTest(SdkTest):
    def test_a_result_over_the_frame_cap_is_an_error_naming_the_method(self):
        self.initialize()
        self.h.request(60, "tool.call", {"name": "huge", "input": {}})
        reply = self.h.read_reply()
        self.assertEqual(reply["id"], 60)
        self.assertEqual(reply["error"]["code"], -32000)
        self.assertIn("the result of tool.call", reply["error"]["message"])
        self.assertIn("frame cap of 4194304 bytes", reply["error"]["message"])
        self.assert_still_serving(61)

    def test_invalid_utf8_in_a_request_is_answered_with_an_error(self):
        self.initialize()
        body = b'{"jsonrpc":"2.0","id":50,"method":"tool.call","params":{"name":"echo","input":{"text":"a\xffb"}}}'
        self.h.send_raw(raw_frame(body))
        reply = self.h.read_reply()
        self.assertEqual(reply["id"], 50)
        self.assertEqual(reply["error"]["code"], exthost_sdk.PARSE_ERROR)
        self.assertEqual(reply["error"]["message"],
                         "request tool.call refused: invalid UTF-8 at byte %d of the frame body" % body.index(b"\xff"))
        self.assert_still_serving(51)

    def test_frames_without_a_usable_id_are_dropped_and_reading_goes_on(self):
        self.initialize()
        for body in (b"\xff\xfe not json", b"{not json", b"[1,2]", b'{"id":{"x":1},"method":"m"}',
                     b'{"id":7,"method":5}', b"[" * 100000, b'{"jsonrpc":"2.0","id":"x\xff"'):
            self.h.send_raw(raw_frame(body))
        self.h.send_raw(b"Content-Length: %d\r\n\r\n" % (exthost_sdk.MAX_FRAME_BODY + 1))
        self.h.send_raw(b" " * (exthost_sdk.MAX_FRAME_BODY + 1))
        # The one with a numeric id but no string method is answered as invalid.
        self.assertEqual(self.h.read_reply()["error"]["code"], exthost_sdk.INVALID_REQUEST)
        self.assert_still_serving(52)

    def test_a_result_that_is_not_unicode_or_json_is_an_error_reply(self):
        self.initialize()
        self.h.request(53, "tool.call", {"name": "surrogate", "input": {}})
        error = self.h.read_reply()["error"]
        self.assertEqual(error["message"], "message cannot be sent as JSON: a string holds the lone surrogate "
                                           "'\\udcff', which is not Unicode (the result of tool.call)")
        self.h.request(54, "tool.call", {"name": "bytes", "input": {}})
        error = self.h.read_reply()["error"]
        self.assertIn("not JSON serializable (the result of tool.call)", error["message"])
        self.assert_still_serving(55)

    def test_an_unreadable_header_ends_the_input_without_killing_anything(self):
        self.initialize()
        self.h.send_raw(b"Content-Length: twelve\r\n\r\n{}")
        self.h.thread.join(TIMEOUT)
        self.assertFalse(self.h.thread.is_alive())
        self.assertEqual(self.h.status, 0)


EXTENSION_SCRIPT = r"""
import sys
import threading
sys.path.insert(0, %r)
from exthost_sdk import Extension, log

ext = Extension()

@ext.tool("echo", "Echo text back")
def echo(call):
    return {"content": "echo: " + call.input.get("text", "")}

@ext.tool("linger", "Runs until cancelled")
def linger(call):
    call.progress()
    cancelled = call.wait_cancelled(%d)
    log("linger saw cancellation: %%s" %% cancelled)
    return {"cancelled": cancelled}

@ext.tool("stubborn", "Ignores cancellation")
def stubborn(call):
    call.progress()
    threading.Event().wait(%d)
    return {}

raise SystemExit(ext.run())
""" % (HERE, TIMEOUT, 3 * TIMEOUT)


class ProcessTest(unittest.TestCase):
    """A real extension process: how it ends, seen from outside."""

    @classmethod
    def setUpClass(cls):
        cls.dir = tempfile.TemporaryDirectory()
        cls.script = os.path.join(cls.dir.name, "extension.py")
        with open(cls.script, "w") as f:
            f.write(EXTENSION_SCRIPT)

    @classmethod
    def tearDownClass(cls):
        cls.dir.cleanup()

    def spawn(self):
        env = dict(os.environ, PYTHONDONTWRITEBYTECODE="1")
        return subprocess.Popen([sys.executable, self.script], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, env=env)

    def finish(self, process, close_input):
        """Waits for the process to exit (stdin kept open unless `close_input`)."""
        try:
            if close_input:
                process.stdin.close()
            status = process.wait(TIMEOUT)
        finally:
            if process.poll() is None:
                process.kill()
                process.wait(TIMEOUT)
        out, err = process.stdout.read(), process.stderr.read()
        for f in (process.stdin, process.stdout, process.stderr):
            f.close()
        return status, out, err.decode("utf-8", "replace")

    def test_shutdown_exits_with_status_zero_while_stdin_stays_open(self):
        for _ in range(3):
            process = self.spawn()
            process.stdin.write(request(1, "initialize", {"plugin_id": "p", "config": {}}) +
                                request(2, "tool.call", {"name": "echo", "input": {"text": "x"}}) +
                                request(3, "shutdown"))
            process.stdin.flush()
            status, out, err = self.finish(process, close_input=False)
            self.assertNotIn("Fatal Python error", err)
            self.assertEqual(status, 0, err)
            self.assertIn(b'{"jsonrpc":"2.0","id":3,"result":null}', out)

    def read_until(self, process, marker):
        """What the process writes on stdout until `marker` appears, within TIMEOUT."""
        seen = b""
        deadline = time.monotonic() + TIMEOUT
        while marker not in seen:
            left = deadline - time.monotonic()
            ready, _, _ = select.select([process.stdout], [], [], max(0.0, left))
            self.assertTrue(ready, "no %r on stdout within %d s" % (marker, TIMEOUT))
            chunk = os.read(process.stdout.fileno(), 65536)
            self.assertTrue(chunk, "the extension ended before writing %r" % marker)
            seen += chunk
        return seen

    def start_handler(self, process, tool):
        """Initializes, calls `tool` and waits for its $/progress: the handler runs."""
        process.stdin.write(request(1, "initialize", {"plugin_id": "p", "config": {}}) +
                            request(2, "tool.call", {"name": tool, "input": {}}))
        process.stdin.flush()
        return self.read_until(process, b'"$/progress"')

    def test_shutdown_cancels_a_running_handler_and_exits_with_status_zero(self):
        process = self.spawn()
        seen = self.start_handler(process, "linger")
        process.stdin.write(request(3, "shutdown"))
        process.stdin.flush()
        status, out, err = self.finish(process, close_input=False)
        out = seen + out
        self.assertNotIn("Fatal Python error", err)
        self.assertEqual(status, 0, err)
        self.assertIn(b'{"jsonrpc":"2.0","id":3,"result":null}', out)
        # Answered if it returned within the drain, and then as cancelled.
        self.assertNotIn(b'{"jsonrpc":"2.0","id":2,"result":{"cancelled":false}}', out)

    def test_a_handler_that_ignores_cancellation_does_not_hold_the_exit(self):
        process = self.spawn()
        seen = self.start_handler(process, "stubborn")
        process.stdin.write(request(3, "shutdown"))
        process.stdin.flush()
        # The handler sleeps 3 * TIMEOUT; the process must be gone within TIMEOUT.
        status, out, err = self.finish(process, close_input=False)
        self.assertNotIn("Fatal Python error", err)
        self.assertEqual(status, 0, err)
        self.assertIn(b'{"jsonrpc":"2.0","id":3,"result":null}', seen + out)
        self.assertIn("1 handler(s) still running", err)
        self.assertIn("left behind: tool.call", err)

    def test_the_end_of_the_input_exits_with_status_zero(self):
        process = self.spawn()
        process.stdin.write(request(1, "initialize", {"plugin_id": "p", "config": {}}))
        process.stdin.flush()
        seen = self.read_until(process, b'"id":1,"result":{"protocol_version":1')
        status, out, err = self.finish(process, close_input=True)
        self.assertNotIn("Fatal Python error", err)
        self.assertEqual(status, 0, err)
        self.assertEqual(out, b"")
        self.assertTrue(seen.endswith(b"}"))


if __name__ == "__main__":
    unittest.main()
