#!/usr/bin/env bash
# Layering checks (issue 24, "knowledge where it belongs"), by grepping includes and string literals; CI runs it
# as the ctest `check_layers` (label unit). Usage: scripts/check_layers.sh [ROOT] (default: this checkout).
# Prints each violation as file:line: text and exits 1 when there is one, 0 when there is none.
#   1. src/plan includes no src/cli or src/train header: plan is a library under the CLI, and sees the trainer only
#      through public headers (scalebench/replica_plan.h).
#   2. Public headers (include/scalebench) include no src/ header.
#   3. include/scalebench/report.h does not include scalebench/training.h, directly or through the public headers it
#      includes: the printers read the result model (scalebench/result.h), not the trainer.
#   5. The engine core (src/core) includes no kernel or executor header (src/cpu, src/cuda) and nothing of the
#      layers above it: of internal headers, only src/core's own. Ops reach kernels through bindings, not includes.
#   6. Kernels and executors (src/cpu, src/cuda) include, of internal headers, only their own folders and an op
#      family's definitions (src/core/ops): no other engine internals, nothing of the layers above.
#   7. src/engine is gone (folded into src/core): nothing includes a header from it.
#   4. No file under src/ or include/ holds a workload's name as a string literal outside comments: what a workload
#      is (its optimizer, its figures) lives in its file in workloads/. The names are read from workloads/*.cpp.
set -uo pipefail
root="${1:-$(cd "$(dirname "$0")/.." && pwd)}"
cd "$root" || { echo "check_layers: no directory $root" >&2; exit 2; }

violations=0
report() {  # file:line: text
  echo "$1: $2"
  violations=$((violations + 1))
}

# grep -n output "file:line:text" of the files' #include lines matching the pattern.
includes_matching() {
  local pattern="$1"
  shift
  [ "$#" -eq 0 ] && return 0
  grep -nE "^[[:space:]]*#[[:space:]]*include[[:space:]]*\"($pattern)" "$@" /dev/null || true
}

# 1. src/plan -> src/cli, src/train.
mapfile -t plan_files < <(find src/plan -type f \( -name '*.cpp' -o -name '*.h' -o -name '*.in' \) | sort)
while IFS= read -r hit; do
  [ -n "$hit" ] && report "${hit%%:*}:$(cut -d: -f2 <<< "$hit")" \
    "src/plan includes a CLI or trainer internal: $(cut -d: -f3- <<< "$hit")"
done < <(includes_matching 'src/cli/|src/train/' "${plan_files[@]}")

# 2. include/scalebench -> src/.
mapfile -t public_headers < <(find include/scalebench -type f -name '*.h' | sort)
while IFS= read -r hit; do
  [ -n "$hit" ] && report "${hit%%:*}:$(cut -d: -f2 <<< "$hit")" \
    "a public header includes an internal one: $(cut -d: -f3- <<< "$hit")"
done < <(includes_matching 'src/' "${public_headers[@]}")

# 3. report.h must not reach training.h through public headers. Breadth-first over scalebench/*.h includes,
# remembering which header included which, so the violation names the line that brings training.h in.
if [ -f include/scalebench/report.h ]; then
  declare -A seen=([include/scalebench/report.h]=1)
  queue=(include/scalebench/report.h)
  while [ "${#queue[@]}" -gt 0 ]; do
    header="${queue[0]}"
    queue=("${queue[@]:1}")
    while IFS= read -r hit; do
      [ -z "$hit" ] && continue
      line="$(cut -d: -f2 <<< "$hit")"
      included="$(sed -E 's/.*"scalebench\/([^"]+)".*/\1/' <<< "$(cut -d: -f3- <<< "$hit")")"
      if [ "$included" = "training.h" ]; then
        report "$header:$line" "report.h reaches scalebench/training.h (use scalebench/result.h)"
      elif [ -f "include/scalebench/$included" ] && [ -z "${seen[include/scalebench/$included]:-}" ]; then
        seen[include/scalebench/$included]=1
        queue+=("include/scalebench/$included")
      fi
    done < <(grep -nE '^[[:space:]]*#[[:space:]]*include[[:space:]]*"scalebench/' "$header" | sed "s|^|$header:|")
  done
fi

# 5-7. The engine's include graph.
mapfile -t core_files < <(find src/core -type f \( -name '*.cpp' -o -name '*.h' \) | sort)
while IFS= read -r hit; do
  [ -n "$hit" ] && report "${hit%%:*}:$(cut -d: -f2 <<< "$hit")" \
    "src/core includes a header outside src/core: $(cut -d: -f3- <<< "$hit")"
done < <(includes_matching 'src/([^c]|c[^o]|co[^r]|cor[^e]|core[^/])' "${core_files[@]}")
mapfile -t kernel_files < <(find src/cpu src/cuda -type f \( -name '*.cpp' -o -name '*.h' -o -name '*.cu' -o -name '*.cuh' \) | sort)
while IFS= read -r hit; do
  [ -z "$hit" ] && continue
  included="$(sed -E 's/.*"(src\/[^"]+)".*/\1/' <<< "$(cut -d: -f3- <<< "$hit")")"
  case "$included" in src/cpu/*|src/cuda/*|src/core/ops/*) continue ;; esac
  report "${hit%%:*}:$(cut -d: -f2 <<< "$hit")" \
    "a kernel or executor file includes an engine internal outside src/core/ops: $(cut -d: -f3- <<< "$hit")"
done < <(includes_matching 'src/' "${kernel_files[@]}")
mapfile -t all_files < <(find src include workloads tests -type f \( -name '*.cpp' -o -name '*.h' -o -name '*.cu' \) 2> /dev/null | sort)
while IFS= read -r hit; do
  [ -n "$hit" ] && report "${hit%%:*}:$(cut -d: -f2 <<< "$hit")" \
    "includes a header of src/engine, which is folded into src/core: $(cut -d: -f3- <<< "$hit")"
done < <(includes_matching 'src/engine/' "${all_files[@]}")
[ -d src/engine ] && report "src/engine" "the folder still exists (fold it into src/core)"

# 4. Workload names as string literals in src/ and include/.
mapfile -t names < <(grep -ho 'WorkloadInfo [A-Za-z_]*{"[a-z0-9_]*"' workloads/*.cpp 2> /dev/null |
                     grep -o '"[a-z0-9_]*"' | tr -d '"' | sort -u)
if [ "${#names[@]}" -eq 0 ]; then
  echo "check_layers: found no workload names in workloads/*.cpp (WorkloadInfo kInfo{\"name\", ...})" >&2
  exit 2
fi
names_re="$(IFS='|'; echo "${names[*]}")"
# Allowlist: file (relative to the root) and why it may hold the names. Keep it short; each entry is a debt or a
# place that only prints or documents names.
declare -A allowed=(
  # The guide's own measured throughput per workload (WORKLOADS.md §0, Lambda's RTX 8000 column): a table of
  # published figures keyed by name, printed beside the suite's numbers; it decides no behaviour.
  [src/report/guide_throughput.cpp]=1
)
mapfile -t code_files < <(find src include -type f \( -name '*.cpp' -o -name '*.h' -o -name '*.cu' -o -name '*.cuh' \
                          -o -name '*.in' \) | sort)
while IFS= read -r hit; do
  [ -z "$hit" ] && continue
  file="${hit%%:*}"
  line="$(cut -d: -f2 <<< "$hit")"
  text="$(cut -d: -f3- <<< "$hit")"
  [ -n "${allowed[$file]:-}" ] && continue
  code="${text%%//*}"  # the part before a line comment (a name in a comment documents, it decides nothing)
  grep -qE "\"($names_re)\"" <<< "$code" || continue
  report "$file:$line" "a workload's name as a string literal (put the knowledge in workloads/): ${text#"${text%%[![:space:]]*}"}"
done < <(grep -nE "\"($names_re)\"" "${code_files[@]}" /dev/null || true)

if [ "$violations" -gt 0 ]; then
  echo "check_layers: $violations violation(s)"
  exit 1
fi
echo "check_layers: ok (${#names[@]} workload names, ${#plan_files[@]} plan files, ${#public_headers[@]} public headers)"
