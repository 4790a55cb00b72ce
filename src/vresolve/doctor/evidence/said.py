"""A failure the user says in their own words, on a line no report reader took and no program wrote (a prose line):
that something they need cannot be installed, used or run, or that it runs on the CPU instead of the GPU.

Input (kind ``said``)::

    I can't run this, because i can't install vllm
    in window10, same environment, latest YOLOv8 can't use GPU for training
    torch.cuda.is_available() returns False on my RTX 3090
    # 0.8.13 install vllm in cuda env, but install torch with cpu

Not read: a question or a wish without a negation ("how do I use the GPU?"), a failure said of something that is not
the GPU stack ("I can't find the docs"), a failure said to be gone ("now it works").
"""

from __future__ import annotations

import re

from msgspec.structs import replace

from .collect import Collector
from .lines import Line
from .model import MESSAGE, Evidence
from .signals import CONTEXT_SIGNALS

__all__ = ["SaidReader", "retype_said"]

#: what the failure is said of: the GPU stack, a program of it, or its install
_OBJECT = (r"(?:GPUs?|CUDA|cuda|NVIDIA|nvidia|vllm|vLLM|torch|pytorch|PyTorch|the driver|tensorflow|TensorFlow|jax|flash[-_]attn"
           r"|xformers|bitsandbytes|triton|sglang|onnxruntime|llama\.cpp|ollama|deepspeed)")
#: the GPU itself (what a program is said not to see or use)
_GPU = r"(?:GPUs?|CUDA|cuda|NVIDIA|nvidia|the driver|graphics card)"
_NEGATION = (r"\b(?:can(?:'|’)?t|cannot|can not|could(?:n(?:'|’)?t| not)|unable to|fail(?:s|ed)? to|does(?:n(?:'|’)?t| not)"
             r"|did(?:n(?:'|’)?t| not)|won(?:'|’)?t|will not)\s+(?:be able to\s+)?")
#: the user's word that they got an error, whatever it is of (kind ``said-error``): a pointer to a failure, dropped where
#: the paste shows a failure of its own (:func:`retype_said`)
_GOT_ERROR_RE = re.compile(
    r"\b(?:I|we)(?:'m|'ve| am| have| had| was| keep| still)?\s+(?:got|get|getting|encounter(?:ed|ing)?|hit|hitting"
    r"|fac(?:e|ed|ing)|receiv(?:e|ed|ing)|ran into|run into|running into)\s+(?:the following |this |an? |the same "
    r"|following |these |some |another )?(?:\w+ ){0,2}?(?:error|errors|exception|traceback|crash)\b"
    # in Chinese: "报错" (an error was raised), "出错" (it went wrong), an install, run, build or load that "失败" (failed)
    r"|报错|出错|(?:安装|运行|编译|加载|启动|导入|初始化|调用|训练|推理)失败", re.IGNORECASE)
_SAID_RES = (
    # a negated install, build or run of the stack ("can't install vllm", "fails to load torch"), the object within a
    # few words
    re.compile(_NEGATION + r"(?:install|run|build|load|import|start|launch)\w*\b[^.?!]{0,30}?\b" + _OBJECT + r"(?![\w-])"),
    # the GPU said not to be seen or used ("doesn't detect my GPU", "unable to use CUDA", "can't find the GPU"; not
    # "couldn't find the docs for vllm")
    re.compile(_NEGATION + r"(?:use|detect|find|see|recogni[sz]e|access|work)\w*\b[^.?!]{0,30}?\b" + _GPU + r"(?![\w-])"),
    # in Chinese: "无法检测到gpu", "无法使用显卡" (cannot detect / use the GPU)
    re.compile(r"(?:无法|不能|没法)(?:正常)?(?:使用|调用|识别|检测到?|找到|加载|运行在?)[^，。,.]{0,8}?(?:GPU|gpu|显卡|CUDA|cuda)"),
    # the GPU stack said not to be available or used ("CUDA is not available", "torch.cuda.is_available() returns
    # False", "not using the GPU")
    re.compile(r"\bis_available\(\)\s*(?:returns?|returned|gives?|is|=+)\s*:?\s*False\b"
               r"|\b(?:CUDA|GPU)\s+(?:is\s+)?(?:not|never) (?:available|detected|found|used|recogni[sz]ed)\b"
               r"|\bnot (?:using|utili[sz]ing) (?:the |my |any )?GPUs?\b", re.IGNORECASE),
    # the install, the run or the model said to have gone to the CPU ("installs torch with cpu", "runs on the CPU",
    # "loads models entirely onto CPU")
    re.compile(r"\b(?:install(?:s|ed)?|runs?|running|ran|load(?:s|ed|ing)?)\b[^.?!]{0,30}?\b(?:on|onto|with) (?:the )?CPU\b"
               r"(?! (?:and|or) GPU)", re.IGNORECASE),
)
#: words that say the failure is not (or no longer) there, or asked about, not had
_NOT_A_FAILURE_RE = re.compile(r"\b(?:now (?:it )?works|works now|solved|fixed|resolved|no longer|how (?:do|can|to)|is it possible"
                               r"|should I|want to|would like to|if you"
                               # a program said to use one GPU only: what it supports, not a broken stack
                               r"|(?:on|use|across) (?:multiple|several|more than one|many) GPUs)\b", re.IGNORECASE)
_QUOTED_RE = re.compile(r"`[^`\n]*`")
_NEEDLES = ("n't", "’t", "not", "unable", "fail", "false", "cpu", "error", "exception", "traceback", "crash", "报错",
            "出错", "失败", "无法", "不能", "没法")


class SaidReader:
    """The first line in which the user says a failure of the GPU stack (read on prose lines only)."""

    def __init__(self) -> None:
        self._seen = False
        self._got_error = False

    def feed(self, line: Line, out: Collector) -> bool:
        if self._seen:
            return False
        lower = line.lower
        if not any(needle in lower for needle in _NEEDLES) or _NOT_A_FAILURE_RE.search(line.body) \
                or lower.lstrip("#/ ").startswith("or "):  # an alternative offered ("# or run on CPU with INT8")
            return False
        words = _QUOTED_RE.sub(lambda q: " " * len(q[0]), line.body)  # (a message quoted in backticks: not their words)
        for pattern in _SAID_RES:
            if m := pattern.search(words):
                out.add("failures", "said", line, MESSAGE, "failure", m.span())
                self._seen = True
                return True
        if not self._got_error and (m := _GOT_ERROR_RE.search(words)):
            out.add("failures", "said-error", line, MESSAGE, "failure", m.span())
            self._got_error = True
        return False


def retype_said(e: Evidence) -> Evidence:
    """``e`` without the user's word that they got an error (``said-error``) where the paste shows a failure of its
    own (a failure line of another kind, an exception, a typed signal): that failure is judged instead."""
    if not any(f.value == "said-error" for f in e.failures):
        return e
    failed = any(ev.value.action in ("build-failed", "resolution-failed", "no-matching-distribution") for ev in e.installer)
    if any(f.value != "said-error" for f in e.failures) or e.exceptions or failed \
            or any(s.value.code not in CONTEXT_SIGNALS for s in e.signals):
        return replace(e, failures=tuple(f for f in e.failures if f.value != "said-error"))
    return e
