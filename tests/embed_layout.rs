//! The layout of `src/embed/`: no import cycle between its files.
//!
//! Reads the sources (not the compiled crate), so it sees every `cfg` at once: each file is a
//! node, and a path in its code (`use` trees included, test modules excluded: a module's tests
//! may use what sits above it) that names another file's module, or an item of it, is an edge.
//! `super::…` and `crate::embed::…` are resolved from the module the path appears in (inline
//! modules such as `same.rs`'s `mod lanes` included); `mod x;` declarations are not edges.
//! A cycle fails the test with its files in order.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// A file of `src/embed` as its module path (`["embed", "engine", "quant"]`) and its source.
struct File {
    module: Vec<String>,
    source: String,
}

fn read_tree(root: &Path, module: &[String], out: &mut Vec<File>) {
    let mut entries: Vec<PathBuf> = std::fs::read_dir(root)
        .unwrap_or_else(|e| panic!("{}: {e}", root.display()))
        .map(|e| e.expect("dir entry").path())
        .collect();
    entries.sort();
    for path in entries {
        let name = path
            .file_name()
            .and_then(|n| n.to_str())
            .expect("utf-8 name")
            .to_string();
        if path.is_dir() {
            let mut m = module.to_vec();
            m.push(name);
            read_tree(&path, &m, out);
        } else if let Some(stem) = name.strip_suffix(".rs") {
            let mut m = module.to_vec();
            if stem != "mod" {
                m.push(stem.to_string());
            }
            let source = std::fs::read_to_string(&path).expect("source");
            out.push(File { module: m, source });
        }
    }
}

/// The source with comments, string and char literals blanked (same length, so offsets hold).
fn code_only(src: &str) -> String {
    let b = src.as_bytes();
    let mut out = b.to_vec();
    let mut i = 0;
    let blank = |out: &mut Vec<u8>, from: usize, to: usize| {
        for c in &mut out[from..to] {
            if *c != b'\n' {
                *c = b' ';
            }
        }
    };
    while i < b.len() {
        if b[i..].starts_with(b"//") {
            let end = b[i..]
                .iter()
                .position(|&c| c == b'\n')
                .map_or(b.len(), |p| i + p);
            blank(&mut out, i, end);
            i = end;
        } else if b[i..].starts_with(b"/*") {
            let end = src[i + 2..].find("*/").map_or(b.len(), |p| i + 2 + p + 2);
            blank(&mut out, i, end);
            i = end;
        } else if b[i] == b'r' && (b.get(i + 1) == Some(&b'#') || b.get(i + 1) == Some(&b'"')) {
            // Raw strings r"…", r#"…"#.
            let hashes = b[i + 1..].iter().take_while(|&&c| c == b'#').count();
            if b.get(i + 1 + hashes) == Some(&b'"') {
                let close = format!("\"{}", "#".repeat(hashes));
                let start = i + 2 + hashes;
                let end = src[start..]
                    .find(&close)
                    .map_or(b.len(), |p| start + p + close.len());
                blank(&mut out, i, end);
                i = end;
            } else {
                i += 1;
            }
        } else if b[i] == b'"' {
            let mut j = i + 1;
            while j < b.len() && b[j] != b'"' {
                j += if b[j] == b'\\' { 2 } else { 1 };
            }
            blank(&mut out, i, (j + 1).min(b.len()));
            i = j + 1;
        } else if b[i] == b'\'' {
            // A char literal ('x', '\n', '\u{..}'), not a lifetime ('a).
            let end = if b.get(i + 1) == Some(&b'\\') {
                b[i + 2..]
                    .iter()
                    .position(|&c| c == b'\'')
                    .map(|p| i + 2 + p + 1)
            } else {
                let ch = src[i + 1..].chars().next().map_or(1, char::len_utf8);
                (b.get(i + 1 + ch) == Some(&b'\'')).then_some(i + 2 + ch)
            };
            match end {
                Some(end) => {
                    blank(&mut out, i, end);
                    i = end;
                }
                None => i += 1,
            }
        } else {
            i += 1;
        }
    }
    String::from_utf8(out).expect("blanking keeps UTF-8")
}

/// Inline modules: (name, body span, whether a `cfg(… test …)` attribute precedes it).
fn inline_modules(code: &str) -> Vec<(String, usize, usize, bool)> {
    let b = code.as_bytes();
    let mut found = Vec::new();
    let mut at = 0;
    while let Some(p) = code[at..].find("mod ") {
        let start = at + p;
        at = start + 4;
        if start > 0 && (b[start - 1].is_ascii_alphanumeric() || b[start - 1] == b'_') {
            continue;
        }
        let rest = &code[start + 4..];
        let name: String = rest
            .chars()
            .take_while(|c| c.is_alphanumeric() || *c == '_')
            .collect();
        let after = rest[name.len()..].trim_start();
        if name.is_empty() || !after.starts_with('{') {
            continue;
        }
        let open = start + 4 + name.len() + (rest.len() - name.len() - after.len());
        let mut depth = 0usize;
        let mut close = b.len();
        for (k, &c) in b.iter().enumerate().skip(open) {
            if c == b'{' {
                depth += 1;
            } else if c == b'}' {
                depth -= 1;
                if depth == 0 {
                    close = k;
                    break;
                }
            }
        }
        // The attributes right before `mod`: on its line, and the lines above that are
        // attributes (`#[…]`, or the last line of one spread over several).
        let before = &code[..start];
        let line_start = before.rfind('\n').map_or(0, |n| n + 1);
        let same_line = &before[line_start..];
        let attrs: Vec<&str> = before[..line_start]
            .lines()
            .rev()
            .take_while(|l| {
                let l = l.trim();
                l.starts_with("#[") || l.ends_with(")]") || l.ends_with(',')
            })
            .chain(std::iter::once(same_line))
            .collect();
        let is_test = attrs
            .iter()
            .any(|a| a.contains("cfg") || a.trim_start().starts_with("test"))
            && attrs.iter().any(|a| {
                a.split(|c: char| !c.is_alphanumeric() && c != '_')
                    .any(|w| w == "test")
            });
        found.push((name, open, close, is_test));
    }
    found
}

/// Expands a `use` tree (`a::{b, c::{d, e}}`) into its paths.
fn expand(tree: &str) -> Vec<String> {
    let tree: String = tree.chars().filter(|c| !c.is_whitespace()).collect();
    let Some(open) = tree.find('{') else {
        return vec![tree.split(" as ").next().unwrap_or(&tree).to_string()];
    };
    let prefix = &tree[..open];
    let inner = &tree[open + 1..tree.len().saturating_sub(1)];
    let mut parts = Vec::new();
    let (mut depth, mut last) = (0, 0);
    for (k, c) in inner.char_indices() {
        match c {
            '{' => depth += 1,
            '}' => depth -= 1,
            ',' if depth == 0 => {
                parts.push(&inner[last..k]);
                last = k + 1;
            }
            _ => {}
        }
    }
    parts.push(&inner[last..]);
    parts
        .into_iter()
        .filter(|p| !p.is_empty())
        .flat_map(|p| {
            expand(p).into_iter().map(move |s| {
                if s == "self" {
                    prefix.trim_end_matches("::").to_string()
                } else {
                    format!("{prefix}{s}")
                }
            })
        })
        .collect()
}

/// The paths a file's non-test code names, each with the module it appears in.
fn paths(file: &File) -> Vec<(Vec<String>, String)> {
    let code = code_only(&file.source);
    let modules = inline_modules(&code);
    let tests: Vec<(usize, usize)> = modules.iter().filter(|m| m.3).map(|m| (m.1, m.2)).collect();
    let in_tests = |pos: usize| tests.iter().any(|&(a, b)| a <= pos && pos <= b);
    let scope = |pos: usize| {
        let mut m = file.module.clone();
        for (name, a, b, _) in &modules {
            if *a <= pos && pos <= *b {
                m.push(name.clone());
            }
        }
        m
    };
    let mut out = Vec::new();
    let bytes = code.as_bytes();
    let mut uses: Vec<(usize, usize)> = Vec::new();
    // `use` trees.
    let mut at = 0;
    while let Some(p) = code[at..].find("use ") {
        let start = at + p;
        at = start + 4;
        if start > 0 && (bytes[start - 1].is_ascii_alphanumeric() || bytes[start - 1] == b'_') {
            continue;
        }
        let Some(end) = code[start..].find(';') else {
            break;
        };
        uses.push((start, start + end));
        if !in_tests(start) {
            for path in expand(&code[start + 4..start + end]) {
                out.push((scope(start), path));
            }
        }
        at = start + end;
    }
    let in_use = |pos: usize| uses.iter().any(|&(a, b)| a <= pos && pos <= b);
    // Paths in expressions and types: `super::…`, `crate::…`, and `name::…` relative to the
    // module they appear in (a child module's name; anything else resolves to the file itself).
    let mut k = 0;
    while k < bytes.len() {
        let c = bytes[k];
        let starts = (c.is_ascii_alphabetic() || c == b'_')
            && (k == 0
                || !(bytes[k - 1].is_ascii_alphanumeric()
                    || bytes[k - 1] == b'_'
                    || bytes[k - 1] == b':'));
        if !starts {
            k += 1;
            continue;
        }
        let len = code[k..]
            .find(|c: char| !(c.is_alphanumeric() || c == '_' || c == ':'))
            .unwrap_or(code.len() - k);
        let path = code[k..k + len].trim_end_matches(':');
        if path.contains("::") && !in_tests(k) && !in_use(k) {
            out.push((scope(k), path.to_string()));
        }
        k += len.max(1);
    }
    out
}

/// The file module a path names: its absolute segments' longest prefix that is a file.
fn target(scope: &[String], path: &str, files: &BTreeSet<Vec<String>>) -> Option<Vec<String>> {
    let segments: Vec<&str> = path.split("::").filter(|s| !s.is_empty()).collect();
    let mut abs: Vec<String> = match segments.first() {
        Some(&"super") => scope.to_vec(),
        Some(&"crate") => Vec::new(),
        Some(&"self") => scope.to_vec(),
        Some(_) => scope.to_vec(),
        None => return None,
    };
    for (k, s) in segments.iter().enumerate() {
        match *s {
            "crate" if k == 0 => {}
            "self" => {}
            "super" => {
                abs.pop();
            }
            s => abs.push(s.to_string()),
        }
    }
    (1..=abs.len())
        .rev()
        .map(|n| abs[..n].to_vec())
        .find(|p| files.contains(p))
}

/// The import graph of a tree of sources: file module → the file modules it names.
fn graph(files: &[File]) -> BTreeMap<Vec<String>, BTreeSet<Vec<String>>> {
    let known: BTreeSet<Vec<String>> = files.iter().map(|f| f.module.clone()).collect();
    let mut edges = BTreeMap::new();
    for file in files {
        let set: &mut BTreeSet<Vec<String>> = edges.entry(file.module.clone()).or_default();
        for (scope, path) in paths(file) {
            if let Some(t) = target(&scope, &path, &known) {
                if t != file.module {
                    set.insert(t);
                }
            }
        }
    }
    edges
}

/// A cycle of the graph, if any, as its modules in order (the first repeated last).
fn find_cycle(edges: &BTreeMap<Vec<String>, BTreeSet<Vec<String>>>) -> Option<Vec<String>> {
    fn visit(
        node: &Vec<String>,
        edges: &BTreeMap<Vec<String>, BTreeSet<Vec<String>>>,
        state: &mut BTreeMap<Vec<String>, u8>,
        stack: &mut Vec<Vec<String>>,
    ) -> Option<Vec<String>> {
        state.insert(node.clone(), 1);
        stack.push(node.clone());
        for next in edges.get(node).into_iter().flatten() {
            match state.get(next).copied().unwrap_or(0) {
                1 => {
                    let from = stack.iter().position(|n| n == next).unwrap_or(0);
                    let mut cycle: Vec<String> =
                        stack[from..].iter().map(|m| m.join("::")).collect();
                    cycle.push(next.join("::"));
                    return Some(cycle);
                }
                0 => {
                    if let Some(c) = visit(next, edges, state, stack) {
                        return Some(c);
                    }
                }
                _ => {}
            }
        }
        stack.pop();
        state.insert(node.clone(), 2);
        None
    }
    let mut state = BTreeMap::new();
    for node in edges.keys() {
        if state.get(node).copied().unwrap_or(0) == 0 {
            if let Some(c) = visit(node, edges, &mut state, &mut Vec::new()) {
                return Some(c);
            }
        }
    }
    None
}

fn files_of(sources: &[(&str, &str)]) -> Vec<File> {
    sources
        .iter()
        .map(|(module, source)| File {
            module: module.split("::").map(str::to_string).collect(),
            source: source.to_string(),
        })
        .collect()
}

#[test]
fn src_embed_has_no_import_cycle() {
    // EMBED_LAYOUT_DIR points the check at another tree (to see it fail on an older layout).
    let root = std::env::var_os("EMBED_LAYOUT_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("src/embed"));
    let mut files = Vec::new();
    read_tree(&root, &["embed".to_string()], &mut files);
    assert!(
        files.len() > 10,
        "read {} files under {}",
        files.len(),
        root.display()
    );
    let edges = graph(&files);
    for (from, to) in &edges {
        let to: Vec<String> = to.iter().map(|t| t.join("::")).collect();
        println!("{} -> {}", from.join("::"), to.join(", "));
    }
    // The check sees the imports it must: the API uses the engine, the engine's leaves are used.
    let has = |from: &str, to: &str| {
        let f: Vec<String> = from.split("::").map(str::to_string).collect();
        let t: Vec<String> = to.split("::").map(str::to_string).collect();
        edges.get(&f).is_some_and(|s| s.contains(&t))
    };
    if std::env::var_os("EMBED_LAYOUT_DIR").is_none() {
        assert!(has("embed", "embed::engine::model"), "{edges:#?}");
        assert!(
            has("embed::engine::quant", "embed::engine::int8"),
            "{edges:#?}"
        );
        assert!(
            has("embed::engine::x86_quant", "embed::engine::int8"),
            "{edges:#?}"
        );
        assert!(
            has("embed::engine::same", "embed::engine::graph"),
            "{edges:#?}"
        );
        assert!(has("embed::engine::model", "embed::vector"), "{edges:#?}");
    }
    if let Some(cycle) = find_cycle(&edges) {
        panic!("import cycle in src/embed: {}", cycle.join(" -> "));
    }
}

#[test]
fn the_check_finds_cycles_through_super_use_trees_and_crate_paths() {
    let cyclic = files_of(&[
        (
            "embed",
            "mod a;\nmod b;\npub const N: usize = 3;\nfn f() { a::g(); }",
        ),
        ("embed::a", "use super::{b::{self, h}, N};\npub fn g() {}"),
        ("embed::b", "pub fn h() { crate::embed::a::g(); }"),
    ]);
    let cycle = find_cycle(&graph(&cyclic)).expect("a cycle");
    assert_eq!(cycle.first(), cycle.last());
    assert!(cycle.len() >= 3, "{cycle:?}");

    // The same files, with the back edges only in comments, strings and test modules: no cycle.
    let acyclic = files_of(&[
        ("embed", "mod a;\nmod b;\nfn f() { a::g(); b::h(); }"),
        (
            "embed::a",
            "// super::b::h\npub fn g() { let _ = \"super::b\"; }\n#[cfg(test)]\nmod tests {\n    use super::super::b;\n}",
        ),
        ("embed::b", "/// [`super::a::g`]\npub fn h() {}\n#[cfg(all(test, unix))]\nmod tests { use crate::embed::a; }"),
    ]);
    assert_eq!(find_cycle(&graph(&acyclic)), None);

    // An inline module's `super` is its file's module, not the parent's.
    let inline = files_of(&[
        ("embed", "mod a;\nfn f() { a::g(); }"),
        ("embed::a", "mod lanes { use super::g; }\npub fn g() {}"),
    ]);
    assert_eq!(find_cycle(&graph(&inline)), None);
}

/// The attribute lines right above line `at` (contiguous `#[…]` lines, multi-line ones and doc
/// comments included), joined.
fn attributes_above(lines: &[&str], at: usize) -> String {
    let mut k = at;
    let mut out = Vec::new();
    // Inside a multi-line attribute (its last line seen, its `#[` not yet).
    let mut inside = false;
    while k > 0 {
        let l = lines[k - 1].trim();
        if inside {
            inside = !l.starts_with("#[");
        } else if l.starts_with("#[") || l.starts_with("///") {
            // A whole attribute, a doc line, or the first line of one spread below (collected).
        } else if l.ends_with(")]") {
            inside = true;
        } else {
            break;
        }
        out.push(l);
        k -= 1;
    }
    out.join(" ")
}

/// Every wasm test hook and check (a function returning `Result<(), String>`, a `#[doc(hidden)]`
/// item) in `src/` is compiled only with the `test-hooks` feature or in test builds: the shipped
/// crate's API and the npm modules never hold them. `src/embed/test_hooks.rs` is declared under
/// the feature.
#[test]
fn test_hooks_are_behind_the_test_hooks_feature() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let root = std::env::var_os("EMBED_LAYOUT_DIR")
        .map(|d| PathBuf::from(d).join(".."))
        .unwrap_or(src);
    let mut stack = vec![root.clone()];
    let mut offenders = Vec::new();
    let mut declared = false;
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).expect("src dir") {
            let path = entry.expect("entry").path();
            if path.is_dir() {
                stack.push(path);
                continue;
            }
            if path.extension().is_none_or(|e| e != "rs") || path.ends_with("test_hooks.rs") {
                continue;
            }
            let source = std::fs::read_to_string(&path).expect("source");
            let code = code_only(&source);
            let tests: Vec<(usize, usize)> = inline_modules(&code)
                .into_iter()
                .filter(|m| m.3)
                .map(|m| (m.1, m.2))
                .collect();
            let lines: Vec<&str> = source.lines().collect();
            let mut offset = 0;
            for (n, line) in lines.iter().enumerate() {
                let pos = offset;
                offset += line.len() + 1;
                if tests.iter().any(|&(a, b)| a <= pos && pos <= b) {
                    continue;
                }
                let code_line = &code[pos..(pos + line.len()).min(code.len())];
                if code_line.contains("mod test_hooks") {
                    declared = attributes_above(&lines, n).contains("feature = \"test-hooks\"");
                }
                let hook = code_line.contains("#[doc(hidden)]")
                    || (code_line.contains("fn ") && code_line.contains("Result<(), String>"));
                if !hook {
                    continue;
                }
                let attrs = attributes_above(&lines, n);
                let gated = attrs.contains("feature = \"test-hooks\"")
                    || attrs.starts_with("#[cfg(test)]")
                    || attrs.contains("#[cfg(test)]");
                if !gated {
                    offenders.push(format!(
                        "{}:{}: {}",
                        path.strip_prefix(&root).unwrap_or(&path).display(),
                        n + 1,
                        line.trim()
                    ));
                }
            }
        }
    }
    assert!(
        offenders.is_empty(),
        "test hooks outside the test-hooks feature:\n{}",
        offenders.join("\n")
    );
    assert!(
        declared,
        "src/embed/mod.rs declares `mod test_hooks` only with feature = \"test-hooks\""
    );
}
