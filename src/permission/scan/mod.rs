//! Stage 1: scanning the text before the parser sees it, for what would make the
//! parser recurse, loop or allocate without bound.

pub(super) mod depth;
pub(super) mod hazards;
pub(super) mod size;
