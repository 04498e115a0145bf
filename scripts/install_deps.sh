#!/usr/bin/env bash
# Makes sure the build has what it needs, and installs only what is missing.
#
# The check asks the tools themselves, not a package manager: a C++17 compiler, cmake at least the version
# CMakeLists.txt requires, and CLI11, nlohmann-json, GoogleTest and MPI as CMake's own find_package sees them
# (one small probe configure), plus mpirun and python3. So a machine whose tools come from modules, pip, conda
# or a vendor installer (a GPU cluster: cmake 4.x, no apt mirror) passes untouched.
# What is missing is installed with apt when that can work (root or passwordless sudo, and a reachable mirror);
# otherwise one message lists what is missing and how to get it without root, and the exit code is 1.
# The CUDA toolkit (nvcc, cuBLAS, cuDNN, NCCL) is optional and never installed here: where it is present
# (/usr/local/cuda) the GPU backends are built, where not scalebench builds for the CPU device.
# SB_DEPS_CHECK_ONLY=1: check and report, never install (the exit code says whether anything is missing).
set -euo pipefail
cd "$(dirname "$0")/.."

# The minimum in CMakeLists.txt's cmake_minimum_required, e.g. 3.24.
cmake_minimum=$(sed -n 's/^cmake_minimum_required(VERSION \([0-9.]*\).*/\1/p' CMakeLists.txt | head -n 1)

version_at_least() {  # version_at_least HAVE WANT
  [ "$(printf '%s\n%s\n' "$2" "$1" | sort -V | head -n 1)" = "$2" ]
}

# Prints one word per missing part: compiler cmake cli11 json gtest mpi mpirun python3.
find_missing() {
  local missing=()
  command -v python3 > /dev/null || missing+=(python3)
  command -v mpirun > /dev/null || command -v mpiexec > /dev/null || missing+=(mpirun)
  local cmake_version=""
  command -v cmake > /dev/null && cmake_version=$(cmake --version 2> /dev/null | sed -n 's/^cmake version \([0-9.]*\).*/\1/p')
  if [ -z "$cmake_version" ] || ! version_at_least "$cmake_version" "$cmake_minimum"; then
    # Without a usable cmake the libraries cannot be probed; report what the probe would have looked for too.
    missing+=(cmake)
    command -v c++ > /dev/null || command -v g++ > /dev/null || command -v clang++ > /dev/null || missing+=(compiler)
    echo "${missing[*]}"
    return
  fi
  local probe
  probe=$(mktemp -d)
  cat > "$probe/CMakeLists.txt" << EOF
cmake_minimum_required(VERSION $cmake_minimum)
project(scalebench_dependency_probe LANGUAGES C CXX)
include(CheckCXXSourceCompiles)
set(CMAKE_REQUIRED_FLAGS "\${CMAKE_CXX17_STANDARD_COMPILE_OPTION}")
check_cxx_source_compiles("#include <optional>
#include <string_view>
int main() { std::optional<std::string_view> s{\"17\"}; if constexpr (sizeof(int) > 0) return s->size() == 2 ? 0 : 1; }"
  SB_PROBE_CXX17)
find_package(nlohmann_json 3.10 QUIET)
find_package(CLI11 CONFIG QUIET)
find_package(GTest QUIET)
find_package(MPI COMPONENTS C QUIET)
foreach(part IN ITEMS "compiler;SB_PROBE_CXX17" "json;nlohmann_json_FOUND" "cli11;CLI11_FOUND" "gtest;GTest_FOUND" "mpi;MPI_C_FOUND")
  list(GET part 0 name)
  list(GET part 1 variable)
  if(NOT \${variable})
    message(STATUS "sb-probe-missing: \${name}")
  endif()
endforeach()
EOF
  local log
  # find_package also searches the CMAKE_PREFIX_PATH environment variable, as the real build does.
  if ! log=$(cmake -S "$probe" -B "$probe/build" 2>&1); then
    # No working compiler is the usual reason project() fails.
    grep -q "sb-probe-missing" <<< "$log" || missing+=(compiler)
  fi
  missing+=($(sed -n 's/.*sb-probe-missing: \([a-z0-9]*\).*/\1/p' <<< "$log"))
  rm -rf "$probe"
  echo "${missing[*]}"
}

debian_packages() {  # the Debian/Ubuntu packages that provide the missing parts
  local part
  for part in "$@"; do
    case "$part" in
      compiler) echo build-essential ;;
      cmake) echo cmake ;;
      cli11) echo libcli11-dev ;;
      json) echo nlohmann-json3-dev ;;
      gtest) echo libgtest-dev ;;
      mpi | mpirun) echo openmpi-bin libopenmpi-dev ;;
      python3) echo python3 ;;
    esac
  done | tr ' ' '\n' | sort -u | tr '\n' ' '
}

explain_without_root() {  # one message: what is missing and how to get it without root
  local reason=$1
  shift
  {
    echo "scalebench: missing for the build: $*  ($reason)"
    echo "  with root:   apt-get install -y $(debian_packages "$@")"
    echo "  without root, e.g.:"
    for part in "$@"; do
      case "$part" in
        compiler) echo "    compiler: module load gcc (>= 8), or conda install -c conda-forge cxx-compiler" ;;
        cmake) echo "    cmake >= $cmake_minimum: pip install --user cmake (puts cmake in ~/.local/bin), or conda install cmake" ;;
        cli11) echo "    CLI11: conda install -c conda-forge cli11, or unpack its release and add it to CMAKE_PREFIX_PATH" ;;
        json) echo "    nlohmann-json: conda install -c conda-forge nlohmann_json, or add its install prefix to CMAKE_PREFIX_PATH" ;;
        gtest) echo "    GoogleTest: conda install -c conda-forge gtest, or build it with cmake --install to a prefix in CMAKE_PREFIX_PATH" ;;
        mpi | mpirun) echo "    MPI: module load openmpi, or conda install -c conda-forge openmpi (mpirun on PATH)" ;;
        python3) echo "    python3: module load python, or conda" ;;
      esac
    done | sort -u
    echo "  then run this command again (export CMAKE_PREFIX_PATH=<prefix> so CMake finds libraries outside /usr)"
  } >&2
}

if [ -x /usr/local/cuda/bin/nvcc ] && ! command -v nvcc > /dev/null; then
  echo "note: add /usr/local/cuda/bin to PATH to build the GPU backends"
fi
read -r -a missing <<< "$(find_missing)"
[ ${#missing[@]} -eq 0 ] && exit 0
[ "${SB_DEPS_CHECK_ONLY:-0}" = 1 ] && { explain_without_root "check only" "${missing[@]}"; exit 1; }

sudo=""
if [ "$(id -u)" -ne 0 ]; then
  if command -v sudo > /dev/null && sudo -n true 2> /dev/null; then
    sudo="sudo -n"
  else
    explain_without_root "not root, and no passwordless sudo" "${missing[@]}"
    exit 1
  fi
fi
if ! command -v apt-get > /dev/null; then
  explain_without_root "no apt-get on this system" "${missing[@]}"
  exit 1
fi
read -r -a packages <<< "$(debian_packages "${missing[@]}")"
echo "installing: ${packages[*]} (for: ${missing[*]})"
if ! { $sudo apt-get update -qq && DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${packages[@]}"; } \
  > /tmp/scalebench-apt.log 2>&1; then
  explain_without_root "apt-get failed, see /tmp/scalebench-apt.log (no reachable mirror?)" "${missing[@]}"
  exit 1
fi
read -r -a still_missing <<< "$(find_missing)"
if [ ${#still_missing[@]} -gt 0 ]; then
  explain_without_root "still missing after apt-get install" "${still_missing[@]}"
  exit 1
fi
