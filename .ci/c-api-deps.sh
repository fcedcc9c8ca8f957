#!/usr/bin/env bash
# Installs what the C API tests need: a C and C++ compiler (the tests build the
# examples with cc and c++), doxygen (tests/doxygen.rs), and valgrind (the leak
# check in tests/c_api.rs), and the entropic engine's build dependencies
# (tests/entropic_engine.rs builds its MCP layer: spdlog, nlohmann-json,
# cpp-httplib). Idempotent: apt is used only for what is missing.
set -euo pipefail

packages=()
command -v cc >/dev/null 2>&1 || packages+=(gcc)
command -v c++ >/dev/null 2>&1 || packages+=(g++)
command -v doxygen >/dev/null 2>&1 || packages+=(doxygen)
command -v valgrind >/dev/null 2>&1 || packages+=(valgrind)
command -v nm >/dev/null 2>&1 || packages+=(binutils)
# The C package tests (tests/c_package.rs): pkg-config, and cmake for the example.
command -v pkg-config >/dev/null 2>&1 || packages+=(pkg-config)
command -v cmake >/dev/null 2>&1 || packages+=(cmake)
for package in libspdlog-dev nlohmann-json3-dev libcpp-httplib-dev; do
    dpkg -s "$package" >/dev/null 2>&1 || packages+=("$package")
done

if [ "${#packages[@]}" -eq 0 ]; then
    echo "c-api-deps: all present (cc, c++, doxygen, valgrind, nm, pkg-config, cmake, the engine's libraries)"
    exit 0
fi

echo "c-api-deps: installing ${packages[*]}"
if [ "$(id -u)" -eq 0 ]; then
    apt-get update
    DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends "${packages[@]}"
else
    sudo apt-get update
    sudo DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends "${packages[@]}"
fi
