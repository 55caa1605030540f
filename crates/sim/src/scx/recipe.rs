// SPDX-License-Identifier: GPL-2.0-only
//! A loader as data: what a sched_ext scheduler's own user-space loader
//! does at start, written as a recipe (peers/NAME.toml; docs/peers.md
//! describes the format) and run here into a [`Plan`], the same plan
//! warmcore's own loader settings give (loader.rs runs both).
//!
//! A recipe names the loader's command-line options it translates, with
//! their defaults (`[options]`, by their long names: `scx:bpfland:slice_us=
//! 5000` is `--slice-us 5000`), the values the loader derives from them and
//! from the machine (`[let]`), the globals it writes before load
//! (`[rodata]`), the ops flags it sets (`ops_flags`), what it writes to
//! sysfs (`[[sysfs]]`), and what it does after load, in order
//! (`[[after_load]]`: globals of .bss/.data, maps it fills, SEC("syscall")
//! programs it runs with their arguments). Values are expressions of a
//! small language over the options, the derived values and the machine as
//! the loader sees it (`Machine`, below).

use std::collections::BTreeMap;
use std::fmt;

/// The machine as the scx loaders read it from sysfs (scx_utils's
/// `Topology`), from the simulator's machine.
#[derive(Clone, Debug)]
pub struct Machine {
    /// nr_cpu_ids: every possible CPU.
    pub nr_cpus: u32,
    /// The CPUs online, in order (`Topology::all_cpus`): `cpus` and
    /// `nr_cpus` of the recipes, and what the CPU lists derived from
    /// them hold.
    pub online: Vec<u32>,
    /// Per CPU: its NUMA node.
    pub node: Vec<u32>,
    pub nr_nodes: u32,
    /// Hyper-threading (scx_utils `smt_enabled`).
    pub smt: bool,
    /// Per CPU: its SMT sibling, -1 without one (`Topology::sibling_cpus`).
    pub sibling: Vec<i64>,
    /// Per CPU: its capacity on the 1024 scale (scx_utils `cpu_capacity`,
    /// from the CPUs' highest frequencies).
    pub capacity: Vec<u32>,
}

/// A value of the recipe language.
#[derive(Clone, Debug, PartialEq)]
pub enum Value {
    Int(i128),
    Bool(bool),
    Str(String),
    /// CPUs (or any integers), in order.
    List(Vec<i128>),
}

impl fmt::Display for Value {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        match self {
            Value::Int(v) => write!(f, "{v}"),
            Value::Bool(v) => write!(f, "{v}"),
            Value::Str(s) => write!(f, "{s:?}"),
            Value::List(l) => write!(f, "{l:?}"),
        }
    }
}

impl Value {
    fn kind(&self) -> &'static str {
        match self {
            Value::Int(_) => "an integer",
            Value::Bool(_) => "a boolean",
            Value::Str(_) => "a string",
            Value::List(_) => "a list",
        }
    }
    fn int(&self) -> Result<i128, String> {
        match self {
            Value::Int(v) => Ok(*v),
            Value::Bool(b) => Ok(*b as i128),
            v => Err(format!("expected an integer, got {}", v.kind())),
        }
    }
    fn bool(&self) -> Result<bool, String> {
        match self {
            Value::Bool(b) => Ok(*b),
            Value::Int(v) => Ok(*v != 0),
            v => Err(format!("expected a boolean, got {}", v.kind())),
        }
    }
    fn list(&self) -> Result<&[i128], String> {
        match self {
            Value::List(l) => Ok(l),
            v => Err(format!("expected a list, got {}", v.kind())),
        }
    }
    fn str(&self) -> Result<&str, String> {
        match self {
            Value::Str(s) => Ok(s),
            v => Err(format!("expected a string, got {}", v.kind())),
        }
    }
}

/// One write of element `index` of a global, with where it comes from
/// ("peers/bpfland.toml:31", or "" for warmcore's own settings).
#[derive(Clone, Debug, PartialEq)]
pub struct Write {
    pub name: String,
    pub index: u32,
    pub value: i128,
    pub at: String,
}

/// What a loader does once the program is loaded, in order.
#[derive(Clone, Debug, PartialEq)]
pub enum Action {
    /// Write a global (.bss, .data).
    Global(Write),
    /// Run a SEC("syscall") program with these argument members.
    Syscall { name: String, args: Vec<(String, i128)>, at: String },
    /// Insert or replace a map entry, key and value as integers of the
    /// map's sizes.
    Map { name: String, key: i128, value: i128, at: String },
}

/// The ops flags a loader sets (SCX_OPS_*), as the simulator uses them.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct OpsFlags {
    pub enq_last: bool,
    pub enq_exiting: bool,
    pub enq_migration_disabled: bool,
    pub allow_queued_wakeup: bool,
    pub builtin_idle_per_node: bool,
    pub keep_builtin_idle: bool,
}

impl OpsFlags {
    /// The flags' names (without SCX_OPS_), as recipes give them.
    pub const NAMES: &'static [&'static str] =
        &["ENQ_LAST", "ENQ_EXITING", "ENQ_MIGRATION_DISABLED", "ALLOW_QUEUED_WAKEUP", "BUILTIN_IDLE_PER_NODE", "KEEP_BUILTIN_IDLE"];

    fn set(&mut self, name: &str) -> Result<(), String> {
        let name = name.strip_prefix("SCX_OPS_").unwrap_or(name);
        match name {
            "ENQ_LAST" => self.enq_last = true,
            "ENQ_EXITING" => self.enq_exiting = true,
            "ENQ_MIGRATION_DISABLED" => self.enq_migration_disabled = true,
            "ALLOW_QUEUED_WAKEUP" => self.allow_queued_wakeup = true,
            "BUILTIN_IDLE_PER_NODE" => self.builtin_idle_per_node = true,
            "KEEP_BUILTIN_IDLE" => self.keep_builtin_idle = true,
            "SWITCH_PARTIAL" => return Err("SCX_OPS_SWITCH_PARTIAL is not modelled: every task of a run is the scheduler's".into()),
            _ => return Err(format!("no ops flag SCX_OPS_{name} the simulator models; valid: {}", Self::NAMES.join(", "))),
        }
        Ok(())
    }
}

/// Everything a loader does before and after it loads the program.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Plan {
    /// Globals written before load (.rodata: `const volatile`).
    pub rodata: Vec<Write>,
    pub after_load: Vec<Action>,
    pub flags: OpsFlags,
    /// Per CPU: the PM QoS resume latency the loader writes, us (sysfs
    /// pm_qos_resume_latency_us); empty if it writes none.
    pub resume_latency_us: Vec<Option<u64>>,
    /// Notes for the run's output: what the recipe says is not modelled.
    pub notes: Vec<String>,
}

// ------------------------------------------------------------ the language

#[derive(Clone, Debug, PartialEq)]
enum Tok {
    Int(i128),
    Str(String),
    Ident(String),
    Op(&'static str),
}

fn lex(s: &str) -> Result<Vec<Tok>, String> {
    const OPS: &[&str] = &["..", "==", "!=", "<=", ">=", "&&", "||", "<", ">", "+", "-", "*", "/", "%", "!", "?", ":", "(", ")", "[", "]", ","];
    let b = s.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    'next: while i < b.len() {
        let c = b[i] as char;
        if c.is_whitespace() {
            i += 1;
            continue;
        }
        if c.is_ascii_digit() {
            let start = i;
            while i < b.len() && (b[i] as char).is_ascii_alphanumeric() {
                i += 1;
            }
            let t = &s[start..i];
            let v = match t.strip_prefix("0x") {
                Some(h) => i128::from_str_radix(h, 16),
                None => t.parse(),
            }
            .map_err(|_| format!("bad number {t:?}"))?;
            out.push(Tok::Int(v));
            continue;
        }
        if c == '"' || c == '\'' {
            let start = i + 1;
            i += 1;
            while i < b.len() && b[i] as char != c {
                i += 1;
            }
            if i >= b.len() {
                return Err("unterminated string".into());
            }
            out.push(Tok::Str(s[start..i].to_string()));
            i += 1;
            continue;
        }
        if c.is_ascii_alphabetic() || c == '_' {
            let start = i;
            while i < b.len() && ((b[i] as char).is_ascii_alphanumeric() || b[i] == b'_') {
                i += 1;
            }
            out.push(Tok::Ident(s[start..i].to_string()));
            continue;
        }
        for op in OPS {
            if s[i..].starts_with(op) {
                out.push(Tok::Op(op));
                i += op.len();
                continue 'next;
            }
        }
        return Err(format!("unexpected {c:?}"));
    }
    Ok(out)
}

/// An expression, parsed.
#[derive(Clone, Debug)]
enum Expr {
    Lit(Value),
    Var(String),
    Index(Box<Expr>, Box<Expr>),
    Call(String, Vec<Expr>),
    Unary(&'static str, Box<Expr>),
    Binary(&'static str, Box<Expr>, Box<Expr>),
    Cond(Box<Expr>, Box<Expr>, Box<Expr>),
}

struct Parser {
    toks: Vec<Tok>,
    at: usize,
}

impl Parser {
    fn peek(&self) -> Option<&Tok> {
        self.toks.get(self.at)
    }
    fn is_op(&self, op: &str) -> bool {
        matches!(self.peek(), Some(Tok::Op(o)) if *o == op)
    }
    fn expect(&mut self, op: &str) -> Result<(), String> {
        if self.is_op(op) {
            self.at += 1;
            Ok(())
        } else {
            Err(format!("expected '{op}'"))
        }
    }
    fn expr(&mut self) -> Result<Expr, String> {
        let c = self.binary(0)?;
        if self.is_op("?") {
            self.at += 1;
            let a = self.expr()?;
            self.expect(":")?;
            let b = self.expr()?;
            return Ok(Expr::Cond(Box::new(c), Box::new(a), Box::new(b)));
        }
        Ok(c)
    }
    fn binary(&mut self, level: usize) -> Result<Expr, String> {
        const LEVELS: &[&[&str]] = &[&["||"], &["&&"], &["==", "!=", "<", "<=", ">", ">="], &[".."], &["+", "-"], &["*", "/", "%"]];
        if level == LEVELS.len() {
            return self.unary();
        }
        let mut lhs = self.binary(level + 1)?;
        loop {
            let op = match self.peek() {
                Some(Tok::Op(o)) if LEVELS[level].contains(o) => *o,
                _ => return Ok(lhs),
            };
            self.at += 1;
            let rhs = self.binary(level + 1)?;
            lhs = Expr::Binary(op, Box::new(lhs), Box::new(rhs));
        }
    }
    fn unary(&mut self) -> Result<Expr, String> {
        if self.is_op("!") || self.is_op("-") {
            let op = if self.is_op("!") { "!" } else { "-" };
            self.at += 1;
            return Ok(Expr::Unary(op, Box::new(self.unary()?)));
        }
        let mut e = self.primary()?;
        while self.is_op("[") {
            self.at += 1;
            let i = self.expr()?;
            self.expect("]")?;
            e = Expr::Index(Box::new(e), Box::new(i));
        }
        Ok(e)
    }
    fn primary(&mut self) -> Result<Expr, String> {
        let t = self.peek().cloned().ok_or("unexpected end")?;
        self.at += 1;
        match t {
            Tok::Int(v) => Ok(Expr::Lit(Value::Int(v))),
            Tok::Str(s) => Ok(Expr::Lit(Value::Str(s))),
            Tok::Ident(id) if id == "true" || id == "false" => Ok(Expr::Lit(Value::Bool(id == "true"))),
            Tok::Ident(id) => {
                if self.is_op("(") {
                    self.at += 1;
                    let mut args = Vec::new();
                    if !self.is_op(")") {
                        loop {
                            args.push(self.expr()?);
                            if self.is_op(",") {
                                self.at += 1;
                            } else {
                                break;
                            }
                        }
                    }
                    self.expect(")")?;
                    return Ok(Expr::Call(id, args));
                }
                Ok(Expr::Var(id))
            }
            Tok::Op("(") => {
                let e = self.expr()?;
                self.expect(")")?;
                Ok(e)
            }
            Tok::Op(o) => Err(format!("unexpected '{o}'")),
        }
    }
}

fn parse(src: &str) -> Result<Expr, String> {
    let mut p = Parser { toks: lex(src)?, at: 0 };
    let e = p.expr()?;
    if p.at != p.toks.len() {
        return Err(format!("unexpected {:?} after the expression", p.toks[p.at]));
    }
    Ok(e)
}

/// The names an expression can read: options, derived values, the
/// machine, loop variables.
struct Env<'a> {
    vars: BTreeMap<String, Value>,
    machine: &'a Machine,
}

impl Env<'_> {
    fn var(&self, name: &str) -> Result<Value, String> {
        if let Some(v) = self.vars.get(name) {
            return Ok(v.clone());
        }
        let m = self.machine;
        let list = |v: &[u32]| Value::List(v.iter().map(|&x| x as i128).collect());
        let cap = |c: u32| m.capacity[c as usize];
        Ok(match name {
            "nr_cpus" => Value::Int(m.online.len() as i128),
            "nr_cpu_ids" => Value::Int(m.nr_cpus as i128),
            "nr_nodes" => Value::Int(m.nr_nodes as i128),
            "smt" => Value::Bool(m.smt),
            "cpus" => list(&m.online),
            "node" => list(&m.node),
            "sibling" => Value::List(m.sibling.iter().map(|&x| x as i128).collect()),
            "capacity" => list(&m.capacity),
            // Sorted by capacity, highest first, in CPU order among equals
            // (the loaders' stable sort of scx_utils' CPU map).
            "by_capacity" => {
                let mut c = m.online.clone();
                c.sort_by_key(|&x| std::cmp::Reverse(cap(x)));
                list(&c)
            }
            // scx_utils get_primary_cpus, by the core types of its topology:
            // big cores have at least the average capacity (all of them on a
            // machine without asymmetry), little ones less; turbo ones are
            // the big cores of the top capacity.
            "big_cpus" | "little_cpus" | "turbo_cpus" => {
                let max = m.online.iter().map(|&c| cap(c)).max().unwrap_or(0);
                let avg = m.online.iter().map(|&c| cap(c) as u64).sum::<u64>() / (m.online.len().max(1) as u64);
                let asym = m.online.iter().any(|&c| cap(c) != max);
                let pick: Vec<u32> = m
                    .online
                    .iter()
                    .copied()
                    .filter(|&c| match name {
                        "big_cpus" => !asym || cap(c) as u64 >= avg,
                        "little_cpus" => asym && (cap(c) as u64) < avg,
                        _ => asym && cap(c) == max,
                    })
                    .collect();
                list(&pick)
            }
            "same_capacity" => {
                let max = m.online.iter().map(|&c| cap(c)).max();
                Value::Bool(m.online.iter().all(|&c| Some(cap(c)) == max))
            }
            // The modelled machines have no platform profile and no EPP.
            "power_profile" => Value::Str("unknown".into()),
            _ => return Err(format!("unknown name {name}")),
        })
    }

    fn eval(&self, e: &Expr) -> Result<Value, String> {
        Ok(match e {
            Expr::Lit(v) => v.clone(),
            Expr::Var(n) => self.var(n)?,
            Expr::Index(a, i) => {
                let a = self.eval(a)?;
                let i = self.eval(i)?.int()?;
                let l = a.list()?;
                Value::Int(*usize::try_from(i).ok().and_then(|i| l.get(i)).ok_or_else(|| format!("index {i} beyond {} elements", l.len()))?)
            }
            Expr::Unary("!", a) => Value::Bool(!self.eval(a)?.bool()?),
            Expr::Unary(_, a) => Value::Int(-self.eval(a)?.int()?),
            Expr::Binary(op, a, b) => {
                if *op == "&&" {
                    return Ok(Value::Bool(self.eval(a)?.bool()? && self.eval(b)?.bool()?));
                }
                if *op == "||" {
                    return Ok(Value::Bool(self.eval(a)?.bool()? || self.eval(b)?.bool()?));
                }
                let (a, b) = (self.eval(a)?, self.eval(b)?);
                match *op {
                    "==" => Value::Bool(a == b || (a.int().is_ok() && a.int() == b.int())),
                    "!=" => Value::Bool(!(a == b || (a.int().is_ok() && a.int() == b.int()))),
                    _ => {
                        let (x, y) = (a.int()?, b.int()?);
                        match *op {
                            "<" => Value::Bool(x < y),
                            "<=" => Value::Bool(x <= y),
                            ">" => Value::Bool(x > y),
                            ">=" => Value::Bool(x >= y),
                            ".." => Value::List((x..y).collect()),
                            "+" => Value::Int(x + y),
                            "-" => Value::Int(x - y),
                            "*" => Value::Int(x.checked_mul(y).ok_or("overflow")?),
                            "/" | "%" if y == 0 => return Err("division by zero".into()),
                            "/" => Value::Int(x / y),
                            _ => Value::Int(x % y),
                        }
                    }
                }
            }
            Expr::Cond(c, a, b) => {
                if self.eval(c)?.bool()? {
                    self.eval(a)?
                } else {
                    self.eval(b)?
                }
            }
            Expr::Call(f, args) => {
                let v: Vec<Value> = args.iter().map(|a| self.eval(a)).collect::<Result<_, _>>()?;
                let n = |k: usize| -> Result<(), String> {
                    if v.len() == k {
                        Ok(())
                    } else {
                        Err(format!("{f}() takes {k} argument(s)"))
                    }
                };
                match f.as_str() {
                    "weight" | "len" => {
                        n(1)?;
                        Value::Int(v[0].list()?.len() as i128)
                    }
                    "contains" => {
                        n(2)?;
                        Value::Bool(v[0].list()?.contains(&v[1].int()?))
                    }
                    // scx_utils epp_to_cpumask: no such CPUs means every CPU.
                    "or_all" => {
                        n(1)?;
                        if v[0].list()?.is_empty() {
                            self.var("cpus")?
                        } else {
                            v[0].clone()
                        }
                    }
                    "min" | "max" => {
                        n(2)?;
                        let (x, y) = (v[0].int()?, v[1].int()?);
                        Value::Int(if f == "min" { x.min(y) } else { x.max(y) })
                    }
                    "clamp" => {
                        n(3)?;
                        Value::Int(v[0].int()?.clamp(v[1].int()?, v[2].int()?))
                    }
                    "cpumask" => {
                        n(1)?;
                        Value::List(cpumask(v[0].str()?, self.machine.nr_cpus)?)
                    }
                    "cpulist" => {
                        n(1)?;
                        Value::List(cpulist(v[0].str()?, self.machine.nr_cpus)?)
                    }
                    "fail" => {
                        n(1)?;
                        return Err(v[0].str()?.to_string());
                    }
                    _ => return Err(format!("unknown function {f}()")),
                }
            }
        })
    }
}

/// scx_utils `Cpumask::from_str`: a hexadecimal mask ("0xff", or without
/// 0x), "none" for no CPU, "all" for every CPU.
fn cpumask(s: &str, nr_cpus: u32) -> Result<Vec<i128>, String> {
    match s {
        "none" => return Ok(Vec::new()),
        "all" => return Ok((0..nr_cpus as i128).collect()),
        _ => {}
    }
    let hex = s.strip_prefix("0x").unwrap_or(s).replace('_', "");
    let mut out = Vec::new();
    for (i, c) in hex.chars().rev().enumerate() {
        let d = c.to_digit(16).ok_or_else(|| format!("invalid CPU mask {s:?}"))?;
        for bit in 0..4 {
            if d >> bit & 1 == 1 {
                let cpu = (i * 4 + bit) as i128;
                if cpu >= nr_cpus as i128 {
                    return Err(format!("CPU mask {s:?} names CPU {cpu}, beyond the machine's {nr_cpus}"));
                }
                out.push(cpu);
            }
        }
    }
    out.sort();
    Ok(out)
}

/// A CPU list as "0-3,12-15".
fn cpulist(s: &str, nr_cpus: u32) -> Result<Vec<i128>, String> {
    let mut out: Vec<i128> = Vec::new();
    for part in s.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        let (a, b) = part.split_once('-').unwrap_or((part, part));
        let (a, b): (i128, i128) = (
            a.trim().parse().map_err(|_| format!("invalid CPU list {s:?}"))?,
            b.trim().parse().map_err(|_| format!("invalid CPU list {s:?}"))?,
        );
        if a > b || b >= nr_cpus as i128 {
            return Err(format!("invalid CPU range {part} for a machine of {nr_cpus} CPUs"));
        }
        for c in a..=b {
            if !out.contains(&c) {
                out.push(c);
            }
        }
    }
    Ok(out)
}

// ------------------------------------------------------------ the recipe file

/// A TOML value with the line it is on.
struct Item {
    value: toml::Value,
    line: usize,
}

/// A table's entries in the order of the file, each with its line.
struct Entries(Vec<(String, Item)>);

impl<'de> serde::Deserialize<'de> for Entries {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Entries, D::Error> {
        struct V;
        impl<'de> serde::de::Visitor<'de> for V {
            type Value = Entries;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a table")
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(self, mut m: A) -> Result<Entries, A::Error> {
                let mut out = Vec::new();
                while let Some((k, v)) = m.next_entry::<String, toml::Spanned<toml::Value>>()? {
                    let line = v.span().start;
                    out.push((k, Item { value: v.into_inner(), line }));
                }
                Ok(Entries(out))
            }
        }
        d.deserialize_map(V)
    }
}

/// The recipe file: top-level entries in order, each table's too.
struct File {
    path: String,
    text: String,
    top: Vec<(String, Item)>,
}

impl File {
    fn line_of(&self, offset: usize) -> usize {
        self.text[..offset.min(self.text.len())].matches('\n').count() + 1
    }
    fn at(&self, item: &Item) -> String {
        format!("{}:{}", self.path, self.line_of(item.line))
    }
    fn get(&self, key: &str) -> Option<&Item> {
        self.top.iter().find(|(k, _)| k == key).map(|(_, v)| v)
    }
    /// A table's entries, in order, with lines (re-read from its span).
    fn table(&self, item: &Item) -> Result<Vec<(String, Item)>, String> {
        entries_of(&self.text, item).map_err(|e| format!("{}: {e}", self.at(item)))
    }
}

/// The entries of a table item in document order: the toml value has lost
/// the order, so the table's text is parsed again by itself.
fn entries_of(text: &str, item: &Item) -> Result<Vec<(String, Item)>, String> {
    let toml::Value::Table(t) = &item.value else {
        return Err("expected a table".into());
    };
    // Find each key's first line at or after the table's start: the
    // entries' order is that of their lines.
    let start = item.line;
    let mut found: Vec<(usize, String, Item)> = Vec::new();
    for (k, v) in t {
        let pos = key_position(text, start, k).unwrap_or(start);
        found.push((pos, k.clone(), Item { value: v.clone(), line: pos }));
    }
    found.sort_by_key(|(p, _, _)| *p);
    Ok(found.into_iter().map(|(_, k, v)| (k, v)).collect())
}

/// The offset of `key = ` (bare or quoted) at the start of a line, at or
/// after `from`.
fn key_position(text: &str, from: usize, key: &str) -> Option<usize> {
    let mut off = from;
    for line in text[from.min(text.len())..].split_inclusive('\n') {
        let t = line.trim_start();
        let k = t.split('=').next().unwrap_or("").trim().trim_matches('"');
        if k == key && t.contains('=') {
            return Some(off + (line.len() - t.len()));
        }
        off += line.len();
    }
    None
}

/// The option a parameter sets, its type and default.
#[derive(Clone, Debug)]
pub struct OptionSpec {
    pub name: String,
    pub kind: &'static str,
    pub default: Value,
}

fn option_specs(file: &File) -> Result<Vec<OptionSpec>, String> {
    let Some(item) = file.get("options") else { return Ok(Vec::new()) };
    let mut out = Vec::new();
    for (name, it) in file.table(item)? {
        let at = file.at(&it);
        let (default, kind) = match &it.value {
            toml::Value::Table(t) => {
                let d = t.get("default").ok_or_else(|| format!("{at}: option {name} has no default"))?;
                let kind = t.get("type").and_then(|k| k.as_str()).unwrap_or("");
                (d.clone(), kind.to_string())
            }
            v => (v.clone(), String::new()),
        };
        let (default, kind): (Value, &'static str) = match (&default, kind.as_str()) {
            (toml::Value::Boolean(b), "" | "bool") => (Value::Bool(*b), "bool"),
            (toml::Value::String(s), "" | "string") => (Value::Str(s.clone()), "string"),
            (toml::Value::Integer(v), "") => (Value::Int(*v as i128), if *v < 0 { "i64" } else { "u64" }),
            (toml::Value::Integer(v), k @ ("u64" | "i64" | "u32")) => (Value::Int(*v as i128), match k {
                "u64" => "u64",
                "i64" => "i64",
                _ => "u32",
            }),
            _ => return Err(format!("{at}: option {name}: a default of type {kind:?} is not understood")),
        };
        out.push(OptionSpec { name, kind, default });
    }
    Ok(out)
}

fn parse_option(spec: &OptionSpec, v: &str) -> Result<Value, String> {
    match spec.kind {
        "bool" => match v {
            "on" | "true" | "1" | "" => Ok(Value::Bool(true)),
            "off" | "false" | "0" => Ok(Value::Bool(false)),
            _ => Err("expected on or off".into()),
        },
        "string" => Ok(Value::Str(v.to_string())),
        k => {
            let n: i128 = v.parse().map_err(|_| "expected a whole number".to_string())?;
            let (lo, hi): (i128, i128) = match k {
                "u64" => (0, u64::MAX as i128),
                "u32" => (0, u32::MAX as i128),
                _ => (i64::MIN as i128, i64::MAX as i128),
            };
            if n < lo || n > hi {
                return Err(format!("expected a whole number from {lo} to {hi}"));
            }
            Ok(Value::Int(n))
        }
    }
}

/// A value as an expression: a string is one; numbers and booleans stand
/// for themselves.
fn expr_of(v: &toml::Value) -> Result<Expr, String> {
    match v {
        toml::Value::String(s) => parse(s),
        toml::Value::Integer(i) => Ok(Expr::Lit(Value::Int(*i as i128))),
        toml::Value::Boolean(b) => Ok(Expr::Lit(Value::Bool(*b))),
        _ => Err("expected an expression (a string), a number or a boolean".into()),
    }
}

/// `VAR in EXPR`.
fn parse_for(s: &str) -> Result<(String, Expr), String> {
    let (var, rest) = s.split_once(" in ").ok_or_else(|| format!("for = {s:?}: expected \"VAR in LIST\""))?;
    Ok((var.trim().to_string(), parse(rest)?))
}

/// Iterations of an entry with optional `for` and `if`: each binding of the
/// loop variable (none without `for`) for which `if` holds.
fn iterations(env: &mut Env, t: &toml::Table, mut body: impl FnMut(&mut Env) -> Result<(), String>) -> Result<(), String> {
    let cond = t.get("if").map(expr_of).transpose()?;
    let run = |env: &mut Env, body: &mut dyn FnMut(&mut Env) -> Result<(), String>| -> Result<(), String> {
        if let Some(c) = &cond {
            if !env.eval(c)?.bool()? {
                return Ok(());
            }
        }
        body(env)
    };
    match t.get("for") {
        None => run(env, &mut body),
        Some(f) => {
            let (var, list) = parse_for(f.as_str().ok_or("for: expected a string")?)?;
            for x in env.eval(&list)?.list()?.to_vec() {
                env.vars.insert(var.clone(), Value::Int(x));
                run(env, &mut body)?;
            }
            env.vars.remove(&var);
            Ok(())
        }
    }
}

/// A global's key: `name` or `name[INDEX]`.
fn global_key(key: &str) -> Result<(String, Option<Expr>), String> {
    match key.split_once('[') {
        None => Ok((key.trim().to_string(), None)),
        Some((n, rest)) => {
            let idx = rest.strip_suffix(']').ok_or_else(|| format!("{key}: expected name[INDEX]"))?;
            Ok((n.trim().to_string(), Some(parse(idx)?)))
        }
    }
}

/// Globals of a `[rodata]`-like table: `name = EXPR`, `"name[i]" = EXPR`
/// or `{ for, if, value }`.
fn globals(file: &File, env: &mut Env, entries: Vec<(String, Item)>, out: &mut Vec<Write>) -> Result<(), String> {
    for (key, it) in entries {
        let at = file.at(&it);
        let err = |e: String| format!("{at}: {key}: {e}");
        let (name, index) = global_key(&key).map_err(err)?;
        let (table, value) = match &it.value {
            toml::Value::Table(t) => (t.clone(), t.get("value").ok_or_else(|| err("no value".into()))?.clone()),
            v => (toml::Table::new(), v.clone()),
        };
        let value = expr_of(&value).map_err(err)?;
        iterations(env, &table, |env| {
            let i = match &index {
                Some(e) => env.eval(e)?.int()?,
                None => 0,
            };
            let v = env.eval(&value)?.int()?;
            out.push(Write { name: name.clone(), index: u32::try_from(i).map_err(|_| format!("index {i}"))?, value: v, at: at.clone() });
            Ok(())
        })
        .map_err(err)?;
    }
    Ok(())
}

/// The recipe of a program, with the parameters given to it, on a
/// machine: its plan, or one line naming the file and line at fault.
pub fn plan(path: &str, text: &str, name: &str, params: &[(String, String)], machine: &Machine) -> Result<Plan, String> {
    let top: Entries = toml::from_str(text).map_err(|e| {
        let line = e.span().map(|s| text[..s.start.min(text.len())].matches('\n').count() + 1).unwrap_or(1);
        format!("{path}:{line}: {}", e.message())
    })?;
    let file = File { path: path.to_string(), text: text.to_string(), top: top.0 };
    const KEYS: &[&str] = &["loader", "sources", "options", "let", "rodata", "ops_flags", "sysfs", "after_load", "notes", "stats"];
    for (k, it) in &file.top {
        if !KEYS.contains(&k.as_str()) {
            return Err(format!("{}: unknown key {k}; a recipe has {}", file.at(it), KEYS.join(", ")));
        }
    }
    if file.get("loader").and_then(|l| l.value.as_str()).is_none() {
        return Err(format!("{path}:1: no loader = \"FILE: FUNCTION\" naming the loader's source this recipe follows"));
    }

    // Options: defaults, then the parameters.
    let specs = option_specs(&file)?;
    let mut env = Env { vars: BTreeMap::new(), machine };
    for s in &specs {
        env.vars.insert(s.name.clone(), s.default.clone());
    }
    for (k, v) in params {
        let Some(s) = specs.iter().find(|s| s.name == *k) else {
            return Err(format!(
                "scx:{name} has no option '{k}'; valid: {}",
                specs.iter().map(|s| s.name.as_str()).collect::<Vec<_>>().join(", ")
            ));
        };
        let v = parse_option(s, v).map_err(|e| format!("scx:{name}: {k}={v}: {e}"))?;
        env.vars.insert(k.clone(), v);
    }

    // Derived values, in order.
    if let Some(item) = file.get("let") {
        for (k, it) in file.table(item)? {
            let at = file.at(&it);
            let e = expr_of(&it.value).map_err(|e| format!("{at}: {k}: {e}"))?;
            let v = env.eval(&e).map_err(|e| format!("{at}: {k}: {e}"))?;
            env.vars.insert(k, v);
        }
    }

    let mut plan = Plan::default();
    if let Some(item) = file.get("rodata") {
        let entries = file.table(item)?;
        globals(&file, &mut env, entries, &mut plan.rodata)?;
    }
    if let Some(item) = file.get("ops_flags") {
        let at = file.at(item);
        let list = item.value.as_array().ok_or_else(|| format!("{at}: ops_flags: expected a list"))?;
        for f in list {
            let s = f.as_str().ok_or_else(|| format!("{at}: ops_flags: expected strings"))?;
            let (flag, cond) = match s.split_once(" if ") {
                Some((f, c)) => (f.trim(), Some(parse(c).map_err(|e| format!("{at}: {s}: {e}"))?)),
                None => (s.trim(), None),
            };
            let on = match cond {
                Some(c) => env.eval(&c).and_then(|v| v.bool()).map_err(|e| format!("{at}: {s}: {e}"))?,
                None => true,
            };
            if on {
                plan.flags.set(flag).map_err(|e| format!("{at}: {e}"))?;
            }
        }
    }
    if let Some(item) = file.get("sysfs") {
        let at = file.at(item);
        let list = item.value.as_array().ok_or_else(|| format!("{at}: sysfs: expected [[sysfs]] tables"))?;
        for t in list {
            let t = t.as_table().ok_or_else(|| format!("{at}: sysfs: expected tables"))?;
            let path = t.get("path").and_then(|p| p.as_str()).ok_or_else(|| format!("{at}: sysfs: no path"))?.to_string();
            let value = expr_of(t.get("value").ok_or_else(|| format!("{at}: sysfs: no value"))?).map_err(|e| format!("{at}: {e}"))?;
            let mut writes = Vec::new();
            iterations(&mut env, t, |env| {
                let mut p = path.clone();
                for (k, v) in &env.vars {
                    p = p.replace(&format!("{{{k}}}"), &v.to_string());
                }
                writes.push((p, env.eval(&value)?));
                Ok(())
            })
            .map_err(|e| format!("{at}: sysfs {path}: {e}"))?;
            for (p, v) in writes {
                sysfs_write(&mut plan, machine, &p, &v).map_err(|e| format!("{at}: {e}"))?;
            }
        }
    }
    if let Some(item) = file.get("after_load") {
        let at0 = file.at(item);
        let list = item.value.as_array().ok_or_else(|| format!("{at0}: after_load: expected [[after_load]] tables"))?;
        // Each [[after_load]] table's line: the n-th "[[after_load]]" header.
        let headers: Vec<usize> =
            text.match_indices("[[after_load]]").map(|(i, _)| file.line_of(i)).collect();
        for (n, t) in list.iter().enumerate() {
            let at = format!("{path}:{}", headers.get(n).copied().unwrap_or(1));
            let t = t.as_table().ok_or_else(|| format!("{at}: after_load: expected tables"))?;
            after_load(&mut env, t, &at, &mut plan.after_load)?;
        }
    }
    if let Some(item) = file.get("notes") {
        for n in item.value.as_array().into_iter().flatten() {
            if let Some(s) = n.as_str() {
                plan.notes.push(s.to_string());
            }
        }
    }
    Ok(plan)
}

fn after_load(env: &mut Env, t: &toml::Table, at: &str, out: &mut Vec<Action>) -> Result<(), String> {
    const KINDS: &[&str] = &["syscall", "bss", "map"];
    let kinds: Vec<&&str> = KINDS.iter().filter(|k| t.contains_key(**k)).collect();
    if kinds.len() != 1 {
        return Err(format!("{at}: an [[after_load]] step has one of {}", KINDS.join(", ")));
    }
    match *kinds[0] {
        "syscall" => {
            let name = t["syscall"].as_str().ok_or_else(|| format!("{at}: syscall: expected a name"))?.to_string();
            let mut args = Vec::new();
            if let Some(a) = t.get("args") {
                let a = a.as_table().ok_or_else(|| format!("{at}: args: expected a table"))?;
                for (k, v) in a {
                    args.push((k.clone(), expr_of(v).map_err(|e| format!("{at}: args.{k}: {e}"))?));
                }
            }
            iterations(env, t, |env| {
                let vals = args.iter().map(|(k, e)| Ok((k.clone(), env.eval(e)?.int()?))).collect::<Result<Vec<_>, String>>()?;
                out.push(Action::Syscall { name: name.clone(), args: vals, at: at.to_string() });
                Ok(())
            })
            .map_err(|e| format!("{at}: syscall {name}: {e}"))
        }
        "bss" => {
            let b = t["bss"].as_table().ok_or_else(|| format!("{at}: bss: expected a table"))?;
            for (key, v) in b {
                let (name, index) = global_key(key).map_err(|e| format!("{at}: {e}"))?;
                let e = expr_of(v).map_err(|e| format!("{at}: {key}: {e}"))?;
                iterations(env, t, |env| {
                    let i = match &index {
                        Some(x) => env.eval(x)?.int()?,
                        None => 0,
                    };
                    let value = env.eval(&e)?.int()?;
                    out.push(Action::Global(Write { name: name.clone(), index: i as u32, value, at: at.to_string() }));
                    Ok(())
                })
                .map_err(|e| format!("{at}: {key}: {e}"))?;
            }
            Ok(())
        }
        _ => {
            let name = t["map"].as_str().ok_or_else(|| format!("{at}: map: expected a name"))?.to_string();
            let key = expr_of(t.get("key").ok_or_else(|| format!("{at}: map {name}: no key"))?).map_err(|e| format!("{at}: {e}"))?;
            let value = expr_of(t.get("value").ok_or_else(|| format!("{at}: map {name}: no value"))?).map_err(|e| format!("{at}: {e}"))?;
            iterations(env, t, |env| {
                out.push(Action::Map { name: name.clone(), key: env.eval(&key)?.int()?, value: env.eval(&value)?.int()?, at: at.to_string() });
                Ok(())
            })
            .map_err(|e| format!("{at}: map {name}: {e}"))
        }
    }
}

/// The one sysfs file the simulator models: a CPU's PM QoS resume latency
/// (drivers/base/power/sysfs.c: a number of us, 0 for no constraint, "n/a"
/// for none at all), which the cpuidle governor reads as the most exit
/// latency an idle state of the CPU may have.
fn sysfs_write(plan: &mut Plan, machine: &Machine, path: &str, v: &Value) -> Result<(), String> {
    let cpu = path
        .strip_prefix("devices/system/cpu/cpu")
        .and_then(|r| r.strip_suffix("/power/pm_qos_resume_latency_us"))
        .and_then(|c| c.parse::<u32>().ok())
        .ok_or_else(|| format!("the simulator models no sysfs file {path} (only devices/system/cpu/cpuN/power/pm_qos_resume_latency_us)"))?;
    if cpu >= machine.nr_cpus {
        return Err(format!("{path}: the machine has {} CPUs", machine.nr_cpus));
    }
    let limit = match v {
        Value::Str(s) if s == "n/a" => Some(0),
        v => match v.int()? {
            0 => None,
            n if n < 0 => return Err(format!("{path}: {n} is refused by the kernel (a negative latency)")),
            n => Some(n as u64),
        },
    };
    if plan.resume_latency_us.is_empty() {
        plan.resume_latency_us = vec![None; machine.nr_cpus as usize];
    }
    plan.resume_latency_us[cpu as usize] = limit;
    Ok(())
}

/// The `stats` globals a recipe lists (reported by the run as counters).
pub fn stats(text: &str) -> Vec<String> {
    let Ok(t) = text.parse::<toml::Table>() else { return Vec::new() };
    t.get("stats").and_then(|s| s.as_array()).map(|a| a.iter().filter_map(|v| v.as_str().map(str::to_string)).collect()).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn machine() -> Machine {
        Machine { nr_cpus: 4, online: vec![0, 1, 2, 3], node: vec![0, 0, 1, 1], nr_nodes: 2, smt: true, sibling: vec![1, 0, 3, 2], capacity: vec![1024; 4] }
    }

    #[test]
    fn expressions() {
        let m = machine();
        let mut env = Env { vars: BTreeMap::new(), machine: &m };
        env.vars.insert("x".into(), Value::Int(3));
        env.vars.insert("s".into(), Value::Str("auto".into()));
        let ev = |env: &Env, s: &str| env.eval(&parse(s).unwrap()).unwrap();
        assert_eq!(ev(&env, "x * 1000 + 1"), Value::Int(3001));
        assert_eq!(ev(&env, "!false && nr_nodes > 1"), Value::Bool(true));
        assert_eq!(ev(&env, "s == \"auto\" ? cpus : cpumask('0x5')"), Value::List(vec![0, 1, 2, 3]));
        assert_eq!(ev(&env, "cpumask('0x5')"), Value::List(vec![0, 2]));
        assert_eq!(ev(&env, "sibling[2]"), Value::Int(3));
        assert_eq!(ev(&env, "weight(0..nr_cpus)"), Value::Int(4));
        assert_eq!(ev(&env, "-1"), Value::Int(-1));
        assert_eq!(ev(&env, "cpulist('1-2')"), Value::List(vec![1, 2]));
        assert!(env.eval(&parse("x / 0").unwrap()).is_err());
    }

    #[test]
    fn a_recipe_with_a_loop_a_syscall_and_a_sysfs_write() {
        let text = r#"loader = "src/main.rs: init"
ops_flags = ["ENQ_LAST", "BUILTIN_IDLE_PER_NODE if nr_nodes > 1"]
[options]
slice_us = 1000
idle_resume_us = { default = 32, type = "i64" }

[let]
half = "slice_us / 2"

[rodata]
slice_max = "half * 1000"
"caps[cpu]" = { for = "cpu in cpus", value = "capacity[cpu]" }

[[sysfs]]
if = "idle_resume_us >= 0"
for = "cpu in cpus"
path = "devices/system/cpu/cpu{cpu}/power/pm_qos_resume_latency_us"
value = "idle_resume_us"

[[after_load]]
syscall = "enable_primary_cpu"
args = { cpu_id = -1 }

[[after_load]]
syscall = "enable_sibling_cpu"
for = "cpu in cpus"
args = { cpu_id = "cpu", sibling_cpu_id = "sibling[cpu]" }
"#;
        let m = machine();
        let p = plan("r.toml", text, "x", &[("slice_us".into(), "5000".into())], &m).unwrap();
        assert_eq!(p.rodata[0], Write { name: "slice_max".into(), index: 0, value: 2_500_000, at: "r.toml:11".into() });
        assert_eq!(p.rodata.len(), 5);
        assert_eq!(p.rodata[4].at, "r.toml:12");
        assert!(p.flags.enq_last && p.flags.builtin_idle_per_node);
        assert_eq!(p.resume_latency_us, vec![Some(32); 4]);
        assert_eq!(p.after_load.len(), 5);
        assert_eq!(p.after_load[2], Action::Syscall { name: "enable_sibling_cpu".into(), args: vec![("cpu_id".into(), 1), ("sibling_cpu_id".into(), 0)], at: "r.toml:24".into() });
        let e = plan("r.toml", text, "x", &[("slice".into(), "1".into())], &m).unwrap_err();
        assert!(e.starts_with("scx:x has no option 'slice'; valid: slice_us, idle_resume_us"), "{e}");
        let e = plan("r.toml", &text.replace("half * 1000", "halve * 1000"), "x", &[], &m).unwrap_err();
        assert_eq!(e, "r.toml:11: slice_max: unknown name halve");
    }
}
