"""exthost_sdk — write an exthost extension in Python, standard library only.

An extension is a program that speaks JSON-RPC 2.0 on stdin/stdout with Content-Length
framing (docs/protocol.md). This module does the framing, the dispatch by method, the
replies and errors, notifications, requests to the host (memory.*, config.*), progress,
shutdown and cancellation; you write handlers:

    from exthost_sdk import Extension

    ext = Extension()

    @ext.tool("echo", "Echo text back", {"type": "object", "properties": {"text": {"type": "string"}}})
    def echo(call):
        return {"content": "echo: " + call.input.get("text", "")}

    raise SystemExit(ext.run())

Threads: one reader thread parses stdin; handlers run on a pool of worker threads
(`concurrency`, DEFAULT_CONCURRENCY by default, declared to the host in the initialize
answer), so a hook is answered while a long tool runs, and a handler may block, call the
host (ext.memory_append(...)) and send notifications. Handlers that share state must lock
it, or the extension must be built with Extension(concurrency=1). Every frame is written
whole under one lock. A `$/cancelRequest` from the host marks its request cancelled at once
(`call.cancelled`). Never print to stdout: it carries frames only. Log with `log()` (stderr).
"""

import json
import os
import queue
import sys
import threading
import time

__all__ = ["Extension", "Call", "ExtensionError", "HostError", "log",
           "DEFAULT_CONCURRENCY", "MAX_CONCURRENCY", "MAX_FRAME_BODY"]

PROTOCOL_VERSION = 1
# The host refuses frame bodies above 4 MiB; a reply that would be larger is answered as an
# error instead, and a larger frame from the host is skipped.
MAX_FRAME_BODY = 4 * 1024 * 1024
# Header lines and whole headers from the host, as the host bounds ours.
MAX_HEADER_LINE = 1024
MAX_HEADERS = 64 * 1024
# Handlers running at once unless the extension says otherwise; the protocol's bounds.
DEFAULT_CONCURRENCY = 8
MAX_CONCURRENCY = 64
# call.progress() sends at most one $/progress per request in this many seconds.
PROGRESS_MIN_INTERVAL = 0.5
# After shutdown (or the end of the input), running handlers get this long to return.
SHUTDOWN_DRAIN_SECONDS = 0.3
# An error message longer than this is cut (it has to fit in a frame).
MAX_ERROR_MESSAGE = 64 * 1024
READ_CHUNK = 64 * 1024
# The host reads JSON nested at most this deep (the whole frame counts as one level), and
# integers exactly only within 64 bits: deeper or larger values are refused before sending.
MAX_JSON_DEPTH = 128
MIN_JSON_INT = -2 ** 63
MAX_JSON_INT = 2 ** 64 - 1

# JSON-RPC error codes.
PARSE_ERROR = -32700
INVALID_REQUEST = -32600
METHOD_NOT_FOUND = -32601
INVALID_PARAMS = -32602
SERVER_ERROR = -32000
REQUEST_CANCELLED = -32800


def log(*parts):
    """Writes one line to stderr, which the host forwards to its log."""
    print(*parts, file=sys.stderr, flush=True)


class ExtensionError(Exception):
    """Raise from a handler to answer with a JSON-RPC error {code, message}."""

    def __init__(self, message, code=SERVER_ERROR):
        super().__init__(message)
        self.code = code
        self.message = message


class HostError(Exception):
    """The host answered one of our requests with an error (or could not answer it)."""

    def __init__(self, code, message):
        super().__init__("%s (code %s)" % (message, code))
        self.code = code
        self.message = message


class _FramingLost(Exception):
    """The input cannot be split into frames any more."""


class Call:
    """One request being handled: its id, params, cancellation state and progress."""

    def __init__(self, extension, request_id, method, params):
        self._extension = extension
        self.id = request_id
        self.method = method
        self.params = params if isinstance(params, dict) else {}
        self._cancelled = threading.Event()
        self._lock = threading.Lock()   # orders progress before the reply
        self._answered = False
        self._last_progress = None

    @property
    def input(self):
        value = self.params.get("input")
        return value if value is not None else {}

    @property
    def cancelled(self):
        """True once the host sent $/cancelRequest for this request (or is shutting down)."""
        return self._cancelled.is_set()

    def wait_cancelled(self, timeout=None):
        """Sleeps until the request is cancelled or `timeout` seconds pass; True if cancelled."""
        return self._cancelled.wait(timeout)

    def progress(self):
        """Tells the host this request is still alive ($/progress), which restarts its idle
        deadline. At most one per PROGRESS_MIN_INTERVAL is sent, none once answered; returns
        whether one was sent. command.output and provider.stream.event count already."""
        with self._lock:
            now = time.monotonic()
            if self._answered:
                return False
            if self._last_progress is not None and now - self._last_progress < PROGRESS_MIN_INTERVAL:
                return False
            self._last_progress = now
            self._extension.notify("$/progress", {"id": self.id})
            return True

    # command.invoke output, tied to this invocation's request_id.
    def output(self, kind, **fields):
        request_id = self.params.get("request_id")
        event = dict(fields, kind=kind)
        self._extension.notify("command.output", {"request_id": request_id, "event": event})

    def text(self, content):
        self.output("text", content=content)

    def system(self, content):
        self.output("system", content=content)

    def error(self, content):
        self.output("error", content=content)

    def table(self, headers, rows):
        self.output("table", headers=list(headers), rows=[list(map(str, r)) for r in rows])

    def done(self):
        self.output("done")

    # provider.stream events.
    def stream(self, event):
        self._extension.notify("provider.stream.event", event)

    def _mark_answered(self):
        with self._lock:
            self._answered = True


class Extension:
    """Handlers by method; `run()` serves until shutdown or the end of stdin."""

    def __init__(self, cancellation=True, stdin=None, stdout=None, concurrency=DEFAULT_CONCURRENCY):
        if isinstance(concurrency, bool) or not isinstance(concurrency, int) \
                or not 1 <= concurrency <= MAX_CONCURRENCY:
            raise ValueError("concurrency must be an integer from 1 to %d, got %r" % (MAX_CONCURRENCY, concurrency))
        # Raw descriptors, never sys.stdin / sys.stdout: a thread blocked inside a buffered
        # file holds its lock, and the interpreter aborts at exit when it finds it held.
        self._in_fd = _fileno(stdin, 0)
        self._in = stdin
        self._out_fd = _fileno(stdout, 1)
        self._out = stdout
        self._write_lock = threading.Lock()
        self._output_broken = False
        self._concurrency = concurrency
        self._tools = {}
        self._tool_specs = []
        self._hooks = {}
        self._commands = {}
        self._providers = []
        self._provider_handlers = {}
        self._capabilities = []
        self._handlers = {}
        self._on_initialize = None
        self._cancellation = cancellation
        # Requests from the host: accepted by the reader, served by the workers.
        self._state_lock = threading.Lock()
        self._in_flight = {}            # _key(id) -> Call, from arrival until answered
        self._work = queue.Queue()      # Calls to start, in arrival order; None stops a worker
        self._stopping = False          # shutdown received or input ended: accept nothing more
        self._shutdown_call = None
        self._stop = threading.Event()  # wakes run()
        # Our requests to the host.
        self._replies = {}              # our request id -> queue for its reply
        self._replies_lock = threading.Lock()
        self._input_closed = False
        self._next_id = 0
        self.plugin_id = None
        self.plugin_root = None
        self.config = {}

    @property
    def concurrency(self):
        return self._concurrency

    # --- registration ---------------------------------------------------------------

    def tool(self, name, description, input_schema=None, idempotent=False):
        """Registers a tool; the handler gets a Call and returns the result (any JSON).

        idempotent=True declares that running the tool twice does no more than running it
        once: after a crash mid-call the host runs it again on the restarted extension.
        Other tools are never run twice; their caller gets the crash instead."""
        def register(handler):
            self._tools[name] = handler
            spec = {"name": name, "description": description, "input_schema": input_schema or {"type": "object"}}
            if idempotent:
                spec["idempotent"] = True
            self._tool_specs.append(spec)
            return handler
        return register

    def hook(self, kind):
        """Handles hook.handle for `kind`; return a dict such as {"action": "block", "reason": …}
        (None means continue)."""
        def register(handler):
            self._hooks[kind] = handler
            return handler
        return register

    def command(self, name):
        """Handles command.invoke for `name`; the handler gets (call, args) and may stream
        output with call.text(), call.table(), ext.task_*(); it should end with call.done()."""
        def register(handler):
            self._commands[name] = handler
            return handler
        return register

    def provider(self, spec, complete=None, stream=None):
        """Registers a model provider (spec: {id, display_name, description, models}) with its
        provider.complete and provider.stream handlers (each gets a Call)."""
        self._providers.append(spec)
        if complete:
            self._provider_handlers["provider.complete"] = complete
        if stream:
            self._provider_handlers["provider.stream"] = stream

    def capability(self, kind, name, permissions=()):
        self._capabilities.append({"kind": kind, "name": name, "permissions": list(permissions)})

    def method(self, name):
        """Handles any other request method (info.get, settings.editor.*, …)."""
        def register(handler):
            self._handlers[name] = handler
            return handler
        return register

    def on_initialize(self, handler):
        """Runs inside initialize, after config arrived (it may call the host)."""
        self._on_initialize = handler
        return handler

    # --- talking to the host --------------------------------------------------------

    def notify(self, method, params):
        body = self._encode({"jsonrpc": "2.0", "method": method, "params": params}, "a %s notification" % method)
        self._write(body)

    def task_start(self, task_id, label, kind="generic"):
        self.notify("task.start", {"id": task_id, "label": label, "kind": kind})

    def task_update(self, task_id, current=None, total=None, message=None):
        params = {"id": task_id}
        if current is not None:
            params["current"] = current
        if total is not None:
            params["total"] = total
        if message is not None:
            params["message"] = message
        self.notify("task.update", params)

    def task_log(self, task_id, line):
        self.notify("task.log", {"id": task_id, "line": line})

    def task_done(self, task_id, error=None):
        params = {"id": task_id}
        if error is not None:
            params["error"] = error
        self.notify("task.done", params)

    def request(self, method, params, timeout=None):
        """Sends a request to the host and waits for its result (at most `timeout` seconds
        when given); raises HostError."""
        with self._replies_lock:
            if self._input_closed:
                raise HostError(SERVER_ERROR, "the host closed the connection")
            self._next_id += 1
            request_id = "ext-%d" % self._next_id
            waiter = queue.Queue(maxsize=1)
            self._replies[request_id] = waiter
        try:
            self._write(self._encode({"jsonrpc": "2.0", "id": request_id, "method": method, "params": params},
                                     "a %s request" % method))
            reply = waiter.get(timeout=timeout)
        except queue.Empty:
            raise HostError(SERVER_ERROR, "the host did not answer %s within %s s" % (method, timeout))
        finally:
            with self._replies_lock:
                self._replies.pop(request_id, None)
        if reply is None:
            raise HostError(SERVER_ERROR, "the host closed the connection")
        error = reply.get("error")
        if error is not None:
            if not isinstance(error, dict):
                raise HostError(SERVER_ERROR, "the host answered %s with a malformed error" % method)
            raise HostError(error.get("code"), error.get("message"))
        return reply.get("result")

    def memory_append(self, content, tags=(), meta=None):
        params = {"namespace": self.plugin_id, "content": content, "tags": list(tags)}
        if meta is not None:
            params["meta"] = meta
        return self.request("memory.append", params)

    def memory_query(self, **filters):
        """Every record the query matches (up to `limit`, default 50), newest first: the
        host's pages one after another."""
        records = []
        cursor = None
        while True:
            page = self.memory_query_page(cursor=cursor, **filters)
            records.extend(page["records"])
            next_cursor = page.get("next_cursor")
            if next_cursor is None:
                return records
            if next_cursor == cursor:
                raise HostError(SERVER_ERROR, "the host answered memory.query with the same cursor again")
            cursor = next_cursor

    def memory_query_page(self, cursor=None, **filters):
        """One page of a query: {"records": [...], "next_cursor": <str or None>}. Pass a
        next_cursor back, with the same filters, for the page after it."""
        params = dict(filters, namespace=self.plugin_id)
        if cursor is not None:
            params["cursor"] = cursor
        page = self.request("memory.query", params)
        if not isinstance(page, dict) or not isinstance(page.get("records"), list):
            raise HostError(SERVER_ERROR, "the host answered memory.query without records")
        page.setdefault("next_cursor", None)
        return page

    def config_get(self, key):
        return self.request("config.get", {"key": key})["value"]

    def config_set(self, key, value):
        return self.request("config.set", {"key": key, "value": value})

    def config_subscribe(self, keys=()):
        return self.request("config.subscribe", {"keys": list(keys)})

    def is_cancelled(self, request_id):
        """Whether the request with this id is in flight and was cancelled."""
        with self._state_lock:
            call = self._in_flight.get(_key(request_id))
        return call is not None and call.cancelled

    # --- serving --------------------------------------------------------------------

    def run(self):
        """Serves requests until shutdown or the end of stdin; returns the exit status (0).

        On `shutdown` (or at the end of the input) it marks every request still in flight
        cancelled, answers shutdown, lets the workers finish (requests not started are
        answered as cancelled, running handlers get SHUTDOWN_DRAIN_SECONDS) and returns 0.
        Called on the main thread with handlers still running after that, it ends the
        process with status 0 (os._exit) rather than let the interpreter's exit meet them."""
        reader = threading.Thread(target=self._read_loop, name="exthost-reader", daemon=True)
        workers = [threading.Thread(target=self._work_loop, name="exthost-worker-%d" % i, daemon=True)
                   for i in range(self._concurrency)]
        for worker in workers:
            worker.start()
        reader.start()
        self._stop.wait()
        with self._state_lock:
            self._stopping = True
            shutdown = self._shutdown_call
            for call in self._in_flight.values():
                if call is not shutdown:
                    call._cancelled.set()
        if shutdown is not None:
            self._serve(shutdown)
        for _ in workers:
            self._work.put(None)  # behind every request already queued: those are answered first
        deadline = time.monotonic() + SHUTDOWN_DRAIN_SECONDS
        for worker in workers:
            worker.join(max(0.0, deadline - time.monotonic()))
        busy = sum(1 for worker in workers if worker.is_alive())
        if busy:
            with self._state_lock:
                left = sorted(call.method for call in self._in_flight.values())
            log("exthost_sdk: %d handler(s) still running %s s after the stop, left behind: %s"
                % (busy, SHUTDOWN_DRAIN_SECONDS, ", ".join(left) or "(replying)"))
            if threading.current_thread() is threading.main_thread():
                # The interpreter's own exit would wait for, then abort on, an output lock
                # such a thread may hold (Fatal Python error: _enter_buffered_busy): end the
                # process here instead, with the status of an orderly stop.
                sys.stderr.flush()
                os._exit(0)
        return 0

    def _work_loop(self):
        while True:
            call = self._work.get()
            if call is None:
                return
            self._serve(call)

    def _serve(self, call):
        """Runs one request's handler and writes its reply; never raises."""
        result, error = None, None
        if call.cancelled and call.method != "shutdown":
            error = (REQUEST_CANCELLED, "%s was cancelled before it started" % call.method)
        else:
            try:
                result = self._dispatch(call)
            except ExtensionError as e:
                error = (e.code, e.message)
            except Exception as e:  # a bug in a handler must not kill the extension
                log("exthost_sdk: %s failed: %r" % (call.method, e))
                error = (SERVER_ERROR, "%s failed: %s" % (call.method, e))
        call._mark_answered()
        self._forget(call)  # before its reply goes out, so that nothing is in flight after it
        try:
            self._reply(call.id, call.method, result, error)
        except Exception as e:  # the reply itself could not be written
            log("exthost_sdk: could not answer %s: %r" % (call.method, e))

    def _forget(self, call):
        with self._state_lock:
            if self._in_flight.get(_key(call.id)) is call:
                del self._in_flight[_key(call.id)]

    def _dispatch(self, call):
        method, params = call.method, call.params
        if method == "initialize":
            self.plugin_id = params.get("plugin_id")
            self.plugin_root = params.get("plugin_root")
            self.config = params.get("config") or {}
            if self._on_initialize:
                self._on_initialize(call)
            capabilities = {"concurrency": self._concurrency}
            if self._tool_specs:
                capabilities["tools"] = self._tool_specs
            if self._providers:
                capabilities["providers"] = self._providers
            if self._capabilities:
                capabilities["capabilities"] = self._capabilities
            if self._hooks:
                capabilities["hooks"] = True
            if self._cancellation:
                capabilities["cancellation"] = True
            return {"protocol_version": PROTOCOL_VERSION, "capabilities": capabilities}
        if method == "tool.call":
            handler = self._tools.get(params.get("name"))
            if handler is None:
                raise ExtensionError("unknown tool: %s" % params.get("name"), INVALID_PARAMS)
            return handler(call)
        if method == "hook.handle":
            handler = self._hooks.get(params.get("kind"))
            answer = handler(call) if handler else None
            return answer if answer is not None else {"action": "continue"}
        if method == "command.invoke":
            handler = self._commands.get(params.get("command"))
            if handler is None:
                raise ExtensionError("unknown command: %s" % params.get("command"), METHOD_NOT_FOUND)
            answer = handler(call, list(params.get("args") or []))
            return answer if answer is not None else {"status": "ok"}
        if method in self._provider_handlers:
            return self._provider_handlers[method](call)
        if method in self._handlers:
            return self._handlers[method](call)
        if method == "shutdown":
            return None
        raise ExtensionError("method not found: %s" % method, METHOD_NOT_FOUND)

    # --- reading --------------------------------------------------------------------

    def _read_loop(self):
        frames = _FrameReader(self._read_some)
        try:
            while True:
                try:
                    body = frames.next()
                except _FramingLost as e:
                    log("exthost_sdk: the input lost its framing (%s); reading stops" % e)
                    break
                except OSError as e:
                    log("exthost_sdk: reading the input failed: %s" % e)
                    break
                if body is None:
                    break
                try:
                    self._on_frame(body)
                except Exception as e:  # whatever a frame holds, the reader goes on
                    log("exthost_sdk: dropped a frame that could not be handled: %r" % e)
        finally:
            with self._replies_lock:
                self._input_closed = True
                for waiter in self._replies.values():
                    waiter.put(None)
                self._replies.clear()
            self._stop.set()

    def _read_some(self, size):
        if self._in_fd is not None:
            return os.read(self._in_fd, size)
        read = getattr(self._in, "read1", None) or self._in.read
        return read(size)

    def _on_frame(self, body):
        if isinstance(body, _Oversized):
            log("exthost_sdk: skipped a frame of %d bytes (over the %d-byte cap)" % (body.length, MAX_FRAME_BODY))
            return
        try:
            text = body.decode("utf-8")
        except UnicodeDecodeError as e:
            self._on_invalid_utf8(body, e)
            return
        try:
            message = json.loads(text)
        except (ValueError, RecursionError) as e:
            log("exthost_sdk: dropped a frame that is not JSON: %s" % e)
            return
        self._on_message(message)

    def _on_invalid_utf8(self, body, error):
        # Find out, from a lossy reading, whom to answer; the bytes themselves are refused.
        problem = "invalid UTF-8 at byte %d of the frame body" % error.start
        try:
            message = json.loads(body.decode("utf-8", "replace"))
        except (ValueError, RecursionError):
            message = None
        if isinstance(message, dict) and message.get("method") is None and isinstance(message.get("id"), str):
            with self._replies_lock:
                waiter = self._replies.pop(message["id"], None)
            if waiter is not None:
                waiter.put({"error": {"code": PARSE_ERROR, "message": "the host's reply holds " + problem}})
                return
        if isinstance(message, dict) and isinstance(message.get("method"), str) and _usable_id(message.get("id")):
            log("exthost_sdk: refused request %s: %s" % (message["method"], problem))
            self._reply(message["id"], message["method"], None,
                        (PARSE_ERROR, "request %s refused: %s" % (message["method"], problem)))
            return
        log("exthost_sdk: dropped a frame without a usable id: %s" % problem)

    def _on_message(self, message):
        if not isinstance(message, dict):
            log("exthost_sdk: dropped a frame that is not a JSON object")
            return
        method = message.get("method")
        request_id = message.get("id")
        if method is None:  # a reply to one of our requests
            if isinstance(request_id, str):
                with self._replies_lock:
                    waiter = self._replies.pop(request_id, None)
                if waiter is not None:
                    waiter.put(message)
            return
        if request_id is None:  # a notification
            if method == "$/cancelRequest":
                params = message.get("params")
                target = params.get("id") if isinstance(params, dict) else None
                if _usable_id(target):
                    self._cancel(target)
            return
        if not _usable_id(request_id):
            log("exthost_sdk: dropped a request whose id is neither a string nor a number")
            return
        if not isinstance(method, str):
            self._reply(request_id, "request", None, (INVALID_REQUEST, "invalid request: method must be a string"))
            return
        self._accept(Call(self, request_id, method, message.get("params")))

    def _accept(self, call):
        key = _key(call.id)
        with self._state_lock:
            if self._stopping:
                refusal = (REQUEST_CANCELLED, "%s refused: the extension is shutting down" % call.method)
            elif key in self._in_flight:
                refusal = (INVALID_REQUEST, "%s refused: request id %s is already in flight"
                           % (call.method, json.dumps(call.id)))
            else:
                refusal = None
                self._in_flight[key] = call
                if call.method == "shutdown":
                    # Answered by run() at once, whatever the workers are busy with.
                    self._stopping = True
                    self._shutdown_call = call
                    self._stop.set()
                else:
                    self._work.put(call)
        if refusal is not None:
            self._reply(call.id, call.method, None, refusal)

    def _cancel(self, request_id):
        with self._state_lock:
            call = self._in_flight.get(_key(request_id))
        if call is not None:  # an id not in flight (done, or never seen) is ignored
            call._cancelled.set()

    # --- writing --------------------------------------------------------------------

    def _reply(self, request_id, method, result, error):
        if error is None:
            try:
                body = self._encode({"jsonrpc": "2.0", "id": request_id, "result": result},
                                    "the result of %s" % method)
            except ExtensionError as e:
                log("exthost_sdk: %s" % e.message)
                error = (e.code, e.message)
        if error is not None:
            code, message = error
            if isinstance(code, bool) or not isinstance(code, int) or not -2 ** 31 <= code < 2 ** 31:
                log("exthost_sdk: %s: error code %r is not a 32-bit integer; answered %d" % (method, code, SERVER_ERROR))
                message = "%s (error code %r replaced: not a 32-bit integer)" % (message, code)
                code = SERVER_ERROR
            message = _sendable_text(message) if isinstance(message, str) else _sendable_text(repr(message))
            if len(message) > MAX_ERROR_MESSAGE:
                message = message[:MAX_ERROR_MESSAGE] + "…"
            body = self._encode({"jsonrpc": "2.0", "id": request_id, "error": {"code": code, "message": message}},
                                "the error reply to %s" % method)
        self._write(body)

    def _encode(self, message, what):
        """The message's frame body, or ExtensionError naming `what` and the problem."""
        # allow_nan=False: json.dumps would otherwise write Infinity or NaN, which are not
        # JSON, and the host would refuse the whole frame. ensure_ascii=False: text is sent
        # as UTF-8, so that a lone surrogate (not Unicode) is caught by encode() below
        # instead of going out as an escape the host refuses.
        problem = _unreadable_by_host(message)
        if problem:
            raise ExtensionError("message cannot be sent as JSON: %s (%s)" % (problem, what))
        try:
            text = json.dumps(message, separators=(",", ":"), allow_nan=False, ensure_ascii=False)
        except (ValueError, TypeError, RecursionError) as e:
            raise ExtensionError("message cannot be sent as JSON: %s (%s)" % (e, what))
        try:
            body = text.encode("utf-8")
        except UnicodeEncodeError as e:
            raise ExtensionError("message cannot be sent as JSON: a string holds the lone surrogate %s, "
                                 "which is not Unicode (%s)" % (ascii(e.object[e.start:e.start + 1]), what))
        if len(body) > MAX_FRAME_BODY:
            raise ExtensionError("message too large: %d bytes, over the host's frame cap of %d bytes (%s)"
                                 % (len(body), MAX_FRAME_BODY, what))
        return body

    def _write(self, body):
        """Writes one whole frame; frames never interleave. After the host went away, drops."""
        frame = b"Content-Length: %d\r\n\r\n" % len(body) + body
        with self._write_lock:
            if self._output_broken:
                return
            try:
                if self._out_fd is not None:
                    view = memoryview(frame)
                    while view:
                        view = view[os.write(self._out_fd, view):]
                else:
                    self._out.write(frame)
                    self._out.flush()
            except OSError as e:
                self._output_broken = True
                log("exthost_sdk: writing to the host failed (%s); further output is dropped" % e)


class _Oversized:
    """A frame from the host over MAX_FRAME_BODY, already skipped."""

    def __init__(self, length):
        self.length = length


class _FrameReader:
    """Splits the input into frame bodies: bytes, _Oversized, or None at the end."""

    def __init__(self, read_some):
        self._read_some = read_some
        self._buffer = bytearray()
        self._eof = False

    def _fill(self):
        if self._eof:
            return False
        chunk = self._read_some(READ_CHUNK)
        if not chunk:
            self._eof = True
            return False
        self._buffer += chunk
        return True

    def _line(self):
        while True:
            end = self._buffer.find(b"\n")
            if end >= 0:
                if end + 1 > MAX_HEADER_LINE:
                    raise _FramingLost("a header line of %d bytes" % (end + 1))
                line = bytes(self._buffer[:end + 1])
                del self._buffer[:end + 1]
                return line
            if len(self._buffer) > MAX_HEADER_LINE:
                raise _FramingLost("a header line over %d bytes" % MAX_HEADER_LINE)
            if not self._fill():
                if self._buffer:
                    raise _FramingLost("the input ended inside a header")
                return None

    def next(self):
        length, seen, header_bytes = None, False, 0
        while True:
            line = self._line()
            if line is None:
                if seen:
                    raise _FramingLost("the input ended inside a header")
                return None
            header_bytes += len(line)
            if header_bytes > MAX_HEADERS:
                raise _FramingLost("headers over %d bytes" % MAX_HEADERS)
            line = line.strip()
            if not line:
                if not seen:
                    continue  # blank lines between frames
                if length is None:
                    raise _FramingLost("a frame without Content-Length")
                break
            seen = True
            name, _, value = line.partition(b":")
            if name.strip().lower() == b"content-length":
                value = value.strip()
                if not value.isdigit():
                    raise _FramingLost("Content-Length %r" % value.decode("ascii", "replace"))
                length = int(value)
        if length > MAX_FRAME_BODY:
            left = length
            while left > 0:
                if not self._buffer and not self._fill():
                    raise _FramingLost("the input ended inside a frame")
                taken = min(left, len(self._buffer))
                del self._buffer[:taken]
                left -= taken
            return _Oversized(length)
        while len(self._buffer) < length:
            if not self._fill():
                raise _FramingLost("the input ended inside a frame")
        body = bytes(self._buffer[:length])
        del self._buffer[:length]
        return body


def _fileno(stream, default):
    if stream is None:
        return default
    if isinstance(stream, int):
        return stream
    try:
        return stream.fileno()
    except (AttributeError, OSError, ValueError):
        return None  # a file-like object without a descriptor: its own read/write are used


def _usable_id(request_id):
    return isinstance(request_id, str) or (isinstance(request_id, (int, float)) and not isinstance(request_id, bool))


def _unreadable_by_host(value):
    """What in `value` the host would refuse (nesting past MAX_JSON_DEPTH, an integer outside
    64 bits), or None. Iterative: a deep value cannot exhaust the stack here."""
    stack = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, (dict, list, tuple)):
            if depth > MAX_JSON_DEPTH:
                return "nested deeper than the host reads (%d levels)" % MAX_JSON_DEPTH
            children = item.values() if isinstance(item, dict) else item
            stack.extend((child, depth + 1) for child in children)
        elif isinstance(item, int) and not isinstance(item, bool):
            if not MIN_JSON_INT <= item <= MAX_JSON_INT:
                return "an integer does not fit in 64 bits, which the host reads exactly"
    return None


def _sendable_text(text):
    text = str(text)
    return text.encode("utf-8", "replace").decode("utf-8")


def _key(request_id):
    # 7 and "7" are different ids: keep the type in the key.
    return (type(request_id).__name__, request_id)
