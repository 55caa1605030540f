// SPDX-License-Identifier: GPL-2.0-only
//! Builds a sched_ext program (one or more BPF translation units, exactly as
//! its own build compiles them) for the host, as one shared object with the
//! host layer (scx/host.c): used by build.rs for the built-in programs
//! (warmcore's own and the scx peers) and, at run time, for variants of
//! them (tests) and `bpf:DIR`. Plain std only: build.rs includes this file.
//!
//! Per translation unit (a `*.bpf.c` the program's build compiles):
//! 1. its tables, from its text (the file with the parts it includes from
//!    beside it in place): its maps, its globals (what a loader may write:
//!    every non-static file-scope variable), its `SEC("syscall")` programs
//!    with the layout of their argument struct; appended to a wrapper that
//!    includes the prelude, then the source with `const` defined away (the
//!    loader writes `const volatile` globals before load), then the tables;
//! 2. compiled to LLVM IR as for -O2 but before any optimisation, so that
//!    no pass has yet used C's undefined behaviour of a division by zero;
//! 3. every division and remainder whose divisor is not a non-zero constant
//!    rewritten into a call of a helper with the BPF ISA's semantics (x / 0
//!    = 0, x % 0 = x, and signed division of the smallest value by -1 gives
//!    it back, its remainder 0: never a host signal); see `bpf_arith`;
//!
//! Then host.c, with a generated glue header naming the units and the ops
//! struct, also as IR; all are linked into one module, optimised and
//! compiled together (so that a kfunc's presence is known to the optimiser,
//! see `build`), and linked as a shared object: no `-z defs`, so that a
//! symbol the host does not provide (a kfunc, a BPF helper) stays undefined
//! in the object and the loader refuses the program naming it (program.rs).

use std::fmt::Write as _;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

/// How to compile for the host.
#[derive(Clone, Debug)]
pub struct Toolchain {
    pub clang: String,
    /// Flags of every compile: defines, warnings, and the include
    /// directories (generated headers, libbpf, the scx headers, scx/).
    pub cflags: Vec<String>,
    /// scx/host.c.
    pub host_c: PathBuf,
}

impl Toolchain {
    /// The toolchain as a few lines of text (build.rs writes it for the
    /// run-time builds) and back.
    pub fn to_text(&self) -> String {
        let mut s = format!("{}\n{}\n", self.clang, self.host_c.display());
        for f in &self.cflags {
            s.push_str(f);
            s.push('\n');
        }
        s
    }

    /// Whether what a build at run time needs is here: the compiler, and
    /// the headers of the build this binary came from. An installed binary
    /// (a wheel, the Debian package) may lack both.
    pub fn check(&self) -> Result<(), String> {
        if Command::new(&self.clang).arg("--version").output().is_err() {
            return Err(format!("bpf:DIR compiles its program with {}, which is not installed: install it (Debian: apt install clang-19 llvm-19)", self.clang));
        }
        if !self.host_c.is_file() {
            return Err(format!(
                "bpf:DIR builds against the sources of the checkout this binary was built in ({} is missing): run it with a checkout's build (make build)",
                self.host_c.display()
            ));
        }
        Ok(())
    }

    pub fn from_text(text: &str) -> Toolchain {
        let mut lines = text.lines();
        let clang = lines.next().unwrap_or("clang").to_string();
        let host_c = PathBuf::from(lines.next().unwrap_or(""));
        Toolchain { clang, host_c, cflags: lines.map(str::to_string).collect() }
    }
}

/// A program's source file as the compiler reads it: its text with every
/// `#include "NAME"` of a file beside the including one replaced by that
/// file (once), and the files read.
pub fn expand(file: &Path) -> Result<(Vec<PathBuf>, String), String> {
    fn go(file: &Path, files: &mut Vec<PathBuf>) -> Result<String, String> {
        files.push(file.to_path_buf());
        let text = fs::read_to_string(file).map_err(|e| format!("reading {}: {e}", file.display()))?;
        let dir = file.parent().unwrap_or(Path::new("."));
        let mut out = String::with_capacity(text.len());
        for line in text.split_inclusive('\n') {
            let part = line
                .trim_start()
                .strip_prefix("#include")
                .map(str::trim_start)
                .and_then(|r| r.strip_prefix('"'))
                .and_then(|r| r.split('"').next())
                .map(|name| dir.join(name))
                .filter(|p| p.is_file());
            match part {
                Some(p) if files.contains(&p) => {}
                Some(p) => out.push_str(&go(&p, files)?),
                None => out.push_str(line),
            }
        }
        Ok(out)
    }
    let mut files = Vec::new();
    let text = go(file, &mut files)?;
    Ok((files, text))
}

/// Build `sources` (the program's translation units, the first holding its
/// `SCX_OPS_DEFINE`) into `out/program.so`; the compiler's own messages on
/// failure.
pub fn build(tc: &Toolchain, sources: &[PathBuf], out: &Path) -> Result<PathBuf, String> {
    fs::create_dir_all(out).map_err(|e| format!("{}: {e}", out.display()))?;
    let mut ops = None;
    let mut units = Vec::new();
    for (i, src) in sources.iter().enumerate() {
        let (_, text) = expand(src)?;
        let text = strip_comments(&text);
        if ops.is_none() {
            ops = ops_name(&text);
        }
        let mut c = String::from("/* Generated by crates/sim/src/scx/build_program.rs. */\n#include \"prelude.h\"\n#define const\n");
        writeln!(c, "#include \"{}\"", src.display()).unwrap();
        c.push_str("#undef const\n#include \"tables.h\"\n");
        c.push_str(&tables(&text, &format!("wc_tu_{i}"))?);
        let path = out.join(format!("tu{i}.c"));
        fs::write(&path, c).map_err(|e| format!("{}: {e}", path.display()))?;
        units.push(path);
    }
    let Some(ops) = ops else {
        return Err(format!("no SCX_OPS_DEFINE(name, ...) in {}", sources.iter().map(|s| s.display().to_string()).collect::<Vec<_>>().join(", ")));
    };
    let mut glue = String::from("/* Generated by crates/sim/src/scx/build_program.rs. */\n");
    for i in 0..units.len() {
        writeln!(glue, "extern struct wc_tu wc_tu_{i};").unwrap();
    }
    writeln!(glue, "static struct wc_tu *const wc_tus[] = {{ {} }};", (0..units.len()).map(|i| format!("&wc_tu_{i}")).collect::<Vec<_>>().join(", ")).unwrap();
    writeln!(glue, "extern struct sched_ext_ops {ops};\n#define WC_OPS {ops}").unwrap();
    fs::write(out.join("wc_glue.h"), glue).map_err(|e| e.to_string())?;

    let inc = format!("-I{}", out.display());
    // The units in parallel (each is a compile of vmlinux.h), and host.c,
    // as LLVM IR.
    let host_bc = out.join("host.bc");
    let (objects, host) = std::thread::scope(|s| {
        let handles: Vec<_> = units.iter().map(|u| s.spawn(|| compile_unit(tc, u, &inc))).collect();
        let host = run(Command::new(&tc.clang)
            .args(["-O2", "-Xclang", "-disable-llvm-passes", "-emit-llvm", "-c"])
            .arg(&inc)
            .args(&tc.cflags)
            .arg("-o")
            .arg(&host_bc)
            .arg(&tc.host_c));
        let objects: Vec<Result<PathBuf, String>> =
            handles.into_iter().map(|h| h.join().unwrap_or_else(|_| Err("a compile thread panicked".into()))).collect();
        (objects, host)
    });
    host?;
    let mut irs = vec![host_bc];
    for o in objects {
        irs.push(o?);
    }
    // One module: as the kernel's loader resolves each kfunc the program
    // declares weak (present or absent) before the verifier prunes the
    // branches that test an absent one, the optimiser folds every
    // bpf_ksym_exists() of a kfunc host.c defines to true and drops the
    // compat fallbacks behind it; what is left undefined is a call the
    // program would make (refused at load, program.rs).
    let linked = out.join("program.ll");
    let llvm_link = tool(&tc.clang, "llvm-link");
    run(Command::new(&llvm_link).arg("-S").arg("-o").arg(&linked).args(&irs))?;
    let ir = fs::read_to_string(&linked).map_err(|e| format!("{}: {e}", linked.display()))?;
    let linked = out.join("program.absent.ll");
    fs::write(&linked, absent_kfuncs(&ir)).map_err(|e| e.to_string())?;
    let obj = out.join("program.o");
    run(Command::new(&tc.clang).args(["-O2", "-fPIC", "-c", "-Wno-override-module"]).arg("-o").arg(&obj).arg(&linked))?;
    let so = out.join("program.so");
    run(Command::new(&tc.clang).args(["-shared", "-fPIC", "-Wl,-Bsymbolic"]).arg("-o").arg(&so).arg(&obj))?;
    Ok(so)
}

/// An LLVM tool of the compiler's installation (llvm-link beside clang-19).
fn tool(clang: &str, name: &str) -> String {
    if let Ok(out) = Command::new(clang).arg(format!("-print-prog-name={name}")).output() {
        let p = String::from_utf8_lossy(&out.stdout).trim().to_string();
        if p.contains('/') && Path::new(&p).is_file() {
            return p;
        }
    }
    match clang.rsplit_once("clang") {
        Some((dir, suffix)) => format!("{dir}{name}{suffix}"),
        None => name.to_string(),
    }
}

fn compile_unit(tc: &Toolchain, unit: &Path, inc: &str) -> Result<PathBuf, String> {
    let ll = unit.with_extension("ll");
    run(Command::new(&tc.clang)
        .args(["-O2", "-Xclang", "-disable-llvm-passes", "-S", "-emit-llvm"])
        .arg(inc)
        .args(&tc.cflags)
        .arg("-o")
        .arg(&ll)
        .arg(unit))?;
    let ir = fs::read_to_string(&ll).map_err(|e| format!("{}: {e}", ll.display()))?;
    let rewritten = ll.with_extension("bpf.ll");
    fs::write(&rewritten, bpf_arith(&ir)).map_err(|e| e.to_string())?;
    Ok(rewritten)
}

fn run(cmd: &mut Command) -> Result<(), String> {
    let out = cmd.output().map_err(|e| format!("running {:?}: {e}", cmd.get_program()))?;
    if out.status.success() {
        Ok(())
    } else {
        Err(format!("{} failed:\n{}", cmd.get_program().to_string_lossy(), String::from_utf8_lossy(&out.stderr)))
    }
}

/// The name given to `SCX_OPS_DEFINE(name, ...)`.
pub fn ops_name(text: &str) -> Option<String> {
    let rest = text.split("SCX_OPS_DEFINE(").nth(1)?;
    Some(rest.split(',').next()?.trim().to_string())
}

/// BPF's arithmetic in LLVM IR (the BPF ISA, RFC 9669, 4.1; the kernel's
/// verifier patches the same cases, do_misc_fixups): every `udiv`, `sdiv`,
/// `urem` and `srem` whose divisor is not a constant other than 0 (and,
/// signed, -1) becomes a call of an always-inlined helper that tests the
/// divisor first.
pub fn bpf_arith(ir: &str) -> String {
    let mut out = String::with_capacity(ir.len() + 4096);
    let mut used: Vec<(&'static str, String)> = Vec::new();
    for line in ir.lines() {
        match rewrite_div(line) {
            Some((new, op, ty)) => {
                if !used.iter().any(|(o, t)| *o == op && *t == ty) {
                    used.push((op, ty));
                }
                out.push_str(&new);
            }
            None => out.push_str(line),
        }
        out.push('\n');
    }
    for (op, ty) in used {
        let body = match op {
            "udiv" => format!("  %z = icmp eq {ty} %b, 0\n  br i1 %z, label %zero, label %do\nzero:\n  ret {ty} 0\ndo:\n  %r = udiv {ty} %a, %b\n  ret {ty} %r\n"),
            "urem" => format!("  %z = icmp eq {ty} %b, 0\n  br i1 %z, label %zero, label %do\nzero:\n  ret {ty} %a\ndo:\n  %r = urem {ty} %a, %b\n  ret {ty} %r\n"),
            "sdiv" => format!("  %z = icmp eq {ty} %b, 0\n  br i1 %z, label %zero, label %m1\nzero:\n  ret {ty} 0\nm1:\n  %n = icmp eq {ty} %b, -1\n  br i1 %n, label %neg, label %do\nneg:\n  %g = sub {ty} 0, %a\n  ret {ty} %g\ndo:\n  %r = sdiv {ty} %a, %b\n  ret {ty} %r\n"),
            _ => format!("  %z = icmp eq {ty} %b, 0\n  br i1 %z, label %zero, label %m1\nzero:\n  ret {ty} %a\nm1:\n  %n = icmp eq {ty} %b, -1\n  br i1 %n, label %one, label %do\none:\n  ret {ty} 0\ndo:\n  %r = srem {ty} %a, %b\n  ret {ty} %r\n"),
        };
        writeln!(out, "\ndefine internal {ty} @__wc_bpf_{op}_{ty}({ty} %a, {ty} %b) alwaysinline nounwind {{\nentry:\n{body}}}").unwrap();
    }
    out
}

/// The kfuncs the program declares weak and the host does not define,
/// once every unit and host.c are one module: each is absent, as libbpf
/// leaves a weak kfunc the kernel lacks. Its address (bpf_ksym_exists) is
/// null, so the optimiser drops the branches that test it, as the verifier
/// prunes them; a call left after that is one the program makes, and goes to
/// `wc_absent_NAME`, which nothing defines: the loader refuses the program
/// naming NAME (program.rs).
pub fn absent_kfuncs(ir: &str) -> String {
    let mut names = Vec::new();
    for line in ir.lines() {
        if let Some(rest) = line.strip_prefix("declare extern_weak ") {
            if let Some(name) = rest.split('@').nth(1).and_then(|r| r.split('(').next()) {
                names.push(name.to_string());
            }
        }
    }
    if names.is_empty() {
        return ir.to_string();
    }
    let ident = |c: char| c.is_ascii_alphanumeric() || c == '_' || c == '.' || c == '$';
    let mut out = String::with_capacity(ir.len());
    for line in ir.lines() {
        let mut l = line.to_string();
        for n in &names {
            let at = format!("@{n}");
            if !l.contains(&at) {
                continue;
            }
            // Calls first, then any other use of the address.
            l = l.replace(&format!("@{n}("), &format!("@wc_absent_{n}("));
            let mut s = String::with_capacity(l.len());
            let mut rest = l.as_str();
            while let Some(i) = rest.find(&at) {
                let after = &rest[i + at.len()..];
                s.push_str(&rest[..i]);
                if after.chars().next().is_some_and(ident) {
                    s.push_str(&at);
                } else {
                    s.push_str("null");
                }
                rest = after;
            }
            s.push_str(rest);
            l = s;
        }
        if let Some(rest) = l.strip_prefix("declare extern_weak ") {
            l = format!("declare {rest}");
        }
        out.push_str(&l);
        out.push('\n');
    }
    out
}

/// `%x = udiv [exact] iN A, B[, !meta]` with a divisor that may be 0 (or
/// -1, signed): the same as a call, the op and the type.
fn rewrite_div(line: &str) -> Option<(String, &'static str, String)> {
    let (lhs, rhs) = line.split_once(" = ")?;
    if !lhs.trim_start().starts_with('%') {
        return None;
    }
    let mut words = rhs.splitn(2, ' ');
    let op = match words.next()? {
        "udiv" => "udiv",
        "sdiv" => "sdiv",
        "urem" => "urem",
        "srem" => "srem",
        _ => return None,
    };
    let mut rest = words.next()?;
    if let Some(r) = rest.strip_prefix("exact ") {
        rest = r;
    }
    let (ty, operands) = rest.split_once(' ')?;
    if !ty.starts_with('i') || ty.len() < 2 || !ty[1..].chars().all(|c| c.is_ascii_digit()) {
        return None; // vectors and the like: not from a BPF program's C
    }
    // The operands end at the first top-level ", !" (metadata), if any.
    let (operands, meta) = match operands.find(", !") {
        Some(i) => (&operands[..i], &operands[i..]),
        None => (operands, ""),
    };
    let (a, b) = split_top_comma(operands)?;
    let b = b.trim();
    if let Ok(v) = b.parse::<i128>() {
        let signed = op.starts_with('s');
        if v != 0 && !(signed && v == -1) {
            return None;
        }
    }
    Some((format!("{lhs} = call {ty} @__wc_bpf_{op}_{ty}({ty} {}, {ty} {b}){meta}", a.trim()), op, ty.to_string()))
}

/// Split "A, B" at its last comma outside brackets.
fn split_top_comma(s: &str) -> Option<(&str, &str)> {
    let mut depth = 0i32;
    let mut at = None;
    for (i, c) in s.char_indices() {
        match c {
            '(' | '[' | '{' | '<' => depth += 1,
            ')' | ']' | '}' | '>' => depth -= 1,
            ',' if depth == 0 => at = Some(i),
            _ => {}
        }
    }
    let i = at?;
    Some((&s[..i], &s[i + 1..]))
}

/// The text without comments (string and character literals kept), and
/// with preprocessor lines (and their continuations) blanked.
pub fn strip_comments(text: &str) -> String {
    let b = text.as_bytes();
    let mut out = String::with_capacity(text.len());
    let mut i = 0;
    let mut line_start = true;
    while i < b.len() {
        let c = b[i];
        if line_start {
            // A preprocessor directive: skip to its end.
            let mut j = i;
            while j < b.len() && (b[j] == b' ' || b[j] == b'\t') {
                j += 1;
            }
            if j < b.len() && b[j] == b'#' {
                while j < b.len() && b[j] != b'\n' {
                    if b[j] == b'\\' && j + 1 < b.len() && b[j + 1] == b'\n' {
                        j += 1;
                    }
                    j += 1;
                }
                i = j;
                continue;
            }
        }
        line_start = false;
        if c == b'/' && i + 1 < b.len() && b[i + 1] == b'/' {
            while i < b.len() && b[i] != b'\n' {
                i += 1;
            }
            continue;
        }
        if c == b'/' && i + 1 < b.len() && b[i + 1] == b'*' {
            i += 2;
            while i + 1 < b.len() && !(b[i] == b'*' && b[i + 1] == b'/') {
                if b[i] == b'\n' {
                    out.push('\n');
                }
                i += 1;
            }
            i += 2;
            out.push(' ');
            continue;
        }
        if c == b'"' || c == b'\'' {
            let start = i;
            i += 1;
            while i < b.len() && b[i] != c {
                if b[i] == b'\\' {
                    i += 1;
                }
                i += 1;
            }
            i += 1;
            out.push_str(&text[start..i.min(b.len())]);
            continue;
        }
        if c == b'\n' {
            line_start = true;
        }
        // Multi-byte characters are copied whole.
        let ch = text[i..].chars().next().unwrap();
        out.push(ch);
        i += ch.len_utf8();
    }
    out
}

/// The top-level statements of (comment-free) C text: declarations ending
/// in `;` and function definitions ending in `}`, whitespace collapsed.
pub fn statements(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut cur = String::new();
    let mut depth = 0i32;
    let mut in_str: Option<char> = None;
    let mut prev = ' ';
    for c in text.chars() {
        if let Some(q) = in_str {
            cur.push(c);
            if c == q && prev != '\\' {
                in_str = None;
            }
            prev = if prev == '\\' && c == '\\' { ' ' } else { c };
            continue;
        }
        match c {
            '"' | '\'' => in_str = Some(c),
            '{' | '(' | '[' => depth += 1,
            '}' | ')' | ']' => depth -= 1,
            _ => {}
        }
        cur.push(if c.is_whitespace() { ' ' } else { c });
        if depth == 0 && (c == ';' || (c == '}' && is_function_body(&cur))) {
            let s = cur.split_whitespace().collect::<Vec<_>>().join(" ");
            if !s.is_empty() {
                out.push(s);
            }
            cur.clear();
        }
        prev = c;
    }
    out
}

/// `...) { ... }`: the statement so far is a function definition.
fn is_function_body(stmt: &str) -> bool {
    let mut depth = 0;
    for (i, c) in stmt.char_indices().rev() {
        match c {
            '}' => depth += 1,
            '{' => {
                depth -= 1;
                if depth == 0 {
                    return stmt[..i].trim_end().ends_with(')');
                }
            }
            _ => {}
        }
    }
    false
}

/// A top-level variable a loader may write: name, and whether it is an array.
#[derive(Clone, Debug, PartialEq)]
pub struct Global {
    pub name: String,
    pub array: bool,
}

/// The program's writable globals: every non-static, non-extern file-scope
/// variable declared without a macro or section (which excludes maps, the
/// ops struct, `private()` kptrs and UEI), as a loader's skeleton shows
/// them in `.rodata` (`const volatile`), `.data` and `.bss`.
pub fn globals(text: &str) -> Vec<Global> {
    let mut out = Vec::new();
    for s in statements(text) {
        let first = s.split_whitespace().next().unwrap_or("");
        if matches!(first, "static" | "extern" | "typedef" | "struct" | "enum" | "union")
            && !(first == "struct" && !s.contains('{') && !s.contains('('))
        {
            continue;
        }
        if s.ends_with('}') || top_level_has(&s, '(') || s.contains('{') && !s.contains('=') {
            continue;
        }
        let decl = s.trim_end_matches(';');
        for (i, d) in split_top(decl, ',').into_iter().enumerate() {
            let d = d.split('=').next().unwrap_or("").trim();
            let array = d.contains('[');
            let head = d.split('[').next().unwrap_or("").trim();
            let name = head.rsplit(|c: char| c.is_whitespace() || c == '*').next().unwrap_or("");
            // The first declarator carries the type: a name alone is no declaration.
            if name.is_empty() || !is_ident(name) || (i == 0 && !head.contains(' ')) {
                continue;
            }
            if ["__weak", "__hidden"].contains(&name) {
                continue;
            }
            out.push(Global { name: name.to_string(), array });
        }
    }
    out
}

fn is_ident(s: &str) -> bool {
    s.chars().next().is_some_and(|c| c.is_ascii_alphabetic() || c == '_') && s.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// Whether `c` occurs outside brackets and strings (a '(' outside an
/// initializer: a call, a prototype, a macro).
fn top_level_has(s: &str, c: char) -> bool {
    let before_init = s.split('=').next().unwrap_or("");
    before_init.contains(c)
}

/// Split at `sep` outside brackets.
fn split_top(s: &str, sep: char) -> Vec<&str> {
    let mut out = Vec::new();
    let mut depth = 0i32;
    let mut start = 0;
    for (i, c) in s.char_indices() {
        match c {
            '(' | '[' | '{' => depth += 1,
            ')' | ']' | '}' => depth -= 1,
            _ if c == sep && depth == 0 => {
                out.push(&s[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    out.push(&s[start..]);
    out
}

/// `struct { ... } NAME SEC(".maps");`: each map's name and body.
pub fn maps(text: &str) -> Vec<(String, String)> {
    let mut found = Vec::new();
    let mut rest = text;
    while let Some(at) = rest.find("SEC(\".maps\")") {
        let before = &rest[..at];
        if let Some(close) = before.rfind('}') {
            let name = before[close + 1..].trim().to_string();
            if let Some(open) = before[..close].rfind("struct {") {
                found.push((name, before[open..close].to_string()));
            }
        }
        rest = &rest[at + 1..];
    }
    found
}

/// A `SEC("syscall")` program: its name and the struct its argument points
/// to (None for `void *` or no argument).
#[derive(Clone, Debug, PartialEq)]
pub struct SyscallProg {
    pub name: String,
    pub arg_struct: Option<String>,
}

pub fn syscall_progs(text: &str) -> Vec<SyscallProg> {
    let mut out = Vec::new();
    for part in text.split("SEC(\"syscall\")").skip(1) {
        let Some(open) = part.find('(') else { continue };
        let head = part[..open].trim();
        let name = head.rsplit(|c: char| c.is_whitespace() || c == '*').next().unwrap_or("").to_string();
        let args = part[open + 1..].split(')').next().unwrap_or("");
        let arg_struct = args
            .trim()
            .strip_prefix("struct ")
            .and_then(|r| r.split(|c: char| c.is_whitespace() || c == '*').next())
            .map(str::to_string);
        if is_ident(&name) {
            out.push(SyscallProg { name, arg_struct });
        }
    }
    out
}

/// The members of `struct NAME { ... };` in the text, in order.
pub fn struct_fields(text: &str, name: &str) -> Option<Vec<String>> {
    let start = text.find(&format!("struct {name} {{")).or_else(|| text.find(&format!("struct {name}{{")))?;
    let body = &text[start..];
    let open = body.find('{')?;
    let close = body.find('}')?;
    let mut fields = Vec::new();
    for decl in body[open + 1..close].split(';') {
        for (i, d) in split_top(decl.trim(), ',').into_iter().enumerate() {
            let head = d.split('[').next().unwrap_or("").split(':').next().unwrap_or("").trim();
            let name = head.rsplit(|c: char| c.is_whitespace() || c == '*').next().unwrap_or("");
            if is_ident(name) && (i > 0 || head.contains(' ')) {
                fields.push(name.to_string());
            }
        }
    }
    Some(fields)
}

/// The C tables of one translation unit (see tables.h), as `struct wc_tu
/// SYM`.
pub fn tables(text: &str, sym: &str) -> Result<String, String> {
    let mut s = String::new();
    let maps = maps(text);
    writeln!(s, "static struct wc_map {sym}_maps[] = {{").unwrap();
    for (name, body) in &maps {
        let has = |m: &str| body.contains(&format!("({m},"));
        let count = |m: &str| format!("sizeof(*{name}.{m}) / sizeof(int)");
        let size = |ty: &str, sz: &str| {
            if has(ty) {
                format!("sizeof(*{name}.{ty})")
            } else if has(sz) {
                count(sz)
            } else {
                "0".into()
            }
        };
        let max = if has("max_entries") { count("max_entries") } else { "0".into() };
        writeln!(
            s,
            "\t{{ .name = \"{name}\", .def = &{name}, .type = {}, .key_size = {}, .value_size = {}, .max_entries = {max} }},",
            count("type"),
            size("key", "key_size"),
            size("value", "value_size"),
        )
        .unwrap();
    }
    s.push_str("\t{ 0 }\n};\n");
    writeln!(s, "static const struct wc_knob {sym}_globals[] = {{").unwrap();
    let globals = globals(text);
    for g in &globals {
        let n = &g.name;
        if g.array {
            writeln!(s, "\t{{ \"{n}\", (void *)&{n}, sizeof({n}[0]), sizeof({n}) / sizeof({n}[0]) }},").unwrap();
        } else {
            writeln!(s, "\t{{ \"{n}\", (void *)&{n}, sizeof({n}), 1 }},").unwrap();
        }
    }
    s.push_str("\t{ 0 }\n};\n");
    let progs = syscall_progs(text);
    for p in &progs {
        writeln!(s, "static const struct wc_field {sym}_{}_fields[] = {{", p.name).unwrap();
        if let Some(st) = &p.arg_struct {
            let fields = struct_fields(text, st).ok_or_else(|| format!("syscall program {}: no definition of struct {st}", p.name))?;
            for f in fields {
                writeln!(s, "\t{{ \"{f}\", __builtin_offsetof(struct {st}, {f}), sizeof(((struct {st} *)0)->{f}) }},").unwrap();
            }
        }
        s.push_str("\t{ 0 }\n};\n");
    }
    writeln!(s, "static const struct wc_syscall {sym}_progs[] = {{").unwrap();
    for p in &progs {
        let size = p.arg_struct.as_ref().map_or("0".to_string(), |st| format!("sizeof(struct {st})"));
        writeln!(s, "\t{{ \"{n}\", (wc_syscall_fn)(void *){n}, {size}, {sym}_{n}_fields }},", n = p.name).unwrap();
    }
    s.push_str("\t{ 0 }\n};\n");
    writeln!(s, "struct wc_tu {sym} = {{ {sym}_maps, {}, {sym}_globals, {}, {sym}_progs, {} }};", maps.len(), globals.len(), progs.len()).unwrap();
    Ok(s)
}

/// `#undef` of every SCX_* name that the scx headers turn into a variable
/// filled by the loader: on the host they are vmlinux.h's enum constants.
pub fn enum_undefs(text: &str) -> String {
    let mut s = String::new();
    for line in text.lines() {
        if let Some(rest) = line.strip_prefix("#define ") {
            if let Some(name) = rest.split_whitespace().next() {
                if name.starts_with("SCX_") {
                    writeln!(s, "#undef {name}").unwrap();
                }
            }
        }
    }
    s
}

/// Every BPF helper of libbpf's bpf_helper_defs.h (a call through a constant
/// pointer to the helper's id) as a call of `wc_helper_NAME`, with its
/// prototype: the host defines the ones it provides; a program that calls
/// another is left with an undefined symbol, found at load.
pub fn helper_redirects(defs: &str) -> String {
    let mut s = String::from("/* Generated from libbpf's bpf_helper_defs.h by crates/sim/src/scx/build_program.rs. */\n");
    let mut structs = Vec::new();
    for line in defs.lines() {
        if let Some(st) = line.strip_prefix("struct ").and_then(|r| r.strip_suffix(';')) {
            structs.push(st.to_string());
        }
    }
    for st in structs {
        writeln!(s, "struct {st};").unwrap();
    }
    for line in defs.lines() {
        let Some(rest) = line.strip_prefix("static ") else { continue };
        let Some((ret, rest)) = rest.split_once("(* const ") else { continue };
        let Some((name, rest)) = rest.split_once(")(") else { continue };
        let Some((args, _)) = rest.rsplit_once(") = (void *)") else { continue };
        writeln!(s, "#define {name}(...) wc_helper_{name}(__VA_ARGS__)").unwrap();
        // Attributes for the BPF backend only.
        let ret = ret.replace("__bpf_fastcall", "");
        writeln!(s, "{} wc_helper_{name}({args});", ret.trim()).unwrap();
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn divisions_that_may_trap_become_calls() {
        let ir = "  %5 = udiv i64 %3, %4\n  %6 = udiv i64 %3, 64\n  %7 = sdiv exact i32 %1, -1\n  %8 = urem i64 %a, 0, !dbg !9\n  %9 = srem i32 %x, 7\n";
        let out = bpf_arith(ir);
        assert!(out.contains("%5 = call i64 @__wc_bpf_udiv_i64(i64 %3, i64 %4)"), "{out}");
        assert!(out.contains("%6 = udiv i64 %3, 64"), "{out}");
        assert!(out.contains("%7 = call i32 @__wc_bpf_sdiv_i32(i32 %1, i32 -1)"), "{out}");
        assert!(out.contains("%8 = call i64 @__wc_bpf_urem_i64(i64 %a, i64 0), !dbg !9"), "{out}");
        assert!(out.contains("%9 = srem i32 %x, 7"), "{out}");
        assert_eq!(out.matches("define internal").count(), 3);
    }

    #[test]
    fn absent_weak_kfuncs_are_null_and_their_calls_named() {
        let ir = "declare extern_weak void @gone(i64)\ndeclare extern_weak i32 @gone2()\n  %1 = icmp ne ptr @gone, null\n  call void @gone(i64 1)\n  %2 = call i32 @gone2()\n  call void @gone_not(i64 1)\n";
        let out = absent_kfuncs(ir);
        assert!(out.contains("declare void @wc_absent_gone(i64)"), "{out}");
        assert!(out.contains("%1 = icmp ne ptr null, null"), "{out}");
        assert!(out.contains("call void @wc_absent_gone(i64 1)"), "{out}");
        assert!(out.contains("%2 = call i32 @wc_absent_gone2()"), "{out}");
        assert!(out.contains("call void @gone_not(i64 1)"), "{out}");
    }

    #[test]
    fn globals_are_the_writable_file_scope_variables() {
        let text = strip_comments(
            "const volatile u64 slice_max = 1ULL * NSEC_PER_MSEC; /* x */\n\
             volatile u64 a, b,\n  c;\nstatic u64 hidden;\nconst volatile u64 cpus[MAX_CPUS];\n\
             UEI_DEFINE(uei);\nprivate(X) struct bpf_cpumask __kptr *m;\nchar _license[] SEC(\"license\") = \"GPL\";\n\
             struct cpu_ctx { u64 x; };\nstruct { __uint(type, 1); } map SEC(\".maps\");\n\
             static int f(int x) { return x; }\nint g(void) { return 1; }\nu64 scx_pmu_gen = 1;\n\
             #define X 1\nextern int y;\nconst volatile bool flag = true;\n",
        );
        let g = globals(&text);
        let names: Vec<&str> = g.iter().map(|g| g.name.as_str()).collect();
        assert_eq!(names, ["slice_max", "a", "b", "c", "cpus", "scx_pmu_gen", "flag"]);
        assert!(g[4].array && !g[0].array);
    }

    #[test]
    fn syscall_programs_and_their_argument_fields() {
        let text = "struct domain_arg {\n\ts32 lvl_id;\n\ts32 cpu_id, sibling_cpu_id;\n};\nSEC(\"syscall\")\nint enable_sibling_cpu(struct domain_arg *input)\n{ return 0; }\n";
        let p = syscall_progs(text);
        assert_eq!(p, [SyscallProg { name: "enable_sibling_cpu".into(), arg_struct: Some("domain_arg".into()) }]);
        assert_eq!(struct_fields(text, "domain_arg").unwrap(), ["lvl_id", "cpu_id", "sibling_cpu_id"]);
    }
}
