//! The network by name: a policy of hosts (see [`policy`]) that a proxy on
//! the host side enforces for sandboxed commands, which have no other
//! route out.

pub mod address;
pub mod ask;
pub mod http;
pub mod inside;
pub mod link;
pub mod policy;
pub mod proxy;

pub use policy::{Host, NetPolicy, Refusal};
pub use proxy::Proxy;
