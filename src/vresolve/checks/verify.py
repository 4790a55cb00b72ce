"""The plan's checks, as programs run by the environment's own Python: standard library only, so that the
checked environment needs no vresolve. One program per check; run one by this file's path::

    .venv-vllm/bin/python /path/to/vresolve/checks/verify.py extensions vllm._C vllm._moe_C
    .venv-vllm/bin/python /path/to/vresolve/checks/verify.py arch-list

Each prints one line that the plan's check expects (``vresolve plan --json``: ``verify[].expect``). The plan's
``python -c`` commands are these same programs (:func:`program` writes both), so a plan, its ``--json``, its
recipes and ``vresolve apply`` run exactly what this file runs. Kept to Python 3.8 syntax: the environment's
Python may be older than vresolve's.
"""

from __future__ import annotations

import json
import sys

#: The file name of a compiled Python extension module: ``_C.abi3.so``, ``_m.cpython-312-x86_64-linux-gnu.so``
#: (group 1: the module's last name). Shared by refresh (a wheel's zip directory), the plan's verify step
#: and doctor's probe (an installed package's directory).
EXTENSION_FILE_PATTERN = r"^([A-Za-z_][A-Za-z0-9_]*)(?:\.abi3|\.cpython-[A-Za-z0-9_-]+)?\.so$"

#: Python source run inside the environment being checked (the plan's verify step, doctor's probe):
#: ``find_extensions(package_dir)`` -> {dotted module name: file} of the compiled modules below it;
#: ``load_extension(name, path)`` -> None, or the chain of errors ("ImportError: ... <- ...") of loading
#: that file as the module, without running its package's ``__init__`` (which may hide the real error).
EXTENSION_HELPERS = r"""
def find_extensions(root):
    import importlib.machinery, os, re
    pattern = re.compile(@PATTERN@)
    # a wheel may hold one copy per CPython (_C.cpython-312-x86_64-linux-gnu.so): only this one's loads here
    mine = [x for x in importlib.machinery.EXTENSION_SUFFIXES if x.startswith(".cpython-")]
    found = {}
    for d, dirs, files in os.walk(root):
        dirs[:] = [x for x in dirs if x != "__pycache__"]
        for f in files:
            m = pattern.match(f)
            if m and (".cpython-" not in f or any(f.endswith(x) for x in mine)):
                name = os.path.relpath(os.path.join(d, m.group(1)), os.path.dirname(root)).replace(os.sep, ".")
                found.setdefault(name, os.path.join(d, f))
    return found
def load_extension(name, path):
    import importlib.machinery, importlib.util
    try:
        loader = importlib.machinery.ExtensionFileLoader(name, path)
        importlib.util.module_from_spec(importlib.util.spec_from_file_location(name, path, loader=loader))
        return None
    except Exception as e:
        chain, x = [], e
        while x is not None and len(chain) < 8:
            chain.append("%s: %s" % (type(x).__name__, x))
            x = x.__cause__ or x.__context__
        return " <- ".join(chain)
""".replace("@PATTERN@", repr(EXTENSION_FILE_PATTERN))

# Imports every compiled extension module of the installed vLLM package (found in its directory)
# and checks that the ones the wheel ships (read off its zip directory) are all there. On a machine
# without the NVIDIA driver, an extension whose only fault is the missing libcuda.so.1 counts as
# present, and the output says so.
_EXTENSIONS = r"""
import sys
expected = @EXPECTED@
import torch, vllm
found = find_extensions(os.path.dirname(vllm.__file__))
missing = sorted(set(expected) - set(found))
bad, driverless = [], []
for name, path in sorted(found.items()):
    error = None if name in sys.modules else load_extension(name, path)
    if error:
        (driverless if "libcuda.so.1" in error else bad).append((name, error))
for name in missing:
    print("MISSING %s: the wheel ships it, this install lacks it" % name)
for name, text in bad:
    print("FAILS %s: %s" % (name, text[:400]))
for name, _ in driverless:
    print("needs libcuda.so.1 (no NVIDIA driver on this machine), counted as present: %s" % name)
ok = bool(found) and not missing and not bad
print("vllm %s: compiled extensions %s (%d)" % (vllm.__version__.split("+")[0], "load" if ok else "DO NOT ALL LOAD",
                                                len(found)))
"""

# SASS of the GPU's major with a minor not above the GPU's, or PTX not above its capability
_COVERAGE = (
    "import torch\n"
    "archs = torch.cuda.get_arch_list()\n"
    "sm = [int(a[3:]) for a in archs if a.startswith(\"sm_\") and a[3:].isdigit()]\n"
    "ptx = [int(a[8:]) for a in archs if a.startswith(\"compute_\") and a[8:].isdigit()]\n"
    "bad = []\n"
    "for i in range(torch.cuda.device_count()):\n"
    "    ma, mi = torch.cuda.get_device_capability(i)\n"
    "    if not any(s // 10 == ma and s % 10 <= mi for s in sm) and not any(p <= ma * 10 + mi for p in ptx):\n"
    "        bad.append(\"%d.%d\" % (ma, mi))\n"
    "print(\"arch list covers every GPU\" if not bad else \"not covered: \" + \" \".join(bad))\n"
)

#: name -> (what it checks, whether it takes arguments, its program)
PROGRAMS = {
    "extensions": ("vLLM's compiled extension modules load; ARGS: the modules its wheel ships", True,
                   "import os" + EXTENSION_HELPERS + _EXTENSIONS),
    "torch-cuda": ("the CUDA torch was built with", False, 'import torch; print("torch CUDA", torch.version.cuda)'),
    "torch-version": ("torch's version", False, 'import torch; print("torch", torch.__version__)'),
    "torch-version-cuda": ("torch's version and CUDA", False,
                           'import torch; print("torch", torch.__version__, "CUDA", torch.version.cuda)'),
    "vllm-version": ("vLLM's version", False, 'import vllm; print("vllm", vllm.__version__)'),
    "gpus": ("torch sees the GPUs: whether CUDA is available, and how many", False,
             'import torch; print("cuda available", torch.cuda.is_available(), torch.cuda.device_count())'),
    "arch-list": ("torch's arch list covers every GPU", False, _COVERAGE),
}


def program(name: str, args: tuple[str, ...] | list[str] = ()) -> str:
    """The Python source of check ``name`` with ``args`` (``python -c`` runs it as this file does);
    KeyError for a name that is none, ValueError for arguments to a check that takes none."""
    _, takes, source = PROGRAMS[name]
    if not takes:
        if args:
            raise ValueError(f"check {name} takes no arguments")
        return source
    return source.replace("@EXPECTED@", json.dumps(sorted(args)))


def main(argv: list[str]) -> int:
    """``verify.py CHECK [ARGS...]``: run one check program here; ``verify.py --list``: the checks."""
    if not argv or argv[0] in ("-h", "--help", "--list"):
        print("usage: PYTHON verify.py CHECK [ARGS...]  (the checks of vresolve's plans)")
        for name, (what, _, _) in PROGRAMS.items():
            print(f"  {name:19} {what}")
        return 0 if argv else 2
    try:
        source = program(argv[0], argv[1:])
    except KeyError:
        print(f"verify.py: no check {argv[0]!r} (one of: {', '.join(PROGRAMS)})", file=sys.stderr)
        return 2
    except ValueError as e:
        print(f"verify.py: {e}", file=sys.stderr)
        return 2
    try:
        exec(compile(source, f"<vresolve check {argv[0]}>", "exec"), {"__name__": "__main__"})
    except ImportError as e:  # the environment lacks what the check imports: one line, not a traceback
        print(f"check {argv[0]}: {type(e).__name__}: {e} (in the environment of {sys.executable})")
        return 1
    return 0


if __name__ == "__main__":
    # run by path: this file's directory is sys.path[0]; nothing in it is for the checked environment's imports
    import os

    if sys.path and os.path.abspath(sys.path[0] or ".") == os.path.dirname(os.path.abspath(__file__)):
        del sys.path[0]
    sys.exit(main(sys.argv[1:]))
