//! Redaction: the secret patterns masked in recorded commands, and the
//! masking of them in a command and in text that quotes it.

use regex::Regex;

use super::AuditLog;
use crate::error::{ErrorCode, ToolError};

/// Patterns masked in recorded commands unless configured otherwise.
///
/// How a match is masked: every capture group whose name starts with
/// `secret` (`secret`, `secret_dq`, …) is replaced by `[REDACTED]` and the
/// rest of the match is kept; a pattern without such groups keeps its first
/// capture group, when present (the name of the secret, not its value), and
/// masks the rest of the match.
///
/// Covered, besides well-known token formats and PEM private keys:
/// `NAME=value` / `NAME: value` / `"name": "value"` for names containing
/// password, passwd, passphrase, secret, token, api key, access key, private
/// key, credential, or ending in `_pass` / `_pwd` (quoted values whole,
/// spaces included); flags such as `--password x`, `--token="x"`,
/// `--oauth2-bearer x`; `-p` values of mysql, mariadb and sshpass and of
/// `docker login` (only a value attached to `-p` or following it: a bare
/// `-p` prompts); `redis-cli -a x`; `curl -u user:x`; `Authorization:` and
/// `Cookie:` headers; passwords in URLs (`https://bob:[REDACTED]@host`, up to
/// the last `@` before the host).
pub const DEFAULT_REDACTIONS: &[&str] = &[
    // NAME=value, NAME: value (unquoted value; the name may follow a quote, as in -e "TOKEN=x").
    r#"(?i)(?:^|[^\w.\\-])[\w.-]*(?:password|passwd|passphrase|secret|token|api[_-]?key|access[_-]?key|private[_-]?key|credential|sshpass|_pass\b|_pwd\b)[\w.-]*\s*[=:]\s*(?P<secret>[^\s'"`;&|<>()\\]+)"#,
    // NAME="value", NAME='value' (the name not inside quotes: `grep "TOKEN=" f` stays readable).
    r#"(?i)(?:^|[^\w.'"\\-])[\w.-]*(?:password|passwd|passphrase|secret|token|api[_-]?key|access[_-]?key|private[_-]?key|credential|sshpass|_pass\b|_pwd\b)[\w.-]*\s*[=:]\s*(?:"(?P<secret_dq>[^"]*)"?|'(?P<secret_sq>[^']*)'?)"#,
    // 'NAME = "value"' and "NAME='value'": the name opens a quoted text, the value uses the other quote.
    r#"(?i)(?:'[\w.-]*(?:password|passwd|passphrase|secret|token|api[_-]?key|access[_-]?key|private[_-]?key|credential|sshpass|_pass\b|_pwd\b)[\w.-]*\s*[=:]\s*"(?P<secret_dq>[^"]*)"?|"[\w.-]*(?:password|passwd|passphrase|secret|token|api[_-]?key|access[_-]?key|private[_-]?key|credential|sshpass|_pass\b|_pwd\b)[\w.-]*\s*[=:]\s*'(?P<secret_sq>[^']*)'?)"#,
    // "name": "value" and 'name': 'value' (JSON, Python, YAML), also with escaped quotes.
    r#"(?i)(?:\\?"|')[\w.-]*(?:password|passwd|passphrase|secret|token|api[_-]?key|access[_-]?key|private[_-]?key|credential|_pass|_pwd)[\w.-]*(?:\\?"|')\s*[=:]\s*(?:\\"(?P<secret_edq>(?:[^"\\]|\\[^"])*)(?:\\")?|"(?P<secret_dq>[^"]*)"?|'(?P<secret_sq>[^']*)'?|(?P<secret>[^\s'"`;&|<>(),}\]\\]+))"#,
    // --password x, --token="x", --oauth2-bearer x, -passin pass:x (not --no-password, --password-stdin).
    r#"(?i)(?:^|[\s'"])--?(?:(?:[a-mo-z0-9_]\w*|n[a-np-z0-9_]\w*|no\w+|n)-)*(?:password|passwd|passphrase|pass|passin|passout|secret|token|api-?key|access-?key|private-?key|secret-?(?:access-?)?key|bearer|credentials?)(?:=(?:"(?P<secret_dq>[^"]*)"?|'(?P<secret_sq>[^']*)'?|(?P<secret>[^\s'"`;&|<>()]+))|\s+(?:"(?P<secret_sdq>[^"]*)"?|'(?P<secret_ssq>[^']*)'?|(?P<secret_s>[^\s'"`;&|<>()-][^\s'"`;&|<>()]*)))"#,
    // mysql -pSEKRIT, mysql -p SEKRIT, sshpass -p x, docker login -p x (a bare -p prompts and stays).
    r#"(?:\b(?:mysql|mariadb|mysqldump|mysqladmin|mysqlimport|mysqlshow|mysqlcheck|mysqlpump|sshpass)|\b(?:docker|podman|nerdctl|buildah|skopeo)\s[^\n;&|]*?\blogin)\b[^\n;&|]*?\s-p(?:"(?P<secret_dq>[^"]*)"?|'(?P<secret_sq>[^']*)'?|(?P<secret>[^\s'"`;&|<>()]+)|\s+(?:"(?P<secret_sdq>[^"]*)"?|'(?P<secret_ssq>[^']*)'?|(?P<secret_s>[^\s'"`;&|<>()-][^\s'"`;&|<>()]*)))"#,
    // redis-cli -a x
    r#"\bredis-cli\b[^\n;&|]*?\s-a\s+(?:"(?P<secret_dq>[^"]*)"?|'(?P<secret_sq>[^']*)'?|(?P<secret>[^\s'"`;&|<>()-][^\s'"`;&|<>()]*))"#,
    // curl -u user:x, --user=user:x, --proxy-user user:x (a user without ':' prompts and stays).
    r#"\bcurl\b[^\n;&|]*?\s(?:-u|-U|--user|--proxy-user)(?:\s+|=)?(?:"[^":]*:(?P<secret_dq>[^"]*)"?|'[^':]*:(?P<secret_sq>[^']*)'?|[^\s'":-][^\s'":]*:(?P<secret>[^\s'"`;&|<>()]+))"#,
    // Authorization: Bearer x, Proxy-Authorization: Basic x
    r#"(?i)\b(?:proxy-)?authorization\s*:\s*(?:(?:bearer|basic|token|digest|negotiate)\s+)?(?P<secret>[^\s'"\\]+)"#,
    // Cookie: a=b; c=d
    r#"(?i)\b(?:set-)?cookie\s*:\s*(?P<secret>[^'"\n\\]+)"#,
    // scheme://user:password@host: the password runs to the last '@' before the host.
    r"://[^/\s:@]*:(?P<secret>[^\s/]*)@",
    r"\b(?:ghp|gho|ghu|ghs|ghr)_[A-Za-z0-9]{20,}",
    r"\bgithub_pat_[A-Za-z0-9_]{20,}",
    r"\bsk-[A-Za-z0-9_-]{16,}",
    r"\bAKIA[0-9A-Z]{16}\b",
    r"\bxox[abeprs]-[A-Za-z0-9-]{10,}",
    r"\bglpat-[A-Za-z0-9_-]{20,}",
    r"\bnpm_[A-Za-z0-9]{36}\b",
    r"\bAIza[0-9A-Za-z_-]{35}\b",
    r"\beyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]+",
    r"-----BEGIN [A-Z ]*PRIVATE KEY-----[\s\S]*?(?:-----END [A-Z ]*PRIVATE KEY-----|$)",
];

const MASK: &str = "[REDACTED]";
/// Secrets at least this long are also masked where they appear verbatim in
/// text quoting the command (see [`AuditLog::redact_related`]).
const MIN_VERBATIM_SECRET: usize = 4;

/// The configured patterns compiled; an invalid one is an `invalid_config`
/// error naming it.
pub(super) fn compile(patterns: &[String]) -> Result<Vec<Regex>, ToolError> {
    patterns
        .iter()
        .map(|p| {
            Regex::new(p).map_err(|e| {
                ToolError::new(
                    ErrorCode::InvalidConfig,
                    format!("`audit.redact` pattern {p:?} is not a valid regular expression: {e}"),
                    "fix or remove the pattern",
                )
            })
        })
        .collect()
}

impl AuditLog {
    /// Masks every configured secret pattern in `text`.
    pub fn redact(&self, text: &str) -> String {
        self.redact_collecting(text).0
    }

    /// Masks secrets in free text that may quote `command` (a refusal reason,
    /// an error message): the configured patterns, and also every secret those
    /// patterns found in `command` wherever it appears verbatim, so that a
    /// reworded or unquoted copy of the command leaks nothing either.
    pub fn redact_related(&self, text: &str, command: Option<&str>) -> String {
        // Verbatim copies first: the patterns could mask a part of one and
        // hide the rest from this pass.
        let mut out = text.to_owned();
        if let Some(command) = command {
            let (_, mut secrets) = self.redact_collecting(command);
            // Longest first, so that a secret containing another is masked whole.
            secrets.sort_by_key(|s| std::cmp::Reverse(s.len()));
            for secret in secrets {
                // Very short values ("1", "x") would mask ordinary words.
                if secret.chars().count() >= MIN_VERBATIM_SECRET && out.contains(secret.as_str()) {
                    out = out.replace(secret.as_str(), MASK);
                }
            }
        }
        self.redact(&out)
    }

    /// `text` with the configured patterns masked, and the masked values.
    fn redact_collecting(&self, text: &str) -> (String, Vec<String>) {
        let mut out = text.to_owned();
        let mut secrets = Vec::new();
        for re in &self.redactors {
            if !re.is_match(&out) {
                continue;
            }
            let secret_groups = secret_groups(re);
            let keep_first = re.captures_len() > 1;
            out = re
                .replace_all(&out, |caps: &regex::Captures<'_>| {
                    if secret_groups.is_empty() {
                        mask_after_name(caps, keep_first, &mut secrets)
                    } else {
                        mask_groups(&out, caps, &secret_groups, &mut secrets)
                    }
                })
                .into_owned();
        }
        (out, secrets)
    }
}

/// The indexes of the capture groups of `re` whose names start with `secret`.
fn secret_groups(re: &Regex) -> Vec<usize> {
    re.capture_names()
        .enumerate()
        .filter(|(_, name)| name.is_some_and(|n| n.starts_with("secret")))
        .map(|(i, _)| i)
        .collect()
}

/// The mask of a match of a pattern without secret groups: its first capture
/// group kept when `keep_first` (the name of the secret), the rest masked and
/// added to `secrets`.
fn mask_after_name(caps: &regex::Captures<'_>, keep_first: bool, secrets: &mut Vec<String>) -> String {
    let whole = caps.get(0).expect("group 0 always matches");
    let kept = caps.get(1).filter(|_| keep_first).map_or("", |g| g.as_str());
    let secret = &whole.as_str()[kept.len().min(whole.len())..];
    if secret != MASK {
        secrets.push(secret.to_owned());
    }
    format!("{kept}{MASK}")
}

/// The mask of a match in `text`: the secret groups that took part masked
/// and added to `secrets`, the rest kept.
fn mask_groups(text: &str, caps: &regex::Captures<'_>, groups: &[usize], secrets: &mut Vec<String>) -> String {
    let whole = caps.get(0).expect("group 0 always matches");
    let mut spans: Vec<(usize, usize)> = groups
        .iter()
        .filter_map(|&i| caps.get(i))
        .map(|g| (g.start(), g.end()))
        .collect();
    spans.sort_unstable();
    let mut masked = String::with_capacity(whole.len());
    let mut at = whole.start();
    for (start, end) in spans {
        if start < at {
            continue;
        }
        masked.push_str(&text[at..start]);
        let secret = &text[start..end];
        if secret != MASK {
            secrets.push(secret.to_owned());
        }
        masked.push_str(MASK);
        at = end;
    }
    masked.push_str(&text[at..whole.end()]);
    masked
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::audit::AuditSettings;
    use crate::process::ids::random_id;
    use std::path::PathBuf;

    #[test]
    fn default_redactions_mask_common_secrets() {
        let dir = std::env::temp_dir().join(format!("bash-mcp-redact-{}", random_id()));
        let log = AuditLog::open(AuditSettings::new(dir.join("a.jsonl"))).unwrap();
        for (input, secret) in [
            ("curl -H 'Authorization: Bearer abc.def.ghi' x", "abc.def.ghi"),
            (
                "export GITHUB_TOKEN=ghp_0123456789abcdefghijABCDEFGHIJ",
                "ghp_0123456789",
            ),
            ("mysql --password=hunter2 db", "hunter2"),
            ("git clone https://bob:s3cr3t@example.com/r.git", "s3cr3t"),
            ("API_KEY=sk-abcdefghijklmnop1234 run", "sk-abcdefghijklmnop1234"),
            (
                "aws configure set aws_access_key_id AKIAABCDEFGHIJKLMNOP",
                "AKIAABCDEFGHIJKLMNOP",
            ),
            ("DB_PASSWORD: pa55 ./x", "pa55"),
        ] {
            let out = log.redact(input);
            assert!(!out.contains(secret), "{input} -> {out}");
            assert!(out.contains(MASK), "{input} -> {out}");
        }
        assert_eq!(log.redact("ls -la /tmp"), "ls -la /tmp");
        assert_eq!(log.redact("export GITHUB_TOKEN=x"), "export GITHUB_TOKEN=[REDACTED]");
        std::fs::remove_dir_all(dir).unwrap();
    }

    fn default_log() -> (AuditLog, PathBuf) {
        let dir = std::env::temp_dir().join(format!("bash-mcp-redact-{}", random_id()));
        (AuditLog::open(AuditSettings::new(dir.join("a.jsonl"))).unwrap(), dir)
    }

    #[test]
    fn default_redactions_mask_quoted_and_tool_specific_secrets() {
        let (log, dir) = default_log();
        for (input, expected) in [
            ("mysql -uroot -pSEKRIT db", "mysql -uroot -p[REDACTED] db"),
            ("mysql -u root -p SEKRIT", "mysql -u root -p [REDACTED]"),
            ("mysqldump -h db -p'se cret' x", "mysqldump -h db -p'[REDACTED]' x"),
            (
                "mariadb --user=a --password=SEKRIT",
                "mariadb --user=a --password=[REDACTED]",
            ),
            ("sshpass -p SEKRIT ssh host", "sshpass -p [REDACTED] ssh host"),
            ("sshpass -pSEKRIT ssh host", "sshpass -p[REDACTED] ssh host"),
            (
                "docker login -u bob -p SEKRIT ghcr.io",
                "docker login -u bob -p [REDACTED] ghcr.io",
            ),
            ("redis-cli -h r -a SEKRIT ping", "redis-cli -h r -a [REDACTED] ping"),
            (
                "AWS_SECRET_ACCESS_KEY=\"x y z\" aws s3 ls",
                "AWS_SECRET_ACCESS_KEY=\"[REDACTED]\" aws s3 ls",
            ),
            ("export TOKEN='a b c'", "export TOKEN='[REDACTED]'"),
            ("export GITHUB_TOKEN=abc123", "export GITHUB_TOKEN=[REDACTED]"),
            ("tool --token=\"two words\" run", "tool --token=\"[REDACTED]\" run"),
            ("tool --token 'two words' run", "tool --token '[REDACTED]' run"),
            ("tool --api-key=abc run", "tool --api-key=[REDACTED] run"),
            (
                "printf 'password = \"hunter 2\"\\n' > cfg",
                "printf 'password = \"[REDACTED]\"\\n' > cfg",
            ),
            (
                "curl -d '{\"password\": \"hun ter2\", \"user\": \"bob\"}' x",
                "curl -d '{\"password\": \"[REDACTED]\", \"user\": \"bob\"}' x",
            ),
            (
                "curl -d \"{\\\"api_key\\\": \\\"k e y\\\"}\" x",
                "curl -d \"{\\\"api_key\\\": \\\"[REDACTED]\\\"}\" x",
            ),
            (
                "python -c \"cfg = {'token': 'abc'}\"",
                "python -c \"cfg = {'token': '[REDACTED]'}\"",
            ),
            ("MYSQL_PWD=SEKRIT mysql db", "MYSQL_PWD=[REDACTED] mysql db"),
            ("DB_PASS=SEKRIT ./run", "DB_PASS=[REDACTED] ./run"),
            (
                "docker run -e \"API_TOKEN=SEKRIT\" img",
                "docker run -e \"API_TOKEN=[REDACTED]\" img",
            ),
            ("curl -u bob:SEKRIT https://x", "curl -u bob:[REDACTED] https://x"),
            (
                "curl --user 'bob:se cret' https://x",
                "curl --user 'bob:[REDACTED]' https://x",
            ),
            (
                "curl --oauth2-bearer SEKRIT https://x",
                "curl --oauth2-bearer [REDACTED] https://x",
            ),
            (
                "curl -H 'Authorization: Bearer abc.def' x",
                "curl -H 'Authorization: Bearer [REDACTED]' x",
            ),
            ("curl -H 'Cookie: sid=abc; x=y' u", "curl -H 'Cookie: [REDACTED]' u"),
            (
                "git clone https://bob:p@ss@host/r.git",
                "git clone https://bob:[REDACTED]@host/r.git",
            ),
            (
                "psql postgres://u:pw@db:5432/x",
                "psql postgres://u:[REDACTED]@db:5432/x",
            ),
            ("openssl enc -pass pass:SEKRIT", "openssl enc -pass [REDACTED]"),
        ] {
            assert_eq!(log.redact(input), expected, "input: {input}");
        }
        std::fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn ordinary_commands_are_not_masked() {
        let (log, dir) = default_log();
        for input in [
            "ls -p /tmp",
            "git push origin main",
            "git push --force-with-lease",
            "mysql -u root -p",
            "mysql -u root -p -e 'show databases'",
            "mysql -h db -P 3306 -u root",
            "docker run -u 1000:1000 -p 8080:80 img",
            "docker login --password-stdin -u bob ghcr.io",
            "psql --no-password -h db app",
            "curl -u bob https://example.com",
            "curl https://example.com/@user",
            "grep -rn \"TOKEN=\" .",
            "grep -n 'password:' config.yml",
            "echo $PWD:/bin",
            "cd $(pwd)/src",
            "cat ~/.ssh/id_ed25519.pub",
            "kubectl get secrets -o name",
            "tar -cpf out.tar dir",
            "cargo test --test audit",
            "ssh -p 2222 host",
        ] {
            assert_eq!(log.redact(input), input);
        }
        std::fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn named_secret_groups_mask_only_themselves() {
        let dir = std::env::temp_dir().join(format!("bash-mcp-redact-{}", random_id()));
        let mut settings = AuditSettings::new(dir.join("a.jsonl"));
        settings.redact = vec![
            r"pin (?P<secret>\d+) and (?P<secret_2>\d+)!".into(),
            r"(code=)\w+".into(),
            r"XYZ\d+".into(),
        ];
        let log = AuditLog::open(settings).unwrap();
        assert_eq!(log.redact("pin 12 and 34!"), "pin [REDACTED] and [REDACTED]!");
        assert_eq!(log.redact("a code=abc b"), "a code=[REDACTED] b");
        assert_eq!(log.redact("a XYZ99 b"), "a [REDACTED] b");
        assert_eq!(
            log.redact_related("`run code=abcdef` and abcdef again", Some("run code=abcdef")),
            "`run code=[REDACTED]` and [REDACTED] again"
        );
        std::fs::remove_dir_all(dir).unwrap();
    }
}
