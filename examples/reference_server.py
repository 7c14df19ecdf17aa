"""A reference OpenAI-compatible inference server on the Python standard library and PyTorch only, so gpushare's
server tenant runs anywhere PyTorch does (the GPU machine has no package registry). It serves a small decoder-only
transformer with random (seeded) weights and a per-sequence KV cache, batching concurrent requests continuously.

  python3 examples/reference_server.py --port 0            # prints {"event":"listening","port":N,"pid":P}

Endpoints: GET /health, GET /v1/models, POST /v1/completions, POST /v1/chat/completions (stream true or false).
Synthetic tokenizer: a prompt's tokens are its UTF-8 bytes, each mod --vocab (a chat request's prompt is its
messages rendered as "role: content\\n" lines); an output token id t is sent as the text " t{t}". There is no EOS:
every request gets exactly max_tokens tokens. See docs/reference-server.md.

Only the model (TorchModel) imports torch, when it is built: everything else here is plain Python and is unit
tested without torch (test/python/test_reference_server.py).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import math
import os
import queue
import signal
import sys
import threading
import time
import uuid
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Dict, List, Optional, Protocol, Tuple, Union

DEFAULT_MAX_TOKENS = 16
JsonObject = Dict[str, Any]

# ---------------------------------------------------------------------------------------------------------------
# Arguments


def positive_int(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"{text} is not a positive integer")
    return value


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(description="A reference OpenAI-compatible server: a random-weight transformer.")
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--port", type=int, default=8000, help="0: pick a free port (printed in the listening line)")
    p.add_argument("--served-model-name", default="gpushare-reference")
    p.add_argument("--layers", type=positive_int, default=4)
    p.add_argument("--d-model", type=positive_int, default=512)
    p.add_argument("--heads", type=positive_int, default=8)
    p.add_argument("--vocab", type=positive_int, default=32000)
    p.add_argument("--max-seq", type=positive_int, default=2048, help="prompt plus output tokens, at most")
    p.add_argument("--max-batch", type=positive_int, default=32, help="sequences decoded together; more wait")
    p.add_argument(
        "--models",
        default=None,
        help="several models in one process: NAME=SPEC,... where SPEC ends in <layers>x<d_model> (ref-2x256), "
        "heads d_model/64; each model its own engine (and CUDA stream); a request names one by 'model'",
    )
    p.add_argument("--device", default="cuda")
    p.add_argument("--dtype", choices=["float16", "bfloat16", "float32"], default="float16")
    p.add_argument("--seed", type=int, default=0)
    return p


def parse_args(argv: List[str]) -> argparse.Namespace:
    p = parser()
    args = p.parse_args(argv)
    if args.d_model % args.heads != 0:
        p.error(f"--d-model {args.d_model} is not a multiple of --heads {args.heads}: pick one that divides it")
    if not 0 <= args.port <= 65535:
        p.error(f"--port {args.port} is not a port: use 0..65535 (0 picks a free one)")
    specs = None if args.models is None else model_specs(args.models)
    if isinstance(specs, str):
        p.error(specs)
    args.model_specs = specs
    return args


@dataclass(frozen=True)
class ModelSpec:
    name: str
    layers: int
    d_model: int
    heads: int


HEAD_DIM = 64


def model_specs(text: str) -> Union[List[ModelSpec], str]:
    """--models: NAME=SPEC,... with SPEC ending in <layers>x<d_model>; or the one line saying what is wrong."""
    specs: List[ModelSpec] = []
    for item in text.split(","):
        name, eq, spec = item.partition("=")
        shape = spec.rsplit("-", 1)[-1].split("x")
        if not eq or not name or len(shape) != 2 or not all(part.isdigit() for part in shape):
            return f"--models item {item!r} is not NAME=<layers>x<d_model> (e.g. small-1=ref-2x256)"
        layers, d_model = int(shape[0]), int(shape[1])
        if layers < 1 or d_model < HEAD_DIM or d_model % HEAD_DIM != 0:
            return f"--models item {item!r}: give layers >= 1 and a d_model that is a multiple of {HEAD_DIM}"
        if any(s.name == name for s in specs):
            return f"--models names {name!r} twice: give each model its own name"
        specs.append(ModelSpec(name, layers, d_model, d_model // HEAD_DIM))
    return specs


# ---------------------------------------------------------------------------------------------------------------
# Tokenizer


def tokenize(text: str, vocab: int) -> List[int]:
    """A prompt's tokens: its UTF-8 bytes, each mod vocab (so N ASCII characters are N tokens)."""
    return [b % vocab for b in text.encode("utf-8")]


def detokenize(token: int) -> str:
    return f" t{token}"


def render_chat(messages: List[Tuple[str, str]]) -> str:
    return "".join(f"{role}: {content}\n" for role, content in messages)


# ---------------------------------------------------------------------------------------------------------------
# Requests and responses (OpenAI's shapes)


@dataclass(frozen=True)
class ApiError:
    status: int
    message: str
    param: Optional[str] = None
    code: Optional[str] = None


@dataclass(frozen=True)
class GenerationRequest:
    kind: str  # "completion" or "chat"
    prompt_tokens: List[int]
    max_tokens: int
    stream: bool
    include_usage: bool
    model: Optional[str] = None  # what the request named (a server of several models routes by it)


def error_body(error: ApiError) -> JsonObject:
    kind = "invalid_request_error" if error.status < 500 else "server_error"
    return {"error": {"message": error.message, "type": kind, "param": error.param, "code": error.code}}


def _is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _chat_messages(value: object) -> Union[List[Tuple[str, str]], ApiError]:
    if not isinstance(value, list) or not value:
        return ApiError(400, "'messages' must be a non-empty array of {role, content} objects", "messages")
    messages: List[Tuple[str, str]] = []
    for i, m in enumerate(value):
        if not isinstance(m, dict) or not isinstance(m.get("role"), str) or not isinstance(m.get("content"), str):
            return ApiError(400, f"messages[{i}] must be an object with string 'role' and 'content'", "messages")
        messages.append((m["role"], m["content"]))
    return messages


def parse_request(kind: str, raw: bytes, vocab: int, max_seq: int) -> Union[GenerationRequest, ApiError]:
    """A /v1/completions ("completion") or /v1/chat/completions ("chat") body, or the 400 to answer. `model` is kept
    for a server of several (--models) to route by; unknown fields (temperature, ...) are ignored: decoding is
    greedy."""
    try:
        body = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as e:
        return ApiError(400, f"the request body is not JSON: {e}")
    if not isinstance(body, dict):
        return ApiError(400, "the request body must be a JSON object")
    if kind == "chat":
        messages = _chat_messages(body.get("messages"))
        if isinstance(messages, ApiError):
            return messages
        text = render_chat(messages)
    else:
        prompt = body.get("prompt")
        if isinstance(prompt, list) and len(prompt) == 1 and isinstance(prompt[0], str):
            prompt = prompt[0]
        if not isinstance(prompt, str):
            return ApiError(400, "'prompt' is required and must be a string (or an array of one string)", "prompt")
        text = prompt
    max_tokens = body.get("max_tokens", DEFAULT_MAX_TOKENS)
    if kind == "chat" and "max_completion_tokens" in body:
        max_tokens = body["max_completion_tokens"]
    if not _is_int(max_tokens) or max_tokens < 1:
        return ApiError(400, f"'max_tokens' must be a positive integer, not {json.dumps(max_tokens)}", "max_tokens")
    stream = body.get("stream", False)
    if not isinstance(stream, bool):
        return ApiError(400, f"'stream' must be true or false, not {json.dumps(stream)}", "stream")
    options = body.get("stream_options")
    include_usage = isinstance(options, dict) and options.get("include_usage") is True
    # An empty prompt still needs one position to start from: token 0 stands in (and is counted).
    tokens = tokenize(text, vocab) or [0]
    if len(tokens) + max_tokens > max_seq:
        return ApiError(
            400,
            f"the prompt ({len(tokens)} tokens) plus max_tokens ({max_tokens}) exceeds the server's "
            f"--max-seq {max_seq}: shorten one or restart with a larger --max-seq",
            "max_tokens",
            "context_length_exceeded",
        )
    model = body.get("model")
    return GenerationRequest(kind, tokens, max_tokens, stream, include_usage, model if isinstance(model, str) else None)


def completion_chunk(
    kind: str, request_id: str, model: str, created: int, text: str, finish: Optional[str]
) -> JsonObject:
    """One streamed chunk: choices[0].text (completions) or choices[0].delta.content (chat)."""
    if kind == "chat":
        choice: JsonObject = {"index": 0, "delta": {"role": "assistant", "content": text} if text else {}}
        obj = "chat.completion.chunk"
    else:
        choice = {"index": 0, "text": text, "logprobs": None}
        obj = "text_completion"
    choice["finish_reason"] = finish
    return {"id": request_id, "object": obj, "created": created, "model": model, "choices": [choice]}


def usage(prompt_tokens: int, completion_tokens: int) -> JsonObject:
    return {
        "prompt_tokens": prompt_tokens,
        "completion_tokens": completion_tokens,
        "total_tokens": prompt_tokens + completion_tokens,
    }


def usage_chunk(kind: str, request_id: str, model: str, created: int, prompt: int, completion: int) -> JsonObject:
    """The last chunk when stream_options.include_usage is set: no choices, the usage."""
    obj = "chat.completion.chunk" if kind == "chat" else "text_completion"
    return {
        "id": request_id,
        "object": obj,
        "created": created,
        "model": model,
        "choices": [],
        "usage": usage(prompt, completion),
    }


def completion_body(
    kind: str, request_id: str, model: str, created: int, text: str, prompt: int, completion: int
) -> JsonObject:
    """The one JSON body of a request without stream."""
    if kind == "chat":
        choice: JsonObject = {"index": 0, "message": {"role": "assistant", "content": text}}
        obj = "chat.completion"
    else:
        choice = {"index": 0, "text": text, "logprobs": None}
        obj = "text_completion"
    choice["finish_reason"] = "length"
    return {
        "id": request_id,
        "object": obj,
        "created": created,
        "model": model,
        "choices": [choice],
        "usage": usage(prompt, completion),
    }


def sse(obj: JsonObject) -> bytes:
    return b"data: " + json.dumps(obj, separators=(",", ":")).encode("utf-8") + b"\n\n"


SSE_DONE = b"data: [DONE]\n\n"


def models_body(models: List[str], created: int) -> JsonObject:
    data = [{"id": m, "object": "model", "created": created, "owned_by": "gpushare"} for m in models]
    return {"object": "list", "data": data}


# ---------------------------------------------------------------------------------------------------------------
# Continuous batching (no torch here: the model is behind the Model protocol)


class Model(Protocol):
    def prefill(self, slot: int, tokens: List[int]) -> int:
        """Runs the prompt in `slot`'s cache from position 0; returns the first output token."""
        ...

    def decode(self, slots: List[int], tokens: List[int], positions: List[int]) -> List[int]:
        """One step of every sequence in `slots`: each token at its position; returns each next token."""
        ...


# What an engine pushes on a request's queue: a token, None when the request is done, or an error message.
Event = Union[int, None, str]


@dataclass
class Sequence:
    request: GenerationRequest
    out: queue.Queue[Event] = field(default_factory=queue.Queue)
    cancelled: threading.Event = field(default_factory=threading.Event)
    slot: int = -1
    generated: int = 0
    last_token: int = 0
    position: int = 0  # where last_token goes in the cache


class Engine:
    """One thread: admits waiting requests into free slots (a prefill each), then advances all active sequences
    by one token together; each new token goes to its request's queue for the HTTP thread to send."""

    def __init__(self, model: Model, max_batch: int) -> None:
        self.model = model
        self.max_batch = max_batch
        self.waiting: queue.Queue[Sequence] = queue.Queue()
        self.active: Dict[int, Sequence] = {}
        self.stopping = threading.Event()
        self.thread = threading.Thread(target=self._run, name="engine", daemon=True)

    def start(self) -> None:
        self.thread.start()

    def stop(self) -> None:
        self.stopping.set()
        self.thread.join(timeout=10)

    def submit(self, request: GenerationRequest) -> Sequence:
        seq = Sequence(request)
        self.waiting.put(seq)
        return seq

    def _finish(self, seq: Sequence, event: Event) -> None:
        self.active.pop(seq.slot, None)
        seq.out.put(event)

    def _admit(self) -> None:
        block = not self.active
        while len(self.active) < self.max_batch:
            try:
                seq = self.waiting.get(timeout=0.05) if block else self.waiting.get_nowait()
            except queue.Empty:
                return
            block = False
            if seq.cancelled.is_set():
                continue
            seq.slot = next(s for s in range(self.max_batch) if s not in self.active)
            self.active[seq.slot] = seq
            self._emit(seq, self.model.prefill(seq.slot, seq.request.prompt_tokens))
            seq.position = len(seq.request.prompt_tokens)

    def _emit(self, seq: Sequence, token: int) -> None:
        seq.out.put(token)
        seq.generated += 1
        seq.last_token = token
        if seq.generated >= seq.request.max_tokens:
            self._finish(seq, None)

    def step(self) -> None:
        """Admits what fits, then one decode step of every active sequence."""
        for seq in [s for s in self.active.values() if s.cancelled.is_set()]:
            self._finish(seq, None)
        self._admit()
        batch = sorted(self.active.values(), key=lambda s: s.slot)
        if not batch:
            return
        tokens = self.model.decode([s.slot for s in batch], [s.last_token for s in batch], [s.position for s in batch])
        for seq, token in zip(batch, tokens):
            seq.position += 1
            self._emit(seq, token)

    def _run(self) -> None:
        while not self.stopping.is_set():
            try:
                self.step()
            except Exception as e:  # a model failure ends every request in flight with a 500, not a hung stream
                for seq in list(self.active.values()):
                    self._finish(seq, f"{type(e).__name__}: {e}")
        for seq in list(self.active.values()):
            self._finish(seq, "the server is stopping")


# ---------------------------------------------------------------------------------------------------------------
# HTTP


class Server(ThreadingHTTPServer):
    daemon_threads = True
    # socketserver's listen backlog is 5: a load generator opening its connections together overflows it, and
    # each dropped SYN comes back only after TCP's 1 s retransmit, which read as 1 s TTFT spikes on an H200.
    request_queue_size = 1024

    def __init__(self, address: Tuple[str, int], engines: Dict[str, Engine], args: argparse.Namespace) -> None:
        super().__init__(address, Handler)
        self.engines = engines
        self.vocab: int = args.vocab
        self.max_seq: int = args.max_seq
        self.created = int(time.time())
        self.ready = threading.Event()

    def route(self, model: Optional[str]) -> Union[Tuple[str, Engine], ApiError]:
        """The engine a request goes to, with the name it answers as: the one model whatever was named, else the
        model named."""
        if len(self.engines) == 1:
            return next(iter(self.engines.items()))
        engine = self.engines.get(model or "")
        if engine is None:
            served = ", ".join(self.engines)
            return ApiError(404, f"no model {model!r}: this server serves {served}", "model", "model_not_found")
        return model or "", engine


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive for load generators; streams are sent chunked
    server: Server

    def log_message(self, format: str, *args: Any) -> None:  # one line a request would swamp a load test's log
        pass

    def _json(self, status: int, obj: JsonObject) -> None:
        data = json.dumps(obj).encode("utf-8")
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _error(self, error: ApiError) -> None:
        self._json(error.status, error_body(error))

    def do_GET(self) -> None:
        path = self.path.split("?", 1)[0]
        if path == "/health":
            if self.server.ready.is_set():
                self._json(200, {"status": "ok"})
            else:
                self._error(ApiError(503, "warming up", code="not_ready"))
        elif path == "/v1/models":
            self._json(200, models_body(list(self.server.engines), self.server.created))
        else:
            self._error(ApiError(404, f"no route GET {path}", code="not_found"))

    def do_POST(self) -> None:
        path = self.path.split("?", 1)[0]
        kinds = {"/v1/completions": "completion", "/v1/chat/completions": "chat"}
        try:
            length = int(self.headers.get("Content-Length") or 0)
        except ValueError:
            self.close_connection = True  # the body's end is unknown: nothing more can be read on this connection
            self._error(ApiError(400, f"Content-Length {self.headers.get('Content-Length')!r} is not a number"))
            return
        raw = self.rfile.read(length) if length > 0 else b""
        if path not in kinds:
            self._error(ApiError(404, f"no route POST {path}", code="not_found"))
            return
        if not self.server.ready.is_set():
            self._error(ApiError(503, "warming up", code="not_ready"))
            return
        request = parse_request(kinds[path], raw, self.server.vocab, self.server.max_seq)
        if isinstance(request, ApiError):
            self._error(request)
            return
        routed = self.server.route(request.model)
        if isinstance(routed, ApiError):
            self._error(routed)
            return
        name, engine = routed
        seq = engine.submit(request)
        try:
            if request.stream:
                self._stream(seq, name)
            else:
                self._whole(seq, name)
        except (BrokenPipeError, ConnectionResetError):
            self.close_connection = True
        finally:
            seq.cancelled.set()  # frees the slot if the client went away mid-stream

    def _whole(self, seq: Sequence, model: str) -> None:
        tokens: List[int] = []
        while True:
            event = seq.out.get()
            if event is None:
                break
            if isinstance(event, str):
                self._error(ApiError(500, event))
                return
            tokens.append(event)
        r = seq.request
        text = "".join(detokenize(t) for t in tokens)
        body = completion_body(r.kind, new_id(r.kind), model, int(time.time()), text, len(r.prompt_tokens), len(tokens))
        self._json(200, body)

    def _chunk(self, data: bytes) -> None:
        self.wfile.write(f"{len(data):x}\r\n".encode("ascii") + data + b"\r\n")
        self.wfile.flush()

    def _stream(self, seq: Sequence, model: str) -> None:
        r = seq.request
        request_id, created = new_id(r.kind), int(time.time())
        first = seq.out.get()  # an engine error before any token still gets a status code
        if isinstance(first, str):
            self._error(ApiError(500, first))
            return
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        count = 0
        event: Event = first
        while isinstance(event, int):
            count += 1
            self._chunk(sse(completion_chunk(r.kind, request_id, model, created, detokenize(event), None)))
            event = seq.out.get()
        if isinstance(event, str):  # mid-stream: the status is sent; end the stream without [DONE]
            self._chunk(sse(error_body(ApiError(500, event))))
            self.wfile.write(b"0\r\n\r\n")
            self.close_connection = True
            return
        self._chunk(sse(completion_chunk(r.kind, request_id, model, created, "", "length")))
        if r.include_usage:
            self._chunk(sse(usage_chunk(r.kind, request_id, model, created, len(r.prompt_tokens), count)))
        self._chunk(SSE_DONE)
        self.wfile.write(b"0\r\n\r\n")
        self.wfile.flush()


def new_id(kind: str) -> str:
    return ("chatcmpl-" if kind == "chat" else "cmpl-") + uuid.uuid4().hex[:24]


# ---------------------------------------------------------------------------------------------------------------
# The model (the only torch here)


class TorchModel:
    """A pre-LayerNorm decoder-only transformer with random weights and a slot KV cache: per layer, K and V of
    shape [max_batch, max_seq, heads, head_dim]; a slot's positions past its own are masked out in decode."""

    def __init__(self, args: argparse.Namespace, own_stream: bool = False) -> None:
        import torch

        self.torch = torch
        self.device = torch.device(args.device)
        # Models sharing a process (--models) each on a CUDA stream of their own, so one's kernels need not wait
        # behind another's in the default stream; one model keeps the default stream, as before.
        self.stream = torch.cuda.Stream(self.device) if own_stream and self.device.type == "cuda" else None
        self.dtype = getattr(torch, args.dtype)
        self.heads, self.head_dim = args.heads, args.d_model // args.heads
        g = torch.Generator().manual_seed(args.seed)
        d = args.d_model

        def w(*shape: int, std: float = 0.02) -> Any:
            return (torch.randn(*shape, generator=g) * std).to(self.device, self.dtype)

        self.embed, self.pos = w(args.vocab, d), w(args.max_seq, d)
        self.layers = [
            {
                "ln1": torch.ones(d, device=self.device, dtype=self.dtype),
                "qkv": w(d, 3 * d),
                "out": w(d, d, std=0.02 / math.sqrt(2 * args.layers)),
                "ln2": torch.ones(d, device=self.device, dtype=self.dtype),
                "up": w(d, 4 * d),
                "down": w(4 * d, d, std=0.02 / math.sqrt(2 * args.layers)),
            }
            for _ in range(args.layers)
        ]
        self.ln_f = torch.ones(d, device=self.device, dtype=self.dtype)
        cache_shape = (args.max_batch, args.max_seq, self.heads, self.head_dim)
        self.k = [torch.zeros(cache_shape, device=self.device, dtype=self.dtype) for _ in range(args.layers)]
        self.v = [torch.zeros(cache_shape, device=self.device, dtype=self.dtype) for _ in range(args.layers)]
        if self.stream is not None:  # the weights and caches, made on the default stream, are there first
            torch.cuda.synchronize(self.device)

    def _on_stream(self) -> Any:
        return self.torch.cuda.stream(self.stream) if self.stream is not None else contextlib.nullcontext()

    def _attend(self, q: Any, k: Any, v: Any, mask: Any) -> Any:
        """Attention written out in matmuls: with scaled_dot_product_attention and a cache span that grows each step
        (a new shape every step), decode ran at about 8 tokens/s on an H200 (PyTorch 2.11) against 300 or more
        with this; a per-shape set-up cost in its backend is the likely cause (not profiled)."""
        scores = (q @ k.transpose(-1, -2)) * (1.0 / math.sqrt(self.head_dim))
        scores = scores.float().masked_fill(~mask, float("-inf"))
        return self.torch.softmax(scores, dim=-1).to(v.dtype) @ v

    def _mlp(self, layer: Dict[str, Any], x: Any) -> Any:
        F = self.torch.nn.functional
        h = F.layer_norm(x, (x.shape[-1],), layer["ln2"])
        return x + F.gelu(h @ layer["up"]) @ layer["down"]

    def _logits_argmax(self, x: Any) -> List[int]:
        F = self.torch.nn.functional
        h = F.layer_norm(x, (x.shape[-1],), self.ln_f)
        return [int(t) for t in (h @ self.embed.T).argmax(dim=-1).tolist()]

    def prefill(self, slot: int, tokens: List[int]) -> int:
        torch, F = self.torch, self.torch.nn.functional
        with torch.inference_mode(), self._on_stream():
            n = len(tokens)
            ids = torch.tensor(tokens, device=self.device)
            x = self.embed[ids] + self.pos[:n]  # [n, d]
            causal = torch.ones(n, n, dtype=torch.bool, device=self.device).tril()
            for i, layer in enumerate(self.layers):
                h = F.layer_norm(x, (x.shape[-1],), layer["ln1"])
                q, k, v = (h @ layer["qkv"]).view(n, 3, self.heads, self.head_dim).unbind(1)  # each [n, H, D]
                self.k[i][slot, :n] = k
                self.v[i][slot, :n] = v
                a = self._attend(q.transpose(0, 1), k.transpose(0, 1), v.transpose(0, 1), causal)  # [H, n, D]
                x = x + a.transpose(0, 1).reshape(n, -1) @ layer["out"]
                x = self._mlp(layer, x)
            return self._logits_argmax(x[-1:])[0]

    def decode(self, slots: List[int], tokens: List[int], positions: List[int]) -> List[int]:
        torch, F = self.torch, self.torch.nn.functional
        with torch.inference_mode(), self._on_stream():
            b = len(slots)
            s = torch.tensor(slots, device=self.device)
            p = torch.tensor(positions, device=self.device)
            x = self.embed[torch.tensor(tokens, device=self.device)] + self.pos[p]  # [b, d]
            # Attention reads the cache only up to the furthest position in the batch, and each sequence sees its
            # own positions only (up to and including the new token's).
            span = max(positions) + 1
            mask = (torch.arange(span, device=self.device)[None, :] <= p[:, None])[:, None, None, :]
            for i, layer in enumerate(self.layers):
                h = F.layer_norm(x, (x.shape[-1],), layer["ln1"])
                q, k, v = (h @ layer["qkv"]).view(b, 3, self.heads, self.head_dim).unbind(1)  # each [b, H, D]
                self.k[i][s, p] = k
                self.v[i][s, p] = v
                keys = self.k[i][s, :span].transpose(1, 2)  # [b, H, span, D]
                values = self.v[i][s, :span].transpose(1, 2)
                a = self._attend(q[:, :, None, :], keys, values, mask)  # [b, H, 1, D]
                x = x + a.reshape(b, -1) @ layer["out"]
                x = self._mlp(layer, x)
            return self._logits_argmax(x)


# ---------------------------------------------------------------------------------------------------------------
# Main


def shaped(args: argparse.Namespace, spec: ModelSpec) -> argparse.Namespace:
    """The arguments of one of --models: its layers, width and heads; the rest shared."""
    return argparse.Namespace(**{**vars(args), "layers": spec.layers, "d_model": spec.d_model, "heads": spec.heads})


def warm_up(engine: Engine, vocab: int) -> None:
    """One dummy request through the engine: kernels load and the allocator settles before the port is announced."""
    seq = engine.submit(GenerationRequest("completion", tokenize("warm up", vocab), 4, False, False))
    while True:
        event = seq.out.get(timeout=600)
        if isinstance(event, str):
            raise RuntimeError(f"the warm-up request failed: {event}")
        if event is None:
            return


def start(args: argparse.Namespace, models: Union[Model, Dict[str, Model]]) -> Server:
    """The engines (one per model: a model, named --served-model-name, or a name -> model map) and the HTTP
    server running, warmed up and ready (/health answers 200)."""
    named = models if isinstance(models, dict) else {args.served_model_name: models}
    engines = {name: Engine(model, args.max_batch) for name, model in named.items()}
    for engine in engines.values():
        engine.start()
    server = Server((args.host, args.port), engines, args)
    threading.Thread(target=server.serve_forever, name="http", daemon=True).start()
    for engine in engines.values():
        warm_up(engine, args.vocab)
    server.ready.set()
    return server


def shut_down(server: Server) -> None:
    server.shutdown()
    server.server_close()
    for engine in server.engines.values():
        engine.stop()


def serve(args: argparse.Namespace, model: Union[Model, Dict[str, Model]]) -> int:
    """Runs until SIGTERM or SIGINT; exit status 0."""
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    signal.signal(signal.SIGINT, lambda *_: stop.set())
    server = start(args, model)
    print(json.dumps({"event": "listening", "port": server.server_address[1], "pid": os.getpid()}), flush=True)
    while not stop.wait(0.5):
        pass
    shut_down(server)
    return 0


def main(argv: List[str]) -> int:
    args = parse_args(argv)
    try:
        model: Union[Model, Dict[str, Model]] = (
            TorchModel(args)
            if args.model_specs is None
            else {spec.name: TorchModel(shaped(args, spec), own_stream=True) for spec in args.model_specs}
        )
    except ImportError:
        print("reference_server: PyTorch is not installed: install torch (pip install torch)", file=sys.stderr)
        return 2
    return serve(args, model)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
