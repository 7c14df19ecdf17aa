"""Unit tests of the workloads/gpushare_protocol package's pure parts, on the CPU without PyTorch: open-loop
arrivals, the protocol line, argument parsing. Run by test/unit/python.test.ts as
`python3 -B test/python/test_protocol.py` (-B: no __pycache__ beside the sources)."""

import argparse
import contextlib
import io
import json
import math
import os
import sys
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "workloads"))
import gpushare_protocol as protocol
from gpushare_protocol import hold, loopcheck, tenants, windows, wire


class Arrivals(unittest.TestCase):
    def test_constant_load_is_evenly_spaced_from_the_window_start(self):
        times = windows.arrivals({"kind": "constant", "qps": 1000}, 0.0, 10_000.0, "t/0", 0.0)
        self.assertEqual(times, [i * 1000.0 for i in range(10)])

    def test_a_phase_shifts_a_client_by_that_part_of_a_gap(self):
        times = windows.arrivals({"kind": "constant", "qps": 1000}, 0.0, 10_000.0, "t/1", 0.5)
        self.assertEqual(times, [500.0 + i * 1000.0 for i in range(10)])

    def test_poisson_arrivals_repeat_for_a_seed_and_differ_between_seeds(self):
        load = {"kind": "poisson", "qps": 2000}
        first = windows.arrivals(load, 100.0, 1_000_100.0, "trial-3/0", 0.0)
        self.assertEqual(first, windows.arrivals(load, 100.0, 1_000_100.0, "trial-3/0", 0.0))
        self.assertNotEqual(first, windows.arrivals(load, 100.0, 1_000_100.0, "trial-3/1", 0.0))

    def test_poisson_arrivals_lie_in_the_window_in_order_at_the_rate_asked(self):
        times = windows.arrivals({"kind": "poisson", "qps": 2000}, 100.0, 1_000_100.0, "trial-3/0", 0.0)
        self.assertEqual(times, sorted(times))
        self.assertTrue(all(100.0 < t < 1_000_100.0 for t in times))
        # 2000 requests a second for one second, seeded: about 2000 (a Poisson count's sd is about 45).
        self.assertLess(abs(len(times) - 2000), 200)

    def test_a_window_shorter_than_a_gap_gets_one_request_at_its_start(self):
        self.assertEqual(windows.arrivals({"kind": "constant", "qps": 10}, 0.0, 50_000.0, "t/0", 0.0), [0.0])


class ProtocolLine(unittest.TestCase):
    def setUp(self):
        self.saved, wire._out = wire._out, io.StringIO()

    def tearDown(self):
        wire._out = self.saved

    def test_emit_writes_one_json_line_with_the_event_first(self):
        protocol.emit(
            "result",
            trial="t1",
            windowStartUs=1.5,
            windowEndUs=2.5,
            iterations=3,
            gpuMs=0.25,
            latenciesMs=[0.1, 0.2],
            chunkIterations=1,
        )
        text = wire._out.getvalue()
        self.assertTrue(text.endswith("\n"))
        self.assertEqual(text.count("\n"), 1)
        message = json.loads(text)
        self.assertEqual(next(iter(message)), "event")
        self.assertEqual(
            message,
            {
                "event": "result",
                "trial": "t1",
                "windowStartUs": 1.5,
                "windowEndUs": 2.5,
                "iterations": 3,
                "gpuMs": 0.25,
                "latenciesMs": [0.1, 0.2],
                "chunkIterations": 1,
            },
        )

    def test_a_line_break_in_a_message_stays_inside_its_line(self):
        protocol.emit("error", message="CUDA error:\nillegal memory access")
        self.assertEqual(wire._out.getvalue().count("\n"), 1)

    def test_nan_and_infinity_are_refused_not_written(self):
        for bad in (math.nan, math.inf):
            with self.assertRaises(ValueError):
                protocol.emit("result", trial="t1", gpuMs=bad)
        self.assertEqual(wire._out.getvalue(), "")


class Arguments(unittest.TestCase):
    def test_flag_takes_true_and_false_in_the_forms_the_harness_writes(self):
        for text in ("true", "1", "yes"):
            self.assertIs(protocol.flag(text), True)
        for text in ("false", "0", "no"):
            self.assertIs(protocol.flag(text), False)

    def test_flag_refuses_anything_else_naming_it(self):
        for text in ("True", "", "on", "2"):
            with self.assertRaisesRegex(argparse.ArgumentTypeError, "expected true or false"):
                protocol.flag(text)

    def test_the_common_flags_and_their_defaults(self):
        args = protocol.parser("x").parse_args([])
        self.assertEqual(vars(args), {"iterations": 100, "sync_every": 1, "warmup_ms": 500})
        args = protocol.parser("x").parse_args(["--iterations", "7", "--sync-every", "4", "--warmup-ms", "2.5"])
        self.assertEqual(vars(args), {"iterations": 7, "sync_every": 4, "warmup_ms": 2.5})

    def test_a_bad_number_is_a_usage_error(self):
        usage = io.StringIO()
        with self.assertRaises(SystemExit) as exit_, contextlib.redirect_stderr(usage):
            protocol.parser("x").parse_args(["--iterations", "7.5"])
        self.assertEqual(exit_.exception.code, 2)
        self.assertIn("argument --iterations: invalid int value: '7.5'", usage.getvalue())


class _StepClock:
    """time's clocks as gpushare_protocol reads them, moved only by advance(): a check measured on it is
    exact whatever else the machine does."""

    def __init__(self):
        self.ns = 0

    def advance(self, ns):
        self.ns += int(ns)

    def perf_counter_ns(self):
        return self.ns

    def monotonic_ns(self):
        return self.ns


class FakeTorchCase(unittest.TestCase):
    """A test on the fake torch (test/fakes/python): its module on the path for the test, as self.torch."""

    def setUp(self):
        fakes = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "fakes", "python")
        sys.path.insert(0, fakes)
        self.addCleanup(sys.path.remove, fakes)
        import torch

        self.torch = torch


class GraphCapture(FakeTorchCase):
    """graph_replay on the fake torch (test/fakes/python), which records the stream a graph was captured on:
    a graph runs on the SMs of its capture stream's context, so a tenant's graph (in the green mode, of its
    green context) must be captured on the tenant's own stream, not on a side stream of PyTorch's."""

    def test_a_tenants_graph_is_captured_on_its_own_stream(self):
        torch = self.torch
        own = torch.cuda.Stream()
        with torch.cuda.stream(own):
            replay = protocol.graph_replay(torch, lambda: None, warmups=1)
        self.assertIs(replay.__self__.captured_on, own)

    def test_on_the_default_stream_a_graph_is_captured_off_it(self):
        torch = self.torch
        replay = protocol.graph_replay(torch, lambda: None, warmups=1)
        self.assertIsNot(replay.__self__.captured_on, torch.cuda.default_stream())


class TenantGradMode(FakeTorchCase):
    """PyTorch keeps grad mode per thread: infer's setup turns it off on the thread that builds it, a
    training tenant needs it on, and a tenant's requests run on a thread of its own. Each tenant keeps the
    mode its own setup left, on every thread it runs on (a training tenant set up after infer failed with
    "element 0 of tensors does not require grad" on the H100)."""

    def setUp(self):
        super().setUp()
        self.addCleanup(self.torch.set_grad_enabled, self.torch.is_grad_enabled())

    def test_each_tenant_keeps_its_own_grad_mode_in_setup_warm_up_and_on_its_thread(self):
        torch = self.torch
        inference, training = tenants.Tenant(0, torch.cuda.Stream()), tenants.Tenant(1, torch.cuda.Stream())
        seen = []
        with inference.entered(torch):
            torch.set_grad_enabled(False)  # as infer's setup does
        with training.entered(torch):
            seen.append(("training setup", torch.is_grad_enabled()))
        for t in (inference, training):
            with t.entered(torch):
                seen.append((f"warm-up {t.index}", torch.is_grad_enabled()))
            t.start_thread(torch)
            t.jobs.put(torch.is_grad_enabled)
            seen.append((f"thread {t.index}", t.done.get(timeout=10)[1]))
        self.assertEqual(
            seen,
            [
                ("training setup", True),
                ("warm-up 0", False),
                ("thread 0", False),
                ("warm-up 1", True),
                ("thread 1", True),
            ],
        )
        self.assertTrue(torch.is_grad_enabled())  # the main thread's own mode, restored


class Hold(unittest.TestCase):
    """A prestarted process (GPUSHARE_HOLD=1) imports, then touches the GPU only once told start: run as a
    process of its own on the fake torch, which notes on stderr each time CUDA is asked for."""

    SCRIPT = """
import sys, torch
from gpushare_protocol import serve
real = torch.cuda.is_available
def noted():
    print("cuda-initialised", file=sys.stderr)
    return real()
torch.cuda.is_available = noted
def setup():
    print("setup", file=sys.stderr)
    return lambda i, lane, variant: None
def prepare(args):
    print(f"prepare {args.warmup_ms:g}", file=sys.stderr)
sys.exit(serve("held", setup, ["--warmup-ms", "0"], prepare=prepare))
"""

    def serve(self, stdin, hold="1"):
        import subprocess

        here = os.path.dirname(os.path.abspath(__file__))
        paths = [os.path.join(here, "..", "..", "workloads"), os.path.join(here, "..", "fakes", "python")]
        env = {**os.environ, "PYTHONPATH": os.pathsep.join(paths), "GPUSHARE_HOLD": hold}
        return subprocess.run(
            [sys.executable, "-B", "-c", self.SCRIPT], input=stdin, env=env, capture_output=True, text=True, timeout=60
        )

    def test_a_held_process_runs_prepare_says_holding_and_told_exit_never_initialises_cuda(self):
        done = self.serve('{"cmd":"exit"}\n')
        self.assertEqual(done.returncode, 0, done.stderr)
        self.assertEqual([json.loads(line)["event"] for line in done.stdout.splitlines()], ["holding"])
        self.assertIsInstance(json.loads(done.stdout)["pid"], int)
        self.assertEqual(done.stderr.split("\n")[0], "prepare 0")
        self.assertNotIn("cuda-initialised", done.stderr)
        self.assertNotIn("setup", done.stderr)

    def test_a_held_process_told_start_builds_and_says_ready(self):
        done = self.serve('{"cmd":"start"}\n{"cmd":"exit"}\n')
        self.assertEqual(done.returncode, 0, done.stderr)
        self.assertEqual([json.loads(line)["event"] for line in done.stdout.splitlines()], ["holding", "ready"])
        self.assertEqual(done.stderr.splitlines(), ["prepare 0", "cuda-initialised", "setup"])

    def test_a_process_not_held_runs_prepare_before_cuda_and_starts_at_once(self):
        done = self.serve('{"cmd":"exit"}\n', hold="0")
        self.assertEqual([json.loads(line)["event"] for line in done.stdout.splitlines()], ["ready"])
        self.assertEqual(done.stderr.splitlines(), ["prepare 0", "cuda-initialised", "setup"])


class TritonKernels(unittest.TestCase):
    """Triton compiles a @triton.jit body from its source and cannot resolve typing's names there: an
    annotated kernel fails to compile on the GPU (the green arms were skipped on an H200 so)."""

    def test_no_jit_kernel_is_annotated(self):
        import ast
        import inspect

        from gpushare_protocol import green

        tree = ast.parse(inspect.getsource(green))
        kernels = [
            f
            for f in ast.walk(tree)
            if isinstance(f, ast.FunctionDef) and any("jit" in ast.unparse(d) for d in f.decorator_list)
        ]
        self.assertEqual([f.name for f in kernels], ["smid"])
        for f in kernels:
            annotated = [a.arg for a in f.args.args if a.annotation is not None]
            self.assertEqual((annotated, f.returns), ([], None), f.name)


class HoldPriority(unittest.TestCase):
    """Held as root without pinned cores, a process imports at a lower priority only where it
    may raise it back (CAP_SYS_NICE): root in a container without the capability would fail its start."""

    def hold(self, cap):
        from unittest import mock

        calls = []
        env = {k: v for k, v in os.environ.items() if k != "GPUSHARE_HOLD_CPUS"}
        with (
            mock.patch.dict(os.environ, env, clear=True),
            mock.patch.object(os, "geteuid", return_value=0),
            mock.patch.object(hold, "has_cap_sys_nice", return_value=cap),
            mock.patch.object(os, "getpriority", return_value=0),
            mock.patch.object(os, "setpriority", side_effect=lambda *a: calls.append(a)),
        ):
            undo = hold.hold_begin()
        return undo, calls

    def test_with_the_capability_it_lowers_its_priority_and_can_undo_it(self):
        undo, calls = self.hold(cap=True)
        self.assertEqual((len(undo), calls), (1, [(os.PRIO_PROCESS, 0, 10)]))

    def test_without_it_the_priority_is_left_alone(self):
        self.assertEqual(self.hold(cap=False), ([], []))


class ExitAtOnce(unittest.TestCase):
    """serve(..., exit_at_once=True) ends the process on the exit command without Python's teardown:
    what it sent is flushed, and nothing after serve() runs; without it, serve returns as before."""

    SCRIPT = """
import sys
from gpushare_protocol import serve
status = serve("quick", lambda: (lambda i, lane, variant: None), ["--warmup-ms", "0"], exit_at_once={at_once})
print("after serve", file=sys.stderr)
sys.exit(status)
"""

    def serve(self, at_once):
        import subprocess

        here = os.path.dirname(os.path.abspath(__file__))
        paths = [os.path.join(here, "..", "..", "workloads"), os.path.join(here, "..", "fakes", "python")]
        env = {**os.environ, "PYTHONPATH": os.pathsep.join(paths)}
        return subprocess.run(
            [sys.executable, "-B", "-c", self.SCRIPT.format(at_once=at_once)],
            input='{"cmd":"exit"}\n',
            env=env,
            capture_output=True,
            text=True,
            timeout=60,
        )

    def test_exit_at_once_ends_the_process_with_its_ready_line_sent(self):
        done = self.serve(True)
        self.assertEqual(done.returncode, 0, done.stderr)
        self.assertEqual(json.loads(done.stdout.splitlines()[0])["event"], "ready")
        self.assertNotIn("after serve", done.stderr)

    def test_without_it_serve_returns_and_the_script_goes_on(self):
        done = self.serve(False)
        self.assertEqual(done.returncode, 0, done.stderr)
        self.assertIn("after serve", done.stderr)


class WindowLoop(FakeTorchCase):
    """The protocol's window loop on one lane, and its check against a bare loop, on the fake torch: the
    lane's stream is entered once per window, not per request, and the check measures both loops on the
    same step and reports per-request times and their difference."""

    def counting(self):
        """A fake torch.cuda.stream that counts how often a stream is entered."""
        torch, entered, real = self.torch, [0], self.torch.cuda.stream

        @contextlib.contextmanager
        def counted(s):
            entered[0] += 1
            with real(s):
                yield

        torch.cuda.stream = counted
        self.addCleanup(setattr, torch.cuda, "stream", real)
        return entered

    def step(self):
        torch = self.torch
        return lambda i, lane, variant: torch.cuda.current_stream().launch()

    def test_one_lane_enters_its_stream_once_per_window(self):
        torch, entered = self.torch, self.counting()
        lane = torch.cuda.Stream()
        done, _, latencies = windows.window(
            torch, self.step(), [lane], {"streams": 1}, protocol.now_us() + 20_000, 1, 100, windows.HostTime()
        )
        self.assertGreaterEqual(done, 1)  # however loaded the machine: the window ends at its deadline
        self.assertEqual(entered[0], 1)
        self.assertEqual(len(latencies), min(done, 100))

    def test_every_request_of_a_window_runs_on_its_lane(self):
        torch = self.torch
        lane, seen = torch.cuda.Stream(), []

        def step(i, lane_index, variant):
            seen.append((lane_index, torch.cuda.current_stream() is lane))
            torch.cuda.current_stream().launch()

        done, _, _ = windows.window(
            torch, step, [lane], {"streams": 1}, protocol.now_us() + 5_000, 1, 10, windows.HostTime()
        )
        self.assertEqual(seen, [(0, True)] * done)

    def clocked(self, loop_step_us=None):
        """The check on a clock of its own that only the step moves (62.5 µs a request, a little over the
        fake kernel's 50 and exact in binary; `loop_step_us` inside the protocol's window): what it reports
        does not depend on how loaded the machine is."""
        clock = _StepClock()
        real_window = windows.window
        for module in (wire, windows, loopcheck):  # every module of the package that reads a clock
            self.addCleanup(setattr, module, "time", module.time)
            module.time = clock
        self.addCleanup(setattr, windows, "window", real_window)

        def step_of(us):
            return lambda i, lane, variant: clock.advance(us * 1000)

        def window(torch, step, *rest, **kwargs):
            return real_window(torch, step_of(loop_step_us) if loop_step_us else step, *rest, **kwargs)

        windows.window = window
        torch = self.torch
        with torch.cuda.stream(torch.cuda.Stream()):
            return loopcheck.loop_overhead(torch, step_of(62.5), {"streams": 1}, 1, 40, 250)

    def test_the_loop_check_reports_both_loops_per_request(self):
        check = self.clocked()
        self.assertEqual(
            set(check),
            {
                "bareUsPerRequest",
                "loopUsPerRequest",
                "overheadPct",
                "overheadPctLow",
                "overheadPctHigh",
                "pairs",
                "requestsPerBlock",
                "windowMs",
                "windowOnceUs",
            },
        )
        self.assertEqual(check["windowMs"], 250)
        self.assertLessEqual(check["overheadPctLow"], check["overheadPct"])
        self.assertLessEqual(check["overheadPct"], check["overheadPctHigh"])
        self.assertEqual(check["pairs"], protocol.LOOP_CHECK_PAIRS)
        # Each loop's request at least the fake kernel's 50 µs, and neither far above it.
        for key in ("bareUsPerRequest", "loopUsPerRequest"):
            self.assertGreaterEqual(check[key], self.torch.KERNEL_MS * 1000)
            self.assertLess(check[key], self.torch.KERNEL_MS * 1000 * 3)
        # Nothing but the step moves this clock: the two loops cost the same.
        self.assertEqual((check["overheadPct"], check["windowOnceUs"]), (0.0, 0.0))

    def test_a_loop_that_costs_more_shows_as_overhead(self):
        """A step that is slower inside the protocol's window than in a bare loop (as entering a stream per
        request was) must show up: the check is not a constant."""
        check = self.clocked(loop_step_us=250)
        self.assertGreater(check["overheadPct"], 50)
        self.assertEqual(check["overheadPct"], 300.0)


class WholeTwin(FakeTorchCase):
    """A green process's tenant 0 has a twin on the whole GPU: a run command whose variant says whole runs
    the twin, and one naming a tenant without a twin is refused, not run in its slice."""

    def tenants(self):
        torch = self.torch
        made = [tenants.Tenant(i, torch.cuda.Stream()) for i in range(2)]
        twin = tenants.Tenant(0, torch.cuda.Stream())
        made[0].whole = twin
        for t in [*made, twin]:
            t.step = lambda i, lane, variant, s=t.stream: s.launch()
            t.start_thread(torch)
        return made, twin

    def command(self, tenants, whole):
        variant = {"streams": 1, **({"whole": True} if whole else {})}
        return {
            "cmd": "run",
            "trial": "t",
            "startAtUs": protocol.now_us(),
            "durationMs": 5,
            "iterations": None,
            "variant": variant,
            "tenants": tenants,
        }

    def test_a_whole_run_runs_tenant_0s_twin_and_leaves_its_slice_idle(self):
        made, twin = self.tenants()
        args = argparse.Namespace(sync_every=1, iterations=10)
        before = (made[0].stream.gpu_ms, twin.stream.gpu_ms)
        message = tenants.serve_tenants(self.torch, made, self.command([0], True), args)
        self.assertEqual([t["tenant"] for t in message["tenants"]], [0])
        self.assertEqual(made[0].stream.gpu_ms, before[0])
        self.assertGreater(twin.stream.gpu_ms, before[1])

    def test_without_whole_tenant_0_runs_in_its_own_slice(self):
        made, twin = self.tenants()
        args = argparse.Namespace(sync_every=1, iterations=10)
        before = twin.stream.gpu_ms
        tenants.serve_tenants(self.torch, made, self.command([0], False), args)
        self.assertEqual(twin.stream.gpu_ms, before)

    def test_a_whole_run_of_a_tenant_without_a_twin_is_refused(self):
        made, _ = self.tenants()
        args = argparse.Namespace(sync_every=1, iterations=10)
        with self.assertRaises(ValueError):
            tenants.serve_tenants(self.torch, made, self.command([1], True), args)


if __name__ == "__main__":
    unittest.main()
