"""Which index the user's installers use: the flag, then PIP_INDEX_URL / UV_DEFAULT_INDEX / UV_INDEX_URL, then pip's and uv's configuration files, then pip's own default. vresolve never hard-codes a registry."""

from __future__ import annotations

import configparser
import os
import sys
from pathlib import Path
from urllib.parse import urljoin

from ..errors import UsageError


def _pip_default_index() -> str:
    try:  # pip's own default, so that no registry is written here
        from pip._internal.models.index import PyPI  # type: ignore[import-not-found]
    except ImportError as e:  # pragma: no cover - pip is present in every venv we support
        raise UsageError("no package index configured: pass --index-url URL") from e
    return str(PyPI.simple_url)


def _pip_config_files() -> list[Path]:
    if os.environ.get("PIP_CONFIG_FILE"):
        return [Path(os.environ["PIP_CONFIG_FILE"])]
    xdg = os.environ.get("XDG_CONFIG_DIRS", "/etc/xdg").split(":")
    home = Path.home()
    files = [Path("/etc/pip.conf"), *(Path(d) / "pip" / "pip.conf" for d in xdg),
             home / ".pip" / "pip.conf", home / ".config" / "pip" / "pip.conf"]
    if os.environ.get("VIRTUAL_ENV"):
        files.append(Path(os.environ["VIRTUAL_ENV"]) / "pip.conf")
    return files


def _uv_config_files() -> list[Path]:
    xdg = os.environ.get("XDG_CONFIG_HOME") or str(Path.home() / ".config")
    return [Path("/etc/uv/uv.toml"), Path(xdg) / "uv" / "uv.toml"]


def configured_index_url(flag: str | None = None) -> tuple[str, str]:
    """The simple-API URL to read, and where it came from (for messages).

    Order: the flag; ``PIP_INDEX_URL``; ``UV_DEFAULT_INDEX`` / ``UV_INDEX_URL``; the last pip
    configuration file that sets ``index-url`` (the later files override the earlier, as in
    pip); uv's ``uv.toml`` (``index-url``, or the ``[[index]]`` marked ``default = true``);
    pip's built-in default.
    """
    if flag:
        return flag, "--index-url"
    for var in ("PIP_INDEX_URL", "UV_DEFAULT_INDEX", "UV_INDEX_URL"):
        if os.environ.get(var):
            return os.environ[var], var
    return _pip_configured() or _uv_configured() or (_pip_default_index(), "pip's default")


def _pip_configured() -> tuple[str, str] | None:
    """The ``index-url`` of the last pip configuration file that sets one (later files override earlier)."""
    found: tuple[str, str] | None = None
    for f in _pip_config_files():
        cp = configparser.ConfigParser()
        try:
            cp.read(f)
        except configparser.Error:
            continue
        for section in ("global", "install"):
            if cp.has_option(section, "index-url"):
                found = (cp.get(section, "index-url").strip(), str(f))
    return found


def _uv_configured() -> tuple[str, str] | None:
    """uv.toml's ``index-url``, or its ``[[index]]`` marked ``default = true`` (read on Python 3.11+)."""
    if sys.version_info >= (3, 11):
        import tomllib

        for f in _uv_config_files():
            try:
                doc = tomllib.loads(f.read_text())
            except (OSError, ValueError):
                continue
            if isinstance(doc.get("index-url"), str):
                return doc["index-url"], str(f)
            for idx in doc.get("index", []) or []:
                if isinstance(idx, dict) and idx.get("default") and isinstance(idx.get("url"), str):
                    return idx["url"], str(f)
    return None


def simple_to_project_url(simple_url: str, name: str) -> str:
    return urljoin(simple_url.rstrip("/") + "/", f"{name}/")
