//! Column names as MySQL prints them: an unaliased select item is named by its text exactly as
//! written (`1+1`, `COUNT( * )`), sliced out of the statement with sqlparser's spans; a bare
//! string literal by its value, a column reference by its name.

use sqlparser::ast as sp;
use sqlparser::ast::Spanned;
use sqlparser::tokenizer::Location;

/// Characters between two entries of [`SourceText`]'s character-to-byte index.
const STRIDE: usize = 64;

/// A statement's text with its line starts, to map sqlparser's line/column spans to bytes.
#[derive(Debug, Clone)]
pub struct SourceText<'a> {
    pub sql: &'a str,
    /// Character index of each line's start.
    line_chars: Vec<usize>,
    /// Byte offset of every [`STRIDE`]-th character: a location's byte offset is found by
    /// scanning at most `STRIDE` characters. Scanning from the line start for every select item
    /// made a long one-line statement quadratic: preparing `SELECT 1,1,...` with 65535 items
    /// took 7 s (found by fuzzing).
    marks: Vec<usize>,
    /// Number of characters.
    chars: usize,
}

impl<'a> SourceText<'a> {
    pub fn new(sql: &'a str) -> SourceText<'a> {
        let mut line_chars = vec![0];
        let mut marks = Vec::with_capacity(sql.len() / STRIDE + 1);
        let mut chars = 0;
        for (i, (b, c)) in sql.char_indices().enumerate() {
            if i % STRIDE == 0 {
                marks.push(b);
            }
            if c == '\n' {
                line_chars.push(i + 1);
            }
            chars = i + 1;
        }
        SourceText {
            sql,
            line_chars,
            marks,
            chars,
        }
    }

    /// Byte offset of a 1-based line/column location (the end of the text past its last
    /// character).
    fn offset(&self, l: Location) -> Option<usize> {
        if l.line == 0 {
            return None;
        }
        let start = *self.line_chars.get(l.line as usize - 1)?;
        let Some(col) = (l.column as usize).checked_sub(1) else {
            return Some(self.sql.len());
        };
        let at = start.saturating_add(col);
        if at >= self.chars {
            return Some(self.sql.len());
        }
        let from = self.marks[at / STRIDE];
        Some(
            from + self.sql[from..]
                .char_indices()
                .nth(at % STRIDE)
                .map(|(i, _)| i)
                .unwrap_or(self.sql.len() - from),
        )
    }

    /// The start of the function name whose argument list holds byte `at`: back to the nearest
    /// unmatched `(` (outside quotes, as far as a backward scan can tell), then over the word
    /// before it.
    fn call_start(bytes: &[u8], at: usize) -> Option<usize> {
        let mut depth = 0i32;
        let mut j = at;
        let open = loop {
            if j == 0 {
                return None;
            }
            j -= 1;
            match bytes[j] {
                b')' => depth += 1,
                b'(' if depth == 0 => break j,
                b'(' => depth -= 1,
                _ => {}
            }
        };
        let mut k = open;
        while k > 0 && bytes[k - 1].is_ascii_whitespace() {
            k -= 1;
        }
        let end = k;
        while k > 0 && (bytes[k - 1].is_ascii_alphanumeric() || bytes[k - 1] == b'_') {
            k -= 1;
        }
        (k < end).then_some(k)
    }

    /// The source text an expression was written as (MySQL's column name), if spans allow.
    /// sqlparser's spans end before a function's closing parenthesis (and cover only the name
    /// of `NOW()`), so the end is extended until parentheses balance.
    fn source_text(&self, e: &sp::Expr) -> Option<String> {
        let span = e.span();
        let mut a = self.offset(span.start)?;
        let mut b = self.offset(span.end)?;
        if a >= b || b > self.sql.len() {
            return None;
        }
        let bytes = self.sql.as_bytes();
        if matches!(
            e,
            sp::Expr::Substring { .. }
                | sp::Expr::Trim { .. }
                | sp::Expr::Ceil { .. }
                | sp::Expr::Floor { .. }
                | sp::Expr::Position { .. }
                | sp::Expr::Extract { .. }
        ) {
            // Keyword forms (`SUBSTRING(x FROM 2)`, `TRIM(LEADING 'a' FROM x)`): the span starts
            // inside the parentheses; the name is the word before the opening one.
            a = Self::call_start(bytes, a)?;
        }
        if matches!(e, sp::Expr::TypedString(_)) && !bytes[a].is_ascii_alphabetic() {
            // `DATE '2020-01-01'`: the span covers the string; the name starts at the keyword.
            let mut j = a;
            while j > 0 && bytes[j - 1].is_ascii_whitespace() {
                j -= 1;
            }
            while j > 0 && bytes[j - 1].is_ascii_alphabetic() {
                j -= 1;
            }
            a = j;
        }
        let balance = |from: usize, to: usize| -> i64 {
            let mut bal = 0i64;
            let mut quote: Option<u8> = None;
            for &c in &bytes[from..to] {
                match quote {
                    Some(q) if c == q => quote = None,
                    Some(_) => {}
                    None => match c {
                        b'\'' | b'"' | b'`' => quote = Some(c),
                        b'(' => bal += 1,
                        b')' => bal -= 1,
                        _ => {}
                    },
                }
            }
            bal
        };
        if matches!(e, sp::Expr::Function(_)) {
            // `NOW()`: the span covers `NOW` only; take the argument list too.
            let mut j = b;
            while j < bytes.len() && bytes[j].is_ascii_whitespace() {
                j += 1;
            }
            if balance(a, b) == 0 && j < bytes.len() && bytes[j] == b'(' {
                b = j + 1;
            }
        }
        let mut guard = 0;
        while balance(a, b) > 0 && guard < 64 {
            guard += 1;
            let mut quote: Option<u8> = None;
            let mut j = b;
            while j < bytes.len() {
                let c = bytes[j];
                match quote {
                    Some(q) if c == q => quote = None,
                    Some(_) => {}
                    None if c == b'\'' || c == b'"' || c == b'`' => quote = Some(c),
                    None if c == b')' => break,
                    None => {}
                }
                j += 1;
            }
            if j >= bytes.len() {
                return None;
            }
            b = j + 1;
        }
        Some(self.sql[a..b].trim().to_string())
    }

    /// MySQL's column name for an unaliased select item: a string literal's value, a column's
    /// name, otherwise the expression as written.
    pub fn column_name(&self, e: &sp::Expr) -> String {
        match e {
            sp::Expr::Value(v) => match &v.value {
                sp::Value::SingleQuotedString(s) | sp::Value::DoubleQuotedString(s) => {
                    return s.clone()
                }
                sp::Value::Null => return "NULL".into(),
                _ => {}
            },
            sp::Expr::Identifier(i) => return i.value.clone(),
            sp::Expr::CompoundIdentifier(ids) if !ids[0].value.starts_with("@@") => {
                return ids.last().map(|i| i.value.clone()).unwrap_or_default()
            }
            _ => {}
        }
        self.source_text(e).unwrap_or_else(|| e.to_string())
    }
}
