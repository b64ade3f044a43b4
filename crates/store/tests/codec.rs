//! Key and row encoding: round trips, and encoded byte order == value order, with random values.

use rand::{Rng, SeedableRng};
use shoal_store::codec::{
    decode_key, decode_row, decode_row_cols, decode_stored_cols, decode_stored_each, encode_key,
    encode_key_weighted, encode_row, prefix_successor,
};
use shoal_store::*;
use std::cmp::Ordering;

fn rng() -> rand::rngs::StdRng {
    rand::rngs::StdRng::seed_from_u64(0x5_40A1)
}

/// Value order of two datums of the same column type (NULL first).
fn cmp(a: &Datum, b: &Datum) -> Ordering {
    match (a, b) {
        (Datum::Null, Datum::Null) => Ordering::Equal,
        (Datum::Null, _) => Ordering::Less,
        (_, Datum::Null) => Ordering::Greater,
        (Datum::Int(x), Datum::Int(y)) => x.cmp(y),
        (Datum::UInt(x), Datum::UInt(y)) => x.cmp(y),
        (Datum::Double(x), Datum::Double(y)) => x.partial_cmp(y).unwrap(),
        (Datum::Decimal(x), Datum::Decimal(y)) => x.unscaled.cmp(&y.unscaled),
        (Datum::Bytes(x), Datum::Bytes(y)) => x.cmp(y),
        (Datum::Date(x), Datum::Date(y)) => x.cmp(y),
        (Datum::DateTime(x), Datum::DateTime(y)) => x.cmp(y),
        _ => panic!("mixed types"),
    }
}

fn random_datum(r: &mut impl Rng, ty: ColumnType) -> Datum {
    if r.gen_ratio(1, 10) {
        return Datum::Null;
    }
    match ty {
        ColumnType::Int {
            unsigned: false, ..
        } => Datum::Int(match r.gen_range(0..4) {
            0 => r.gen(),
            1 => r.gen_range(-3..3),
            2 => [i64::MIN, i64::MAX, -1, 0][r.gen_range(0..4)],
            _ => r.gen_range(-1000..1000),
        }),
        ColumnType::Int { unsigned: true, .. } => {
            Datum::UInt(if r.gen() { r.gen() } else { r.gen_range(0..5) })
        }
        ColumnType::Double(_) | ColumnType::Float(_) => Datum::Double(match r.gen_range(0..4) {
            0 => r.gen::<f64>() * 1e6 - 5e5,
            1 => -r.gen::<f64>() * 1e-300,
            2 => [
                0.0,
                f64::INFINITY,
                f64::NEG_INFINITY,
                f64::MIN,
                f64::MAX,
                -1.5,
                1.5,
            ][r.gen_range(0..7)],
            _ => f64::from_bits(r.gen::<u64>() & !(0x7FF << 52)), // finite subnormals, both signs
        }),
        ColumnType::Decimal { scale, .. } => Datum::Decimal(Decimal {
            unscaled: r.gen_range(-10i128.pow(20)..10i128.pow(20)),
            scale,
        }),
        ColumnType::Date => Datum::Date(Date {
            year: r.gen_range(0..10000),
            month: r.gen_range(0..13),
            day: r.gen_range(0..32),
        }),
        ColumnType::DateTime(_) | ColumnType::Timestamp(_) => Datum::DateTime(DateTime {
            date: Date {
                year: r.gen_range(1900..2100),
                month: r.gen_range(1..13),
                day: r.gen_range(1..29),
            },
            hour: r.gen_range(0..24),
            minute: r.gen_range(0..60),
            second: r.gen_range(0..60),
            micro: r.gen_range(0..1_000_000),
        }),
        _ => {
            let len = r.gen_range(0..6);
            // Small alphabet including 0x00, 0x01 and 0xFF to stress the escaping.
            Datum::Bytes(
                (0..len)
                    .map(|_| [0u8, 1, 2, b'a', 0xFE, 0xFF][r.gen_range(0..6)])
                    .collect(),
            )
        }
    }
}

const TYPES: [ColumnType; 8] = [
    ColumnType::Int {
        bytes: 8,
        unsigned: false,
    },
    ColumnType::Int {
        bytes: 8,
        unsigned: true,
    },
    ColumnType::Double(None),
    ColumnType::Decimal {
        precision: 30,
        scale: 4,
    },
    ColumnType::Varchar(100),
    ColumnType::Blob,
    ColumnType::Date,
    ColumnType::DateTime(6),
];

#[test]
fn single_column_key_order_matches_value_order() {
    let mut r = rng();
    for ty in TYPES {
        for _ in 0..3000 {
            let a = random_datum(&mut r, ty);
            let b = random_datum(&mut r, ty);
            let ea = encode_key(std::slice::from_ref(&a));
            let eb = encode_key(std::slice::from_ref(&b));
            assert_eq!(ea.cmp(&eb), cmp(&a, &b), "{ty:?}: {a:?} vs {b:?}");
            let (back, used) = decode_key(&[ty], &ea).unwrap();
            assert_eq!(used, ea.len());
            assert_eq!(back[0], a, "{ty:?} round trip");
        }
    }
}

#[test]
fn composite_key_order_is_lexicographic_by_column() {
    let mut r = rng();
    for _ in 0..5000 {
        let t1 = TYPES[r.gen_range(0..TYPES.len())];
        let t2 = TYPES[r.gen_range(0..TYPES.len())];
        let a = vec![random_datum(&mut r, t1), random_datum(&mut r, t2)];
        // Often share the first column, so the second decides.
        let b = if r.gen() {
            vec![a[0].clone(), random_datum(&mut r, t2)]
        } else {
            vec![random_datum(&mut r, t1), random_datum(&mut r, t2)]
        };
        let want = cmp(&a[0], &b[0]).then_with(|| cmp(&a[1], &b[1]));
        assert_eq!(encode_key(&a).cmp(&encode_key(&b)), want, "{a:?} vs {b:?}");
        let (back, _) = decode_key(&[t1, t2], &encode_key(&a)).unwrap();
        assert_eq!(back, a);
    }
}

#[test]
fn key_prefix_ranges_cover_exactly_the_prefix() {
    let mut r = rng();
    for _ in 0..2000 {
        let p = random_datum(&mut r, ColumnType::Varchar(10));
        let q = random_datum(&mut r, ColumnType::Varchar(10));
        let rest = random_datum(
            &mut r,
            ColumnType::Int {
                bytes: 8,
                unsigned: false,
            },
        );
        let prefix = encode_key(std::slice::from_ref(&p));
        let end = prefix_successor(&prefix).unwrap();
        let full = encode_key(&[q.clone(), rest]);
        let inside = full >= prefix && full < end;
        assert_eq!(inside, q == p, "{p:?} / {q:?}");
    }
}

#[test]
fn row_round_trip_all_types() {
    let mut r = rng();
    for _ in 0..2000 {
        let n = r.gen_range(1..12);
        let types: Vec<ColumnType> = (0..n).map(|_| TYPES[r.gen_range(0..TYPES.len())]).collect();
        let vals: Vec<Datum> = types.iter().map(|&t| random_datum(&mut r, t)).collect();
        let enc = encode_row(&vals);
        assert_eq!(decode_row(&types, &enc).unwrap(), vals);
    }
    // Compactness: small ints take one byte each plus a one-byte header, count and bitmap.
    let small = encode_row(&[Datum::Int(1), Datum::Int(-2), Datum::Null]);
    assert_eq!(small.len(), 1 + 1 + 1 + 2);
    // Extra trailing columns (added later) decode as NULL.
    let types = [
        ColumnType::Int {
            bytes: 4,
            unsigned: false,
        },
        ColumnType::Text,
    ];
    assert_eq!(
        decode_row(&types, &encode_row(&[Datum::Int(7)])).unwrap(),
        vec![Datum::Int(7), Datum::Null]
    );
    // Truncated data is an error, not a wrong row.
    assert!(decode_row(
        &types,
        &encode_row(&[Datum::Int(7), Datum::text("hello")])[..5]
    )
    .is_err());
}

/// A masked decode reads exactly the marked columns (the rest NULL) for every type: skipping
/// a value steps over exactly its bytes, or the columns after it would decode as garbage.
#[test]
fn masked_decode_reads_the_marked_columns() {
    let mut r = rng();
    let all: Vec<ColumnType> = TYPES
        .iter()
        .copied()
        .chain([
            ColumnType::Binary(4),
            ColumnType::Varbinary(8),
            ColumnType::Text,
        ])
        .collect();
    for _ in 0..2000 {
        let n = r.gen_range(1..12);
        let types: Vec<ColumnType> = (0..n).map(|_| all[r.gen_range(0..all.len())]).collect();
        let vals: Vec<Datum> = types.iter().map(|&t| random_datum(&mut r, t)).collect();
        let want: Vec<bool> = (0..n).map(|_| r.gen_bool(0.5)).collect();
        let got = decode_row_cols(&types, &encode_row(&vals), &want).unwrap();
        let expect: Vec<Datum> = vals
            .iter()
            .zip(&want)
            .map(|(v, &w)| if w { v.clone() } else { Datum::Null })
            .collect();
        assert_eq!(got, expect, "{types:?} {want:?}");
    }
    // A mask shorter than the row reads the columns past it as unwanted.
    let types = [ColumnType::Text, ColumnType::Text];
    let enc = encode_row(&[Datum::text("a"), Datum::text("b")]);
    assert_eq!(
        decode_row_cols(&types, &enc, &[true]).unwrap(),
        vec![Datum::text("a"), Datum::Null]
    );
}

/// A table of nullable columns of `types` without a primary key, column `i` added after rows
/// were written with the default `added[i]` when that is `Some`.
fn table_of(types: &[ColumnType], added: Vec<Option<Datum>>) -> TableDef {
    TableDef {
        id: 1,
        db: "d".into(),
        name: "t".into(),
        columns: types
            .iter()
            .zip(added)
            .enumerate()
            .map(|(i, (&ty, added_default))| ColumnDef {
                name: format!("c{i}"),
                ty,
                nullable: true,
                default: None,
                auto_increment: false,
                added_default,
                max_bytes: None,
            })
            .collect(),
        primary_key: None,
        indexes: vec![],
        auto_increment_start: 1,
        foreign_keys: vec![],
        pk_format: Default::default(),
    }
}

/// The visiting decoder (scans hand each value straight to the executor) agrees with the
/// vector one: each marked column once, in column order, with its stored value, NULL, or, for
/// a column added after the row was written, that column's default; unmarked columns never.
#[test]
fn visiting_decode_agrees_with_the_vector_decode() {
    let mut r = rng();
    let all: Vec<ColumnType> = TYPES
        .iter()
        .copied()
        .chain([ColumnType::Varbinary(8), ColumnType::Text])
        .collect();
    for round in 0..2000 {
        let stored = r.gen_range(1..10);
        let added = r.gen_range(0..3);
        let types: Vec<ColumnType> = (0..stored + added)
            .map(|_| all[r.gen_range(0..all.len())])
            .collect();
        let vals: Vec<Datum> = types[..stored]
            .iter()
            .map(|&t| random_datum(&mut r, t))
            .collect();
        let defaults: Vec<Option<Datum>> = types
            .iter()
            .enumerate()
            .map(|(i, &ty)| (i >= stored && r.gen_bool(0.5)).then(|| random_datum(&mut r, ty)))
            .collect();
        let def = table_of(&types, defaults);
        let want: Option<Vec<bool>> =
            (round % 4 != 0).then(|| (0..types.len()).map(|_| r.gen_bool(0.5)).collect());
        let enc = encode_row(&vals);
        let mut seen = Vec::new();
        decode_stored_each(&def, &enc, want.as_deref(), |i, d| seen.push((i, d))).unwrap();
        let marked = |i: usize| want.as_ref().is_none_or(|w| w[i]);
        let expect: Vec<(usize, Datum)> = (0..types.len())
            .filter(|&i| marked(i))
            .map(|i| {
                let d = match vals.get(i) {
                    Some(v) => v.clone(),
                    None => def.columns[i].added_default.clone().unwrap_or(Datum::Null),
                };
                (i, d)
            })
            .collect();
        assert_eq!(seen, expect, "{types:?} {want:?}");
        let vector = decode_stored_cols(&def, &types, &enc, want.as_deref()).unwrap();
        for (i, d) in &seen {
            assert_eq!(&vector[*i], d, "column {i} of {types:?}");
        }
    }
    // A truncated row is an error from the visitor too.
    let def_types = [ColumnType::Text, ColumnType::Text];
    let enc = encode_row(&[Datum::text("hello"), Datum::text("world")]);
    let def = table_of(&def_types, vec![None; 2]);
    assert!(decode_stored_each(&def, &enc[..enc.len() - 2], None, |_, _| {}).is_err());
}

#[test]
fn coercion_canonicalises_and_checks_ranges() {
    let tiny = ColumnType::Int {
        bytes: 1,
        unsigned: false,
    };
    assert_eq!(tiny.coerce(Datum::UInt(5)), Ok(Datum::Int(5)));
    assert!(tiny.coerce(Datum::Int(128)).is_err());
    assert!(ColumnType::Int {
        bytes: 4,
        unsigned: true
    }
    .coerce(Datum::Int(-1))
    .is_err());
    let dec = ColumnType::Decimal {
        precision: 5,
        scale: 2,
    };
    assert_eq!(
        dec.coerce(Datum::Int(3)),
        Ok(Datum::Decimal(Decimal {
            unscaled: 300,
            scale: 2
        }))
    );
    assert_eq!(
        dec.coerce(Datum::Decimal(Decimal::parse("1.235").unwrap())),
        Ok(Datum::Decimal(Decimal {
            unscaled: 124,
            scale: 2
        }))
    );
    assert!(dec.coerce(Datum::Int(1000)).is_err());
    assert_eq!(Decimal::parse("-0.05").unwrap().to_string(), "-0.05");
    assert!(ColumnType::Char(3).coerce(Datum::text("abcd")).is_err());
    assert!(ColumnType::Double(None)
        .coerce(Datum::Double(f64::NAN))
        .is_err());
    let dt = DateTime {
        date: Date {
            year: 2024,
            month: 2,
            day: 29,
        },
        hour: 23,
        minute: 59,
        second: 58,
        micro: 1,
    };
    assert_eq!(DateTime::unpack(dt.pack()), dt);
    assert_eq!(dt.to_string(), "2024-02-29 23:59:58.000001");
}

/// Collated string keys order and compare exactly as `shoal_collation::cmp` (SQL's string
/// comparison), NULs and a second key column included: weights go through the same escaping
/// as byte strings.
#[test]
fn weighted_string_keys_order_as_the_collation() {
    use rand::{Rng, SeedableRng};
    const ALPHABET: &[char] = &[
        'a', 'A', 'b', ' ', '\0', '\u{1}', 'ß', 'S', 's', 'é', 'É', 'ÿ', 'ǅ',
    ];
    let mut rng = rand::rngs::StdRng::seed_from_u64(10);
    let word = |rng: &mut rand::rngs::StdRng| -> String {
        (0..rng.gen_range(0..5))
            .map(|_| ALPHABET[rng.gen_range(0..ALPHABET.len())])
            .collect()
    };
    for _ in 0..50_000 {
        let (a1, a2, b1, b2) = (
            word(&mut rng),
            word(&mut rng),
            word(&mut rng),
            word(&mut rng),
        );
        let ka = encode_key_weighted(&[Datum::text(&a1), Datum::text(&a2)], &[true, true]);
        let kb = encode_key_weighted(&[Datum::text(&b1), Datum::text(&b2)], &[true, true]);
        let want = shoal_collation::cmp(&a1, &b1).then(shoal_collation::cmp(&a2, &b2));
        assert_eq!(ka.cmp(&kb), want, "({a1:?},{a2:?}) vs ({b1:?},{b2:?})");
    }
}

/// `fit` refuses what `coerce` refuses, and a value too long or out of range comes with the
/// nearest value the column holds: what a non-strict write stores.
#[test]
fn misfits_carry_the_nearest_value() {
    use shoal_store::Misfit;
    let nearest = |t: ColumnType, d: Datum| match t.fit(d) {
        Err(Misfit::TooLong { nearest, .. } | Misfit::OutOfRange { nearest, .. }) => nearest,
        other => panic!("{t:?}: {other:?}"),
    };
    let int = |bytes, unsigned| ColumnType::Int { bytes, unsigned };
    assert_eq!(nearest(int(1, false), Datum::Int(300)), Datum::Int(127));
    assert_eq!(nearest(int(1, false), Datum::Int(-300)), Datum::Int(-128));
    assert_eq!(nearest(int(1, true), Datum::Int(-5)), Datum::UInt(0));
    assert_eq!(
        nearest(int(8, true), Datum::Double(1e30)),
        Datum::UInt(u64::MAX)
    );
    assert_eq!(
        nearest(
            int(8, false),
            Datum::Decimal(Decimal {
                unscaled: -(10i128.pow(30)),
                scale: 2
            })
        ),
        Datum::Int(i64::MIN)
    );
    let dec = ColumnType::Decimal {
        precision: 5,
        scale: 2,
    };
    let d = |s: &str| Datum::Decimal(Decimal::parse(s).unwrap());
    assert_eq!(nearest(dec, d("12345.678")), d("999.99"));
    assert_eq!(nearest(dec, Datum::Double(-1e10)), d("-999.99"));
    // Rounding up past the precision is out of range too.
    assert_eq!(nearest(dec, d("999.995")), d("999.99"));
    // Characters for CHAR/VARCHAR, bytes for BINARY/VARBINARY (BINARY keeps exactly n).
    assert_eq!(
        nearest(ColumnType::Varchar(3), Datum::text("éèêë")),
        Datum::text("éèê")
    );
    assert_eq!(
        nearest(ColumnType::Binary(3), Datum::text("éé")),
        Datum::Bytes(vec![0xC3, 0xA9, 0xC3])
    );
    assert_eq!(
        nearest(ColumnType::Varbinary(2), Datum::Bytes(vec![0, 0xFF, 0x80])),
        Datum::Bytes(vec![0, 0xFF])
    );
    // A number stored as text is held to the length too.
    assert_eq!(
        nearest(ColumnType::Char(3), Datum::Int(12345)),
        Datum::text("123")
    );
    // Only spaces cut from a VARCHAR; a CHAR drops trailing spaces before measuring.
    assert!(matches!(
        ColumnType::Varchar(2).fit(Datum::text("ab   ")),
        Err(Misfit::TooLong {
            spaces_only: true,
            ..
        })
    ));
    assert!(matches!(
        ColumnType::Varchar(2).fit(Datum::text("abc ")),
        Err(Misfit::TooLong {
            spaces_only: false,
            ..
        })
    ));
    assert_eq!(
        ColumnType::Char(2).fit(Datum::text("ab   ")),
        Ok(Datum::text("ab"))
    );
    assert_eq!(
        ColumnType::Char(3).fit(Datum::text(" a ")),
        Ok(Datum::text(" a"))
    );
    // Binary strings: spaces are data.
    assert!(matches!(
        ColumnType::Varbinary(2).fit(Datum::text("ab ")),
        Err(Misfit::TooLong {
            spaces_only: false,
            ..
        })
    ));
    // Not a value of the type at all: no nearest value.
    assert!(matches!(
        ColumnType::Double(None).fit(Datum::Double(f64::NAN)),
        Err(Misfit::Invalid(_))
    ));
    assert!(matches!(
        ColumnType::Date.fit(Datum::Int(3)),
        Err(Misfit::Invalid(_))
    ));
    // coerce's messages are fit's.
    assert_eq!(
        int(1, false).coerce(Datum::Int(300)),
        Err("value 300 out of range".to_string())
    );
}
