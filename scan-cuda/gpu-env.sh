# Source on the GPU machine before running scan's GPU or NVRTC binaries:
#   source scan-cuda/gpu-env.sh && bash .gpu/run.sh
# cudarc (built for CUDA 12.8 with dynamic loading) looks for `libnvrtc.so`
# or `libnvrtc.so.12`; that machine has CUDA 13's libnvrtc under
# /usr/local/cuda*/, which need not be on the loader's path. This finds it,
# links the unversioned name in /tmp/scan-nvrtc and puts both folders on
# LD_LIBRARY_PATH (libnvrtc loads its builtins library from there too).
nvrtc=$(ls /usr/local/cuda/lib64/libnvrtc.so* /usr/local/cuda*/targets/*/lib/libnvrtc.so* 2>/dev/null | grep -v builtins | head -1)
if [ -n "$nvrtc" ]; then
  mkdir -p /tmp/scan-nvrtc && ln -sf "$nvrtc" /tmp/scan-nvrtc/libnvrtc.so
  export LD_LIBRARY_PATH="/tmp/scan-nvrtc:$(dirname "$nvrtc")${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
  echo "scan: libnvrtc from $nvrtc"
else
  echo "scan: no libnvrtc found under /usr/local/cuda*; GPU and NVRTC tests will fail" >&2
fi
