//! Parse (sqlparser, `MySqlDialect`) and translate into our AST.
//!
//! Two paths:
//! * Session statements whose MySQL forms sqlparser models loosely or not at all (`SET` with
//!   scopes and bare-word values, `SHOW` variants, `KILL`, `USE`, transaction control,
//!   `CREATE/DROP DATABASE`, `CREATE/DROP USER`, `DO`) are parsed by a small recursive-descent
//!   front that drives sqlparser's own `Parser` token by token and calls `parse_expr` for
//!   expressions, so expression syntax is sqlparser's everywhere.
//! * Everything else goes through `Parser::parse_sql`; the resulting statement is translated into
//!   [`Statement`]. Constructs we do not implement become 1235 (`doesn't yet support`), syntax
//!   errors 1064 — never a guess.
//!
//! Column names follow MySQL: the expression's text exactly as written (sliced out of the query
//! using sqlparser's spans), the alias if given, and a string literal's value for a bare literal.

use sqlparser::ast as sp;
use sqlparser::dialect::MySqlDialect;
use sqlparser::parser::{Parser, ParserError};
use sqlparser::tokenizer::{Token, TokenWithSpan};

pub mod account;
pub mod expr;
pub mod names;
pub mod query;

pub use expr::{cast_type, hex_literal, number_literal, ExprScope, PlainScope};
pub use names::SourceText;

use crate::ast::*;
use crate::error::SqlError;
use crate::split::is_blank;

/// A parsed statement and the number of `?` placeholders in it.
#[derive(Debug, Clone, PartialEq)]
pub struct Parsed {
    /// The statement.
    pub statement: Statement,
    /// Number of `?` placeholders.
    pub params: usize,
    /// For a query or a table statement sqlparser read: its tree, which the table engine
    /// translates without parsing the text again (`None` for the session's own statements and
    /// for the forms the table engine's hand-written front reads from the text).
    pub tree: Option<Tree>,
}

/// A statement as sqlparser read it, with the nesting bound its tokens gave
/// ([`crate::depth::check`]): whatever walks it or drops it does so on a stack with room for
/// that depth, as the parse did.
pub struct Tree {
    /// The statement (`None` only while being taken or dropped).
    stmt: Option<sp::Statement>,
    /// The nesting bound of its tokens.
    bound: usize,
}

impl Tree {
    fn new(stmt: sp::Statement, bound: usize) -> Tree {
        Tree {
            stmt: Some(stmt),
            bound,
        }
    }

    /// Runs `f` on the statement, on a stack with room for its depth.
    pub fn with<R>(mut self, f: impl FnOnce(sp::Statement) -> R) -> R {
        let stmt = self
            .stmt
            .take()
            .expect("a tree holds its statement until taken");
        crate::depth::with_room(self.bound, || f(stmt))
    }
}

impl Drop for Tree {
    fn drop(&mut self) {
        // Dropping a deep expression recurses as deep as parsing it did.
        if let Some(stmt) = self.stmt.take() {
            crate::depth::with_room(self.bound, || drop(stmt));
        }
    }
}

impl Clone for Tree {
    fn clone(&self) -> Tree {
        Tree {
            stmt: crate::depth::with_room(self.bound, || self.stmt.clone()),
            bound: self.bound,
        }
    }
}

impl PartialEq for Tree {
    fn eq(&self, other: &Tree) -> bool {
        crate::depth::with_room(self.bound.max(other.bound), || self.stmt == other.stmt)
    }
}

impl std::fmt::Debug for Tree {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Tree(..)")
    }
}

fn perr(e: ParserError) -> SqlError {
    let msg = match e {
        ParserError::TokenizerError(m) | ParserError::ParserError(m) => m,
        ParserError::RecursionLimitExceeded => "statement too deeply nested".into(),
    };
    SqlError::Syntax(msg)
}

/// Parses one statement (no trailing `;` splitting: see `split.rs`).
///
/// Expression depth is bounded first ([`crate::depth`]): too deep is 1436, never a stack
/// overflow.
pub fn parse(sql: &str) -> Result<Parsed, SqlError> {
    if is_blank(sql) {
        return Err(SqlError::EmptyQuery);
    }
    let tokens = crate::depth::tokenize(sql).map_err(perr)?;
    let bound = crate::depth::check(&tokens)?;
    crate::depth::with_room(bound, || parse_tokens(sql, tokens, bound))
}

fn parse_tokens(sql: &str, tokens: Vec<TokenWithSpan>, bound: usize) -> Result<Parsed, SqlError> {
    let placeholders = tokens
        .iter()
        .filter(|t| matches!(t.token, Token::Placeholder(_)))
        .count();
    let dialect = MySqlDialect {};
    let mut p = Parser::new(&dialect).with_tokens_with_locations(tokens);
    let mut t = Translator {
        src: SourceText::new(sql),
        params: 0,
        subqueries: Subqueries::Unsupported,
        subquery_seen: false,
    };
    let head = peek_word(&p, 0).unwrap_or_default();
    let second = peek_word(&p, 1).unwrap_or_default();
    let third = peek_word(&p, 2).unwrap_or_default();
    if account::is_account_statement(&head, &second, &third) {
        return Ok(Parsed {
            statement: Statement::Account(account::parse(sql)?),
            params: 0,
            tree: None,
        });
    }
    // Statements whose text the table engine's own front reads (DESCRIBE t, EXPLAIN ...,
    // ANALYZE / CHECK TABLE ...): routed by their first word, parsed there once.
    if let Some(kind) = engine_front_kind(&head) {
        return Ok(Parsed {
            statement: Statement::TableStatement(kind, Vec::new()),
            params: placeholders,
            tree: None,
        });
    }
    let own = match head.as_str() {
        "SET" | "SHOW" | "KILL" | "USE" | "BEGIN" | "START" | "COMMIT" | "ROLLBACK" | "DO"
        | "FLUSH" | "PREPARE" | "EXECUTE" | "DEALLOCATE" => true,
        "CREATE" => matches!(second.as_str(), "DATABASE" | "SCHEMA" | "USER"),
        "DROP" => matches!(second.as_str(), "DATABASE" | "SCHEMA" | "USER" | "PREPARE"),
        "LOCK" => matches!(second.as_str(), "TABLE" | "TABLES"),
        "UNLOCK" | "SAVEPOINT" | "RELEASE" => true,
        "BACKUP" => second == "TO",
        "ALTER" => second == "TABLE" && is_alter_keys(&p),
        _ => false,
    };
    let (statement, tree) = if own {
        p.next_token();
        (t.own_statement(&head, &mut p)?, None)
    } else {
        // `p` has only been peeked at: this is `Parser::parse_sql` on the same tokens.
        let mut stmts = p.parse_statements().map_err(perr)?;
        if stmts.len() != 1 {
            return Err(SqlError::Syntax(
                "multiple statements in one command".into(),
            ));
        }
        let tree = stmts.remove(0);
        let st = t.statement(&tree)?;
        // The table engine translates these (from the tree) and numbers their `?`s.
        t.params = placeholders;
        (st, Some(Tree::new(tree, bound)))
    };
    Ok(Parsed {
        statement,
        params: t.params,
        tree,
    })
}

/// The `Com_` kind of a statement only the table engine's hand-written front reads, by its
/// first word; `None` for every other statement.
fn engine_front_kind(head: &str) -> Option<&'static str> {
    Some(match head {
        "DESCRIBE" | "DESC" | "EXPLAIN" | "REPAIR" | "CHECKSUM" => "select",
        "ANALYZE" => "analyze",
        "OPTIMIZE" => "optimize",
        "CHECK" => "check",
        _ => return None,
    })
}

/// Whether a query is a lone `SELECT SLEEP(n)` (no table, one item).
fn is_lone_sleep(q: &sp::Query) -> bool {
    let sp::SetExpr::Select(s) = &*q.body else {
        return false;
    };
    let [item] = s.projection.as_slice() else {
        return false;
    };
    let e = match item {
        sp::SelectItem::UnnamedExpr(e) | sp::SelectItem::ExprWithAlias { expr: e, .. } => e,
        _ => return false,
    };
    s.from.is_empty()
        && matches!(e, sp::Expr::Function(f) if f.name.to_string().eq_ignore_ascii_case("SLEEP"))
}

/// Whether a query reads a table: a FROM clause anywhere in it (a derived table counts; DUAL
/// too, harmlessly). The common case, a SELECT with a FROM, is answered without looking further;
/// a query without one at the top is searched as text, where a FROM inside a string literal
/// errs on the side of "reads a table".
fn reads_tables(q: &sp::Query) -> bool {
    match &*q.body {
        sp::SetExpr::Select(s) if !s.from.is_empty() => true,
        _ => q.to_string().to_ascii_uppercase().contains("FROM"),
    }
}

/// `ALTER TABLE name DISABLE|ENABLE KEYS` (the name possibly qualified), peeked after `ALTER`.
fn is_alter_keys(p: &Parser) -> bool {
    let keys_at = |i: usize| {
        matches!(peek_word(p, i).as_deref(), Some("DISABLE" | "ENABLE"))
            && peek_word(p, i + 1).as_deref() == Some("KEYS")
            && matches!(p.peek_nth_token(i + 2).token, Token::EOF | Token::SemiColon)
    };
    keys_at(3) || (matches!(p.peek_nth_token(3).token, Token::Period) && keys_at(5))
}

fn peek_word(p: &Parser, n: usize) -> Option<String> {
    match p.peek_nth_token(n).token {
        Token::Word(w) if w.quote_style.is_none() => Some(w.value.to_ascii_uppercase()),
        _ => None,
    }
}

fn eat(p: &mut Parser, word: &str) -> bool {
    if peek_word(p, 0).as_deref() == Some(word) {
        p.next_token();
        true
    } else {
        false
    }
}

fn eat_seq(p: &mut Parser, words: &[&str]) -> bool {
    for (i, w) in words.iter().enumerate() {
        if peek_word(p, i).as_deref() != Some(*w) {
            return false;
        }
    }
    for _ in words {
        p.next_token();
    }
    true
}

fn at_end(p: &Parser) -> bool {
    matches!(p.peek_token().token, Token::EOF | Token::SemiColon)
}

fn expect_end(p: &mut Parser) -> Result<(), SqlError> {
    if at_end(p) {
        Ok(())
    } else {
        Err(SqlError::Syntax(p.peek_token().token.to_string()))
    }
}

/// An identifier or a quoted string used as a name.
fn name(p: &mut Parser) -> Result<String, SqlError> {
    let t = p.next_token();
    match t.token {
        Token::Word(w) => Ok(w.value),
        Token::SingleQuotedString(s) | Token::DoubleQuotedString(s) => Ok(s),
        other => Err(SqlError::Syntax(other.to_string())),
    }
}

fn unsupported(what: impl Into<String>) -> SqlError {
    SqlError::Unsupported(what.into())
}

struct Translator<'a> {
    /// The statement text, for column names as written.
    src: SourceText<'a>,
    /// `?` placeholders seen so far.
    params: usize,
    /// What a subquery in the expression being translated does.
    subqueries: Subqueries,
    /// A subquery was met under [`Subqueries::Noted`].
    subquery_seen: bool,
}

/// What a subquery inside one of the session's own statements does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Subqueries {
    /// 1235: the statement cannot hold one (the session evaluates it without tables).
    Unsupported,
    /// Allowed (a SET value): noted in `subquery_seen`; the query engine computes the value.
    Noted,
    /// 1970 naming the clause (`PREPARE..FROM`, `EXECUTE..USING`), as MariaDB refuses them.
    Refused(&'static str),
}

impl ExprScope for Translator<'_> {
    fn next_param(&mut self) -> usize {
        self.params += 1;
        self.params - 1
    }

    fn subquery(&mut self, _kind: SubqueryKind, _q: &sp::Query) -> Result<Expr, SqlError> {
        match self.subqueries {
            Subqueries::Unsupported => Err(unsupported("subqueries")),
            Subqueries::Noted => {
                self.subquery_seen = true;
                Ok(Expr::Literal(crate::value::Value::Null))
            }
            Subqueries::Refused(clause) => Err(SqlError::coded(
                shoal_errors::ER_SUBQUERIES_NOT_SUPPORTED,
                format!("{clause} does not support subqueries or stored functions"),
            )),
        }
    }
}

impl Translator<'_> {
    fn expr(&mut self, e: sp::Expr) -> Result<Expr, SqlError> {
        expr::expr(self, &e)
    }

    /// An expression where MariaDB refuses subqueries with 1970 (`clause` names where).
    fn value_expr(&mut self, p: &mut Parser, clause: &'static str) -> Result<Expr, SqlError> {
        let e = p.parse_expr().map_err(perr)?;
        self.subqueries = Subqueries::Refused(clause);
        let r = self.expr(e);
        self.subqueries = Subqueries::Unsupported;
        r
    }

    /// `[USING expr, ...]` of EXECUTE. MariaDB's `DEFAULT` and `IGNORE` parameters (a column's
    /// default, or no change, where the placeholder is an INSERT or UPDATE value) are 1235.
    fn using(&mut self, p: &mut Parser) -> Result<Vec<Expr>, SqlError> {
        let mut out = Vec::new();
        if !eat(p, "USING") {
            return Ok(out);
        }
        loop {
            let bare = matches!(
                p.peek_nth_token(1).token,
                Token::EOF | Token::SemiColon | Token::Comma
            );
            if bare && matches!(peek_word(p, 0).as_deref(), Some("DEFAULT" | "IGNORE")) {
                return Err(unsupported("DEFAULT or IGNORE as an EXECUTE parameter"));
            }
            out.push(self.value_expr(p, "EXECUTE..USING")?);
            if !p.consume_token(&Token::Comma) {
                return Ok(out);
            }
        }
    }

    /// PREPARE, EXECUTE \[IMMEDIATE\], DEALLOCATE / DROP PREPARE (the head word read).
    fn prepared_statement(&mut self, head: &str, p: &mut Parser) -> Result<Statement, SqlError> {
        Ok(match head {
            "PREPARE" => {
                let n = name(p)?;
                if !eat(p, "FROM") {
                    return Err(SqlError::Syntax(p.peek_token().token.to_string()));
                }
                Statement::Prepare(n, self.value_expr(p, "PREPARE..FROM")?)
            }
            "EXECUTE" if eat(p, "IMMEDIATE") => {
                let text = self.value_expr(p, "EXECUTE IMMEDIATE")?;
                Statement::ExecuteImmediate(text, self.using(p)?)
            }
            "EXECUTE" => {
                let n = name(p)?;
                Statement::Execute(n, self.using(p)?)
            }
            _ => {
                if !eat(p, "PREPARE") {
                    return Err(SqlError::Syntax(p.peek_token().token.to_string()));
                }
                Statement::Deallocate(name(p)?)
            }
        })
    }

    fn own_statement(&mut self, head: &str, p: &mut Parser) -> Result<Statement, SqlError> {
        let st = match head {
            "SET" => self.set(p)?,
            "SHOW" => self.show(p)?,
            "KILL" => {
                let query_only = if eat(p, "QUERY") {
                    true
                } else {
                    eat(p, "CONNECTION");
                    false
                };
                let e = p.parse_expr().map_err(perr)?;
                Statement::Kill(self.expr(e)?, query_only)
            }
            "USE" => Statement::Use(name(p)?),
            "PREPARE" | "EXECUTE" | "DEALLOCATE" => self.prepared_statement(head, p)?,
            "DROP" if eat(p, "PREPARE") => Statement::Deallocate(name(p)?),
            "FLUSH" => {
                if !eat(p, "NO_WRITE_TO_BINLOG") {
                    eat(p, "LOCAL");
                }
                let mut options = Vec::new();
                let mut words: Vec<String> = Vec::new();
                loop {
                    if at_end(p) || matches!(p.peek_token().token, Token::Comma) {
                        if words.is_empty() {
                            return Err(SqlError::Syntax(p.peek_token().token.to_string()));
                        }
                        options.push(std::mem::take(&mut words).join(" "));
                        if at_end(p) {
                            break;
                        }
                        p.next_token();
                        continue;
                    }
                    match p.next_token().token {
                        Token::Word(w) => words.push(w.value.to_ascii_uppercase()),
                        // `FLUSH TABLES t1, t2` and other forms with names or numbers: kept
                        // as text so that the session can name them in its answer.
                        other => words.push(other.to_string()),
                    }
                }
                Statement::Flush(options)
            }
            "BEGIN" => {
                eat(p, "WORK");
                Statement::Begin(None)
            }
            "SAVEPOINT" => Statement::Savepoint(name(p)?),
            "BACKUP" => {
                p.next_token(); // TO
                match p.next_token().token {
                    Token::SingleQuotedString(dir) | Token::DoubleQuotedString(dir) => {
                        Statement::Backup(dir)
                    }
                    other => return Err(SqlError::Syntax(other.to_string())),
                }
            }
            "RELEASE" => {
                if !eat(p, "SAVEPOINT") {
                    return Err(SqlError::Syntax("RELEASE".into()));
                }
                Statement::ReleaseSavepoint(name(p)?)
            }
            "UNLOCK" => {
                if !eat(p, "TABLES") && !eat(p, "TABLE") {
                    return Err(SqlError::Syntax("UNLOCK".into()));
                }
                Statement::UnlockTables
            }
            "LOCK" => {
                p.next_token(); // TABLE | TABLES
                let mut list = Vec::new();
                loop {
                    let t = self.table_name(p)?;
                    // `t [AS] alias`: under the lock, statements must name the table by
                    // its alias (crates/exec/src/session.rs, LOCK TABLES).
                    let explicit = eat(p, "AS");
                    let alias = if explicit
                        || !matches!(
                            peek_word(p, 0).as_deref(),
                            Some("READ" | "WRITE" | "LOW_PRIORITY")
                        ) {
                        match p.next_token().token {
                            Token::Word(w) => Some(w.value),
                            other => return Err(SqlError::Syntax(other.to_string())),
                        }
                    } else {
                        None
                    };
                    let kind = if eat(p, "READ") {
                        eat(p, "LOCAL");
                        TableLockKind::Read
                    } else {
                        eat(p, "LOW_PRIORITY");
                        if !eat(p, "WRITE") {
                            return Err(SqlError::Syntax(p.peek_token().token.to_string()));
                        }
                        TableLockKind::Write
                    };
                    list.push((t, alias, kind));
                    if !p.consume_token(&Token::Comma) {
                        break;
                    }
                }
                Statement::LockTables(list)
            }
            "ALTER" => {
                p.next_token(); // TABLE
                let t = self.table_name(p)?;
                let enable = eat(p, "ENABLE");
                if !enable {
                    eat(p, "DISABLE");
                }
                eat(p, "KEYS");
                Statement::AlterTableKeys(t, enable)
            }
            "START" => {
                if !eat(p, "TRANSACTION") {
                    return Err(SqlError::Syntax("START".into()));
                }
                // Characteristics: WITH CONSISTENT SNAPSHOT, READ ONLY | READ WRITE (both
                // access modes at once is a syntax error in MySQL and MariaDB).
                let mut read_only = None;
                loop {
                    let mode = if eat_seq(p, &["WITH", "CONSISTENT", "SNAPSHOT"]) {
                        None
                    } else if eat_seq(p, &["READ", "WRITE"]) {
                        Some(false)
                    } else if eat_seq(p, &["READ", "ONLY"]) {
                        Some(true)
                    } else {
                        break;
                    };
                    if let Some(m) = mode {
                        if read_only.is_some() {
                            return Err(SqlError::Syntax(String::new()));
                        }
                        read_only = Some(m);
                    }
                    if !matches!(p.peek_token().token, Token::Comma) {
                        break;
                    }
                    p.next_token();
                }
                Statement::Begin(read_only)
            }
            "COMMIT" | "ROLLBACK" => {
                eat(p, "WORK");
                if head == "ROLLBACK" && eat(p, "TO") {
                    eat(p, "SAVEPOINT");
                    let sp = name(p)?;
                    expect_end(p)?;
                    return Ok(Statement::RollbackToSavepoint(sp));
                }
                if peek_word(p, 0).as_deref() == Some("AND") {
                    return Err(unsupported(format!("{head} AND CHAIN")));
                }
                if head == "COMMIT" {
                    Statement::Commit
                } else {
                    Statement::Rollback
                }
            }
            "DO" => {
                let exprs = p.parse_comma_separated(Parser::parse_expr).map_err(perr)?;
                Statement::Do(
                    exprs
                        .into_iter()
                        .map(|e| self.expr(e))
                        .collect::<Result<_, _>>()?,
                )
            }
            "CREATE" | "DROP" => {
                let what = peek_word(p, 0).unwrap_or_default();
                p.next_token();
                if what == "USER" {
                    let kind = if head == "CREATE" {
                        UserStmt::Create
                    } else {
                        UserStmt::Drop
                    };
                    return self.user_statement(kind, p);
                }
                if head == "CREATE" {
                    let ine = eat_seq(p, &["IF", "NOT", "EXISTS"]);
                    let n = name(p)?;
                    // Options: [DEFAULT] CHARACTER SET [=] x, [DEFAULT] COLLATE [=] y.
                    while !at_end(p) {
                        let w = peek_word(p, 0).unwrap_or_default();
                        match w.as_str() {
                            "DEFAULT" | "CHARACTER" | "SET" | "CHARSET" | "COLLATE"
                            | "ENCRYPTION" => {
                                p.next_token();
                                if matches!(
                                    w.as_str(),
                                    "CHARSET" | "SET" | "COLLATE" | "ENCRYPTION"
                                ) {
                                    let _ = p.consume_token(&Token::Eq);
                                    name(p)?;
                                }
                            }
                            _ => return Err(SqlError::Syntax(p.peek_token().token.to_string())),
                        }
                    }
                    Statement::CreateDatabase(n, ine)
                } else {
                    let ie = eat_seq(p, &["IF", "EXISTS"]);
                    Statement::DropDatabase(name(p)?, ie)
                }
            }
            _ => return Err(SqlError::Syntax(head.to_string())),
        };
        expect_end(p)?;
        Ok(st)
    }

    fn user_statement(&mut self, kind: UserStmt, _p: &mut Parser) -> Result<Statement, SqlError> {
        // `'u'@'h'` does not tokenize reliably with the MySQL dialect (identifiers may start
        // with '@'), so user specifications are scanned from the raw text.
        let toks = user_lex(self.src.sql)?;
        let create = kind == UserStmt::Create;
        let mut i = 2; // CREATE|ALTER|DROP USER
        let word = |i: usize, w: &str| matches!(toks.get(i), Some(UTok::Word(x)) if x.eq_ignore_ascii_case(w));
        let cond = if create && word(i, "IF") && word(i + 1, "NOT") && word(i + 2, "EXISTS") {
            i += 3;
            true
        } else if !create && word(i, "IF") && word(i + 1, "EXISTS") {
            i += 2;
            true
        } else {
            false
        };
        let text = |t: Option<&UTok>| -> Result<String, SqlError> {
            match t {
                Some(UTok::Str(s)) | Some(UTok::Word(s)) => Ok(s.clone()),
                Some(other) => Err(SqlError::Syntax(format!("{other:?}"))),
                None => Err(SqlError::Syntax(String::new())),
            }
        };
        let mut specs = Vec::new();
        let mut dropped = Vec::new();
        loop {
            let user = text(toks.get(i))?;
            i += 1;
            let mut host = "%".to_string();
            if matches!(toks.get(i), Some(UTok::At)) {
                host = text(toks.get(i + 1))?;
                i += 2;
            }
            if kind == UserStmt::Drop {
                dropped.push((user, host));
            } else {
                let mut spec = NewUser {
                    user,
                    host,
                    password: None,
                    plugin: None,
                    stored: None,
                };
                if word(i, "IDENTIFIED") {
                    i += 1;
                    // `IDENTIFIED BY PASSWORD '*hash'` (MariaDB, MySQL 5.7): the stored
                    // mysql_native_password hash, as SHOW CREATE USER prints it.
                    if word(i, "BY") && word(i + 1, "PASSWORD") {
                        match toks.get(i + 2) {
                            Some(UTok::Str(h)) => {
                                spec.plugin = Some("mysql_native_password".into());
                                spec.stored = Some(h.clone());
                            }
                            _ => return Err(SqlError::Syntax("IDENTIFIED BY PASSWORD".into())),
                        }
                        i += 3;
                    } else if word(i, "WITH") || word(i, "VIA") {
                        // `IDENTIFIED {WITH | VIA} plugin [{AS | USING} 'stored' | BY 'pw']`
                        // (VIA and USING are MariaDB's spellings).
                        let plugin = text(toks.get(i + 1))?;
                        i += 2;
                        if !AUTH_PLUGINS.iter().any(|p| p.eq_ignore_ascii_case(&plugin)) {
                            return Err(SqlError::coded(
                                shoal_errors::ER_PLUGIN_IS_NOT_LOADED,
                                format!("Plugin '{plugin}' is not loaded"),
                            ));
                        }
                        spec.plugin = Some(plugin.to_ascii_lowercase());
                        if word(i, "AS") || word(i, "USING") {
                            match toks.get(i + 1) {
                                Some(UTok::Str(s)) => spec.stored = Some(s.clone()),
                                _ => return Err(SqlError::Syntax("IDENTIFIED WITH ... AS".into())),
                            }
                            i += 2;
                        }
                    }
                    if word(i, "BY") {
                        match toks.get(i + 1) {
                            Some(UTok::Str(s)) => spec.password = Some(s.clone()),
                            _ => return Err(SqlError::Syntax("IDENTIFIED BY".into())),
                        }
                        i += 2;
                    }
                }
                specs.push(spec);
            }
            match toks.get(i) {
                Some(UTok::Comma) => i += 1,
                None => break,
                Some(UTok::Word(w))
                    if kind != UserStmt::Drop
                        && (w.eq_ignore_ascii_case("WITH")
                            || w.eq_ignore_ascii_case("REQUIRE")
                            || w.eq_ignore_ascii_case("ACCOUNT")) =>
                {
                    break
                }
                Some(other) => return Err(SqlError::Syntax(format!("{other:?}"))),
            }
        }
        let mut options = AccountOptions::default();
        // `REQUIRE NONE | SSL`: X509, CIPHER, ISSUER and SUBJECT need client certificates,
        // which are not implemented: refused (1235) rather than accepted and ignored.
        if word(i, "REQUIRE") {
            i += 1;
            if word(i, "NONE") {
                options.require_ssl = Some(false);
                i += 1;
            } else {
                let first = i;
                while let Some(UTok::Word(w)) = toks.get(i) {
                    let w = w.to_ascii_uppercase();
                    match w.as_str() {
                        "SSL" => {
                            options.require_ssl = Some(true);
                            i += 1;
                        }
                        "AND" if i > first => i += 1,
                        "X509" | "CIPHER" | "ISSUER" | "SUBJECT" => {
                            return Err(unsupported(format!("REQUIRE {w}")))
                        }
                        _ => break,
                    }
                }
                if options.require_ssl.is_none() {
                    return Err(SqlError::Syntax(format!("{:?}", toks.get(i))));
                }
            }
        }
        // `WITH resource_option ...`: MAX_USER_CONNECTIONS is enforced; the per-hour limits are
        // not implemented and refused (1235) rather than accepted and ignored.
        if word(i, "WITH") {
            i += 1;
            let first = i;
            while let Some(UTok::Word(w)) = toks.get(i) {
                let option = w.to_ascii_uppercase();
                let n = match toks.get(i + 1) {
                    Some(UTok::Word(n)) => {
                        n.parse::<u64>().map_err(|_| SqlError::Syntax(n.clone()))?
                    }
                    other => return Err(SqlError::Syntax(format!("{other:?}"))),
                };
                match option.as_str() {
                    "MAX_USER_CONNECTIONS" => {
                        options.max_user_connections = Some(n.min(u32::MAX as u64))
                    }
                    "MAX_QUERIES_PER_HOUR"
                    | "MAX_UPDATES_PER_HOUR"
                    | "MAX_CONNECTIONS_PER_HOUR" => {
                        return Err(unsupported(format!(
                            "{} USER ... WITH {option}",
                            kind.verb()
                        )))
                    }
                    _ => return Err(SqlError::Syntax(w.clone())),
                }
                i += 2;
            }
            if i == first {
                return Err(SqlError::Syntax(format!("{:?}", toks.get(i))));
            }
        }
        // `ACCOUNT LOCK | UNLOCK` (CREATE USER only; ALTER USER is parsed elsewhere).
        if kind == UserStmt::Create && word(i, "ACCOUNT") {
            if word(i + 1, "LOCK") {
                options.locked = Some(true);
            } else if word(i + 1, "UNLOCK") {
                options.locked = Some(false);
            } else {
                return Err(SqlError::Syntax(format!("{:?}", toks.get(i + 1))));
            }
            i += 2;
        }
        if i != toks.len() {
            return Err(SqlError::Syntax(format!("{:?}", toks.get(i))));
        }
        Ok(match kind {
            UserStmt::Create => Statement::CreateUser(specs, cond, options),
            UserStmt::Drop => Statement::DropUser(dropped, cond),
        })
    }

    fn scope_word(p: &mut Parser) -> Option<VarScope> {
        if eat(p, "GLOBAL") || eat(p, "PERSIST") {
            Some(VarScope::Global)
        } else if eat(p, "SESSION") || eat(p, "LOCAL") {
            Some(VarScope::Session)
        } else {
            None
        }
    }

    fn set(&mut self, p: &mut Parser) -> Result<Statement, SqlError> {
        if eat(p, "NAMES") {
            let cs = if eat(p, "DEFAULT") {
                None
            } else {
                Some(name(p)?)
            };
            let coll = if eat(p, "COLLATE") {
                Some(name(p)?)
            } else {
                None
            };
            expect_end(p)?;
            return Ok(Statement::SetNames(cs, coll));
        }
        if eat_seq(p, &["CHARACTER", "SET"]) || eat(p, "CHARSET") {
            let cs = if eat(p, "DEFAULT") {
                None
            } else {
                Some(name(p)?)
            };
            expect_end(p)?;
            return Ok(Statement::SetCharset(cs));
        }
        // SET [GLOBAL|SESSION] TRANSACTION ...
        let scope_tx = match (peek_word(p, 0).as_deref(), peek_word(p, 1).as_deref()) {
            (Some("TRANSACTION"), _) => Some(None),
            (Some("GLOBAL" | "SESSION" | "LOCAL"), Some("TRANSACTION")) => {
                let s = Self::scope_word(p);
                Some(s)
            }
            _ => None,
        };
        if let Some(scope) = scope_tx {
            eat(p, "TRANSACTION");
            let mut level = None;
            let mut ro = None;
            loop {
                if eat_seq(p, &["ISOLATION", "LEVEL"]) {
                    level = Some(
                        if eat_seq(p, &["READ", "UNCOMMITTED"]) {
                            "READ-UNCOMMITTED"
                        } else if eat_seq(p, &["READ", "COMMITTED"]) {
                            "READ-COMMITTED"
                        } else if eat_seq(p, &["REPEATABLE", "READ"]) {
                            "REPEATABLE-READ"
                        } else if eat(p, "SERIALIZABLE") {
                            "SERIALIZABLE"
                        } else {
                            return Err(SqlError::Syntax(p.peek_token().token.to_string()));
                        }
                        .to_string(),
                    );
                } else if eat_seq(p, &["READ", "ONLY"]) {
                    ro = Some(true);
                } else if eat_seq(p, &["READ", "WRITE"]) {
                    ro = Some(false);
                } else {
                    return Err(SqlError::Syntax(p.peek_token().token.to_string()));
                }
                if !p.consume_token(&Token::Comma) {
                    break;
                }
            }
            expect_end(p)?;
            return Ok(Statement::SetTransaction(scope, level, ro));
        }
        let mut out = Vec::new();
        loop {
            let scope = Self::scope_word(p);
            let t = p.next_token();
            let target = match t.token {
                Token::Word(w) if w.quote_style.is_none() && w.value.starts_with("@@") => {
                    let first = w.value[2..].to_ascii_lowercase();
                    if p.consume_token(&Token::Period) {
                        let var = name(p)?;
                        let sc = match first.as_str() {
                            "global" | "persist" => VarScope::Global,
                            "session" | "local" => VarScope::Session,
                            _ => return Err(SqlError::Syntax(format!("@@{first}.{var}"))),
                        };
                        SetTarget::System(sc, var.to_ascii_lowercase())
                    } else {
                        // `SET @@x` without a scope: the session value, except for the
                        // transaction characteristics, where it means the next transaction
                        // only (MySQL and MariaDB); the session tells them apart.
                        SetTarget::System(scope.unwrap_or(VarScope::Default), first)
                    }
                }
                Token::Word(w) if w.quote_style.is_none() && w.value.starts_with('@') => {
                    if scope.is_some() {
                        return Err(SqlError::Syntax(w.value));
                    }
                    let mut n = w.value[1..].to_string();
                    if n.is_empty() {
                        n = name(p)?;
                    }
                    SetTarget::User(n)
                }
                Token::Word(w) => {
                    let mut n = w.value.to_ascii_lowercase();
                    // `SET GLOBAL innodb.x` style dotted names are not variables we know.
                    if p.consume_token(&Token::Period) {
                        n = format!("{n}.{}", name(p)?);
                    }
                    SetTarget::System(scope.unwrap_or(VarScope::Session), n)
                }
                other => return Err(SqlError::Syntax(other.to_string())),
            };
            if !(p.consume_token(&Token::Eq) || p.consume_token(&Token::Assignment)) {
                return Err(SqlError::Syntax(p.peek_token().token.to_string()));
            }
            let value = self.set_value(p)?;
            out.push((target, value));
            if !p.consume_token(&Token::Comma) {
                break;
            }
        }
        expect_end(p)?;
        Ok(Statement::Set(out))
    }

    fn set_value(&mut self, p: &mut Parser) -> Result<SetExpr, SqlError> {
        let next_is_end = |p: &Parser| {
            matches!(
                p.peek_nth_token(1).token,
                Token::EOF | Token::SemiColon | Token::Comma
            )
        };
        if let Token::Word(w) = p.peek_token().token {
            let up = w.value.to_ascii_uppercase();
            if w.quote_style.is_none() && next_is_end(p) && !w.value.starts_with('@') {
                match up.as_str() {
                    "DEFAULT" => {
                        p.next_token();
                        return Ok(SetExpr::Default);
                    }
                    "NULL" | "TRUE" | "FALSE" => {}
                    _ => {
                        p.next_token();
                        return Ok(SetExpr::Word(w.value));
                    }
                }
            }
        }
        // Bare words with dashes (`pool-of-threads`) are not expressions MySQL accepts either
        // unless quoted; parse an expression.
        let start = p.peek_token().span.start;
        let e = p.parse_expr().map_err(perr)?;
        let end = p.peek_token().span.start;
        let params = self.params;
        self.subqueries = Subqueries::Noted;
        self.subquery_seen = false;
        let r = self.expr(e);
        self.subqueries = Subqueries::Unsupported;
        let e = r?;
        if !self.subquery_seen {
            return Ok(SetExpr::Expr(e));
        }
        // A subquery: the query engine computes the value from the expression as written
        // (without placeholders, which the subquery's text would hide from the count).
        let text = self.src.between(start, end);
        let placeholder = |t: &TokenWithSpan| matches!(t.token, Token::Placeholder(_));
        let tokens = crate::depth::tokenize(text).map_err(perr)?;
        if self.params != params || tokens.iter().any(placeholder) {
            return Err(unsupported("placeholders in a SET value with a subquery"));
        }
        Ok(SetExpr::Query(format!("SELECT {text}")))
    }

    fn filter(&mut self, p: &mut Parser) -> Result<ShowFilter, SqlError> {
        if eat(p, "LIKE") {
            let s = p.parse_literal_string().map_err(perr)?;
            Ok(ShowFilter::Like(s))
        } else if eat(p, "WHERE") {
            let e = p.parse_expr().map_err(perr)?;
            Ok(ShowFilter::Where(self.expr(e)?))
        } else {
            Ok(ShowFilter::None)
        }
    }

    fn table_name(&mut self, p: &mut Parser) -> Result<TableName, SqlError> {
        let first = name(p)?;
        if p.consume_token(&Token::Period) {
            Ok(TableName {
                db: Some(first),
                name: name(p)?,
            })
        } else {
            Ok(TableName {
                db: None,
                name: first,
            })
        }
    }

    fn show(&mut self, p: &mut Parser) -> Result<Statement, SqlError> {
        let full = eat(p, "FULL");
        let scope = Self::scope_word(p).unwrap_or(VarScope::Default);
        let what = peek_word(p, 0).unwrap_or_default();
        p.next_token();
        let kind = match what.as_str() {
            "DATABASES" | "SCHEMAS" => ShowKind::Databases,
            "TABLES" => {
                let db = if eat(p, "FROM") || eat(p, "IN") {
                    Some(name(p)?)
                } else {
                    None
                };
                ShowKind::Tables { db, full }
            }
            "TABLE" if eat(p, "STATUS") => {
                let db = if eat(p, "FROM") || eat(p, "IN") {
                    Some(name(p)?)
                } else {
                    None
                };
                ShowKind::TableStatus { db }
            }
            "VARIABLES" => ShowKind::Variables(scope),
            "STATUS" => ShowKind::Status(scope),
            "PROCESSLIST" => ShowKind::Processlist { full },
            "WARNINGS" | "ERRORS" => {
                if eat(p, "LIMIT") {
                    p.parse_expr().map_err(perr)?;
                    if p.consume_token(&Token::Comma) {
                        p.parse_expr().map_err(perr)?;
                    }
                }
                if what == "WARNINGS" {
                    ShowKind::Warnings
                } else {
                    ShowKind::Errors
                }
            }
            "COLLATION" => ShowKind::Collation,
            "CHARACTER" if eat(p, "SET") => ShowKind::Charset,
            "CHARSET" => ShowKind::Charset,
            "ENGINES" => ShowKind::Engines,
            "STORAGE" if eat(p, "ENGINES") => ShowKind::Engines,
            "COLUMNS" | "FIELDS" | "INDEX" | "INDEXES" | "KEYS" => {
                if !(eat(p, "FROM") || eat(p, "IN")) {
                    return Err(SqlError::Syntax(p.peek_token().token.to_string()));
                }
                let mut t = self.table_name(p)?;
                if eat(p, "FROM") || eat(p, "IN") {
                    t.db = Some(name(p)?);
                }
                ShowKind::TableInfo(t)
            }
            "CREATE" if eat(p, "TABLE") => ShowKind::TableInfo(self.table_name(p)?),
            "CREATE" if eat(p, "DATABASE") || eat(p, "SCHEMA") => {
                let ine = eat_seq(p, &["IF", "NOT", "EXISTS"]);
                ShowKind::CreateDatabase(name(p)?, ine)
            }
            "" => return Err(SqlError::Syntax(p.peek_token().token.to_string())),
            other => return Err(unsupported(format!("SHOW {other}"))),
        };
        let f = self.filter(p)?;
        expect_end(p)?;
        Ok(Statement::Show(kind, f))
    }

    fn object_name(n: &sp::ObjectName) -> TableName {
        let parts: Vec<String> =
            n.0.iter()
                .map(|p| match p {
                    sp::ObjectNamePart::Identifier(i) => i.value.clone(),
                    other => other.to_string(),
                })
                .collect();
        match parts.len() {
            0 => TableName {
                db: None,
                name: String::new(),
            },
            1 => TableName {
                db: None,
                name: parts[0].clone(),
            },
            n => TableName {
                db: Some(parts[n - 2].clone()),
                name: parts[n - 1].clone(),
            },
        }
    }

    fn table_factor(tf: &sp::TableFactor) -> Result<TableName, SqlError> {
        match tf {
            sp::TableFactor::Table { name, .. } => Ok(Self::object_name(name)),
            _ => Err(unsupported("derived tables and table functions")),
        }
    }

    fn tables_of(twj: &[sp::TableWithJoins]) -> Result<Vec<TableName>, SqlError> {
        let mut v = Vec::new();
        for t in twj {
            v.push(Self::table_factor(&t.relation)?);
            for j in &t.joins {
                v.push(Self::table_factor(&j.relation)?);
            }
        }
        Ok(v)
    }

    fn statement(&mut self, s: &sp::Statement) -> Result<Statement, SqlError> {
        use sp::Statement as S;
        Ok(match s {
            // Its `?`s are counted by the caller; the table engine translates it.
            S::Query(q) => Statement::Query {
                lone_sleep: is_lone_sleep(q),
                tables: reads_tables(q),
            },
            S::Insert(i) => {
                let kind = if i.replace_into { "replace" } else { "insert" };
                let t = match &i.table {
                    sp::TableObject::TableName(n) => Self::object_name(n),
                    _ => return Err(unsupported("INSERT INTO TABLE FUNCTION")),
                };
                Statement::TableStatement(kind, vec![t])
            }
            S::Update(u) => Statement::TableStatement(
                "update",
                Self::tables_of(std::slice::from_ref(&u.table))?,
            ),
            S::Delete(d) => {
                let from = match &d.from {
                    sp::FromTable::WithFromKeyword(v) | sp::FromTable::WithoutKeyword(v) => v,
                };
                Statement::TableStatement("delete", Self::tables_of(from)?)
            }
            S::CreateTable(c) => {
                Statement::TableStatement("create_table", vec![Self::object_name(&c.name)])
            }
            S::CreateIndex(c) => {
                Statement::TableStatement("create_index", vec![Self::object_name(&c.table_name)])
            }
            S::Drop {
                object_type: sp::ObjectType::Table,
                if_exists,
                names,
                ..
            } => Statement::TableStatement(
                if *if_exists {
                    "drop_table_if_exists"
                } else {
                    "drop_table"
                },
                names.iter().map(Self::object_name).collect(),
            ),
            S::Truncate(_) => Statement::TableStatement("truncate", vec![]),
            S::AlterTable(a) => {
                Statement::TableStatement("alter_table", vec![Self::object_name(&a.name)])
            }
            S::Drop {
                object_type: sp::ObjectType::Index,
                ..
            } => Statement::TableStatement("drop_index", vec![]),
            // Everything else sqlparser reads (RENAME TABLE, CREATE VIEW, ...) is the table
            // engine's to run or to refuse with its own error.
            _ => Statement::TableStatement("select", vec![]),
        })
    }
}

/// Which account statement [`Translator::user_statement`] reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum UserStmt {
    Create,
    Drop,
}

impl UserStmt {
    fn verb(self) -> &'static str {
        match self {
            UserStmt::Create => "CREATE",
            UserStmt::Drop => "DROP",
        }
    }
}

/// Authentication plugins `IDENTIFIED WITH` accepts.
pub const AUTH_PLUGINS: &[&str] = &["mysql_native_password", "caching_sha2_password"];

/// Tokens of a user specification list.
#[derive(Debug, Clone, PartialEq)]
enum UTok {
    Str(String),
    Word(String),
    At,
    Comma,
}

/// The quoted string, name or identifier starting at `chars[i]` (its quote character: `'`,
/// `"` or a backquote): its text with `\\` escapes (not in backquotes) and doubled quotes undone,
/// and the index after the closing quote. Shared by the user-list and account lexers.
pub(crate) fn quoted(chars: &[char], mut i: usize) -> Result<(String, usize), SqlError> {
    let c = chars[i];
    let mut s = String::new();
    i += 1;
    loop {
        match chars.get(i) {
            None => return Err(SqlError::Syntax(s)),
            Some('\\') if c != '`' => {
                if let Some(n) = chars.get(i + 1) {
                    s.push(*n);
                }
                i += 2;
            }
            Some(x) if *x == c => {
                if chars.get(i + 1) == Some(&c) {
                    s.push(c);
                    i += 2;
                } else {
                    return Ok((s, i + 1));
                }
            }
            Some(x) => {
                s.push(*x);
                i += 1;
            }
        }
    }
}

fn user_lex(sql: &str) -> Result<Vec<UTok>, SqlError> {
    let chars: Vec<char> = sql.trim().trim_end_matches(';').chars().collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        if c.is_whitespace() {
            i += 1;
        } else if c == '@' {
            out.push(UTok::At);
            i += 1;
        } else if c == ',' {
            out.push(UTok::Comma);
            i += 1;
        } else if c == '\'' || c == '"' || c == '`' {
            let (s, next) = quoted(&chars, i)?;
            i = next;
            if c == '`' {
                out.push(UTok::Word(s));
            } else {
                out.push(UTok::Str(s));
            }
        } else {
            let mut s = String::new();
            while i < chars.len()
                && !chars[i].is_whitespace()
                && !matches!(chars[i], '@' | ',' | '\'' | '"' | '`')
            {
                s.push(chars[i]);
                i += 1;
            }
            out.push(UTok::Word(s));
        }
    }
    Ok(out)
}
