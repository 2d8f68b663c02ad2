#!/usr/bin/env bash
# The benchmark suite on a GPU, in one prepared run (issue 18's GPU section): the matmul peaks
# (float32, bfloat16), the four training shapes against the reference, decoding and ensemble
# decoding of the dates model, peak device memory. Writes bench-gpu.json beside bench.json.
#     bash benchmarks/gpu.sh            (on a machine with a CUDA build of torch)
set -euo pipefail
cd "$(dirname "$0")/.."
nvidia-smi --query-gpu=name,memory.total,clocks.max.sm --format=csv || true
test -f runs/dates/model.safetensors || .venv/bin/luong train dates --out runs/dates --no-progress
.venv/bin/python benchmarks/bench.py --device cuda --out bench-gpu.json "$@"
