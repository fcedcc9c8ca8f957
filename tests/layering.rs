//! The layers of docs/architecture.md hold in `src/`: every `crate::` path of
//! every file names a module on a lower layer than the file's own (or its own
//! module), and the table names exactly the modules there are. The table is
//! read from the document, so the document is the one place the order lives.

use std::collections::{BTreeMap, BTreeSet};
use std::io::Write;
use std::path::{Path, PathBuf};

// Only its file listing is used here.
#[allow(dead_code)]
#[path = "common/code.rs"]
mod code;

/// The info string of the table's code block in docs/architecture.md.
const TABLE_INFO: &str = "text layers read by tests/layering.rs";

/// The modules of each layer, by name (`bash`, `jobs`, `lib.rs`, `bin`).
#[derive(Debug)]
struct Layers {
    of: BTreeMap<String, usize>,
}

impl Layers {
    /// Reads the table: a header line, then lines `<layer> | <modules> |
    /// <job>`, where a module ends in `/` (a directory), is a bare name (a
    /// file `src/<name>.rs`), or is `lib.rs` or `main.rs`; a line with an
    /// empty layer column continues the layer above it.
    fn parse(table: &str) -> Result<Self, String> {
        let mut of = BTreeMap::new();
        let mut current = None;
        for line in table.lines().skip(1) {
            let columns: Vec<&str> = line.split('|').map(str::trim).collect();
            let [layer, modules, _job] = columns[..] else {
                return Err(format!("a line of the table is not `layer | modules | job`: {line:?}"));
            };
            if !layer.is_empty() {
                let number = layer
                    .parse::<usize>()
                    .map_err(|_| format!("{layer:?} is not a layer number"))?;
                current = Some(number);
            }
            let Some(layer) = current else {
                return Err(format!("the table's first line has no layer number: {line:?}"));
            };
            for word in modules.split_whitespace() {
                let name = module_word(word).ok_or_else(|| format!("{word:?} is not a module of src/"))?;
                // `main.rs` and `cli/` both name the binary, on one line.
                if let Some(before) = of.insert(name.clone(), layer)
                    && before != layer
                {
                    return Err(format!("the table puts {name} on layer {before} and on layer {layer}"));
                }
            }
        }
        if of.is_empty() {
            return Err("the table has no layer lines".into());
        }
        Ok(Self { of })
    }

    fn layer(&self, module: &str) -> Option<usize> {
        self.of.get(module).copied()
    }
}

/// The module a word of the table names: `dir/`, `name` (a file), `lib.rs`;
/// the binary's files (`main.rs`, `cli/`) are one module, `bin`.
fn module_word(word: &str) -> Option<String> {
    match word {
        "main.rs" | "cli/" => return Some("bin".into()),
        "lib.rs" => return Some("lib.rs".into()),
        _ => {}
    }
    let name = word.strip_suffix('/').unwrap_or(word);
    (!name.is_empty() && name.chars().all(|c| c.is_ascii_lowercase() || c == '_')).then(|| name.to_owned())
}

/// The module a file of `src/` belongs to (`src/session/pty.rs` → `session`).
fn module_of(path: &str) -> String {
    match path {
        "main.rs" => "bin".into(),
        "lib.rs" => "lib.rs".into(),
        _ => {
            let first = path.split('/').next().unwrap_or(path);
            let name = first.strip_suffix(".rs").unwrap_or(first);
            if name == "cli" { "bin".into() } else { name.into() }
        }
    }
}

/// One `crate::` path of a file.
#[derive(Debug, PartialEq)]
struct Import {
    line: usize,
    /// The first segment after `crate::` (`bash` of `crate::bash::BashServer`).
    head: String,
}

/// The `crate::` paths of a source text, outside comments. A group
/// `crate::{a::x, b}` gives one import per member.
fn imports(text: &str) -> Vec<Import> {
    let mut found = Vec::new();
    let mut in_block_comment = false;
    for (i, raw) in text.lines().enumerate() {
        let mut line = raw;
        if in_block_comment {
            match line.find("*/") {
                Some(end) => {
                    line = &line[end + 2..];
                    in_block_comment = false;
                }
                None => continue,
            }
        }
        if line.trim_start().starts_with("//") {
            continue;
        }
        if let Some(start) = line.find("/*") {
            in_block_comment = !line[start..].contains("*/");
            line = &line[..start];
        }
        let code = line.split(" // ").next().unwrap_or(line);
        let mut rest = code;
        while let Some(at) = rest.find("crate::") {
            let before = rest[..at].chars().next_back();
            let after = &rest[at + "crate::".len()..];
            rest = after;
            // `$crate::` (macros) and `bash_mcp_crate::` are other paths.
            if before.is_some_and(|c| c == '$' || c == '_' || c.is_ascii_alphanumeric()) {
                continue;
            }
            if let Some(group) = after.strip_prefix('{') {
                let inner = group.split('}').next().unwrap_or(group);
                for member in inner.split(',') {
                    let head = ident(member.trim());
                    if !head.is_empty() {
                        found.push(Import { line: i + 1, head });
                    }
                }
            } else {
                let head = ident(after);
                if !head.is_empty() {
                    found.push(Import { line: i + 1, head });
                }
            }
        }
    }
    found
}

fn ident(text: &str) -> String {
    text.chars()
        .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
        .collect()
}

/// The names `lib.rs` re-exports, with the module each comes from
/// (`pub use exec::{OutputSink, OutputStream};` → `OutputStream` → `exec`).
fn reexports(lib: &str) -> BTreeMap<String, String> {
    let mut names = BTreeMap::new();
    let text = lib.replace('\n', " ");
    for statement in text.split(';') {
        let Some(path) = statement.trim().strip_prefix("pub use ") else {
            continue;
        };
        let module = ident(path);
        let tail = &path[module.len()..];
        let members = match (tail.find('{'), tail.rfind('}')) {
            (Some(open), Some(close)) => tail[open + 1..close].to_owned(),
            _ => tail.rsplit("::").next().unwrap_or("").to_owned(),
        };
        for member in members.split(',') {
            let name = member.rsplit("::").next().unwrap_or("").trim();
            if !name.is_empty() {
                names.insert(name.to_owned(), module.clone());
            }
        }
    }
    names
}

/// Every import of `files` (path relative to `src/`, text) that does not
/// point to a lower layer, as `file:line: ...` lines naming both layers.
/// `reexported` resolves root names (`crate::OutputStream`) to their module;
/// any other root name is an item of `lib.rs` itself.
fn violations(layers: &Layers, files: &[(String, String)], reexported: &BTreeMap<String, String>) -> Vec<String> {
    let mut found = Vec::new();
    for (path, text) in files {
        let module = module_of(path);
        // In the binary, `crate::` is the binary's own root.
        if module == "bin" {
            continue;
        }
        let Some(own) = layers.layer(&module) else {
            found.push(format!(
                "src/{path}: module {module} is not in the table of docs/architecture.md"
            ));
            continue;
        };
        for import in imports(text) {
            let target = if layers.layer(&import.head).is_some() {
                import.head.clone()
            } else {
                reexported.get(&import.head).cloned().unwrap_or_else(|| "lib.rs".into())
            };
            if target == module {
                continue;
            }
            let Some(layer) = layers.layer(&target) else {
                found.push(format!(
                    "src/{path}:{}: crate::{} names {target}, which the table does not place",
                    import.line, import.head
                ));
                continue;
            };
            if layer >= own {
                let direction = if layer == own {
                    "on the same layer (modules of one layer must not use each other: that is how cycles start)"
                } else {
                    "above it"
                };
                found.push(format!(
                    "src/{path}:{}: crate::{} — {module} (layer {own}) uses {target} (layer {layer}), {direction}",
                    import.line, import.head
                ));
            }
        }
    }
    found
}

/// Modules of `src/` missing from the table, and table entries with no module.
fn coverage(layers: &Layers, files: &[(String, String)]) -> Vec<String> {
    let present: BTreeSet<String> = files.iter().map(|(p, _)| module_of(p)).collect();
    let mut found = Vec::new();
    for module in &present {
        if layers.layer(module).is_none() {
            found.push(format!(
                "module {module} of src/ is not in the table of docs/architecture.md"
            ));
        }
    }
    for module in layers.of.keys() {
        if !present.contains(module) {
            found.push(format!(
                "the table of docs/architecture.md names {module}, which src/ does not have"
            ));
        }
    }
    found
}

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn table_of_the_document() -> String {
    let doc = std::fs::read_to_string(root().join("docs/architecture.md")).expect("docs/architecture.md");
    let fence = format!("```{TABLE_INFO}\n");
    let start = doc
        .find(&fence)
        .unwrap_or_else(|| panic!("docs/architecture.md has no ```{TABLE_INFO} block"));
    let body = &doc[start + fence.len()..];
    body[..body.find("```").expect("the table's block is closed")].to_owned()
}

/// Every `.rs` file under `dir`, in the order [`code::sources`] lists
/// them, with its path relative to `base` and its text.
fn sources(base: &Path, dir: &Path, out: &mut Vec<(String, String)>) {
    let mut paths = Vec::new();
    code::sources(dir, &mut paths);
    out.extend(paths.into_iter().map(|path| {
        let relative = path.strip_prefix(base).unwrap().to_string_lossy().into_owned();
        (relative, std::fs::read_to_string(&path).unwrap())
    }));
}

#[test]
fn no_import_points_up_or_sideways_and_the_table_is_complete() {
    let layers = Layers::parse(&table_of_the_document()).unwrap_or_else(|e| panic!("docs/architecture.md: {e}"));
    let src = root().join("src");
    let mut files = Vec::new();
    sources(&src, &src, &mut files);
    let lib = std::fs::read_to_string(src.join("lib.rs")).unwrap();
    let mut problems = coverage(&layers, &files);
    problems.extend(violations(&layers, &files, &reexports(&lib)));
    assert!(
        problems.is_empty(),
        "the layers of docs/architecture.md do not hold:\n{}",
        problems.join("\n")
    );
    let checked: usize = files
        .iter()
        .filter(|(p, _)| module_of(p) != "bin")
        .map(|(_, t)| imports(t).len())
        .sum();
    let mut by_layer: BTreeMap<usize, Vec<&str>> = BTreeMap::new();
    for (module, layer) in &layers.of {
        by_layer.entry(*layer).or_default().push(module);
    }
    let order: Vec<String> = by_layer.values().map(|m| m.join(" ")).collect();
    // Written to the stderr handle, which libtest does not capture: the
    // check's figures show in every run.
    let _ = writeln!(
        std::io::stderr(),
        "layering: {} files, {checked} crate:: paths, none up or sideways; bottom to top: {}",
        files.len(),
        order.join(" < ")
    );
}

fn synthetic_layers() -> Layers {
    Layers::parse(
        "layer | modules  | job\n\
             2 | top/     | the top\n\
             1 | mid      | the middle\n\
               | side     | and beside it\n\
             0 | low      | the bottom\n",
    )
    .unwrap()
}

#[test]
fn the_checker_reports_an_upward_import_with_file_line_and_both_layers() {
    let files = vec![
        (
            "top/mod.rs".to_owned(),
            "use crate::mid::Thing;\nuse crate::low;\n".to_owned(),
        ),
        (
            "low.rs".to_owned(),
            "//! A leaf.\n\nfn f() {\n    crate::top::call();\n}\n".to_owned(),
        ),
    ];
    let found = violations(&synthetic_layers(), &files, &BTreeMap::new());
    assert_eq!(
        found,
        ["src/low.rs:4: crate::top — low (layer 0) uses top (layer 2), above it"],
        "the downward imports of top/ pass, the upward one of low.rs is named"
    );
}

#[test]
fn the_checker_reports_an_import_within_a_layer_which_could_close_a_cycle() {
    let files = vec![
        ("mid.rs".to_owned(), "use crate::{low::A, side::B};\n".to_owned()),
        ("side.rs".to_owned(), "pub struct B;\n".to_owned()),
    ];
    let found = violations(&synthetic_layers(), &files, &BTreeMap::new());
    assert_eq!(found.len(), 1, "{found:?}");
    assert!(
        found[0].starts_with("src/mid.rs:1: crate::side — mid (layer 1) uses side (layer 1), on the same layer"),
        "{found:?}"
    );
}

#[test]
fn the_checker_ignores_comments_and_macro_paths_and_resolves_reexports() {
    let files = vec![(
        "low.rs".to_owned(),
        "/// See [`Top`](crate::top::Top).\n// crate::top in a comment\n/* crate::top\n   still a comment */\nmacro_rules! m { () => { $crate::top::x() } }\nfn f(_: crate::Facade) {}\n".to_owned(),
    )];
    let reexported = reexports("pub use top::{Facade, Other};\npub use mid::Single;\n");
    assert_eq!(reexported.get("Facade").map(String::as_str), Some("top"));
    assert_eq!(reexported.get("Single").map(String::as_str), Some("mid"));
    let found = violations(&synthetic_layers(), &files, &reexported);
    assert_eq!(
        found,
        ["src/low.rs:6: crate::Facade — low (layer 0) uses top (layer 2), above it"],
        "only the re-exported name in code counts"
    );
}

#[test]
fn the_checker_reports_modules_missing_from_the_table_and_entries_with_no_module() {
    let files = vec![
        ("low.rs".to_owned(), String::new()),
        ("mid.rs".to_owned(), String::new()),
        ("side.rs".to_owned(), String::new()),
        ("new.rs".to_owned(), "use crate::low;\n".to_owned()),
    ];
    let layers = synthetic_layers();
    let gaps = coverage(&layers, &files);
    assert_eq!(
        gaps,
        [
            "module new of src/ is not in the table of docs/architecture.md",
            "the table of docs/architecture.md names top, which src/ does not have",
        ]
    );
    assert_eq!(
        violations(&layers, &files, &BTreeMap::new()),
        ["src/new.rs: module new is not in the table of docs/architecture.md"]
    );
}

#[test]
fn a_table_with_a_module_on_two_layers_is_refused() {
    let error = Layers::parse("layer | modules | job\n 1 | a b | x\n 0 | a | y\n").unwrap_err();
    assert_eq!(error, "the table puts a on layer 1 and on layer 0");
}

// Inside a folder: its files (other than `mod.rs`, the folder's face) use
// each other one way only.

/// Circles inside a folder that stay, by folder and files (no files: any
/// circle there), each for the reason docs/architecture.md gives.
const CIRCLES_THAT_STAY: [(&str, &[&str]); 1] = [
    // The grammar's own recursion: a word holds commands (`$(...)`), a command holds
    // words; the walk over the parse (walk/) resolves words (words/), and resolving a
    // word walks the commands it holds.
    ("permission/walk", &["parse.rs", "word.rs"]),
];

/// The module path a file of `src/` is (`a/b.rs` → `a/b`, `a/mod.rs` → `a`,
/// `lib.rs` → ``).
fn module_path(file: &str) -> String {
    let stem = file.strip_suffix(".rs").unwrap_or(file);
    match stem {
        "lib" => String::new(),
        _ => stem.strip_suffix("/mod").unwrap_or(stem).to_owned(),
    }
}

fn parent(module: &str) -> String {
    module.rsplit_once('/').map_or(String::new(), |(up, _)| up.to_owned())
}

fn join(module: &str, name: &str) -> String {
    if module.is_empty() {
        name.to_owned()
    } else {
        format!("{module}/{name}")
    }
}

/// The file of a module path (`a/mod.rs` or `a.rs`; `lib.rs` for the root).
fn file_of(module: &str, files: &BTreeSet<String>) -> Option<String> {
    if module.is_empty() {
        return Some("lib.rs".into());
    }
    [format!("{module}/mod.rs"), format!("{module}.rs")]
        .into_iter()
        .find(|f| files.contains(f))
}

/// The names a module file re-exports from its child modules
/// (`pub use word::{Arg, clip};` → `Arg` → `word`).
fn child_reexports(text: &str) -> BTreeMap<String, String> {
    let mut names = BTreeMap::new();
    let flat = text.replace('\n', " ");
    for statement in flat.split(';') {
        let statement = statement.trim();
        let Some(rest) = statement.strip_prefix("pub") else {
            continue;
        };
        let rest = rest.trim_start();
        let rest = match rest.strip_prefix('(') {
            Some(r) => r.split_once(')').map_or("", |(_, r)| r).trim_start(),
            None => rest,
        };
        let Some(path) = rest.strip_prefix("use ") else {
            continue;
        };
        let child = ident(path.trim());
        let tail = &path.trim()[child.len()..];
        let members = match (tail.find('{'), tail.rfind('}')) {
            (Some(open), Some(close)) => tail[open + 1..close].to_owned(),
            _ => tail.rsplit("::").next().unwrap_or("").to_owned(),
        };
        for member in members.split(',') {
            let name = member
                .rsplit(" as ")
                .next()
                .unwrap_or("")
                .rsplit("::")
                .next()
                .unwrap_or("")
                .trim();
            if !name.is_empty() {
                names.insert(name.to_owned(), child.clone());
            }
        }
    }
    names
}

/// The code of a file that counts for its own imports: comments removed,
/// and nothing from its test module on (`#[cfg(test)]`, where `super::`
/// means the file itself).
fn code_of(text: &str) -> String {
    let text = &text[..text.find("#[cfg(test)]").unwrap_or(text.len())];
    let mut code = String::new();
    let mut in_block_comment = false;
    for raw in text.lines() {
        let mut line = raw;
        if in_block_comment {
            match line.find("*/") {
                Some(end) => {
                    line = &line[end + 2..];
                    in_block_comment = false;
                }
                None => continue,
            }
        }
        if line.trim_start().starts_with("//") {
            continue;
        }
        if let Some(start) = line.find("/*") {
            in_block_comment = !line[start..].contains("*/");
            line = &line[..start];
        }
        code.push_str(line.split(" // ").next().unwrap_or(line));
        code.push('\n');
    }
    code
}

/// The paths of a `use` tree or path after its prefix (`{a::X, b::{c, d}}`,
/// `a::b::X`), each as its segments.
fn paths_of(tree: &str) -> Vec<Vec<String>> {
    let tree = tree.trim();
    if let Some(group) = tree.strip_prefix('{') {
        let inner = &group[..matching_brace(group).unwrap_or(group.len())];
        return split_top(inner).into_iter().flat_map(paths_of).collect();
    }
    let mut segments = Vec::new();
    let mut rest = tree;
    loop {
        let name = ident(rest);
        if name.is_empty() {
            break;
        }
        rest = &rest[name.len()..];
        if name != "self" {
            segments.push(name);
        }
        match rest.strip_prefix("::") {
            Some(after) if after.starts_with('{') => {
                return paths_of(after)
                    .into_iter()
                    .map(|tail| segments.iter().cloned().chain(tail).collect())
                    .collect();
            }
            Some(after) => rest = after,
            None => break,
        }
    }
    vec![segments]
}

/// Where the `{` group that `text` follows closes.
fn matching_brace(text: &str) -> Option<usize> {
    let mut depth = 0usize;
    for (i, c) in text.char_indices() {
        match c {
            '{' => depth += 1,
            '}' if depth == 0 => return Some(i),
            '}' => depth -= 1,
            _ => {}
        }
    }
    None
}

/// `a, b::{c, d}, e` → its three members.
fn split_top(text: &str) -> Vec<&str> {
    let (mut members, mut depth, mut start) = (Vec::new(), 0usize, 0);
    for (i, c) in text.char_indices() {
        match c {
            '{' => depth += 1,
            '}' => depth = depth.saturating_sub(1),
            ',' if depth == 0 => {
                members.push(&text[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    members.push(&text[start..]);
    members.into_iter().filter(|m| !m.trim().is_empty()).collect()
}

/// The file a path of `from` names: the deepest file its segments reach,
/// through a module file's re-exports for a name it does not define.
fn resolve(
    from: &str,
    start: String,
    segments: &[String],
    files: &BTreeSet<String>,
    texts: &BTreeMap<String, String>,
) -> Option<String> {
    let mut module = start;
    let mut rest = segments;
    loop {
        let own = file_of(&module, files)?;
        let Some(name) = rest.first() else { return Some(own) };
        let child = join(&module, name);
        if file_of(&child, files).is_some() {
            module = child;
            rest = &rest[1..];
            continue;
        }
        let reexported = child_reexports(texts.get(&own).map_or("", String::as_str));
        let target = match reexported.get(name) {
            Some(child) => file_of(&join(&module, child), files).unwrap_or(own),
            None => own,
        };
        return (target != from).then_some(target);
    }
}

/// The files of `src/` each file uses through `crate::`, `super::` and
/// `self::` paths.
fn file_graph(files: &[(String, String)]) -> BTreeMap<String, BTreeSet<String>> {
    let names: BTreeSet<String> = files.iter().map(|(p, _)| p.clone()).collect();
    let texts: BTreeMap<String, String> = files.iter().cloned().collect();
    let mut graph = BTreeMap::new();
    for (path, text) in files {
        if module_of(path) == "bin" {
            continue;
        }
        let own = module_path(path);
        let code = code_of(text);
        let mut uses = BTreeSet::new();
        for prefix in ["crate::", "super::", "self::"] {
            let mut from = 0;
            while let Some(at) = code[from..].find(prefix) {
                let at = from + at;
                from = at + prefix.len();
                if code[..at]
                    .chars()
                    .next_back()
                    .is_some_and(|c| c == '$' || c == '_' || c == ':' || c.is_ascii_alphanumeric())
                {
                    continue;
                }
                let mut start = match prefix {
                    "crate::" => String::new(),
                    "super::" => parent(&own),
                    _ => own.clone(),
                };
                let mut tree = &code[from..];
                while let Some(after) = tree.strip_prefix("super::") {
                    start = parent(&start);
                    tree = after;
                }
                for segments in paths_of(tree) {
                    if let Some(target) = resolve(path, start.clone(), &segments, &names, &texts) {
                        uses.insert(target);
                    }
                }
            }
        }
        graph.insert(path.clone(), uses);
    }
    graph
}

fn folder_of(file: &str) -> &str {
    file.rsplit_once('/').map_or("", |(folder, _)| folder)
}

/// What `file` is among the entries of `folder`: a file of its own (`a.rs`), or
/// the sub-folder it lies in (`sub/`), which counts as one entry; `None` for a
/// file outside `folder` and for `folder`'s own `mod.rs`, the folder's face.
fn entry_of(folder: &str, file: &str) -> Option<String> {
    let rest = file.strip_prefix(folder)?.strip_prefix('/')?;
    match rest.split_once('/') {
        Some((sub, _)) => Some(format!("{sub}/")),
        None if rest == "mod.rs" => None,
        None => Some(rest.to_owned()),
    }
}

/// The circles inside folders: groups of two or more entries of one folder
/// (its files but `mod.rs`, and its sub-folders, each taken whole) that
/// reach each other, as (folder, entry names: `a.rs`, `sub/`). The top of
/// `src/` is left to the layer table.
fn circles(graph: &BTreeMap<String, BTreeSet<String>>) -> Vec<(String, Vec<String>)> {
    let mut found = Vec::new();
    let mut folders = BTreeSet::new();
    for file in graph.keys() {
        let mut folder = folder_of(file);
        while !folder.is_empty() {
            folders.insert(folder);
            folder = folder_of(folder);
        }
    }
    for folder in folders {
        // The entries of the folder and which entries each one's files use.
        let mut uses: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
        for (file, targets) in graph {
            let Some(from) = entry_of(folder, file) else { continue };
            let used = uses.entry(from.clone()).or_default();
            used.extend(
                targets
                    .iter()
                    .filter_map(|t| entry_of(folder, t))
                    .filter(|to| *to != from),
            );
        }
        let members: Vec<&String> = uses.keys().collect();
        let reach = |from: &String| -> BTreeSet<&String> {
            let mut seen = BTreeSet::new();
            let mut todo = vec![from];
            while let Some(entry) = todo.pop() {
                for next in uses.get(entry).into_iter().flatten() {
                    if let Some((next, _)) = uses.get_key_value(next)
                        && seen.insert(next)
                    {
                        todo.push(next);
                    }
                }
            }
            seen
        };
        let reached: BTreeMap<&String, BTreeSet<&String>> = members.iter().map(|m| (*m, reach(m))).collect();
        let mut placed = BTreeSet::new();
        for entry in &members {
            if placed.contains(entry) || !reached[entry].contains(entry) {
                continue;
            }
            let group: Vec<&String> = members
                .iter()
                .copied()
                .filter(|other| reached[entry].contains(other) && reached[other].contains(entry))
                .collect();
            placed.extend(group.iter().copied());
            found.push((folder.to_owned(), group.into_iter().cloned().collect()));
        }
    }
    found
}

/// The circles not in [`CIRCLES_THAT_STAY`], and the entries there that
/// name files no longer in a circle.
fn circle_problems(found: &[(String, Vec<String>)]) -> Vec<String> {
    let mut problems = Vec::new();
    for (folder, files) in found {
        let stays = CIRCLES_THAT_STAY
            .iter()
            .any(|(f, named)| f == folder && (named.is_empty() || named.iter().eq(files.iter())));
        if !stays {
            problems.push(format!(
                "src/{folder}/: {} use each other in a circle (a file they share belongs in a file of its own that uses none of them)",
                files.join(", ")
            ));
        }
    }
    for (folder, named) in CIRCLES_THAT_STAY {
        if !named.is_empty()
            && !found
                .iter()
                .any(|(f, files)| f == folder && named.iter().eq(files.iter()))
        {
            problems.push(format!(
                "src/{folder}/: {} are no longer a circle: take them out of CIRCLES_THAT_STAY and docs/architecture.md",
                named.join(", ")
            ));
        }
    }
    problems
}

#[test]
fn the_files_of_a_folder_use_each_other_one_way() {
    let src = root().join("src");
    let mut files = Vec::new();
    sources(&src, &src, &mut files);
    let graph = file_graph(&files);
    let found = circles(&graph);
    let problems = circle_problems(&found);
    assert!(problems.is_empty(), "circles inside folders:\n{}", problems.join("\n"));
    let edges: usize = graph.values().map(BTreeSet::len).sum();
    let _ = writeln!(
        std::io::stderr(),
        "layering: {edges} uses between files; circles inside folders, all named as staying: {found:?}"
    );
}

#[test]
fn the_checker_finds_a_circle_inside_a_folder_and_resolves_paths() {
    let file = |path: &str, text: &str| (path.to_owned(), text.to_owned());
    let files = vec![
        file("lib.rs", "mod top;\n"),
        file(
            "top/mod.rs",
            "mod a;\nmod b;\nmod c;\npub(crate) use c::{Shared, other::Thing as T};\n",
        ),
        // a → b by a path through the crate root, b → a through `super::`.
        file("top/a.rs", "use crate::top::b::B;\n// super::c::Shared in a comment\n"),
        file(
            "top/b.rs",
            "fn f() { super::a::g(); }\n#[cfg(test)]\nmod tests {\n    use super::*;\n    use super::super::c::X;\n}\n",
        ),
        // c → a, and nothing back: no circle; its own name re-exported by the folder is c itself.
        file("top/c.rs", "use super::{Shared, a::{self, G}};\n"),
    ];
    let graph = file_graph(&files);
    let set = |names: &[&str]| names.iter().map(|n| (*n).to_owned()).collect::<BTreeSet<String>>();
    assert_eq!(graph["top/a.rs"], set(&["top/b.rs"]), "comments do not count");
    assert_eq!(graph["top/b.rs"], set(&["top/a.rs"]), "nor does the test module");
    assert_eq!(
        graph["top/c.rs"],
        set(&["top/a.rs"]),
        "a name of its own re-exported is c itself"
    );
    assert_eq!(
        circles(&graph),
        [("top".to_owned(), vec!["a.rs".to_owned(), "b.rs".to_owned()])]
    );
    let problems = circle_problems(&circles(&graph));
    assert!(
        problems[0].starts_with("src/top/: a.rs, b.rs use each other in a circle"),
        "{problems:?}"
    );
}
