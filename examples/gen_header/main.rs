//! Regenerates `include/bash_mcp.h` from the `extern "C"` functions in
//! `src/ffi/`: `cargo run --example gen_header`.

mod generate;

fn main() {
    let dir = generate::crate_dir();
    let text = generate::generate(&dir);
    let path = dir.join(generate::HEADER);
    std::fs::create_dir_all(path.parent().expect("include/")).expect("create include/");
    std::fs::write(&path, text).expect("write the header");
    println!("wrote {} (this command: {})", generate::HEADER, generate::REGENERATE);
}
