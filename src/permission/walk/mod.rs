//! Stage 2: the walk over the parsed program, finding every command the text would
//! execute.

pub(super) mod parse;
pub(super) mod word;
