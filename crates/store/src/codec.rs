//! Byte encodings: order-preserving keys and compact rows.
//!
//! # Keys (memcomparable)
//!
//! RocksDB orders keys by plain byte comparison, so a key is encoded such that comparing the
//! encoded bytes gives the same order as comparing the values column by column. Each column is
//! a one-byte tag followed by the value:
//!
//! * `0x00` = NULL (so NULL sorts before every value, as in MySQL), `0x01` = a value follows;
//! * signed integers: 8 bytes big-endian with the sign bit flipped (`i64::MIN` -> `00..`);
//! * unsigned integers: 8 bytes big-endian;
//! * doubles: the IEEE bits big-endian, all bits flipped for negatives and only the sign bit for
//!   positives (`-0.0` is normalised to `0.0` by coercion; NaN is rejected);
//! * decimals: the unscaled `i128` (all values of a column share the column's scale) as 16 bytes
//!   with the sign bit flipped;
//! * strings/blobs: every `0x00` byte escaped as `0x00 0xFF`, then the terminator `0x00 0x01`.
//!   The terminator sorts below any escaped or ordinary byte, so a string sorts before its
//!   extensions, and the encoding is prefix-free: a composite key can be compared column by column.
//!   The bytes are the string's own (binary strings, and every string of a key in the old
//!   [`KeyFormat::Binary`](crate::catalog::KeyFormat)) or, for CHAR/VARCHAR/TEXT in a key of
//!   [`KeyFormat::Collated`](crate::catalog::KeyFormat), its collation weight
//!   ([`shoal_collation::push_weight_bytes`]): byte order of weights is SQL's string order, and
//!   strings SQL calls equal (`'a'`, `'A'`, `'a '`) encode to one key. A weight cannot be
//!   decoded back into the string ([`decode_key`] returns the weight bytes);
//! * DATE / DATETIME: their packed order-preserving integers, big-endian (4 / 8 bytes);
//! * TIME: its signed microseconds as a signed integer is (8 bytes, sign bit flipped), so
//!   `-01:00:00` sorts before `00:30:00` and `100:00:00` after `20:00:00`.
//!
//! Every column encoding is self-delimiting, so the encoding of a key *prefix* (the first k
//! columns) is a byte prefix of the full key: range scans on leading key columns become byte
//! ranges ([`prefix_successor`]).
//!
//! # Rows
//!
//! A row value is `version(1) ncols(varint) null-bitmap(ceil(n/8)) values...`, values in column
//! order, NULLs omitted: integers as (zigzag) LEB128 varints, doubles as 8 bytes, decimals as a
//! zigzag varint of the unscaled value (the scale comes from the schema), TIME as a zigzag
//! varint of its microseconds, strings as a varint
//! length and the bytes, dates as varints of their packed forms. Decoding needs the column types
//! ([`decode_row`]); columns beyond the stored count decode as NULL, which leaves room for
//! adding columns later without rewriting rows.

use crate::datum::{ColumnType, Date, DateTime, Datum, Decimal};

const TAG_NULL: u8 = 0x00;
const TAG_VALUE: u8 = 0x01;
const ROW_FORMAT: u8 = 1;

/// Appends the order-preserving encoding of one key column (strings as their own bytes).
pub fn encode_key_datum(out: &mut Vec<u8>, d: &Datum) {
    encode_key_col(out, d, false);
}

/// Appends the order-preserving encoding of one key column; `weighted`: a string is encoded
/// as its collation weight (a CHAR/VARCHAR/TEXT column of a collated key).
pub fn encode_key_col(out: &mut Vec<u8>, d: &Datum, weighted: bool) {
    match d {
        Datum::Bytes(b) if weighted => {
            let mut w = Vec::with_capacity(b.len());
            shoal_collation::push_weight_bytes(&mut w, b);
            push_escaped(out, &w);
        }
        Datum::Null => out.push(TAG_NULL),
        Datum::Int(v) => {
            out.push(TAG_VALUE);
            out.extend_from_slice(&((*v as u64) ^ (1 << 63)).to_be_bytes());
        }
        Datum::UInt(v) => {
            out.push(TAG_VALUE);
            out.extend_from_slice(&v.to_be_bytes());
        }
        Datum::Double(f) => {
            out.push(TAG_VALUE);
            let f = if *f == 0.0 { 0.0 } else { *f };
            let bits = f.to_bits();
            let enc = if bits >> 63 == 1 {
                !bits
            } else {
                bits ^ (1 << 63)
            };
            out.extend_from_slice(&enc.to_be_bytes());
        }
        Datum::Decimal(x) => {
            out.push(TAG_VALUE);
            out.extend_from_slice(&((x.unscaled as u128) ^ (1 << 127)).to_be_bytes());
        }
        Datum::Bytes(b) => push_escaped(out, b),
        Datum::Date(d) => {
            out.push(TAG_VALUE);
            out.extend_from_slice(&d.pack().to_be_bytes());
        }
        Datum::DateTime(d) => {
            out.push(TAG_VALUE);
            out.extend_from_slice(&d.pack().to_be_bytes());
        }
        Datum::Time(m) => {
            out.push(TAG_VALUE);
            out.extend_from_slice(&((*m as u64) ^ (1 << 63)).to_be_bytes());
        }
    }
}

/// A string value: tag, escaped bytes, terminator.
fn push_escaped(out: &mut Vec<u8>, b: &[u8]) {
    out.push(TAG_VALUE);
    for &c in b {
        out.push(c);
        if c == 0 {
            out.push(0xFF);
        }
    }
    out.extend_from_slice(&[0x00, 0x01]);
}

/// Encodes a whole key (or key prefix), strings as their own bytes.
pub fn encode_key(values: &[Datum]) -> Vec<u8> {
    let mut out = Vec::with_capacity(values.len() * 10);
    for v in values {
        encode_key_datum(&mut out, v);
    }
    out
}

/// Encodes a whole key (or key prefix); `weighted[i]`: column `i` is a collated string
/// (see [`encode_key_col`]; columns past `weighted`'s end are not).
pub fn encode_key_weighted(values: &[Datum], weighted: &[bool]) -> Vec<u8> {
    let mut out = Vec::with_capacity(values.len() * 10);
    for (i, v) in values.iter().enumerate() {
        encode_key_col(&mut out, v, weighted.get(i).copied().unwrap_or(false));
    }
    out
}

#[inline(always)]
fn take<'a>(buf: &mut &'a [u8], n: usize) -> Result<&'a [u8], String> {
    if buf.len() < n {
        return Err("key truncated".into());
    }
    let (a, b) = buf.split_at(n);
    *buf = b;
    Ok(a)
}

/// Decodes a key produced by [`encode_key`] for columns of the given types. Returns the values
/// and the number of bytes consumed. A collated string column decodes as its weight (the
/// uppercased text without trailing spaces), not as the stored value: read values from rows.
pub fn decode_key(types: &[ColumnType], key: &[u8]) -> Result<(Vec<Datum>, usize), String> {
    let mut buf = key;
    let mut out = Vec::with_capacity(types.len());
    for t in types {
        let tag = take(&mut buf, 1)?[0];
        if tag == TAG_NULL {
            out.push(Datum::Null);
            continue;
        }
        if tag != TAG_VALUE {
            return Err(format!("bad key tag {tag:#x}"));
        }
        let d = match t {
            ColumnType::Int {
                unsigned: false, ..
            } => {
                let v = u64::from_be_bytes(take(&mut buf, 8)?.try_into().unwrap());
                Datum::Int((v ^ (1 << 63)) as i64)
            }
            ColumnType::Int { unsigned: true, .. } => {
                Datum::UInt(u64::from_be_bytes(take(&mut buf, 8)?.try_into().unwrap()))
            }
            ColumnType::Float(_) | ColumnType::Double(_) => {
                let enc = u64::from_be_bytes(take(&mut buf, 8)?.try_into().unwrap());
                let bits = if enc >> 63 == 1 {
                    enc ^ (1 << 63)
                } else {
                    !enc
                };
                Datum::Double(f64::from_bits(bits))
            }
            ColumnType::Decimal { scale, .. } => {
                let v = u128::from_be_bytes(take(&mut buf, 16)?.try_into().unwrap());
                Datum::Decimal(Decimal {
                    unscaled: (v ^ (1 << 127)) as i128,
                    scale: *scale,
                })
            }
            ColumnType::Char(_)
            | ColumnType::Varchar(_)
            | ColumnType::Text
            | ColumnType::Blob
            | ColumnType::Binary(_)
            | ColumnType::Varbinary(_) => {
                let mut s = Vec::new();
                loop {
                    let c = take(&mut buf, 1)?[0];
                    if c != 0 {
                        s.push(c);
                        continue;
                    }
                    match take(&mut buf, 1)?[0] {
                        0xFF => s.push(0),
                        0x01 => break,
                        other => return Err(format!("bad string escape {other:#x}")),
                    }
                }
                Datum::Bytes(s)
            }
            ColumnType::Date => Datum::Date(Date::unpack(u32::from_be_bytes(
                take(&mut buf, 4)?.try_into().unwrap(),
            ))),
            ColumnType::DateTime(_) | ColumnType::Timestamp(_) => Datum::DateTime(
                DateTime::unpack(u64::from_be_bytes(take(&mut buf, 8)?.try_into().unwrap())),
            ),
            ColumnType::Time(_) => {
                let v = u64::from_be_bytes(take(&mut buf, 8)?.try_into().unwrap());
                Datum::Time((v ^ (1 << 63)) as i64)
            }
        };
        out.push(d);
    }
    Ok((out, key.len() - buf.len()))
}

/// The smallest byte string greater than every string that starts with `prefix`, or `None` if
/// there is none (the prefix is all `0xFF`).
pub fn prefix_successor(prefix: &[u8]) -> Option<Vec<u8>> {
    let mut v = prefix.to_vec();
    while let Some(last) = v.pop() {
        if last != 0xFF {
            v.push(last + 1);
            return Some(v);
        }
    }
    None
}

fn put_varint(out: &mut Vec<u8>, mut v: u128) {
    loop {
        let b = (v & 0x7F) as u8;
        v >>= 7;
        if v == 0 {
            out.push(b);
            return;
        }
        out.push(b | 0x80);
    }
}

/// One varint. Inlined into every decoder: a row decode reads one per integer column and
/// one per string length, and the call, with its 32-byte `Result`, cost as much as the
/// decoding (callgrind, sysbench read-write: `get_varint` 2 % of the instructions). One to
/// three bytes (lengths below 2 MiB, integers below 2^21 in magnitude: most of what rows hold)
/// are read unrolled; up to nine (63 bits: dates, times, 64-bit values) in a `u64` loop; longer
/// ones (the largest DECIMALs and 64-bit values) by [`get_varint_long`].
#[inline(always)]
fn get_varint(buf: &mut &[u8]) -> Result<u128, String> {
    if let Some((&b0, r1)) = buf.split_first() {
        if b0 < 0x80 {
            *buf = r1;
            return Ok(u128::from(b0));
        }
        if let Some((&b1, r2)) = r1.split_first() {
            let v = u128::from(b0 & 0x7F) | u128::from(b1 & 0x7F) << 7;
            if b1 < 0x80 {
                *buf = r2;
                return Ok(v);
            }
            if let Some((&b2, r3)) = r2.split_first() {
                if b2 < 0x80 {
                    *buf = r3;
                    return Ok(v | u128::from(b2) << 14);
                }
            }
        }
    }
    get_varint_u64(buf)
}

/// [`get_varint`] past three bytes: up to nine in a `u64`, longer or truncated ones by
/// [`get_varint_long`] (from the start again).
#[inline(never)]
fn get_varint_u64(buf: &mut &[u8]) -> Result<u128, String> {
    let mut v = 0u64;
    for (i, &b) in buf.iter().take(9).enumerate() {
        v |= u64::from(b & 0x7F) << (7 * i);
        if b < 0x80 {
            *buf = &buf[i + 1..];
            return Ok(u128::from(v));
        }
    }
    get_varint_long(buf)
}

#[cold]
#[inline(never)]
fn get_varint_long(buf: &mut &[u8]) -> Result<u128, String> {
    let mut v: u128 = 0;
    let mut shift = 0;
    loop {
        let b = *buf.first().ok_or("row truncated")?;
        *buf = &buf[1..];
        if shift >= 128 {
            return Err("varint too long".into());
        }
        v |= u128::from(b & 0x7F) << shift;
        if b & 0x80 == 0 {
            return Ok(v);
        }
        shift += 7;
    }
}

fn zigzag(v: i128) -> u128 {
    ((v << 1) ^ (v >> 127)) as u128
}

#[inline(always)]
fn unzigzag(v: u128) -> i128 {
    ((v >> 1) as i128) ^ -((v & 1) as i128)
}

/// Encodes a row (values already coerced to their column types).
pub fn encode_row(values: &[Datum]) -> Vec<u8> {
    let n = values.len();
    let mut out = Vec::with_capacity(2 + n.div_ceil(8) + n * 6);
    out.push(ROW_FORMAT);
    put_varint(&mut out, n as u128);
    let bitmap_at = out.len();
    out.resize(bitmap_at + n.div_ceil(8), 0);
    for (i, v) in values.iter().enumerate() {
        match v {
            Datum::Null => out[bitmap_at + i / 8] |= 1 << (i % 8),
            Datum::Int(x) => put_varint(&mut out, zigzag(i128::from(*x))),
            Datum::UInt(x) => put_varint(&mut out, u128::from(*x)),
            Datum::Double(f) => out.extend_from_slice(&f.to_le_bytes()),
            Datum::Decimal(x) => put_varint(&mut out, zigzag(x.unscaled)),
            Datum::Bytes(b) => {
                put_varint(&mut out, b.len() as u128);
                out.extend_from_slice(b);
            }
            Datum::Date(d) => put_varint(&mut out, u128::from(d.pack())),
            Datum::DateTime(d) => put_varint(&mut out, u128::from(d.pack())),
            Datum::Time(m) => put_varint(&mut out, zigzag(i128::from(*m))),
        }
    }
    out
}

/// Decodes a row of `def` (columns of `types`): [`decode_row`], then the columns the stored
/// row stops short of (added by ALTER TABLE after it was written) read their
/// [`crate::ColumnDef::added_default`].
pub fn decode_stored(
    def: &crate::TableDef,
    types: &[ColumnType],
    data: &[u8],
) -> Result<Vec<Datum>, String> {
    decode_stored_cols(def, types, data, None)
}

/// [`decode_stored`] of only the columns `want` marks (all when `None`): the others are
/// skipped over and read as NULL, so a query reading two columns of a wide row allocates
/// nothing for the rest.
pub fn decode_stored_cols(
    def: &crate::TableDef,
    types: &[ColumnType],
    data: &[u8],
    want: Option<&[bool]>,
) -> Result<Vec<Datum>, String> {
    let mut row = Vec::with_capacity(types.len());
    decode_stored_cols_into(def, types, data, want, &mut row)?;
    Ok(row)
}

/// [`decode_stored_cols`] into `out` (cleared first): a scan decoding row after row into one
/// vector allocates it once.
pub fn decode_stored_cols_into(
    def: &crate::TableDef,
    types: &[ColumnType],
    data: &[u8],
    want: Option<&[bool]>,
    out: &mut Vec<Datum>,
) -> Result<(), String> {
    let stored = decode_row_into(types, data, want, out)?;
    for (i, c) in def.columns.iter().enumerate().skip(stored) {
        if !wanted(want, i) {
            continue;
        }
        if let (Some(d), Some(slot)) = (&c.added_default, out.get_mut(i)) {
            *slot = d.clone();
        }
    }
    Ok(())
}

/// [`decode_stored_cols`] without the row vector: `f(i, value)` for each column `i` that
/// `want` marks (every column when `None`), in column order, NULLs and the defaults of columns
/// added after the row was written included. A scan that moves each value straight into its
/// own row form (the query executor's frame) skips building, and emptying, a vector of them.
pub fn decode_stored_each(
    def: &crate::TableDef,
    data: &[u8],
    want: Option<&[bool]>,
    mut f: impl FnMut(usize, Datum),
) -> Result<(), String> {
    let types = def.columns.iter().map(|c| &c.ty);
    let stored = decode_fields(types, data, want, |i, d| {
        if let Some(d) = d {
            f(i, d)
        }
    })?;
    for (i, c) in def.columns.iter().enumerate().skip(stored) {
        if wanted(want, i) {
            f(i, c.added_default.clone().unwrap_or(Datum::Null));
        }
    }
    Ok(())
}

/// Whether column `i` is to be decoded (no mask: every column).
#[inline(always)]
fn wanted(want: Option<&[bool]>, i: usize) -> bool {
    want.is_none_or(|w| w.get(i).copied().unwrap_or(false))
}

/// Decodes a row for columns of the given types.
pub fn decode_row(types: &[ColumnType], data: &[u8]) -> Result<Vec<Datum>, String> {
    decode_row_n(types, data, None).map(|(row, _)| row)
}

/// [`decode_row`] of only the columns `want` marks (see [`decode_stored_cols`]).
pub fn decode_row_cols(
    types: &[ColumnType],
    data: &[u8],
    want: &[bool],
) -> Result<Vec<Datum>, String> {
    decode_row_n(types, data, Some(want)).map(|(row, _)| row)
}

/// [`decode_row`], and how many values the row stored.
fn decode_row_n(
    types: &[ColumnType],
    data: &[u8],
    want: Option<&[bool]>,
) -> Result<(Vec<Datum>, usize), String> {
    let mut out = Vec::with_capacity(types.len());
    let n = decode_row_into(types, data, want, &mut out)?;
    Ok((out, n))
}

/// [`decode_row_n`] into `out` (cleared first); returns how many values the row stored.
fn decode_row_into(
    types: &[ColumnType],
    data: &[u8],
    want: Option<&[bool]>,
    out: &mut Vec<Datum>,
) -> Result<usize, String> {
    out.clear();
    out.reserve(types.len());
    let n = decode_fields(types.iter(), data, want, |_, d| {
        out.push(d.unwrap_or(Datum::Null))
    })?;
    // Columns the row stops short of (added after it was written) read NULL here.
    out.resize(types.len(), Datum::Null);
    Ok(n)
}

/// The row decoder: `f(i, Some(value))` for each stored column of `types` that `want` marks
/// (NULL as `Datum::Null`), `f(i, None)` for each it skips, in column order; returns how many
/// values the row stored (the columns past them, added later, are the caller's).
#[inline(always)]
fn decode_fields<'t>(
    types: impl Iterator<Item = &'t ColumnType>,
    data: &[u8],
    want: Option<&[bool]>,
    mut f: impl FnMut(usize, Option<Datum>),
) -> Result<usize, String> {
    let mut buf = data;
    let fmt = *buf.first().ok_or("empty row")?;
    if fmt != ROW_FORMAT {
        return Err(format!("unknown row format {fmt}"));
    }
    buf = &buf[1..];
    let n = get_varint(&mut buf)? as usize;
    let bitmap = take(&mut buf, n.div_ceil(8))?;
    for (i, t) in types.take(n).enumerate() {
        let want_it = wanted(want, i);
        if bitmap[i / 8] & (1 << (i % 8)) != 0 {
            f(i, want_it.then_some(Datum::Null));
            continue;
        }
        if !want_it {
            skip_value(t, &mut buf)?;
            f(i, None);
            continue;
        }
        let d = match t {
            ColumnType::Int {
                unsigned: false, ..
            } => {
                let v = unzigzag(get_varint(&mut buf)?);
                Datum::Int(i64::try_from(v).map_err(|_| "int out of range")?)
            }
            ColumnType::Int { unsigned: true, .. } => {
                Datum::UInt(u64::try_from(get_varint(&mut buf)?).map_err(|_| "uint out of range")?)
            }
            ColumnType::Float(_) | ColumnType::Double(_) => {
                Datum::Double(f64::from_le_bytes(take(&mut buf, 8)?.try_into().unwrap()))
            }
            ColumnType::Decimal { scale, .. } => Datum::Decimal(Decimal {
                unscaled: unzigzag(get_varint(&mut buf)?),
                scale: *scale,
            }),
            ColumnType::Char(_)
            | ColumnType::Varchar(_)
            | ColumnType::Text
            | ColumnType::Blob
            | ColumnType::Binary(_)
            | ColumnType::Varbinary(_) => {
                let len = get_varint(&mut buf)? as usize;
                Datum::Bytes(take(&mut buf, len)?.to_vec())
            }
            ColumnType::Date => Datum::Date(Date::unpack(
                u32::try_from(get_varint(&mut buf)?).map_err(|_| "date out of range")?,
            )),
            ColumnType::DateTime(_) | ColumnType::Timestamp(_) => {
                Datum::DateTime(DateTime::unpack(
                    u64::try_from(get_varint(&mut buf)?).map_err(|_| "datetime out of range")?,
                ))
            }
            ColumnType::Time(_) => {
                let v = unzigzag(get_varint(&mut buf)?);
                Datum::Time(i64::try_from(v).map_err(|_| "time out of range")?)
            }
        };
        f(i, Some(d));
    }
    Ok(n)
}

/// Steps `buf` past one stored value of type `t` without decoding it.
#[inline(always)]
fn skip_value(t: &ColumnType, buf: &mut &[u8]) -> Result<(), String> {
    match t {
        ColumnType::Float(_) | ColumnType::Double(_) => {
            take(buf, 8)?;
        }
        ColumnType::Char(_)
        | ColumnType::Varchar(_)
        | ColumnType::Text
        | ColumnType::Blob
        | ColumnType::Binary(_)
        | ColumnType::Varbinary(_) => {
            let len = get_varint(buf)? as usize;
            take(buf, len)?;
        }
        ColumnType::Int { .. }
        | ColumnType::Decimal { .. }
        | ColumnType::Date
        | ColumnType::Time(_)
        | ColumnType::DateTime(_)
        | ColumnType::Timestamp(_) => {
            get_varint(buf)?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::{get_varint, put_varint};

    /// Every length of encoding, both sides of each 7-bit step and the longest values read
    /// back, each consuming exactly its bytes; a cut-off encoding is an error at every length.
    #[test]
    fn varints_round_trip_across_every_length() {
        let mut values = vec![0u128, 1, u128::MAX, u64::MAX as u128, i64::MAX as u128];
        for bits in 1..128 {
            let v = 1u128 << bits;
            values.extend([v - 1, v, v + 1]);
        }
        for v in values {
            let mut enc = vec![];
            put_varint(&mut enc, v);
            enc.push(0xAB); // what follows must be left in the buffer
            let mut buf = &enc[..];
            assert_eq!(get_varint(&mut buf), Ok(v), "{v:#x}");
            assert_eq!(buf, &[0xAB], "{v:#x}: consumed exactly its bytes");
            for cut in 0..enc.len() - 1 {
                let mut buf = &enc[..cut];
                assert!(get_varint(&mut buf).is_err(), "{v:#x} cut at {cut}");
            }
        }
    }
}
