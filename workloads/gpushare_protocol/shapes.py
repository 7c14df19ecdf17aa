"""The shapes the package's modules pass each other."""

from __future__ import annotations

from typing import Any, Callable, Dict

Variant = Dict[str, Any]
"""A run command's variant: "streams", "pinned", "whole"."""

Step = Callable[[int, int, Variant], object]
"""step(i, lane, variant): enqueues one iteration (one request) on the current stream; never synchronizes."""

Command = Dict[str, Any]
"""One line the harness sent, parsed."""
