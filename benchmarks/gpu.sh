#!/usr/bin/env bash
# Everything GPU in one prepared run, on a machine with a CUDA build of torch:
#  1. the benchmark suite on the device (issue 18): the matmul peaks (float32, bfloat16), the
#     four training shapes against the reference, decoding and ensemble decoding of the dates
#     model, peak device memory -> bench-gpu.json;
#  2. issue 28's figures: the dates demo on the device, the translation preset for one epoch
#     in bf16, devtest decoded in float32 and bf16 -> runs/gpu/gpu.json and docs/performance.md's
#     GPU section (between its gpu:begin / gpu:end markers).
#     bash benchmarks/gpu.sh            (DATA=path/to/gettext-en-de to name the data)
set -euo pipefail
cd "$(dirname "$0")/.."
DATA=${DATA:-../shared/data/gettext-en-de}
nvidia-smi --query-gpu=name,memory.total,clocks.max.sm --format=csv || true
test -f runs/dates/model.safetensors || .venv/bin/luong train dates --out runs/dates --no-progress
.venv/bin/python benchmarks/bench.py --device cuda --out bench-gpu.json "$@"
.venv/bin/python benchmarks/gpu.py --device cuda --data "$DATA" --out runs/gpu \
    --write docs/performance.md
