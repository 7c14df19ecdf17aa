#!/usr/bin/env python3
"""Smoke test of an OpenAI-compatible server's streams (standard library only; written for KoboldCpp).

Starts the server (--cmd, with {port} filled in) unless --no-start, waits for --ready-path to answer 200,
then sends one streamed chat and one streamed completions request and prints every read of the raw body
(repr, so a missing final blank line shows), then a summary per request: data events, text chunks,
finish_reasons, [DONE], usage, whether the body ends with a blank line; then --concurrent requests at once
(their TTFT and end-to-end times show whether the server batches or serves one at a time); then the GPU
memory per process (nvidia-smi). Stops the server it started.

  python3 smoke_koboldcpp.py --cmd 'bash engines/serve_koboldcpp.sh --port {port} --model /tmp/model-0.1b/model.gguf'
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import signal
import subprocess
import sys
import threading
import time


def wait_ready(port: int, path: str, proc: subprocess.Popen | None, deadline_s: float) -> float:
    t0 = time.monotonic()
    while time.monotonic() - t0 < deadline_s:
        if proc is not None and proc.poll() is not None:
            sys.exit(f"server exited with {proc.returncode} before it was ready")
        try:
            c = http.client.HTTPConnection("127.0.0.1", port, timeout=2)
            c.request("GET", path)
            r = c.getresponse()
            body = r.read()
            if r.status == 200:
                print(f"READY {path} 200 after {time.monotonic() - t0:.1f} s: {body[:300]!r}")
                return time.monotonic() - t0
            print(f"  {path} -> {r.status}")
        except OSError:
            pass
        time.sleep(0.5)
    sys.exit(f"not ready within {deadline_s} s")


def model_id(port: int) -> str:
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    c.request("GET", "/v1/models")
    return json.loads(c.getresponse().read())["data"][0]["id"]


def stream(port: int, api: str, model: str, max_tokens: int, echo: bool) -> dict:
    body: dict = {
        "model": model,
        "max_tokens": max_tokens,
        "stream": True,
        "stream_options": {"include_usage": True},
    }
    prompt = "hello world " * 8
    if api == "chat":
        body["messages"] = [{"role": "user", "content": prompt}]
    else:
        body["prompt"] = prompt
    path = "/v1/chat/completions" if api == "chat" else "/v1/completions"
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
    t0 = time.monotonic()
    c.request("POST", path, json.dumps(body), {"content-type": "application/json"})
    r = c.getresponse()
    raw = b""
    first_text_s = None
    while True:
        piece = r.read1(65536) if hasattr(r, "read1") else r.read(1)
        if not piece:
            break
        at = time.monotonic() - t0
        if echo:
            print(f"  +{at * 1000:7.1f} ms {piece!r}")
        raw += piece
        if first_text_s is None and (
            b'"content": "' in piece.replace(b'"content": ""', b"") or b'"text": "' in piece.replace(b'"text": ""', b"")
        ):
            first_text_s = at
    e2e = time.monotonic() - t0
    text = raw.decode("utf-8", "replace")
    events = text.replace("\r\n", "\n").split("\n\n")
    complete, tail = events[:-1], events[-1]
    datas = [ln[6:] for e in complete for ln in e.split("\n") if ln.startswith("data: ")]
    chunks, reasons, usage, done, chars = 0, [], None, False, 0
    for d in datas:
        if d == "[DONE]":
            done = True
            continue
        j = json.loads(d)
        usage = j.get("usage") or usage
        for ch in j.get("choices", []):
            t = ch.get("text") if api == "completions" else (ch.get("delta") or {}).get("content")
            if isinstance(t, str) and t:
                chunks += 1
                chars += len(t)
            reasons.append(ch.get("finish_reason"))
    return {
        "api": api,
        "status": r.status,
        "headers": dict(r.getheaders()),
        "data_events": len(datas),
        "text_chunks": chunks,
        "text_chars": chars,
        "finish_reasons": sorted({json.dumps(x) for x in reasons}),
        "last_finish_reason": reasons[-1] if reasons else None,
        "done_event": done,
        "usage": usage,
        "unterminated_tail": tail,
        "ttft_ms": None if first_text_s is None else round(first_text_s * 1000, 1),
        "e2e_ms": round(e2e * 1000, 1),
    }


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--cmd", default="bash engines/serve_koboldcpp.sh --port {port}")
    ap.add_argument("--port", type=int, default=18100)
    ap.add_argument("--no-start", action="store_true", help="a server already listens on --port")
    ap.add_argument("--ready-path", default="/v1/models")
    ap.add_argument("--ready-timeout", type=float, default=300)
    ap.add_argument("--max-tokens", type=int, default=64)
    ap.add_argument("--concurrent", type=int, default=4)
    args = ap.parse_args()

    proc = None
    if not args.no_start:
        cmd = args.cmd.replace("{port}", str(args.port))
        print(f"START {cmd}")
        log = open(f"/tmp/smoke-server-{args.port}.log", "w")  # noqa: SIM115 (the server's, open until it ends)
        proc = subprocess.Popen(
            cmd,
            shell=True,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    try:
        wait_ready(args.port, args.ready_path, proc, args.ready_timeout)
        model = model_id(args.port)
        for api in ("chat", "completions"):
            print(f"--- {api}: raw body, one line per read")
            print("SUMMARY " + json.dumps(stream(args.port, api, model, args.max_tokens, echo=True)))
        results: list[dict] = []
        threads = [
            threading.Thread(target=lambda: results.append(stream(args.port, "chat", model, args.max_tokens, False)))
            for _ in range(args.concurrent)
        ]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        print(f"--- {args.concurrent} concurrent chat requests (ttft_ms, e2e_ms, text_chunks, status):")
        for r in sorted(results, key=lambda r: r["e2e_ms"]):
            print(f"  {r['ttft_ms']} {r['e2e_ms']} {r['text_chunks']} {r['status']}")
        try:
            smi = subprocess.run(
                [
                    "nvidia-smi",
                    "--query-compute-apps=pid,used_memory",
                    "--format=csv,noheader",
                ],
                capture_output=True,
                text=True,
                check=False,
            )
            print(f"GPU memory per process: {smi.stdout.strip() or smi.stderr.strip()}")
        except FileNotFoundError:
            print("GPU memory per process: no nvidia-smi")
    finally:
        if proc is not None:
            os.killpg(proc.pid, signal.SIGTERM)
            try:
                proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
            print(f"server log tail (/tmp/smoke-server-{args.port}.log):")
            with open(f"/tmp/smoke-server-{args.port}.log", errors="replace") as f:
                print("".join(f.readlines()[-15:]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
