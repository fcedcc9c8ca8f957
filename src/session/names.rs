//! Short human names for sessions (`falcon`, shown as `#2 falcon`): easy to
//! say and to type in `bash-mcp attach falcon`.

const WORDS: &[&str] = &[
    "falcon", "otter", "heron", "badger", "lynx", "marten", "puffin", "walrus", "bison", "gecko", "ibis", "koala",
    "lemur", "magpie", "newt", "ocelot", "panda", "quail", "raven", "stoat", "tapir", "urchin", "vole", "wombat",
    "yak", "zebra", "alpaca", "beaver", "cobra", "dingo", "egret", "ferret", "gopher", "hyena", "impala", "jackal",
    "kestrel", "llama", "moose", "narwhal", "osprey", "pelican", "robin", "salmon", "toucan", "viper", "weasel",
    "wren", "crane", "finch", "hare", "mole", "owl", "seal", "swan", "trout", "crow", "dove", "elk", "fox", "gull",
    "lark", "mink", "orca",
];

/// A name not in `taken`: a random word, or a word with a number when
/// every word is in use.
pub(super) fn pick(taken: &[String], random: u64) -> String {
    let start = (random % WORDS.len() as u64) as usize;
    let free = (0..WORDS.len())
        .map(|i| WORDS[(start + i) % WORDS.len()])
        .find(|w| !taken.iter().any(|t| t == w));
    match free {
        Some(word) => word.to_owned(),
        None => (2..)
            .map(|n| format!("{}{n}", WORDS[start]))
            .find(|name| !taken.contains(name))
            .expect("an unbounded range has a free name"),
    }
}

/// Whether `name` could be a session's human name (what `attach` accepts
/// besides an id).
pub fn is_name(name: &str) -> bool {
    !name.is_empty() && name.len() <= 32 && name.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_words_not_taken() {
        let taken = vec!["falcon".to_owned()];
        let name = pick(&taken, 0);
        assert_ne!(name, "falcon");
        assert!(is_name(&name));
        let all: Vec<String> = WORDS.iter().map(|w| (*w).to_owned()).collect();
        assert_eq!(pick(&all, 0), "falcon2");
    }
}
