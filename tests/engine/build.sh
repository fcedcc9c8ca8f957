#!/usr/bin/env bash
# Builds the entropic engine's MCP layer (types, config, prompts, mcp and its
# built-in servers) and the YAML library it uses, unmodified, from the archives
# in a third_party directory, into one shared library, the way the engine's
# CMake files do: C++20, PIC, default symbol visibility, ENTROPIC_BUILDING_DLL,
# the include paths of its targets and the generated entropic_config.h.
#
# Usage: build.sh <third_party dir> <cache dir>
# Prints the build directory (holding src/, include/, lib/libentropic_mcp.so).
# Objects are cached under <cache dir>/<key>, the key being a hash of both
# archives and of the recipe version; an interrupted build resumes where it stopped.
set -euo pipefail
third_party=$1
cache=$2
engine=entropic-2.10.4
yaml=rapidyaml-a28a407

for tool in g++ tar sha256sum flock; do
    command -v "$tool" >/dev/null 2>&1 || { echo "build.sh: $tool is not installed" >&2; exit 3; }
done
for header in spdlog/spdlog.h nlohmann/json.hpp httplib.h; do
    [ -f "/usr/include/$header" ] || {
        echo "build.sh: /usr/include/$header is missing (apt-get install libspdlog-dev nlohmann-json3-dev libcpp-httplib-dev)" >&2
        exit 3
    }
done

# Bump when the compile recipe below changes, so a stale cache is not reused.
recipe=1
key=$( (cat "$third_party/$engine.tar.gz" "$third_party/$yaml.tar.gz"; echo "recipe $recipe") | sha256sum | cut -c1-16)
dir=$cache/$key
mkdir -p "$dir"
exec 9>"$dir/.lock"
flock 9
if [ -f "$dir/lib/libentropic_mcp.so" ]; then
    echo "$dir"
    exit 0
fi

if [ ! -f "$dir/src/.extracted" ]; then
    rm -rf "$dir/src"
    mkdir -p "$dir/src"
    tar -xzf "$third_party/$engine.tar.gz" -C "$dir/src"
    tar -xzf "$third_party/$yaml.tar.gz" -C "$dir/src"
    touch "$dir/src/.extracted"
fi
src=$dir/src/$engine
ryml=$dir/src/rapidyaml

# entropic_config.h, as configure_file() writes it for a default Linux build
# without CUDA (the MCP servers and features the engine enables by default).
version=$(cat "$src/VERSION")
major=${version%%.*}; rest=${version#*.}; minor=${rest%%.*}; patch=${rest#*.}
mkdir -p "$dir/include/entropic"
sed -e "s/@entropic_VERSION_MAJOR@/$major/" -e "s/@entropic_VERSION_MINOR@/$minor/" \
    -e "s/@entropic_VERSION_PATCH@/$patch/" -e "s/@entropic_VERSION@/$version/" \
    -e "s/@ENTROPIC_API_VERSION@/2/" \
    -e "s|@ENTROPIC_DATA_DIR@|$src/data|" -e "s|@ENTROPIC_SOURCE_DATA_DIR@|$src/data|" \
    -e 's/^#cmakedefine01 \(CONFIG_ENTROPIC_\(SHARED\|MCP_[A-Z]*\|STORAGE_SQLITE\|STREAMING\)\)$/#define \1 1/' \
    -e 's/^#cmakedefine01 \(.*\)$/#define \1 0/' \
    "$src/include/entropic/entropic_config.h.in" >"$dir/include/entropic/entropic_config.h.tmp"
mv "$dir/include/entropic/entropic_config.h.tmp" "$dir/include/entropic/entropic_config.h"

flags="-std=c++20 -fPIC -O0 -g0 -w -DENTROPIC_BUILDING_DLL -I$src/include -I$dir/include -I$src/src/config -I$ryml/src -I$ryml/ext/c4core.src"

# One compile per source; objects are written under a temporary name first.
compile_one() {
    obj=$dir/obj/$(echo "$1" | sed "s|^$dir/src/||; s|/|_|g; s|\.cpp$|.o|")
    [ -f "$obj" ] && return 0
    # shellcheck disable=SC2086
    g++ $flags -c "$1" -o "$obj.tmp" && mv "$obj.tmp" "$obj"
}
mkdir -p "$dir/obj"
sources=$(ls "$src"/src/types/*.cpp "$src"/src/config/*.cpp "$src"/src/prompts/*.cpp \
    "$src"/src/mcp/*.cpp "$src"/src/mcp/servers/*.cpp \
    "$ryml"/src/c4/yml/*.cpp "$ryml"/ext/c4core.src/c4/*.cpp)
jobs=${ENGINE_BUILD_JOBS:-2}
failed=0
running=0
for source in $sources; do
    compile_one "$source" &
    running=$((running + 1))
    if [ "$running" -ge "$jobs" ]; then
        wait -n || failed=1
        running=$((running - 1))
    fi
done
while [ "$running" -gt 0 ]; do
    wait -n || failed=1
    running=$((running - 1))
done
[ "$failed" -eq 0 ] || { echo "build.sh: a source failed to compile (see above)" >&2; exit 1; }

mkdir -p "$dir/lib"
g++ -shared -o "$dir/lib/libentropic_mcp.so.tmp" "$dir"/obj/*.o -lcpp-httplib -lspdlog -lfmt -ldl -pthread
mv "$dir/lib/libentropic_mcp.so.tmp" "$dir/lib/libentropic_mcp.so"
echo "$dir"
