//! Expressions: sqlparser's `Expr` -> our [`Expr`], the one translator every statement uses.
//!
//! Session statements, table-less SELECTs and the table executor (`shoal-exec`) all translate
//! expressions here, so `SUBSTRING(x FROM 2)`, `TRIM(LEADING ..)`, `CEIL`, `||`, `@user`,
//! `@@system` variables, `CAST(.. AS DECIMAL(m,d))` and the rest mean the same with or without a
//! table. What differs by context is small and goes through [`ExprScope`]: who numbers the `?`
//! placeholders, and which function calls the caller handles itself (aggregates collected by the
//! table executor, `VALUES(col)` in ON DUPLICATE KEY UPDATE).
//!
//! Translation recurses once per nesting level on a stack that grows on demand
//! ([`crate::depth::with_stack`]); the parser has already bounded the depth (1436).

use sqlparser::ast as sp;

use crate::ast::*;
use crate::decimal::Decimal;
use crate::error::SqlError;
use crate::value::Value;

fn unsupported(what: impl Into<String>) -> SqlError {
    SqlError::Unsupported(what.into())
}

/// What an expression's context decides.
pub trait ExprScope {
    /// The number of the next `?` placeholder (they are numbered in textual order).
    fn next_param(&mut self) -> usize;

    /// A column reference: `qualifier` is the table (or alias) written before it, if any. The
    /// default drops the qualifier (single-table statements).
    fn column(&mut self, _qualifier: Option<&str>, name: &str) -> Result<Expr, SqlError> {
        Ok(Expr::Column(name.to_string()))
    }

    /// A subquery used as a value; only the query engine's context has them.
    fn subquery(&mut self, _kind: SubqueryKind, _q: &sp::Query) -> Result<Expr, SqlError> {
        Err(unsupported("subqueries"))
    }

    /// A function call the context handles itself (`name` is upper case): aggregates, `VALUES()`.
    /// `Ok(None)` translates it as an ordinary function.
    fn special_function(
        &mut self,
        _name: &str,
        _f: &sp::Function,
    ) -> Result<Option<Expr>, SqlError> {
        Ok(None)
    }
}

/// Placeholders numbered from 0, no special functions: an expression on its own.
#[derive(Debug, Default)]
pub struct PlainScope {
    /// Placeholders seen so far.
    pub params: usize,
}

impl ExprScope for PlainScope {
    fn next_param(&mut self) -> usize {
        self.params += 1;
        self.params - 1
    }
}

/// One expression (on a new stack segment when the current one runs low).
pub fn expr(cx: &mut dyn ExprScope, e: &sp::Expr) -> Result<Expr, SqlError> {
    crate::depth::with_stack(|| expr_level(cx, e))
}

/// A list of expressions, in order.
pub fn exprs(cx: &mut dyn ExprScope, v: &[sp::Expr]) -> Result<Vec<Expr>, SqlError> {
    v.iter().map(|e| expr(cx, e)).collect()
}

/// A function name as `(db, name)`: `db.f()` is a stored function we do not have.
fn function_name(n: &sp::ObjectName) -> (Option<String>, String) {
    let parts: Vec<String> =
        n.0.iter()
            .map(|p| match p {
                sp::ObjectNamePart::Identifier(i) => i.value.clone(),
                other => other.to_string(),
            })
            .collect();
    match parts.as_slice() {
        [] => (None, String::new()),
        [one] => (None, one.clone()),
        [.., db, name] => (Some(db.clone()), name.clone()),
    }
}

/// The arguments of a call: the expressions, whether DISTINCT was written, whether `*` was.
pub fn call_args(f: &sp::Function) -> Result<(Vec<&sp::Expr>, bool, bool), SqlError> {
    match &f.args {
        sp::FunctionArguments::None => Ok((Vec::new(), false, false)),
        sp::FunctionArguments::Subquery(_) => Err(unsupported("subqueries")),
        sp::FunctionArguments::List(l) => {
            if !l.clauses.is_empty() {
                return Err(unsupported("function argument clauses"));
            }
            let distinct = matches!(
                l.duplicate_treatment,
                Some(sp::DuplicateTreatment::Distinct)
            );
            let mut args = Vec::new();
            let mut star = false;
            for a in &l.args {
                match a {
                    sp::FunctionArg::Unnamed(sp::FunctionArgExpr::Expr(e)) => args.push(e),
                    sp::FunctionArg::Unnamed(sp::FunctionArgExpr::Wildcard) => star = true,
                    other => return Err(unsupported(other.to_string())),
                }
            }
            Ok((args, distinct, star))
        }
    }
}

fn function(cx: &mut dyn ExprScope, f: &sp::Function) -> Result<Expr, SqlError> {
    if f.over.is_some() || f.filter.is_some() || !f.within_group.is_empty() {
        return Err(unsupported("window and filtered functions"));
    }
    if !matches!(f.parameters, sp::FunctionArguments::None) {
        return Err(unsupported("parametric functions"));
    }
    let (db, name) = function_name(&f.name);
    if let Some(db) = db {
        return Err(SqlError::UnknownFunction(format!("{db}.{name}")));
    }
    let name = name.to_ascii_uppercase();
    if let Some(e) = cx.special_function(&name, f)? {
        return Ok(e);
    }
    let (args, distinct, star) = call_args(f)?;
    if distinct {
        return Err(unsupported("DISTINCT in aggregate functions"));
    }
    match name.as_str() {
        // DATE_ADD(d, INTERVAL n unit) -> (d, n, 'unit'); ADDDATE(d, n) counts days.
        "DATE_ADD" | "DATE_SUB" | "ADDDATE" | "SUBDATE" if args.len() == 2 => {
            let d = expr(cx, args[0])?;
            let (n, unit) = match interval(cx, args[1])? {
                Some(iv) => iv,
                None if matches!(name.as_str(), "ADDDATE" | "SUBDATE") => {
                    (expr(cx, args[1])?, "DAY".to_string())
                }
                None => return Err(SqlError::Syntax(f.to_string())),
            };
            return Ok(Expr::Function(name, vec![d, n, unit_literal(unit)]));
        }
        // TIMESTAMPDIFF(unit, a, b), TIMESTAMPADD(unit, n, d): the unit is a keyword.
        "TIMESTAMPDIFF" | "TIMESTAMPADD" if args.len() == 3 => {
            let unit = match args[0] {
                sp::Expr::Identifier(i) if i.quote_style.is_none() => date_unit(&i.value)?,
                other => return Err(SqlError::Syntax(other.to_string())),
            };
            let mut out = vec![unit_literal(unit)];
            for a in &args[1..] {
                out.push(expr(cx, a)?);
            }
            return Ok(Expr::Function(name, out));
        }
        _ => {}
    }
    let mut out = args
        .into_iter()
        .map(|a| expr(cx, a))
        .collect::<Result<Vec<_>, _>>()?;
    if star {
        out.push(Expr::Column("*".into()));
    }
    Ok(Expr::Function(name, out))
}

/// An interval unit's name as the evaluator takes it (`DAY`, `SQL_TSI_DAY`; plurals are not
/// MySQL's); anything else is a syntax error as in MySQL.
fn date_unit(name: &str) -> Result<String, SqlError> {
    let u = name.to_ascii_uppercase();
    let base = u.strip_prefix("SQL_TSI_").unwrap_or(&u);
    match base {
        "MICROSECOND" | "SECOND" | "MINUTE" | "HOUR" | "DAY" | "WEEK" | "MONTH" | "QUARTER"
        | "YEAR" => Ok(base.to_string()),
        _ => Err(SqlError::Syntax(name.to_string())),
    }
}

fn unit_literal(unit: String) -> Expr {
    Expr::Literal(Value::Str(unit))
}

fn field_unit(f: &sp::DateTimeField) -> Result<String, SqlError> {
    match f {
        sp::DateTimeField::Custom(i) => date_unit(&i.value),
        sp::DateTimeField::Week(Some(_)) => Err(SqlError::Syntax(f.to_string())),
        other => date_unit(&other.to_string()),
    }
}

/// `INTERVAL n unit` (possibly parenthesized) as its amount and unit; None if `e` is not one.
fn interval(cx: &mut dyn ExprScope, e: &sp::Expr) -> Result<Option<(Expr, String)>, SqlError> {
    match e {
        sp::Expr::Nested(x) => interval(cx, x),
        sp::Expr::Interval(iv) => {
            let unit = match (&iv.leading_field, &iv.last_field) {
                (Some(unit), None) => field_unit(unit)?,
                // MySQL's compound units, as the dialect pass rewrote them.
                (Some(a), Some(b)) => {
                    let (a, b) = (field_unit(a)?, field_unit(b)?);
                    match (a.as_str(), b.as_str()) {
                        ("MICROSECOND", "SECOND") => "SECOND_MICROSECOND".to_string(),
                        ("YEAR", "MONTH")
                        | ("DAY", "HOUR" | "MINUTE" | "SECOND" | "MICROSECOND")
                        | ("HOUR", "MINUTE" | "SECOND" | "MICROSECOND")
                        | ("MINUTE", "SECOND" | "MICROSECOND") => format!("{a}_{b}"),
                        _ => return Err(SqlError::Syntax(e.to_string())),
                    }
                }
                _ => return Err(SqlError::Syntax(e.to_string())),
            };
            Ok(Some((expr(cx, &iv.value)?, unit)))
        }
        _ => Ok(None),
    }
}

/// A literal value (or a `?` placeholder).
pub fn literal(cx: &mut dyn ExprScope, v: &sp::Value) -> Result<Expr, SqlError> {
    Ok(Expr::Literal(match v {
        sp::Value::Number(n, _) => number_literal(n)?,
        sp::Value::SingleQuotedString(s)
        | sp::Value::DoubleQuotedString(s)
        | sp::Value::NationalStringLiteral(s)
        | sp::Value::EscapedStringLiteral(s) => Value::Str(s.clone()),
        sp::Value::HexStringLiteral(h) => Value::Bytes(hex_literal(h)?),
        sp::Value::Boolean(b) => Value::Int(*b as i64),
        sp::Value::Null => Value::Null,
        sp::Value::Placeholder(ph) => {
            if ph != "?" {
                return Err(SqlError::Syntax(ph.clone()));
            }
            return Ok(Expr::Param(cx.next_param()));
        }
        other => return Err(unsupported(format!("literal {other}"))),
    }))
}

fn expr_level(cx: &mut dyn ExprScope, e: &sp::Expr) -> Result<Expr, SqlError> {
    use sp::Expr as E;
    let b = |x: Expr| Box::new(x);
    Ok(match e {
        E::TypedString(ts) => {
            let text = match &ts.value.value {
                sp::Value::SingleQuotedString(t) | sp::Value::DoubleQuotedString(t) => t,
                other => return Err(unsupported(format!("{} {other}", ts.data_type))),
            };
            match ts.data_type {
                sp::DataType::Date => Expr::Literal(crate::func::date::typed_literal(true, text)?),
                sp::DataType::Timestamp(None, _) => {
                    Expr::Literal(crate::func::date::typed_literal(false, text)?)
                }
                sp::DataType::Time(None, sp::TimezoneInfo::None) => {
                    Expr::Literal(crate::func::time::typed_literal(text)?)
                }
                _ => return Err(unsupported(e.to_string())),
            }
        }
        E::Identifier(i) => {
            if i.quote_style.is_none() && i.value.starts_with("@@") {
                Expr::SysVar(VarScope::Default, i.value[2..].to_ascii_lowercase())
            } else if i.quote_style.is_none() && i.value.starts_with('@') {
                Expr::UserVar(i.value[1..].to_string())
            } else if i.quote_style.is_none() {
                match i.value.to_ascii_uppercase().as_str() {
                    "CURRENT_TIMESTAMP" | "CURRENT_DATE" | "CURRENT_TIME" | "CURRENT_USER"
                    | "LOCALTIME" | "LOCALTIMESTAMP" => {
                        Expr::Function(i.value.to_ascii_uppercase(), vec![])
                    }
                    _ => cx.column(None, &i.value)?,
                }
            } else {
                cx.column(None, &i.value)?
            }
        }
        E::CompoundIdentifier(ids) => {
            let first = &ids[0];
            if first.quote_style.is_none() && first.value.starts_with("@@") && ids.len() == 2 {
                let scope = match first.value[2..].to_ascii_lowercase().as_str() {
                    "global" | "persist" => VarScope::Global,
                    "session" | "local" => VarScope::Session,
                    _ => {
                        return Err(SqlError::Syntax(format!(
                            "{}.{}",
                            first.value, ids[1].value
                        )))
                    }
                };
                Expr::SysVar(scope, ids[1].value.to_ascii_lowercase())
            } else if ids.len() > 3 {
                // db.table.column is the longest column reference.
                return Err(SqlError::Syntax(e.to_string()));
            } else {
                let q = (ids.len() >= 2).then(|| ids[ids.len() - 2].value.as_str());
                let name = ids.last().map(|i| i.value.as_str()).unwrap_or_default();
                cx.column(q, name)?
            }
        }
        E::Value(v) => literal(cx, &v.value)?,
        E::Nested(x) => expr(cx, x)?,
        E::Collate { expr: x, .. } => expr(cx, x)?,
        // `_binary '..'` is a binary string; other introducers name a character set, and
        // every string here is utf8mb4.
        E::Prefixed { prefix, value } if prefix.value.eq_ignore_ascii_case("_binary") => {
            match expr(cx, value)? {
                Expr::Literal(v) if !v.is_null() => {
                    Expr::Literal(Value::Bytes(v.to_bytes().unwrap_or_default().into_owned()))
                }
                x => Expr::Cast(b(x), CastType::Binary),
            }
        }
        E::Prefixed { value, .. } => match expr(cx, value)? {
            Expr::Literal(Value::Bytes(x)) => Expr::Literal(Value::from_utf8_or_bytes(x)),
            x => x,
        },
        E::UnaryOp { op, expr: x } => {
            let x = expr(cx, x)?;
            match op {
                sp::UnaryOperator::Plus => x,
                sp::UnaryOperator::Minus => match x {
                    // Fold `-<literal>` so that -9223372036854775808 is a BIGINT.
                    Expr::Literal(Value::UInt(u)) if u == 1u64 << 63 => {
                        Expr::Literal(Value::Int(i64::MIN))
                    }
                    Expr::Literal(Value::Int(i)) => Expr::Literal(Value::Int(-i)),
                    Expr::Literal(Value::Decimal(d)) => Expr::Literal(Value::Decimal(d.negated())),
                    Expr::Literal(Value::Double(d)) => Expr::Literal(Value::Double(-d)),
                    other => Expr::Unary(UnOp::Neg, b(other)),
                },
                sp::UnaryOperator::Not | sp::UnaryOperator::BangNot => Expr::Unary(UnOp::Not, b(x)),
                sp::UnaryOperator::BitwiseNot => Expr::Unary(UnOp::BitNot, b(x)),
                other => return Err(unsupported(format!("operator {other}"))),
            }
        }
        E::BinaryOp { left, op, right } => {
            use sp::BinaryOperator as O;
            // `d + INTERVAL n unit`, `INTERVAL n unit + d`, `d - INTERVAL n unit`.
            if matches!(op, O::Plus | O::Minus) {
                if let Some((n, unit)) = interval(cx, right)? {
                    let d = expr(cx, left)?;
                    let f = if *op == O::Plus {
                        "DATE_ADD"
                    } else {
                        "DATE_SUB"
                    };
                    return Ok(Expr::Function(f.into(), vec![d, n, unit_literal(unit)]));
                }
                if *op == O::Plus {
                    if let Some((n, unit)) = interval(cx, left)? {
                        let d = expr(cx, right)?;
                        return Ok(Expr::Function(
                            "DATE_ADD".into(),
                            vec![d, n, unit_literal(unit)],
                        ));
                    }
                }
            }
            if *op == O::Assignment {
                let l = expr(cx, left)?;
                let r = expr(cx, right)?;
                return match l {
                    Expr::UserVar(n) => Ok(Expr::AssignUserVar(n, b(r))),
                    _ => Err(SqlError::Syntax(":=".into())),
                };
            }
            let op = match op {
                O::Plus => BinOp::Add,
                O::Minus => BinOp::Sub,
                O::Multiply => BinOp::Mul,
                O::Divide => BinOp::Div,
                O::Modulo => BinOp::Mod,
                O::MyIntegerDivide | O::DuckIntegerDivide => BinOp::IntDiv,
                O::Eq => BinOp::Eq,
                O::NotEq => BinOp::NotEq,
                O::Lt => BinOp::Lt,
                O::LtEq => BinOp::LtEq,
                O::Gt => BinOp::Gt,
                O::GtEq => BinOp::GtEq,
                O::Spaceship => BinOp::NullSafeEq,
                O::And => BinOp::And,
                // Without PIPES_AS_CONCAT in sql_mode, `||` is OR in MySQL.
                O::Or | O::StringConcat => BinOp::Or,
                O::Xor => BinOp::Xor,
                O::BitwiseAnd => BinOp::BitAnd,
                O::BitwiseOr => BinOp::BitOr,
                O::BitwiseXor | O::PGBitwiseXor => BinOp::BitXor,
                O::PGBitwiseShiftLeft => BinOp::ShiftLeft,
                O::PGBitwiseShiftRight => BinOp::ShiftRight,
                other => return Err(unsupported(format!("operator {other}"))),
            };
            let l = expr(cx, left)?;
            let r = expr(cx, right)?;
            Expr::Binary(op, b(l), b(r))
        }
        E::IsNull(x) => Expr::IsNull(b(expr(cx, x)?), false),
        E::IsNotNull(x) => Expr::IsNull(b(expr(cx, x)?), true),
        E::IsUnknown(x) => Expr::IsNull(b(expr(cx, x)?), false),
        E::IsNotUnknown(x) => Expr::IsNull(b(expr(cx, x)?), true),
        E::IsTrue(x) => Expr::IsBool(b(expr(cx, x)?), true, false),
        E::IsNotTrue(x) => Expr::IsBool(b(expr(cx, x)?), true, true),
        E::IsFalse(x) => Expr::IsBool(b(expr(cx, x)?), false, false),
        E::IsNotFalse(x) => Expr::IsBool(b(expr(cx, x)?), false, true),
        E::In {
            expr: x,
            target,
            negated,
            ..
        } => {
            let x = expr(cx, x)?;
            match target {
                sp::InTarget::List(list) => Expr::InList(b(x), exprs(cx, list)?, *negated),
                sp::InTarget::Subquery(q) => cx.subquery(
                    SubqueryKind::In {
                        operand: x,
                        negated: *negated,
                    },
                    q,
                )?,
                _ => return Err(unsupported("IN over this kind of list")),
            }
        }
        E::Between {
            expr: x,
            negated,
            low,
            high,
        } => {
            let x = expr(cx, x)?;
            let l = expr(cx, low)?;
            let h = expr(cx, high)?;
            Expr::Between(b(x), b(l), b(h), *negated)
        }
        E::Like {
            negated,
            any,
            expr: x,
            pattern,
            escape_char,
        }
        | E::ILike {
            negated,
            any,
            expr: x,
            pattern,
            escape_char,
        } => {
            if *any {
                return Err(unsupported("LIKE ANY"));
            }
            let x = expr(cx, x)?;
            let pat = expr(cx, pattern)?;
            let esc = match escape_char {
                None => None,
                Some(e) => match expr(cx, e)? {
                    Expr::Literal(Value::Str(s)) if s.chars().count() == 1 => s.chars().next(),
                    _ => {
                        return Err(SqlError::coded(
                            shoal_errors::ER_WRONG_ARGUMENTS,
                            "Incorrect arguments to ESCAPE",
                        ))
                    }
                },
            };
            Expr::Like(b(x), b(pat), esc, *negated)
        }
        E::Case {
            operand,
            conditions,
            else_result,
            ..
        } => {
            let op = operand
                .as_ref()
                .map(|o| expr(cx, o))
                .transpose()?
                .map(Box::new);
            let mut whens = Vec::new();
            for c in conditions {
                let w = expr(cx, &c.condition)?;
                let t = expr(cx, &c.result)?;
                whens.push((w, t));
            }
            let el = else_result
                .as_ref()
                .map(|e| expr(cx, e))
                .transpose()?
                .map(Box::new);
            Expr::Case(op, whens, el)
        }
        E::Function(f) => function(cx, f)?,
        E::Cast {
            expr: x,
            data_type,
            format,
            ..
        } => {
            if format.is_some() {
                return Err(unsupported("CAST ... FORMAT"));
            }
            let x = expr(cx, x)?;
            Expr::Cast(b(x), cast_type(data_type)?)
        }
        E::Convert {
            expr: x, data_type, ..
        } => {
            let x = expr(cx, x)?;
            match data_type {
                Some(dt) => Expr::Cast(b(x), cast_type(dt)?),
                None => x,
            }
        }
        E::Substring {
            expr: x,
            substring_from,
            substring_for,
            ..
        } => {
            let mut args = vec![expr(cx, x)?];
            args.push(match substring_from {
                Some(f) => expr(cx, f)?,
                None => Expr::Literal(Value::Int(1)),
            });
            if let Some(n) = substring_for {
                args.push(expr(cx, n)?);
            }
            Expr::Function("SUBSTRING".into(), args)
        }
        E::Trim {
            expr: x,
            trim_where,
            trim_what,
            trim_characters,
        } => {
            if trim_characters.is_some() {
                return Err(unsupported("TRIM with a character list"));
            }
            let x = expr(cx, x)?;
            let mode = match trim_where {
                None | Some(sp::TrimWhereField::Both) => 0,
                Some(sp::TrimWhereField::Leading) => 1,
                Some(sp::TrimWhereField::Trailing) => 2,
            };
            let mut args = vec![x, Expr::Literal(Value::Int(mode))];
            if let Some(w) = trim_what {
                args.push(expr(cx, w)?);
            }
            Expr::Function("TRIM".into(), args)
        }
        E::Ceil { expr: x, .. } => Expr::Function("CEIL".into(), vec![expr(cx, x)?]),
        E::Floor { expr: x, .. } => Expr::Function("FLOOR".into(), vec![expr(cx, x)?]),
        E::IsDistinctFrom(a, c) => {
            let x = expr(cx, a)?;
            let y = expr(cx, c)?;
            Expr::Unary(UnOp::Not, b(Expr::Binary(BinOp::NullSafeEq, b(x), b(y))))
        }
        E::IsNotDistinctFrom(a, c) => {
            let x = expr(cx, a)?;
            let y = expr(cx, c)?;
            Expr::Binary(BinOp::NullSafeEq, b(x), b(y))
        }
        E::Subquery(q) => cx.subquery(SubqueryKind::Scalar, q)?,
        E::Exists { subquery, negated } => {
            let e = cx.subquery(SubqueryKind::Exists, subquery)?;
            if *negated {
                Expr::Unary(UnOp::Not, b(e))
            } else {
                e
            }
        }
        E::AnyOp {
            left,
            compare_op,
            right,
            ..
        }
        | E::AllOp {
            left,
            compare_op,
            right,
        } => {
            let all = matches!(e, E::AllOp { .. });
            let sp::Expr::Subquery(q) = right.as_ref() else {
                return Err(unsupported("ANY/ALL over an array"));
            };
            use sp::BinaryOperator as O;
            let op = match compare_op {
                O::Eq => BinOp::Eq,
                O::NotEq => BinOp::NotEq,
                O::Lt => BinOp::Lt,
                O::LtEq => BinOp::LtEq,
                O::Gt => BinOp::Gt,
                O::GtEq => BinOp::GtEq,
                other => return Err(unsupported(format!("{other} ANY/ALL"))),
            };
            let operand = expr(cx, left)?;
            cx.subquery(SubqueryKind::Compare { operand, op, all }, q)?
        }
        E::Tuple(v) => return Err(SqlError::OperandColumns(v.len().min(1))),
        // An interval only exists beside a date (`d + INTERVAL ..`, DATE_ADD): MySQL's 1064.
        E::Interval(_) => return Err(SqlError::Syntax(e.to_string())),
        E::Extract { field, expr: x, .. } => {
            let unit = field_unit(field)?;
            Expr::Function("EXTRACT".into(), vec![unit_literal(unit), expr(cx, x)?])
        }
        E::Position { expr: needle, r#in } => {
            let n = expr(cx, needle)?;
            let h = expr(cx, r#in)?;
            Expr::Function("LOCATE".into(), vec![n, h])
        }
        other => return Err(unsupported(other.to_string())),
    })
}

/// The bytes of a hex literal (`X'hh..'` or `0xhh..`), a binary string. A character that is not a hex
/// digit (only `X'..'` can hold one: sqlparser ends `0x..` at the first) is a syntax error as in
/// MySQL, never a slice inside a multi-byte character. An odd digit count reads as if led by
/// `0`, as MySQL reads `0xabc`.
pub fn hex_literal(h: &str) -> Result<Vec<u8>, SqlError> {
    let digits = h.as_bytes();
    if !digits.iter().all(u8::is_ascii_hexdigit) {
        return Err(SqlError::Syntax(format!("X'{h}'")));
    }
    let nibble = |c: u8| (c as char).to_digit(16).unwrap_or(0) as u8;
    let (head, rest) = digits.split_at(digits.len() % 2);
    let bytes: Vec<u8> = head
        .iter()
        .map(|&c| nibble(c))
        .chain(rest.chunks(2).map(|p| nibble(p[0]) << 4 | nibble(p[1])))
        .collect();
    Ok(bytes)
}

/// The fractional-seconds precision of a temporal CAST target written `T(n)`: 0 without one,
/// 1426 past 6 (MariaDB's limit).
fn cast_fsp(s: &str) -> Result<u8, SqlError> {
    let Some(inside) = s
        .split_once('(')
        .map(|(_, r)| r.trim_end_matches(')').trim())
    else {
        return Ok(0);
    };
    match inside.parse::<u64>() {
        Ok(n) if n <= 6 => Ok(n as u8),
        Ok(n) => Err(SqlError::coded(
            shoal_errors::ER_TOO_BIG_PRECISION,
            format!("Too big precision {n} specified for 'CAST'. Maximum is 6"),
        )),
        Err(_) => Err(SqlError::Syntax(format!("CAST AS {s}"))),
    }
}

/// The target type of `CAST(.. AS t)` / `CONVERT(.., t)`; DECIMAL scale over 30 is 1425.
pub fn cast_type(dt: &sp::DataType) -> Result<CastType, SqlError> {
    let s = dt.to_string().to_ascii_uppercase();
    let base = s.split('(').next().unwrap_or("").trim().to_string();
    Ok(match base.as_str() {
        "SIGNED" | "SIGNED INTEGER" | "INT" | "INTEGER" | "BIGINT" => CastType::Signed,
        "UNSIGNED" | "UNSIGNED INTEGER" | "INT UNSIGNED" | "BIGINT UNSIGNED" => CastType::Unsigned,
        "CHAR" | "VARCHAR" | "NCHAR" | "TEXT" | "CHARACTER" => CastType::Char,
        "BINARY" => match dt {
            sp::DataType::Binary(Some(n)) => {
                CastType::BinaryN(u32::try_from(*n).unwrap_or(u32::MAX))
            }
            _ => CastType::Binary,
        },
        "VARBINARY" | "BLOB" => CastType::Binary,
        "DOUBLE" | "FLOAT" | "REAL" | "DOUBLE PRECISION" => CastType::Double,
        "DATE" => CastType::Date,
        "DATETIME" | "TIMESTAMP" => CastType::DateTime(cast_fsp(&s)?),
        "TIME" => CastType::Time(cast_fsp(&s)?),
        "DECIMAL" | "NUMERIC" | "DEC" => {
            let scale = s
                .split(',')
                .nth(1)
                .and_then(|x| x.trim_end_matches(')').trim().parse::<u8>().ok())
                .unwrap_or(0);
            if scale > 30 {
                return Err(SqlError::coded(
                    shoal_errors::ER_TOO_BIG_SCALE,
                    format!("Too big scale {scale} specified. Maximum is 30."),
                ));
            }
            CastType::Decimal(scale)
        }
        _ => return Err(unsupported(format!("CAST AS {s}"))),
    })
}

/// A numeric literal: BIGINT if it fits, BIGINT UNSIGNED if it fits that, DECIMAL for a fraction
/// or a longer integer, DOUBLE with an exponent.
pub fn number_literal(n: &str) -> Result<Value, SqlError> {
    if n.contains(['e', 'E']) {
        return n
            .parse::<f64>()
            .map(Value::Double)
            .map_err(|_| SqlError::Syntax(n.into()));
    }
    if !n.contains('.') {
        if let Ok(i) = n.parse::<i64>() {
            return Ok(Value::Int(i));
        }
        if let Ok(u) = n.parse::<u64>() {
            return Ok(Value::UInt(u));
        }
    }
    match Decimal::parse(n) {
        Some(d) => Ok(Value::Decimal(d)),
        None => n
            .parse::<f64>()
            .map(Value::Double)
            .map_err(|_| SqlError::Syntax(n.into())),
    }
}
