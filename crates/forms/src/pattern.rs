//! `pattern`: ECMAScript regular expressions, checked with `regress` and matched in linear time.
//!
//! A `pattern` is checked exactly the way Ajv (the TS SDK's validator) compiles it: as an ECMAScript
//! regex with the `u` flag, using the `regress` crate. `regress` is a backtracking engine with no step
//! limit, so a hostile pattern such as `(a+)+$` with a hostile `default` could hang the host. After the
//! syntax check the pattern is therefore translated, construct by construct, into the syntax of the
//! `regex` crate, whose matching time is linear in the input. The translation keeps ECMAScript's
//! meaning (`\d`, `\w`, `\s` and `\b` are ECMAScript's sets, `.` stops at line terminators, `$` is the
//! end of input). Backreferences and lookaround cannot be matched in linear time, so patterns that use
//! them are declined.

use std::fmt;

use crate::limits::MAX_PATTERN_BYTES;

/// A checked `pattern`: ECMAScript syntax (flag `u`), matched unanchored like JSON Schema.
#[derive(Clone)]
pub struct Pattern {
    source: String,
    matcher: regex::Regex,
}

impl Pattern {
    /// Checks `source` as an ECMAScript regex with the `u` flag and prepares it for matching.
    ///
    /// The error says why the pattern cannot be used: invalid syntax, too long, or a construct
    /// (backreference, lookaround) that cannot be matched in linear time.
    pub fn new(source: &str) -> Result<Pattern, String> {
        if source.len() > MAX_PATTERN_BYTES {
            return Err(format!(
                "is {} bytes long; at most {MAX_PATTERN_BYTES} are allowed",
                source.len()
            ));
        }
        if let Err(err) = regress::Regex::with_flags(source, "u") {
            return Err(format!("is not a valid ECMAScript regex: {err}"));
        }
        let translated = translate(source)?;
        let matcher = regex::RegexBuilder::new(&translated)
            .size_limit(1 << 20)
            .dfa_size_limit(1 << 20)
            .build()
            .map_err(|err| match err {
                regex::Error::CompiledTooBig(_) => "is too complex to match".to_owned(),
                other => format!("uses a construct forms cannot match: {other}"),
            })?;
        Ok(Pattern {
            source: source.to_owned(),
            matcher,
        })
    }

    /// The pattern as the schema wrote it.
    pub fn source(&self) -> &str {
        &self.source
    }

    /// Whether `text` contains a match (JSON Schema patterns are not anchored).
    pub fn is_match(&self, text: &str) -> bool {
        // `find`, not `Regex::is_match`: with an ASCII word boundary (`(?-u:\B)`) next to
        // non-ASCII text, regex 1.x's `is_match` can answer false where `find` finds a match
        // (regression test `ascii_non_boundary_beside_non_ascii_text`).
        self.matcher.find(text).is_some()
    }
}

impl fmt::Debug for Pattern {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("Pattern").field(&self.source).finish()
    }
}

impl PartialEq for Pattern {
    fn eq(&self, other: &Self) -> bool {
        self.source == other.source
    }
}

/// ECMAScript `\s`: WhiteSpace and LineTerminator code points.
const SPACE_SET: &str = r"\x{9}-\x{D}\x{20}\x{A0}\x{1680}\x{2000}-\x{200A}\x{2028}\x{2029}\x{202F}\x{205F}\x{3000}\x{FEFF}";
/// ECMAScript `\w` without the `i` flag.
const WORD_SET: &str = "0-9A-Za-z_";
/// A class that matches nothing (an empty intersection).
const NOTHING: &str = "[a&&b]";
/// A class that matches every character.
const ANYTHING: &str = r"[\x{0}-\x{10FFFF}]";

/// One element inside a character class.
enum ClassAtom {
    Char(u32),
    Set(String),
}

/// Translates a pattern that `regress` accepted with flag `u` into `regex` crate syntax.
fn translate(source: &str) -> Result<String, String> {
    let chars: Vec<char> = source.chars().collect();
    let mut out = String::with_capacity(source.len() * 2);
    let mut idx = 0;
    while let Some(&c) = chars.get(idx) {
        match c {
            '\\' => {
                let (atom, next) = escape(&chars, idx, false)?;
                match atom {
                    ClassAtom::Char(code) => push_literal(&mut out, code),
                    ClassAtom::Set(set) => out.push_str(&set),
                }
                idx = next;
            }
            '[' => idx = class(&chars, idx, &mut out)?,
            '(' => idx = group(&chars, idx, &mut out)?,
            '.' => {
                out.push_str(r"[^\x{A}\x{D}\x{2028}\x{2029}]");
                idx += 1;
            }
            '^' | '$' | ')' | '|' | '*' | '+' | '?' => {
                out.push(c);
                idx += 1;
            }
            '{' => {
                // In `u` mode a brace is always a quantifier: copy `{n}`, `{n,}` or `{n,m}`.
                let close = chars[idx..]
                    .iter()
                    .position(|&ch| ch == '}')
                    .ok_or("has an unclosed `{`")?;
                for &ch in &chars[idx..=idx + close] {
                    if !(ch.is_ascii_digit() || ch == ',' || ch == '{' || ch == '}') {
                        return Err("has a malformed `{}` quantifier".to_owned());
                    }
                    out.push(ch);
                }
                idx += close + 1;
            }
            other => {
                push_literal(&mut out, other as u32);
                idx += 1;
            }
        }
    }
    Ok(out)
}

fn group(chars: &[char], idx: usize, out: &mut String) -> Result<usize, String> {
    if chars.get(idx + 1) != Some(&'?') {
        out.push_str("(?:");
        return Ok(idx + 1);
    }
    match (chars.get(idx + 2), chars.get(idx + 3)) {
        (Some(':'), _) => {
            out.push_str("(?:");
            Ok(idx + 3)
        }
        (Some('=' | '!'), _) | (Some('<'), Some('=' | '!')) => {
            Err("uses lookaround, which forms cannot match in linear time".to_owned())
        }
        (Some('<'), _) => {
            // A named group; names do not matter for matching.
            let close = chars[idx..]
                .iter()
                .position(|&ch| ch == '>')
                .ok_or("has an unclosed group name")?;
            out.push_str("(?:");
            Ok(idx + close + 1)
        }
        _ => Err("uses a group modifier forms do not support".to_owned()),
    }
}

/// Translates `[...]` starting at `idx`; returns the index after `]`.
fn class(chars: &[char], idx: usize, out: &mut String) -> Result<usize, String> {
    let mut pos = idx + 1;
    let negated = chars.get(pos) == Some(&'^');
    if negated {
        pos += 1;
    }
    let mut items = String::new();
    loop {
        let c = *chars.get(pos).ok_or("has an unclosed `[`")?;
        if c == ']' {
            pos += 1;
            break;
        }
        let (first, next) = class_atom(chars, pos)?;
        pos = next;
        let is_range =
            chars.get(pos) == Some(&'-') && chars.get(pos + 1).is_some_and(|&ch| ch != ']');
        if is_range {
            let (last, next) = class_atom(chars, pos + 1)?;
            pos = next;
            match (first, last) {
                (ClassAtom::Char(lo), ClassAtom::Char(hi)) if lo <= hi => {
                    push_range(&mut items, lo, hi)
                }
                _ => return Err("has an invalid class range".to_owned()),
            }
        } else {
            match first {
                ClassAtom::Char(code) => push_range(&mut items, code, code),
                ClassAtom::Set(set) => items.push_str(&set),
            }
        }
    }
    match (items.is_empty(), negated) {
        (true, false) => out.push_str(NOTHING),
        (true, true) => out.push_str(ANYTHING),
        (false, _) => {
            out.push('[');
            if negated {
                out.push('^');
            }
            out.push_str(&items);
            out.push(']');
        }
    }
    Ok(pos)
}

fn class_atom(chars: &[char], idx: usize) -> Result<(ClassAtom, usize), String> {
    match chars.get(idx) {
        Some('\\') => escape(chars, idx, true),
        Some(&c) => Ok((ClassAtom::Char(c as u32), idx + 1)),
        None => Err("has an unclosed `[`".to_owned()),
    }
}

/// Translates the escape at `idx` (a backslash); `in_class` selects the meaning of `\b` and `\-`.
fn escape(chars: &[char], idx: usize, in_class: bool) -> Result<(ClassAtom, usize), String> {
    let c = *chars.get(idx + 1).ok_or("ends with a lone backslash")?;
    let next = idx + 2;
    let set = |s: String| Ok((ClassAtom::Set(s), next));
    let ch = |code: u32| Ok((ClassAtom::Char(code), next));
    match c {
        'd' => set("[0-9]".to_owned()),
        'D' => set("[^0-9]".to_owned()),
        'w' => set(format!("[{WORD_SET}]")),
        'W' => set(format!("[^{WORD_SET}]")),
        's' => set(format!("[{SPACE_SET}]")),
        'S' => set(format!("[^{SPACE_SET}]")),
        'b' if in_class => ch(0x8),
        'b' => set(r"(?-u:\b)".to_owned()),
        'B' if !in_class => set(r"(?-u:\B)".to_owned()),
        '1'..='9' | 'k' => {
            Err("uses a backreference, which forms cannot match in linear time".to_owned())
        }
        '0' => ch(0),
        't' => ch(0x9),
        'n' => ch(0xA),
        'v' => ch(0xB),
        'f' => ch(0xC),
        'r' => ch(0xD),
        'c' => {
            let letter = *chars.get(next).ok_or("has a malformed `\\c` escape")?;
            if !letter.is_ascii_alphabetic() {
                return Err("has a malformed `\\c` escape".to_owned());
            }
            Ok((ClassAtom::Char(letter as u32 % 32), next + 1))
        }
        'x' => {
            let code = hex(chars, next, 2).ok_or("has a malformed `\\x` escape")?;
            Ok((ClassAtom::Char(code), next + 2))
        }
        'u' => unicode_escape(chars, next),
        'p' | 'P' => {
            let close = chars[next..]
                .iter()
                .position(|&ch| ch == '}')
                .ok_or("has an unclosed `\\p{`")?;
            let body: String = chars[idx..=next + close].iter().collect();
            Ok((ClassAtom::Set(body), next + close + 1))
        }
        other if other.is_ascii_punctuation() => ch(other as u32),
        _ => Err(format!("has an unsupported escape `\\{c}`")),
    }
}

/// `\uXXXX`, a surrogate pair `\uXXXX\uXXXX`, or `\u{X...}`; `idx` is just after the `u`.
fn unicode_escape(chars: &[char], idx: usize) -> Result<(ClassAtom, usize), String> {
    if chars.get(idx) == Some(&'{') {
        let close = chars[idx..]
            .iter()
            .position(|&ch| ch == '}')
            .ok_or("has an unclosed `\\u{`")?;
        let digits: String = chars[idx + 1..idx + close].iter().collect();
        let code = u32::from_str_radix(&digits, 16)
            .map_err(|_| "has a malformed `\\u{}` escape".to_owned())?;
        return Ok((ClassAtom::Char(code), idx + close + 1));
    }
    let high = hex(chars, idx, 4).ok_or("has a malformed `\\u` escape")?;
    let after = idx + 4;
    if (0xD800..0xDC00).contains(&high)
        && chars.get(after) == Some(&'\\')
        && chars.get(after + 1) == Some(&'u')
        && let Some(low) = hex(chars, after + 2, 4).filter(|low| (0xDC00..0xE000).contains(low))
    {
        let code = 0x10000 + ((high - 0xD800) << 10) + (low - 0xDC00);
        return Ok((ClassAtom::Char(code), after + 6));
    }
    Ok((ClassAtom::Char(high), after))
}

fn hex(chars: &[char], idx: usize, len: usize) -> Option<u32> {
    let digits = chars.get(idx..idx + len)?;
    digits
        .iter()
        .try_fold(0u32, |acc, ch| Some(acc * 16 + ch.to_digit(16)?))
}

/// Pushes one literal code point outside a class. Lone surrogates never occur in Rust strings, so
/// they become a class that matches nothing.
fn push_literal(out: &mut String, code: u32) {
    match char::from_u32(code) {
        Some(c) if c.is_ascii_alphanumeric() => out.push(c),
        Some(_) => out.push_str(&format!(r"\x{{{code:X}}}")),
        None => out.push_str(NOTHING),
    }
}

/// Pushes the range `lo..=hi` inside a class, leaving out the surrogate block.
fn push_range(items: &mut String, lo: u32, hi: u32) {
    let mut parts = Vec::new();
    if lo < 0xD800 {
        parts.push((lo, hi.min(0xD7FF)));
    }
    if hi > 0xDFFF {
        parts.push((lo.max(0xE000), hi));
    }
    for (start, end) in parts {
        if start == end {
            items.push_str(&format!(r"\x{{{start:X}}}"));
        } else {
            items.push_str(&format!(r"\x{{{start:X}}}-\x{{{end:X}}}"));
        }
    }
}
