# vLLM 0.19.1 (cu129, PyPI) with torch 2.10.0+cu128 (PyPI)
# for: NVIDIA A100-SXM4-80GB (8.0); Python 3.12; linux-x86_64, glibc >= 2.35
# needs: NVIDIA driver >= 525.60.13 (minor-compat policy, CUDA 12.9)
# made by vresolve 0.1.0 from matrix revision 46846cd7699465cd; check it against a machine with: vresolve doctor --lock FILE
# vresolve-lock: {"machine":{"cuda":"12.9","driver_policy":"minor-compat","glibc":"2.35","gpus":{"NVIDIA A100-SXM4-80GB":"8.0"},"min_driver":"525.60.13","platform":"linux-x86_64","python":"3.12"},"matrix_revision":"46846cd7699465cd","stack":{"companions":{"flashinfer-python":"0.6.6"},"cuda":"12.9","install_kind":"wheel","python":"3.12","torch":"2.10.0","torch_source":"pypi","torchaudio":"2.10.0","torchvision":"0.25.0","variant":"cu128","vllm":"0.19.1","vllm_source":"pypi","vllm_variant":"cu129"},"vresolve":"0.1.0"}
export TORCH_CUDA_ARCH_LIST=8.0
