//! Value encodings: text-protocol rendering, binary-protocol row values, and decoding of
//! COM_STMT_EXECUTE parameters.
//!
//! The session hands us `mysql_common::Value`s together with column definitions. The text
//! protocol renders every value as a string (NULL as the 0xFB marker). The binary protocol encodes
//! each value *by its column's wire type* (a LONG column is 4 bytes whatever `Value` variant holds
//! it), so a value that cannot be represented in its column's type is an [`EncodeError`], and the
//! caller sends an error packet instead of a silently wrong row.
//!
//! Parameter decoding is written here rather than with `mysql_common`'s binary deserializer because
//! that one panics (`unimplemented!`) on type bytes it does not know, and parameter types come
//! straight from the network.

use mysql_common::constants::ColumnType;
use mysql_common::value::Value;

use crate::packet::{put_lenenc_bytes, Reader};

/// A value that cannot be encoded as its column's type.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("value {value} cannot be sent as a {column_type:?} column")]
pub struct EncodeError {
    /// Debug rendering of the offending value.
    pub value: String,
    /// The column's wire type.
    pub column_type: ColumnType,
}

/// A parameter of COM_STMT_EXECUTE that cannot be decoded.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ParamError {
    /// The packet ended inside a parameter value.
    #[error("truncated value for parameter {0}")]
    Truncated(usize),
    /// A parameter type byte we do not know.
    #[error("unsupported parameter type 0x{1:02x} for parameter {0}")]
    UnknownType(usize, u8),
}

fn fraction(out: &mut String, micros: u32, decimals: u8) {
    let digits = if decimals > 0 && decimals <= 6 {
        decimals as usize
    } else if micros > 0 {
        6
    } else {
        0
    };
    if digits > 0 {
        let s = format!("{micros:06}");
        out.push('.');
        out.push_str(&s[..digits]);
    }
}

fn float_text(v: f64) -> String {
    if v.is_nan() {
        "NaN".into()
    } else if v.is_infinite() {
        if v > 0.0 { "inf" } else { "-inf" }.into()
    } else if v != 0.0 && (v.abs() >= 1e15 || v.abs() < 1e-15) {
        // Exponent notation for very large/small magnitudes, written as MariaDB writes it
        // (`1e20`, `1.5e-20`: no `+`).
        format!("{v:e}")
    } else {
        format!("{v}")
    }
}

/// A FLOAT as MariaDB shows it: with the column's fixed decimals (FLOAT(M,D)), else rounded
/// to six significant digits (single precision's reliable ones) and written as a double is.
pub fn single_text(f: f32, decimals: u8) -> String {
    let v = f64::from(f);
    if !v.is_finite() {
        return float_text(v);
    }
    if decimals < 31 {
        return format!("{v:.*}", usize::from(decimals));
    }
    // `{:.5e}` rounds the exact value to six significant digits.
    let six: f64 = format!("{v:.5e}").parse().unwrap_or(v);
    float_text(six)
}

/// Renders a value as the text protocol would; `None` is SQL NULL.
pub fn text_of(v: &Value, column_type: ColumnType, decimals: u8) -> Option<Vec<u8>> {
    Some(match v {
        Value::NULL => return None,
        Value::Bytes(b) => b.clone(),
        Value::Int(i) => i.to_string().into_bytes(),
        Value::UInt(u) => u.to_string().into_bytes(),
        Value::Float(f) => single_text(*f, decimals).into_bytes(),
        // A DOUBLE(M,D) column (or another with fixed decimals) shows D decimals.
        Value::Double(d) if column_type == ColumnType::MYSQL_TYPE_DOUBLE && decimals < 31 => {
            format!("{d:.*}", usize::from(decimals)).into_bytes()
        }
        Value::Double(d) => float_text(*d).into_bytes(),
        Value::Date(y, m, d, h, i, s, us) => {
            let mut out = format!("{y:04}-{m:02}-{d:02}");
            if !matches!(
                column_type,
                ColumnType::MYSQL_TYPE_DATE | ColumnType::MYSQL_TYPE_NEWDATE
            ) {
                out.push_str(&format!(" {h:02}:{i:02}:{s:02}"));
                fraction(&mut out, *us, decimals);
            }
            out.into_bytes()
        }
        Value::Time(neg, days, h, i, s, us) => {
            let hours = *days as u64 * 24 + *h as u64;
            let mut out = format!("{}{hours:02}:{i:02}:{s:02}", if *neg { "-" } else { "" });
            fraction(&mut out, *us, decimals);
            out.into_bytes()
        }
    })
}

fn err(v: &Value, column_type: ColumnType) -> EncodeError {
    EncodeError {
        value: format!("{v:?}"),
        column_type,
    }
}

fn as_i128(v: &Value) -> Option<i128> {
    match v {
        Value::Int(i) => Some(*i as i128),
        Value::UInt(u) => Some(*u as i128),
        Value::Float(f) if f.fract() == 0.0 && f.is_finite() => Some(*f as i128),
        Value::Double(d) if d.fract() == 0.0 && d.is_finite() => Some(*d as i128),
        Value::Bytes(b) => std::str::from_utf8(b).ok()?.trim().parse().ok(),
        _ => None,
    }
}

fn as_f64(v: &Value) -> Option<f64> {
    match v {
        Value::Int(i) => Some(*i as f64),
        Value::UInt(u) => Some(*u as f64),
        Value::Float(f) => Some(*f as f64),
        Value::Double(d) => Some(*d),
        Value::Bytes(b) => std::str::from_utf8(b).ok()?.trim().parse().ok(),
        _ => None,
    }
}

fn int_bytes(
    out: &mut Vec<u8>,
    v: &Value,
    ct: ColumnType,
    unsigned: bool,
    width: usize,
) -> Result<(), EncodeError> {
    let i = as_i128(v).ok_or_else(|| err(v, ct))?;
    let bits = (width * 8) as u32;
    let ok = if unsigned {
        i >= 0 && (bits == 64 || i < (1i128 << bits)) && i <= u64::MAX as i128
    } else {
        i >= -(1i128 << (bits - 1)) && i < (1i128 << (bits - 1))
    };
    if !ok {
        return Err(err(v, ct));
    }
    out.extend_from_slice(&(i as u64).to_le_bytes()[..width]);
    Ok(())
}

/// Appends the binary-protocol encoding of a non-NULL value for a column of type `ct`.
pub fn encode_binary(
    out: &mut Vec<u8>,
    v: &Value,
    ct: ColumnType,
    unsigned: bool,
    decimals: u8,
) -> Result<(), EncodeError> {
    use ColumnType::*;
    match ct {
        MYSQL_TYPE_TINY => int_bytes(out, v, ct, unsigned, 1),
        MYSQL_TYPE_SHORT | MYSQL_TYPE_YEAR => int_bytes(out, v, ct, unsigned, 2),
        MYSQL_TYPE_LONG | MYSQL_TYPE_INT24 => int_bytes(out, v, ct, unsigned, 4),
        MYSQL_TYPE_LONGLONG => int_bytes(out, v, ct, unsigned, 8),
        MYSQL_TYPE_FLOAT => {
            let f = as_f64(v).ok_or_else(|| err(v, ct))?;
            out.extend_from_slice(&(f as f32).to_le_bytes());
            Ok(())
        }
        MYSQL_TYPE_DOUBLE => {
            let f = as_f64(v).ok_or_else(|| err(v, ct))?;
            out.extend_from_slice(&f.to_le_bytes());
            Ok(())
        }
        MYSQL_TYPE_DATE | MYSQL_TYPE_NEWDATE | MYSQL_TYPE_DATETIME | MYSQL_TYPE_TIMESTAMP => {
            let Value::Date(y, m, d, h, i, s, us) = *v else {
                return Err(err(v, ct));
            };
            let date_only = matches!(ct, MYSQL_TYPE_DATE | MYSQL_TYPE_NEWDATE);
            if date_only || (h == 0 && i == 0 && s == 0 && us == 0) {
                if y == 0 && m == 0 && d == 0 {
                    out.push(0);
                } else {
                    out.push(4);
                    out.extend_from_slice(&y.to_le_bytes());
                    out.extend_from_slice(&[m, d]);
                }
            } else if us == 0 {
                out.push(7);
                out.extend_from_slice(&y.to_le_bytes());
                out.extend_from_slice(&[m, d, h, i, s]);
            } else {
                out.push(11);
                out.extend_from_slice(&y.to_le_bytes());
                out.extend_from_slice(&[m, d, h, i, s]);
                out.extend_from_slice(&us.to_le_bytes());
            }
            Ok(())
        }
        MYSQL_TYPE_TIME => {
            let Value::Time(neg, days, h, i, s, us) = *v else {
                return Err(err(v, ct));
            };
            if days == 0 && h == 0 && i == 0 && s == 0 && us == 0 {
                out.push(0);
            } else {
                out.push(if us == 0 { 8 } else { 12 });
                out.push(neg as u8);
                out.extend_from_slice(&days.to_le_bytes());
                out.extend_from_slice(&[h, i, s]);
                if us != 0 {
                    out.extend_from_slice(&us.to_le_bytes());
                }
            }
            Ok(())
        }
        MYSQL_TYPE_NULL => Err(err(v, ct)),
        _ => {
            // Strings, blobs, decimals, JSON, enum/set, bit: length-encoded bytes (a string's
            // own, without a copy).
            if let Value::Bytes(b) = v {
                put_lenenc_bytes(out, b);
            } else {
                put_lenenc_bytes(out, &text_of(v, ct, decimals).unwrap_or_default());
            }
            Ok(())
        }
    }
}

/// Decodes one binary-protocol parameter of wire type `type_byte` (flags byte bit 0x80 =
/// unsigned). `index` is only used in error messages.
pub fn decode_param(
    r: &mut Reader<'_>,
    type_byte: u8,
    unsigned: bool,
    index: usize,
) -> Result<Value, ParamError> {
    let t = ParamError::Truncated(index);
    let v = match type_byte {
        0x06 => Value::NULL,
        0x01 => {
            let b = r.u8().ok_or(t)?;
            if unsigned {
                Value::UInt(b as u64)
            } else {
                Value::Int(b as i8 as i64)
            }
        }
        0x02 | 0x0d => {
            let b = r.u16().ok_or(t)?;
            if unsigned {
                Value::UInt(b as u64)
            } else {
                Value::Int(b as i16 as i64)
            }
        }
        0x03 | 0x09 => {
            let b = r.u32().ok_or(t)?;
            if unsigned {
                Value::UInt(b as u64)
            } else {
                Value::Int(b as i32 as i64)
            }
        }
        0x08 => {
            let b = r.u64().ok_or(t)?;
            if unsigned {
                Value::UInt(b)
            } else {
                Value::Int(b as i64)
            }
        }
        0x04 => Value::Float(f32::from_bits(r.u32().ok_or(t)?)),
        0x05 => Value::Double(f64::from_bits(r.u64().ok_or(t)?)),
        0x07 | 0x0a | 0x0c | 0x0e => {
            let len = r.u8().ok_or(t.clone())?;
            let b = r.bytes(len as usize).ok_or(t.clone())?;
            let mut x = Reader::new(b);
            let (mut y, mut mo, mut d, mut h, mut mi, mut s, mut us) = (0u16, 0u8, 0u8, 0, 0, 0, 0);
            if len >= 4 {
                y = x.u16().ok_or(t.clone())?;
                mo = x.u8().ok_or(t.clone())?;
                d = x.u8().ok_or(t.clone())?;
            }
            if len >= 7 {
                h = x.u8().ok_or(t.clone())?;
                mi = x.u8().ok_or(t.clone())?;
                s = x.u8().ok_or(t.clone())?;
            }
            if len >= 11 {
                us = x.u32().ok_or(t.clone())?;
            }
            Value::Date(y, mo, d, h, mi, s, us)
        }
        0x0b => {
            let len = r.u8().ok_or(t.clone())?;
            let b = r.bytes(len as usize).ok_or(t.clone())?;
            let mut x = Reader::new(b);
            let (mut neg, mut days, mut h, mut mi, mut s, mut us) = (false, 0u32, 0u8, 0, 0, 0);
            if len >= 8 {
                neg = x.u8().ok_or(t.clone())? != 0;
                days = x.u32().ok_or(t.clone())?;
                h = x.u8().ok_or(t.clone())?;
                mi = x.u8().ok_or(t.clone())?;
                s = x.u8().ok_or(t.clone())?;
            }
            if len >= 12 {
                us = x.u32().ok_or(t.clone())?;
            }
            Value::Time(neg, days, h, mi, s, us)
        }
        // VARCHAR, BIT, JSON, NEWDECIMAL, ENUM, SET, blobs, VAR_STRING, STRING, GEOMETRY, DECIMAL.
        0x0f | 0x10 | 0xf5 | 0xf6 | 0xf7 | 0xf8 | 0xf9 | 0xfa | 0xfb | 0xfc | 0xfd | 0xfe
        | 0xff | 0x00 => Value::Bytes(r.lenenc_bytes().ok_or(t)?.to_vec()),
        other => return Err(ParamError::UnknownType(index, other)),
    };
    Ok(v)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_rendering() {
        let t = |v: Value, ct, dec| String::from_utf8(text_of(&v, ct, dec).unwrap()).unwrap();
        assert_eq!(t(Value::Int(-5), ColumnType::MYSQL_TYPE_LONG, 0), "-5");
        assert_eq!(
            t(Value::UInt(u64::MAX), ColumnType::MYSQL_TYPE_LONGLONG, 0),
            "18446744073709551615"
        );
        assert_eq!(
            t(Value::Double(1.5), ColumnType::MYSQL_TYPE_DOUBLE, 31),
            "1.5"
        );
        assert_eq!(
            t(
                Value::Date(2024, 2, 29, 13, 4, 5, 0),
                ColumnType::MYSQL_TYPE_DATE,
                0
            ),
            "2024-02-29"
        );
        assert_eq!(
            t(
                Value::Date(2024, 2, 29, 13, 4, 5, 120),
                ColumnType::MYSQL_TYPE_DATETIME,
                0
            ),
            "2024-02-29 13:04:05.000120"
        );
        assert_eq!(
            t(
                Value::Time(true, 1, 2, 3, 4, 0),
                ColumnType::MYSQL_TYPE_TIME,
                0
            ),
            "-26:03:04"
        );
        assert!(text_of(&Value::NULL, ColumnType::MYSQL_TYPE_LONG, 0).is_none());
    }

    #[test]
    fn binary_ints_are_range_checked() {
        let mut out = Vec::new();
        encode_binary(
            &mut out,
            &Value::Int(-1),
            ColumnType::MYSQL_TYPE_TINY,
            false,
            0,
        )
        .unwrap();
        assert_eq!(out, [0xFF]);
        assert!(encode_binary(
            &mut out,
            &Value::Int(300),
            ColumnType::MYSQL_TYPE_TINY,
            false,
            0
        )
        .is_err());
        assert!(encode_binary(
            &mut out,
            &Value::Int(-1),
            ColumnType::MYSQL_TYPE_LONG,
            true,
            0
        )
        .is_err());
        assert!(encode_binary(
            &mut out,
            &Value::Bytes(b"abc".to_vec()),
            ColumnType::MYSQL_TYPE_LONG,
            false,
            0
        )
        .is_err());
        out.clear();
        encode_binary(
            &mut out,
            &Value::UInt(u64::MAX),
            ColumnType::MYSQL_TYPE_LONGLONG,
            true,
            0,
        )
        .unwrap();
        assert_eq!(out, [0xFF; 8]);
    }

    #[test]
    fn params_roundtrip_through_decoder() {
        // Encode with our binary encoder and decode with the parameter decoder.
        let cases = [
            (
                Value::Int(-7),
                ColumnType::MYSQL_TYPE_LONGLONG,
                0x08u8,
                false,
            ),
            (Value::UInt(200), ColumnType::MYSQL_TYPE_TINY, 0x01, true),
            (
                Value::Double(2.25),
                ColumnType::MYSQL_TYPE_DOUBLE,
                0x05,
                false,
            ),
            (
                Value::Date(2020, 1, 2, 3, 4, 5, 6),
                ColumnType::MYSQL_TYPE_DATETIME,
                0x0c,
                false,
            ),
            (
                Value::Time(false, 0, 10, 0, 1, 0),
                ColumnType::MYSQL_TYPE_TIME,
                0x0b,
                false,
            ),
            (
                Value::Bytes(b"hello".to_vec()),
                ColumnType::MYSQL_TYPE_VAR_STRING,
                0xfd,
                false,
            ),
        ];
        for (v, ct, tb, uns) in cases {
            let mut b = Vec::new();
            encode_binary(&mut b, &v, ct, uns, 0).unwrap();
            let mut r = Reader::new(&b);
            assert_eq!(decode_param(&mut r, tb, uns, 0).unwrap(), v);
            assert_eq!(r.remaining(), 0);
            for cut in 0..b.len() {
                let mut r = Reader::new(&b[..cut]);
                assert!(decode_param(&mut r, tb, uns, 0).is_err());
            }
        }
        assert_eq!(
            decode_param(&mut Reader::new(&[]), 0x42, false, 3),
            Err(ParamError::UnknownType(3, 0x42))
        );
    }
}
