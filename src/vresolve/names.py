"""The names vresolve's layers share, each defined once: installers, driver policies, shells, matrix
tables, install kinds, where a build comes from, and the kinds of a rejection (a cause). No imports
beyond typing, so that the command line's parser costs nothing to build.
"""

from __future__ import annotations

from typing import Literal

Installer = Literal["uv", "pip", "conda"]
INSTALLERS: tuple[Installer, ...] = ("uv", "pip", "conda")

Policy = Literal["minor-compat", "toolkit"]
POLICIES: tuple[Policy, ...] = ("minor-compat", "toolkit")

Shell = Literal["bash", "fish", "dotenv"]
SHELLS: tuple[Shell, ...] = ("bash", "fish", "dotenv")

SourceBuildMode = Literal["auto", "never", "always"]
SOURCE_BUILD_MODES: tuple[SourceBuildMode, ...] = ("auto", "never", "always")

#: the tables ``vresolve matrix show`` prints
TABLES = ("cuda", "gpus", "torch", "vllm", "issues")

InstallKind = Literal["wheel", "source"]

#: where a vLLM build comes from
Where = Literal["pypi", "vllm-index", "release-assets"]

#: why a build was turned down; a failed resolution's causes carry one ("other" for the rest)
RejectionKind = Literal["driver", "gpu", "python", "platform", "glibc"]
REJECTION_KINDS: tuple[RejectionKind, ...] = ("driver", "gpu", "python", "platform", "glibc")
