#!/usr/bin/env bash
# Experiment companion of gpu_check.sh (run after it, same machine, same build-gpu): measures the mid-size
# busbw gap to nccl-tests under controlled variants — run-to-run repeat, more iterations, the NCCL library
# version (system vs the pip wheel), CPU binding — and NCCL's own channel count. Writes $OUT/variants_*.
set -uo pipefail
cd "$(dirname "$0")/.."
out=${OUT:-$PWD/gpu-check-out}
mkdir -p "$out"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 NCCL_NVLS_ENABLE=0
ngpu=$(nvidia-smi -L | wc -l)
sb=build-gpu/scalebench
sweep=(bandwidth --op all --min-bytes 8M --max-bytes 512M --out-of-place)
pip_nccl=$(python3 -c "import nvidia.nccl, os; print(os.path.join(list(nvidia.nccl.__path__)[0], 'lib'))" 2> /dev/null)

run() {  # run NAME [env...] -- [mpirun flags...]: one sweep, JSON kept for the summary
  local name=$1
  shift
  timeout 120 env "$@" mpirun -np "$ngpu" --bind-to "${BIND:-none}" -x NCCL_NVLS_ENABLE -x LD_LIBRARY_PATH \
    $sb "${sweep[@]}" --iters "${ITERS:-20}" --force --json "$out/v_$name.json" > /dev/null 2>> "$out/variants_errors.txt"
  echo "$name rc=$?"
}

# Variants measured on 2026-11-30 with no effect beyond run-to-run spread (docs/PERFORMANCE.md): 100
# iterations, --bind-to core, NCCL 2.28.9 from the pip wheel. Kept as switches: VARIANTS="iters100 ...".
run baseline LD_LIBRARY_PATH="${LD_LIBRARY_PATH:-}"
run repeat LD_LIBRARY_PATH="${LD_LIBRARY_PATH:-}"
sweep+=(--register) && run register LD_LIBRARY_PATH="${LD_LIBRARY_PATH:-}" && unset 'sweep[-1]'
sweep+=(--aggregate-timing) && run aggregate LD_LIBRARY_PATH="${LD_LIBRARY_PATH:-}" && unset 'sweep[-1]'
# Graph replays are timed as a whole, with no event between collectives: the event cost shows here.
sweep+=(--graph) && run graph LD_LIBRARY_PATH="${LD_LIBRARY_PATH:-}" && unset 'sweep[-1]'
for variant in ${VARIANTS:-}; do
  case $variant in
    iters100) ITERS=100 run iters100 LD_LIBRARY_PATH="${LD_LIBRARY_PATH:-}" ;;
    bind_core) BIND=core run bind_core LD_LIBRARY_PATH="${LD_LIBRARY_PATH:-}" ;;
    nccl_pip) [ -n "$pip_nccl" ] && run nccl_pip LD_LIBRARY_PATH="$pip_nccl:${LD_LIBRARY_PATH:-}" ;;
  esac
done

# NCCL's own account of channels and algorithms for one all_reduce size (user NCCL_DEBUG: our transport
# capture steps aside).
NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,TUNING NCCL_DEBUG_FILE="$out/nccl_debug.%p.log" timeout 60 \
  mpirun -np "$ngpu" --bind-to none -x NCCL_NVLS_ENABLE -x NCCL_DEBUG -x NCCL_DEBUG_SUBSYS -x NCCL_DEBUG_FILE \
  $sb bandwidth --min-bytes 32M --max-bytes 32M --iters 5 > /dev/null 2>&1
grep -hE "NCCL version|channels|AllReduce: 33554432|Channel 00/" "$out"/nccl_debug.*.log | sort | uniq -c | head -20 \
  > "$out/variants_nccl_info.txt"
rm -f "$out"/nccl_debug.*.log

python3 - "$out" <<'PY' | tee "$out/variants_summary.txt"
import glob, json, os, sys
anchor = {"all_reduce": {8: 168.1, 32: 242.2, 64: 269.9, 128: 285.7, 512: 316.6},
          "reduce_scatter": {8: 118.4, 64: 207.7, 512: 254.0}, "all_gather": {8: 111.9, 64: 214.3, 512: 256.5},
          "broadcast": {8: 214.0, 64: 325.5, 512: 362.0}, "alltoall": {8: 130.4, 64: 244.0, 512: 297.0}}
runs = {os.path.basename(p)[2:-5]: json.load(open(p)) for p in sorted(glob.glob(sys.argv[1] + "/v_*.json"))}
names = list(runs)
print(f"{'op':15}{'MiB':>5}{'anchor':>8} " + " ".join(f"{n:>10}" for n in names))
for op, sizes in anchor.items():
    for mib, ref in sizes.items():
        cells = []
        for n in names:
            hit = [r for r in runs[n]["results"] if r["op"] == op and r["size_bytes"] == mib << 20]
            cells.append(f"{hit[0]['busbw_gbps']:7.1f}{100 * (hit[0]['busbw_gbps'] / ref - 1):+3.0f}" if hit else f"{'-':>10}")
        print(f"{op:15}{mib:5}{ref:8.1f} " + " ".join(cells))
for n in names:
    print(n, runs[n]["context"]["versions"])
PY
cat "$out/variants_nccl_info.txt"
