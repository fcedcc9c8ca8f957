//! A Containerfile read into its instructions, enough to check what can be
//! checked without building it: what it copies, who it runs as, what it runs.

use serde_json::Value;

/// One instruction: its keyword (upper case), the stage it belongs to (the
/// `FROM` count, 1-based) and its arguments as written (continuations joined).
#[derive(Debug, Clone)]
pub struct Instruction {
    pub keyword: String,
    pub stage: usize,
    pub args: String,
    pub line: usize,
}

pub struct Containerfile {
    pub instructions: Vec<Instruction>,
}

impl Containerfile {
    pub fn parse(text: &str) -> Containerfile {
        let mut instructions = Vec::new();
        let mut stage = 0;
        let mut pending: Option<(usize, String)> = None;
        for (i, raw) in text.lines().enumerate() {
            let line = raw.trim();
            if pending.is_none() && (line.is_empty() || line.starts_with('#')) {
                continue;
            }
            if pending.is_some() && line.starts_with('#') {
                continue;
            }
            let (start, mut joined) = pending.take().unwrap_or((i + 1, String::new()));
            if let Some(body) = line.strip_suffix('\\') {
                joined.push_str(body);
                joined.push(' ');
                pending = Some((start, joined));
                continue;
            }
            joined.push_str(line);
            let (keyword, args) = joined.split_once(char::is_whitespace).unwrap_or((&joined, ""));
            let keyword = keyword.to_ascii_uppercase();
            if keyword == "FROM" {
                stage += 1;
            }
            instructions.push(Instruction {
                keyword,
                stage,
                args: args.trim().to_owned(),
                line: start,
            });
        }
        assert!(pending.is_none(), "the Containerfile ends inside a continued line");
        Containerfile { instructions }
    }

    pub fn all(&self, keyword: &str) -> Vec<&Instruction> {
        self.instructions.iter().filter(|i| i.keyword == keyword).collect()
    }

    /// The last stage's instruction `keyword` (the image's, as it is built).
    pub fn last(&self, keyword: &str) -> Option<&Instruction> {
        let final_stage = self.instructions.iter().map(|i| i.stage).max()?;
        self.instructions
            .iter()
            .rev()
            .find(|i| i.keyword == keyword && i.stage == final_stage)
    }

    /// An `ARG`'s default value.
    pub fn arg_default(&self, name: &str) -> Option<String> {
        self.all("ARG")
            .into_iter()
            .find_map(|i| i.args.strip_prefix(&format!("{name}=")).map(str::to_owned))
    }

    /// The image's entry point, which must be in exec (JSON array) form: the
    /// shell form would run it under `sh -c`, which does not pass SIGTERM on.
    pub fn entrypoint(&self) -> Vec<String> {
        let entry = self.last("ENTRYPOINT").expect("the image has an ENTRYPOINT");
        let value: Value = serde_json::from_str(&entry.args).unwrap_or_else(|e| {
            panic!(
                "Containerfile:{}: ENTRYPOINT must be a JSON array (exec form), so the server gets SIGTERM itself: {e}",
                entry.line
            )
        });
        value
            .as_array()
            .expect("ENTRYPOINT is an array")
            .iter()
            .map(|v| v.as_str().expect("ENTRYPOINT holds strings").to_owned())
            .collect()
    }
}

/// A `COPY`: its options (`--from=build`), sources and destination.
#[derive(Debug)]
pub struct Copy {
    pub from: Option<String>,
    pub sources: Vec<String>,
    pub dest: String,
    pub line: usize,
}

impl Copy {
    pub fn parse(instruction: &Instruction) -> Copy {
        let words: Vec<&str> = instruction.args.split_whitespace().collect();
        let (options, paths): (Vec<&str>, Vec<&str>) = words.iter().partition(|w| w.starts_with("--"));
        let from = options
            .iter()
            .find_map(|o| o.strip_prefix("--from="))
            .map(str::to_owned);
        assert!(
            paths.len() >= 2,
            "Containerfile:{}: COPY needs a source and a destination",
            instruction.line
        );
        Copy {
            from,
            sources: paths[..paths.len() - 1].iter().map(|s| s.to_string()).collect(),
            dest: paths[paths.len() - 1].to_owned(),
            line: instruction.line,
        }
    }
}
