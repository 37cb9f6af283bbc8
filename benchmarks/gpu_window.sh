#!/usr/bin/env bash
# One GPU window, prepared: the GPU check (CUDA tests first), then a chunk of the full-scale
# DiagViB-6 campaign with the time that is left. Everything lands under OUT as it is made.
#
#   bash benchmarks/gpu_window.sh OUT [WINDOW_SECONDS] [COMMIT]
#
# WINDOW_SECONDS (default 540) bounds the whole script; the GPU check gets CHECK_BUDGET seconds
# (default 360, by its own estimates), the chunk what is left, with the jobs per GPU and seconds
# per epoch chosen from the epoch times the check has just measured (a chunk takes only jobs
# that finish in time; none if none does). DEVICE (cuda), SCALE (1) and CAMPAIGN
# (validation/diagvib-resnet18) are for trying the script at tiny scale on a CPU.
# Back on the repository's machine:
#   python benchmarks/validate_diagvib_paper.py --campaign validation/diagvib-resnet18 \
#       --import OUT/diagvib-chunk.tar.gz
set -u
out=${1:?usage: gpu_window.sh OUT [WINDOW_SECONDS] [COMMIT]}
window=${2:-540}
commit=${3:-unknown}
device=${DEVICE:-cuda}
scale=${SCALE:-1}
campaign=${CAMPAIGN:-validation/diagvib-resnet18}
python=${PYTHON:-python3}
start=$(date +%s)
mkdir -p "$out"
export PYTHONUNBUFFERED=1 MPLBACKEND=Agg

quick=()
[ "$device" = cpu ] && quick=(--quick --jobs 2)
"$python" benchmarks/gpu_check.py --out "$out/gpu-check.json" --device "$device" \
    --scale "$scale" --budget-seconds "${CHECK_BUDGET:-360}" "${quick[@]}" 2>&1 |
    tee "$out/gpu-check.log"
check=${PIPESTATUS[0]}
[ "$check" -eq 0 ] || { echo "gpu_window: the GPU check failed (exit $check); no chunk run"; exit "$check"; }

left=$(( window - ($(date +%s) - start) - 15 ))
# jobs at a time and seconds per epoch (each job's, fixed costs spread over 30 epochs) for the chunk
read -r jobs per_epoch < <("$python" - "$out/gpu-check.json" "$left" "$scale" <<'EOF'
import json, sys
summary = json.load(open(sys.argv[1])).get("summary", {})
left, scale = float(sys.argv[2]), float(sys.argv[3])
fixed = 40.0 / 30  # process start, rendering, statistics pass: ~40 s per job
alone = summary.get("epoch_alone", {}).get("epoch_s_each")
shared = summary.get("epoch_shared", {})
options = []
if alone:
    options.append((1, alone / scale))
if shared.get("epoch_s_each"):
    n = shared["jobs"]
    options.append((n, shared["epoch_s_each"] / scale))
    if alone:  # two jobs: at most twice one job's time, at least the shared aggregate pace
        options.append((2, max(alone, 2 * shared["job_epoch_s_aggregate"]) / scale))
fits = [(n, 1.1 * s + fixed) for n, s in options if (1.1 * s + fixed) * 30 * scale <= left]
n, s = max(fits, key=lambda o: o[0]) if fits else (1, left)  # none fits: a chunk of no job
print(n, round(s, 3))
EOF
)
echo "gpu_window: $left s left for the chunk: $jobs job(s) at a time, ~$per_epoch s per epoch"
"$python" benchmarks/validate_diagvib_paper.py --campaign "$campaign" --scale "$scale" \
    --device "$device" --jobs-per-gpu "$jobs" --budget-seconds "$left" \
    --seconds-per-epoch "$per_epoch" --commit "$commit" --archive "$out/diagvib-chunk.tar.gz" \
    --out "${CHUNK_DIR:-/tmp/diagvib-chunk}" ${CHUNK_ARGS:-} 2>&1 | tail -n 60 | tee "$out/chunk.log"
echo "gpu_window: done in $(( $(date +%s) - start )) s"
