//! Multi-statement splitting for COM_QUERY with CLIENT_MULTI_STATEMENTS.
//!
//! A small scanner that walks the text once and cuts at `;` outside of quotes (`'..'`, `".."`,
//! `` `..` `` with doubled-quote and backslash escapes) and comments (`-- ` to end of line, `#` to
//! end of line, `/* .. */`). Versioned comments `/*! ... */` are kept in the statement (the parser
//! handles them). Empty statements between separators are dropped, except that an entirely empty
//! text yields one empty statement (so the caller can answer 1065 "Query was empty").

/// Splits `sql` into statements; each slice is trimmed and excludes the `;`.
pub fn split_statements(sql: &str) -> Vec<&str> {
    let b = sql.as_bytes();
    let mut out = Vec::new();
    let mut start = 0;
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            q @ (b'\'' | b'"' | b'`') => {
                i += 1;
                while i < b.len() {
                    if b[i] == b'\\' && q != b'`' {
                        i += 2;
                        continue;
                    }
                    if b[i] == q {
                        if i + 1 < b.len() && b[i + 1] == q {
                            i += 2;
                            continue;
                        }
                        break;
                    }
                    i += 1;
                }
                i += 1;
            }
            b'#' => {
                while i < b.len() && b[i] != b'\n' {
                    i += 1;
                }
            }
            b'-' if i + 2 < b.len() + 1
                && b.get(i + 1) == Some(&b'-')
                && b.get(i + 2).is_none_or(|c| c.is_ascii_whitespace()) =>
            {
                while i < b.len() && b[i] != b'\n' {
                    i += 1;
                }
            }
            b'/' if b.get(i + 1) == Some(&b'*') => {
                i += 2;
                while i < b.len() && !(b[i] == b'*' && b.get(i + 1) == Some(&b'/')) {
                    i += 1;
                }
                i += 2;
            }
            b';' => {
                let s = sql[start..i].trim();
                if !is_blank(s) {
                    out.push(s);
                }
                i += 1;
                start = i;
            }
            _ => i += 1,
        }
    }
    let tail = sql[start.min(sql.len())..].trim();
    if !is_blank(tail) || out.is_empty() {
        out.push(tail);
    }
    out
}

/// Whether the text holds nothing but whitespace and (non-versioned) comments.
pub fn is_blank(s: &str) -> bool {
    let b = s.as_bytes();
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            c if c.is_ascii_whitespace() => i += 1,
            b'#' => {
                while i < b.len() && b[i] != b'\n' {
                    i += 1;
                }
            }
            b'-' if b.get(i + 1) == Some(&b'-')
                && b.get(i + 2).is_none_or(|c| c.is_ascii_whitespace()) =>
            {
                while i < b.len() && b[i] != b'\n' {
                    i += 1;
                }
            }
            b'/' if b.get(i + 1) == Some(&b'*') && b.get(i + 2) != Some(&b'!') => {
                i += 2;
                while i < b.len() && !(b[i] == b'*' && b.get(i + 1) == Some(&b'/')) {
                    i += 1;
                }
                i += 2;
            }
            _ => return false,
        }
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn splits_respecting_quotes_and_comments() {
        assert_eq!(
            split_statements("select 1; select 2"),
            vec!["select 1", "select 2"]
        );
        assert_eq!(
            split_statements("select ';'; select \"a;b\""),
            vec!["select ';'", "select \"a;b\""]
        );
        assert_eq!(split_statements("select 'it''s;'"), vec!["select 'it''s;'"]);
        assert_eq!(split_statements("select 'a\\';b'"), vec!["select 'a\\';b'"]);
        assert_eq!(
            split_statements("select 1 -- x;y\n; select 2"),
            vec!["select 1 -- x;y", "select 2"]
        );
        assert_eq!(split_statements("select 1 # x;y\n"), vec!["select 1 # x;y"]);
        assert_eq!(
            split_statements("select /* ; */ 1;"),
            vec!["select /* ; */ 1"]
        );
        assert_eq!(
            split_statements("select `a;b` from t"),
            vec!["select `a;b` from t"]
        );
        assert_eq!(
            split_statements("select 1;;  ; select 2;"),
            vec!["select 1", "select 2"]
        );
        assert_eq!(split_statements(""), vec![""]);
        assert_eq!(split_statements("  -- only\n"), vec!["-- only"]);
        assert_eq!(split_statements("select 5-1"), vec!["select 5-1"]);
        assert_eq!(
            split_statements("select 5--1;select 2"),
            vec!["select 5--1", "select 2"]
        );
    }

    #[test]
    fn blank_detection() {
        assert!(is_blank("  /* x */ -- y\n # z"));
        assert!(!is_blank("/*! select */"));
        assert!(!is_blank("select 1"));
    }
}
