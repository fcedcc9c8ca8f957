//! Writing one stream into the store. A command's pipe gives its output in
//! pieces of a few KiB; each write to a file costs its locking, block
//! reservation and timestamp update again whatever its size, so the pieces
//! are gathered into batches and the file takes one write per batch.

use std::fs::File;
use std::io;
use std::os::unix::fs::{FileExt, OpenOptionsExt};
use std::path::PathBuf;
use std::sync::Arc;

use super::{Entry, OutputStore};
use crate::capture::{Keeper, Kept};

/// The bytes gathered for one write: the memory one kept stream adds.
const BATCH: usize = 256 * 1024;

/// Writes one stream into the store; over the budget, its head and then a
/// ring of its last bytes.
pub(super) struct FileKeeper {
    store: Arc<OutputStore>,
    file: Option<(String, PathBuf, File)>,
    /// Bytes appended and not yet written, at most [`BATCH`].
    pending: Vec<u8>,
    problem: Option<String>,
    /// Bytes of the stream written to the file.
    written: u64,
    /// Bytes of the head (written in order) and of the ring after it.
    head_cap: u64,
    ring_cap: u64,
}

impl FileKeeper {
    pub(super) fn open(store: Arc<OutputStore>) -> Self {
        let budget = store.budget();
        let head_cap = budget / 2;
        let ring_cap = budget - head_cap;
        let mut keeper = Self {
            store,
            file: None,
            pending: Vec::new(),
            problem: None,
            written: 0,
            head_cap,
            ring_cap,
        };
        match keeper.create() {
            Ok(file) => keeper.file = Some(file),
            Err(e) => keeper.problem = Some(format!("the whole output could not be kept: {e}")),
        }
        keeper
    }

    fn create(&self) -> io::Result<(String, PathBuf, File)> {
        let dir = self.store.dir()?;
        let id = format!("out-{}", crate::ids::random_hex()?);
        let path = dir.join(&id);
        let file = std::fs::OpenOptions::new()
            .write(true)
            .read(true)
            .create_new(true)
            .mode(0o600)
            .open(&path)?;
        Ok((id, path, file))
    }

    /// Gathers `data`, writing the batch when it would overflow; a piece as
    /// large as a batch goes straight to the file.
    fn gather(&mut self, data: &[u8]) -> io::Result<()> {
        if self.pending.len() + data.len() > BATCH {
            self.flush()?;
        }
        if data.len() >= BATCH {
            return self.write(data);
        }
        if self.pending.capacity() == 0 {
            self.pending.reserve_exact(BATCH);
        }
        self.pending.extend_from_slice(data);
        Ok(())
    }

    /// Writes the gathered bytes.
    fn flush(&mut self) -> io::Result<()> {
        if self.pending.is_empty() {
            return Ok(());
        }
        let mut pending = std::mem::take(&mut self.pending);
        let written = self.write(&pending);
        pending.clear();
        self.pending = pending;
        written
    }

    /// Writes `data` where the stream has reached: in order into the head,
    /// then around the ring.
    fn write(&mut self, mut data: &[u8]) -> io::Result<()> {
        let Some((_, _, file)) = self.file.as_ref() else {
            return Ok(());
        };
        while !data.is_empty() {
            let (at, room) = if self.written < self.head_cap {
                (self.written, self.head_cap - self.written)
            } else {
                let pos = (self.written - self.head_cap) % self.ring_cap;
                (self.head_cap + pos, self.ring_cap - pos)
            };
            let run = data.len().min(room as usize);
            file.write_all_at(&data[..run], at)?;
            self.written += run as u64;
            data = &data[run..];
        }
        Ok(())
    }

    /// Gives up keeping after a write error: the file goes, and with it any
    /// claim that the output was kept; the result says why.
    fn fail(&mut self, e: &io::Error) {
        self.problem = Some(format!("the whole output could not be kept: {e}"));
        self.pending = Vec::new();
        if let Some((_, path, _)) = self.file.take() {
            let _ = std::fs::remove_file(path);
        }
    }
}

impl Keeper for FileKeeper {
    fn append(&mut self, data: &[u8]) {
        if self.file.is_some()
            && let Err(e) = self.gather(data)
        {
            self.fail(&e);
        }
    }

    fn finish(mut self: Box<Self>) -> Kept {
        if let Err(e) = self.flush() {
            self.fail(&e);
        }
        let Some((id, path, _)) = self.file.take() else {
            return Kept {
                output_id: None,
                problem: self.problem.take(),
            };
        };
        let total = self.written;
        let wrapped = total > self.head_cap + self.ring_cap;
        let entry = Entry {
            id: id.clone(),
            path,
            total,
            head: self.head_cap.min(total),
            ring: self.ring_cap,
            ring_start: if wrapped {
                (total - self.head_cap) % self.ring_cap
            } else {
                0
            },
            file_len: total.min(self.head_cap + self.ring_cap),
        };
        let problem = entry
            .cut()
            .map(|(from, to)| format!("bytes {from} to {to} were over the store's budget and are not kept"));
        self.store.add(entry);
        Kept {
            output_id: Some(id),
            problem,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_write_error_at_the_last_batch_keeps_nothing_and_says_why() {
        let store = OutputStore::new(1 << 20, 8);
        let mut keeper = FileKeeper::open(store.clone());
        keeper.append(b"gathered, not yet written");
        let (_, path, file) = keeper.file.as_mut().expect("a file");
        let path = path.clone();
        // Read only from here on: the write is refused, as a full disk would.
        *file = File::open(&path).unwrap();
        let kept = Box::new(keeper).finish();
        assert_eq!(kept.output_id, None, "no id for bytes that were not written");
        let problem = kept.problem.unwrap();
        assert!(problem.contains("could not be kept"), "{problem}");
        assert!(!path.exists(), "the partial file was removed");
        assert!(store.ids().is_empty());
    }

    #[test]
    fn appended_pieces_reach_the_file_in_order_across_batches() {
        let store = OutputStore::new(4 * BATCH as u64, 8);
        let text: Vec<u8> = (0..3 * BATCH as u32 + 123).map(|i| (i % 251) as u8).collect();
        let mut keeper = FileKeeper::open(store.clone());
        let mut sizes = [4096, 1, BATCH, 70_000, BATCH - 1].iter().cycle();
        let mut rest = &text[..];
        while !rest.is_empty() {
            let take = rest.len().min(*sizes.next().unwrap());
            keeper.append(&rest[..take]);
            rest = &rest[take..];
            assert!(keeper.pending.len() <= BATCH, "a batch stays bounded");
        }
        let (_, path, _) = keeper.file.as_ref().expect("a file");
        let path = path.clone();
        let kept = Box::new(keeper).finish();
        assert!(kept.output_id.is_some(), "{kept:?}");
        assert_eq!(std::fs::read(path).unwrap(), text);
    }
}
