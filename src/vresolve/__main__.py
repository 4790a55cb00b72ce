"""``python -m vresolve``."""

from __future__ import annotations

from ._entry import main

raise SystemExit(main())
