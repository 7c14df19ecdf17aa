"""A fake `torch` for the tests (no GPU, no PyTorch here): just enough of torch and torch.cuda for
gpushare_protocol.serve and the workload in docs/bring-your-own-workload.md to run on the CPU.

A fake GPU runs every kernel for KERNEL_MS on the stream it was enqueued on: a stream's work ends
KERNEL_MS after the later of its previous work and the moment it was enqueued, and synchronizing
waits for that. CUDA events report the GPU time enqueued (kernels × KERNEL_MS), not a wall clock.
The current stream is per thread, as PyTorch's is; the caching allocator holds RESERVED_MIB per
module built (so N tenants of a process hold N times as much), none of it in graph pools.
"""
import contextlib
import threading
import time

__version__ = "0.0.0+fake"
KERNEL_MS = 0.05
RESERVED_MIB = 64

float16, bfloat16, float32, int64 = "float16", "bfloat16", "float32", "int64"


class _Stream:
    def __init__(self, priority=0):
        self.priority = priority  # kept, so a test can see which stream a tenant got
        self.gpu_ms = 0.0  # GPU time of the work enqueued so far
        self.busy_until = 0.0  # time.monotonic() when that work ends
        _streams.append(self)

    def launch(self):
        self.busy_until = max(self.busy_until, time.monotonic()) + KERNEL_MS / 1000
        self.gpu_ms += KERNEL_MS

    def wait_stream(self, other):
        self.gpu_ms = max(self.gpu_ms, other.gpu_ms)
        self.busy_until = max(self.busy_until, other.busy_until)

    def synchronize(self):
        left = self.busy_until - time.monotonic()
        if left > 0:
            time.sleep(left)


class _Event:
    def __init__(self, enable_timing=False):
        self.gpu_ms = None
        self.stream = None

    def record(self, stream=None):
        self.stream = stream or cuda.current_stream()
        self.gpu_ms = self.stream.gpu_ms

    def synchronize(self):
        self.stream.synchronize()

    def elapsed_time(self, end):
        return end.gpu_ms - self.gpu_ms


_streams = []  # every stream made: synchronize() waits for all of them, as the device does
_reserved = [0]  # MiB the fake caching allocator holds
_freed = [0]  # MiB of it whose modules are gone: held until empty_cache(), as a caching allocator does


class _CUDAGraph:
    """A captured graph: what was captured, and on which stream (a graph runs on the SMs of the context its
    capture stream belongs to, so where it was captured matters)."""

    def __init__(self):
        self.captured_on = None
        self.work = []

    def replay(self):
        for fn in self.work:
            fn()


class _Cuda:
    Stream = _Stream
    Event = _Event
    CUDAGraph = _CUDAGraph

    def __init__(self):
        self._default = _Stream()
        self._local = threading.local()

    def is_available(self):
        return True

    def get_device_name(self, device=None):
        return "Fake GPU (test/fakes/python/torch)"

    def current_device(self):
        return 0

    def current_stream(self):
        return getattr(self._local, "current", self._default)

    def set_stream(self, s):
        self._local.current = s

    @contextlib.contextmanager
    def stream(self, s):
        before = self.current_stream()
        self._local.current = s
        try:
            yield
        finally:
            self._local.current = before

    def default_stream(self, device=None):
        return self._default

    @contextlib.contextmanager
    def graph(self, cuda_graph, pool=None, stream=None):
        """As PyTorch's: captures on `stream`, or on a side stream of its own when none is given."""
        capture = stream if stream is not None else _Stream()
        cuda_graph.captured_on = capture
        with self.stream(capture):
            yield

    def synchronize(self):
        for s in list(_streams):
            s.synchronize()

    def memory_reserved(self, device=None):
        return _reserved[0] * 2**20

    def empty_cache(self):
        _reserved[0] -= _freed[0]
        _freed[0] = 0

    def memory_snapshot(self):
        return [{"total_size": _reserved[0] * 2**20, "segment_pool_id": (0, 0)}] if _reserved[0] else []


cuda = _Cuda()


class Tensor:
    def __init__(self, shape):
        self.shape = tuple(shape)

    def __matmul__(self, other):
        return matmul(self, other)

    def cuda(self):
        return self

    def half(self):
        return self

    def to(self, *args, **kwargs):
        return self


def _tensor(*shape, device=None, dtype=None, **kwargs):
    return Tensor(shape[0] if len(shape) == 1 and isinstance(shape[0], (tuple, list)) else shape)


randn = zeros = ones = empty = _tensor


def matmul(a, b, out=None):
    cuda.current_stream().launch()
    return out if out is not None else Tensor(a.shape[:-1] + b.shape[-1:])


_grad = threading.local()  # as in PyTorch, grad mode is per thread, and on in a new one


def is_grad_enabled():
    return getattr(_grad, "on", True)


class set_grad_enabled:
    """As in PyTorch: sets this thread's grad mode when called; as a context manager, restores it after."""

    def __init__(self, mode):
        self._before = is_grad_enabled()
        _grad.on = bool(mode)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        _grad.on = self._before


def inference_mode(mode=True):
    return contextlib.nullcontext()


class _Module:
    def __call__(self, x):
        cuda.current_stream().launch()
        return x

    def cuda(self):
        _reserved[0] += RESERVED_MIB
        self._on_gpu = True
        return self

    def __del__(self):
        if getattr(self, "_on_gpu", False):
            _freed[0] += RESERVED_MIB

    def half(self):
        return self

    def eval(self):
        return self

    def to(self, *args, **kwargs):
        return self


class _Nn:
    class Linear(_Module):
        def __init__(self, n_in, n_out, **kwargs):
            pass

    class GELU(_Module):
        pass

    class ReLU(_Module):
        pass

    class Sequential(_Module):
        def __init__(self, *layers):
            self.layers = layers

        def __call__(self, x):
            for layer in self.layers:
                x = layer(x)
            return x


nn = _Nn()
