"""The text of a lock's files: ``requirements.txt``, ``environment.yml``, ``env.sh`` and the comment
header every one of them (and ``pylock.toml``) starts with. One quoting layer: comments through
:func:`.shell.comment`, YAML through PyYAML's emitter, exports through :func:`.shell.exports_text`,
and requirement lines only from names, versions, hashes and URLs that were checked to be plain.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from typing import Any

from ..names import index_label
from .shell import comment, exports_text

HEADER_KEY = "vresolve-lock:"

# what a requirement line may hold: a name, a version, a hash, a URL; nothing that pip or uv would
# read as another option, a second line or a comment
_NAME_RE = re.compile(r"[A-Za-z0-9](?:[A-Za-z0-9._-]*[A-Za-z0-9])?")
_VERSION_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9.+!_-]*")
_HASH_RE = re.compile(r"[a-z0-9]+:[0-9a-f]+")
_URL_RE = re.compile(r"(?:https?|file)://[^\s\"'#\\]+")


def header_text(h: Mapping[str, Any], marker: str = "#") -> str:
    """The comment lines a lock file starts with; the last holds the header as JSON (``doctor --lock``)."""
    s, m = h["stack"], h["machine"]
    gpus = ", ".join(f"{n} ({cc})" for n, cc in m["gpus"].items()) or "no GPU (CPU backend)"
    lines = [
        f"vLLM {s['vllm']} ({s['vllm_variant']}, {index_label(s['vllm_source'])}) with torch {s['torch']}+"
        f"{s['variant']} ({index_label(s['torch_source'])})",
        f"for: {gpus}; Python {m['python']}; {m['platform']}" + (f", glibc >= {m['glibc']}" if m.get("glibc") else ""),
        f"needs: NVIDIA driver >= {m['min_driver']} ({m['driver_policy']} policy, CUDA {m['cuda']})"
        if m["min_driver"] else "needs: no NVIDIA driver",
        f"made by vresolve {h['vresolve']} from matrix revision {h['matrix_revision']}; "
        "check it against a machine with: vresolve doctor --lock FILE",
        f"{HEADER_KEY} {json.dumps(h, sort_keys=True, separators=(',', ':'))}",  # JSON escapes every control
    ]
    return "".join(comment(line, marker) + "\n" for line in lines)


def _plain(value: str, pattern: re.Pattern[str], what: str) -> str:
    if not pattern.fullmatch(value):
        raise ValueError(f"{what} {value!r} is not one a requirements file can hold")
    return value


def _pin(name: str, version: str, hashes: Sequence[str]) -> list[str]:
    return [f"{_plain(name, _NAME_RE, 'package name')}=={_plain(version, _VERSION_RE, 'version')}",
            *(f"--hash={_plain(h, _HASH_RE, 'hash')}" for h in hashes)]


def requirements_text(header: Mapping[str, Any], index_urls: Sequence[str],
                      pins: Sequence[tuple[str, str, Sequence[str]]]) -> str:
    """``requirements.txt``: the indexes, then each package ``==`` its version with every hash.
    ValueError for a name, version, hash or URL that is not plain (the index's answer is hostile)."""
    out = [header_text(header), "# install: pip install --require-hashes -r requirements.txt (into a fresh environment)\n"]
    out += [f"--extra-index-url {_plain(u, _URL_RE, 'index URL')}\n" for u in index_urls]
    out += [" \\\n    ".join(_pin(*p)) + "\n" for p in pins]
    return "".join(out)


def environment_yml(header: Mapping[str, Any], name: str, python: str, index_urls: Sequence[str],
                    pins: Sequence[tuple[str, str, Sequence[str]]]) -> str:
    """``environment.yml``: conda's Python and pip, the same pins through pip (PyYAML writes the YAML)."""
    import yaml

    class _Dumper(yaml.SafeDumper):  # conda's own layout: a list indented under its key
        def increase_indent(self, flow: bool = False, indentless: bool = False) -> None:
            super().increase_indent(flow, False)

    pip = [f"--extra-index-url {_plain(u, _URL_RE, 'index URL')}" for u in index_urls]
    pip += [" ".join(_pin(*p)) for p in pins]
    doc = {"name": name, "channels": ["conda-forge"], "dependencies": [f"python={python}", "pip", {"pip": pip}]}
    body = yaml.dump(doc, Dumper=_Dumper, sort_keys=False, default_flow_style=False, width=2**31 - 1,
                     allow_unicode=False)
    return header_text(header) + body


def env_sh(header: Mapping[str, Any], env: Sequence[tuple[str, str]]) -> str:
    """``env.sh``: the plan's exports for bash."""
    return header_text(header) + exports_text(env, "bash")
