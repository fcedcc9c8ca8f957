//! Build script: gives the shared library an ELF SONAME.
//!
//! Without one, a program linked against the library by path
//! (`cc main.c target/release/libbash_mcp.so`) records that path as its
//! dependency and fails to start anywhere else; with `libbash_mcp.so` as the
//! SONAME it records the name, found through the usual search path
//! (`LD_LIBRARY_PATH`, rpath, `ldconfig`). The header is not generated here:
//! it is checked in (`cargo run --example gen_header`), so building the library
//! needs no code generator.

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    let target_os = std::env::var("CARGO_CFG_TARGET_OS").unwrap_or_default();
    if target_os == "linux" {
        println!("cargo:rustc-cdylib-link-arg=-Wl,-soname,libbash_mcp.so");
    }
}
