//! `pattern` keeps ECMAScript meaning (flag `u`, unanchored) while matching in linear time: a table of
//! cases with known answers, and a property test against `regress` itself.

#![allow(clippy::unwrap_used)]

use formwork_forms::Pattern;
use proptest::prelude::*;

/// `pattern` matches `text` exactly when `expected` says so.
fn check(pattern: &str, text: &str, expected: bool) {
    let compiled = Pattern::new(pattern).unwrap_or_else(|err| panic!("{pattern:?}: {err}"));
    assert_eq!(compiled.is_match(text), expected, "{pattern:?} on {text:?}");
    // And it agrees with regress, the reference ECMAScript engine.
    let reference = regress::Regex::with_flags(pattern, "u").unwrap();
    assert_eq!(
        reference.find(text).is_some(),
        expected,
        "regress disagrees: {pattern:?} on {text:?}"
    );
}

#[test]
fn ecmascript_meaning() {
    // Unanchored, like JSON Schema.
    check("b", "abc", true);
    check("^b", "abc", false);
    // `$` is the end of input only: no match before a trailing newline.
    check("^abc$", "abc\n", false);
    check("^abc$", "abc", true);
    // `\d` and `\w` are ASCII; `\s` is Unicode white space plus line terminators and BOM.
    check("^\\d+$", "0123456789", true);
    check("^\\d$", "٣", false);
    check("^\\w+$", "ab_9", true);
    check("^\\w$", "é", false);
    check("^\\s$", "\u{a0}", true);
    check("^\\s$", "\u{feff}", true);
    check("^\\s$", "\u{2028}", true);
    check("^\\S$", "x", true);
    check("^\\D\\W$", "a-", true);
    // `.` stops at line terminators.
    check("^.$", "\n", false);
    check("^.$", "\r", false);
    check("^.$", "\u{2029}", false);
    check("^.$", "😀", true);
    // `\b` uses ASCII word characters.
    check("a\\b", "aé", true);
    check("\\Bb", "ab", true);
    check("[\\b]", "\u{8}", true);
    // Escapes.
    check("^\\u{1F600}$", "😀", true);
    check("^\\uD83D\\uDE00$", "😀", true);
    check("^\\x41\\u0042$", "AB", true);
    check("^\\cJ$", "\n", true);
    check("^\\0$", "\0", true);
    check("^\\/\\.\\*$", "/.*", true);
    // Unicode properties.
    check("^\\p{L}+$", "héllo", true);
    check("^\\p{Lu}$", "a", false);
    check("^\\P{L}$", "1", true);
    check("^\\p{Script=Greek}+$", "αβγ", true);
    // Classes.
    check("^[a-c]+$", "abcabc", true);
    check("^[^a-c]$", "d", true);
    check("^[\\d-]+$", "12-3", true);
    check("^[\\d-]+$", "12a", false);
    check("^[-a]+$", "-a", true);
    check("^[a-]+$", "a-", true);
    check("^[\\w.]+$", "a.b_c", true);
    check("^[^]$", "\n", true);
    check("[]", "anything", false);
    check("^[\\u{1F600}-\\u{1F64F}]$", "🙂", true);
    check("^[[]$", "[", true);
    check("^[&&]$", "&", true);
    check("^[~~]$", "~", true);
    // Groups, alternation, quantifiers.
    check("^(?:ab)+$", "abab", true);
    check("^(?<year>\\d{4})-(\\d{2})$", "2026-01", true);
    check("^a{2,3}$", "aaaa", false);
    check("^a{2,}?$", "aaaa", true);
    check("^(a|)b$", "b", true);
    check("^(?:x|y|)$", "", true);
}

#[test]
fn linear_time_on_hostile_input() {
    let started = std::time::Instant::now();
    let pattern = Pattern::new("^(a+)+$").unwrap();
    assert!(!pattern.is_match(&format!("{}!", "a".repeat(100_000))));
    let pattern = Pattern::new("(x+x+)+y").unwrap();
    assert!(!pattern.is_match(&"x".repeat(100_000)));
    assert!(
        started.elapsed() < std::time::Duration::from_secs(5),
        "{:?}",
        started.elapsed()
    );
}

#[test]
fn declined_constructs() {
    for pattern in [
        "(a)\\1",
        "(?<n>a)\\k<n>",
        "(?=a)",
        "(?!a)",
        "(?<=a)b",
        "(?<!a)b",
    ] {
        let err = Pattern::new(pattern).unwrap_err();
        assert!(err.contains("linear time"), "{pattern}: {err}");
    }
    for pattern in ["(", "[a", "a{2,1}", "\\p{NotAProperty}", "\\-", "{", "a**"] {
        assert!(
            Pattern::new(pattern).is_err(),
            "{pattern} should be invalid"
        );
    }
}

/// Small ECMAScript patterns built from pieces whose translation matters.
fn pattern_strategy() -> impl Strategy<Value = String> {
    let atom = prop::sample::select(vec![
        "a",
        "b",
        "é",
        "😀",
        "1",
        " ",
        "\\d",
        "\\D",
        "\\w",
        "\\W",
        "\\s",
        "\\S",
        ".",
        "\\.",
        "[ab]",
        "[^a]",
        "[a-c1]",
        "[\\d\\s]",
        "[^\\w]",
        "\\u{e9}",
        "\\x61",
        "\\n",
        "\\p{L}",
        "\\P{L}",
        "[\\p{N}b]",
        "[^]",
        "\\u00e9",
        "[é-ü]",
        "\\b",
        "\\B",
        "^",
        "$",
    ]);
    let quantifier =
        prop::sample::select(vec!["", "", "", "*", "+", "?", "{1,2}", "*?", "+?", "{2}"]);
    let piece = (atom, quantifier).prop_map(|(atom, q)| {
        // Assertions cannot take quantifiers in `u` mode.
        if matches!(atom, "\\b" | "\\B" | "^" | "$") {
            atom.to_owned()
        } else {
            format!("{atom}{q}")
        }
    });
    let sequence = prop::collection::vec(piece, 1..5).prop_map(|pieces| pieces.concat());
    prop::collection::vec(sequence, 1..3).prop_map(|alternatives| {
        let joined = alternatives.join("|");
        format!("(?:{joined})")
    })
}

fn text_strategy() -> impl Strategy<Value = String> {
    let chars = prop::sample::select(vec![
        'a', 'b', 'c', 'é', 'ü', '😀', '1', ' ', '\n', '\u{a0}', '_', '.', '-',
    ]);
    prop::collection::vec(chars, 0..8).prop_map(|chars| chars.into_iter().collect())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    /// Every pattern `regress` accepts (from this family) is supported and matches like `regress`.
    #[test]
    fn agrees_with_regress(pattern in pattern_strategy(), texts in prop::collection::vec(text_strategy(), 1..6)) {
        let reference = regress::Regex::with_flags(&pattern, "u");
        prop_assume!(reference.is_ok());
        let reference = reference.unwrap();
        let ours = Pattern::new(&pattern).unwrap_or_else(|err| panic!("{pattern:?}: {err}"));
        for text in &texts {
            prop_assert_eq!(ours.is_match(text), reference.find(text).is_some(), "{:?} on {:?}", pattern, text);
        }
    }
}

#[test]
fn deeply_nested_groups_do_not_overflow() {
    // 1 KiB of parentheses is the most a pattern can hold.
    let depth = formwork_forms::limits::MAX_PATTERN_BYTES / 2;
    let pattern = format!("{}a{}", "(".repeat(depth), ")".repeat(depth));
    assert!(Pattern::new(&pattern).is_err(), "too deep to match");
    let pattern = format!("{}a{}", "(?:".repeat(depth / 2), ")".repeat(depth / 2));
    let _ = Pattern::new(&pattern[..pattern.len().min(formwork_forms::limits::MAX_PATTERN_BYTES)]);
}

/// Found by `agrees_with_regress`: `\B` beside `é` made regex's `is_match` disagree with its own
/// `find`, so a valid answer would have been refused.
#[test]
fn ascii_non_boundary_beside_non_ascii_text() {
    let pattern = Pattern::new(r"(?:\B|\D\D)").unwrap();
    assert!(pattern.is_match("aéa"));
    assert!(!Pattern::new(r"^\B$").unwrap().is_match("é"));
}
