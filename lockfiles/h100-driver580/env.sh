# vLLM 0.33.0 (cu130, PyPI) with torch 2.14.0+cu130 (PyPI)
# for: NVIDIA H100 80GB HBM3 (9.0); Python 3.12; linux-x86_64, glibc >= 2.35
# needs: NVIDIA driver >= 580.65.06 (minor-compat policy, CUDA 13.0)
# made by vresolve 0.1.0 from matrix revision 46846cd7699465cd; check it against a machine with: vresolve doctor --lock FILE
# vresolve-lock: {"machine":{"cuda":"13.0","driver_policy":"minor-compat","glibc":"2.35","gpus":{"NVIDIA H100 80GB HBM3":"9.0"},"min_driver":"580.65.06","platform":"linux-x86_64","python":"3.12"},"matrix_revision":"46846cd7699465cd","stack":{"companions":{"flashinfer-python":"0.7.2.post1"},"cuda":"13.0","install_kind":"wheel","python":"3.12","torch":"2.14.0","torch_source":"pypi","torchaudio":"2.11.0","torchvision":"0.29.0","variant":"cu130","vllm":"0.33.0","vllm_source":"pypi","vllm_variant":"cu130"},"vresolve":"0.1.0"}
export TORCH_CUDA_ARCH_LIST=9.0
