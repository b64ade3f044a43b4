//! Bounding expression depth, so that no statement can overflow a worker's stack.
//!
//! sqlparser builds `1+1+...+1` and `a OR b OR ...` in a loop (its recursion limit counts
//! parentheses and other nesting, not the length of an operator chain), so the tree it returns
//! can be as deep as the statement is long. Everything after it recurses over that tree: our
//! translator (about 2.5 KB of stack per level in release builds), sqlparser's `span()`, the
//! evaluator, `Display`, and the generated `Drop` of both trees. Pool workers have 2 MiB stacks,
//! so a 2 KB statement used to abort the whole server (SIGABRT on stack overflow).
//!
//! The bound, before sqlparser builds anything: [`nesting_bound`] reads the statement's tokens
//! (the same tokens the parser then gets, so a statement is still tokenized once)
//! and computes an upper bound of the depth any expression tree built from them can have (every
//! operator or keyword token may add a level, every bracket pair one; commas separate siblings).
//! Above [`MAX_DEPTH`] the statement is refused with MySQL's error 1436
//! (`ER_STACK_OVERRUN_NEED_MORE`, SQLSTATE HY000), as MySQL/MariaDB refuse an expression too
//! deep for their thread stack. Under it, [`with_room`] runs parse + translate on a stack with
//! room for that depth (a separate segment via `stacker` only when the current stack has too
//! little left) for sqlparser's `span()` and `Drop`, while the translators, the evaluator,
//! `Display` and `static_type` grow theirs level by level ([`with_stack`]; sqlparser's parser
//! does the same through its `recursive-protection` feature). What is left unprotected is the
//! generated `Drop` (and `Clone`, `PartialEq`) of our `Expr`, a few tens of bytes per level: at
//! most [`MAX_DEPTH`] levels of it fit any worker stack.
//!
//! `1+1+...` with 1,000 terms and a 1,000-term `a = 1 OR ...` chain therefore answer; 10,000 and
//! more terms get 1436 instead of killing the server.

use sqlparser::dialect::MySqlDialect;
use sqlparser::keywords::Keyword;
use sqlparser::parser::ParserError;
use sqlparser::tokenizer::{Token, TokenWithSpan, Tokenizer};

use crate::error::SqlError;

/// The deepest expression nesting (as bounded by [`nesting_bound`]) a statement may have.
pub const MAX_DEPTH: usize = 4096;

/// Stack budgeted per level of nesting for the recursions during parse and translation that do
/// not grow their own stack (sqlparser's `span()` and `Drop`: 4,000 levels overflow with 512
/// bytes per level and pass with 1 KiB, so twice that).
const BYTES_PER_LEVEL: usize = 2 << 10;

/// Stack budgeted for the fixed part of parsing and translating a statement.
const BASE_STACK: usize = 256 << 10;

/// Room the evaluator wants before it recurses one more level; below it, a new segment.
const RED_ZONE: usize = 64 << 10;

/// Size of a stack segment the evaluator adds when it runs low.
const SEGMENT: usize = 1 << 20;

/// One bracket level of the scan: operators in the current comma-separated item, the deepest
/// bracket group in that item, and the deepest item so far.
#[derive(Default)]
struct Level {
    ops: usize,
    child: usize,
    best: usize,
}

impl Level {
    fn item(&self) -> usize {
        self.ops + self.child
    }
}

/// Tokenizes `sql` with the MySQL dialect exactly as `Parser::try_with_sql` does; give the
/// tokens to [`check`] and then to `Parser::with_tokens_with_locations`.
///
/// MySQL forms sqlparser lacks are rewritten on the way ([`crate::dialect`]).
pub fn tokenize(sql: &str) -> Result<Vec<TokenWithSpan>, ParserError> {
    let mut tokens = Tokenizer::new(&MySqlDialect {}, sql)
        .with_unescape(true)
        .tokenize_with_location()
        .map_err(ParserError::from)?;
    crate::dialect::rewrite(&mut tokens);
    Ok(tokens)
}

/// An upper bound of the nesting depth of any expression sqlparser can build from `tokens`.
///
/// Within one comma-separated item of one bracket level, each token that is not a literal, an
/// identifier, a comma or a bracket counts as an operator that may add one level; a bracket
/// group adds one level to the deepest item inside it. Over-counting is fine (keywords such as
/// `SELECT` count too); what matters is that no tree sqlparser can build from these tokens is
/// deeper, since its other nesting (prefix operators, function calls, subqueries) also consumes
/// a token per level.
pub fn nesting_bound(tokens: &[TokenWithSpan]) -> usize {
    let mut stack = vec![Level::default()];
    let close = |stack: &mut Vec<Level>| {
        if let Some(l) = stack.pop() {
            let depth = l.best.max(l.item()) + 1;
            if let Some(top) = stack.last_mut() {
                top.child = top.child.max(depth);
            }
        }
    };
    for t in tokens {
        match &t.token {
            Token::Whitespace(_) => {}
            Token::LParen | Token::LBracket | Token::LBrace => stack.push(Level::default()),
            Token::RParen | Token::RBracket | Token::RBrace if stack.len() > 1 => close(&mut stack),
            Token::Comma | Token::SemiColon => {
                if let Some(top) = stack.last_mut() {
                    top.best = top.best.max(top.item());
                    top.ops = 0;
                    top.child = 0;
                }
            }
            Token::Word(w) if w.quote_style.is_some() || w.keyword == Keyword::NoKeyword => {}
            Token::Number(..)
            | Token::SingleQuotedString(_)
            | Token::DoubleQuotedString(_)
            | Token::NationalStringLiteral(_)
            | Token::EscapedStringLiteral(_)
            | Token::HexStringLiteral(_)
            | Token::Placeholder(_) => {}
            _ => {
                if let Some(top) = stack.last_mut() {
                    top.ops += 1;
                }
            }
        }
    }
    while stack.len() > 1 {
        close(&mut stack);
    }
    stack.pop().map(|l| l.best.max(l.item())).unwrap_or(0)
}

/// Error 1436, as MySQL and MariaDB answer an expression too deep for their thread stack. The
/// numbers are this statement's estimated need and shoal's budget for expression nesting.
pub fn stack_overrun(bound: usize) -> SqlError {
    let used = bound.saturating_mul(BYTES_PER_LEVEL);
    let stack = MAX_DEPTH * BYTES_PER_LEVEL;
    SqlError::coded(
        shoal_errors::ER_STACK_OVERRUN_NEED_MORE,
        format!(
            "Thread stack overrun: {used} bytes used of a {stack} byte stack, and {} bytes needed. \
             Consider increasing the thread_stack system variable.",
            used.saturating_sub(stack)
        ),
    )
}

/// The nesting bound of a statement's `tokens` (one pass over them), or 1436 if it is over
/// [`MAX_DEPTH`]; 1235 for forms shoal refuses ([`crate::dialect::refuse_unsupported`]).
pub fn check(tokens: &[TokenWithSpan]) -> Result<usize, SqlError> {
    crate::dialect::refuse_unsupported(tokens)?;
    let bound = nesting_bound(tokens);
    if bound > MAX_DEPTH {
        return Err(stack_overrun(bound));
    }
    Ok(bound)
}

/// Runs `f` (parse and translate a statement whose [`check`] gave `bound`) on a stack with room
/// for that depth: a new segment only when the current stack has too little left.
pub fn with_room<R>(bound: usize, f: impl FnOnce() -> R) -> R {
    let need = BASE_STACK + bound * BYTES_PER_LEVEL;
    stacker::maybe_grow(need, need, f)
}

/// Runs one level of a recursion over an expression, on a new stack segment when the current
/// one is low (for the evaluator and the other walks over a translated expression).
#[inline]
pub fn with_stack<R>(f: impl FnOnce() -> R) -> R {
    stacker::maybe_grow(RED_ZONE, SEGMENT, f)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn nesting_bound(sql: &str) -> usize {
        tokenize(sql).map(|t| super::nesting_bound(&t)).unwrap_or(0)
    }

    fn check(sql: &str) -> Result<usize, SqlError> {
        super::check(&tokenize(sql).unwrap())
    }

    #[test]
    fn bound_counts_operators_per_item_and_brackets() {
        // `1+1+1`: two operators (+ SELECT).
        assert_eq!(nesting_bound("SELECT 1+1+1"), 3);
        // Commas separate siblings; the deepest item counts.
        assert_eq!(nesting_bound("SELECT 1+1, 1+1+1+1, 'a'"), 3);
        // A group adds one level to the item it sits in.
        assert_eq!(nesting_bound("SELECT (1+(2*3)) - 4"), 1 + 1 + 1 + 1 + 1 + 1);
        assert_eq!(nesting_bound("SELECT f(a, b + c)"), 1 + 1 + 1);
        // Identifiers, quoted names and literals are leaves.
        assert_eq!(nesting_bound("SELECT `select`, x, 'OR', 0x41, ?"), 1);
        // An IN list or VALUES rows do not add up.
        let list: Vec<String> = (0..5000).map(|i| i.to_string()).collect();
        assert!(nesting_bound(&format!("SELECT 1 IN ({})", list.join(","))) < 5);
        // Unbalanced brackets and untokenizable text do not panic.
        assert!(nesting_bound("SELECT ((1+1") >= 3);
        assert_eq!(nesting_bound("SELECT 1 ) ) +1"), 4);
        assert_eq!(nesting_bound("SELECT 'unterminated"), 0);
    }

    #[test]
    fn check_refuses_over_max_depth_with_1436() {
        let ok = format!("SELECT 1{}", "+1".repeat(MAX_DEPTH - 2));
        assert!(check(&ok).is_ok());
        let deep = format!("SELECT 1{}", "+1".repeat(MAX_DEPTH));
        let e = check(&deep).unwrap_err();
        assert_eq!((e.code(), e.sqlstate()), (1436, "HY000"));
        assert!(e.to_string().starts_with("Thread stack overrun: "));
    }
}
