"""The names vresolve's layers share, each defined once: installers, driver policies, shells, matrix
tables, install kinds, where a build comes from, and the kinds of a rejection (a cause). No imports
beyond typing, so that the command line's parser costs nothing to build.
"""

from __future__ import annotations

TYPE_CHECKING = False  # typing is not imported at run time: the parser's names cost nothing
if TYPE_CHECKING:
    from typing import Literal

    Installer = Literal["uv", "pip", "conda"]
    Policy = Literal["minor-compat", "toolkit"]
    Shell = Literal["bash", "fish", "dotenv"]
    SourceBuildMode = Literal["auto", "never", "always"]
    InstallKind = Literal["wheel", "source"]
    Where = Literal["pypi", "vllm-index", "release-assets", "jetson-index"]  # where a vLLM build comes from
    RejectionKind = Literal["driver", "gpu", "python", "platform", "glibc"]

INSTALLERS: tuple[Installer, ...] = ("uv", "pip", "conda")
POLICIES: tuple[Policy, ...] = ("minor-compat", "toolkit")
SHELLS: tuple[Shell, ...] = ("bash", "fish", "dotenv")
SOURCE_BUILD_MODES: tuple[SourceBuildMode, ...] = ("auto", "never", "always")
#: the tables ``vresolve matrix show`` prints
TABLES = ("cuda", "gpus", "torch", "vllm", "issues", "jetson")
#: why a build was turned down; a failed resolution's causes carry one ("other" for the rest)
REJECTION_KINDS: tuple[RejectionKind, ...] = ("driver", "gpu", "python", "platform", "glibc")
#: where a wheel comes from (a vLLM build's ``where``, a stack's ``vllm_source``/``torch_source``), as people name it
INDEX_LABELS = {"pypi": "PyPI", "vllm-index": "vLLM's index", "release-assets": "GitHub release assets",
                "pytorch": "PyTorch index", "pytorch-index": "PyTorch index", "kept": "kept"}


def index_label(source: str) -> str:
    """``pypi`` -> ``PyPI``; a source with a path (``jetson-index jp6/cu126``) -> 'Jetson index jp6/cu126'."""
    head, _, rest = source.partition(" ")
    if head == "jetson-index":
        return f"Jetson index {rest}".strip()
    return INDEX_LABELS.get(source, source)
