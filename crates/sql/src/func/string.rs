//! String functions: searching (INSTR, LOCATE, FIELD, FIND_IN_SET, SUBSTRING_INDEX, STRCMP),
//! building (REVERSE, SPACE, CHAR, ELT, INSERT, QUOTE, FORMAT, SOUNDEX), codes (ASCII, ORD)
//! and encodings (UNHEX, BIN, OCT, CONV, TO_BASE64, FROM_BASE64).
//!
//! Positions are characters; comparisons are case-insensitive as utf8mb4_general_ci (LOCATE,
//! INSTR, FIELD, FIND_IN_SET, STRCMP) except SUBSTRING_INDEX, which MySQL matches exactly.
//! Searching folds both strings once, one character to one character so positions agree, and
//! uses the standard library's linear-time substring search. Functions that build bytes
//! (CHAR, UNHEX, FROM_BASE64) return binary strings, as MySQL's do. Binary string arguments
//! are handled by `bytes.rs` before these run. Results that could grow past
//! `max_allowed_packet` (SPACE, INSERT) are NULL with warning 1301 like CONCAT.

use std::cmp::Ordering;

use base64::Engine;

use super::arity;
use crate::ast::Expr;
use crate::decimal::Decimal;
use crate::error::SqlError;
use crate::eval::{over_packet, Context};
use crate::value::{collate_cmp, compare, format_double, SqlType, Value};

/// `s` with each character folded to one lower-case character (so character positions hold).
fn fold(s: &str) -> Vec<char> {
    s.chars()
        .map(|c| c.to_lowercase().next().unwrap_or(c))
        .collect()
}

/// LOCATE(needle, hay, pos): the 1-based character position of the first case-insensitive
/// match at or after character `pos`, 0 if none.
fn locate(needle: &str, hay: &str, pos: Option<i128>) -> i64 {
    let start = match pos {
        None => 0,
        Some(p) if p < 1 => return 0,
        Some(p) => p - 1,
    };
    if needle.is_empty() {
        // MariaDB's answer for an empty needle: the byte offset of the start position plus
        // one, 0 when it lies at or past the end (of the bytes).
        return match pos {
            None => 1,
            Some(_) if start >= hay.len() as i128 => 0,
            Some(_) => hay
                .char_indices()
                .nth(start as usize)
                .map_or(0, |(b, _)| b as i64 + 1),
        };
    }
    let h: String = fold(hay).into_iter().collect();
    let n: String = fold(needle).into_iter().collect();
    let Some((byte_start, _)) = h.char_indices().nth(start.min(usize::MAX as i128) as usize) else {
        return 0;
    };
    match h[byte_start..].find(&n) {
        Some(b) => (h[..byte_start + b].chars().count() + 1) as i64,
        None => 0,
    }
}

/// SUBSTRING_INDEX(s, delim, count), exact matching.
fn substring_index(s: &str, delim: &str, count: i128) -> String {
    if delim.is_empty() || count == 0 {
        return String::new();
    }
    if count > 0 {
        let mut end = 0usize;
        let mut from = 0usize;
        let mut left = count;
        while let Some(i) = s[from..].find(delim) {
            end = from + i;
            left -= 1;
            if left == 0 {
                return s[..end].to_string();
            }
            from = end + delim.len();
        }
        let _ = end;
        s.to_string()
    } else {
        let mut to = s.len();
        let mut left = count;
        while let Some(i) = s[..to].rfind(delim) {
            left += 1;
            if left == 0 {
                return s[i + delim.len()..].to_string();
            }
            to = i;
        }
        s.to_string()
    }
}

/// QUOTE(s): a single-quoted SQL literal (`\`, `'`, NUL and Ctrl-Z escaped).
fn quote(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('\'');
    for c in s.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '\'' => out.push_str("\\'"),
            '\0' => out.push_str("\\0"),
            '\u{1a}' => out.push_str("\\Z"),
            c => out.push(c),
        }
    }
    out.push('\'');
    out
}

/// The digits of `v` in base `radix` (2-36), upper case.
fn to_radix(mut v: u64, radix: u64) -> String {
    const DIGITS: &[u8; 36] = b"0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ";
    if v == 0 {
        return "0".into();
    }
    let mut out = Vec::new();
    while v > 0 {
        out.push(DIGITS[(v % radix) as usize]);
        v /= radix;
    }
    out.reverse();
    String::from_utf8(out).unwrap_or_default()
}

/// CONV(s, from, to) as MySQL: `s` read in base |from| up to the first other character
/// (signed when `from` < 0, saturating), printed in base |to| (signed when `to` < 0); NULL for
/// bases outside 2-36.
fn conv(s: &str, from: i128, to: i128) -> Option<String> {
    let (fb, tb) = (from.unsigned_abs(), to.unsigned_abs());
    if !(2..=36).contains(&fb) || !(2..=36).contains(&tb) {
        return None;
    }
    let t = s.trim_start();
    let (neg, digits) = match t.as_bytes().first() {
        Some(b'-') => (true, &t[1..]),
        Some(b'+') => (false, &t[1..]),
        _ => (false, t),
    };
    let mut v: u128 = 0;
    let mut overflow = false;
    for c in digits.chars() {
        let Some(d) = c.to_digit(36).filter(|d| (*d as u128) < fb) else {
            break;
        };
        v = v * fb + d as u128;
        if v > u64::MAX as u128 {
            overflow = true;
            v = u64::MAX as u128;
        }
    }
    let dec: u64 = if from < 0 {
        // my_strntoll: saturates to the signed range.
        let i: i128 = if neg { -(v as i128) } else { v as i128 };
        let i = if overflow {
            if neg {
                i64::MIN as i128
            } else {
                i64::MAX as i128
            }
        } else {
            i.clamp(i64::MIN as i128, i64::MAX as i128)
        };
        i as i64 as u64
    } else if overflow {
        u64::MAX
    } else if neg {
        (v as u64).wrapping_neg()
    } else {
        v as u64
    };
    Some(if to < 0 && (dec as i64) < 0 {
        format!("-{}", to_radix((dec as i64).unsigned_abs(), tb as u64))
    } else {
        to_radix(dec, tb as u64)
    })
}

/// FORMAT(x, d): rounded to `d` places (0-38) with `,` between thousands.
fn format_number(v: &Value, d: i128) -> String {
    let d = d.clamp(0, 38) as u32;
    let exact = match v {
        Value::Int(_) | Value::UInt(_) | Value::Decimal(_) => v.to_decimal(),
        other => {
            let f = other.to_f64().unwrap_or(0.0);
            if f.is_finite() && f.abs() < 1e15 {
                Decimal::parse(&format_double(f))
            } else if f.is_finite() && f.abs() < 1e30 {
                Decimal::parse(&format!("{f:.0}"))
            } else {
                None
            }
        }
    };
    let text = match exact.and_then(|x| x.rescale(d)) {
        Some(x) => x.to_string(),
        None => format!("{:.*}", d as usize, v.to_f64().unwrap_or(0.0)),
    };
    let (sign, body) = match text.strip_prefix('-') {
        Some(b) => ("-", b),
        None => ("", text.as_str()),
    };
    let (int, frac) = match body.split_once('.') {
        Some((i, f)) => (i, Some(f)),
        None => (body, None),
    };
    let mut grouped = String::with_capacity(int.len() + int.len() / 3);
    for (i, c) in int.chars().enumerate() {
        if i > 0 && (int.len() - i) % 3 == 0 {
            grouped.push(',');
        }
        grouped.push(c);
    }
    let mut out = format!("{sign}{grouped}");
    if let Some(f) = frac {
        out.push('.');
        out.push_str(f);
    }
    out
}

/// SOUNDEX as MySQL computes it: the first letter, then the codes of the following letters
/// (vowels and H, W, Y dropped, repeats collapsed), padded with 0 to at least four characters.
fn soundex(s: &str) -> String {
    const MAP: &[u8; 26] = b"01230120022455012623010202";
    let code = |c: u8| MAP[(c.to_ascii_uppercase() - b'A') as usize];
    let mut letters = s.bytes().filter(u8::is_ascii_alphabetic);
    let Some(first) = letters.next() else {
        return String::new();
    };
    let mut out = vec![first.to_ascii_uppercase()];
    let mut last = code(first);
    for c in letters {
        let ch = code(c);
        if ch != b'0' && ch != last {
            out.push(ch);
            last = ch;
        }
    }
    while out.len() < 4 {
        out.push(b'0');
    }
    String::from_utf8(out).unwrap_or_default()
}

/// FIELD's comparison: as strings when every argument is a string, as numbers when every one
/// is a number, else as doubles (MySQL).
fn field(vals: &[Value]) -> i64 {
    if vals[0].is_null() {
        return 0;
    }
    let strings = vals
        .iter()
        .all(|v| matches!(v, Value::Null | Value::Str(_) | Value::Bytes(_)));
    let numbers = vals.iter().all(|v| {
        matches!(
            v,
            Value::Null | Value::Int(_) | Value::UInt(_) | Value::Decimal(_) | Value::Double(_)
        )
    });
    for (i, v) in vals.iter().enumerate().skip(1) {
        if v.is_null() {
            continue;
        }
        let eq = if strings && (vals[0].is_bytes() || v.is_bytes()) {
            compare(&vals[0], v) == Some(Ordering::Equal)
        } else if strings {
            collate_cmp(
                &vals[0].to_text().unwrap_or_default(),
                &v.to_text().unwrap_or_default(),
            ) == Ordering::Equal
        } else if numbers {
            compare(&vals[0], v) == Some(Ordering::Equal)
        } else {
            vals[0].to_f64() == v.to_f64()
        };
        if eq {
            return i as i64;
        }
    }
    0
}

pub(super) fn call(
    name: &str,
    args: &[Expr],
    vals: &[Value],
    ctx: &mut dyn Context,
) -> Result<Option<Value>, SqlError> {
    let any_null = vals.iter().any(Value::is_null);
    let s = |i: usize| vals[i].to_text().unwrap_or_default();
    let int = |i: usize| vals[i].to_i128().unwrap_or(0);
    Ok(Some(match name {
        "INSTR" | "LOCATE" => {
            if name == "INSTR" {
                arity(name, args, 2, 2)?;
            } else {
                arity(name, args, 2, 3)?;
            }
            if any_null {
                Value::Null
            } else if name == "INSTR" {
                Value::Int(locate(&s(1), &s(0), None))
            } else {
                Value::Int(locate(&s(0), &s(1), (args.len() == 3).then(|| int(2))))
            }
        }
        "REVERSE" => {
            arity(name, args, 1, 1)?;
            match vals[0].to_text() {
                Some(t) => Value::Str(t.chars().rev().collect()),
                None => Value::Null,
            }
        }
        "SPACE" => {
            arity(name, args, 1, 1)?;
            if any_null {
                Value::Null
            } else {
                let n = int(0).clamp(0, i32::MAX as i128) as usize;
                if over_packet(ctx, "space", n as u128) {
                    Value::Null
                } else {
                    Value::Str(" ".repeat(n))
                }
            }
        }
        "ASCII" => {
            arity(name, args, 1, 1)?;
            match vals[0].to_text() {
                Some(t) => Value::Int(t.bytes().next().unwrap_or(0) as i64),
                None => Value::Null,
            }
        }
        "ORD" => {
            arity(name, args, 1, 1)?;
            match vals[0].to_text() {
                Some(t) => {
                    let mut buf = [0u8; 4];
                    let first = t.chars().next().map(|c| c.encode_utf8(&mut buf).len());
                    let n = buf[..first.unwrap_or(0)]
                        .iter()
                        .fold(0i64, |v, b| v * 256 + *b as i64);
                    Value::Int(n)
                }
                None => Value::Null,
            }
        }
        "CHAR" => {
            if args.is_empty() {
                return Err(SqlError::Syntax("CHAR()".into()));
            }
            // Each argument's integer as its big-endian bytes without leading zeros; NULLs
            // are skipped.
            let mut bytes = Vec::new();
            for v in vals {
                let Some(n) = v.to_i128() else {
                    continue;
                };
                let n = n as i64 as u32;
                let b = n.to_be_bytes();
                let skip = b.iter().take_while(|x| **x == 0).count().min(3);
                bytes.extend_from_slice(&b[skip..]);
            }
            Value::Bytes(bytes)
        }
        "FIELD" => {
            if args.len() < 2 {
                return Err(SqlError::ParamCount("field".into()));
            }
            Value::Int(field(vals))
        }
        "FIND_IN_SET" => {
            arity(name, args, 2, 2)?;
            if any_null {
                Value::Null
            } else {
                let (needle, list) = (s(0), s(1));
                if needle.contains(',') {
                    Value::Int(0)
                } else {
                    let pos = list
                        .split(',')
                        .position(|item| collate_cmp(item, &needle) == Ordering::Equal);
                    Value::Int(match pos {
                        Some(p) if !list.is_empty() => p as i64 + 1,
                        _ => 0,
                    })
                }
            }
        }
        "ELT" => {
            if args.len() < 2 {
                return Err(SqlError::ParamCount("elt".into()));
            }
            match vals[0].to_i128() {
                Some(n) if n >= 1 && (n as usize) < vals.len() => {
                    match vals[n as usize].to_text() {
                        Some(t) => Value::Str(t),
                        None => Value::Null,
                    }
                }
                _ => Value::Null,
            }
        }
        "INSERT" => {
            arity(name, args, 4, 4)?;
            if any_null {
                Value::Null
            } else {
                let (t, pos, len, new) = (s(0), int(1), int(2), s(3));
                let n = t.chars().count() as i128;
                if pos < 1 || pos > n {
                    Value::Str(t)
                } else {
                    let start = (pos - 1) as usize;
                    let len = if len < 0 || len > n - pos + 1 {
                        (n - pos + 1) as usize
                    } else {
                        len as usize
                    };
                    let head: String = t.chars().take(start).collect();
                    let tail: String = t.chars().skip(start + len).collect();
                    if over_packet(ctx, "insert", (head.len() + new.len() + tail.len()) as u128) {
                        Value::Null
                    } else {
                        Value::Str(format!("{head}{new}{tail}"))
                    }
                }
            }
        }
        "STRCMP" => {
            arity(name, args, 2, 2)?;
            if any_null {
                Value::Null
            } else {
                Value::Int(match collate_cmp(&s(0), &s(1)) {
                    Ordering::Less => -1,
                    Ordering::Equal => 0,
                    Ordering::Greater => 1,
                })
            }
        }
        "SUBSTRING_INDEX" => {
            arity(name, args, 3, 3)?;
            if any_null {
                Value::Null
            } else {
                Value::Str(substring_index(&s(0), &s(1), int(2)))
            }
        }
        "QUOTE" => {
            arity(name, args, 1, 1)?;
            match vals[0].to_text() {
                Some(t) => Value::Str(quote(&t)),
                None => Value::Str("NULL".into()),
            }
        }
        "UNHEX" => {
            arity(name, args, 1, 1)?;
            match vals[0].to_text() {
                None => Value::Null,
                Some(t) => {
                    let b = t.as_bytes();
                    if !b.iter().all(u8::is_ascii_hexdigit) {
                        Value::Null
                    } else {
                        let nib = |c: u8| (c as char).to_digit(16).unwrap_or(0) as u8;
                        let (head, rest) = b.split_at(b.len() % 2);
                        let bytes: Vec<u8> = head
                            .iter()
                            .map(|&c| nib(c))
                            .chain(rest.chunks(2).map(|p| nib(p[0]) << 4 | nib(p[1])))
                            .collect();
                        Value::Bytes(bytes)
                    }
                }
            }
        }
        "BIN" | "OCT" => {
            arity(name, args, 1, 1)?;
            match vals[0].to_text() {
                None => Value::Null,
                Some(t) => {
                    let to = if name == "BIN" { 2 } else { 8 };
                    conv(&t, 10, to).map(Value::Str).unwrap_or(Value::Null)
                }
            }
        }
        "CONV" => {
            arity(name, args, 3, 3)?;
            if any_null {
                Value::Null
            } else {
                // A number is read by its integer text (CONV(10.9, 10, 2) reads "10").
                let t = match &vals[0] {
                    Value::Decimal(d) => d.trunc().to_string(),
                    Value::Double(f) => format!("{}", f.trunc() as i128),
                    other => other.to_text().unwrap_or_default(),
                };
                conv(&t, int(1), int(2))
                    .map(Value::Str)
                    .unwrap_or(Value::Null)
            }
        }
        "TO_BASE64" => {
            arity(name, args, 1, 1)?;
            match vals[0].to_bytes() {
                None => Value::Null,
                Some(t) => {
                    let enc = base64::engine::general_purpose::STANDARD.encode(&t);
                    if over_packet(ctx, "to_base64", enc.len() as u128 * 77 / 76) {
                        Value::Null
                    } else {
                        // MySQL breaks the text into lines of 76 characters.
                        let lines: Vec<&str> = enc
                            .as_bytes()
                            .chunks(76)
                            .map(|c| std::str::from_utf8(c).unwrap_or_default())
                            .collect();
                        Value::Str(lines.join("\n"))
                    }
                }
            }
        }
        "FROM_BASE64" => {
            arity(name, args, 1, 1)?;
            match vals[0].to_text() {
                None => Value::Null,
                Some(t) => {
                    let compact: String = t.chars().filter(|c| !c.is_ascii_whitespace()).collect();
                    match base64::engine::general_purpose::STANDARD.decode(compact.as_bytes()) {
                        Ok(b) => Value::Bytes(b),
                        Err(_) => Value::Null,
                    }
                }
            }
        }
        "FORMAT" => {
            arity(name, args, 2, 3)?;
            if vals[0].is_null() || vals[1].is_null() {
                Value::Null
            } else {
                if args.len() == 3 {
                    let loc = vals[2].to_text().unwrap_or_else(|| "en_US".into());
                    if !loc.eq_ignore_ascii_case("en_US") {
                        return Err(SqlError::Unsupported(format!("FORMAT locale '{loc}'")));
                    }
                }
                Value::Str(format_number(&vals[0], int(1)))
            }
        }
        "SOUNDEX" => {
            arity(name, args, 1, 1)?;
            match vals[0].to_text() {
                Some(t) => Value::Str(soundex(&t)),
                None => Value::Null,
            }
        }
        _ => return Ok(None),
    }))
}

/// Whether argument `i` of the function `name` is read as a string (MariaDB's `val_str`), so a
/// FLOAT there shows a FLOAT's text (`CastType::FloatText`), not a double's 17 digits. The
/// other arguments (lengths, positions, counts) and the functions that compare (FIELD, IN) or
/// compute (HEX of a number) read numbers.
pub fn reads_text(name: &str, i: usize) -> bool {
    match name {
        "CONCAT" | "CONCAT_WS" | "LENGTH" | "OCTET_LENGTH" | "CHAR_LENGTH" | "CHARACTER_LENGTH"
        | "BIT_LENGTH" | "UPPER" | "UCASE" | "LOWER" | "LCASE" | "REVERSE" | "TRIM" | "LTRIM"
        | "RTRIM" | "REPLACE" | "STRCMP" | "SOUNDEX" | "QUOTE" | "ASCII" | "ORD" | "MD5"
        | "SHA" | "SHA1" | "TO_BASE64" | "CRC32" | "FIND_IN_SET" | "INSTR" => true,
        "SUBSTRING" | "SUBSTR" | "MID" | "LEFT" | "RIGHT" | "REPEAT" | "SHA2" => i == 0,
        "LOCATE" | "POSITION" | "SUBSTRING_INDEX" => i < 2,
        "LPAD" | "RPAD" => i != 1,
        "INSERT" => i == 0 || i == 3,
        "ELT" => i > 0,
        _ => false,
    }
}

pub(super) fn static_type(name: &str) -> Option<SqlType> {
    Some(match name {
        "INSTR" | "LOCATE" | "ASCII" | "ORD" | "FIELD" | "FIND_IN_SET" | "STRCMP" => SqlType::Int,
        "REVERSE" | "SPACE" | "ELT" | "INSERT" | "SUBSTRING_INDEX" | "QUOTE" | "BIN" | "OCT"
        | "CONV" | "TO_BASE64" | "FORMAT" | "SOUNDEX" => SqlType::Str,
        "CHAR" | "UNHEX" | "FROM_BASE64" => SqlType::Bytes,
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn conv_as_mysql() {
        assert_eq!(conv("a", 16, 2).as_deref(), Some("1010"));
        assert_eq!(conv("6E", 18, 8).as_deref(), Some("172"));
        assert_eq!(conv("-17", 10, -18).as_deref(), Some("-H"));
        assert_eq!(conv("-1", 10, 16).as_deref(), Some("FFFFFFFFFFFFFFFF"));
        assert_eq!(conv("1", 1, 10), None);
        assert_eq!(
            conv("99999999999999999999999", 10, 10).as_deref(),
            Some("18446744073709551615")
        );
    }

    #[test]
    fn locate_and_substring_index() {
        assert_eq!(locate("B", "abcb", None), 2);
        assert_eq!(locate("b", "abcb", Some(3)), 4);
        assert_eq!(locate("x", "é", Some(i128::MAX)), 0);
        assert_eq!(substring_index("www.mysql.com", ".", 2), "www.mysql");
        assert_eq!(substring_index("www.mysql.com", ".", -2), "mysql.com");
        assert_eq!(substring_index("a", ".", i128::MIN), "a");
    }
}
