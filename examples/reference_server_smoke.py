"""Smoke test of examples/reference_server.py on a GPU machine, standard library only: starts the server on a free
port, streams one completion of 16 tokens (time to first token, tokens/s), then 8 concurrent ones, and stops it with
SIGTERM (it must exit 0). Flags after the script's name go to the server:

  python3 examples/reference_server_smoke.py                      # the server's defaults (CUDA, fp16)
  python3 examples/reference_server_smoke.py --device cpu --dtype float32 --d-model 128 --layers 2

Prints one JSON line per phase on stdout; exit status 0 when every check passed, 1 otherwise.
"""

from __future__ import annotations

import json
import os
import queue
import signal
import subprocess
import sys
import threading
import time
import urllib.request
from typing import Any, Dict, List, Optional

SERVER = os.path.join(os.path.dirname(os.path.abspath(__file__)), "reference_server.py")
READY_DEADLINE_S = 600.0
REQUEST_DEADLINE_S = 120.0
MAX_TOKENS = 16
CONCURRENT = 8


def stream_completion(port: int, max_tokens: int) -> Dict[str, Any]:
    """One streamed /v1/completions: its token count, time to first token and end-to-end time, milliseconds."""
    body = json.dumps({"prompt": "The quick brown fox", "max_tokens": max_tokens, "stream": True}).encode()
    request = urllib.request.Request(
        f"http://127.0.0.1:{port}/v1/completions", data=body, headers={"Content-Type": "application/json"}
    )
    start = time.perf_counter()
    first: Optional[float] = None
    tokens, done = 0, False
    with urllib.request.urlopen(request, timeout=REQUEST_DEADLINE_S) as response:
        for raw in response:
            line = raw.decode("utf-8").strip()
            if not line.startswith("data: "):
                continue
            payload = line[len("data: ") :]
            if payload == "[DONE]":
                done = True
                break
            if json.loads(payload)["choices"][0]["text"]:
                tokens += 1
                if first is None:
                    first = time.perf_counter()
    end = time.perf_counter()
    ttft_ms = (first - start) * 1000.0 if first is not None else None
    decode_s = end - first if first is not None else 0.0
    return {
        "tokens": tokens,
        "done": done,
        "ttftMs": ttft_ms,
        "e2eMs": (end - start) * 1000.0,
        # After the first token: the decode rate one request sees.
        "decodeTokensPerS": (tokens - 1) / decode_s if tokens > 1 and decode_s > 0 else None,
    }


def listening_line(proc: subprocess.Popen[str]) -> Optional[Dict[str, Any]]:
    """The server's {"event":"listening"} line, or None if it exits or the deadline passes first."""
    lines: queue.Queue[Optional[str]] = queue.Queue()

    def read() -> None:
        assert proc.stdout is not None
        for line in proc.stdout:
            lines.put(line)
        lines.put(None)

    threading.Thread(target=read, daemon=True).start()
    deadline = time.monotonic() + READY_DEADLINE_S
    while time.monotonic() < deadline:
        try:
            line = lines.get(timeout=1.0)
        except queue.Empty:
            continue
        if line is None:
            return None
        try:
            message = json.loads(line)
        except json.JSONDecodeError:
            continue
        if isinstance(message, dict) and message.get("event") == "listening":
            return message
    return None


def report(phase: str, **fields: Any) -> None:
    print(json.dumps({"phase": phase, **fields}), flush=True)


def concurrent(port: int) -> List[Dict[str, Any]]:
    results: List[Dict[str, Any]] = [{} for _ in range(CONCURRENT)]

    def one(i: int) -> None:
        try:
            results[i] = stream_completion(port, MAX_TOKENS)
        except Exception as e:  # one failed request is a failed check, not a crashed smoke test
            results[i] = {"error": f"{type(e).__name__}: {e}"}

    threads = [threading.Thread(target=one, args=(i,)) for i in range(CONCURRENT)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(REQUEST_DEADLINE_S)
    return results


def main(server_args: List[str]) -> int:
    started = time.perf_counter()
    proc = subprocess.Popen(
        [sys.executable, SERVER, "--port", "0", *server_args], stdout=subprocess.PIPE, text=True, start_new_session=True
    )
    ok = True
    try:
        line = listening_line(proc)
        if line is None:
            report("start", ok=False, exitCode=proc.poll(), message="no listening line (see the server's stderr above)")
            return 1
        port = int(line["port"])
        report("start", ok=True, port=port, pid=line["pid"], readyS=round(time.perf_counter() - started, 2))

        single = stream_completion(port, MAX_TOKENS)
        single_ok = single["tokens"] == MAX_TOKENS and single["done"]
        ok = ok and single_ok
        report("single", ok=single_ok, **single)

        wall_start = time.perf_counter()
        results = concurrent(port)
        wall_s = time.perf_counter() - wall_start
        many_ok = all(r.get("tokens") == MAX_TOKENS and r.get("done") for r in results)
        ok = ok and many_ok
        ttfts = sorted(r["ttftMs"] for r in results if r.get("ttftMs") is not None)
        report(
            "concurrent",
            ok=many_ok,
            requests=CONCURRENT,
            ttftMsMedian=ttfts[len(ttfts) // 2] if ttfts else None,
            ttftMsMax=ttfts[-1] if ttfts else None,
            wallS=round(wall_s, 4),
            tokensPerS=sum(r.get("tokens", 0) for r in results) / wall_s,
            errors=[r["error"] for r in results if "error" in r],
        )
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
            try:
                code = proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                code = proc.wait()
            ok = ok and code == 0
            report("stop", ok=code == 0, exitCode=code)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
