//! The library's folders are its layers, and imports only go down: the graph of
//! `crate::<module>` references between the top-level modules of `sim/src` (its
//! folders and loose files) has no cycle, and nothing under `engine/` names the
//! fenced protocol (`hosts`), the checker, the scenario, the zoo or the report.
//!
//! The test reads the source text, not the compiled crate: it strips comments
//! (doc comments included), string and character literals, then collects every
//! `crate::…` path, in `use` lines and inline, with `use crate::{a, b::c}`
//! groups expanded and root re-exports (`crate::Report`) resolved through the
//! `pub use` lines of `lib.rs`. References inside one top-level module (a
//! file-level circle inside one folder) are not edges.

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::{Path, PathBuf};

/// What the engine must not name: everything that knows about leases, the
/// protocol under test, or how a run is judged and reported.
const ABOVE_THE_ENGINE: [&str; 5] = ["hosts", "checker", "scenario", "zoo", "report"];

/// One edge of the module graph, with the file that makes it (for messages).
type Edges = BTreeMap<String, BTreeMap<String, BTreeSet<String>>>;

#[test]
fn the_top_level_modules_of_sim_src_form_no_import_circle() {
    // Proves that no chain of `crate::` references leads from a top-level module of the library
    // back to itself, so the folders can be read as layers, each using only those below it.
    let edges = module_graph(&source_root());
    if let Some(cycle) = find_cycle(&edges) {
        let mut message = format!(
            "import circle between top-level modules: {}\n",
            cycle.join(" -> ")
        );
        for pair in cycle.windows(2) {
            let files = &edges[&pair[0]][&pair[1]];
            let files: Vec<&str> = files.iter().map(String::as_str).collect();
            message += &format!("  {} -> {}: {}\n", pair[0], pair[1], files.join(", "));
        }
        let circle: Vec<String> = edges
            .keys()
            .filter(|m| reaches(&edges, &cycle[0], m) && reaches(&edges, m, &cycle[0]))
            .cloned()
            .collect();
        message += &format!(
            "all {} modules in circles with {}: {}\n",
            circle.len(),
            cycle[0],
            circle.join(", ")
        );
        panic!("{message}");
    }
}

#[test]
fn the_engine_names_no_lease_checker_scenario_zoo_or_report_module() {
    // Proves that the engine layer (`engine/`) refers to none of the modules above it, so it can
    // route messages and timers for any set of hosts without knowing what a lease is.
    let root = source_root();
    let mut offences = Vec::new();
    for file in rust_files(&root.join("engine")) {
        let text = fs::read_to_string(&file).expect("readable source file");
        for module in
            referenced_modules(&strip_comments_and_literals(&text), &root_reexports(&root))
        {
            if ABOVE_THE_ENGINE.contains(&module.as_str()) {
                offences.push(format!(
                    "{} refers to crate::{module}",
                    display(&root, &file)
                ));
            }
        }
    }
    assert!(
        offences.is_empty(),
        "the engine reaches up:\n  {}",
        offences.join("\n  ")
    );
}

#[test]
fn the_reference_collector_sees_groups_inline_paths_and_reexports_but_not_comments() {
    // Proves the collector the two tests above rely on: grouped and inline paths count, a root
    // re-export is resolved to its module, and comments, doc comments and strings do not count.
    let reexports = BTreeMap::from([("Report".to_string(), "report".to_string())]);
    let source = r##"
        //! See [`Checker`](crate::checker::Checker).
        use crate::{engine::{Engine, Hosts}, time::SimTime};
        /* crate::zoo in a block /* nested crate::svg */ comment */
        fn f(r: &crate::Report) -> crate :: limits::Halt {
            let s = "crate::sweep"; let c = '"'; let raw = r#"crate::merge"#;
            crate::units::ms(0) // crate::history
        }
    "##;
    let found = referenced_modules(&strip_comments_and_literals(source), &reexports);
    let expected: BTreeSet<String> = ["engine", "time", "report", "limits", "units"]
        .map(String::from)
        .into();
    assert_eq!(found, expected);
}

fn source_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("src")
}

fn display(root: &Path, file: &Path) -> String {
    file.strip_prefix(root)
        .unwrap_or(file)
        .display()
        .to_string()
}

/// The top-level modules `lib.rs` declares: each `mod x;` (its file or
/// folder) with no text of its own in `lib.rs`, and each inline `mod x { … }`
/// with its body (a public face re-exporting from other modules, like
/// `limits`).
fn top_level_modules(root: &Path) -> BTreeMap<String, String> {
    let lib =
        strip_comments_and_literals(&fs::read_to_string(root.join("lib.rs")).expect("lib.rs"));
    let mut modules = BTreeMap::new();
    for (at, _) in lib.match_indices("mod ") {
        if at > 0 && !lib[..at].ends_with(|c: char| c.is_whitespace() || c == ')') {
            continue;
        }
        let rest = &lib[at + "mod ".len()..];
        let name: String = rest
            .chars()
            .take_while(|c| c.is_alphanumeric() || *c == '_')
            .collect();
        let after = rest[name.len()..].trim_start();
        if after.starts_with(';') {
            modules.insert(name, String::new());
        } else if after.starts_with('{') {
            let body_start = lib.len() - after.len() + 1;
            let mut depth = 1;
            let body_end = lib[body_start..]
                .char_indices()
                .find_map(|(i, c)| {
                    depth += match c {
                        '{' => 1,
                        '}' => -1,
                        _ => 0,
                    };
                    (depth == 0).then_some(body_start + i)
                })
                .expect("an inline module closes");
            modules.insert(name, lib[body_start..body_end].to_string());
        }
    }
    modules
}

/// Which module each name re-exported at the crate root comes from
/// (`pub use report::Report;` makes `crate::Report` a reference to `report`).
fn root_reexports(root: &Path) -> BTreeMap<String, String> {
    let lib =
        strip_comments_and_literals(&fs::read_to_string(root.join("lib.rs")).expect("lib.rs"));
    let mut names = BTreeMap::new();
    for statement in lib.split(';') {
        let statement = statement.trim();
        let Some(path) = statement.strip_prefix("pub use ") else {
            continue;
        };
        let path: String = path.chars().filter(|c| !c.is_whitespace()).collect();
        let Some((module, rest)) = path.split_once("::") else {
            continue;
        };
        let rest = rest.trim_start_matches('{').trim_end_matches('}');
        for item in rest.split(',') {
            let last = item.rsplit("::").next().unwrap_or(item);
            let name = last
                .rsplit(" as ")
                .next()
                .unwrap_or(last)
                .trim_matches(['{', '}']);
            if !name.is_empty() {
                names.insert(name.to_string(), module.to_string());
            }
        }
    }
    names
}

/// Every `.rs` file under `dir` (or `dir.rs` itself), sorted.
fn rust_files(dir: &Path) -> Vec<PathBuf> {
    let mut files = Vec::new();
    let as_file = dir.with_extension("rs");
    if as_file.is_file() {
        files.push(as_file);
    }
    let mut stack = vec![dir.to_path_buf()];
    while let Some(next) = stack.pop() {
        let Ok(entries) = fs::read_dir(&next) else {
            continue;
        };
        for entry in entries {
            let path = entry.expect("directory entry").path();
            if path.is_dir() {
                stack.push(path);
            } else if path.extension().is_some_and(|e| e == "rs") {
                files.push(path);
            }
        }
    }
    files.sort();
    files
}

/// The graph `module -> module it refers to -> files that refer`.
fn module_graph(root: &Path) -> Edges {
    let modules = top_level_modules(root);
    let reexports = root_reexports(root);
    let mut edges = Edges::new();
    for (module, inline_body) in &modules {
        let mut sources = vec![("lib.rs".to_string(), inline_body.clone())];
        for file in rust_files(&root.join(module)) {
            let text =
                strip_comments_and_literals(&fs::read_to_string(&file).expect("source file"));
            sources.push((display(root, &file), text));
        }
        let targets = edges.entry(module.clone()).or_default();
        for (file, text) in sources {
            for target in referenced_modules(&text, &reexports) {
                if &target != module && modules.contains_key(&target) {
                    targets.entry(target).or_default().insert(file.clone());
                }
            }
        }
    }
    edges
}

/// Whether a chain of references leads from `from` to `to` (every module
/// reaches itself).
fn reaches(edges: &Edges, from: &str, to: &str) -> bool {
    let mut seen = BTreeSet::new();
    let mut stack = vec![from.to_string()];
    while let Some(module) = stack.pop() {
        if module == to {
            return true;
        }
        if seen.insert(module.clone()) {
            stack.extend(
                edges
                    .get(&module)
                    .into_iter()
                    .flat_map(BTreeMap::keys)
                    .cloned(),
            );
        }
    }
    false
}

/// The first cycle found by a depth-first search, as `[a, b, …, a]`.
fn find_cycle(edges: &Edges) -> Option<Vec<String>> {
    #[derive(Clone, Copy, PartialEq)]
    enum Mark {
        Unseen,
        OnPath,
        Done,
    }
    fn visit(
        node: &str,
        edges: &Edges,
        marks: &mut BTreeMap<String, Mark>,
        path: &mut Vec<String>,
    ) -> Option<Vec<String>> {
        marks.insert(node.to_string(), Mark::OnPath);
        path.push(node.to_string());
        for next in edges.get(node).into_iter().flat_map(BTreeMap::keys) {
            match marks.get(next).copied().unwrap_or(Mark::Unseen) {
                Mark::OnPath => {
                    let start = path.iter().position(|n| n == next).expect("on the path");
                    let mut cycle = path[start..].to_vec();
                    cycle.push(next.clone());
                    return Some(cycle);
                }
                Mark::Unseen => {
                    if let Some(cycle) = visit(next, edges, marks, path) {
                        return Some(cycle);
                    }
                }
                Mark::Done => {}
            }
        }
        path.pop();
        marks.insert(node.to_string(), Mark::Done);
        None
    }
    let mut marks = BTreeMap::new();
    for node in edges.keys() {
        if marks.get(node).copied().unwrap_or(Mark::Unseen) == Mark::Unseen {
            if let Some(cycle) = visit(node, edges, &mut marks, &mut Vec::new()) {
                return Some(cycle);
            }
        }
    }
    None
}

/// The source with comments, string literals and character literals blanked
/// out (newlines kept), so only code remains.
fn strip_comments_and_literals(source: &str) -> String {
    let chars: Vec<char> = source.chars().collect();
    let mut out = String::with_capacity(source.len());
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        let next = chars.get(i + 1).copied();
        if c == '/' && next == Some('/') {
            while i < chars.len() && chars[i] != '\n' {
                i += 1;
            }
        } else if c == '/' && next == Some('*') {
            let mut depth = 0;
            while i < chars.len() {
                if chars[i] == '/' && chars.get(i + 1) == Some(&'*') {
                    depth += 1;
                    i += 2;
                } else if chars[i] == '*' && chars.get(i + 1) == Some(&'/') {
                    depth -= 1;
                    i += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    i += 1;
                }
            }
            out.push(' ');
        } else if c == 'r' && (next == Some('#') || next == Some('"')) && !ident_before(&chars, i) {
            let hashes = chars[i + 1..].iter().take_while(|&&h| h == '#').count();
            if chars.get(i + 1 + hashes) != Some(&'"') {
                out.push(c);
                i += 1;
                continue;
            }
            i += hashes + 2;
            while i < chars.len() {
                if chars[i] == '"'
                    && chars[i + 1..]
                        .iter()
                        .take(hashes)
                        .filter(|&&h| h == '#')
                        .count()
                        == hashes
                {
                    i += 1 + hashes;
                    break;
                }
                i += 1;
            }
            out.push_str("\"\"");
        } else if c == '"' {
            i += 1;
            while i < chars.len() && chars[i] != '"' {
                i += if chars[i] == '\\' { 2 } else { 1 };
            }
            i += 1;
            out.push_str("\"\"");
        } else if c == '\'' && next == Some('\\') {
            i += 2;
            while i < chars.len() && chars[i] != '\'' {
                i += 1;
            }
            i += 1;
            out.push_str("' '");
        } else if c == '\'' && chars.get(i + 2) == Some(&'\'') {
            i += 3;
            out.push_str("' '");
        } else {
            out.push(c);
            i += 1;
        }
    }
    out
}

fn ident_before(chars: &[char], i: usize) -> bool {
    i > 0 && (chars[i - 1].is_alphanumeric() || chars[i - 1] == '_')
}

/// The top-level modules (or re-exported root names, resolved) that every
/// `crate::…` path in `code` starts with.
fn referenced_modules(code: &str, reexports: &BTreeMap<String, String>) -> BTreeSet<String> {
    let tokens = tokenize(code);
    let mut found = BTreeSet::new();
    for (index, token) in tokens.iter().enumerate() {
        if token != "crate" || tokens.get(index + 1).map(String::as_str) != Some("::") {
            continue;
        }
        if index > 0 && tokens[index - 1] == "$" {
            continue;
        }
        let mut names = Vec::new();
        match tokens.get(index + 2).map(String::as_str) {
            Some("{") => group_heads(&tokens[index + 3..], &mut names),
            Some(name) => names.push(name.to_string()),
            None => {}
        }
        for name in names {
            let module = reexports.get(&name).cloned().unwrap_or(name);
            if module
                .chars()
                .next()
                .is_some_and(|c| c.is_lowercase() || c == '_')
                && module != "self"
            {
                found.insert(module);
            }
        }
    }
    found
}

/// The first name of each item of a `{ … }` group (the tokens after `{`).
fn group_heads(tokens: &[String], names: &mut Vec<String>) {
    let mut depth = 0;
    let mut at_item_start = true;
    for token in tokens {
        match token.as_str() {
            "{" => depth += 1,
            "}" if depth == 0 => return,
            "}" => depth -= 1,
            "," if depth == 0 => at_item_start = true,
            name if depth == 0 && at_item_start => {
                names.push(name.to_string());
                at_item_start = false;
            }
            _ => {}
        }
    }
}

/// Identifiers, `::`, and single punctuation characters.
fn tokenize(code: &str) -> Vec<String> {
    let chars: Vec<char> = code.chars().collect();
    let mut tokens = Vec::new();
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        if c.is_alphanumeric() || c == '_' {
            let start = i;
            while i < chars.len() && (chars[i].is_alphanumeric() || chars[i] == '_') {
                i += 1;
            }
            tokens.push(chars[start..i].iter().collect());
        } else if c == ':' && chars.get(i + 1) == Some(&':') {
            tokens.push("::".to_string());
            i += 2;
        } else {
            if !c.is_whitespace() {
                tokens.push(c.to_string());
            }
            i += 1;
        }
    }
    tokens
}
