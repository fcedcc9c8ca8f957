//! Stage 3: a shell word after quote removal ([`arg::Arg`]), as every stage after the
//! parser reads it; where bash evaluates a word's text as arithmetic; and the variables
//! whose values change what runs. Turning a parsed word into an `Arg` is in
//! `walk/word.rs`, since a word holds commands (`$(...)`) that are walked in turn.

pub(super) mod arg;
pub(super) mod arith;
pub(super) mod vars;
