//! Statement text that is not UTF-8.
//!
//! A client's statement is bytes in its character set; shoal's parser reads UTF-8 text. Almost
//! every statement is UTF-8 and is read as it is. The exception that matters is binary data in
//! a string literal: `mariadb-dump` without `--hex-blob` writes a BLOB/BINARY/VARBINARY value
//! as a quoted literal of its raw bytes (only `\0`, `\'`, `\"`, `\\`, `\n`, `\r` and `\Z`
//! escaped), so a dump of bytes such as `0xFF` or `0x80` is a statement that is not UTF-8.
//! MySQL keeps such a literal's bytes as they are: stored into a binary string column they
//! come back byte for byte, stored into a text column they are refused (1366) or, in
//! non-strict mode, cut at the first bad byte.
//!
//! [`query_text`] makes text out of such bytes without losing them: every quoted string
//! literal (`'..'` or `".."`, with MySQL's backslash escapes and doubled quotes) whose bytes
//! are not UTF-8 becomes the hex literal of the bytes it denotes (`'a\0\xFF'` ->
//! `X'6100FF'`), a binary string with exactly those bytes, which is what the column receives.
//! Any other byte that is not UTF-8 (in an identifier, a comment, outside any quotes) is
//! replaced by U+FFFD, as before: no client sends such names, and a replaced name fails to
//! resolve rather than naming something else. UTF-8 text is returned borrowed and unchanged.
//!
//! The scan follows [`crate::split`]'s rules (quotes, backslash escapes, `-- `, `#` and
//! `/* */` comments; a versioned comment `/*! .. */` is code and scanned).

use std::borrow::Cow;
use std::fmt::Write as _;

/// The statement `b` as text (see the module doc): borrowed when it is UTF-8.
pub fn query_text(b: &[u8]) -> Cow<'_, str> {
    if let Ok(s) = std::str::from_utf8(b) {
        return Cow::Borrowed(s);
    }
    let mut out = String::with_capacity(b.len() + b.len() / 2);
    // Bytes copied through verbatim (lossily) from `plain` up to `i`.
    let mut plain = 0;
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            q @ (b'\'' | b'"') => {
                // A literal that never closes is left to the parser's 1064.
                let Some(end) = literal_end(b, i, q) else {
                    break;
                };
                let body = &b[i + 1..end - 1];
                if std::str::from_utf8(body).is_err() {
                    out.push_str(&String::from_utf8_lossy(&b[plain..i]));
                    // `_binary'..'`: the introducer must stay a word of its own.
                    if i > 0 && (b[i - 1].is_ascii_alphanumeric() || b[i - 1] == b'_') {
                        out.push(' ');
                    }
                    out.push_str("X'");
                    for byte in unescape(body, q) {
                        let _ = write!(out, "{byte:02X}");
                    }
                    out.push('\'');
                    plain = end;
                }
                i = end;
            }
            b'`' => i = literal_end(b, i, b'`').unwrap_or(b.len()),
            b'#' => i = line_end(b, i),
            b'-' if b.get(i + 1) == Some(&b'-')
                && b.get(i + 2).is_none_or(|c| c.is_ascii_whitespace()) =>
            {
                i = line_end(b, i)
            }
            b'/' if b.get(i + 1) == Some(&b'*') && b.get(i + 2) != Some(&b'!') => {
                i += 2;
                while i < b.len() && !(b[i] == b'*' && b.get(i + 1) == Some(&b'/')) {
                    i += 1;
                }
                i = (i + 2).min(b.len());
            }
            _ => i += 1,
        }
    }
    out.push_str(&String::from_utf8_lossy(&b[plain..]));
    Cow::Owned(out)
}

/// The index just past the quoted run that opens at `start` with quote `q` (backslash escapes
/// except in backquotes, a doubled quote is one quote); `None` when it never closes.
fn literal_end(b: &[u8], start: usize, q: u8) -> Option<usize> {
    let mut i = start + 1;
    while i < b.len() {
        if b[i] == b'\\' && q != b'`' {
            i += 2;
            continue;
        }
        if b[i] == q {
            if b.get(i + 1) == Some(&q) {
                i += 2;
                continue;
            }
            return Some(i + 1);
        }
        i += 1;
    }
    None
}

fn line_end(b: &[u8], mut i: usize) -> usize {
    while i < b.len() && b[i] != b'\n' {
        i += 1;
    }
    i
}

/// The bytes a literal's body denotes, MySQL's escapes applied: `\0`, `\b`, `\n`, `\r`, `\t`,
/// `\Z` (0x1A); `\%` and `\_` keep their backslash (they are LIKE's); any other escaped byte
/// is itself; a doubled quote is one.
fn unescape(body: &[u8], q: u8) -> Vec<u8> {
    let mut out = Vec::with_capacity(body.len());
    let mut i = 0;
    while i < body.len() {
        let c = body[i];
        if c == b'\\' && i + 1 < body.len() {
            let e = body[i + 1];
            match e {
                b'0' => out.push(0),
                b'b' => out.push(8),
                b'n' => out.push(b'\n'),
                b'r' => out.push(b'\r'),
                b't' => out.push(b'\t'),
                b'Z' => out.push(0x1A),
                b'%' | b'_' => out.extend([b'\\', e]),
                other => out.push(other),
            }
            i += 2;
        } else if c == q && body.get(i + 1) == Some(&q) {
            out.push(q);
            i += 2;
        } else {
            out.push(c);
            i += 1;
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn utf8_is_borrowed_unchanged() {
        let q = "INSERT INTO t VALUES ('é\\0', X'FF')".as_bytes();
        assert!(matches!(query_text(q), Cow::Borrowed(s) if s.as_bytes() == q));
    }

    #[test]
    fn literals_that_are_not_utf8_become_hex() {
        let q = b"INSERT INTO t VALUES (1,'a\\0\xff\x80\\'\\\\z','ok',\"\xfe\"\"\\n\")";
        assert_eq!(
            query_text(q),
            "INSERT INTO t VALUES (1,X'6100FF80275C7A','ok',X'FE220A')"
        );
        // Escaped quotes and doubled quotes do not end the literal; LIKE's escapes stay.
        assert_eq!(
            query_text(b"SELECT 'it''s \xff', '\\%\xc3'"),
            "SELECT X'6974277320FF', X'5C25C3'"
        );
    }

    #[test]
    fn bytes_outside_literals_and_in_comments_are_replaced() {
        assert_eq!(
            query_text(b"SELECT 1 /* \xff */ -- \xfe\n, `a\xff`, '\xff'"),
            "SELECT 1 /* \u{FFFD} */ -- \u{FFFD}\n, `a\u{FFFD}`, X'FF'"
        );
        // A literal that never closes is left to the parser's 1064.
        assert_eq!(query_text(b"SELECT '\xff"), "SELECT '\u{FFFD}");
        // A quote inside a comment opens nothing.
        assert_eq!(
            query_text(b"SELECT 1 # it's\n, '\xff'"),
            "SELECT 1 # it's\n, X'FF'"
        );
        // An introducer stays one: `_binary X'..'` is the same binary string.
        assert_eq!(
            query_text(b"SELECT _binary'\xff', _binary '\x80'"),
            "SELECT _binary X'FF', _binary X'80'"
        );
        // A versioned comment is code.
        assert_eq!(
            query_text(b"/*!40101 SELECT '\xff' */"),
            "/*!40101 SELECT X'FF' */"
        );
    }
}
