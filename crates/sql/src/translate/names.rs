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

    /// The text from location `from` up to `to` (the end of the text when `to` is no location:
    /// the end-of-input token has none), trimmed.
    pub fn between(&self, from: Location, to: Location) -> &'a str {
        let a = self.offset(from).unwrap_or(0);
        let b = self.offset(to).unwrap_or(self.sql.len()).max(a);
        self.sql[a..b].trim()
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
        let (a, b) = self.source_range(e)?;
        Some(self.sql[a..b].trim().to_string())
    }

    /// `x IS [NOT] NULL | TRUE | FALSE | UNKNOWN`: sqlparser's span is `x`'s; the range runs on
    /// over the trailing words.
    fn is_test_range(&self, inner: &sp::Expr) -> Option<(usize, usize)> {
        let (a, mut b) = self.source_range(inner)?;
        let bytes = self.sql.as_bytes();
        let word = |at: usize| -> (usize, usize) {
            let mut i = at;
            while i < bytes.len() && bytes[i].is_ascii_whitespace() {
                i += 1;
            }
            let start = i;
            while i < bytes.len() && bytes[i].is_ascii_alphabetic() {
                i += 1;
            }
            (start, i)
        };
        let (s, e) = word(b);
        if !self.sql[s..e].eq_ignore_ascii_case("IS") {
            return None;
        }
        b = e;
        let (s, e) = word(b);
        let (s, e) = if self.sql[s..e].eq_ignore_ascii_case("NOT") {
            word(e)
        } else {
            (s, e)
        };
        let last = &self.sql[s..e];
        if !["NULL", "TRUE", "FALSE", "UNKNOWN"]
            .iter()
            .any(|w| last.eq_ignore_ascii_case(w))
        {
            return None;
        }
        Some((a, e))
    }

    /// `(a, b)` widened to the parentheses right around it, if there are (none: unchanged).
    fn widen_parens(&self, a: usize, b: usize) -> Option<(usize, usize)> {
        let bytes = self.sql.as_bytes();
        let mut i = a;
        while i > 0 && bytes[i - 1].is_ascii_whitespace() {
            i -= 1;
        }
        let mut j = b;
        while j < bytes.len() && bytes[j].is_ascii_whitespace() {
            j += 1;
        }
        if i > 0 && bytes[i - 1] == b'(' && j < bytes.len() && bytes[j] == b')' {
            Some((i - 1, j + 1))
        } else {
            (a < b).then_some((a, b))
        }
    }

    /// The byte range of [`Self::source_text`].
    fn source_range(&self, e: &sp::Expr) -> Option<(usize, usize)> {
        match e {
            sp::Expr::IsNull(x)
            | sp::Expr::IsNotNull(x)
            | sp::Expr::IsTrue(x)
            | sp::Expr::IsNotTrue(x)
            | sp::Expr::IsFalse(x)
            | sp::Expr::IsNotFalse(x)
            | sp::Expr::IsUnknown(x)
            | sp::Expr::IsNotUnknown(x) => return self.is_test_range(x),
            // The parentheses around the inner range (the span is the inside's).
            sp::Expr::Nested(x) => {
                let (a, b) = self.source_range(x)?;
                // `!x` is `(NOT x)` to the parser (crate::dialect): those parentheses are not
                // in the source.
                if matches!(
                    **x,
                    sp::Expr::UnaryOp {
                        op: sp::UnaryOperator::Not,
                        ..
                    }
                ) && self.sql[a..].starts_with('!')
                {
                    return Some((a, b));
                }
                return self.widen_parens(a, b);
            }
            sp::Expr::Subquery(_) => {
                let span = e.span();
                let (a, b) = (self.offset(span.start)?, self.offset(span.end)?);
                return self.widen_parens(a, b);
            }
            // The operator before the operand (the span is the operand's).
            // MySQL's parser drops a unary plus: the name is the operand's.
            sp::Expr::UnaryOp {
                op: sp::UnaryOperator::Plus,
                expr,
            } => return self.source_range(expr),
            sp::Expr::UnaryOp { op, expr } => {
                let (a, b) = self.source_range(expr)?;
                let bytes = self.sql.as_bytes();
                let mut i = a;
                while i > 0 && bytes[i - 1].is_ascii_whitespace() {
                    i -= 1;
                }
                // MySQL's `!x` is NOT to the parser (crate::dialect).
                let sym = if *op == sp::UnaryOperator::Not && self.sql[..i].ends_with('!') {
                    "!".to_string()
                } else {
                    op.to_string()
                };
                let start = i.checked_sub(sym.len())?;
                return (self.sql.get(start..i)?.eq_ignore_ascii_case(&sym)).then_some((start, b));
            }
            // From the left operand's start to the right one's end: either may have a span
            // that misses its own first or last words (`CAST(..)`, `x IS NULL`).
            sp::Expr::BinaryOp { left, right, .. } => {
                let (a, _) = self.source_range(left)?;
                let (_, b) = self.source_range(right)?;
                return (a < b).then_some((a, b));
            }
            _ => {}
        }
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
                | sp::Expr::Cast { .. }
                | sp::Expr::Convert { .. }
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
        Some((a, b))
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
            sp::Expr::UnaryOp {
                op: sp::UnaryOperator::Plus,
                expr,
            } => return self.column_name(expr),
            sp::Expr::CompoundIdentifier(ids) if !ids[0].value.starts_with("@@") => {
                return ids.last().map(|i| i.value.clone()).unwrap_or_default()
            }
            _ => {}
        }
        self.source_text(e).unwrap_or_else(|| e.to_string())
    }
}
