#!/usr/bin/env bash
# Installs the C library under a prefix, as a distribution package would lay
# it out:
#
#   <prefix>/lib/libbash_mcp.so.<version>   the shared library (SONAME libbash_mcp.so.0)
#   <prefix>/lib/libbash_mcp.so.0           -> libbash_mcp.so.<version>
#   <prefix>/lib/libbash_mcp.so             -> libbash_mcp.so.0 (for -lbash_mcp)
#   <prefix>/lib/libbash_mcp.a              the static library
#   <prefix>/lib/pkgconfig/bash_mcp.pc      for pkg-config (and CMake's FindPkgConfig)
#   <prefix>/include/bash_mcp.h             the header
#   <prefix>/bin/bash-mcp                   the binary the library runs as its sandbox
#                                           helper and supervisor (found there by the
#                                           library); also the MCP server
#
# Debug information is stripped from what is installed; --keep-debug-info
# installs it beside the library instead (<prefix>/lib/debug/…, linked with
# .gnu_debuglink, where gdb looks for it).
#
# Usage: scripts/install-c.sh [--prefix DIR] [--libdir DIR] [--destdir DIR]
#                             [--from DIR] [--helper FILE | --no-helper]
#                             [--keep-debug-info]
#   --prefix DIR       install prefix (default /usr/local)
#   --libdir DIR       library directory (default <prefix>/lib)
#   --destdir DIR      stage under DIR, as packagers do (files are written to
#                      DIR/<prefix>/…, while the .pc file names <prefix>)
#   --from DIR         take libbash_mcp.so and libbash_mcp.a from DIR instead
#                      of building them with `cargo build --release --lib`,
#                      and bash-mcp from DIR too unless --helper is given
#   --helper FILE      install FILE as <prefix>/bin/bash-mcp
#   --no-helper        install no bash-mcp binary (a configured sandbox then needs
#                      `sandbox.helper_path` or bash-mcp on PATH)
#   --keep-debug-info  also install the debug information, split off
set -euo pipefail

root="$(cd "$(dirname "$0")/.." && pwd)"
prefix=/usr/local
libdir=
destdir=
from=
helper=
no_helper=0
keep_debug=0
while (($#)); do
    case "$1" in
    --prefix) prefix="$2"; shift 2 ;;
    --libdir) libdir="$2"; shift 2 ;;
    --destdir) destdir="$2"; shift 2 ;;
    --from) from="$2"; shift 2 ;;
    --helper) helper="$2"; shift 2 ;;
    --no-helper) no_helper=1; shift ;;
    --keep-debug-info) keep_debug=1; shift ;;
    -h | --help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    *) echo "install-c.sh: unknown argument $1 (see --help)" >&2; exit 2 ;;
    esac
done
case "$prefix" in
/*) ;;
*) echo "install-c.sh: --prefix must be an absolute path, got $prefix" >&2; exit 2 ;;
esac
libdir="${libdir:-$prefix/lib}"
includedir="$prefix/include"

for tool in objcopy readelf; do
    command -v "$tool" >/dev/null || {
        echo "install-c.sh: $tool (binutils) is needed to strip and check the library" >&2
        exit 1
    }
done

if [ -z "$from" ]; then
    (cd "$root" && cargo build --release --lib)
    if ((!no_helper)) && [ -z "$helper" ]; then
        (cd "$root" && cargo build --release --features cli --bin bash-mcp)
    fi
    from="${CARGO_TARGET_DIR:-$root/target}/release"
fi
if ((!no_helper)); then
    helper="${helper:-$from/bash-mcp}"
    [ -x "$helper" ] || {
        echo "install-c.sh: $helper not found: the library runs it as its sandbox helper." >&2
        echo "  Build it (cargo build --release --features cli --bin bash-mcp), pass --helper FILE, or --no-helper" >&2
        exit 1
    }
fi
shared="$from/libbash_mcp.so"
static="$from/libbash_mcp.a"
for f in "$shared" "$static"; do
    [ -f "$f" ] || { echo "install-c.sh: $f not found (build the library first, or drop --from)" >&2; exit 1; }
done

# The version is the crate's; the SONAME is whatever build.rs gave the library.
version="$(sed -n 's/^version = "\(.*\)"$/\1/p' "$root/Cargo.toml" | head -n 1)"
soname="$(readelf -d "$shared" | sed -n 's/.*(SONAME).*\[\(.*\)\]/\1/p')"
case "$soname" in
libbash_mcp.so.[0-9]*) ;;
*) echo "install-c.sh: $shared has SONAME '$soname', expected libbash_mcp.so.<major>" >&2; exit 1 ;;
esac

stage_lib="$destdir$libdir"
stage_inc="$destdir$includedir"
mkdir -p "$stage_lib/pkgconfig" "$stage_inc"
real="libbash_mcp.so.$version"

objcopy --strip-debug "$shared" "$stage_lib/$real"
objcopy --strip-debug "$static" "$stage_lib/libbash_mcp.a"
if ((keep_debug)); then
    mkdir -p "$stage_lib/debug"
    objcopy --only-keep-debug "$shared" "$stage_lib/debug/$real.debug"
    (cd "$stage_lib" && objcopy --add-gnu-debuglink="debug/$real.debug" "$real")
fi
chmod 0755 "$stage_lib/$real"
chmod 0644 "$stage_lib/libbash_mcp.a"
ln -sfn "$real" "$stage_lib/$soname"
ln -sfn "$soname" "$stage_lib/libbash_mcp.so"
install -m 0644 "$root/include/bash_mcp.h" "$stage_inc/bash_mcp.h"
if ((!no_helper)); then
    mkdir -p "$destdir$prefix/bin"
    objcopy --strip-debug "$helper" "$destdir$prefix/bin/bash-mcp"
    chmod 0755 "$destdir$prefix/bin/bash-mcp"
fi

# What a static link needs besides the library (rustc's native-static-libs).
cat >"$stage_lib/pkgconfig/bash_mcp.pc" <<EOF
prefix=$prefix
libdir=$libdir
includedir=$includedir

Name: bash_mcp
Description: A shell tool an AI model can trust (C API of bash-mcp)
Version: $version
Libs: -L\${libdir} -lbash_mcp
Libs.private: -lgcc_s -lutil -lrt -lpthread -lm -ldl -lc
Cflags: -I\${includedir}
EOF

echo "installed bash_mcp $version ($soname) under $destdir$prefix"
