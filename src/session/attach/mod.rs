//! Sessions offered to people: each server that has sessions listens on a
//! Unix socket in a private directory (see [`socket_dir`]), one per server,
//! and `bash-mcp attach` connects a person's terminal to a session through
//! it. Only the same user may connect: the directory is private, and the
//! server checks each peer's credentials (`SO_PEERCRED`). Nothing listens
//! on TCP.

mod dir;
mod server;
pub mod wire;

pub use dir::{socket_dir, socket_dirs, sockets};
pub(crate) use server::AttachServer;
