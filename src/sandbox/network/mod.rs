//! The network by name: a policy of hosts (see [`policy`]) that a proxy on
//! the host side enforces for sandboxed commands, which have no other
//! route out.

pub mod address;
pub mod policy;

pub use policy::{Host, NetPolicy, Refusal};
