"""A paste that shows a failure never gets "no problems found" (DESIGN.md, issue 25): whatever the level a library
says it at, whatever tool says it, and where the paste is cut before the failure, doctor lists at least "cause not
named" (exit 1) with what to paste next that fits what was seen; and harmless text (warnings, INFO lines, a build's
success) stays fully silent.

The failure lines are real, from the threads cited beside them; the look-alikes are real healthy output from the
threads cited beside them (where a maintainer says the line is harmless, or the run goes on to succeed), but one
built from a real output form (its thread in the comment).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from .conftest import doctor_paste, doctor_text

DATA = Path(__file__).parent / "data"
Capsys = pytest.CaptureFixture[str]

#: pastes of tests/data that doctor once judged "no problems found" (exit 0), and words what to paste next must hold
SILENT_ONCE = [
    # bitsandbytes' warning that it will not use the GPU (a library's warning-level start-up line)
    ("heldout/982-library-not-found-kohya-bitsandbytes-compiled-without-gpu-support-libcudart-so-symlink", "nvidia-smi"),
    # llama.cpp's "no CUDA devices found, CUDA will be disabled" at start-up
    ("heldout/984-driver-too-old-llama-cpp-make-cublas-ggml-init-cublas-no-cuda-devices-found-rtx3090ti", "nvidia-smi"),
    # a build log cut at its last ninja step, no result after it
    ("heldout/989-build-oom-pytorch3d-source-build-torch-171-cuda-110-fails-at-last-nvcc-step-knn-cu", "first `error:`"),
    # bitsandbytes' warning that the GPU lacks what 8-bit matmul needs
    ("heldout/993-gpu-too-old-for-feature-bitsandbytes-compute-capability-below-75-only-slow-8bit-matmul", "compute_cap"),
    # the user's own words: "latest YOLOv8 can't use GPU for training", "i can't install vllm", "install torch with cpu"
    ("heldout/985-cpu-only-build-ultralytics-banner-torch-200-cpu-after-upgrade-rtx3070-windows", "whole output"),
    ("corpus/041-python-314-unsupported-vllm-install", "whole output"),
    ("corpus/148-uv-installs-cpu-torch-for-vllm-cuda-env", "whole output"),
]


@pytest.mark.parametrize("stem,ask", SILENT_ONCE, ids=[s.split("/")[1][:40] for s, _ in SILENT_ONCE])
def test_paste_that_shows_a_failure_is_not_healthy(stem: str, ask: str, capsys: Capsys) -> None:
    code, doc = doctor_paste(DATA / f"{stem}.txt", capsys)
    assert code == 1
    errors = [f for f in doc["findings"] if f["severity"] == "error"]
    assert errors or doc["unclear"], doc
    if not errors:
        assert ask in doc["unclear"][0]["paste"]


#: real failure lines of each family, with words the ask must hold
FAMILIES = [
    # TensorFlow's info-level line (tensorflow/tensorflow#66750)
    ("tensorflow-gpu-will-not-be-used", "nvidia-smi",
     "2024-06-28 00:03:52.491725: I tensorflow/core/util/port.cc:110] oneDNN custom operations are on. You may see "
     "slightly different numerical results due to floating-point round-off errors from different computation orders. "
     "To turn them off, set the environment variable `TF_ENABLE_ONEDNN_OPTS=0`.\n"
     "2024-06-28 00:03:52.493638: I tensorflow/tsl/cuda/cudart_stub.cc:28] Could not find cuda drivers on your machine, "
     "GPU will not be used.\n"
     "2024-06-28 00:03:53.230172: W tensorflow/compiler/tf2tensorrt/utils/py_utils.cc:38] TF-TRT Warning: Could not "
     "find TensorRT\n\nNum GPUs Available:  0\n"),
    # llama.cpp's warnings (ggml-org/llama.cpp#15946)
    ("llama-cpp-no-usable-gpu", "nvidia-smi",
     "warning: no usable GPU found, --gpu-layers option will be ignored\n"
     "warning: one possible reason is that llama.cpp was compiled without GPU support\n"
     "warning: consult docs/build.md for compilation instructions\n"),
    # JAX through absl (kuprel/min-dalle#22)
    ("jax-falling-back-to-cpu", "nvidia-smi",
     "WARNING:absl:No GPU/TPU found, falling back to CPU. (Set TF_CPP_MIN_LOG_LEVEL=0 and rerun for more info.)\n"),
    # TensorFlow's documented check of the GPUs it sees, zero (tensorflow/tensorflow#66750)
    ("tensorflow-num-gpus-available-0", "nvidia-smi", "Num GPUs Available:  0\n"),
    # PyTorch Lightning's summary: a GPU there but not used (open-edge-platform/anomalib#232)
    ("lightning-gpu-available-not-used", "nvidia-smi",
     "GPU available: True, used: False\nTPU available: False, using: 0 TPU cores\nIPU available: False, using: 0 IPUs\n"
     "HPU available: False, using: 0 HPUs\n\nGPU available but not used. Set \"accelerator\" and \"devices\" using "
     "Trainer(accelerator='gpu', devices=1).\n"),
    # conda's solver (CompVis/stable-diffusion#145)
    ("conda-resolve-package-not-found", "conda info",
     "ResolvePackageNotFound: \n  - cudatoolkit=11.3\n  - pytorch=1.11.0\n  - pip=20.3\n  - torchvision=0.12.0\n"
     "  - python=3.8.5\n"),
    # poetry's installer (openclimatefix/pv-site-prediction#116)
    ("poetry-no-installation-candidates", "python -V",
     "  - Installing torch (1.13.1): Failed\n\n  RuntimeError\n\n"
     "  Unable to find installation candidates for torch (1.13.1)\n"),
    # nvidia-smi finding no GPU in a container after the host rebooted (NVIDIA/nvidia-container-toolkit#32)
    ("nvidia-smi-no-devices-were-found", "nvidia-smi",
     "# ctr run -t --rm --gpus 0 nvcr.io/nvidia/k8s/cuda-sample:vectoradd-cuda10.2 sample nvidia-smi\n"
     "No devices were found\n"),
    # the kernel driver failing to bring the GPU up (NVIDIA/open-gpu-kernel-modules#862)
    ("nvrm-rm-init-adapter-failed", "collect-env",
     "# nvidia-smi\nNo devices were found\n\n# meanwhile, output in /var/log/syslog\n"
     "Jul 01 22:55:07 gpu kernel: NVRM: GPU 0000:01:00.0: rm_init_adapter failed, device minor number 0\n"
     "Jul 01 22:55:07 gpu kernel: NVRM: GPU 0000:01:00.0: RmInitAdapter failed! (0x22:0x56:884)\n"),
    # the NVIDIA container CLI's own error line (NVIDIA/libnvidia-container#231)
    ("nvidia-container-cli-initialization-error", "collect-env",
     "nvidia-container-cli list\nnvidia-container-cli: initialization error: load library failed: libnvidia-ml.so.1: "
     "cannot open shared object file: no such file or directory\n"),
    # CMake's summary of a failed configure (flexflow/flexflow-train#175)
    ("cmake-configuring-incomplete", "first error", "-- Configuring incomplete, errors occurred!\n"),
]


@pytest.mark.parametrize("name,ask,text", FAMILIES, ids=[f[0] for f in FAMILIES])
def test_failure_family_gets_cause_not_named(name: str, ask: str, text: str, tmp_path: Path, capsys: Capsys) -> None:
    code, doc = doctor_text(text, tmp_path, capsys)
    assert code == 1, doc
    assert doc["unclear"] or any(f["severity"] == "error" for f in doc["findings"]), doc
    if doc["unclear"]:
        assert ask in doc["unclear"][0]["paste"], doc["unclear"][0]["paste"]


def test_llama_cpp_built_without_gpu_offload_is_named(tmp_path: Path, capsys: Capsys) -> None:
    """llama.cpp's older wording (ggml-org/llama.cpp#9153) states the build itself has no GPU backend: named
    (cpu-only-build, the known-issues row llama-cpp-built-without-gpu), not left as a failure without a cause."""
    _, doc = doctor_text("warning: not compiled with GPU offload support, --gpu-layers option will be ignored\n"
                         "warning: see main README.md for information on enabling GPU BLAS support\nLog start\n",
                         tmp_path, capsys)
    assert [f["cause"] for f in doc["findings"] if f["severity"] != "info"] == ["cpu-only-build"], doc


#: real healthy output that shares words with the failure families: fully silent (exit 0, no error, no unclear)
HEALTHY = [
    # a warning quoted in backticks as gone after a fix (heldout 857, facebookresearch/xformers: healthy)
    ("quoted-warning-no-longer-there",
     "Following up on this, I verified that after installing from source, the output of `python -m xformers.info` no "
     "longer contains the `Formers can't load C++/CUDA extensions` warning:\n"),
    # torch's warning while building an extension, harmless (MiroPsota/torch_packages_builder#3: "just an irrelevant
    # warning"), beside vLLM's platform line (sgl-project/sglang#9652)
    ("torch-cuda-arch-list-not-set",
     "INFO 08-26 18:58:16 [__init__.py:241] Automatically detected platform cuda.\n"
     "W0826 18:58:16.987000 2637191 torch/utils/cpp_extension.py:2425] TORCH_CUDA_ARCH_LIST is not set, all archs for "
     "visible cards are included for compilation. \n"
     "W0826 18:58:16.987000 2637191 torch/utils/cpp_extension.py:2425] If this is not desired, please set "
     "os.environ['TORCH_CUDA_ARCH_LIST'] to specific architectures.\n"),
    # NCCL's INFO lines on a working ring, one saying "No device found" of InfiniBand (NVIDIA/nccl#300)
    ("nccl-info-lines",
     "[1,0]<stdout>:5873af64cf59:10158:10560 [0] NCCL INFO Bootstrap : Using [0]lo:127.0.0.1<0>\n"
     "[1,0]<stdout>:5873af64cf59:10158:10560 [0] NCCL INFO NET/Plugin : No plugin found (libnccl-net.so), using "
     "internal implementation\n"
     "[1,0]<stdout>:5873af64cf59:10158:10560 [0] NCCL INFO NET/IB : No device found.\n"
     "[1,0]<stdout>:5873af64cf59:10158:10560 [0] NCCL INFO NET/Socket : Using [0]lo:127.0.0.1<0>\n"
     "[1,0]<stdout>:NCCL version 2.5.6+cuda10.2\n"),
    # transformers' note on a new task head (its documented warning, as printed in huggingface's course)
    ("some-weights-not-initialized",
     "Some weights of BertForSequenceClassification were not initialized from the model checkpoint at "
     "bert-base-uncased and are newly initialized: ['classifier.bias', 'classifier.weight']\n"
     "You should probably TRAIN this model on a down-stream task to be able to use it for predictions and inference.\n"),
    # JAX probing backends it does not have, on a GPU machine (google-research/multinerf#12: "disregard")
    ("jax-backend-probing",
     "I0808 20:59:00.842178 139857030612800 xla_bridge.py:328] Unable to initialize backend 'tpu_driver': NOT_FOUND: "
     "Unable to find driver in registry given worker: \n"
     "I0808 20:59:00.963761 139857030612800 xla_bridge.py:328] Unable to initialize backend 'rocm': NOT_FOUND: Could "
     "not find registered platform with name: \"rocm\". Available platform names are: CUDA Host Interpreter\n"),
    # PyTorch Lightning's other accelerators, none, on a GPU machine (open-edge-platform/anomalib#232)
    ("lightning-other-accelerators-none",
     "TPU available: False, using: 0 TPU cores\nIPU available: False, using: 0 IPUs\nHPU available: False, using: 0 HPUs\n"),
    # a deprecation warning (torch's pynvml notice)
    ("pynvml-deprecated",
     "/usr/local/lib/python3.12/dist-packages/torch/cuda/__init__.py:63: FutureWarning: The pynvml package is "
     "deprecated. Please install nvidia-ml-py instead. If you did not install pynvml directly, please report this to "
     "the maintainers of the package that installed pynvml for you.\n  import pynvml  # type: ignore[import]\n"),
    # a source build that succeeded (abetlen/llama-cpp-python#514)
    ("successful-wheel-build",
     "Building wheels for collected packages: llama-cpp-python\n"
     "  Building wheel for llama-cpp-python (pyproject.toml) ... done\n"
     "  Created wheel for llama-cpp-python: filename=llama_cpp_python-0.1.74-cp310-cp310-linux_x86_64.whl "
     "size=667999 sha256=34706169c42bbaadc30c440fa5a3a7d924668d16c7866667498e4f25b2581314\n"),
    # a JIT extension build whose steps end in the program's own output (nothing cut): built from torch's
    # cpp_extension output form ("[1/3] /usr/local/cuda-12.8/bin/nvcc --generate-dependencies-with-compile ...",
    # pytorch/pytorch#152260) and its "Loading extension module" line
    ("jit-build-steps-then-output",
     "Emitting ninja build file /root/.cache/torch_extensions/py311_cu121/polynomial_cuda/build.ninja...\n"
     "[1/3] /usr/local/cuda/bin/nvcc --generate-dependencies-with-compile -c src_cuda.cu -o src_cuda.cuda.o\n"
     "[2/3] c++ -MMD -MF torch_kernel.o.d -fPIC -std=c++17 -c torch_kernel.cpp -o torch_kernel.o\n"
     "[3/3] c++ torch_kernel.o src_cuda.cuda.o -shared -lcudart -o vector_add.so\n"
     "Loading extension module polynomial_cuda...\n"),
    # argparse's usage error for a mistyped subcommand, then the right command (tests/data/heldout/945, lmdeploy's
    # check_env on a healthy machine): not a failure of the machine
    ("argparse-usage-error",
     "usage: lmdeploy [-h] [-v] {lite,serve,list,check_env,chat} ...\n"
     "lmdeploy: error: argument command: invalid choice: 'check_en' (choose from 'lite', 'serve', 'list', 'check_env', "
     "'chat')\n"),
    # the user saying a failure is gone (kuprel/min-dalle#22)
    ("said-it-works-now", "Great, thanks, it works now.\nI can use the GPU now with torch 2.5.1\n"),
]


@pytest.mark.parametrize("name,text", HEALTHY, ids=[h[0] for h in HEALTHY])
def test_harmless_text_stays_silent(name: str, text: str, tmp_path: Path, capsys: Capsys) -> None:
    code, doc = doctor_text(text, tmp_path, capsys)
    assert code in (0, 2), doc  # (2: nothing doctor reads in it, said as an input error: not "cause not named")
    assert not doc.get("unclear"), doc["unclear"]
    assert not [f for f in doc.get("findings", ()) if f["severity"] == "error"], doc["findings"]


def test_build_cut_after_a_failure_leads_with_the_failure(tmp_path: Path, capsys: Capsys) -> None:
    """A build whose error is shown is judged by it, not by where the paste stops (ninja's and make's words)."""
    text = ("[53/54] /usr/local/cuda/bin/nvcc -c knn.cu -o knn.o\n"
            "ninja: build stopped: subcommand failed.\n"
            "[54/54] /usr/local/cuda/bin/nvcc -c ball_query.cu -o ball_query.o\n")
    code, doc = doctor_text(text, tmp_path, capsys)
    assert code == 1
    assert doc["unclear"][0]["error"].startswith("ninja: build stopped")


@pytest.mark.parametrize("text,said", [
    # the reader's own cases (sentences written for this test, in the shapes of the real ones above)
    ("It doesn't detect my GPU", True),
    ("I can't see the GPU in nvidia-smi", True),
    ("CUDA is not detected on my laptop", True),
    ("I couldn't find the docs for vllm", False),  # a failure said of something that is not the GPU stack
    ("How do I run vllm on the CPU?", False),  # a question, not a failure
    ("It works now, vllm runs on the GPU", False),
])
def test_said_reader(text: str, said: bool) -> None:
    from vresolve.doctor.evidence import read_evidence

    assert any(f.value == "said" for f in read_evidence(text + "\n").failures) is said
