//! MySQL syntax sqlparser (0.64) does not parse, rewritten at the token level into forms it does.
//!
//! Both front ends tokenize once ([`crate::depth::tokenize`]) and hand the tokens to sqlparser;
//! this pass runs in between, on tokens, so strings, quoted identifiers and comments are never
//! touched and spans still point into the client's text. Each rewrite has the same meaning in
//! MySQL as the form it becomes:
//!
//! * `... LOCK IN SHARE MODE` -> `... FOR SHARE` (MySQL 8 names the old clause so);
//! * `a MOD b` -> `a % b` (`MOD` is a reserved word; `MOD(a, b)` the function stays);
//! * `[EXPLAIN] UPDATE t1, t2 SET ...` -> `UPDATE t1 CROSS JOIN t2 SET ...` (in MySQL the comma
//!   is an inner join without condition, which is what `CROSS JOIN` is; only commas at bracket
//!   depth 0 between `UPDATE` and `SET`, which can only separate tables).
//! * `UPDATE [LOW_PRIORITY] IGNORE t ...` -> `UPDATE [LOW_PRIORITY] OR IGNORE t ...`: sqlparser
//!   reads SQLite's `OR IGNORE` conflict clause there, which the translators take for MySQL's
//!   IGNORE (duplicate keys and values that do not fit become warnings).
//! * `INTERVAL x DAY_HOUR` (MySQL's compound units) -> `INTERVAL x DAY TO HOUR`, the standard's
//!   form of the same field range, which sqlparser reads; `SECOND_MICROSECOND` becomes
//!   `MICROSECOND TO SECOND` (sqlparser gives `SECOND` a precision, never `TO`). The translator
//!   maps the pair back to the compound unit. Only the first compound word after `INTERVAL` at
//!   its bracket depth, with something between, and not followed by `(` or `.`.
//! * `EXTRACT(DAY_HOUR FROM x)` -> `` `EXTRACT`('DAY_HOUR', x) ``, the call the translator
//!   makes of any EXTRACT, for the compound units sqlparser does not know as fields.
//! * `!x` (MySQL's logical NOT of highest precedence) -> `(NOT x)`, with `x` the operand `!`
//!   binds: a literal, a name (`t.c`, `@v`), a call, a parenthesized expression, or another
//!   prefix operator and its operand. `!2 + 1` is `(NOT 2) + 1`, as in MySQL, not
//!   `NOT (2 + 1)`. (`!=` is its own token.) Anything else after `!` is left for sqlparser's
//!   1064.
//! * `SELECT ... FROM ... [WHERE ...] [ORDER BY ...] [LIMIT ...] INTO @a, @b [FOR UPDATE]` ->
//!   `SELECT ... INTO @a, @b FROM ...` (MariaDB accepts the INTO clause after the table
//!   expression too; sqlparser only before FROM). Only a top-level SELECT whose INTO follows its
//!   top-level FROM; the clause runs to the end, a `;`, or a top-level `FOR` / `LOCK`.
//! * `q1 UNION q2 [ORDER BY ...] [LIMIT ...] INTO @a` (any set operation, members bracketed or
//!   not) -> `SELECT * INTO @a FROM (q1 UNION q2 ...) AS shoal_union_into`, a form sqlparser
//!   reads; the translator takes that exact shape back apart into the set operation with the
//!   INTO targets, so no derived table is ever built. INTO inside a member
//!   (`SELECT 1 INTO @x UNION SELECT 2`) stays where it is, for MariaDB's 1064.
//!
//! [`refuse_unsupported`] refuses what parses but shoal does not run: `INTO OUTFILE` /
//! `INTO DUMPFILE` are 1235, never a result set sent to the client instead of a file.

use sqlparser::tokenizer::{Token, TokenWithSpan, Whitespace, Word};

fn is_word(t: &Token, w: &str) -> bool {
    matches!(t, Token::Word(Word { value, quote_style: None, .. }) if value.eq_ignore_ascii_case(w))
}

fn significant(t: &Token) -> bool {
    !matches!(t, Token::Whitespace(_))
}

/// Applies every rewrite to `tokens`.
pub fn rewrite(tokens: &mut Vec<TokenWithSpan>) {
    trailing_into(tokens);
    // Cheap exit: statements with none of the trigger words (almost all) are left as they are.
    let triggers = tokens.iter().any(|t| {
        is_word(&t.token, "MOD")
            || is_word(&t.token, "SHARE")
            || is_word(&t.token, "UPDATE")
            || is_word(&t.token, "INTERVAL")
            || is_word(&t.token, "EXTRACT")
            || matches!(
                t.token,
                Token::ExclamationMark | Token::DoubleExclamationMark
            )
    });
    if !triggers {
        return;
    }
    bang_not(tokens);
    lock_in_share_mode(tokens);
    mod_operator(tokens);
    update_commas(tokens);
    update_ignore(tokens);
    compound_intervals(tokens);
    compound_extract(tokens);
}

/// `!x` -> `(NOT x)` (see the module doc), innermost first so `!!x` nests.
fn bang_not(tokens: &mut Vec<TokenWithSpan>) {
    // `!!` is one token: two `!`s.
    while let Some(i) = tokens
        .iter()
        .position(|t| t.token == Token::DoubleExclamationMark)
    {
        tokens[i].token = Token::ExclamationMark;
        let again = tokens[i].clone();
        tokens.insert(i + 1, again);
    }
    loop {
        let pos = positions(tokens);
        // The last `!` has no `!` inside its operand: rewrite it, then look again.
        let Some(k) = pos
            .iter()
            .rposition(|&i| tokens[i].token == Token::ExclamationMark)
        else {
            return;
        };
        let Some(end) = operand_end(tokens, &pos, k + 1) else {
            return;
        };
        let bang = pos[k];
        let after = pos[end];
        let close = TokenWithSpan {
            token: Token::RParen,
            span: sqlparser::tokenizer::Span::new(tokens[after].span.end, tokens[after].span.end),
        };
        tokens.insert(after + 1, close);
        let span = tokens[bang].span;
        tokens[bang].token = Token::LParen;
        tokens.insert(
            bang + 1,
            TokenWithSpan {
                token: Token::Word(Word {
                    value: "NOT".into(),
                    quote_style: None,
                    keyword: sqlparser::keywords::Keyword::NOT,
                }),
                span,
            },
        );
        tokens.insert(
            bang + 2,
            TokenWithSpan {
                token: Token::Whitespace(Whitespace::Space),
                span,
            },
        );
    }
}

/// The index into `pos` of the last token of the operand starting at `pos[k]`, if it is one a
/// prefix operator binds (see [`bang_not`]).
fn operand_end(tokens: &[TokenWithSpan], pos: &[usize], k: usize) -> Option<usize> {
    let t = &tokens[*pos.get(k)?].token;
    let closing = |open: usize| -> Option<usize> {
        let mut depth = 0i32;
        for (m, &i) in pos.iter().enumerate().skip(open) {
            match tokens[i].token {
                Token::LParen => depth += 1,
                Token::RParen => {
                    depth -= 1;
                    if depth == 0 {
                        return Some(m);
                    }
                }
                _ => {}
            }
        }
        None
    };
    let next = |m: usize| pos.get(m).map(|&i| &tokens[i].token);
    match t {
        Token::Minus | Token::Plus | Token::Tilde => operand_end(tokens, pos, k + 1),
        Token::LParen => closing(k),
        Token::Number(..)
        | Token::SingleQuotedString(_)
        | Token::DoubleQuotedString(_)
        | Token::HexStringLiteral(_)
        | Token::Placeholder(_) => Some(k),
        Token::Word(w) => {
            if w.quote_style.is_none()
                && matches!(
                    w.value.to_ascii_uppercase().as_str(),
                    "NOT" | "INTERVAL" | "BINARY" | "CASE" | "EXISTS" | "SELECT"
                )
            {
                return None;
            }
            let mut m = k;
            loop {
                match next(m + 1) {
                    Some(Token::LParen) => return closing(m + 1),
                    Some(Token::Period) if matches!(next(m + 2), Some(Token::Word(_))) => m += 2,
                    _ => return Some(m),
                }
            }
        }
        _ => None,
    }
}

/// `EXTRACT(DAY_HOUR FROM x)` -> `` `EXTRACT`('DAY_HOUR', x) ``: a call of the function the
/// translator makes of every EXTRACT (unit name, value), which sqlparser reads as a plain call
/// (it knows no compound date/time field).
fn compound_extract(tokens: &mut [TokenWithSpan]) {
    let pos = positions(tokens);
    for w in pos.windows(4) {
        let [e, open, unit, from] = [w[0], w[1], w[2], w[3]];
        if !is_word(&tokens[e].token, "EXTRACT")
            || tokens[open].token != Token::LParen
            || !is_word(&tokens[from].token, "FROM")
        {
            continue;
        }
        let Some((name, _, _)) = COMPOUND_UNITS
            .iter()
            .find(|(w, _, _)| is_word(&tokens[unit].token, w))
        else {
            continue;
        };
        tokens[e].token = Token::Word(Word {
            value: "EXTRACT".into(),
            quote_style: Some('`'),
            keyword: sqlparser::keywords::Keyword::NoKeyword,
        });
        tokens[unit].token = Token::SingleQuotedString((*name).into());
        tokens[from].token = Token::Comma;
    }
}

/// MySQL's compound interval units and the `leading TO last` pair each becomes.
const COMPOUND_UNITS: [(&str, &str, &str); 11] = [
    ("YEAR_MONTH", "YEAR", "MONTH"),
    ("DAY_HOUR", "DAY", "HOUR"),
    ("DAY_MINUTE", "DAY", "MINUTE"),
    ("DAY_SECOND", "DAY", "SECOND"),
    ("DAY_MICROSECOND", "DAY", "MICROSECOND"),
    ("HOUR_MINUTE", "HOUR", "MINUTE"),
    ("HOUR_SECOND", "HOUR", "SECOND"),
    ("HOUR_MICROSECOND", "HOUR", "MICROSECOND"),
    ("MINUTE_SECOND", "MINUTE", "SECOND"),
    ("MINUTE_MICROSECOND", "MINUTE", "MICROSECOND"),
    ("SECOND_MICROSECOND", "MICROSECOND", "SECOND"),
];

fn compound_unit(t: &Token) -> Option<(&'static str, &'static str)> {
    COMPOUND_UNITS
        .iter()
        .find(|(w, _, _)| is_word(t, w))
        .map(|(_, a, b)| (*a, *b))
}

fn compound_intervals(tokens: &mut Vec<TokenWithSpan>) {
    let pos = positions(tokens);
    let mut found = Vec::new();
    for (k, &i) in pos.iter().enumerate() {
        if !is_word(&tokens[i].token, "INTERVAL") {
            continue;
        }
        let mut depth = 0i32;
        for (m, &j) in pos.iter().enumerate().skip(k + 2) {
            match &tokens[pos[m - 1]].token {
                Token::LParen => depth += 1,
                Token::RParen => depth -= 1,
                _ => {}
            }
            if depth < 0 || (depth == 0 && matches!(tokens[pos[m - 1]].token, Token::Comma)) {
                break;
            }
            let Some((a, b)) = compound_unit(&tokens[j].token) else {
                continue;
            };
            let next = pos.get(m + 1).map(|&n| &tokens[n].token);
            let prev = &tokens[pos[m - 1]].token;
            if depth == 0
                && !matches!(next, Some(Token::LParen) | Some(Token::Period))
                && *prev != Token::Period
            {
                found.push((j, a, b));
                break;
            }
        }
    }
    found.sort_by_key(|f| f.0);
    found.dedup_by_key(|f| f.0);
    for (j, a, b) in found.into_iter().rev() {
        let span = tokens[j].span;
        let words = [
            Token::make_keyword(a),
            Token::Whitespace(Whitespace::Space),
            Token::make_keyword("TO"),
            Token::Whitespace(Whitespace::Space),
            Token::make_keyword(b),
        ];
        tokens.splice(
            j..=j,
            words.into_iter().map(|t| TokenWithSpan::new(t, span)),
        );
    }
}

/// Positions of the significant (non-whitespace) tokens.
fn positions(tokens: &[TokenWithSpan]) -> Vec<usize> {
    (0..tokens.len())
        .filter(|&i| significant(&tokens[i].token))
        .collect()
}

fn lock_in_share_mode(tokens: &mut [TokenWithSpan]) {
    let pos = positions(tokens);
    let mut drop = Vec::new();
    for w in pos.windows(4) {
        let [a, b, c, d] = [w[0], w[1], w[2], w[3]];
        if is_word(&tokens[a].token, "LOCK")
            && is_word(&tokens[b].token, "IN")
            && is_word(&tokens[c].token, "SHARE")
            && is_word(&tokens[d].token, "MODE")
        {
            tokens[a].token = Token::make_keyword("FOR");
            tokens[b].token = Token::make_keyword("SHARE");
            drop.extend([c, d]);
        }
    }
    for i in drop.into_iter().rev() {
        tokens[i].token = Token::Whitespace(Whitespace::Space);
    }
}

fn mod_operator(tokens: &mut [TokenWithSpan]) {
    let pos = positions(tokens);
    for (k, &i) in pos.iter().enumerate() {
        if !is_word(&tokens[i].token, "MOD") {
            continue;
        }
        let next_is_paren = pos
            .get(k + 1)
            .is_some_and(|&j| tokens[j].token == Token::LParen);
        // An operator needs a left operand: not first, not after another operator or `(`/`,`.
        let after_operand = k > 0
            && matches!(
                tokens[pos[k - 1]].token,
                Token::Word(_)
                    | Token::Number(..)
                    | Token::SingleQuotedString(_)
                    | Token::DoubleQuotedString(_)
                    | Token::RParen
                    | Token::Placeholder(_)
            );
        if !next_is_paren && after_operand {
            tokens[i].token = Token::Mod;
        }
    }
}

fn update_commas(tokens: &mut Vec<TokenWithSpan>) {
    let pos = positions(tokens);
    // `EXPLAIN UPDATE t1, t2 ...` too.
    let explained = pos.first().is_some_and(|&i| {
        ["EXPLAIN", "DESCRIBE", "DESC"]
            .iter()
            .any(|w| is_word(&tokens[i].token, w))
    });
    let at = usize::from(explained);
    let Some(&first) = pos.get(at) else { return };
    if !is_word(&tokens[first].token, "UPDATE") {
        return;
    }
    let mut depth = 0i32;
    let mut commas = Vec::new();
    for &i in &pos[at + 1..] {
        match &tokens[i].token {
            Token::LParen => depth += 1,
            Token::RParen => depth -= 1,
            Token::Comma if depth == 0 => commas.push(i),
            t if depth == 0 && is_word(t, "SET") => break,
            _ => {}
        }
    }
    for i in commas.into_iter().rev() {
        let span = tokens[i].span;
        let words = [
            Token::Whitespace(Whitespace::Space),
            Token::make_keyword("CROSS"),
            Token::Whitespace(Whitespace::Space),
            Token::make_keyword("JOIN"),
            Token::Whitespace(Whitespace::Space),
        ];
        tokens.splice(
            i..=i,
            words.into_iter().map(|t| TokenWithSpan::new(t, span)),
        );
    }
}

/// The alias of the derived table a set operation's trailing INTO is moved out of (module
/// doc); the translator reads `SELECT * INTO .. FROM (q) AS` this as `q INTO ..`.
pub const UNION_INTO_ALIAS: &str = "shoal_union_into";

/// `SELECT ... FROM ... INTO targets` -> `SELECT ... INTO targets FROM ...`, and
/// `q1 UNION q2 ... INTO targets` -> `SELECT * INTO targets FROM (q1 UNION q2 ...) AS
/// shoal_union_into` (module doc).
fn trailing_into(tokens: &mut Vec<TokenWithSpan>) {
    let Some(first) = tokens.iter().position(|t| significant(&t.token)) else {
        return;
    };
    let starts_select = is_word(&tokens[first].token, "SELECT");
    if !(starts_select || tokens[first].token == Token::LParen)
        || !tokens.iter().any(|t| is_word(&t.token, "INTO"))
    {
        return;
    }
    let (mut depth, mut from, mut into, mut end) = (0i32, None, None, tokens.len());
    let mut set_op = false;
    for (i, t) in tokens.iter().enumerate().skip(first) {
        let t = &t.token;
        match t {
            Token::LParen => depth += 1,
            Token::RParen => depth -= 1,
            _ if depth != 0 => {}
            Token::SemiColon => {
                end = i;
                break;
            }
            _ if ["UNION", "EXCEPT", "INTERSECT"]
                .iter()
                .any(|w| is_word(t, w)) =>
            {
                if into.is_some() {
                    return; // INTO in a member: MariaDB's 1064 (the translator's)
                }
                set_op = true;
            }
            _ if is_word(t, "FROM") && from.is_none() => from = Some(i),
            _ if is_word(t, "INTO") => {
                if (from.is_none() && !set_op) || into.is_some() {
                    return; // INTO before FROM (sqlparser's own form), or two of them
                }
                into = Some(i);
            }
            _ if into.is_some() && (is_word(t, "FOR") || is_word(t, "LOCK")) => {
                end = i;
                break;
            }
            _ => {}
        }
    }
    let Some(into) = into else {
        return;
    };
    // Trailing whitespace stays where it was; the clause moves with one space after it.
    let mut stop = end;
    while stop > into && !significant(&tokens[stop - 1].token) {
        stop -= 1;
    }
    let span = tokens[into].span;
    let at = |t: Token| TokenWithSpan::new(t, span);
    let space = || at(Token::Whitespace(Whitespace::Space));
    let mut clause: Vec<TokenWithSpan> = tokens.drain(into..stop).collect();
    if set_op {
        // SELECT * INTO targets FROM ( set operation ) AS alias
        let mut head = vec![
            at(Token::make_keyword("SELECT")),
            space(),
            at(Token::Mul),
            space(),
        ];
        head.append(&mut clause);
        head.extend([
            space(),
            at(Token::make_keyword("FROM")),
            space(),
            at(Token::LParen),
        ]);
        let mut body_end = into;
        while body_end > first && !significant(&tokens[body_end - 1].token) {
            body_end -= 1;
        }
        tokens.splice(
            body_end..body_end,
            [
                at(Token::RParen),
                space(),
                at(Token::make_keyword("AS")),
                space(),
                at(Token::make_word(UNION_INTO_ALIAS, None)),
            ],
        );
        tokens.splice(first..first, head);
        return;
    }
    let Some(from) = from else {
        return;
    };
    clause.push(space());
    tokens.splice(from..from, clause);
}

/// Refuses, with 1235, statements sqlparser would read but shoal cannot run as MariaDB does:
/// `SELECT ... INTO OUTFILE` / `INTO DUMPFILE` (writing files on the server host).
pub fn refuse_unsupported(tokens: &[TokenWithSpan]) -> Result<(), crate::SqlError> {
    let mut words = tokens.iter().filter(|t| significant(&t.token));
    while let Some(t) = words.next() {
        if is_word(&t.token, "INTO") {
            if let Some(n) = words.clone().next() {
                for w in ["OUTFILE", "DUMPFILE"] {
                    if is_word(&n.token, w) {
                        return Err(crate::SqlError::Unsupported(format!("SELECT ... INTO {w}")));
                    }
                }
            }
        }
    }
    Ok(())
}

/// `UPDATE [LOW_PRIORITY] IGNORE` -> `UPDATE [LOW_PRIORITY] OR IGNORE` (see the module doc).
/// `LOW_PRIORITY` (a table-lock scheduling hint with no effect on InnoDB) is dropped.
fn update_ignore(tokens: &mut Vec<TokenWithSpan>) {
    let pos = positions(tokens);
    let Some(&first) = pos.first() else { return };
    if !is_word(&tokens[first].token, "UPDATE") {
        return;
    }
    let mut k = 1;
    if pos
        .get(k)
        .is_some_and(|&i| is_word(&tokens[i].token, "LOW_PRIORITY"))
    {
        tokens[pos[k]].token = Token::Whitespace(Whitespace::Space);
        k += 1;
    }
    let Some(&i) = pos.get(k) else { return };
    // `UPDATE ignore SET` would be a table named `ignore` (a reserved word in MySQL anyway).
    let table_follows = pos
        .get(k + 1)
        .is_some_and(|&j| !is_word(&tokens[j].token, "SET"));
    if is_word(&tokens[i].token, "IGNORE") && table_follows {
        let span = tokens[i].span;
        let or = [
            Token::make_keyword("OR"),
            Token::Whitespace(Whitespace::Space),
        ];
        tokens.splice(i..i, or.into_iter().map(|t| TokenWithSpan::new(t, span)));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn trailing_into_moves_before_from() {
        assert_eq!(
            rewritten("SELECT a, b FROM t WHERE a = 1 ORDER BY b LIMIT 1 INTO @x, @y"),
            "SELECT a, b INTO @x, @y FROM t WHERE a = 1 ORDER BY b LIMIT 1 "
        );
        assert_eq!(
            rewritten("SELECT a FROM t WHERE a = 1 INTO @x FOR UPDATE"),
            "SELECT a INTO @x FROM t WHERE a = 1  FOR UPDATE"
        );
        assert_eq!(
            rewritten("SELECT (SELECT 1 FROM u) FROM t INTO @x;"),
            "SELECT (SELECT 1 FROM u) INTO @x FROM t ;"
        );
        // Left alone: INTO already before FROM, INSERT ... SELECT, UNION, INTO in a subquery.
        for sql in [
            "SELECT a INTO @x FROM t",
            "INSERT INTO t SELECT a FROM u",
            "SELECT a FROM t WHERE a IN (SELECT b FROM u)",
        ] {
            assert_eq!(rewritten(sql), sql);
        }
    }

    #[test]
    fn trailing_into_after_a_set_operation() {
        assert_eq!(
            rewritten("SELECT 1 UNION SELECT 2 ORDER BY 1 DESC LIMIT 1 INTO @x"),
            "SELECT * INTO @x FROM (SELECT 1 UNION SELECT 2 ORDER BY 1 DESC LIMIT 1) AS shoal_union_into "
        );
        assert_eq!(
            rewritten("(SELECT a FROM t) UNION (SELECT b FROM u) INTO @x, @y;"),
            "SELECT * INTO @x, @y FROM ((SELECT a FROM t) UNION (SELECT b FROM u)) AS shoal_union_into ;"
        );
        // INTO in a member stays for the translator's 1064.
        let sql = "SELECT 1 INTO @x UNION SELECT 2";
        assert_eq!(rewritten(sql), sql);
    }

    #[test]
    fn update_ignore() {
        assert_eq!(
            rewritten("UPDATE IGNORE t SET a = 1"),
            "UPDATE OR IGNORE t SET a = 1"
        );
        assert_eq!(
            rewritten("update low_priority ignore t, u set a = 1"),
            "update   OR ignore t CROSS JOIN  u set a = 1"
        );
        assert_eq!(
            rewritten("UPDATE ignore SET a = 1"),
            "UPDATE ignore SET a = 1"
        );
        assert_eq!(rewritten("UPDATE t SET a = 1"), "UPDATE t SET a = 1");
    }

    fn rewritten(sql: &str) -> String {
        let mut t = crate::depth::tokenize(sql).unwrap();
        rewrite(&mut t);
        t.iter().map(|t| t.token.to_string()).collect()
    }

    #[test]
    fn compound_interval_units() {
        assert_eq!(
            rewritten(
                "SELECT d + INTERVAL '1 2' DAY_HOUR, DATE_ADD(d, INTERVAL x SECOND_MICROSECOND)"
            ),
            "SELECT d + INTERVAL '1 2' DAY TO HOUR, DATE_ADD(d, INTERVAL x MICROSECOND TO SECOND)"
        );
        // A column of that name is left alone: right after INTERVAL, qualified, or elsewhere.
        assert_eq!(
            rewritten("SELECT day_hour, t.day_hour FROM t WHERE d > NOW() - INTERVAL day_hour DAY"),
            "SELECT day_hour, t.day_hour FROM t WHERE d > NOW() - INTERVAL day_hour DAY"
        );
    }

    #[test]
    fn bang_binds_its_operand_only() {
        assert_eq!(rewritten("SELECT !0, !a.b"), "SELECT (NOT 0), (NOT a.b)");
        assert_eq!(rewritten("SELECT !2 + 1"), "SELECT (NOT 2) + 1");
        assert_eq!(
            rewritten("SELECT !!f(1, (2)), !-x, a != b"),
            "SELECT (NOT (NOT f(1, (2)))), (NOT -x), a <> b"
        );
        assert_eq!(rewritten("SELECT !(1 = 1) = 0"), "SELECT (NOT (1 = 1)) = 0");
        // Nothing it can bind: left for the parser's error.
        assert_eq!(rewritten("SELECT !"), "SELECT !");
    }

    #[test]
    fn rewrites_only_the_mysql_forms() {
        assert_eq!(
            rewritten("SELECT a FROM t WHERE id = 1 LOCK IN SHARE MODE"),
            "SELECT a FROM t WHERE id = 1 FOR SHARE    "
        );
        assert_eq!(
            rewritten("SELECT 7 MOD 3, MOD(7, 3)"),
            "SELECT 7 % 3, MOD(7, 3)"
        );
        assert_eq!(
            rewritten("UPDATE t1, t2 SET t1.a = t2.a, t1.b = 1 WHERE t1.id = t2.id"),
            "UPDATE t1 CROSS JOIN  t2 SET t1.a = t2.a, t1.b = 1 WHERE t1.id = t2.id"
        );
        // Strings, quoted names and other statements are left alone.
        for same in [
            "SELECT 'LOCK IN SHARE MODE', `mod` FROM t",
            "SELECT a, b FROM t1, t2",
            "INSERT INTO t VALUES (1, 2)",
            "UPDATE t SET a = (SELECT MAX(x) FROM u, v)",
        ] {
            assert_eq!(rewritten(same), same);
        }
    }
}
