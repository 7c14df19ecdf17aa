"""CUDA graphs for a workload's step: capture on the right stream, and a step that replays one per lane."""

from __future__ import annotations

from typing import Any, Callable, Dict

from .shapes import Step, Variant


def graph_replay(torch: Any, fn: Callable[[], object], warmups: int = 3) -> Callable[[], object]:
    """Captures fn() in a CUDA graph and returns its replay. The warm-up runs (cuBLAS handles,
    allocator pools) happen off the default stream, outside the capture, as PyTorch requires: on a
    side stream when the default stream is current, else on the current stream, which the capture
    uses too (a tenant's stream, which in the green mode belongs to its green context: a graph
    captured on PyTorch's own side stream would run on every SM)."""
    current = torch.cuda.current_stream()
    own = current != torch.cuda.default_stream()
    side = current if own else torch.cuda.Stream()
    if not own:
        side.wait_stream(current)
    with torch.cuda.stream(side):
        for _ in range(warmups):
            fn()
    if not own:
        current.wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph, stream=side if own else None):
        fn()
    replay: Callable[[], object] = graph.replay
    return replay


def forward_step(torch: Any, forward: Callable[[], object], graph: bool) -> Step:
    """A step(i, lane, variant) that runs forward() eagerly, or replays one captured CUDA graph of
    it per stream lane (captured on first use)."""
    replays: Dict[int, Callable[[], object]] = {}

    def step(i: int, lane: int, variant: Variant) -> None:
        if not graph:
            forward()
            return
        if lane not in replays:
            replays[lane] = graph_replay(torch, forward)
        replays[lane]()

    return step
