//! Sessions offered to people: each server that has sessions listens on a
//! Unix socket in a private directory (see [`socket_dir`]), one per server,
//! and `bash-mcp attach` connects a person's terminal to a session through
//! it. Only the same user may connect, and no process inside a sandbox:
//! the directory is private (and hidden from bubblewrap's sandboxes), and
//! the server checks each peer (see [`peer`]); `attach` checks the server
//! the same way. Nothing listens on TCP.

mod dir;
pub mod peer;
mod server;
pub mod wire;

pub use dir::{socket_dir, socket_dirs, sockets};
pub(crate) use server::AttachServer;
