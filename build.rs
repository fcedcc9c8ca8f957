//! Build script: gives the shared library an ELF SONAME, `libbash_mcp.so.0`.
//!
//! The number is the ABI's major version (docs/c-api.md, "Versioning and ABI
//! promise"); it changes only with an incompatible change to the C API.
//!
//! Without one, a program linked against the library by path
//! (`cc main.c target/release/libbash_mcp.so`) records that path as its
//! dependency and fails to start anywhere else; with `libbash_mcp.so` as the
//! SONAME it records the name, found through the usual search path
//! (`LD_LIBRARY_PATH`, rpath, `ldconfig`). The header is not generated here:
//! it is checked in (`BASH_MCP_BLESS=1 cargo test --test header` regenerates
//! it), so building the library needs no code generator.

/// The SONAME: the library's name with the ABI's major version.
const SONAME: &str = "libbash_mcp.so.0";

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    let target_os = std::env::var("CARGO_CFG_TARGET_OS").unwrap_or_default();
    if target_os == "linux" {
        println!("cargo:rustc-cdylib-link-arg=-Wl,-soname,{SONAME}");
        link_soname_beside_the_library();
    }
}

/// Puts the `libbash_mcp.so.0 -> libbash_mcp.so` symlink beside the library
/// cargo builds, so that programs linked against the build directory (whose
/// dependency is the SONAME) find it there, as they would under a prefix.
/// The profile directory is three levels above `OUT_DIR`
/// (`<profile>/build/<package>-<hash>/out`).
fn link_soname_beside_the_library() {
    let Some(out_dir) = std::env::var_os("OUT_DIR") else {
        return;
    };
    let Some(profile_dir) = std::path::Path::new(&out_dir).ancestors().nth(3) else {
        return;
    };
    let link = profile_dir.join(SONAME);
    if std::fs::symlink_metadata(&link).is_ok() {
        return;
    }
    if let Err(e) = std::os::unix::fs::symlink("libbash_mcp.so", &link) {
        println!("cargo:warning=cannot create {}: {e}", link.display());
    }
}
