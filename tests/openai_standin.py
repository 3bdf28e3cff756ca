"""A local stand-in for an OpenAI-compatible chat-completions endpoint, for tests of ``ml.backends.OpenAIPlanner``.

It records every request (its ``Authorization`` header as ``auth``, then the JSON body) and answers with
the next of ``replies``, or with ``default`` once they run out (a final answer without tool calls).
"""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

FINAL_ANSWER = {"choices": [{"message": {"role": "assistant", "content": "I cannot do that on this phone."}}],
                "usage": {"completion_tokens": 7}}


class OpenAIStandIn:
    def __init__(self, default: dict[str, Any] | None = None):
        self.replies: list[dict[str, Any]] = []
        self.requests: list[dict[str, Any]] = []
        self.default = default or FINAL_ANSWER
        self._lock = threading.Lock()
        standin = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):  # noqa: N802 - http.server's API
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                with standin._lock:
                    standin.requests.append({"auth": self.headers.get("Authorization"), "path": self.path, **body})
                    reply = standin.replies.pop(0) if standin.replies else standin.default
                data = json.dumps(reply).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *a):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_port}/v1"

    def __enter__(self) -> OpenAIStandIn:
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.server.shutdown()
        self.server.server_close()
