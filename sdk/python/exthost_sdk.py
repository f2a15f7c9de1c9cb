"""exthost_sdk — write an exthost extension in Python, standard library only.

An extension is a program that speaks JSON-RPC 2.0 on stdin/stdout with Content-Length
framing (docs/protocol.md). This module does the framing, the dispatch by method, the
replies and errors, notifications, requests to the host (memory.*, config.*), shutdown and
cancellation; you write handlers:

    from exthost_sdk import Extension

    ext = Extension()

    @ext.tool("echo", "Echo text back", {"type": "object", "properties": {"text": {"type": "string"}}})
    def echo(call):
        return {"content": "echo: " + call.input.get("text", "")}

    ext.run()

Threads: one reader thread parses stdin; handlers run one at a time on the main thread, so
a handler may block, call the host (ext.memory_append(...)) and send notifications. A
`$/cancelRequest` from the host marks the request cancelled at once (`call.cancelled`).
Never print to stdout: it carries frames only. Log with `log()` (stderr).
"""

import json
import queue
import sys
import threading

__all__ = ["Extension", "Call", "ExtensionError", "HostError", "log"]

# The host refuses frame bodies above 4 MiB; refuse to send one rather than be cut off.
MAX_FRAME_BODY = 4 * 1024 * 1024
PROTOCOL_VERSION = 1


def log(*parts):
    """Writes one line to stderr, which the host forwards to its log."""
    print(*parts, file=sys.stderr, flush=True)


class ExtensionError(Exception):
    """Raise from a handler to answer with a JSON-RPC error {code, message}."""

    def __init__(self, message, code=-32000):
        super().__init__(message)
        self.code = code
        self.message = message


class HostError(Exception):
    """The host answered one of our requests with an error."""

    def __init__(self, code, message):
        super().__init__("%s (code %s)" % (message, code))
        self.code = code
        self.message = message


class Call:
    """One request being handled: its id, params and cancellation state."""

    def __init__(self, extension, request_id, method, params):
        self._extension = extension
        self.id = request_id
        self.method = method
        self.params = params if isinstance(params, dict) else {}

    @property
    def input(self):
        value = self.params.get("input")
        return value if value is not None else {}

    @property
    def cancelled(self):
        """True once the host sent $/cancelRequest for this request."""
        return self._extension._is_cancelled(self.id)

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


class Extension:
    """Handlers by method; `run()` serves until shutdown or the end of stdin."""

    def __init__(self, cancellation=True, stdin=None, stdout=None):
        self._in = stdin or sys.stdin.buffer
        self._out = stdout or sys.stdout.buffer
        self._write_lock = threading.Lock()
        self._tools = {}
        self._tool_specs = []
        self._hooks = {}
        self._commands = {}
        self._providers = []
        self._provider_handlers = {}
        self._capabilities = []
        self._handlers = {}
        self._info = None
        self._on_initialize = None
        self._cancellation = cancellation
        self._cancelled = set()
        self._cancel_lock = threading.Lock()
        self._requests = queue.Queue()  # (id, method, params) from the host, in order
        self._replies = {}              # our request id -> queue for its reply
        self._replies_lock = threading.Lock()
        self._next_id = 0
        self.plugin_id = None
        self.plugin_root = None
        self.config = {}

    # --- registration ---------------------------------------------------------------

    def tool(self, name, description, input_schema=None):
        """Registers a tool; the handler gets a Call and returns the result (any JSON)."""
        def register(handler):
            self._tools[name] = handler
            self._tool_specs.append({"name": name, "description": description,
                                     "input_schema": input_schema or {"type": "object"}})
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
        self._send({"jsonrpc": "2.0", "method": method, "params": params})

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

    def request(self, method, params):
        """Sends a request to the host and waits for its result; raises HostError."""
        with self._replies_lock:
            self._next_id += 1
            request_id = "ext-%d" % self._next_id
            waiter = queue.Queue(maxsize=1)
            self._replies[request_id] = waiter
        self._send({"jsonrpc": "2.0", "id": request_id, "method": method, "params": params})
        reply = waiter.get()
        if reply is None:
            raise HostError(-32000, "the host closed the connection")
        if reply.get("error") is not None:
            error = reply["error"]
            raise HostError(error.get("code"), error.get("message"))
        return reply.get("result")

    def memory_append(self, content, tags=(), meta=None):
        params = {"namespace": self.plugin_id, "content": content, "tags": list(tags)}
        if meta is not None:
            params["meta"] = meta
        return self.request("memory.append", params)

    def memory_query(self, **filters):
        return self.request("memory.query", dict(filters, namespace=self.plugin_id))["records"]

    def config_get(self, key):
        return self.request("config.get", {"key": key})["value"]

    def config_set(self, key, value):
        return self.request("config.set", {"key": key, "value": value})

    def config_subscribe(self, keys=()):
        return self.request("config.subscribe", {"keys": list(keys)})

    # --- serving --------------------------------------------------------------------

    def run(self):
        """Serves requests until shutdown or the end of stdin; returns the exit status."""
        reader = threading.Thread(target=self._read_loop, daemon=True)
        reader.start()
        while True:
            item = self._requests.get()
            if item is None:
                return 0
            request_id, method, params = item
            call = Call(self, request_id, method, params)
            try:
                result = self._dispatch(call)
                # Inside the try: a result that cannot be sent is answered as an error.
                self._send({"jsonrpc": "2.0", "id": request_id, "result": result})
            except ExtensionError as e:
                self._reply_error(request_id, e.code, e.message)
            except Exception as e:  # a bug in a handler must not kill the extension
                log("exthost_sdk: %s failed: %r" % (method, e))
                self._reply_error(request_id, -32000, "%s failed: %s" % (method, e))
            finally:
                with self._cancel_lock:
                    self._cancelled.discard(_key(request_id))
            if method == "shutdown":
                return 0

    def _dispatch(self, call):
        method, params = call.method, call.params
        if method == "initialize":
            self.plugin_id = params.get("plugin_id")
            self.plugin_root = params.get("plugin_root")
            self.config = params.get("config") or {}
            if self._on_initialize:
                self._on_initialize(call)
            capabilities = {}
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
                raise ExtensionError("unknown tool: %s" % params.get("name"), -32602)
            return handler(call)
        if method == "hook.handle":
            handler = self._hooks.get(params.get("kind"))
            answer = handler(call) if handler else None
            return answer if answer is not None else {"action": "continue"}
        if method == "command.invoke":
            handler = self._commands.get(params.get("command"))
            if handler is None:
                raise ExtensionError("unknown command: %s" % params.get("command"), -32601)
            answer = handler(call, list(params.get("args") or []))
            return answer if answer is not None else {"status": "ok"}
        if method in self._provider_handlers:
            return self._provider_handlers[method](call)
        if method in self._handlers:
            return self._handlers[method](call)
        if method == "shutdown":
            return None
        raise ExtensionError("method not found: %s" % method, -32601)

    def _read_loop(self):
        try:
            while True:
                message = self._read_frame()
                if message is None:
                    break
                if not isinstance(message, dict):
                    continue
                method = message.get("method")
                request_id = message.get("id")
                if method is None:
                    with self._replies_lock:
                        waiter = self._replies.pop(request_id, None)
                    if waiter is not None:
                        waiter.put(message)
                elif request_id is None:
                    if method == "$/cancelRequest":
                        with self._cancel_lock:
                            self._cancelled.add(_key((message.get("params") or {}).get("id")))
                else:
                    self._requests.put((request_id, method, message.get("params")))
        finally:
            with self._replies_lock:
                for waiter in self._replies.values():
                    waiter.put(None)
                self._replies.clear()
            self._requests.put(None)

    def _read_frame(self):
        length = None
        while True:
            line = self._in.readline()
            if not line:
                return None
            line = line.strip()
            if not line:
                if length is None:
                    continue
                break
            name, _, value = line.decode("ascii", "replace").partition(":")
            if name.strip().lower() == "content-length":
                length = int(value.strip())
        body = self._in.read(length)
        if len(body) < length:
            return None
        return json.loads(body)

    def _send(self, message):
        # allow_nan=False: json.dumps would otherwise write Infinity or NaN, which are not
        # JSON, and the host would refuse the whole frame.
        try:
            body = json.dumps(message, separators=(",", ":"), allow_nan=False).encode("utf-8")
        except ValueError as e:
            raise ExtensionError("message cannot be sent as JSON: %s" % e)
        if len(body) > MAX_FRAME_BODY:
            raise ExtensionError("frame of %d bytes exceeds the host's 4 MiB cap" % len(body))
        with self._write_lock:
            self._out.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)
            self._out.flush()

    def _reply_error(self, request_id, code, message):
        self._send({"jsonrpc": "2.0", "id": request_id, "error": {"code": code, "message": message}})

    def _is_cancelled(self, request_id):
        with self._cancel_lock:
            return _key(request_id) in self._cancelled


def _key(request_id):
    # 7 and "7" are different ids: keep the type in the key.
    return (type(request_id).__name__, request_id)
