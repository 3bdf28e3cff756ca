"""A local stand-in for an OpenAI-compatible chat-completions endpoint, for tests of ``ml.backends.OpenAIPlanner``.

It records every request (its ``Authorization`` header as ``auth``, then the JSON body) and answers with
the next of ``replies``, or with ``default`` once they run out (a final answer without tool calls).
``respond``, when given, computes each reply from the recorded request instead; returning None answers
500, as an overloaded server does, and returning ``(status, body)`` answers that status with that JSON body
(vLLM's 400s carry ``{"error": {"message": ...}}``).
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

FINAL_ANSWER = {"choices": [{"message": {"role": "assistant", "content": "I cannot do that on this phone."}}],
                "usage": {"completion_tokens": 7}}


class OpenAIStandIn:
    def __init__(self, default: dict[str, Any] | None = None,
                 respond: Callable[[dict[str, Any]], dict[str, Any] | None] | None = None):
        self.respond = respond
        self.replies: list[dict[str, Any]] = []
        self.requests: list[dict[str, Any]] = []
        self.default = default or FINAL_ANSWER
        self._lock = threading.Lock()
        standin = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):  # noqa: N802 - http.server's API
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                record = {"auth": self.headers.get("Authorization"), "path": self.path, **body}
                with standin._lock:
                    standin.requests.append(record)
                    if standin.respond is not None:
                        reply = standin.respond(record)
                    else:
                        reply = standin.replies.pop(0) if standin.replies else standin.default
                if reply is None:
                    self.send_response(500)
                    self.end_headers()
                    return
                status, reply = reply if isinstance(reply, tuple) else (200, reply)
                data = json.dumps(reply).encode()
                self.send_response(status)
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


def served_checkpoint(planner: Any) -> Callable[[dict[str, Any]], dict[str, Any]]:
    """``respond`` for ``/v1/completions`` as ``vllm serve <checkpoint>`` answers it, computed by ``planner`` (a
    ``TransformersPlanner`` of that checkpoint): prompt ids in, greedy text out with special tokens kept and the
    stop token not returned, ``completion_tokens`` counting the stop token. bench/vllm_check.py measured real
    vLLM 0.24.0 giving transformers' text on held-out prompt ids."""

    def respond(req: dict[str, Any]) -> dict[str, Any]:
        assert req["path"] == "/v1/completions" and req["skip_special_tokens"] is False
        ids = planner.generate_ids([req["prompt"]], max_new_tokens=req["max_tokens"])[0]
        stopped = bool(ids) and ids[-1] in req["stop_token_ids"]
        text = planner.tokenizer.decode(ids[:-1] if stopped else ids, skip_special_tokens=False,
                                        clean_up_tokenization_spaces=False)
        return {"choices": [{"index": 0, "text": text, "finish_reason": "stop" if stopped else "length"}],
                "usage": {"prompt_tokens": len(req["prompt"]), "completion_tokens": len(ids)}}

    return respond
