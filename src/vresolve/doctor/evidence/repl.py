"""Python asked about the stack and its answers: ``>>> torch.__version__`` then ``'2.1.2+cu118'``, or a block of
``print(torch.__version__)`` / ``print(torch.version.cuda)`` lines and, further down, their output in order.

Input::

    >>> import torch
    >>> torch.__version__
    '2.1.2+cu118'
    print(torch.__version__)
    print(torch.version.cuda)
    ```
    2.1.0.dev20230726+cu121
    12.1
"""

from __future__ import annotations

import re
from collections import deque

from ...values import Capability
from .collect import Collector
from .lines import Line
from .model import MESSAGE, Dist, Gpu
from .tokens import version_token

__all__ = ["ReplReader"]

HOW = "python"
#: how many lines an asked expression waits for its answer
_PATIENCE = 12

_EXPRESSIONS = ("torch.__version__", "torch.version.cuda", "torch.cuda.is_available()", "vllm.__version__",
                "torch.cuda.get_device_name", "torch.cuda.get_arch_list()", "torch.cuda.get_device_capability",
                "sys.version")
# expr = value, expr: value (what users copy from a REPL into a sentence or a list)
_INLINE_RE = re.compile(r"(?P<expr>torch\.__version__|torch\.version\.cuda|torch\.cuda\.is_available\(\)|vllm\.__version__)"
                        r"['\"`]?\s*(?:==?|:|->|→|\breturns?\b)\s*['\"`]?(?P<value>[\w.+]+)")
# python -c "import torch; print(torch.__version__, torch.cuda.is_available())"
_COMMAND_PRINT_RE = re.compile(r"print\(([^()]*(?:\(\d*\)[^()]*)*)\)")
_ASK_RE = re.compile(r"^\s*(?:>>>\s*)?(?:print\((?P<printed>.*)\)|(?P<bare>[\w.]+(?:\(\d*\))?))\s*(?:#.*)?$")
_IPYTHON_RE = re.compile(r"^(?:In|Out)\s?\[\d+\]:\s*")
_VALUE = r"(?:'[^']*'|\"[^\"]*\"|True|False|None|\d[\w.+]*)"
_ANSWER_RE = re.compile(rf"^\s*(?:{_VALUE}(?:\s+{_VALUE})*|\[[^\]]*\]|\(\d+,\s*\d+\))\s*$")


def _expression(text: str) -> str | None:
    text = text.strip()
    return next((e for e in _EXPRESSIONS if text == e or text.startswith(e + "(")), None)


class ReplReader:
    """Expressions asked, and the answers that follow them."""

    def __init__(self) -> None:
        self._asked: deque[str] = deque(maxlen=16)
        self._at = 0

    def feed(self, line: Line, out: Collector) -> bool:
        body = line.body
        if body.startswith(("In [", "Out[")):  # IPython's prompts: "In [2]: torch.cuda.is_available()", "Out[2]: False"
            body = _IPYTHON_RE.sub("", body)
        if "torch" in body or "vllm" in body or "sys." in body:
            if self._ask(body, line):
                return True
            if self._inline(body, line, out):
                return True
        if self._asked and line.no - self._at <= _PATIENCE and self._answerable(body):
            return self._answer(body, line, out)
        return False

    def _answerable(self, body: str) -> bool:
        if self._asked[0] == "torch.cuda.get_device_name":
            return bool(body.strip()) and not body.lstrip().startswith((">>>", "```", "$", "#"))
        return bool(_ANSWER_RE.match(body))

    @staticmethod
    def _inline(body: str, line: Line, out: Collector) -> bool:
        found = False
        for m in _INLINE_RE.finditer(body):
            _record(m["expr"], m["value"], line, out)
            found = True
        return found

    def _ask(self, body: str, line: Line) -> bool:
        if " -c " in body and "print(" in body:
            return self._ask_command(body, line)
        m = _ASK_RE.match(body)
        if not m:
            return False
        return self._asking(m["printed"].split(",") if m["printed"] is not None else [m["bare"]], line)

    def _ask_command(self, body: str, line: Line) -> bool:
        """``python -c "import torch; print(torch.__version__); print(torch.version.cuda)"``: one answer line per
        print, its words in order."""
        asked = False
        for printed in _COMMAND_PRINT_RE.findall(body):
            asked = self._asking(printed.split(","), line) or asked
        return asked

    def _asking(self, parts: list[str], line: Line) -> bool:
        asked = [e for e in (_expression(p) for p in parts) if e]
        if len(asked) != len(parts):
            return False
        self._asked.extend(asked)
        self._at = line.no
        return True

    def _answer(self, body: str, line: Line, out: Collector) -> bool:
        whole = self._asked[0] == "torch.cuda.get_device_name" or body.lstrip().startswith(("[", "("))
        words = body.split() if len(self._asked) > 1 and not whole else [body]
        for word in words:
            if not self._asked:
                break
            _record(self._asked.popleft(), word.strip().strip("'\""), line, out)
        self._at = line.no
        return True


def _record(expression: str, answer: str, line: Line, out: Collector) -> None:
    version = version_token(answer)
    if expression == "torch.__version__" and version:
        out.add_dist(Dist(name="torch", version=version), line, MESSAGE, HOW)
    elif expression == "vllm.__version__" and version:
        out.add_dist(Dist(name="vllm", version=version), line, MESSAGE, HOW)
    elif expression == "torch.version.cuda" and (answer == "None" or version):
        out.add("torch_cuda", None if answer == "None" else version, line, MESSAGE, HOW)
    elif expression == "torch.cuda.is_available()" and answer in ("True", "False"):
        out.add("cuda_available", answer == "True", line, MESSAGE, HOW)
    elif expression == "torch.cuda.get_arch_list()":
        out.add("torch_arch_list", tuple(re.findall(r"(?:sm|compute)_\w+", answer)), line, MESSAGE, HOW)
    elif expression == "torch.cuda.get_device_capability" and (m := re.match(r"\((\d+),\s*(\d+)\)", answer)):
        out.add("gpus", Gpu(compute_capability=Capability(int(m[1]), int(m[2]))), line, MESSAGE, HOW)
    elif expression == "torch.cuda.get_device_name" and answer and any(c.isalnum() for c in answer):  # (not "...")
        out.add("gpus", Gpu(name=answer), line, MESSAGE, HOW)
    elif expression == "sys.version" and version:
        out.add("python", version, line, MESSAGE, HOW)
