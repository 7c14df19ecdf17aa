"""Unit tests of examples/reference_server.py's torch-free parts on the CPU: request validation (the 400s), SSE
chunk framing for both endpoints, the non-stream body with usage, the tokenizer, and the engine and HTTP server
driven end to end by a fake model (no PyTorch). Run by test/unit/python.test.ts as
`python3 -B test/python/test_reference_server.py` (-B: no __pycache__ beside the sources)."""

import contextlib
import http.client
import io
import json
import os
import signal
import subprocess
import sys
import threading
import time
import unittest
import urllib.error
import urllib.request

EXAMPLES = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "examples")
sys.path.insert(0, EXAMPLES)
import reference_server as rs  # noqa: E402  (it needs the path above; importing it needs no torch)

DEADLINE_S = 30.0


class FakeModel:
    """Deterministic tokens: prefill answers the prompt's length; each decode step answers the token plus one.
    Records every decode batch, so a test sees which sequences were advanced together."""

    def __init__(self, step_s=0.0):
        self.step_s = step_s
        self.batches = []
        self.prefills = []

    def prefill(self, slot, tokens):
        self.prefills.append((slot, list(tokens)))
        return len(tokens)

    def decode(self, slots, tokens, positions):
        self.batches.append((list(slots), list(positions)))
        if self.step_s:
            time.sleep(self.step_s)
        return [t + 1 for t in tokens]


def args_for(*extra):
    return rs.parse_args(["--port", "0", "--vocab", "1000", "--max-seq", "64", *extra])


class Tokenizer(unittest.TestCase):
    def test_a_prompt_is_its_utf8_bytes_mod_vocab(self):
        self.assertEqual(rs.tokenize("ab", 1000), [97, 98])
        self.assertEqual(rs.tokenize("ab", 64), [33, 34])
        self.assertEqual(rs.tokenize("é", 1000), [195, 169])  # two UTF-8 bytes, two tokens
        self.assertEqual(rs.tokenize("", 1000), [])

    def test_an_output_token_is_sent_as_space_t_and_its_id(self):
        self.assertEqual(rs.detokenize(7), " t7")
        self.assertEqual("".join(rs.detokenize(t) for t in [1, 22]), " t1 t22")

    def test_a_chat_is_rendered_as_role_content_lines(self):
        self.assertEqual(rs.render_chat([("system", "be brief"), ("user", "hi")]), "system: be brief\nuser: hi\n")


def parse(kind, body, max_seq=64):
    raw = body if isinstance(body, bytes) else json.dumps(body).encode()
    return rs.parse_request(kind, raw, 1000, max_seq)


class Validation(unittest.TestCase):
    def assert400(self, result, param, fragment):
        self.assertIsInstance(result, rs.ApiError)
        self.assertEqual((result.status, result.param), (400, param))
        self.assertIn(fragment, result.message)

    def test_bad_json_and_a_body_that_is_not_an_object_are_400s(self):
        self.assert400(parse("completion", b"{not json"), None, "not JSON")
        self.assert400(parse("completion", b"\xff\xfe"), None, "not JSON")
        self.assert400(parse("completion", [1, 2]), None, "JSON object")

    def test_a_missing_or_mistyped_prompt_is_a_400_naming_it(self):
        self.assert400(parse("completion", {"max_tokens": 4}), "prompt", "'prompt' is required")
        self.assert400(parse("completion", {"prompt": 5}), "prompt", "'prompt'")
        self.assert400(parse("completion", {"prompt": ["a", "b"]}), "prompt", "'prompt'")

    def test_missing_or_malformed_messages_are_a_400_naming_them(self):
        self.assert400(parse("chat", {"prompt": "hi"}), "messages", "'messages'")
        self.assert400(parse("chat", {"messages": []}), "messages", "'messages'")
        self.assert400(parse("chat", {"messages": [{"role": "user"}]}), "messages", "messages[0]")

    def test_max_tokens_must_be_a_positive_integer(self):
        for bad in [0, -1, "16", True, 1.5, None]:
            with self.subTest(max_tokens=bad):
                self.assert400(parse("completion", {"prompt": "x", "max_tokens": bad}), "max_tokens", "positive")
        self.assert400(
            parse("chat", {"messages": [{"role": "u", "content": "x"}], "max_completion_tokens": 0}),
            "max_tokens",
            "positive",
        )

    def test_stream_must_be_a_boolean(self):
        self.assert400(parse("completion", {"prompt": "x", "stream": "yes"}), "stream", "true or false")

    def test_prompt_plus_max_tokens_past_max_seq_is_a_400_at_the_boundary(self):
        fits = parse("completion", {"prompt": "x" * 48, "max_tokens": 16}, max_seq=64)
        self.assertIsInstance(fits, rs.GenerationRequest)
        over = parse("completion", {"prompt": "x" * 49, "max_tokens": 16}, max_seq=64)
        self.assert400(over, "max_tokens", "--max-seq 64")
        self.assertEqual(over.code, "context_length_exceeded")

    def test_a_valid_request_with_unknown_fields_and_defaults(self):
        r = parse("completion", {"prompt": "ab", "model": "anything", "temperature": 0.7, "frobnicate": [1]})
        # The model named is kept (a server of several routes by it); the rest are ignored.
        self.assertEqual(
            r, rs.GenerationRequest("completion", [97, 98], rs.DEFAULT_MAX_TOKENS, False, False, "anything")
        )
        r = parse(
            "completion", {"prompt": ["ab"], "max_tokens": 3, "stream": True, "stream_options": {"include_usage": True}}
        )
        self.assertEqual(r, rs.GenerationRequest("completion", [97, 98], 3, True, True))
        r = parse("chat", {"messages": [{"role": "user", "content": "hi"}], "max_tokens": 2})
        self.assertEqual(r.prompt_tokens, rs.tokenize("user: hi\n", 1000))
        self.assertEqual(parse("completion", {"prompt": ""}).prompt_tokens, [0])  # one position to start from

    def test_an_error_body_has_openai_shape(self):
        body = rs.error_body(rs.ApiError(400, "bad", "prompt"))
        self.assertEqual(
            body, {"error": {"message": "bad", "type": "invalid_request_error", "param": "prompt", "code": None}}
        )
        self.assertEqual(rs.error_body(rs.ApiError(500, "boom"))["error"]["type"], "server_error")


def sse_events(data):
    """The data: payloads of an SSE byte stream, each event ended by a blank line."""
    text = data.decode()
    assert text.endswith("\n\n"), repr(text[-20:])
    events = text[:-2].split("\n\n")
    assert all(e.startswith("data: ") for e in events), events
    return [e[len("data: ") :] for e in events]


class Framing(unittest.TestCase):
    def test_a_completion_chunk_carries_the_token_in_choices_text(self):
        data = rs.sse(rs.completion_chunk("completion", "cmpl-1", "m", 5, " t3", None))
        self.assertTrue(data.startswith(b"data: {") and data.endswith(b"}\n\n"))
        (payload,) = sse_events(data)
        chunk = json.loads(payload)
        self.assertEqual((chunk["object"], chunk["model"], chunk["id"]), ("text_completion", "m", "cmpl-1"))
        self.assertEqual(chunk["choices"][0]["text"], " t3")
        self.assertIsNone(chunk["choices"][0]["finish_reason"])

    def test_a_chat_chunk_carries_the_token_in_choices_delta_content(self):
        chunk = json.loads(sse_events(rs.sse(rs.completion_chunk("chat", "c", "m", 5, " t3", None)))[0])
        self.assertEqual(chunk["object"], "chat.completion.chunk")
        self.assertEqual(chunk["choices"][0]["delta"], {"role": "assistant", "content": " t3"})
        last = rs.completion_chunk("chat", "c", "m", 5, "", "length")
        self.assertEqual((last["choices"][0]["delta"], last["choices"][0]["finish_reason"]), ({}, "length"))

    def test_the_stream_ends_with_data_done(self):
        self.assertEqual(rs.SSE_DONE, b"data: [DONE]\n\n")
        self.assertEqual(sse_events(rs.SSE_DONE), ["[DONE]"])

    def test_the_usage_chunk_has_no_choices(self):
        chunk = rs.usage_chunk("completion", "c", "m", 5, 3, 4)
        self.assertEqual((chunk["choices"], chunk["usage"]["total_tokens"]), ([], 7))


class Body(unittest.TestCase):
    def test_a_completion_body_has_the_text_and_usage(self):
        body = rs.completion_body("completion", "cmpl-1", "m", 5, " t1 t2", 3, 2)
        self.assertEqual(body["object"], "text_completion")
        self.assertEqual(body["choices"][0]["text"], " t1 t2")
        self.assertEqual(body["choices"][0]["finish_reason"], "length")
        self.assertEqual(body["usage"], {"prompt_tokens": 3, "completion_tokens": 2, "total_tokens": 5})

    def test_a_chat_body_has_the_message_and_usage(self):
        body = rs.completion_body("chat", "c", "m", 5, " t1", 9, 1)
        self.assertEqual(body["object"], "chat.completion")
        self.assertEqual(body["choices"][0]["message"], {"role": "assistant", "content": " t1"})
        self.assertEqual(body["usage"]["total_tokens"], 10)


class Arguments(unittest.TestCase):
    def test_defaults_and_a_d_model_the_heads_do_not_divide(self):
        args = rs.parse_args([])
        self.assertEqual((args.host, args.port, args.device, args.dtype), ("127.0.0.1", 8000, "cuda", "float16"))
        with contextlib.redirect_stderr(io.StringIO()) as err, self.assertRaises(SystemExit) as exit:
            rs.parse_args(["--d-model", "100", "--heads", "8"])
        self.assertEqual(exit.exception.code, 2)
        self.assertIn("--d-model 100 is not a multiple of --heads 8", err.getvalue())


class ModelsArgument(unittest.TestCase):
    def test_each_item_is_a_name_and_a_spec_ending_in_layers_x_width(self):
        args = rs.parse_args(["--models", "small-1=ref-2x256,big=8x1024"])
        self.assertEqual(
            [(m.name, m.layers, m.d_model, m.heads) for m in args.model_specs],
            [("small-1", 2, 256, 4), ("big", 8, 1024, 16)],
        )
        self.assertIsNone(rs.parse_args([]).model_specs)

    def test_a_bad_item_is_one_line_naming_it_exit_2(self):
        for given, said in [
            ("a=ref-2x256,b", "--models item 'b' is not NAME=<layers>x<d_model>"),
            ("a=ref-2xwide", "--models item 'a=ref-2xwide' is not NAME=<layers>x<d_model>"),
            ("a=0x256", "give layers >= 1 and a d_model that is a multiple of 64"),
            ("a=2x100", "give layers >= 1 and a d_model that is a multiple of 64"),
            ("a=2x256,a=4x512", "--models names 'a' twice"),
        ]:
            with contextlib.redirect_stderr(io.StringIO()) as err, self.assertRaises(SystemExit) as exit:
                rs.parse_args(["--models", given])
            self.assertEqual(exit.exception.code, 2)
            self.assertIn(said, err.getvalue())


class SeveralModels(unittest.TestCase):
    """One process serving several models (--models): each request goes to the engine of the model it names."""

    @classmethod
    def setUpClass(cls):
        cls.models = {"small-1": FakeModel(), "big": FakeModel()}
        cls.server = rs.start(args_for("--max-batch", "4"), cls.models)
        cls.port = cls.server.server_address[1]

    @classmethod
    def tearDownClass(cls):
        rs.shut_down(cls.server)

    def test_models_lists_every_one(self):
        status, body = get(self.port, "/v1/models")
        self.assertEqual((status, [m["id"] for m in body["data"]]), (200, ["small-1", "big"]))

    def test_a_request_reaches_the_model_it_names_and_is_answered_in_its_name(self):
        status, _, data = post(
            self.port, "/v1/completions", {"prompt": "abcdef", "max_tokens": 3, "stream": True, "model": "big"}
        )
        self.assertEqual(status, 200)
        chunks = [json.loads(e) for e in sse_events(data)[:-1]]
        self.assertEqual({c["model"] for c in chunks}, {"big"})
        self.assertIn(list(rs.tokenize("abcdef", 1000)), [t for _, t in self.models["big"].prefills])
        self.assertNotIn(list(rs.tokenize("abcdef", 1000)), [t for _, t in self.models["small-1"].prefills])

    def test_a_model_it_does_not_serve_or_none_named_is_404_model_not_found(self):
        for body in [{"prompt": "x", "model": "medium"}, {"prompt": "x"}]:
            status, _, data = post(self.port, "/v1/completions", body)
            error = json.loads(data)["error"]
            self.assertEqual((status, error["code"]), (404, "model_not_found"))
            self.assertIn("this server serves small-1, big", error["message"])


class EngineBatching(unittest.TestCase):
    def drain(self, seq):
        out = []
        while True:
            event = seq.out.get(timeout=DEADLINE_S)
            if event is None:
                return out
            out.append(event)

    def test_each_request_gets_exactly_max_tokens_and_sequences_decode_together(self):
        model = FakeModel()
        engine = rs.Engine(model, max_batch=4)
        a = engine.submit(rs.GenerationRequest("completion", [1, 2, 3], 5, False, False))
        b = engine.submit(rs.GenerationRequest("completion", [1, 2], 3, False, False))
        while engine.waiting.qsize() or engine.active:
            engine.step()
        self.assertEqual(self.drain(a), [3, 4, 5, 6, 7])
        self.assertEqual(self.drain(b), [2, 3, 4])
        # Both prefilled, then decoded together at their own positions until b had its 3 tokens.
        self.assertEqual([s for s, _ in model.prefills], [0, 1])
        self.assertEqual(model.batches[:2], [([0, 1], [3, 2]), ([0, 1], [4, 3])])
        self.assertEqual(model.batches[2:], [([0], [5]), ([0], [6])])

    def test_max_batch_caps_the_batch_and_a_waiting_request_joins_when_a_slot_frees(self):
        model = FakeModel()
        engine = rs.Engine(model, max_batch=1)
        a = engine.submit(rs.GenerationRequest("completion", [1], 2, False, False))
        b = engine.submit(rs.GenerationRequest("completion", [1], 2, False, False))
        while engine.waiting.qsize() or engine.active:
            engine.step()
        self.assertEqual((self.drain(a), self.drain(b)), ([1, 2], [1, 2]))
        self.assertTrue(all(len(slots) == 1 for slots, _ in model.batches))
        self.assertEqual([s for s, _ in model.prefills], [0, 0])  # b took a's slot once a was done

    def test_a_model_failure_ends_the_request_with_an_error_not_a_hang(self):
        class Broken(FakeModel):
            def decode(self, slots, tokens, positions):
                raise RuntimeError("CUDA error: out of memory")

        engine = rs.Engine(Broken(), max_batch=2)
        engine.start()
        try:
            seq = engine.submit(rs.GenerationRequest("completion", [1], 4, False, False))
            self.assertEqual(seq.out.get(timeout=DEADLINE_S), 1)
            self.assertEqual(seq.out.get(timeout=DEADLINE_S), "RuntimeError: CUDA error: out of memory")
        finally:
            engine.stop()


def post(port, path, body, raw=None):
    data = raw if raw is not None else json.dumps(body).encode()
    req = urllib.request.Request(
        f"http://127.0.0.1:{port}{path}", data=data, headers={"Content-Type": "application/json"}
    )
    try:
        with urllib.request.urlopen(req, timeout=DEADLINE_S) as resp:
            return resp.status, resp.headers.get("Content-Type"), resp.read()
    except urllib.error.HTTPError as e:
        return e.code, e.headers.get("Content-Type"), e.read()


def get(port, path):
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=DEADLINE_S) as resp:
            return resp.status, json.loads(resp.read())
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read())


class Http(unittest.TestCase):
    """The real HTTP server and engine with the fake model: what a client reads on the wire."""

    @classmethod
    def setUpClass(cls):
        cls.model = FakeModel(step_s=0.002)
        cls.server = rs.start(args_for("--served-model-name", "ref", "--max-batch", "4"), cls.model)
        cls.port = cls.server.server_address[1]

    @classmethod
    def tearDownClass(cls):
        rs.shut_down(cls.server)

    def test_listens_with_room_for_a_load_generators_connections(self):
        # socketserver's backlog of 5 dropped SYNs when 8 to 32 connections opened together; each came back
        # after TCP's 1 s retry, as 1 s TTFT spikes on an H200 (docs/serving.md).
        self.assertGreaterEqual(self.server.request_queue_size, 128)

    def test_health_and_models(self):
        self.assertEqual(get(self.port, "/health"), (200, {"status": "ok"}))
        status, body = get(self.port, "/v1/models")
        self.assertEqual((status, [m["id"] for m in body["data"]]), (200, ["ref"]))
        self.assertEqual(get(self.port, "/nope")[0], 404)

    def test_a_streamed_completion_sends_max_tokens_chunks_then_done(self):
        status, ctype, data = post(
            self.port, "/v1/completions", {"prompt": "abcd", "max_tokens": 16, "stream": True, "model": "x"}
        )
        self.assertEqual((status, ctype), (200, "text/event-stream"))
        events = sse_events(data)
        self.assertEqual(events[-1], "[DONE]")
        chunks = [json.loads(e) for e in events[:-1]]
        texts = [c["choices"][0]["text"] for c in chunks]
        self.assertEqual(texts, [f" t{4 + i}" for i in range(16)] + [""])
        self.assertEqual(chunks[-1]["choices"][0]["finish_reason"], "length")
        self.assertEqual({c["model"] for c in chunks}, {"ref"})

    def test_a_streamed_chat_sends_delta_content_and_usage_when_asked(self):
        body = {
            "messages": [{"role": "user", "content": "hi"}],
            "max_tokens": 3,
            "stream": True,
            "stream_options": {"include_usage": True},
        }
        status, _, data = post(self.port, "/v1/chat/completions", body)
        events = sse_events(data)
        chunks = [json.loads(e) for e in events[:-1]]
        self.assertEqual((status, events[-1]), (200, "[DONE]"))
        n = len("user: hi\n")
        self.assertEqual(
            [c["choices"][0]["delta"].get("content") for c in chunks[:3]], [f" t{n}", f" t{n + 1}", f" t{n + 2}"]
        )
        self.assertEqual(chunks[3]["choices"][0]["finish_reason"], "length")
        self.assertEqual(chunks[4]["usage"], {"prompt_tokens": n, "completion_tokens": 3, "total_tokens": n + 3})

    def test_a_whole_completion_is_one_body_with_usage(self):
        status, ctype, data = post(self.port, "/v1/completions", {"prompt": "ab", "max_tokens": 4})
        body = json.loads(data)
        self.assertEqual((status, ctype), (200, "application/json"))
        self.assertEqual(body["choices"][0]["text"], " t2 t3 t4 t5")
        self.assertEqual(body["usage"], {"prompt_tokens": 2, "completion_tokens": 4, "total_tokens": 6})
        self.assertEqual(body["model"], "ref")

    def test_bad_requests_are_400s_with_an_error_body(self):
        status, _, data = post(self.port, "/v1/completions", None, raw=b"{oops")
        self.assertEqual(status, 400)
        self.assertIn("not JSON", json.loads(data)["error"]["message"])
        status, _, data = post(self.port, "/v1/chat/completions", {"max_tokens": 4})
        self.assertEqual((status, json.loads(data)["error"]["param"]), (400, "messages"))

    def test_concurrent_requests_are_decoded_in_one_batch_capped_at_max_batch(self):
        results = [None] * 8

        def one(i):
            results[i] = post(self.port, "/v1/completions", {"prompt": "x", "max_tokens": 16, "stream": True})

        threads = [threading.Thread(target=one, args=(i,)) for i in range(8)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(DEADLINE_S)
        self.assertTrue(all(r is not None and r[0] == 200 for r in results))
        self.assertTrue(all(len(sse_events(r[2])) == 16 + 2 for r in results))
        widths = [len(slots) for slots, _ in self.model.batches]
        self.assertGreater(max(widths), 1)
        self.assertLessEqual(max(widths), 4)


class Disconnect(unittest.TestCase):
    def test_a_client_that_goes_away_mid_stream_frees_its_slot(self):
        model = FakeModel(step_s=0.002)
        server = rs.start(args_for("--max-seq", "4096", "--max-batch", "1"), model)
        try:
            port = server.server_address[1]
            body = json.dumps({"prompt": "x", "max_tokens": 4000, "stream": True}).encode()
            req = urllib.request.Request(f"http://127.0.0.1:{port}/v1/completions", data=body)
            with urllib.request.urlopen(req, timeout=DEADLINE_S) as resp:
                self.assertTrue(resp.readline().startswith(b"data: "))
            deadline = time.monotonic() + DEADLINE_S
            (engine,) = server.engines.values()
            while engine.active and time.monotonic() < deadline:
                time.sleep(0.01)
            self.assertEqual(engine.active, {})
            # Freed well before its 4000 tokens (8 s of steps): the next request gets the one slot at once.
            self.assertLess(len(model.batches), 2000)
            status, _, data = post(port, "/v1/completions", {"prompt": "ab", "max_tokens": 2})
            self.assertEqual((status, json.loads(data)["usage"]["completion_tokens"]), (200, 2))
        finally:
            rs.shut_down(server)

    def test_a_content_length_that_is_not_a_number_is_a_400(self):
        server = rs.start(args_for(), FakeModel())
        try:
            conn = http.client.HTTPConnection("127.0.0.1", server.server_address[1], timeout=DEADLINE_S)
            conn.putrequest("POST", "/v1/completions")
            conn.putheader("Content-Length", "lots")
            conn.endheaders()
            resp = conn.getresponse()
            self.assertEqual(resp.status, 400)
            self.assertIn("'lots' is not a number", json.loads(resp.read())["error"]["message"])
            conn.close()
        finally:
            rs.shut_down(server)


class NotReady(unittest.TestCase):
    def test_health_and_completions_answer_503_until_warmed_up(self):
        engine = rs.Engine(FakeModel(), max_batch=1)
        server = rs.Server(("127.0.0.1", 0), engine, args_for())
        threading.Thread(target=server.serve_forever, daemon=True).start()
        try:
            port = server.server_address[1]
            self.assertEqual(get(port, "/health")[0], 503)
            self.assertEqual(post(port, "/v1/completions", {"prompt": "x"})[0], 503)
        finally:
            server.shutdown()
            server.server_close()


class Lifecycle(unittest.TestCase):
    def test_it_prints_the_listening_line_when_ready_and_sigterm_stops_it_with_status_0(self):
        script = "\n".join(
            [
                "import sys",
                f"sys.path.insert(0, {EXAMPLES!r})",
                f"sys.path.insert(0, {os.path.dirname(os.path.abspath(__file__))!r})",
                "import reference_server as rs",
                "from test_reference_server import FakeModel",
                "sys.exit(rs.serve(rs.parse_args(['--port', '0']), FakeModel()))",
            ]
        )
        proc = subprocess.Popen([sys.executable, "-B", "-c", script], stdout=subprocess.PIPE, text=True)
        try:
            line = json.loads(proc.stdout.readline())
            self.assertEqual((line["event"], line["pid"]), ("listening", proc.pid))
            self.assertEqual(get(line["port"], "/health")[0], 200)
            proc.send_signal(signal.SIGTERM)
            self.assertEqual(proc.wait(timeout=DEADLINE_S), 0)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
            proc.stdout.close()


if __name__ == "__main__":
    unittest.main()
