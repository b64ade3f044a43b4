//! The one string collation shoal has, defined once for SQL comparison and for index keys.
//!
//! # What it is
//!
//! shoal's character strings are utf8mb4 text compared *case-insensitively with trailing spaces
//! ignored*, close to MariaDB's `utf8mb4_general_ci` (PAD SPACE): `'abc' = 'ABC' = 'abc  '`.
//! The definition is a **fold**: a string's trailing `' '` are removed, then every character
//! is replaced by its Unicode uppercase mapping (`char::to_uppercase`, which may expand: `'ß'`
//! folds to `"SS"`, so `'ß' = 'ss'`). Two strings compare as their folded character sequences
//! compare, code point by code point, a proper prefix first ([`cmp`]).
//!
//! # Weights
//!
//! An index key cannot hold a comparison function: RocksDB orders keys by their bytes. So a
//! key holds the string's **weight** ([`weight`]): the UTF-8 encoding of its folded characters.
//! UTF-8 was designed so that byte order is code point order (also across lengths: a lead byte
//! says how long its sequence is and sequences of different lengths start in disjoint byte
//! ranges), so comparing two weights as bytes gives exactly [`cmp`]'s answer, equal weights
//! included: `'a'`, `'A'` and `'a '` have one weight, hence one UNIQUE key slot and one lookup.
//! Weights are not invertible (the case and the trailing spaces are gone), which is why
//! storage reads a row's string values from the row, never from its key.
//!
//! [`cmp`] and [`weight`] are both written over [`fold`], and a test checks them against each
//! other on random strings with expanding, dotless/dotted, title-case and NUL characters, so
//! SQL comparison and key order cannot drift apart.
//!
//! # Where it differs from MariaDB
//!
//! `utf8mb4_general_ci` maps each character to one weight from a table (`'ß'` = `'s'`,
//! accents ignored for Latin letters: `'é'` = `'e'`); shoal folds with Unicode uppercase
//! (`'ß'` = `'ss'`, `'é'` <> `'e'`). ASCII text compares the same under both.

use std::cmp::Ordering;

mod ascii;

pub use ascii::{is_ascii, string_from_utf8};

/// The string without its trailing spaces (PAD SPACE: they never count).
pub fn trim(s: &str) -> &str {
    s.trim_end_matches(' ')
}

/// The folded characters of `s`: trailing spaces removed, each character uppercased (one
/// character may become several). Two strings are equal in the collation iff their folds are.
pub fn fold(s: &str) -> impl Iterator<Item = char> + '_ {
    trim(s).chars().flat_map(char::to_uppercase)
}

/// Appends the [`fold`] of `s` to `out` (ASCII text, the common case, without the per-character
/// case tables): a string key that is equal exactly when the strings are.
pub fn push_fold(out: &mut String, s: &str) {
    let s = trim(s);
    // SAFETY: `push_upper` appends only when `s` is ASCII, and then ASCII: `out` stays UTF-8.
    if ascii::push_upper(unsafe { out.as_mut_vec() }, s.as_bytes()) {
        return;
    }
    out.extend(fold(s));
}

/// Compares two strings in the collation: their [`fold`]s, code point by code point.
pub fn cmp(a: &str, b: &str) -> Ordering {
    let a = trim(a);
    let b = trim(b);
    // Equal bytes fold equally: skip the common prefix at memcmp speed, back to a character
    // boundary (the same in both strings, whose prefixes are the same bytes). Folding two equal
    // 4 MB strings character by character took ~20 ms, and MAX() or ORDER BY over a few dozen
    // such values ran seconds between two KILL checks (found by fuzzing).
    let mut i = common_prefix(a.as_bytes(), b.as_bytes());
    while !a.is_char_boundary(i) {
        i -= 1;
    }
    let (a, b) = (&a[i..], &b[i..]);
    if a.is_ascii() && b.is_ascii() {
        // ASCII uppercases to ASCII, one character each: the same fold without the tables.
        return a
            .bytes()
            .map(|c| c.to_ascii_uppercase())
            .cmp(b.bytes().map(|c| c.to_ascii_uppercase()));
    }
    a.chars()
        .flat_map(char::to_uppercase)
        .cmp(b.chars().flat_map(char::to_uppercase))
}

/// Whether two strings are equal in the collation.
pub fn eq(a: &str, b: &str) -> bool {
    cmp(a, b) == Ordering::Equal
}

/// Appends the weight of `s` (the UTF-8 bytes of its [`fold`]) to `out`: comparing weights as
/// byte strings is [`cmp`].
pub fn push_weight(out: &mut Vec<u8>, s: &str) {
    let s = trim(s);
    // ASCII (the common case) checked, copied and uppercased in one pass: ORDER BY and
    // DISTINCT of sysbench's 120-character `c` weigh every row (see `ascii`).
    if ascii::push_upper(out, s.as_bytes()) {
        return;
    }
    let mut buf = [0u8; 4];
    for c in fold(s) {
        out.extend_from_slice(c.encode_utf8(&mut buf).as_bytes());
    }
}

/// The weight of `s` (see [`push_weight`]).
pub fn weight(s: &str) -> Vec<u8> {
    let mut out = Vec::with_capacity(s.len());
    push_weight(&mut out, s);
    out
}

/// The weight of stored text bytes: bytes that are not UTF-8 are read as the SQL layer reads
/// them (each invalid sequence as U+FFFD, `String::from_utf8_lossy`), so the key agrees with
/// the comparison of the values SQL sees.
pub fn push_weight_bytes(out: &mut Vec<u8>, b: &[u8]) {
    push_weight(out, &String::from_utf8_lossy(b));
}

/// Length of the longest common prefix of two byte strings.
fn common_prefix(a: &[u8], b: &[u8]) -> usize {
    const CHUNK: usize = 64;
    let n = a.len().min(b.len());
    let mut i = 0;
    while i + CHUNK <= n && a[i..i + CHUNK] == b[i..i + CHUNK] {
        i += CHUNK;
    }
    while i < n && a[i] == b[i] {
        i += 1;
    }
    i
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `push_fold` is `fold` collected, on ASCII (the fast path) and on text that is not.
    #[test]
    fn push_fold_is_fold() {
        for s in [
            "", "abc", "aBc  ", " x y ", "Straße", "ǅemal ", "ıİ", "a\u{0}b", "ﬀ-ΐ",
        ] {
            let mut out = String::from("prefix:");
            push_fold(&mut out, s);
            assert_eq!(
                out,
                format!("prefix:{}", fold(s).collect::<String>()),
                "{s:?}"
            );
        }
    }
    use rand::{Rng, SeedableRng};

    /// Characters whose uppercase is unusual: expansions (ß, ŉ, ﬀ, ΐ), title case (ǅ), dotted
    /// and dotless i, a character whose uppercase is ASCII (ſ -> S, ı -> I), NUL, spaces, tabs.
    const ALPHABET: &[char] = &[
        'a', 'A', 'b', 'B', 's', 'S', 'i', 'I', 'z', ' ', ' ', '\t', '\0', '~', 'ß', 'ẞ', 'ŉ', 'ﬀ',
        'ΐ', 'ǅ', 'ǆ', 'Ǆ', 'ı', 'İ', 'ſ', 'é', 'É', 'σ', 'ς', 'Σ', 'ÿ', '𝔞', '中', '\u{7f}',
        '\u{80}', '\u{ffff}',
    ];

    fn random(rng: &mut impl Rng) -> String {
        let n = rng.gen_range(0..6);
        (0..n)
            .map(|_| ALPHABET[rng.gen_range(0..ALPHABET.len())])
            .collect()
    }

    #[test]
    fn weights_order_as_cmp_and_fold() {
        let mut rng = rand::rngs::StdRng::seed_from_u64(16);
        for _ in 0..200_000 {
            let (a, b) = (random(&mut rng), random(&mut rng));
            let by_fold = fold(&a).cmp(fold(&b));
            assert_eq!(cmp(&a, &b), by_fold, "{a:?} vs {b:?}");
            assert_eq!(weight(&a).cmp(&weight(&b)), by_fold, "{a:?} vs {b:?}");
        }
    }

    #[test]
    fn case_and_trailing_spaces_are_ignored_expansions_count() {
        assert_eq!(weight("abc"), weight("ABC  "));
        assert!(eq("abc", "aBc "));
        assert!(!eq("abc", " abc"));
        assert!(eq("straße", "STRASSE"));
        assert_eq!(weight("ß"), b"SS");
        assert!(cmp("a", "a\t") == Ordering::Less);
        assert!(cmp("a\0", "a") == Ordering::Greater);
        assert_eq!(weight(""), weight("   "));
    }

    #[test]
    fn invalid_utf8_weighs_as_its_lossy_text() {
        let mut w = Vec::new();
        push_weight_bytes(&mut w, b"a\xffb");
        assert_eq!(w, weight("A\u{fffd}B"));
    }
}
