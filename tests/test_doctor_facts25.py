"""Families from the held-out misses of issue 25 now read by their facts (tests/data/heldout 516, 517, 526, 713, 720),
each with look-alikes that share its words and must not get its cause:

- a ptxas refusing PTX of a newer ISA than its own (toolkit-mismatch), its ISAs read against cuda.yaml's ``ptx_isa``;
- Triton's kernel image refused by a driver of CUDA 11 or older (ptx-toolchain-too-new), not named where the driver is
  not shown or serves CUDA 12;
- a framework's build without CUDA: JAX's CPU jaxlib, a companion built for a CUDA torch beside a CPU torch
  (cpu-only-build, the CPU torch named instead of the companion);
- setuptools' and distutils' words for no MSVC (c-compiler-missing).

The pastes are real text from the threads their sidecars cite; single lines below are real lines of the same families
(their threads in the comments).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from packaging.version import Version

from vresolve.matrix import load_matrix

from .conftest import doctor_paste

DATA = Path(__file__).parent / "data"
CORPUS, HELDOUT = DATA / "corpus", DATA / "heldout"
Capsys = pytest.CaptureFixture[str]


def _paste(tmp_path: Path, text: str, capsys: Capsys) -> tuple[int, dict]:  # type: ignore[type-arg]
    path = tmp_path / "paste.txt"
    path.write_text(text)
    return doctor_paste(path, capsys)


def _causes(doc: dict) -> list[str]:  # type: ignore[type-arg]
    return [f["cause"] for f in doc.get("findings", [])]


def _errors(doc: dict) -> list[str]:  # type: ignore[type-arg]
    return [f["cause"] for f in doc["findings"] if f["severity"] == "error"]


def _one(directory: Path, number: int) -> Path:
    return next(directory.glob(f"{number}-*.txt"))


# --- the PTX ISA table in the matrix ---

def test_the_ptx_isa_of_each_toolkit_is_nvidias_table() -> None:
    """cuda.yaml's ptx_isa, from NVIDIA's PTX ISA release notes: CUDA 11.x writes 7.x, 12.0-12.5 write 8.0-8.5, 12.6
    still 8.5 (its ptxas says so), 12.8 8.7, 12.9 8.8, 13.0 9.0; not given where unsourced."""
    m = load_matrix(Path(__file__).parents[1] / "compat_matrix")
    isa = {str(t.version): str(t.ptx_isa) for t in m.toolkits if t.ptx_isa is not None}
    assert (isa["11.2"], isa["11.3"], isa["11.8"], isa["12.0"], isa["12.5"], isa["12.6"], isa["12.8"], isa["12.9"],
            isa["13.0"]) == ("7.2", "7.3", "7.8", "8.0", "8.5", "8.5", "8.7", "8.8", "9.0")
    assert all(m.toolkit(Version(v)) is not None for v in isa) and "13.3" not in isa


# --- a ptxas older than the PTX it is given ---

@pytest.mark.parametrize(("path", "said"), [
    (_one(HELDOUT, 516), "PTX ISA 7.3 needs the ptxas of CUDA 11.3 or later; this ptxas takes PTX ISA 7.2 at most "
                         "(CUDA 11.2)"),
    # Windows: Triton wrote 8.6 (NVIDIA's table: CUDA 12.7, never released) for the system CUDA 12.6 ptxas
    (_one(CORPUS, 840), "PTX ISA 8.6 needs the ptxas of CUDA 12.8 or later; this ptxas takes PTX ISA 8.5 at most "
                        "(CUDA 12.5 or 12.6)"),
    (_one(CORPUS, 841), "PTX ISA 8.4 needs the ptxas of CUDA 12.4 or later; this ptxas takes PTX ISA 7.8 at most "
                        "(CUDA 11.8)"),
])
def test_a_ptxas_older_than_its_ptx_is_a_toolkit_mismatch(path: Path, said: str, capsys: Capsys) -> None:
    code, doc = doctor_paste(path, capsys)
    found = next(f for f in doc["findings"] if f["cause"] == "toolkit-mismatch")
    assert code == 1 and found["severity"] == "error"
    assert any(e.startswith(said) for e in found["evidence"]), found["evidence"]


@pytest.mark.parametrize("text", [
    # a healthy build's ptxas lines (vLLM's and flash-attn's verbose builds print these)
    "ptxas info    : 0 bytes gmem\nptxas info    : Compiling entry function '_Z6kernelPf' for 'sm_80'\n"
    "ptxas info    : Used 40 registers, 376 bytes cmem[0]\n",
    # nvcc refusing a GPU architecture is another family (the toolkit older than the GPU, not than the PTX)
    "nvcc fatal   : Unsupported gpu architecture 'compute_90'\n",
])
def test_other_ptxas_and_nvcc_lines_are_not_a_ptx_version_refusal(text: str, tmp_path: Path, capsys: Capsys) -> None:
    _, doc = _paste(tmp_path, text, capsys)
    assert "toolkit-mismatch" not in _causes(doc)


# --- Triton's kernel image refused by the driver ---

def test_triton_image_refused_by_a_cuda_11_driver_is_a_toolchain_too_new(capsys: Capsys) -> None:
    """517: driver 470 (CUDA 11.4) refuses Triton's kernels: the driver's CUDA is read against the toolchain's."""
    code, doc = doctor_paste(_one(HELDOUT, 517), capsys)
    found = next(f for f in doc["findings"] if f["cause"] == "ptx-toolchain-too-new")
    assert code == 1 and found["severity"] == "error"
    assert any("the driver serves CUDA 11.4 (PTX ISA 7.4 at most" in e for e in found["evidence"])


def test_triton_image_refused_without_the_driver_is_not_named(capsys: Capsys) -> None:
    """842 (triton#1323): the refused image came from a cache built on another GPU; no driver is shown, so nothing is
    named, and doctor asks for nvidia-smi and Triton's version."""
    code, doc = doctor_paste(_one(CORPUS, 842), capsys)
    assert code == 1 and _errors(doc) == [] and "ptx-toolchain-too-new" not in _causes(doc)
    assert "nvidia-smi" in doc["unclear"][0]["paste"] and "triton" in doc["unclear"][0]["paste"]


@pytest.mark.parametrize("text", [
    # predibase/lorax#237: the same error, and a host whose driver serves CUDA 12.2
    "RuntimeError: Triton Error [CUDA]: device kernel image is invalid\n"
    "| NVIDIA-SMI 535.54.03              Driver Version: 535.54.03    CUDA Version: 12.2     |\n",
    # numba's form of the same driver error (not Triton's): no JIT toolchain named, so no cause
    "numba.cuda.cudadrv.driver.CudaAPIError: [200] Call to cuModuleLoadDataEx results in CUDA_ERROR_INVALID_IMAGE\n"
    "| NVIDIA-SMI 470.182.03   Driver Version: 470.182.03   CUDA Version: 11.4     |\n",
])
def test_a_refused_image_the_driver_does_not_explain_stays_unnamed(text: str, tmp_path: Path, capsys: Capsys) -> None:
    code, doc = _paste(tmp_path, text, capsys)
    assert code == 1 and "ptx-toolchain-too-new" not in _causes(doc) and doc["unclear"]


# --- builds without CUDA: JAX ---

@pytest.mark.parametrize("path", [_one(HELDOUT, 526), _one(CORPUS, 844)])
def test_jax_saying_its_jaxlib_has_no_cuda_is_a_cpu_only_build(path: Path, capsys: Capsys) -> None:
    _, doc = doctor_paste(path, capsys)
    assert "cpu-only-build" in _causes(doc)


def test_the_jaxlib_warning_alone_is_no_error(capsys: Capsys) -> None:
    """843 (kohya-colab#133): the warning where JAX is only a dependency and the GPU is used: said, not an error."""
    code, doc = doctor_paste(_one(CORPUS, 843), capsys)
    assert code == 0 and _errors(doc) == []


@pytest.mark.parametrize("text", [
    # jax-ml/jax#29068: `uv add jax[cuda12]` installed the CUDA plugin, which then failed to initialize
    " + jax==0.6.1\n + jax-cuda12-pjrt==0.6.1\n + jax-cuda12-plugin==0.6.1\n + jaxlib==0.6.1\n"
    "ERROR:2025-05-28 18:06:26,600:jax._src.xla_bridge:444: Jax plugin configuration error: Exception when calling "
    "jax_plugins.xla_cuda12.initialize()\n"
    "An NVIDIA GPU may be present on this machine, but a CUDA-enabled jaxlib is not installed. Falling back to cpu.\n",
    # JAX's older words, which say no more than that no GPU backend came up (jax/_src/xla_bridge.py before 0.4.x)
    "WARNING:absl:No GPU/TPU found, falling back to CPU. (Set TF_CPP_MIN_LOG_LEVEL=0 and rerun for more info.)\n",
])
def test_a_failing_jax_cuda_plugin_or_an_undecided_fallback_is_not_a_cpu_jaxlib(text: str, tmp_path: Path,
                                                                               capsys: Capsys) -> None:
    _, doc = _paste(tmp_path, text, capsys)
    assert "cpu-only-build" not in _causes(doc)


def test_a_cuda_plugin_failing_then_falling_back_is_not_named(capsys: Capsys) -> None:
    """845 (mujoco_playground#137): the plugin cannot load cuSPARSE, then JAX's fallback words: cause not named."""
    code, doc = doctor_paste(_one(CORPUS, 845), capsys)
    assert code == 1 and "cpu-only-build" not in _causes(doc) and doc["unclear"]


# --- builds without CUDA: a companion built for a CUDA torch beside a CPU torch ---

@pytest.mark.parametrize("path", [_one(HELDOUT, 713), _one(CORPUS, 847), _one(CORPUS, 848)])
def test_a_cuda_companion_beside_a_cpu_torch_names_the_cpu_torch(path: Path, capsys: Capsys) -> None:
    """xFormers built for X+cuNNN beside X+cpu: the CPU torch is the cause; "install the xformers for your torch"
    (companion-mismatch) would be the wrong fix and is not said."""
    code, doc = doctor_paste(path, capsys)
    assert code == 1 and "cpu-only-build" in _errors(doc) and "companion-mismatch" not in _causes(doc)


def test_a_companion_of_another_cuda_release_is_still_a_companion_mismatch(capsys: Capsys) -> None:
    """849 (A1111#11395): built for 2.0.0+cu118, torch 1.13.1+cu117: a CUDA torch of another release."""
    _, doc = doctor_paste(_one(CORPUS, 849), capsys)
    assert "companion-mismatch" in _causes(doc) and "cpu-only-build" not in _causes(doc)


def test_the_cpu_torch_is_named_whatever_else_xformers_lists(tmp_path: Path, capsys: Capsys) -> None:
    """facebookresearch/xformers#982: built for 2.2.0+cu121 and Python 3.11.7; torch 2.2.0+cpu, Python 3.11.0 (the
    same minor): the CPU torch alone."""
    _, doc = _paste(tmp_path, "WARNING[XFORMERS]: xFormers can't load C++/CUDA extensions. xFormers was built for:\n"
                    "    PyTorch 2.2.0+cu121 with CUDA 1201 (you have 2.2.0+cpu)\n"
                    "    Python  3.11.7 (you have 3.11.0)\n", capsys)
    assert "cpu-only-build" in _errors(doc) and "companion-mismatch" not in _causes(doc)


# --- no MSVC for a Python build on Windows ---

@pytest.mark.parametrize("text", [
    # keras-retinanet#606 (held-out 720): older setuptools' words
    "error: Microsoft Visual C++ 14.0 is required. Get it with \"Microsoft Visual C++ Build Tools\": "
    "http://landinghub.visualstudio.com/visual-cpp-build-tools\n",
    # today's setuptools (setuptools/msvc.py's _augment_exception)
    "error: Microsoft Visual C++ 14.0 or greater is required. Get it with \"Microsoft C++ Build Tools\": "
    "https://visualstudio.microsoft.com/visual-cpp-build-tools/\n",
    # Python 2.7's (the same function, version 9.0), and distutils' own words (cocoapi#150)
    "error: Microsoft Visual C++ 9.0 is required (Unable to find vcvarsall.bat). Get it from http://aka.ms/vcpython27\n",
    "running build_ext\nbuilding 'pycocotools._mask' extension\nerror: Unable to find vcvarsall.bat\n",
])
def test_no_msvc_for_a_python_build_is_a_missing_compiler(text: str, tmp_path: Path, capsys: Capsys) -> None:
    code, doc = _paste(tmp_path, text, capsys)
    assert code == 1 and "c-compiler-missing" in _errors(doc)


def test_the_runtime_dlls_missing_is_not_a_missing_compiler(tmp_path: Path, capsys: Capsys) -> None:
    """torch/__init__.py's words on Windows when a DLL does not load: the Visual C++ runtime, not a compiler."""
    _, doc = _paste(tmp_path, "OSError: [WinError 126] The specified module could not be found. Error loading "
                    "\"C:\\Python310\\lib\\site-packages\\torch\\lib\\c10.dll\" or one of its dependencies.\n"
                    "Microsoft Visual C++ Redistributable is not installed, this may lead to the DLL load failure.\n",
                    capsys)
    assert "c-compiler-missing" not in _causes(doc)


# --- NCCL failures whose transport the paste does not show: not guessed, and what settles it asked for ---

@pytest.mark.parametrize("number", [718, 534])
def test_an_nccl_error_without_its_warn_lines_is_not_named(number: int, capsys: Capsys) -> None:
    """718 (pytorch#23363, two containers: their bridge network) and 534 (DeepSpeedExamples#845, the socket
    interface): the threads found network causes, but the pastes show only NCCL's summary line, which a too-small
    /dev/shm, a crashed peer or a P2P fault print alike: cause not named, and the paste asks for NCCL's own lines and
    the containers' flags."""
    code, doc = doctor_paste(_one(HELDOUT, number), capsys)
    assert code == 1 and _errors(doc) == [] and len(doc["unclear"]) == 1
    paste = doc["unclear"][0]["paste"]
    assert all(w in paste for w in ("NCCL_DEBUG=INFO", "NCCL WARN", "ip addr", "--network", "--ipc", "--shm-size"))


@pytest.mark.parametrize("number", [265, 602, 263])
def test_nccl_naming_the_failing_transport_is_still_named(number: int, capsys: Capsys) -> None:
    """Look-alikes the other way: NCCL's own lines naming the failing transport (no socket interface, an InfiniBand
    verbs call in a container, P2P's IPC handle) settle it."""
    _, doc = doctor_paste(_one(CORPUS, number), capsys)
    assert "nccl-misconfigured" in _errors(doc)


# --- a compiled extension that did not load, its reason cut off ---

def test_an_extension_that_did_not_load_asks_for_its_reason_and_versions(capsys: Capsys) -> None:
    """626 (sglang#17460): sgl-kernel's report without its "Error details" or any version: the facts do not settle
    whether it is a torch of another release (the PR's cause) or a library not found, so nothing is named and the
    paste asks for the loader's reason and the versions of torch and the package."""
    code, doc = doctor_paste(_one(HELDOUT, 626), capsys)
    assert code == 1 and _errors(doc) == []
    paste = doc["unclear"][0]["paste"]
    assert "undefined symbol" in paste and "pip list" in paste and "torch" in paste


def test_an_extension_whose_symbol_is_shown_is_still_judged(capsys: Capsys) -> None:
    """Look-alike: the same report with its undefined torch symbol (138, sglang#13948) is judged as before."""
    _, doc = doctor_paste(_one(CORPUS, 138), capsys)
    assert "torch-abi-mismatch" in _errors(doc)


# --- `doctor --log` on the machine itself: the paste's predicates read the live machine's facts ---

def _live(tmp_path: Path, text: str, monkeypatch: pytest.MonkeyPatch, capsys: Capsys, driver: str, cuda: str) -> dict:  # type: ignore[type-arg]
    import json

    from vresolve.cli import main

    path = tmp_path / "paste.txt"
    path.write_text(text)
    monkeypatch.setenv("VRESOLVE_DRIVER", driver)
    monkeypatch.setenv("VRESOLVE_CUDA_DRIVER", cuda)
    monkeypatch.setenv("VRESOLVE_GPUS", "NVIDIA A10")
    main(["doctor", "--log", str(path), "--json"])  # no --no-env: judged on this machine (its driver from detection)
    return json.loads(capsys.readouterr().out)  # type: ignore[no-any-return]


TRITON_REFUSED = "RuntimeError: Triton Error [CUDA]: device kernel image is invalid.\n"  # triton#2971's line
#: NGC's banner as a corpus excerpt has it, without the host's driver (that part cut)
NGC_BANNER = "This container was built for NVIDIA Driver Release 545.23 or later, but\n"


def test_a_pasted_error_is_judged_with_the_live_driver(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                       capsys: Capsys) -> None:
    """The paste shows only Triton's error; the machine doctor runs on has driver 470 (CUDA 11.4): named, citing it."""
    doc = _live(tmp_path, TRITON_REFUSED, monkeypatch, capsys, "470.182.03", "11.4")
    found = next(f for f in doc["findings"] if f["cause"] == "ptx-toolchain-too-new")
    assert "this machine's driver 470.182.03 (CUDA 11.4)" in found["evidence"]


def test_a_live_driver_of_cuda_12_does_not_explain_it(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                      capsys: Capsys) -> None:
    doc = _live(tmp_path, TRITON_REFUSED, monkeypatch, capsys, "535.104.05", "12.2")
    assert "ptx-toolchain-too-new" not in _causes(doc) and doc["unclear"]


def test_without_the_live_machine_the_driver_is_asked_for(capsys: Capsys, tmp_path: Path) -> None:
    _, doc = _paste(tmp_path, TRITON_REFUSED, capsys)
    assert "ptx-toolchain-too-new" not in _causes(doc) and "nvidia-smi" in doc["unclear"][0]["paste"]


@pytest.mark.parametrize(("driver", "named"), [("535.104.05", True), ("550.54.15", False)])
def test_ngcs_banner_is_read_against_the_live_driver(driver: str, named: bool, tmp_path: Path,
                                                     monkeypatch: pytest.MonkeyPatch, capsys: Capsys) -> None:
    """The banner's driver release against this machine's driver: older is driver-too-old, newer is nothing."""
    doc = _live(tmp_path, NGC_BANNER, monkeypatch, capsys, driver, "12.2")
    found = [f for f in doc["findings"] if f["cause"] == "driver-too-old"
             and f"this machine's driver {driver}" in f["evidence"]]
    assert bool(found) is named


# --- builds without CUDA: ONNX Runtime's CPU package ---

@pytest.mark.parametrize("number", [850, 851])
def test_onnxruntime_without_its_cuda_provider_is_a_cpu_only_build(number: int, capsys: Capsys) -> None:
    """850 (the CPU package required), 851 (both packages installed, the CPU one's files loaded): said as a warning
    (the program runs on, on the CPU)."""
    _, doc = doctor_paste(_one(CORPUS, number), capsys)
    found = [f for f in doc["findings"] if f["cause"] == "cpu-only-build"]
    assert found and found[0]["severity"] == "warning" and "onnxruntime-gpu" in found[0]["fix"]


@pytest.mark.parametrize("text", [
    # commaai/openpilot#31708: onnxruntime-gpu lists the provider, which cannot load its CUDA libraries
    "['TensorrtExecutionProvider', 'CUDAExecutionProvider', 'AzureExecutionProvider', 'CPUExecutionProvider']\n"
    "2024-03-05 11:40:14.847815005 [W:onnxruntime:Default, onnxruntime_pybind_state.cc:861 "
    "CreateExecutionProviderInstance] Failed to create CUDAExecutionProvider. Please reference "
    "https://onnxruntime.ai/docs/execution-providers/CUDA-ExecutionProvider.html#requirementsto ensure all dependencies "
    "are met.\n",
    # microsoft/onnxruntime#5337: the provider listed, the session on the CPU (no build fault shown)
    "- ```onnxruntime.get_available_providers()``` output is ['CPUExecutionProvider', 'CUDAExecutionProvider']\n",
])
def test_an_onnxruntime_with_its_cuda_provider_is_not_a_cpu_build(text: str, tmp_path: Path, capsys: Capsys) -> None:
    _, doc = _paste(tmp_path, text, capsys)
    assert "cpu-only-build" not in _causes(doc)


# --- a ptxas older than the GPU it is asked to assemble for ---

@pytest.mark.parametrize(("number", "said"), [(852, "sm_121 needs the ptxas of CUDA 12.9 or later"),
                                              (853, "sm_89 needs the ptxas of CUDA 11.8 or later")])
def test_a_ptxas_that_does_not_know_the_gpu_is_a_toolkit_mismatch(number: int, said: str, capsys: Capsys) -> None:
    _, doc = doctor_paste(_one(CORPUS, number), capsys)
    found = next(f for f in doc["findings"] if f["cause"] == "toolkit-mismatch")
    assert any(e.startswith(said) for e in found["evidence"]), found["evidence"]


def test_tritons_blackwell_ptxas_on_thor_reads_the_same(tmp_path: Path, capsys: Capsys) -> None:
    """triton-inference-server#8632: Triton's second ptxas (ptxas-blackwell) and Thor's sm_110a (CUDA 13's name)."""
    _, doc = _paste(tmp_path, "torch._inductor.runtime.triton_heuristics.NoTritonConfigsError: No valid triton configs. "
                    "PTXASError: PTXAS error: Internal Triton PTX codegen error\n`ptxas` stderr:\n"
                    "ptxas-blackwell fatal   : Value 'sm_110a' is not defined for option 'gpu-name'\n", capsys)
    found = next(f for f in doc["findings"] if f["cause"] == "toolkit-mismatch")
    assert any(e.startswith("sm_110 needs the ptxas of CUDA 13.0 or later") for e in found["evidence"])
