"""vresolve: a working NVIDIA driver / CUDA / PyTorch / vLLM stack for a machine, and why the last one broke."""

from __future__ import annotations

__version__ = "0.1.0"

__all__ = ["__version__"]
