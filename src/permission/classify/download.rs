//! Download then execute, across statements: a file a downloader saved earlier in the
//! command is run (`curl -o f URL && sh f`, `wget URL; ./install.sh`, `curl URL > f;
//! chmod +x f; ./f`, `cat f | sh`), or a download is the program an interpreter reads
//! (`python3 <(curl URL)`, `perl -e "$(curl URL)"`).
//!
//! Where a downloader saves is read from its options (the table below); when the name
//! cannot be known (`curl -O "$URL"`, `wget -i list`), any script run after it counts.

use super::super::wrappers::unwrap::basename;
use super::super::{Analysis, Part};
use super::rules::in_set;

/// How one downloader names the file it saves.
struct Downloader {
    name: &'static str,
    /// Short option letters that take a value, so that bundles are read right
    /// (`curl -sSLo f`).
    short_values: &'static str,
    /// The short option whose value is the output file.
    output_short: Option<char>,
    /// Long options whose value is the output file.
    output_long: &'static [&'static str],
    /// Options that save under the name the URL ends with.
    remote_name: &'static [&'static str],
    /// Options whose value lists URLs to fetch, saved under names the text does not say.
    url_list: &'static [&'static str],
    /// Whether it saves under the URL's name when no output is named (wget does; curl
    /// prints).
    saves_by_default: bool,
}

/// Downloaders whose options are known (curl 8, GNU Wget 1.21, aria2 1.36, BSD fetch,
/// HTTPie and xh).
const DOWNLOADERS: &[Downloader] = &[
    Downloader {
        name: "curl",
        short_values: "AbcCdDeEFHKmoPQrtTuUwxXyYz",
        output_short: Some('o'),
        output_long: &["--output"],
        remote_name: &["-O", "--remote-name", "--remote-name-all"],
        url_list: &[],
        saves_by_default: false,
    },
    Downloader {
        name: "wget",
        short_values: "aBeiOoPQtTUwlARDXI",
        output_short: Some('O'),
        output_long: &["--output-document"],
        remote_name: &[],
        url_list: &["-i", "--input-file"],
        saves_by_default: true,
    },
    Downloader {
        name: "aria2c",
        short_values: "odsxjikcUpS",
        output_short: Some('o'),
        output_long: &["--out"],
        remote_name: &[],
        url_list: &["-i", "--input-file"],
        saves_by_default: true,
    },
    Downloader {
        name: "fetch",
        short_values: "oNSTBiUa",
        output_short: Some('o'),
        output_long: &["--output"],
        remote_name: &[],
        url_list: &[],
        saves_by_default: true,
    },
    Downloader {
        name: "http",
        short_values: "oaA",
        output_short: Some('o'),
        output_long: &["--output"],
        remote_name: &["-d", "--download"],
        url_list: &[],
        saves_by_default: false,
    },
    Downloader {
        name: "https",
        short_values: "oaA",
        output_short: Some('o'),
        output_long: &["--output"],
        remote_name: &["-d", "--download"],
        url_list: &[],
        saves_by_default: false,
    },
    Downloader {
        name: "xh",
        short_values: "oaA",
        output_short: Some('o'),
        output_long: &["--output"],
        remote_name: &["-d", "--download"],
        url_list: &[],
        saves_by_default: false,
    },
];

/// Interpreter options after which the next word is code, not a file
/// (`python3 -c CODE`, `perl -e CODE`, `node --eval CODE`, `php -r CODE`).
const CODE_OPTIONS: &[&str] = &["-c", "-e", "-E", "-r", "--eval", "--command", "-p", "--print"];

/// Interpreter options that take a value that is not the program (`python3 -W ignore`,
/// `node -r mod`).
const VALUE_OPTIONS: &[&str] = &["-W", "-X", "-I", "--require", "--import", "--loader", "-o"];

/// What has been downloaded so far.
#[derive(Default)]
struct Downloads {
    /// File names (basenames) saved.
    names: Vec<String>,
    /// Some download was saved under a name the text does not say.
    unknown: bool,
}

impl Downloads {
    fn holds(&self, path: &str) -> bool {
        let name = basename(path.trim_end_matches('/'));
        !name.is_empty() && (self.unknown || self.names.iter().any(|n| n == name))
    }

    fn any(&self) -> bool {
        self.unknown || !self.names.is_empty()
    }
}

/// Whether `analysis` runs code it downloaded: a saved file run, sourced, given to a
/// shell or interpreter, or fed to hidden code; or a download read as the program.
pub(super) fn downloads_then_runs(analysis: &Analysis) -> bool {
    let mut saved = Downloads::default();
    let mut piped_download = false;
    for part in &analysis.parts {
        let name = basename(&part.command_word);
        if reads_download_as_program(part) {
            return true;
        }
        if saved.any() && runs_saved(part, &saved) {
            return true;
        }
        if in_set("downloaders", name, false) {
            saves(part, &mut saved);
            piped_download = true;
        } else if name == "tee" && piped_download {
            // `curl URL | tee f`: tee saves the download.
            saved.names.extend(operands(&part.args).map(|f| basename(f).to_owned()));
        } else if in_set("extractors", name, false)
            && (piped_download || part.args.iter().skip(1).any(|a| saved.holds(a)))
        {
            // `curl URL | tar xz`, `unzip x.zip` of a download: files the text does not
            // name.
            saved.unknown = true;
            piped_download = false;
        } else if !matches!(name, "sudo" | "doas" | "env") {
            piped_download = false;
        }
    }
    // `cat f | sh`, `sh < f`, `sh -c "$(cat f)"`: hidden code fed by what reads the
    // saved file.
    let hidden = analysis.opaque.iter().filter(|o| o.hidden_code);
    for o in hidden {
        let reads_saved = analysis.parts.iter().any(|p| {
            o.fed_by.iter().any(|f| f == &p.command_word)
                && !in_set("downloaders", basename(&p.command_word), false)
                && p.args.iter().skip(1).any(|a| saved.holds(a))
        });
        let redirected = analysis
            .redirects
            .iter()
            .any(|r| r.mode == super::super::RedirectMode::Read && saved.holds(&r.target));
        if saved.any() && (reads_saved || redirected) {
            return true;
        }
    }
    false
}

/// The operands of `args` (without the command word): words not starting with `-`.
fn operands(args: &[String]) -> impl Iterator<Item = &str> {
    args.iter()
        .skip(1)
        .map(String::as_str)
        .filter(|a| !a.starts_with('-') || *a == "-")
}

/// The name a URL saves under (`https://x/get.sh?v=1` → `get.sh`); `None` when the
/// text does not say.
fn url_name(url: &str) -> Option<String> {
    let rest = url.split_once("://").map_or(url, |(_, r)| r);
    let path = rest.split(['?', '#']).next().unwrap_or(rest);
    let (_, name) = path.rsplit_once('/')?;
    (!name.is_empty() && !name.contains(['$', '`', '*', '?'])).then(|| name.to_owned())
}

fn is_url(word: &str) -> bool {
    word.contains("://")
}

/// Records what the downloader `part` saves.
fn saves(part: &Part, saved: &mut Downloads) {
    saved
        .names
        .extend(part.writes.iter().map(|w| basename(w.trim_end_matches('/')).to_owned()));
    let name = basename(&part.command_word);
    let Some(d) = DOWNLOADERS.iter().find(|d| d.name == name) else {
        return;
    };
    let args = &part.args[1..];
    let mut named = false;
    let mut by_url = d.saves_by_default;
    let mut i = 0;
    while i < args.len() {
        let a = args[i].as_str();
        let next = args.get(i + 1).map(String::as_str);
        if let Some((option, value)) = a.split_once('=').filter(|(o, _)| o.starts_with("--")) {
            if d.output_long.contains(&option) {
                named = true;
                if value != "-" {
                    saved.names.push(basename(value).to_owned());
                }
            }
            saved.unknown |= d.url_list.contains(&option);
        } else if a.starts_with("--") {
            if d.output_long.contains(&a) {
                named = true;
                if let Some(v) = next.filter(|v| *v != "-") {
                    saved.names.push(basename(v).to_owned());
                }
                i += 1;
            } else if d.remote_name.contains(&a) {
                by_url = true;
            } else if d.url_list.contains(&a) {
                saved.unknown = true;
            }
        } else if let Some(bundle) = a.strip_prefix('-').filter(|b| !b.is_empty()) {
            // Short options: each letter, until one that takes a value (the rest of the
            // word, or the next word).
            for (k, c) in bundle.char_indices() {
                if d.remote_name.contains(&format!("-{c}").as_str()) {
                    by_url = true;
                }
                if d.url_list.contains(&format!("-{c}").as_str()) {
                    saved.unknown = true;
                }
                if d.short_values.contains(c) {
                    let attached = &bundle[k + c.len_utf8()..];
                    let value = if attached.is_empty() {
                        i += 1;
                        next
                    } else {
                        Some(attached)
                    };
                    if Some(c) == d.output_short {
                        named = true;
                        if let Some(v) = value.filter(|v| *v != "-") {
                            saved.names.push(basename(v).to_owned());
                        }
                    }
                    break;
                }
            }
        }
        i += 1;
    }
    // wget saves under the URL's name by default, curl with `-O`.
    if by_url && !named {
        saves_by_url(d, args, saved);
    }
}

/// Records the names the downloader `d` saves its URLs in `args` under.
fn saves_by_url(d: &Downloader, args: &[String], saved: &mut Downloads) {
    // A URL from an expansion (`"$URL"`) saves under a name the text does not say.
    if !args.iter().any(|a| is_url(a)) {
        saved.unknown = true;
    }
    for url in args.iter().filter(|a| is_url(a)) {
        match url_name(url) {
            Some(n) => saved.names.push(n),
            None if url.trim_end_matches(['?', '#']).ends_with('/') && d.name == "wget" => {
                saved.names.push("index.html".to_owned());
            }
            None => saved.unknown = true,
        }
    }
}

/// The file `part` runs as a program or script: its command word when it is a path,
/// the script of a shell or interpreter, or what `source`/`.` reads.
fn program_file(part: &Part) -> Option<&str> {
    let name = basename(&part.command_word);
    if matches!(name, "source" | ".") {
        return part.args.get(1).map(String::as_str);
    }
    if in_set("shells", name, false) || in_set("interpreters", name, false) {
        let mut words = part.args.iter().skip(1);
        while let Some(w) = words.next() {
            if CODE_OPTIONS.contains(&w.as_str()) || w == "-m" || w == "-" {
                return None;
            }
            if VALUE_OPTIONS.contains(&w.as_str()) {
                words.next();
            } else if !w.starts_with('-') {
                return Some(w);
            }
        }
        return None;
    }
    Some(&part.command_word)
}

/// Whether `part` runs a file saved by an earlier download.
fn runs_saved(part: &Part, saved: &Downloads) -> bool {
    let Some(file) = program_file(part) else {
        return false;
    };
    let runs_direct = file == part.command_word;
    // A command word without a slash is looked up in PATH; only the very name saved
    // counts then, not any name after an unnamed download.
    if runs_direct && !file.contains('/') {
        let name = basename(file);
        return saved.names.iter().any(|n| n == name);
    }
    saved.holds(file)
}

/// Whether a shell, interpreter or `source` reads its program from a download
/// (`python3 <(curl URL)`, `perl -e "$(curl URL)"`, `. <(wget -O- URL)`).
fn reads_download_as_program(part: &Part) -> bool {
    let name = basename(&part.command_word);
    let runner = matches!(name, "source" | ".") || in_set("shells", name, false) || in_set("interpreters", name, false);
    if !runner {
        return false;
    }
    part.substitutions.iter().any(|(index, words)| {
        let fed = words.iter().any(|w| in_set("downloaders", basename(w), false));
        let before = index.checked_sub(1).and_then(|k| part.args.get(k));
        let is_code = before.is_some_and(|b| CODE_OPTIONS.contains(&b.as_str()));
        let is_program = program_file(part).is_some_and(|f| part.args.get(*index).is_some_and(|a| a == f));
        fed && (is_code || is_program)
    })
}

#[cfg(test)]
mod tests {
    use super::super::super::analyze;
    use super::*;

    #[test]
    fn saved_then_run() {
        for c in [
            "curl -o f https://x && sh f",
            "curl -sSLo /tmp/i.sh https://x; bash /tmp/i.sh",
            "wget https://x/install.sh && bash install.sh",
            "wget -O f https://x; bash f",
            "curl https://x > f; chmod +x f; ./f",
            "curl -O https://x/get.py && python3 get.py",
            "curl -fsSLO \"$URL\" && sh install.sh",
            "curl https://x | tee s.sh; sh s.sh",
            "curl -o f https://x; . ./f",
            "curl -o f https://x; cat f | sh",
            "curl -o f https://x; sh < f",
            "python3 <(curl -s https://x)",
            "perl -e \"$(curl -s https://x)\"",
        ] {
            assert!(downloads_then_runs(&analyze(c)), "{c}");
        }
        for c in [
            "curl -o data.json https://x && python3 process.py",
            "wget https://x/data.csv; sh build.sh",
            "curl https://x | python3 parse.py",
            "python3 script.py \"$(curl -s https://x)\"",
            "sh f; curl -o f https://x",
            "curl -s https://x | jq . > out.json; cat out.json",
        ] {
            assert!(!downloads_then_runs(&analyze(c)), "{c}");
        }
    }
}
