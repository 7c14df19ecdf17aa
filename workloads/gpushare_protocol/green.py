"""Green contexts: disjoint groups of SMs made through the CUDA driver API, and a check on the GPU
itself that each tenant's work ran only on its own group's SMs."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable, Dict, List, Optional, Sequence, Tuple

from .errors import Unsupported
from .graphs import graph_replay

if TYPE_CHECKING:
    from .tenants import Tenant

# How long each block of the SM-id kernel spins, so that its blocks spread over every SM it may use.
SMID_SPIN_NS = 20_000


def driver(result: Tuple[Any, ...], what: str, cu: Any) -> Any:
    """The value(s) of a cuda-python driver call, which returns (CUresult, *values); a RuntimeError
    naming the call and the driver's error otherwise."""
    err, *values = result
    if int(err) != 0:
        name = cu.cuGetErrorName(err)[1]
        raise RuntimeError(f"{what}: {name.decode() if isinstance(name, bytes) else name}")
    return values[0] if len(values) == 1 else tuple(values)


class GreenContext:
    """A green context of some SMs, made through the CUDA driver API, and a stream of it for PyTorch."""

    def __init__(self, cu: Any, green: Any, context: Any, stream: Any, handles: Tuple[Any, ...], sms: int) -> None:
        self.cu, self.green, self.context, self.stream, self.sms = cu, green, context, stream, sms
        self._handles = handles  # the descriptor and stream handle, kept alive as long as the context

    def push(self) -> None:
        driver(self.cu.cuCtxPushCurrent(self.context), "cuCtxPushCurrent", self.cu)

    def pop(self) -> None:
        driver(self.cu.cuCtxPopCurrent(), "cuCtxPopCurrent", self.cu)


def _bindings() -> Any:
    """NVIDIA's Python bindings of the CUDA driver (cuda-python), or Unsupported saying how to get them."""
    try:
        from cuda.bindings import driver as cu
    except ImportError:
        try:
            from cuda import cuda as cu  # cuda-python before 12.6 named the module so
        except ImportError as exc:
            raise Unsupported(
                f"green contexts need NVIDIA's Python bindings of the CUDA driver (pip install cuda-python): {exc}"
            ) from exc
    return cu


def green_contexts(torch: Any, count: int, pct: Optional[float]) -> Tuple[List[GreenContext], int]:
    """`count` green contexts of disjoint SMs: `pct`% of the SMs each, or an even split (pct None).

    Through the driver API (cuda-python), not torch.cuda.green_contexts: PyTorch 2.11's
    GreenContext.create(n) takes the first n SMs every time, so its contexts overlap. The driver
    rounds each group up to its minimum size (8 SMs on Hopper); where the SMs cannot make `count`
    groups, or a call is missing, this is Unsupported with the driver's own words."""
    cu = _bindings()
    calls = (
        "cuDeviceGetDevResource",
        "cuDevSmResourceSplitByCount",
        "cuDevResourceGenerateDesc",
        "cuGreenCtxCreate",
        "cuCtxFromGreenCtx",
        "cuGreenCtxStreamCreate",
    )
    missing = [c for c in calls if not hasattr(cu, c)]
    if missing:
        raise Unsupported(
            f"the CUDA driver bindings here have no {', '.join(missing)}: green contexts need CUDA 12.4 or later"
        )
    torch.zeros(1, device="cuda")  # the primary context, current on this thread
    torch.cuda.Stream()  # PyTorch's stream pool made in the primary context, before any green context is current
    try:
        device = driver(cu.cuDeviceGet(torch.cuda.current_device()), "cuDeviceGet", cu)
        sm_type = cu.CUdevResourceType.CU_DEV_RESOURCE_TYPE_SM
        whole = driver(cu.cuDeviceGetDevResource(device, sm_type), "cuDeviceGetDevResource", cu)
        total: int = whole.sm.smCount
        asked = int(total * pct / 100) if pct is not None else total // count
        groups = split(cu, whole, count, asked, total, even=pct is None)
        made = []
        for group in groups:
            desc = driver(cu.cuDevResourceGenerateDesc([group], 1), "cuDevResourceGenerateDesc", cu)
            flags = cu.CUgreenCtxCreate_flags.CU_GREEN_CTX_DEFAULT_STREAM
            green = driver(cu.cuGreenCtxCreate(desc, device, flags), "cuGreenCtxCreate", cu)
            context = driver(cu.cuCtxFromGreenCtx(green), "cuCtxFromGreenCtx", cu)
            non_blocking = cu.CUstream_flags.CU_STREAM_NON_BLOCKING
            handle = driver(cu.cuGreenCtxStreamCreate(green, non_blocking, 0), "cuGreenCtxStreamCreate", cu)
            stream = torch.cuda.ExternalStream(int(handle), device=torch.cuda.current_device())
            made.append(GreenContext(cu, green, context, stream, (desc, handle), group.sm.smCount))
        return made, total
    except RuntimeError as exc:  # a driver call refused: this GPU or driver cannot make these contexts
        raise Unsupported(f"green contexts could not be made for {count} tenants: {exc}") from exc


def split(cu: Any, whole: Any, count: int, asked: int, total: int, even: bool) -> List[Any]:
    """`count` disjoint SM groups of at least `asked` SMs each. An even split tries smaller groups
    until the driver makes `count` of them (it rounds a group up to its granularity, so 33 SMs asked
    can mean 40 given); a share asked for (--sm-pct) is tried as it is."""
    best, refused = (0, 0), None
    for least in range(max(asked, 1), 0, -1) if even else [max(asked, 1)]:
        try:
            groups, made, _rest = driver(
                cu.cuDevSmResourceSplitByCount(count, whole, 0, least), "cuDevSmResourceSplitByCount", cu
            )
        except RuntimeError as exc:
            refused = f"{exc} (at {least} SMs a group)"
            continue
        groups = list(groups)[:made]
        if made >= count:
            return groups[:count]
        if made > best[0]:
            best = (made, groups[0].sm.smCount if groups else 0)
    share = f"{asked} SMs each ({100 * asked / total:.1f}%)" if not even else "an even split"
    if best[0] == 0:
        raise Unsupported(f"the driver made no group of {total} SMs for {count} tenants ({share}): {refused}")
    raise Unsupported(
        f"the driver splits {total} SMs into at most {best[0]} groups of {best[1]} SMs "
        f"(its smallest group here), not the {count} asked for {share}: at most {best[0]} tenants "
        f"get green contexts of their own on this GPU"
    )


_SMID_KERNEL: Any = None


def smid_kernel() -> Any:
    """A Triton kernel smid[(blocks,)](out, ns): each block spins ns on %globaltimer, then writes the
    id of the SM it ran on."""
    global _SMID_KERNEL
    if _SMID_KERNEL is None:
        import triton
        import triton.language as tl

        # Triton compiles this body itself: no annotations (it cannot resolve typing's names inside a
        # kernel: the green arms were skipped on an H200 when they were added) and no locals holding strings.
        @triton.jit
        def smid(out_ptr, ns):  # type: ignore[no-untyped-def]
            start = tl.inline_asm_elementwise(
                "mov.u64 $0, %globaltimer;", "=l", [], dtype=tl.int64, is_pure=False, pack=1
            )
            now = start
            while now - start < ns:
                now = tl.inline_asm_elementwise(
                    "mov.u64 $0, %globaltimer;", "=l", [], dtype=tl.int64, is_pure=False, pack=1
                )
            sm = tl.inline_asm_elementwise("mov.u32 $0, %smid;", "=r", [], dtype=tl.int32, is_pure=False, pack=1)
            tl.store(out_ptr + tl.program_id(0), sm)

        _SMID_KERNEL = smid
    return _SMID_KERNEL


def sms_used(torch: Any, tenant: Tenant, total: int) -> List[int]:
    """The SMs a tenant's work runs on: a kernel of 4 spinning blocks per SM of the GPU, launched on
    its stream in its context, eagerly and replayed from a CUDA graph (as graph workloads run)."""
    try:
        kernel = smid_kernel()
    except ImportError as exc:
        raise Unsupported(f"checking which SMs each green context runs on needs Triton: {exc}") from exc
    blocks, seen = 4 * total, set()
    try:
        with tenant.entered(torch):
            out = torch.full((blocks,), -1, dtype=torch.int32, device="cuda")
            launch: Callable[[], object] = lambda: kernel[(blocks,)](out, SMID_SPIN_NS, num_warps=1)  # noqa: E731
            launch()
            tenant.stream.synchronize()
            seen |= set(out.tolist())
            replay = graph_replay(torch, launch, warmups=1)
            out.fill_(-1)
            replay()
            tenant.stream.synchronize()
            seen |= set(out.tolist())
    except Exception as exc:  # e.g. a kernel loaded in one context launched from another: say so, do not guess
        raise Unsupported(
            f"the %smid check could not run in tenant {tenant.index}'s green context: {type(exc).__name__}: {exc}"
        ) from exc
    return sorted(seen - {-1})


def check_disjoint(tenants: Sequence[Tenant], used: Sequence[List[int]]) -> None:
    """Unsupported unless each tenant ran only on as many SMs as its group has, none shared."""
    for t, sms in zip(tenants, used):
        if len(sms) > t.green.sms:
            raise Unsupported(
                f"tenant {t.index}'s kernels ran on {len(sms)} SMs, but its green context has "
                f"{t.green.sms}: the green context did not confine its work"
            )
    owner: Dict[int, int] = {}
    for t, sms in zip(tenants, used):
        for sm in sms:
            if sm in owner:
                shared: List[int] = sorted(set(used[owner[sm]]) & set(sms))
                raise Unsupported(
                    f"green contexts overlap: tenants {owner[sm]} and {t.index} both ran on "
                    f"SMs {ranges(shared)}: the split did not give them SMs of their own"
                )
            owner[sm] = t.index


def ranges(ids: Sequence[int]) -> str:
    """SM ids as text, runs collapsed: 0-15,32."""
    parts: List[str] = []
    start: Optional[int] = None
    for i, sm in enumerate(ids):
        if start is None:
            start = sm
        if i + 1 == len(ids) or ids[i + 1] != sm + 1:
            parts.append(str(start) if start == sm else f"{start}-{sm}")
            start = None
    return ",".join(parts)
