#!/usr/bin/env bash
# scripts/install_deps.sh asks the tools, not the package manager: a machine with everything present but no
# Debian packages and no apt mirror (a GPU cluster) passes untouched; what is missing, without root, is one
# message saying how to get it, exit 1. Fake commands early on PATH play the machine's part.
source "$(dirname "$0")/lib/common.bash"
INSTALL="$(cd "$(dirname "$0")/../.." && pwd)/scripts/install_deps.sh"
FAKE="$WORK/bin"
mkdir -p "$FAKE"
fake() { printf '#!/bin/sh\n%s\n' "$2" > "$FAKE/$1" && chmod +x "$FAKE/$1"; }

# Everything present, but dpkg knows none of it and apt cannot reach a mirror.
fake dpkg-query 'exit 1'
fake apt-get 'echo "E: Unable to locate package cmake" >&2; exit 100'
expect_exit 0 "all present, no Debian packages, no mirror" -- env PATH="$FAKE:$PATH" bash "$INSTALL"
expect_lines 0 "installing|Unable to locate" "nothing is installed when nothing is missing"

# cmake older than CMakeLists.txt's minimum, not root, no sudo: one message, how to get it without root.
real_cmake=$(command -v cmake)
fake cmake 'echo "cmake version 3.10.2"'
fake id 'echo 1000'
fake sudo 'exit 1'
expect_exit 1 "old cmake, no root" -- env PATH="$FAKE:$PATH" bash "$INSTALL"
expect_output "missing for the build: cmake" "the old cmake is named missing"
expect_output "pip install --user cmake" "the way without root is given"
expect_lines 0 "^installing" "no install without root"

# A library CMake cannot find (GoogleTest hidden from find_package): named, with its package, exit 1.
fake cmake "case \" \$* \" in *' -S '*) exec \"$real_cmake\" -DCMAKE_DISABLE_FIND_PACKAGE_GTest=TRUE \"\$@\" ;; esac
exec \"$real_cmake\" \"\$@\""
expect_exit 1 "GoogleTest not found by CMake" -- env PATH="$FAKE:$PATH" bash "$INSTALL"
expect_output "missing for the build: gtest" "GoogleTest is named missing"
expect_output "apt-get install -y libgtest-dev" "its Debian package is named"
finish
