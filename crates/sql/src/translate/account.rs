//! The account-management statements: GRANT, REVOKE, SHOW GRANTS, ALTER USER, RENAME USER and
//! SET PASSWORD, parsed from the raw text into [`AccountStmt`].
//!
//! Why a separate scanner: `'u'@'h'`, `*.*` and `db.*` do not tokenize reliably with
//! sqlparser's MySQL dialect (identifiers may start with `@`, `*` is an operator), and none of
//! these statements contains an expression, so a small scanner over the text is simpler and
//! exact. The result is a statement the session layer checks and applies; privilege names are
//! kept as written (upper-cased, multi-word names joined by one space, `ALL PRIVILEGES` as
//! `ALL`) and validated there, where the privilege table lives.

use crate::ast::{AccountStmt, GrantLevel, PasswordSpec, UserSpec};
use crate::error::SqlError;

#[derive(Debug, Clone, PartialEq)]
enum Tok {
    /// An unquoted word (as written) or a backquoted identifier (`quoted`).
    Word(String, bool),
    /// A string literal.
    Str(String),
    At,
    Comma,
    Dot,
    Star,
    LParen,
    RParen,
    Eq,
}

fn lex(sql: &str) -> Result<Vec<Tok>, SqlError> {
    let chars: Vec<char> = sql.trim().trim_end_matches(';').chars().collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        match c {
            c if c.is_whitespace() => i += 1,
            '@' => {
                out.push(Tok::At);
                i += 1
            }
            ',' => {
                out.push(Tok::Comma);
                i += 1
            }
            '.' => {
                out.push(Tok::Dot);
                i += 1
            }
            '*' => {
                out.push(Tok::Star);
                i += 1
            }
            '(' => {
                out.push(Tok::LParen);
                i += 1
            }
            ')' => {
                out.push(Tok::RParen);
                i += 1
            }
            '=' => {
                out.push(Tok::Eq);
                i += 1
            }
            '\'' | '"' | '`' => {
                let (s, next) = super::quoted(&chars, i)?;
                i = next;
                out.push(if c == '`' {
                    Tok::Word(s, true)
                } else {
                    Tok::Str(s)
                });
            }
            c if c.is_alphanumeric() || matches!(c, '_' | '$' | '%') => {
                let mut s = String::new();
                while let Some(&x) = chars.get(i) {
                    if x.is_alphanumeric() || matches!(x, '_' | '$' | '%') {
                        s.push(x);
                        i += 1;
                    } else {
                        break;
                    }
                }
                out.push(Tok::Word(s, false));
            }
            other => return Err(SqlError::Syntax(other.to_string())),
        }
    }
    Ok(out)
}

struct P {
    toks: Vec<Tok>,
    i: usize,
}

impl P {
    fn peek(&self) -> Option<&Tok> {
        self.toks.get(self.i)
    }
    fn is_word(&self, n: usize, w: &str) -> bool {
        matches!(self.toks.get(self.i + n), Some(Tok::Word(x, false)) if x.eq_ignore_ascii_case(w))
    }
    /// The token just consumed is the word `w`.
    fn is_prev_word(&self, w: &str) -> bool {
        self.i > 0
            && matches!(self.toks.get(self.i - 1), Some(Tok::Word(x, false)) if x.eq_ignore_ascii_case(w))
    }
    fn eat(&mut self, w: &str) -> bool {
        if self.is_word(0, w) {
            self.i += 1;
            true
        } else {
            false
        }
    }
    fn eat_seq(&mut self, ws: &[&str]) -> bool {
        if ws.iter().enumerate().all(|(n, w)| self.is_word(n, w)) {
            self.i += ws.len();
            true
        } else {
            false
        }
    }
    fn eat_tok(&mut self, t: &Tok) -> bool {
        if self.peek() == Some(t) {
            self.i += 1;
            true
        } else {
            false
        }
    }
    fn err(&self) -> SqlError {
        SqlError::Syntax(match self.peek() {
            Some(Tok::Word(w, _)) | Some(Tok::Str(w)) => w.clone(),
            Some(t) => format!("{t:?}"),
            None => String::new(),
        })
    }
    fn expect(&mut self, w: &str) -> Result<(), SqlError> {
        if self.eat(w) {
            Ok(())
        } else {
            Err(self.err())
        }
    }
    fn end(&self) -> Result<(), SqlError> {
        if self.i == self.toks.len() {
            Ok(())
        } else {
            Err(self.err())
        }
    }
    /// A name: identifier, backquoted identifier or string.
    fn name(&mut self) -> Result<String, SqlError> {
        match self.peek().cloned() {
            Some(Tok::Word(w, _)) | Some(Tok::Str(w)) => {
                self.i += 1;
                Ok(w)
            }
            _ => Err(self.err()),
        }
    }
    /// `'u'@'h'`, `u@h`, `'u'` (host `%`) or `CURRENT_USER[()]` (`None`).
    fn user(&mut self) -> Result<Option<UserSpec>, SqlError> {
        if self.eat("CURRENT_USER") {
            if self.eat_tok(&Tok::LParen) && !self.eat_tok(&Tok::RParen) {
                return Err(self.err());
            }
            return Ok(None);
        }
        let user = self.name()?;
        let host = if self.eat_tok(&Tok::At) {
            self.name()?
        } else {
            "%".to_string()
        };
        Ok(Some(UserSpec { user, host }))
    }
    fn users(&mut self) -> Result<Vec<Option<UserSpec>>, SqlError> {
        let mut v = vec![self.user()?];
        while self.eat_tok(&Tok::Comma) {
            v.push(self.user()?);
        }
        Ok(v)
    }
    /// A privilege list up to `ON` (or `FROM` for `REVOKE ALL ..., GRANT OPTION FROM`).
    fn privileges(&mut self) -> Result<Vec<String>, SqlError> {
        let mut out = Vec::new();
        loop {
            let mut words = Vec::new();
            while let Some(Tok::Word(w, false)) = self.peek() {
                if self.is_word(0, "ON") || self.is_word(0, "FROM") || self.is_word(0, "TO") {
                    break;
                }
                words.push(w.to_ascii_uppercase());
                self.i += 1;
            }
            if words.is_empty() {
                return Err(self.err());
            }
            if self.peek() == Some(&Tok::LParen) {
                return Err(SqlError::Unsupported("column-level privileges".into()));
            }
            let mut name = words.join(" ");
            if name == "ALL PRIVILEGES" {
                name = "ALL".into();
            }
            out.push(name);
            if !self.eat_tok(&Tok::Comma) {
                return Ok(out);
            }
        }
    }
    /// `*.*`, `*`, `db.*`, `db.t`, `t` (optionally after `TABLE`).
    fn level(&mut self) -> Result<GrantLevel, SqlError> {
        self.eat("TABLE");
        if self.eat_tok(&Tok::Star) {
            if self.eat_tok(&Tok::Dot) {
                if !self.eat_tok(&Tok::Star) {
                    return Err(self.err());
                }
                return Ok(GrantLevel::Global);
            }
            return Ok(GrantLevel::Database(None));
        }
        let first = match self.peek().cloned() {
            Some(Tok::Word(w, _)) => {
                self.i += 1;
                w
            }
            _ => return Err(self.err()),
        };
        if self.eat_tok(&Tok::Dot) {
            if self.eat_tok(&Tok::Star) {
                return Ok(GrantLevel::Database(Some(first)));
            }
            match self.peek().cloned() {
                Some(Tok::Word(t, _)) => {
                    self.i += 1;
                    Ok(GrantLevel::Table(Some(first), t))
                }
                _ => Err(self.err()),
            }
        } else {
            Ok(GrantLevel::Table(None, first))
        }
    }
    /// `'x'` or `PASSWORD('x')` after `=`.
    fn password_value(&mut self) -> Result<PasswordSpec, SqlError> {
        if self.eat("PASSWORD") {
            if !self.eat_tok(&Tok::LParen) {
                return Err(self.err());
            }
            let s = match self.peek().cloned() {
                Some(Tok::Str(s)) => s,
                _ => return Err(self.err()),
            };
            self.i += 1;
            if !self.eat_tok(&Tok::RParen) {
                return Err(self.err());
            }
            return Ok(PasswordSpec::Clear(s));
        }
        match self.peek().cloned() {
            Some(Tok::Str(s)) => {
                self.i += 1;
                Ok(PasswordSpec::from_literal(s))
            }
            _ => Err(self.err()),
        }
    }
    /// `IDENTIFIED [WITH plugin] BY 'x' | IDENTIFIED WITH plugin [AS 'stored'] |
    /// IDENTIFIED BY PASSWORD '*hash'`.
    fn identified(&mut self) -> Result<PasswordSpec, SqlError> {
        if self.eat("WITH") {
            let plugin = self.name()?;
            if !super::AUTH_PLUGINS
                .iter()
                .any(|p| p.eq_ignore_ascii_case(&plugin))
            {
                return Err(SqlError::coded(
                    shoal_errors::ER_PLUGIN_IS_NOT_LOADED,
                    format!("Plugin '{plugin}' is not loaded"),
                ));
            }
            let plugin = plugin.to_ascii_lowercase();
            let (mut password, mut stored) = (None, None);
            if self.eat("AS") || self.eat("BY") {
                let by = self.is_prev_word("BY");
                match self.peek().cloned() {
                    Some(Tok::Str(s)) => {
                        self.i += 1;
                        if by {
                            password = Some(s);
                        } else {
                            stored = Some(s);
                        }
                    }
                    _ => return Err(self.err()),
                }
            }
            return Ok(PasswordSpec::With {
                plugin,
                password,
                stored,
            });
        }
        self.expect("BY")?;
        if self.eat("PASSWORD") {
            return match self.peek().cloned() {
                Some(Tok::Str(s)) => {
                    self.i += 1;
                    PasswordSpec::hash(&s)
                }
                _ => Err(self.err()),
            };
        }
        match self.peek().cloned() {
            Some(Tok::Str(s)) => {
                self.i += 1;
                Ok(PasswordSpec::Clear(s))
            }
            _ => Err(self.err()),
        }
    }
}

impl PasswordSpec {
    /// A `SET PASSWORD = 'literal'`: MariaDB takes the literal as the stored hash
    /// (`*` + 40 hex digits), MySQL 8 as the password itself; a literal in the hash's form is
    /// taken as a hash, anything else as the password.
    fn from_literal(s: String) -> PasswordSpec {
        match PasswordSpec::hash(&s) {
            Ok(h) if !s.is_empty() => h,
            _ => PasswordSpec::Clear(s),
        }
    }

    /// `*` + 40 hex digits (or empty: no password).
    fn hash(s: &str) -> Result<PasswordSpec, SqlError> {
        if s.is_empty() {
            return Ok(PasswordSpec::Clear(String::new()));
        }
        let hex = s
            .strip_prefix('*')
            .filter(|h| h.len() == 40 && h.bytes().all(|b| b.is_ascii_hexdigit()));
        let bytes = hex.and_then(|h| {
            (0..20)
                .map(|i| u8::from_str_radix(&h[2 * i..2 * i + 2], 16).ok())
                .collect::<Option<Vec<u8>>>()
        });
        match bytes {
            Some(b) => Ok(PasswordSpec::Hash(b.try_into().expect("20 bytes"))),
            // MySQL's ER_PASSWD_LENGTH.
            None => Err(SqlError::coded(
                shoal_errors::ER_PASSWD_LENGTH,
                "Password hash should be a 41-digit hexadecimal number",
            )),
        }
    }
}

/// Whether the statement starting with `head` `second` (upper-cased first words) is one of
/// this module's.
pub fn is_account_statement(head: &str, second: &str, third: &str) -> bool {
    match head {
        "GRANT" | "REVOKE" => true,
        "SHOW" => second == "GRANTS" || (second == "CREATE" && third == "USER"),
        "RENAME" | "ALTER" => second == "USER",
        "SET" => second == "PASSWORD",
        _ => false,
    }
}

/// Parses an account statement (see [`is_account_statement`]).
pub fn parse(sql: &str) -> Result<AccountStmt, SqlError> {
    let mut p = P {
        toks: lex(sql)?,
        i: 0,
    };
    let st = if p.eat("GRANT") {
        let privileges = p.privileges()?;
        p.expect("ON")?;
        let level = p.level()?;
        p.expect("TO")?;
        let users = p.users()?;
        let mut grant_option = false;
        if p.eat("IDENTIFIED") {
            return Err(SqlError::Unsupported(
                "GRANT ... IDENTIFIED BY (use CREATE USER or ALTER USER)".into(),
            ));
        }
        if p.eat("REQUIRE") {
            return Err(SqlError::Unsupported("GRANT ... REQUIRE".into()));
        }
        while p.eat("WITH") {
            if p.eat_seq(&["GRANT", "OPTION"]) {
                grant_option = true;
            } else {
                return Err(SqlError::Unsupported(
                    "GRANT ... WITH resource limits".into(),
                ));
            }
        }
        AccountStmt::Grant {
            privileges,
            level,
            users,
            grant_option,
        }
    } else if p.eat("REVOKE") {
        let privileges = p.privileges()?;
        let level = if privileges == ["ALL", "GRANT OPTION"] && p.is_word(0, "FROM") {
            None
        } else {
            p.expect("ON")?;
            Some(p.level()?)
        };
        p.expect("FROM")?;
        let users = p.users()?;
        AccountStmt::Revoke {
            privileges,
            level,
            users,
        }
    } else if p.eat_seq(&["SHOW", "CREATE", "USER"]) {
        // `SHOW CREATE USER` alone is the session's account, as `CURRENT_USER` is.
        let user = if p.i < p.toks.len() { p.user()? } else { None };
        AccountStmt::ShowCreateUser(user)
    } else if p.eat("SHOW") {
        p.expect("GRANTS")?;
        let user = if p.eat("FOR") { p.user()? } else { None };
        if p.eat("USING") {
            return Err(SqlError::Unsupported(
                "SHOW GRANTS ... USING (roles)".into(),
            ));
        }
        AccountStmt::ShowGrants(user)
    } else if p.eat("RENAME") {
        p.expect("USER")?;
        let mut pairs = Vec::new();
        loop {
            let from = p.user()?.ok_or_else(|| p.err())?;
            p.expect("TO")?;
            let to = p.user()?.ok_or_else(|| p.err())?;
            pairs.push((from, to));
            if !p.eat_tok(&Tok::Comma) {
                break;
            }
        }
        AccountStmt::RenameUser(pairs)
    } else if p.eat("ALTER") {
        p.expect("USER")?;
        let if_exists = p.eat_seq(&["IF", "EXISTS"]);
        let mut users = Vec::new();
        loop {
            let u = p.user()?;
            let pw = if p.eat("IDENTIFIED") {
                Some(p.identified()?)
            } else {
                None
            };
            users.push((u, pw));
            if !p.eat_tok(&Tok::Comma) {
                break;
            }
        }
        let mut lock = None;
        let mut require_ssl = None;
        while p.i < p.toks.len() {
            if p.eat_seq(&["ACCOUNT", "LOCK"]) {
                lock = Some(true);
            } else if p.eat_seq(&["ACCOUNT", "UNLOCK"]) {
                lock = Some(false);
            } else if p.eat_seq(&["REQUIRE", "SSL"]) {
                require_ssl = Some(true);
            } else if p.eat_seq(&["REQUIRE", "NONE"]) {
                require_ssl = Some(false);
            } else {
                return Err(SqlError::Unsupported(format!(
                    "ALTER USER option {}",
                    match p.peek() {
                        Some(Tok::Word(w, _)) => w.to_ascii_uppercase(),
                        _ => String::new(),
                    }
                )));
            }
        }
        AccountStmt::AlterUser {
            if_exists,
            users,
            lock,
            require_ssl,
        }
    } else if p.eat("SET") {
        p.expect("PASSWORD")?;
        let user = if p.eat("FOR") { p.user()? } else { None };
        if !p.eat_tok(&Tok::Eq) {
            return Err(p.err());
        }
        let password = p.password_value()?;
        AccountStmt::SetPassword { user, password }
    } else {
        return Err(p.err());
    };
    p.end()?;
    Ok(st)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn u(user: &str, host: &str) -> Option<UserSpec> {
        Some(UserSpec {
            user: user.into(),
            host: host.into(),
        })
    }

    #[test]
    fn grants_parse_at_every_level() {
        assert_eq!(
            parse("GRANT SELECT, INSERT ON *.* TO 'bob'@'%' WITH GRANT OPTION").unwrap(),
            AccountStmt::Grant {
                privileges: vec!["SELECT".into(), "INSERT".into()],
                level: GrantLevel::Global,
                users: vec![u("bob", "%")],
                grant_option: true,
            }
        );
        assert_eq!(
            parse("grant all privileges on `d1`.* to bob@localhost, 'x'").unwrap(),
            AccountStmt::Grant {
                privileges: vec!["ALL".into()],
                level: GrantLevel::Database(Some("d1".into())),
                users: vec![u("bob", "localhost"), u("x", "%")],
                grant_option: false,
            }
        );
        assert_eq!(
            parse("GRANT SHOW DATABASES, CREATE TEMPORARY TABLES ON d.t TO u").unwrap(),
            AccountStmt::Grant {
                privileges: vec!["SHOW DATABASES".into(), "CREATE TEMPORARY TABLES".into()],
                level: GrantLevel::Table(Some("d".into()), "t".into()),
                users: vec![u("u", "%")],
                grant_option: false,
            }
        );
        assert!(matches!(
            parse("GRANT SELECT (a) ON d.t TO u"),
            Err(SqlError::Unsupported(_))
        ));
        assert!(matches!(
            parse("GRANT SELECT ON TO u"),
            Err(SqlError::Syntax(_))
        ));
    }

    #[test]
    fn revoke_show_rename_alter_set_password() {
        assert_eq!(
            parse("REVOKE ALL PRIVILEGES, GRANT OPTION FROM 'a'@'h'").unwrap(),
            AccountStmt::Revoke {
                privileges: vec!["ALL".into(), "GRANT OPTION".into()],
                level: None,
                users: vec![u("a", "h")],
            }
        );
        assert_eq!(
            parse("SHOW GRANTS FOR CURRENT_USER()").unwrap(),
            AccountStmt::ShowGrants(None)
        );
        assert_eq!(
            parse("RENAME USER a@'%' TO b@localhost").unwrap(),
            AccountStmt::RenameUser(vec![(u("a", "%").unwrap(), u("b", "localhost").unwrap())])
        );
        assert_eq!(
            parse("ALTER USER a IDENTIFIED WITH caching_sha2_password BY 'x'").unwrap(),
            AccountStmt::AlterUser {
                if_exists: false,
                users: vec![(
                    u("a", "%"),
                    Some(PasswordSpec::With {
                        plugin: "caching_sha2_password".into(),
                        password: Some("x".into()),
                        stored: None
                    })
                )],
                lock: None,
                require_ssl: None,
            }
        );
        assert_eq!(
            parse("ALTER USER a IDENTIFIED WITH ed25519")
                .unwrap_err()
                .code(),
            1524
        );
        assert_eq!(
            parse("ALTER USER IF EXISTS a IDENTIFIED BY 'x' ACCOUNT LOCK").unwrap(),
            AccountStmt::AlterUser {
                if_exists: true,
                users: vec![(u("a", "%"), Some(PasswordSpec::Clear("x".into())))],
                lock: Some(true),
                require_ssl: None,
            }
        );
        assert_eq!(
            parse("ALTER USER a@localhost REQUIRE SSL").unwrap(),
            AccountStmt::AlterUser {
                if_exists: false,
                users: vec![(u("a", "localhost"), None)],
                lock: None,
                require_ssl: Some(true),
            }
        );
        assert_eq!(
            parse("SET PASSWORD FOR a@h = PASSWORD('p')").unwrap(),
            AccountStmt::SetPassword {
                user: u("a", "h"),
                password: PasswordSpec::Clear("p".into())
            }
        );
        // Not a hash (a multi-byte character among 40 bytes): the password itself.
        assert_eq!(
            parse("SET PASSWORD = '*é4E65567ABDB5135D0CFD9A70B3032C179A49EE'").unwrap(),
            AccountStmt::SetPassword {
                user: None,
                password: PasswordSpec::Clear("*é4E65567ABDB5135D0CFD9A70B3032C179A49EE".into())
            }
        );
        let hashed = parse("SET PASSWORD = '*14E65567ABDB5135D0CFD9A70B3032C179A49EE7'").unwrap();
        assert!(matches!(
            hashed,
            AccountStmt::SetPassword {
                user: None,
                password: PasswordSpec::Hash(_)
            }
        ));
    }
}
