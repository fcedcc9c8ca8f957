//! Builds the text of `include/bash_mcp.h` with cbindgen (used by the
//! `gen_header` example, which writes it, and by `tests/header.rs`, which
//! compares it with the checked-in file).

use std::path::{Path, PathBuf};

/// Where the header lives, relative to the crate root.
pub const HEADER: &str = "include/bash_mcp.h";

/// The command that regenerates the header.
pub const REGENERATE: &str = "cargo run --example gen_header";

/// The crate root.
pub fn crate_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// The header text for the crate at `crate_dir`.
pub fn generate(crate_dir: &Path) -> String {
    let mut config = cbindgen::Config::from_file(crate_dir.join("cbindgen.toml")).expect("cbindgen.toml");
    config.after_includes = Some(format!(
        "\n/** Major version of this header (matches Cargo.toml). */\n\
         #define BASH_MCP_VERSION_MAJOR {}\n\
         /** Minor version of this header. */\n\
         #define BASH_MCP_VERSION_MINOR {}\n\
         /** Patch version of this header. */\n\
         #define BASH_MCP_VERSION_PATCH {}\n\
         /** Version of this header as a string; bash_mcp_version() gives the loaded library's. */\n\
         #define BASH_MCP_VERSION \"{}\"\n",
        env!("CARGO_PKG_VERSION_MAJOR"),
        env!("CARGO_PKG_VERSION_MINOR"),
        env!("CARGO_PKG_VERSION_PATCH"),
        env!("CARGO_PKG_VERSION"),
    ));
    let bindings = cbindgen::Builder::new()
        .with_crate(crate_dir)
        .with_config(config)
        .generate()
        .expect("cbindgen could not generate the header");
    let mut out = Vec::new();
    bindings.write(&mut out);
    String::from_utf8(out).expect("the header is UTF-8")
}
