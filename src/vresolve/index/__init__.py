"""Reading a package index: the only package (with ``refresh``) that touches the network.

- :func:`configured_index_url` finds the index the user's installers use, reading their
  configuration as data (flag, then ``UV_DEFAULT_INDEX`` / ``UV_INDEX_URL`` / ``PIP_INDEX_URL``,
  then uv's and pip's configuration files, then uv's own default as its help names it); no
  installer is imported. vresolve never hard-codes a registry.
- :meth:`IndexClient.project_files` lists a project's files through the simple API,
  PEP 691 JSON first and the PEP 503 HTML page as the fallback; relative URLs are resolved
  against the response's own URL.
- :meth:`IndexClient.read_metadata` returns a wheel's ``METADATA``: the PEP 658/714
  ``.metadata`` file when the index offers one (checked against the hash the index announces),
  else the ``*.dist-info/METADATA`` member read out of the remote zip with HTTP range requests
  (the end of the file, the central directory, the one member). A wheel is never downloaded whole.

What the index answers is data from outside, checked where it enters:

- every answer is read in a stream with a size budget, and every request has a deadline
  (:class:`Limits`): when it passes, the request's sockets are shut down, so an answer that
  drips (headers or body) cannot hold it. Over either is a
  :class:`~vresolve.errors.PackageIndexError` naming the URL and the limit. A zip member is
  inflated with a bounded output, never all at once; the body of an answer that is retried or
  redirected is never read;
- a listed file whose name is not valid text, is too long, is listed twice, or is a wheel of
  another project, or whose URL or hashes are malformed, is skipped and reported
  (:attr:`IndexClient.skipped`, and a warning); a listing that is not PEP 691 JSON, a wheel that is
  not a readable zip, an inconsistent range answer: each is a PackageIndexError, never a traceback;
- retries are urllib3's ``Retry`` on the session's adapters (5xx and 429, connection errors and
  read timeouts, with backoff; a ``Retry-After`` is honoured, up to ``_RETRY_AFTER_MAX``)."""

from __future__ import annotations

from .client import IndexClient
from .config import configured_index_url, index_for_uv, redacted, simple_to_project_url
from .listing import IndexFile
from .transport import Limits

__all__ = ["IndexFile", "IndexClient", "Limits", "configured_index_url", "index_for_uv", "redacted",
           "simple_to_project_url"]
