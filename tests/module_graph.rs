//! No import circles between the source files of `src/` and
//! `crates/core/src/` (issue 24): file A imports from file B when a `use`
//! line or a path in its code (`crate::x::y`, `super::y`, `gradcode_core::x`,
//! or a path through a module it imported) names an item that B defines.
//!
//! Names are followed through re-exports (`pub use`, globs included) to the
//! file that defines them, and a re-export itself is no import. A module's
//! use of its own submodules (the modules it declares, and theirs) is no
//! import either: a `mod.rs` that dispatches to its children or re-exports
//! their items while a child uses the parent's own items (`super::X`) is no
//! circle. An item that cannot be found (a macro's output, say) counts as
//! the module's own file. Comments and string literals are not read; test
//! modules are (a circle through a test is a circle of the test build).

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

/// Circles on the landed tree that other work removes; the test fails when
/// one disappears, so that it is taken off this list.
const KNOWN: &[&[&str]] = &[];

#[derive(Debug, Clone, PartialEq)]
enum Tok {
    Ident(String),
    PathSep,
    Open(char),
    Close(char),
    Punct(char),
}

/// The tokens of Rust source without comments, strings and char literals.
fn tokens(text: &str) -> Vec<Tok> {
    let c: Vec<char> = text.chars().collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i < c.len() {
        let ch = c[i];
        let next = c.get(i + 1).copied();
        if ch == '/' && next == Some('/') {
            while i < c.len() && c[i] != '\n' {
                i += 1;
            }
        } else if ch == '/' && next == Some('*') {
            let mut depth = 0;
            while i < c.len() {
                if c[i] == '/' && c.get(i + 1) == Some(&'*') {
                    depth += 1;
                    i += 2;
                } else if c[i] == '*' && c.get(i + 1) == Some(&'/') {
                    depth -= 1;
                    i += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    i += 1;
                }
            }
        } else if ch == '"' || ((ch == 'b' || ch == 'c') && next == Some('"')) {
            i += if ch == '"' { 1 } else { 2 };
            while i < c.len() && c[i] != '"' {
                i += if c[i] == '\\' { 2 } else { 1 };
            }
            i += 1;
        } else if (ch == 'r' || (ch == 'b' && next == Some('r')))
            && {
                let start = if ch == 'r' { i + 1 } else { i + 2 };
                let mut j = start;
                while c.get(j) == Some(&'#') {
                    j += 1;
                }
                c.get(j) == Some(&'"') && (j > start || c.get(start) == Some(&'"'))
            }
            && (i == 0 || !(c[i - 1].is_alphanumeric() || c[i - 1] == '_'))
        {
            let mut j = if ch == 'r' { i + 1 } else { i + 2 };
            let mut hashes = 0;
            while c[j] == '#' {
                hashes += 1;
                j += 1;
            }
            j += 1;
            loop {
                if j >= c.len() {
                    break;
                }
                if c[j] == '"' && (1..=hashes).all(|h| c.get(j + h) == Some(&'#')) {
                    j += 1 + hashes;
                    break;
                }
                j += 1;
            }
            i = j;
        } else if ch == '\'' {
            // A char literal ('x', '\n', '\u{..}') or a lifetime ('a).
            if next == Some('\\') {
                i += 2;
                while i < c.len() && c[i] != '\'' {
                    i += 1;
                }
                i += 1;
            } else if c.get(i + 2) == Some(&'\'') {
                i += 3;
            } else {
                i += 1;
                while i < c.len() && (c[i].is_alphanumeric() || c[i] == '_') {
                    i += 1;
                }
            }
        } else if ch.is_alphabetic() || ch == '_' {
            let start = i;
            while i < c.len() && (c[i].is_alphanumeric() || c[i] == '_') {
                i += 1;
            }
            let word: String = c[start..i].iter().collect();
            out.push(Tok::Ident(word.trim_start_matches("r#").to_string()));
        } else if ch.is_ascii_digit() {
            while i < c.len() && (c[i].is_alphanumeric() || c[i] == '_' || c[i] == '.') {
                if c[i] == '.' && !c.get(i + 1).is_some_and(|d| d.is_ascii_digit()) {
                    break;
                }
                i += 1;
            }
        } else if ch == ':' && next == Some(':') {
            out.push(Tok::PathSep);
            i += 2;
        } else if "([{".contains(ch) {
            out.push(Tok::Open(ch));
            i += 1;
        } else if ")]}".contains(ch) {
            out.push(Tok::Close(ch));
            i += 1;
        } else if ch.is_whitespace() {
            i += 1;
        } else {
            out.push(Tok::Punct(ch));
            i += 1;
        }
    }
    out
}

/// A module path: the crate's name, then the modules.
type ModPath = Vec<String>;

/// What a module holds: its items, its `use` bindings (name → absolute
/// path, re-export or not) and its glob imports.
#[derive(Debug, Default)]
struct Module {
    file: String,
    defines: BTreeSet<String>,
    bindings: BTreeMap<String, ModPath>,
    globs: Vec<ModPath>,
}

/// One source file: where it is and its text.
struct Source {
    /// The path shown (`src/cli/inspect.rs`).
    shown: String,
    /// Its module path.
    module: ModPath,
    text: String,
}

/// The module path of `relative` (a path under a crate's `src/`).
fn module_of(krate: &str, relative: &str) -> ModPath {
    let mut parts: Vec<String> = vec![krate.to_string()];
    let rel = relative.trim_end_matches(".rs");
    let segs: Vec<&str> = rel.split('/').collect();
    for (i, s) in segs.iter().enumerate() {
        let last = i + 1 == segs.len();
        if last && (*s == "mod" || *s == "lib" || *s == "main") {
            continue;
        }
        parts.push(s.to_string());
    }
    parts
}

/// A use tree from `toks[*i]`, after `prefix`: (full path, binding name;
/// `None` for a glob).
fn use_tree(
    toks: &[Tok],
    i: &mut usize,
    prefix: &[String],
    out: &mut Vec<(ModPath, Option<String>)>,
) {
    let mut path = prefix.to_vec();
    loop {
        match toks.get(*i) {
            Some(Tok::PathSep) => *i += 1,
            Some(Tok::Ident(name)) if name == "as" => {
                *i += 1;
                if let Some(Tok::Ident(alias)) = toks.get(*i) {
                    *i += 1;
                    let name = alias.clone();
                    out.push((path, Some(name)));
                }
                return;
            }
            Some(Tok::Ident(name)) => {
                path.push(name.clone());
                *i += 1;
                if !matches!(toks.get(*i), Some(Tok::PathSep)) {
                    if matches!(toks.get(*i), Some(Tok::Ident(a)) if a == "as") {
                        continue;
                    }
                    let last = path.last().cloned();
                    if last.as_deref() == Some("self") {
                        path.pop();
                        let name = path.last().cloned();
                        out.push((path, name));
                    } else {
                        out.push((path, last));
                    }
                    return;
                }
            }
            Some(Tok::Punct('*')) => {
                *i += 1;
                out.push((path, None));
                return;
            }
            Some(Tok::Open('{')) => {
                *i += 1;
                loop {
                    match toks.get(*i) {
                        Some(Tok::Close('}')) => {
                            *i += 1;
                            return;
                        }
                        Some(Tok::Punct(',')) => *i += 1,
                        None => return,
                        _ => use_tree(toks, i, &path, out),
                    }
                }
            }
            _ => return,
        }
    }
}

/// Path segments made absolute from `module`: `crate`, `self`, `super`;
/// `None` for a path into another crate than those read.
fn absolute(path: &[String], module: &[String], roots: &BTreeSet<String>) -> Option<ModPath> {
    let first = path.first()?;
    let mut out: ModPath = match first.as_str() {
        "crate" => vec![module[0].clone()],
        "self" => module.to_vec(),
        "super" => {
            let mut m = module.to_vec();
            let mut rest = path;
            while rest.first().map(String::as_str) == Some("super") {
                m.pop();
                rest = &rest[1..];
            }
            m.extend(rest.iter().cloned());
            return Some(m);
        }
        other if roots.contains(other) => vec![other.to_string()],
        _ => return None,
    };
    out.extend(path[1..].iter().cloned());
    Some(out)
}

/// The module graph of `sources`: each file's modules, and its imports.
struct Graph {
    modules: BTreeMap<ModPath, Module>,
    /// Per file: paths it names (absolute).
    names: BTreeMap<String, Vec<ModPath>>,
    /// Per file: globs it imports without re-exporting.
    glob_imports: BTreeMap<String, Vec<ModPath>>,
    /// Per file: its module path.
    file_modules: BTreeMap<String, ModPath>,
    /// Crate name → `#[macro_export]` macros → file.
    macros: BTreeMap<String, BTreeMap<String, String>>,
}

const ITEMS: [&str; 10] = [
    "fn",
    "struct",
    "enum",
    "trait",
    "type",
    "const",
    "static",
    "union",
    "mod",
    "macro_rules",
];

fn read(sources: &[Source]) -> Graph {
    let roots: BTreeSet<String> = sources.iter().map(|s| s.module[0].clone()).collect();
    let mut g = Graph {
        modules: BTreeMap::new(),
        names: BTreeMap::new(),
        glob_imports: BTreeMap::new(),
        file_modules: BTreeMap::new(),
        macros: BTreeMap::new(),
    };
    // Per file: the paths in its code (module, path).
    type Paths = Vec<(ModPath, Vec<String>)>;
    let mut raw: Vec<(String, Paths)> = Vec::new();
    // Every `use` leaf: (file, module, path, name (None: a glob), re-export).
    type Use = (String, ModPath, Vec<String>, Option<String>, bool);
    let mut uses: Vec<Use> = Vec::new();

    for s in sources {
        g.modules.entry(s.module.clone()).or_default().file = s.shown.clone();
        g.file_modules.insert(s.shown.clone(), s.module.clone());
        let toks = tokens(&s.text);
        // Inline modules: (name, brace depth inside).
        let mut stack: Vec<(String, usize)> = Vec::new();
        let mut depth = 0usize;
        let mut paths: Vec<(ModPath, Vec<String>)> = Vec::new();
        let mut i = 0;
        let module_at = |stack: &[(String, usize)]| {
            let mut m = s.module.clone();
            m.extend(stack.iter().map(|(n, _)| n.clone()));
            m
        };
        while i < toks.len() {
            let scope_depth = stack.last().map_or(0, |(_, d)| *d);
            match &toks[i] {
                Tok::Open('{') => {
                    depth += 1;
                    i += 1;
                }
                Tok::Close('}') => {
                    if stack.last().is_some_and(|(_, d)| *d == depth) {
                        stack.pop();
                    }
                    depth = depth.saturating_sub(1);
                    i += 1;
                }
                Tok::Ident(w) if w == "use" => {
                    let public = i > 0
                        && match &toks[i - 1] {
                            Tok::Ident(p) => p == "pub",
                            Tok::Close(')') => {
                                let mut j = i - 1;
                                while j > 0 && toks[j] != Tok::Open('(') {
                                    j -= 1;
                                }
                                j > 0 && toks[j - 1] == Tok::Ident("pub".into())
                            }
                            _ => false,
                        };
                    i += 1;
                    let mut tree = Vec::new();
                    use_tree(&toks, &mut i, &[], &mut tree);
                    let here = module_at(&stack);
                    let module = g.modules.entry(here.clone()).or_default();
                    if module.file.is_empty() {
                        module.file = s.shown.clone();
                    }
                    for (path, name) in tree {
                        uses.push((s.shown.clone(), here.clone(), path, name, public));
                    }
                }
                Tok::Ident(w) if ITEMS.contains(&w.as_str()) && depth == scope_depth => {
                    let kw = w.clone();
                    let mut j = i + 1;
                    if kw == "macro_rules" && toks.get(j) == Some(&Tok::Punct('!')) {
                        j += 1;
                    }
                    if let Some(Tok::Ident(name)) = toks.get(j) {
                        if !(kw == "const" && (name == "fn" || name == "unsafe")) {
                            let here = module_at(&stack);
                            let module = g.modules.entry(here).or_default();
                            if module.file.is_empty() {
                                module.file = s.shown.clone();
                            }
                            if kw != "mod" {
                                module.defines.insert(name.clone());
                            }
                            if kw == "macro_rules" {
                                g.macros
                                    .entry(s.module[0].clone())
                                    .or_default()
                                    .insert(name.clone(), s.shown.clone());
                            }
                            if kw == "mod" && toks.get(j + 1) == Some(&Tok::Open('{')) {
                                stack.push((name.clone(), depth + 1));
                                i = j + 1;
                                continue;
                            }
                        }
                    }
                    i += 1;
                }
                Tok::Ident(w) if i == 0 || toks[i - 1] != Tok::PathSep => {
                    // A path in code: `a::b::c`.
                    let mut path = vec![w.clone()];
                    let mut j = i + 1;
                    while toks.get(j) == Some(&Tok::PathSep) {
                        match toks.get(j + 1) {
                            Some(Tok::Ident(n)) => {
                                path.push(n.clone());
                                j += 2;
                            }
                            _ => break,
                        }
                    }
                    if path.len() > 1 {
                        paths.push((module_at(&stack), path));
                    }
                    i = j.max(i + 1);
                }
                _ => i += 1,
            }
        }
        raw.push((s.shown.clone(), paths));
    }
    // A path from `crate`, `self`, `super`, a crate read, or a submodule
    // of `here`; `None` for another crate's.
    let absolutize = |g: &Graph, path: &[String], here: &ModPath| {
        absolute(path, here, &roots).or_else(|| {
            let mut child = here.clone();
            child.push(path[0].clone());
            g.modules.contains_key(&child).then(|| {
                let mut p = here.clone();
                p.extend(path.iter().cloned());
                p
            })
        })
    };
    // File → the names its `use` lines bind.
    let mut file_bindings: BTreeMap<String, BTreeMap<String, ModPath>> = BTreeMap::new();
    for (file, here, path, name, public) in uses {
        let Some(abs) = absolutize(&g, &path, &here) else {
            continue;
        };
        let module = g.modules.get_mut(&here).expect("registered when read");
        match name {
            Some(n) => {
                module.bindings.insert(n.clone(), abs.clone());
                file_bindings
                    .entry(file.clone())
                    .or_default()
                    .insert(n, abs.clone());
                if !public {
                    g.names.entry(file).or_default().push(abs);
                }
            }
            None => {
                module.globs.push(abs.clone());
                if !public {
                    g.glob_imports.entry(file).or_default().push(abs);
                }
            }
        }
    }
    // Paths in code: absolute, or through a name the file's `use` lines bind.
    for (file, paths) in raw {
        let bindings = file_bindings.remove(&file).unwrap_or_default();
        for (here, path) in paths {
            let abs = absolutize(&g, &path, &here).or_else(|| {
                bindings.get(&path[0]).map(|b| {
                    let mut p = b.clone();
                    p.extend(path[1..].iter().cloned());
                    p
                })
            });
            if let Some(abs) = abs {
                g.names.entry(file.clone()).or_default().push(abs);
            }
        }
    }
    g
}

impl Graph {
    /// The file that defines what `path` names, following re-exports
    /// (`strict`: `None` unless it is found), and whether the path names a
    /// module (its file), not an item.
    fn resolve(&self, path: &[String], strict: bool, hops: usize) -> Option<(String, bool)> {
        if hops > 24 || path.is_empty() {
            return None;
        }
        let mut at: ModPath = vec![path[0].clone()];
        self.modules.get(&at)?;
        for (k, seg) in path.iter().enumerate().skip(1) {
            let mut next = at.clone();
            next.push(seg.clone());
            let module = &self.modules[&at];
            // A module and an item can share a name (a module `m` with a
            // function `m`): followed by more segments it is the module.
            let item = module.defines.contains(seg) || module.bindings.contains_key(seg);
            if self.modules.contains_key(&next) && (k + 1 < path.len() || !item) {
                at = next;
                continue;
            }
            if module.defines.contains(seg) {
                return Some((module.file.clone(), false));
            }
            if at.len() == 1 {
                if let Some(f) = self.macros.get(&at[0]).and_then(|m| m.get(seg)) {
                    return Some((f.clone(), false));
                }
            }
            if let Some(target) = module.bindings.get(seg) {
                let mut p = target.clone();
                p.extend(path[k + 1..].iter().cloned());
                if let Some(f) = self.resolve(&p, true, hops + 1) {
                    return Some(f);
                }
            }
            for glob in &module.globs {
                let mut p = glob.clone();
                p.extend(path[k..].iter().cloned());
                if let Some(f) = self.resolve(&p, true, hops + 1) {
                    return Some(f);
                }
            }
            return if strict {
                None
            } else {
                Some((module.file.clone(), false))
            };
        }
        Some((self.modules[&at].file.clone(), true))
    }

    /// Whether `to` is `from` itself or one of its submodules' files.
    fn within(&self, from: &str, to: &str) -> bool {
        match (self.file_modules.get(from), self.file_modules.get(to)) {
            (Some(a), Some(b)) => b.starts_with(a),
            _ => from == to,
        }
    }

    /// File → the files it imports from (itself and its submodules excluded).
    fn edges(&self) -> BTreeMap<String, BTreeSet<String>> {
        let mut out: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
        for m in self.modules.values() {
            out.entry(m.file.clone()).or_default();
        }
        // A module named alone (`use crate::m;`) is no import: the paths
        // through it are. A glob imports from the module's file.
        let named = self.names.iter().map(|(f, p)| (f, p, false));
        let globs = self.glob_imports.iter().map(|(f, p)| (f, p, true));
        for (file, paths, glob) in named.chain(globs) {
            for p in paths {
                if let Some((to, module)) = self.resolve(p, false, 0) {
                    if (glob || !module) && !self.within(file, &to) {
                        out.entry(file.clone()).or_default().insert(to);
                    }
                }
            }
        }
        out
    }
}

/// The circles of `edges`: each strongly connected set of two or more
/// files, as one cycle through its first file (`a -> b -> a`).
fn circles(edges: &BTreeMap<String, BTreeSet<String>>) -> Vec<Vec<String>> {
    let reach = |from: &str| {
        let mut seen = BTreeSet::new();
        let mut todo = vec![from.to_string()];
        while let Some(f) = todo.pop() {
            for t in edges.get(&f).into_iter().flatten() {
                if seen.insert(t.clone()) {
                    todo.push(t.clone());
                }
            }
        }
        seen
    };
    let reachable: BTreeMap<&String, BTreeSet<String>> =
        edges.keys().map(|f| (f, reach(f))).collect();
    let mut done = BTreeSet::new();
    let mut out = Vec::new();
    for f in edges.keys() {
        if done.contains(f) || !reachable[f].contains(f) {
            continue;
        }
        let set: BTreeSet<String> = reachable[f]
            .iter()
            .filter(|g| reachable.get(g).is_some_and(|r| r.contains(f)))
            .cloned()
            .collect();
        done.extend(set.iter().cloned());
        // A shortest cycle through f, by breadth-first search inside the set.
        let mut parent: BTreeMap<String, String> = BTreeMap::new();
        let mut queue = std::collections::VecDeque::from([f.clone()]);
        let mut cycle = vec![f.clone()];
        'search: while let Some(x) = queue.pop_front() {
            for t in edges.get(&x).into_iter().flatten() {
                if !set.contains(t) {
                    continue;
                }
                if t == f {
                    let mut back = vec![x.clone()];
                    let mut y = x.clone();
                    while let Some(p) = parent.get(&y) {
                        back.push(p.clone());
                        y = p.clone();
                    }
                    back.reverse();
                    cycle = back;
                    cycle.push(f.clone());
                    break 'search;
                }
                if t != f && !parent.contains_key(t) {
                    parent.insert(t.clone(), x.clone());
                    queue.push_back(t.clone());
                }
            }
        }
        out.push(cycle);
    }
    out
}

/// Every `.rs` file under `dir`, as (path relative to `dir`, text).
fn rust_files(dir: &Path, rel: &str, out: &mut Vec<(String, String)>) {
    let mut entries: Vec<_> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.unwrap().path())
        .collect();
    entries.sort();
    for p in entries {
        let name = p.file_name().unwrap().to_string_lossy().to_string();
        let rel = if rel.is_empty() {
            name.clone()
        } else {
            format!("{rel}/{name}")
        };
        if p.is_dir() {
            rust_files(&p, &rel, out);
        } else if name.ends_with(".rs") {
            out.push((rel, std::fs::read_to_string(&p).unwrap()));
        }
    }
}

/// The sources of the repository: the top crate (`gradcode`, its binary's
/// `main.rs` a crate of its own) and the core (`gradcode_core`).
fn repository_sources() -> Vec<Source> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut sources = Vec::new();
    for (krate, dir) in [("gradcode", "src"), ("gradcode_core", "crates/core/src")] {
        let mut files = Vec::new();
        rust_files(&root.join(dir), "", &mut files);
        for (rel, text) in files {
            let krate = if krate == "gradcode" && rel == "main.rs" {
                "gradcode_main"
            } else {
                krate
            };
            sources.push(Source {
                shown: format!("{dir}/{rel}"),
                module: module_of(krate, &rel),
                text,
            });
        }
    }
    sources
}

fn describe(circle: &[String]) -> String {
    circle.join(" -> ")
}

#[test]
fn no_import_circles_between_source_files() {
    let sources = repository_sources();
    assert!(sources.len() > 50, "read {} files", sources.len());
    let graph = read(&sources);
    let edges = graph.edges();
    // The graph is read: known imports are found.
    for (from, to) in [
        ("src/cli/advise.rs", "crates/core/src/study/variant.rs"),
        (
            "crates/core/src/config/validate.rs",
            "crates/core/src/config/schema.rs",
        ),
        ("src/cli/inspect.rs", "src/trace/measured.rs"),
    ] {
        assert!(
            edges[from].contains(to),
            "{from} -> {to} not read: {:?}",
            edges[from]
        );
    }
    let found = circles(&edges);
    let known = |c: &[String]| {
        let set: BTreeSet<&str> = c.iter().map(String::as_str).collect();
        KNOWN
            .iter()
            .any(|k| k.iter().copied().collect::<BTreeSet<_>>() == set)
    };
    let new: Vec<String> = found
        .iter()
        .filter(|c| !known(&c[..c.len() - 1]))
        .map(|c| describe(c))
        .collect();
    assert!(
        new.is_empty(),
        "import circles between files:\n  {}",
        new.join("\n  ")
    );
    for k in KNOWN {
        let k: Vec<String> = k.iter().map(|s| s.to_string()).collect();
        assert!(
            found.iter().any(|c| {
                c[..c.len() - 1].iter().collect::<BTreeSet<_>>() == k.iter().collect()
            }),
            "the known circle {k:?} is gone: take it off KNOWN"
        );
    }
}

/// The core's top modules import from no module that imports from them
/// (`config` reads nothing of `learn`, which reads `config`).
#[test]
fn no_import_circles_between_core_modules() {
    let sources = repository_sources();
    let graph = read(&sources);
    let top = |file: &str| {
        let rest = file.strip_prefix("crates/core/src/")?;
        Some(rest.split('/').next()?.trim_end_matches(".rs").to_string())
    };
    let mut edges: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for (from, tos) in graph.edges() {
        let Some(a) = top(&from) else { continue };
        for to in tos {
            if let Some(b) = top(&to) {
                if a != b && a != "lib" && b != "lib" {
                    edges.entry(a.clone()).or_default().insert(b);
                }
            }
        }
    }
    let found = circles(&edges);
    let shown: Vec<String> = found.iter().map(|c| describe(c)).collect();
    assert!(
        shown.is_empty(),
        "import circles between core modules:\n  {}",
        shown.join("\n  ")
    );
}

// ---- the reader on small synthetic sources ----

fn synthetic(files: &[(&str, &str)]) -> BTreeMap<String, BTreeSet<String>> {
    let sources: Vec<Source> = files
        .iter()
        .map(|(rel, text)| Source {
            shown: rel.to_string(),
            module: module_of("k", rel),
            text: text.to_string(),
        })
        .collect();
    read(&sources).edges()
}

#[test]
fn a_circle_of_use_lines_is_found_and_named() {
    let edges = synthetic(&[
        ("lib.rs", "mod a;\nmod b;\nmod c;\n"),
        ("a.rs", "use crate::b::Beta;\npub struct Alpha;\n"),
        ("b.rs", "pub struct Beta(crate::c::Gamma);\n"),
        (
            "c.rs",
            "use super::a::{self, Alpha as A};\npub struct Gamma;\n",
        ),
    ]);
    let found = circles(&edges);
    assert_eq!(found.len(), 1, "{found:?}");
    assert_eq!(describe(&found[0]), "a.rs -> b.rs -> c.rs -> a.rs");
    // Without c's import there is none.
    let edges = synthetic(&[
        ("lib.rs", "mod a;\nmod b;\nmod c;\n"),
        ("a.rs", "use crate::b::Beta;\npub struct Alpha;\n"),
        ("b.rs", "pub struct Beta(crate::c::Gamma);\n"),
        (
            "c.rs",
            "// use super::a::Alpha;\nconst S: &str = \"crate::a::Alpha\";\npub struct Gamma;\n",
        ),
    ]);
    assert!(circles(&edges).is_empty(), "{edges:?}");
}

#[test]
fn re_exports_lead_to_the_defining_file_and_are_no_import() {
    // m/mod.rs re-exports its child's item and defines one the child uses:
    // no circle. x.rs takes Leaf through the re-export: an import of leaf.rs.
    let edges = synthetic(&[
        ("lib.rs", "pub mod m;\nmod x;\n"),
        (
            "m/mod.rs",
            "mod leaf;\npub use leaf::Leaf;\npub use leaf::*;\npub trait Shared {}\n",
        ),
        (
            "m/leaf.rs",
            "use super::Shared;\npub struct Leaf;\nimpl Shared for Leaf {}\n",
        ),
        (
            "x.rs",
            "use crate::m;\nfn f() -> m::Leaf { crate::m::Leaf }\n",
        ),
    ]);
    assert!(circles(&edges).is_empty(), "{edges:?}");
    assert_eq!(edges["x.rs"], BTreeSet::from(["m/leaf.rs".to_string()]));
    assert_eq!(edges["m/leaf.rs"], BTreeSet::from(["m/mod.rs".to_string()]));
    assert!(edges["m/mod.rs"].is_empty(), "{edges:?}");
    // A module and the function it re-exports share a name: `s::S` is the
    // module's S, so a circle through it is found.
    let edges = synthetic(&[
        ("lib.rs", "mod m;\n"),
        ("m/mod.rs", "mod s;\nmod t;\npub use s::{S, s};\n"),
        (
            "m/s.rs",
            "use super::t::T;\npub struct S(T);\npub fn s() {}\n",
        ),
        ("m/t.rs", "use super::s::S;\npub struct T;\nfn f(_: S) {}\n"),
    ]);
    assert_eq!(describe(&circles(&edges)[0]), "m/s.rs -> m/t.rs -> m/s.rs");
}

#[test]
fn super_inside_an_inline_module_is_the_file() {
    // `super::check` in `mod imp` names this file's item (no import), and a
    // path in code through `super::` to a sibling is an import.
    let edges = synthetic(&[
        ("lib.rs", "mod a;\nmod b;\n"),
        (
            "a.rs",
            "fn check() {}\nmod imp {\n    use super::check;\n    fn g() { let c = '}'; super::super::b::run(); }\n}\n",
        ),
        (
            "b.rs",
            "pub fn run() { let s = r#\"crate::a::check\"#; }\n#[cfg(test)]\nmod tests {\n    use super::*;\n}\n",
        ),
    ]);
    assert_eq!(edges["a.rs"], BTreeSet::from(["b.rs".to_string()]));
    assert!(edges["b.rs"].is_empty(), "{edges:?}");
    // b's test module importing a makes a circle: tests count.
    let edges = synthetic(&[
        ("lib.rs", "mod a;\nmod b;\n"),
        (
            "a.rs",
            "fn check() {}\nmod imp {\n    fn g() { super::super::b::run(); }\n}\n",
        ),
        (
            "b.rs",
            "pub fn run() {}\n#[cfg(test)]\nmod tests {\n    use crate::a::check;\n}\n",
        ),
    ]);
    assert_eq!(describe(&circles(&edges)[0]), "a.rs -> b.rs -> a.rs");
}

/// Issue 40, item 5 (issue 24's rule, narrowed from `src/trace/` and three
/// subcommands to the backend): the HDF5 seam is in one place. The `hdf5` feature
/// forks only in `src/trace/backend/` (which picks the HDF5 backend or the
/// one that refuses); everything else calls the backend without asking
/// which it is (`cfg!`, a value, not a fork, may report the build's
/// features elsewhere).
#[test]
fn the_hdf5_feature_forks_only_in_the_trace_backend() {
    let mut forks = Vec::new();
    for source in repository_sources() {
        if source.shown.starts_with("src/trace/backend/") {
            continue;
        }
        for (n, line) in source.text.lines().enumerate() {
            let code = line.split("//").next().unwrap_or_default();
            if code.contains("cfg")
                && code.contains("feature = \"hdf5\"")
                && !code.contains("cfg!(")
            {
                forks.push(format!("{}:{}: {}", source.shown, n + 1, line.trim()));
            }
        }
    }
    assert!(
        forks.is_empty(),
        "feature forks on hdf5 outside src/trace/backend/:\n  {}",
        forks.join("\n  ")
    );
}
