"""A fault-injecting HTTP proxy between a client and the real local LLM server.

Faults are consumed in order, one per request; when the queue is empty, requests pass through.
  ("429", seconds)   answer 429 with Retry-After: seconds
  ("500", None)      answer 500
  ("hang", seconds)  hold the request that long (past the client's timeout), then pass through
  ("malformed", None) answer 200 with a body that is not JSON
  ("drop", None)     close the connection without any response
  ("content", text)  answer 200 with a well-formed completion whose text is `text`
"""

from __future__ import annotations

import json
import threading
import time
import urllib.request
from collections import deque
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


class FaultProxy:
    def __init__(self, upstream: str):
        self.upstream = upstream.rstrip("/")  # e.g. http://127.0.0.1:PORT (no /v1)
        self.faults: deque = deque()
        self.requests = 0
        self._lock = threading.Lock()  # handlers run in threads: count and pop atomically
        proxy = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):
                pass

            def _reply(self, status, body: bytes, headers=None):
                self.send_response(status)
                for key, value in (headers or {}).items():
                    self.send_header(key, value)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def do_GET(self):
                self._forward(None)

            def do_POST(self):
                body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
                with proxy._lock:
                    proxy.requests += 1
                    fault = proxy.faults.popleft() if proxy.faults else None
                kind, arg = fault if fault else (None, None)
                if kind == "429":
                    return self._reply(429, b'{"error": {"message": "rate limited"}}', {"Retry-After": str(arg)})
                if kind == "500":
                    return self._reply(500, b'{"error": {"message": "boom"}}')
                if kind == "malformed":
                    return self._reply(200, b'{"id": "x", "choices": [ {')
                if kind == "drop":
                    self.close_connection = True
                    self.connection.shutdown(2)
                    return
                if kind == "content":
                    completion = {
                        "id": "x",
                        "object": "chat.completion",
                        "created": 0,
                        "model": "m",
                        "choices": [
                            {"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": arg}}
                        ],
                        "usage": {"prompt_tokens": 5, "completion_tokens": 5, "total_tokens": 10},
                    }
                    return self._reply(200, json.dumps(completion).encode())
                if kind == "hang":
                    time.sleep(arg)
                self._forward(body)

            def _forward(self, body):
                path = self.path.replace("/openai/v1", "/v1")
                request = urllib.request.Request(
                    proxy.upstream + path, data=body, method=self.command, headers={"Content-Type": "application/json"}
                )
                try:
                    with urllib.request.urlopen(request, timeout=120) as response:
                        self._reply(response.status, response.read())
                except (OSError, ConnectionError):
                    pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.server.shutdown()
        self.server.server_close()
