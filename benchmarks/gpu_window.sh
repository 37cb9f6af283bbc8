#!/usr/bin/env bash
# One GPU window, prepared: the GPU check (CUDA tests first), then a chunk of the full-scale
# DiagViB-6 campaign with the time that is left. Everything lands under OUT as it is made.
#
#   bash benchmarks/gpu_window.sh OUT [WINDOW_SECONDS] [COMMIT]
#
# WINDOW_SECONDS (default 540) bounds the whole script; the GPU check gets CHECK_BUDGET seconds
# (default 360, by its own estimates), the chunk what is left, with the jobs per GPU and seconds
# per epoch chosen from the epoch times the check has just measured (benchmarks/window_plan.py:
# a chunk takes only jobs that finish in time; none if none does). DEVICE (cuda), SCALE (1) and
# CAMPAIGN (validation/diagvib-resnet18) are for trying the script at tiny scale on a CPU.
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
workers=()  # on a CPU, as many worker processes as the plan's jobs at a time
"$python" benchmarks/gpu_check.py --out "$out/gpu-check.json" --device "$device" \
    --scale "$scale" --budget-seconds "${CHECK_BUDGET:-360}" "${quick[@]}" 2>&1 |
    tee "$out/gpu-check.log"
check=${PIPESTATUS[0]}
[ "$check" -eq 0 ] || { echo "gpu_window: the GPU check failed (exit $check); no chunk run"; exit "$check"; }

left=$(( window - ($(date +%s) - start) - 15 ))
read -r jobs per_epoch < <("$python" benchmarks/window_plan.py "$out/gpu-check.json" "$left" "$scale")
if [ "${jobs:-0}" -eq 0 ]; then
    echo "gpu_window: $left s left: not enough for one job of the chunk; no chunk run"
else
    echo "gpu_window: $left s left for the chunk: $jobs job(s) at a time," \
         "~$per_epoch s per full-scale epoch"
    [ "$device" = cpu ] && workers=(--workers "$jobs")
    # Jobs slower than the plan must not outlive the window: at its end an interrupt (as a
    # Ctrl-C) stops them and the finished ones are still archived; a kill 30 s later.
    # The whole log lands under OUT as it is written; the terminal gets its last 60 lines.
    timeout -s INT -k 30 "$left" \
        "$python" benchmarks/validate_diagvib_paper.py --campaign "$campaign" --scale "$scale" \
        --device "$device" --jobs-per-gpu "$jobs" "${workers[@]}" --budget-seconds "$left" \
        --seconds-per-epoch "$per_epoch" --commit "$commit" --archive "$out/diagvib-chunk.tar.gz" \
        --out "${CHUNK_DIR:-/tmp/diagvib-chunk}" ${CHUNK_ARGS:-} 2>&1 | tee "$out/chunk.log" | tail -n 60
fi
echo "gpu_window: done in $(( $(date +%s) - start )) s"
