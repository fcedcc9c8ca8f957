//! The terminal echoes what is typed while its `ECHO` flag is on. A person
//! watching should see the agent's answers echoed, as typed; the agent's own
//! result should not repeat its input back. This filter removes the echo of
//! the agent's input from the agent's copy of the output.

/// The echo the line discipline prints for `input`, when it is predictable:
/// printable text, tabs and line ends (`\r` becomes `\n` on input). Input
/// with other control bytes (erase, signals, escapes) gets no expectation.
pub(super) fn expected(input: &[u8]) -> Option<Vec<u8>> {
    input
        .iter()
        .map(|&b| match b {
            b'\r' => Some(b'\n'),
            b'\n' | b'\t' => Some(b),
            0..=0x1f | 0x7f => None,
            _ => Some(b),
        })
        .collect()
}

/// The echo still expected in the output.
#[derive(Default)]
pub(super) struct EchoFilter {
    pending: Vec<u8>,
}

impl EchoFilter {
    pub fn expect(&mut self, echo: &[u8]) {
        self.pending.extend_from_slice(echo);
    }

    pub fn clear(&mut self) {
        self.pending.clear();
    }

    /// `bytes` without the expected echo: a chunk that starts with it (or
    /// with its start), or that holds all of it after other output.
    pub fn filter(&mut self, mut bytes: Vec<u8>) -> Vec<u8> {
        if self.pending.is_empty() {
            return bytes;
        }
        let common = bytes.iter().zip(&self.pending).take_while(|(a, b)| a == b).count();
        if common > 0 && (common == bytes.len() || common == self.pending.len()) {
            bytes.drain(..common);
            self.pending.drain(..common);
            return bytes;
        }
        if let Some(at) = bytes.windows(self.pending.len()).position(|w| w == self.pending) {
            bytes.drain(at..at + self.pending.len());
            self.pending.clear();
        }
        bytes
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_echo_of_input_is_removed_once() {
        let mut filter = EchoFilter::default();
        filter.expect(&expected(b"line\r").unwrap());
        assert_eq!(filter.filter(b"line\nline\n".to_vec()), b"line\n");
        assert_eq!(filter.filter(b"line\n".to_vec()), b"line\n");
    }

    #[test]
    fn an_echo_split_across_reads_or_after_other_output_is_removed() {
        let mut filter = EchoFilter::default();
        filter.expect(b"hello\n");
        assert_eq!(filter.filter(b"hel".to_vec()), b"");
        assert_eq!(filter.filter(b"lo\ngot hello\n".to_vec()), b"got hello\n");
        filter.expect(b"yes\n");
        assert_eq!(filter.filter(b"tick\nyes\ntock\n".to_vec()), b"tick\ntock\n");
    }

    #[test]
    fn control_input_has_no_predictable_echo() {
        assert_eq!(expected(b"ab\x7f\r"), None);
        assert_eq!(expected(b"\x03"), None);
        assert_eq!(expected(b"a\tb\n"), Some(b"a\tb\n".to_vec()));
    }
}
