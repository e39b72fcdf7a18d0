#!/usr/bin/env bash
# Builds llama-server (CPU only, that target only) from the llama.cpp source node-llama-cpp bundles
# (node_modules/node-llama-cpp/llama/gitRelease.bundle, the commit its binaries were built from), so the serving
# tests run against the same llama.cpp Rein's engine is checked against. The build is cached outside the clone,
# keyed by the bundle's commit, and reused between runs on one machine. Prints the binary's path last.
# Env: JOBS (default 2), REIN_LLAMA_SERVER_CACHE (default ${XDG_CACHE_HOME:-$HOME/.cache}/rein/llama-server).
set -euo pipefail
cd "$(dirname "$0")/.."
bundle="$PWD/node_modules/node-llama-cpp/llama/gitRelease.bundle"
[ -f "$bundle" ] || { echo "build-llama-server: no $bundle (run npm ci first)" >&2; exit 1; }
commit="$(git bundle list-heads "$bundle" | awk 'NR==1{print $1}')"
cache="${REIN_LLAMA_SERVER_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/rein/llama-server}/$commit"
bin="$cache/bin/llama-server"
if [ -x "$bin" ]; then echo "build-llama-server: cached $bin" >&2; echo "$bin"; exit 0; fi
mkdir -p "$cache"
src="$cache/src"
rm -rf "$src" "$cache/build"
git clone -q "$bundle" "$src" 2>/dev/null
git -C "$src" checkout -q "$commit"
start=$(date +%s)
cmake -S "$src" -B "$cache/build" -DCMAKE_BUILD_TYPE=Release -DGGML_NATIVE=OFF -DGGML_CUDA=OFF -DGGML_METAL=OFF \
  -DGGML_VULKAN=OFF -DLLAMA_CURL=OFF -DLLAMA_OPENSSL=OFF -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF \
  -DBUILD_SHARED_LIBS=OFF >"$cache/cmake.log" 2>&1 || { tail -30 "$cache/cmake.log" >&2; exit 1; }
cmake --build "$cache/build" --target llama-server -j "${JOBS:-2}" >"$cache/build.log" 2>&1 \
  || { tail -30 "$cache/build.log" >&2; exit 1; }
mkdir -p "$cache/bin"
cp "$cache/build/bin/llama-server" "$bin.tmp" && mv "$bin.tmp" "$bin"
rm -rf "$src" "$cache/build"
echo "build-llama-server: built $bin in $(( $(date +%s) - start )) s" >&2
echo "$bin"
