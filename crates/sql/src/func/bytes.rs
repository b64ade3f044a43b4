//! String functions over binary strings ([`Value::Bytes`]): MySQL's `binary` character set,
//! where a character is a byte and comparison is exact.
//!
//! [`crate::eval`] hands a call here first when one of its evaluated arguments is a binary
//! string. The answers follow MySQL/MariaDB: a function that builds a string from string
//! arguments (CONCAT, CONCAT_WS, REPLACE, LPAD/RPAD, INSERT, TRIM) returns a binary string when
//! any of them is binary; one that takes a string apart (SUBSTRING, LEFT, RIGHT, REVERSE,
//! SUBSTRING_INDEX, QUOTE) counts bytes and returns bytes when its subject is binary;
//! LENGTH and CHAR_LENGTH of a binary string are both its byte count; UPPER/LOWER leave it
//! unchanged (case has no meaning in the binary charset); searching and comparing (LOCATE,
//! INSTR, STRCMP, FIND_IN_SET) is exact, byte positions. Substring search is `memchr::memmem`
//! (linear, vectorised). Hashing, HEX and LIKE take the raw bytes in their own homes
//! (`hash.rs`, `eval.rs`), FIELD compares with [`crate::value::compare`] (binary when a side
//! is). The functions left to their text implementations read a binary argument only as a
//! number or a date (positions, counts, `FORMAT`, `CONV`, date parts), where the digits are
//! ASCII and a lossy view of the bytes reads the same.

use std::borrow::Cow;

use memchr::memmem;

use super::arity;
use crate::ast::Expr;
use crate::error::SqlError;
use crate::eval::{over_packet, Context};
use crate::value::Value;

/// The bytes of argument `i`'s string form (empty for NULL).
fn b<'v>(vals: &'v [Value], i: usize) -> Cow<'v, [u8]> {
    vals[i].to_bytes().unwrap_or_default()
}

/// An integer argument as a count: negative values are 0, huge ones saturate.
fn count(v: &Value) -> usize {
    usize::try_from(v.to_i128().unwrap_or(0).max(0)).unwrap_or(usize::MAX)
}

/// The byte range `SUBSTRING(s, pos[, len])` takes from `n` bytes (MySQL's positions: 1-based,
/// negative from the end, 0 or outside the string is empty, any i128 safe).
fn sub_range(n: usize, pos: i128, len: Option<i128>) -> (usize, usize) {
    let n = n as i128;
    let start = match pos {
        p if p > 0 => p - 1,
        p if p < 0 => n.saturating_add(p),
        _ => return (0, 0),
    };
    if start < 0 || start >= n {
        return (0, 0);
    }
    let take = match len {
        Some(l) if l <= 0 => return (0, 0),
        Some(l) => l.min(n - start),
        None => n - start,
    };
    (start as usize, (start + take) as usize)
}

/// LOCATE(needle, hay[, pos]) over bytes: the 1-based byte position of the first exact match at
/// or after `pos`, 0 if none.
fn locate(needle: &[u8], hay: &[u8], pos: Option<i128>) -> i64 {
    let start = match pos {
        None => 0,
        Some(p) if p < 1 => return 0,
        Some(p) => p - 1,
    };
    if start > hay.len() as i128 {
        return 0;
    }
    let start = start as usize;
    if needle.is_empty() {
        return if pos.is_some() && start >= hay.len() {
            0
        } else {
            start as i64 + 1
        };
    }
    memmem::find(&hay[start..], needle).map_or(0, |i| (start + i) as i64 + 1)
}

/// `hay` with every `from` replaced by `to`.
fn replace(hay: &[u8], from: &[u8], to: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(hay.len());
    let mut last = 0;
    for i in memmem::find_iter(hay, from) {
        if i < last {
            continue;
        }
        out.extend_from_slice(&hay[last..i]);
        out.extend_from_slice(to);
        last = i + from.len();
    }
    out.extend_from_slice(&hay[last..]);
    out
}

/// SUBSTRING_INDEX over bytes: the part before the `count`-th `delim` (from the end when
/// negative).
fn substring_index(s: &[u8], delim: &[u8], count: i128) -> Vec<u8> {
    if delim.is_empty() || count == 0 {
        return Vec::new();
    }
    if count > 0 {
        let mut from = 0;
        let mut left = count;
        while let Some(i) = memmem::find(&s[from..], delim) {
            left -= 1;
            if left == 0 {
                return s[..from + i].to_vec();
            }
            from += i + delim.len();
        }
        s.to_vec()
    } else {
        let mut to = s.len();
        let mut left = count;
        while let Some(i) = memmem::rfind(&s[..to], delim) {
            left += 1;
            if left == 0 {
                return s[i + delim.len()..].to_vec();
            }
            to = i;
        }
        s.to_vec()
    }
}

/// A result of `len` bytes, or NULL with warning 1301 past `max_allowed_packet`.
fn built(ctx: &mut dyn Context, func: &str, out: impl FnOnce() -> Vec<u8>, len: u128) -> Value {
    if over_packet(ctx, func, len) {
        Value::Null
    } else {
        Value::Bytes(out())
    }
}

/// Evaluates `name` when one of `vals` is a binary string; `Ok(None)`: not a function this
/// module answers (the text implementation then runs).
pub(crate) fn call(
    name: &str,
    args: &[Expr],
    vals: &[Value],
    ctx: &mut dyn Context,
) -> Result<Option<Value>, SqlError> {
    let any_null = vals.iter().any(Value::is_null);
    // Whether the subject (the first argument) is binary.
    let subject = vals.first().is_some_and(Value::is_bytes);
    let int = |i: usize| vals[i].to_i128().unwrap_or(0);
    Ok(Some(match name {
        "CONCAT" => {
            if any_null || vals.is_empty() {
                return Ok(None);
            }
            let len: usize = vals
                .iter()
                .map(|v| v.to_bytes().map_or(0, |x| x.len()))
                .sum();
            built(
                ctx,
                "concat",
                || {
                    vals.iter()
                        .flat_map(|v| v.to_bytes().unwrap_or_default().into_owned())
                        .collect()
                },
                len as u128,
            )
        }
        "CONCAT_WS" => {
            if vals.len() < 2 || vals[0].is_null() {
                return Ok(None);
            }
            let sep = b(vals, 0);
            let parts: Vec<Cow<[u8]>> = vals[1..].iter().filter_map(Value::to_bytes).collect();
            let len = parts.iter().map(|p| p.len() as u128).sum::<u128>()
                + sep.len() as u128 * parts.len().saturating_sub(1) as u128;
            built(ctx, "concat_ws", || parts.join(sep.as_ref()), len)
        }
        "LENGTH" | "OCTET_LENGTH" | "CHAR_LENGTH" | "CHARACTER_LENGTH" if subject => {
            arity(name, args, 1, 1)?;
            Value::Int(b(vals, 0).len() as i64)
        }
        "UPPER" | "UCASE" | "LOWER" | "LCASE" if subject => {
            arity(name, args, 1, 1)?;
            vals[0].clone()
        }
        "SUBSTRING" | "SUBSTR" | "MID" if subject => {
            arity(name, args, 2, 3)?;
            if any_null {
                Value::Null
            } else {
                let s = b(vals, 0);
                let (a, z) = sub_range(s.len(), int(1), (args.len() == 3).then(|| int(2)));
                Value::Bytes(s[a..z].to_vec())
            }
        }
        "LEFT" | "RIGHT" if subject => {
            arity(name, args, 2, 2)?;
            if any_null {
                Value::Null
            } else {
                let s = b(vals, 0);
                let n = count(&vals[1]).min(s.len());
                Value::Bytes(if name == "LEFT" {
                    s[..n].to_vec()
                } else {
                    s[s.len() - n..].to_vec()
                })
            }
        }
        "REVERSE" if subject => {
            arity(name, args, 1, 1)?;
            Value::Bytes(b(vals, 0).iter().rev().copied().collect())
        }
        "TRIM" | "LTRIM" | "RTRIM" => {
            arity(name, args, 1, 3)?;
            if any_null {
                Value::Null
            } else {
                let mode = match name {
                    "LTRIM" => 1,
                    "RTRIM" => 2,
                    _ if args.len() >= 2 => int(1),
                    _ => 0,
                };
                let rem: Cow<[u8]> = if args.len() == 3 {
                    b(vals, 2)
                } else {
                    Cow::Borrowed(b" ")
                };
                let t = b(vals, 0);
                let (mut a, mut z) = (0, t.len());
                if !rem.is_empty() {
                    if mode == 0 || mode == 1 {
                        while t[a..z].starts_with(&rem) {
                            a += rem.len();
                        }
                    }
                    if mode == 0 || mode == 2 {
                        while t[a..z].ends_with(&rem) {
                            z -= rem.len();
                        }
                    }
                }
                Value::Bytes(t[a..z].to_vec())
            }
        }
        "REPLACE" => {
            arity(name, args, 3, 3)?;
            if any_null {
                Value::Null
            } else {
                let (t, from, to) = (b(vals, 0), b(vals, 1), b(vals, 2));
                if from.is_empty() {
                    Value::Bytes(t.into_owned())
                } else {
                    let hits = memmem::find_iter(&t, from.as_ref()).count() as u128;
                    let len = t.len() as u128 - hits * from.len() as u128 + hits * to.len() as u128;
                    built(ctx, "replace", || replace(&t, &from, &to), len)
                }
            }
        }
        "REPEAT" if subject => {
            arity(name, args, 2, 2)?;
            if any_null {
                Value::Null
            } else {
                let n = count(&vals[1]).min(i32::MAX as usize);
                let t = b(vals, 0);
                built(ctx, "repeat", || t.repeat(n), t.len() as u128 * n as u128)
            }
        }
        "LPAD" | "RPAD" => {
            arity(name, args, 3, 3)?;
            if any_null || int(1) < 0 {
                Value::Null
            } else {
                let (s, pad) = (b(vals, 0), b(vals, 2));
                let len = count(&vals[1]).min(i32::MAX as usize);
                if s.len() >= len {
                    Value::Bytes(s[..len].to_vec())
                } else if pad.is_empty() {
                    Value::Null
                } else {
                    let fill: Vec<u8> = pad.iter().copied().cycle().take(len - s.len()).collect();
                    let func = name.to_ascii_lowercase();
                    built(
                        ctx,
                        &func,
                        || {
                            if name == "LPAD" {
                                [fill.as_slice(), &s].concat()
                            } else {
                                [s.as_ref(), fill.as_slice()].concat()
                            }
                        },
                        len as u128,
                    )
                }
            }
        }
        "INSTR" | "LOCATE" => {
            if name == "INSTR" {
                arity(name, args, 2, 2)?;
            } else {
                arity(name, args, 2, 3)?;
            }
            if any_null {
                Value::Null
            } else if name == "INSTR" {
                Value::Int(locate(&b(vals, 1), &b(vals, 0), None))
            } else {
                Value::Int(locate(
                    &b(vals, 0),
                    &b(vals, 1),
                    (args.len() == 3).then(|| int(2)),
                ))
            }
        }
        "STRCMP" => {
            arity(name, args, 2, 2)?;
            if any_null {
                Value::Null
            } else {
                Value::Int(b(vals, 0).cmp(&b(vals, 1)) as i64)
            }
        }
        "FIND_IN_SET" => {
            arity(name, args, 2, 2)?;
            if any_null {
                Value::Null
            } else {
                let (needle, list) = (b(vals, 0), b(vals, 1));
                if needle.contains(&b',') || list.is_empty() {
                    Value::Int(0)
                } else {
                    let pos = list
                        .split(|c| *c == b',')
                        .position(|x| x == needle.as_ref());
                    Value::Int(pos.map_or(0, |p| p as i64 + 1))
                }
            }
        }
        "SUBSTRING_INDEX" => {
            arity(name, args, 3, 3)?;
            if any_null {
                Value::Null
            } else {
                Value::Bytes(substring_index(&b(vals, 0), &b(vals, 1), int(2)))
            }
        }
        "INSERT" => {
            arity(name, args, 4, 4)?;
            if any_null {
                Value::Null
            } else {
                let (t, pos, len, new) = (b(vals, 0), int(1), int(2), b(vals, 3));
                let n = t.len() as i128;
                if pos < 1 || pos > n {
                    Value::Bytes(t.into_owned())
                } else {
                    let start = (pos - 1) as usize;
                    let len = if len < 0 || len > n - pos + 1 {
                        (n - pos + 1) as usize
                    } else {
                        len as usize
                    };
                    let total = (t.len() - len + new.len()) as u128;
                    built(
                        ctx,
                        "insert",
                        || [&t[..start], new.as_ref(), &t[start + len..]].concat(),
                        total,
                    )
                }
            }
        }
        "ASCII" | "ORD" if subject => {
            arity(name, args, 1, 1)?;
            Value::Int(b(vals, 0).first().copied().unwrap_or(0) as i64)
        }
        "QUOTE" if subject => {
            arity(name, args, 1, 1)?;
            let mut out = vec![b'\''];
            for &c in b(vals, 0).iter() {
                match c {
                    b'\\' => out.extend_from_slice(b"\\\\"),
                    b'\'' => out.extend_from_slice(b"\\'"),
                    0 => out.extend_from_slice(b"\\0"),
                    0x1a => out.extend_from_slice(b"\\Z"),
                    c => out.push(c),
                }
            }
            out.push(b'\'');
            Value::Bytes(out)
        }
        "ELT" => {
            if args.len() < 2 {
                return Err(SqlError::ParamCount("elt".into()));
            }
            match vals[0].to_i128() {
                Some(n) if n >= 1 && (n as usize) < vals.len() => match &vals[n as usize] {
                    Value::Null => Value::Null,
                    v @ Value::Bytes(_) => v.clone(),
                    v => Value::Str(v.to_text().unwrap_or_default()),
                },
                _ => Value::Null,
            }
        }
        _ => return Ok(None),
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn byte_helpers() {
        assert_eq!(sub_range(5, 2, Some(3)), (1, 4));
        assert_eq!(sub_range(5, -2, None), (3, 5));
        assert_eq!(sub_range(5, 0, None), (0, 0));
        assert_eq!(sub_range(5, i128::MIN, Some(i128::MAX)), (0, 0));
        assert_eq!(locate(b"\xff", b"a\xffb\xff", None), 2);
        assert_eq!(locate(b"\xff", b"a\xffb\xff", Some(3)), 4);
        assert_eq!(locate(b"A", b"abc", None), 0);
        assert_eq!(replace(b"a\x00a\x00", b"\x00", b"--"), b"a--a--");
        assert_eq!(substring_index(b"a.b.c", b".", 2), b"a.b");
        assert_eq!(substring_index(b"a.b.c", b".", -2), b"b.c");
    }
}
