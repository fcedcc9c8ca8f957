//! Which stream a chunk of a command's output came from, and the sink that
//! receives the chunks as they arrive.

/// Which stream a chunk of output came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[repr(C)]
pub enum OutputStream {
    /// Standard output (also used for merged output).
    Stdout = 1,
    /// Standard error (only with [`Streams::Separate`](crate::Streams::Separate)).
    Stderr = 2,
}

/// Receives output chunks as they arrive.
pub type OutputSink<'a> = &'a mut dyn FnMut(&[u8], OutputStream);
