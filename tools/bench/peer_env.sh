# Sourced by the peer reference scripts (cuszhi_reference.sh,
# cuszp_reference.sh), which set $repo first: the real fields and the CUDA
# toolkit, found alike for every peer.
#   FZ_DATA    FZ_DATA, else ../shared/data beside the checkout (this
#              workplace), else .devdeps/data (the GPU machine, where
#              .devdeps/env.sh sets FZ_DATA too); made absolute
#   CUDA_HOME  CUDA_HOME, else /usr/local/cuda, else the nvcc on PATH;
#              its bin/ put first on PATH
if [ -z "${FZ_DATA:-}" ]; then
  FZ_DATA=$(dirname "$repo")/shared/data
  [ -d "$FZ_DATA" ] || FZ_DATA=$repo/.devdeps/data
fi
[ -d "$FZ_DATA" ] && FZ_DATA=$(cd "$FZ_DATA" && pwd)   # absolute: inputs may be linked
CUDA_HOME=${CUDA_HOME:-/usr/local/cuda}
if [ ! -x "$CUDA_HOME/bin/nvcc" ] && command -v nvcc >/dev/null; then
  CUDA_HOME=$(dirname "$(dirname "$(readlink -f "$(command -v nvcc)")")")
fi
export PATH="$CUDA_HOME/bin:$PATH"
