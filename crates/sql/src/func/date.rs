//! Dates and times: the parts of a date (YEAR .. MICROSECOND, DAYNAME, WEEK, ...), interval
//! arithmetic (DATE_ADD/DATE_SUB/ADDDATE/SUBDATE, `d + INTERVAL n unit`, TIMESTAMPADD),
//! differences (DATEDIFF, TIMESTAMPDIFF), day numbers (TO_DAYS, FROM_DAYS, MAKEDATE),
//! formatting and parsing (DATE_FORMAT, STR_TO_DATE, FROM_UNIXTIME), DATE(), TIME(), EXTRACT.
//!
//! The calendar is MySQL's own, ported from `sql-common/my_time.c` so the edge cases agree:
//! [`daynr`] (`calc_daynr`, days since year 0, proleptic Gregorian), [`from_daynr`]
//! (`get_date_from_daynr`, which maps day numbers below 366 to the zero date) and
//! [`calc_week`], whose mode bits (Monday first, week of the year, first week has a Sunday /
//! four days) give WEEK's modes and DATE_FORMAT's `%U %u %V %v %X %x`.
//!
//! Arguments are read as MariaDB reads them, by the one date/time parser in
//! [`crate::temporal`] (its module doc lists the forms): DATE/DATETIME values as they are,
//! strings and numbers as dates ([`temporal::datetime_of`]), or as times for
//! HOUR/MINUTE/SECOND/MICROSECOND and TIME() ([`temporal::time_of`]). An unreadable value is
//! NULL with warning 1292 `Incorrect datetime value`, one with trailing garbage is read up to
//! it with `Truncated incorrect date[time] value`.
//!
//! Interval arithmetic follows `date_add_interval`: SECOND .. WEEK move a count of seconds
//! (and microseconds) and carry into days; MONTH, QUARTER and YEAR move the month and clamp
//! the day to the new month's end (`'2024-01-31' + INTERVAL 1 MONTH` is `2024-02-29`). A
//! result outside years 0-9999 is NULL with warning 1441. The result is a DATE for a DATE and a
//! unit of a day or more, a DATETIME for a DATE and a time unit or for a DATETIME, and for a
//! string argument a string in the same shape (MariaDB's typing). Compound units (DAY_HOUR,
//! ...) in DATE_ADD / DATE_SUB / `+ INTERVAL`: see `compound_amount`; in EXTRACT: see
//! `extract_compound`.
//!
//! There is no session time zone: shoal runs in UTC, as NOW() and UNIX_TIMESTAMP() do.

use super::arity;
use crate::ast::Expr;
use crate::error::SqlError;
use crate::eval::Context;
use crate::temporal::{self, Time};
use crate::value::{DateTime, SqlType, Value};

/// The largest day number MySQL accepts (9999-12-31).
const MAX_DAY_NUMBER: i64 = 3_652_424;

const MONTH_NAMES: [&str; 12] = [
    "January",
    "February",
    "March",
    "April",
    "May",
    "June",
    "July",
    "August",
    "September",
    "October",
    "November",
    "December",
];
const DAY_NAMES: [&str; 7] = [
    "Monday",
    "Tuesday",
    "Wednesday",
    "Thursday",
    "Friday",
    "Saturday",
    "Sunday",
];

/// `calc_days_in_year`.
fn days_in_year(y: i64) -> i64 {
    if (y & 3) == 0 && (y % 100 != 0 || (y % 400 == 0 && y != 0)) {
        366
    } else {
        365
    }
}

/// Days in month `m` (1-12) of year `y`.
pub(crate) fn days_in_month(y: i64, m: u8) -> u8 {
    match m {
        2 if days_in_year(y) == 366 => 29,
        2 => 28,
        4 | 6 | 9 | 11 => 30,
        _ => 31,
    }
}

/// `calc_daynr`: days since the (proleptic) year 0; 0 for the zero date.
pub(crate) fn daynr(year: i64, month: i64, day: i64) -> i64 {
    if year == 0 && month == 0 {
        return 0;
    }
    let mut y = year;
    let mut delsum = 365 * y + 31 * (month - 1) + day;
    if month <= 2 {
        y -= 1;
    } else {
        delsum -= (month * 4 + 23) / 10;
    }
    let temp = ((y / 100 + 1) * 3) / 4;
    delsum + y / 4 - temp
}

/// `get_date_from_daynr`: the date of a day number (the zero date below 366 or past 9999).
pub(crate) fn from_daynr(n: i64) -> DateTime {
    let mut d = DateTime::from_unix(0, 0);
    d.hour = 0;
    if n <= 365 || n >= 3_652_500 {
        d.year = 0;
        d.month = 0;
        d.day = 0;
        return d;
    }
    let mut year = n * 100 / 36525;
    let temp = (((year - 1) / 100 + 1) * 3) / 4;
    let mut doy = n - year * 365 - (year - 1) / 4 + temp;
    let mut diy = days_in_year(year);
    while doy > diy {
        doy -= diy;
        year += 1;
        diy = days_in_year(year);
    }
    let mut leap_day = 0;
    if diy == 366 && doy > 31 + 28 {
        doy -= 1;
        if doy == 31 + 28 {
            leap_day = 1;
        }
    }
    let mut month = 1u8;
    while doy > days_in_month(1, month) as i64 {
        doy -= days_in_month(1, month) as i64;
        month += 1;
    }
    d.year = year as u16;
    d.month = month;
    d.day = (doy + leap_day) as u8;
    d
}

/// `calc_weekday`: 0 = Monday (or Sunday with `sunday_first`).
fn weekday(daynr: i64, sunday_first: bool) -> i64 {
    (daynr + 5 + sunday_first as i64).rem_euclid(7)
}

const WEEK_MONDAY_FIRST: u32 = 1;
const WEEK_YEAR: u32 = 2;
const WEEK_FIRST_WEEKDAY: u32 = 4;

/// `week_mode`: WEEK()'s mode argument as `calc_week` bits.
fn week_mode(mode: u32) -> u32 {
    let mut f = mode & 7;
    if f & WEEK_MONDAY_FIRST == 0 {
        f ^= WEEK_FIRST_WEEKDAY;
    }
    f
}

/// `calc_week`: the week number of a date and the year it belongs to.
fn calc_week(d: &DateTime, behaviour: u32) -> (i64, i64) {
    let nr = daynr(d.year as i64, d.month as i64, d.day as i64);
    let mut first = daynr(d.year as i64, 1, 1);
    let monday_first = behaviour & WEEK_MONDAY_FIRST != 0;
    let mut week_year = behaviour & WEEK_YEAR != 0;
    let first_weekday = behaviour & WEEK_FIRST_WEEKDAY != 0;
    let mut wd = weekday(first, !monday_first);
    let mut year = d.year as i64;
    if d.month == 1 && (d.day as i64) <= 7 - wd {
        if !week_year && ((first_weekday && wd != 0) || (!first_weekday && wd >= 4)) {
            return (0, year);
        }
        week_year = true;
        year -= 1;
        let days = days_in_year(year);
        first -= days;
        wd = (wd + 53 * 7 - days).rem_euclid(7);
    }
    let days = if (first_weekday && wd != 0) || (!first_weekday && wd >= 4) {
        nr - (first + (7 - wd))
    } else {
        nr - (first - wd)
    };
    if week_year && days >= 52 * 7 {
        wd = (wd + days_in_year(year)) % 7;
        if (!first_weekday && wd < 4) || (first_weekday && wd == 0) {
            return (1, year + 1);
        }
    }
    (days / 7 + 1, year)
}

/// Reads digits from `b[*i..]`, at most `max`; None if there is none.
fn digits(b: &[u8], i: &mut usize, max: usize) -> Option<u64> {
    let start = *i;
    let mut v: u64 = 0;
    while *i < b.len() && b[*i].is_ascii_digit() && *i - start < max {
        v = v * 10 + (b[*i] - b'0') as u64;
        *i += 1;
    }
    (*i > start).then_some(v)
}

/// A two-digit year as MySQL completes it (00-69: 20xx, 70-99: 19xx).
fn year_2000(y: u64) -> u64 {
    if y < 70 {
        y + 2000
    } else {
        y + 1900
    }
}

/// A typed literal `DATE 'x'` (`date_only`) or `TIMESTAMP 'x'`, read strictly as MariaDB
/// does: the whole string must be a valid date (no time of day) or a date with a time of day,
/// else 1525 `Incorrect DATE value` / `Incorrect DATETIME value`. A TIMESTAMP shows the
/// fractional digits it writes (`TIMESTAMP'2024-01-01 10:00:00.50'` is a DATETIME(2)).
pub fn typed_literal(date_only: bool, s: &str) -> Result<Value, SqlError> {
    let what = if date_only { "DATE" } else { "DATETIME" };
    match temporal::read_datetime(s) {
        Some(r) if !r.trailing && r.has_time != date_only => {
            if date_only {
                Ok(Value::Date(r.value))
            } else {
                // It shows the digits it writes.
                Ok(Value::DateTime(
                    r.value,
                    temporal::frac_digits(s.as_bytes()),
                ))
            }
        }
        _ => Err(SqlError::coded(
            shoal_errors::ER_WRONG_VALUE,
            format!("Incorrect {what} value: '{s}'"),
        )),
    }
}

/// A value as a date/time (and whether it carries a time of day), with MariaDB's warnings;
/// None for NULL or an unreadable value ([`temporal::datetime_of`]).
fn to_datetime(ctx: &mut dyn Context, v: &Value) -> Option<(DateTime, bool)> {
    temporal::datetime_of(ctx, v)
}

/// A date with a real calendar day (not zero month or day): what weekdays, day numbers and
/// interval arithmetic need. Zero dates are NULL.
fn to_calendar(ctx: &mut dyn Context, v: &Value) -> Option<(DateTime, bool)> {
    to_datetime(ctx, v).filter(|(d, _)| d.month != 0 && d.day != 0)
}

/// A value as a TIME (HOUR(), TIME(), ...), with MariaDB's warnings ([`temporal::time_of`]).
fn to_time(ctx: &mut dyn Context, v: &Value) -> Option<Time> {
    temporal::time_of(ctx, v)
}

fn date_text(d: &DateTime) -> String {
    format!("{:04}-{:02}-{:02}", d.year, d.month, d.day)
}

/// A DATETIME's text with `decimals` fractional digits (0: none).
fn datetime_text(d: &DateTime, decimals: u32) -> String {
    let mut s = format!(
        "{} {:02}:{:02}:{:02}",
        date_text(d),
        d.hour,
        d.minute,
        d.second
    );
    if decimals > 0 {
        let digits = format!("{:06}", d.micro);
        s.push('.');
        s.push_str(&digits[..decimals.min(6) as usize]);
    }
    s
}

/// The day number of a date ([`daynr`]).
pub(super) fn day_number(d: &DateTime) -> i64 {
    daynr(d.year as i64, d.month as i64, d.day as i64)
}

/// The datetime `t` microseconds after the start of day number 0; None outside years 0-9999.
pub(super) fn datetime_of_micros(t: i128) -> Option<DateTime> {
    let days = t.div_euclid(86_400_000_000);
    let rest = t.rem_euclid(86_400_000_000);
    if !(0..=MAX_DAY_NUMBER as i128).contains(&days) {
        return None;
    }
    let mut r = from_daynr(days as i64);
    let secs = rest / 1_000_000;
    r.hour = (secs / 3600) as u8;
    r.minute = (secs / 60 % 60) as u8;
    r.second = (secs % 60) as u8;
    r.micro = (rest % 1_000_000) as u32;
    Some(r)
}

/// Whether a DATE_ADD-shaped call's compound unit ends in microseconds.
fn compound_micro(args: &[Expr], name: &str) -> bool {
    match (name, args.get(2)) {
        ("TIMESTAMPADD", _) => false,
        (_, Some(Expr::Literal(Value::Str(s)))) => {
            compound_fields(&s.to_ascii_uppercase()).is_some_and(|(_, micro)| micro)
        }
        _ => false,
    }
}

/// An interval unit (`INTERVAL n unit`, TIMESTAMPDIFF, EXTRACT).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Unit {
    Microsecond,
    Second,
    Minute,
    Hour,
    Day,
    Week,
    Month,
    Quarter,
    Year,
}

impl Unit {
    fn parse(s: &str) -> Option<Unit> {
        let s = s.to_ascii_uppercase();
        let s = s.strip_prefix("SQL_TSI_").unwrap_or(&s);
        Some(match s {
            "MICROSECOND" | "FRAC_SECOND" => Unit::Microsecond,
            "SECOND" => Unit::Second,
            "MINUTE" => Unit::Minute,
            "HOUR" => Unit::Hour,
            "DAY" => Unit::Day,
            "WEEK" => Unit::Week,
            "MONTH" => Unit::Month,
            "QUARTER" => Unit::Quarter,
            "YEAR" => Unit::Year,
            _ => return None,
        })
    }

    /// A unit below a day: adding it to a DATE gives a DATETIME.
    fn is_time(self) -> bool {
        matches!(
            self,
            Unit::Microsecond | Unit::Second | Unit::Minute | Unit::Hour
        )
    }
}

/// The unit argument a translated call carries as a string literal.
fn unit_arg(v: &Value) -> Result<Unit, SqlError> {
    let s = v.to_text().unwrap_or_default();
    Unit::parse(&s).ok_or_else(|| SqlError::Unsupported(format!("interval unit {s}")))
}

/// The amount of an interval in microseconds for the units below a month (clamped: any
/// amount past 10000 years overflows anyway), with the fractional digits it showed.
fn micros_of(v: &Value, unit: Unit) -> (i128, u32) {
    const LIMIT: i128 = 400_000_000_000_000_000;
    let per: i128 = match unit {
        Unit::Microsecond => 1,
        Unit::Second => 1_000_000,
        Unit::Minute => 60_000_000,
        Unit::Hour => 3_600_000_000,
        Unit::Day => 86_400_000_000,
        Unit::Week => 604_800_000_000,
        _ => unreachable!("month units are not microseconds"),
    };
    if unit == Unit::Second {
        // Fractional seconds count (and show): `INTERVAL 1.5 SECOND`.
        match v {
            Value::Decimal(d) => {
                let scale = d.scale.min(6);
                let m =
                    d.rescale(6)
                        .map(|x| x.mant)
                        .unwrap_or(if d.mant < 0 { -LIMIT } else { LIMIT });
                return (m.clamp(-LIMIT, LIMIT), scale);
            }
            Value::Double(f) => {
                let m = (f * 1e6).round().clamp(-LIMIT as f64, LIMIT as f64) as i128;
                return (m, if f.fract() != 0.0 { 6 } else { 0 });
            }
            _ => {}
        }
    }
    let n = v.to_i128().unwrap_or(0).clamp(-LIMIT, LIMIT);
    (n.saturating_mul(per).clamp(-LIMIT, LIMIT), 0)
}

/// `date_add_interval`: `d` moved by `amount` units (negated for DATE_SUB); None on overflow.
fn add_interval(d: DateTime, amount: &Value, unit: Unit, sub: bool) -> Option<DateTime> {
    let sign: i128 = if sub { -1 } else { 1 };
    let mut r = d;
    match unit {
        Unit::Year | Unit::Month | Unit::Quarter => {
            let n = amount.to_i128().unwrap_or(0).clamp(-1_000_000, 1_000_000) * sign;
            let months = match unit {
                Unit::Year => n * 12,
                Unit::Quarter => n * 3,
                _ => n,
            };
            let period = d.year as i128 * 12 + d.month as i128 - 1 + months;
            if !(0..120_000).contains(&period) {
                return None;
            }
            r.year = (period / 12) as u16;
            r.month = (period % 12 + 1) as u8;
            r.day = r.day.min(days_in_month(r.year as i64, r.month));
        }
        _ => {
            let (m, _) = micros_of(amount, unit);
            let base = (daynr(d.year as i64, d.month as i64, 1) as i128 + d.day as i128 - 1)
                * 86_400_000_000
                + (d.hour as i128 * 3600 + d.minute as i128 * 60 + d.second as i128) * 1_000_000
                + d.micro as i128;
            r = datetime_of_micros(base + sign * m)?;
        }
    }
    Some(r)
}

/// The fields of a compound interval unit's string, largest first, as microseconds each
/// (months for YEAR_MONTH, whose string is years and months), and whether the last field is
/// microseconds (read as a fraction: `'1.5'` SECOND_MICROSECOND is 1.5 s).
fn compound_fields(unit: &str) -> Option<(&'static [i128], bool)> {
    const MICRO: i128 = 1;
    const SEC: i128 = 1_000_000;
    const MIN: i128 = 60 * SEC;
    const HOUR: i128 = 60 * MIN;
    const DAY: i128 = 24 * HOUR;
    Some(match unit {
        "YEAR_MONTH" => (&[12, 1], false),
        "DAY_HOUR" => (&[DAY, HOUR], false),
        "DAY_MINUTE" => (&[DAY, HOUR, MIN], false),
        "DAY_SECOND" => (&[DAY, HOUR, MIN, SEC], false),
        "DAY_MICROSECOND" => (&[DAY, HOUR, MIN, SEC, MICRO], true),
        "HOUR_MINUTE" => (&[HOUR, MIN], false),
        "HOUR_SECOND" => (&[HOUR, MIN, SEC], false),
        "HOUR_MICROSECOND" => (&[HOUR, MIN, SEC, MICRO], true),
        "MINUTE_SECOND" => (&[MIN, SEC], false),
        "MINUTE_MICROSECOND" => (&[MIN, SEC, MICRO], true),
        "SECOND_MICROSECOND" => (&[SEC, MICRO], true),
        _ => return None,
    })
}

/// A compound interval's amount (`'1 2:30'` for DAY_MINUTE) as MySQL reads it: an optional
/// `-`, then numbers separated by anything that is not a digit; fewer numbers than fields fill
/// the smallest fields; a microsecond field is a fraction (padded or cut to six digits). The
/// total in the fields' unit (months or microseconds); None when more numbers follow than there
/// are fields (the result is NULL).
fn compound_amount(text: &str, fields: &[i128], micro_last: bool) -> Option<i128> {
    let b = text.trim_start().as_bytes();
    let mut i = 0;
    let neg = b.first() == Some(&b'-');
    while i < b.len() && !b[i].is_ascii_digit() {
        i += 1;
    }
    let count = fields.len();
    let mut values = vec![0i128; count];
    let mut last_len = 0usize;
    let mut given = 0;
    while given < count {
        let start = i;
        let mut v: i128 = 0;
        while i < b.len() && b[i].is_ascii_digit() {
            v = (v * 10 + (b[i] - b'0') as i128).min(1_000_000_000_000_000_000);
            i += 1;
        }
        last_len = i - start;
        values[given] = v;
        given += 1;
        while i < b.len() && !b[i].is_ascii_digit() {
            i += 1;
        }
        if i == b.len() {
            break;
        }
    }
    if i != b.len() {
        return None;
    }
    // Fewer numbers than fields: they are the smallest fields.
    values.rotate_right(count - given);
    if micro_last {
        let last = &mut values[count - 1];
        if last_len < 6 {
            *last *= 10i128.pow((6 - last_len) as u32);
        } else if last_len > 6 {
            *last /= 10i128.pow((last_len - 6).min(30) as u32);
        }
    }
    let total = values.iter().zip(fields).fold(0i128, |acc, (v, f)| {
        acc.saturating_add(v.saturating_mul(*f))
    });
    Some(if neg { -total } else { total })
}

/// DATE_ADD / DATE_SUB with a compound unit (`DAY_HOUR`, `YEAR_MONTH`, ...).
fn date_add_compound(
    ctx: &mut dyn Context,
    vals: &[Value],
    sub: bool,
    fields: &[i128],
    micro_last: bool,
) -> Result<Value, SqlError> {
    if vals[1].is_null() {
        return Ok(Value::Null);
    }
    let months = fields[0] == 12;
    if let Value::Time(t) = &vals[0] {
        let text = vals[1].to_text().unwrap_or_default();
        let amount = compound_amount(&text, fields, micro_last);
        let Some(amount) = amount.filter(|_| !months) else {
            super::time::overflow(ctx);
            return Ok(Value::Null);
        };
        let amount = if sub { -amount } else { amount };
        let fsp = if micro_last { 6 } else { 0 };
        return Ok(super::time::add_interval(ctx, t, amount, fsp));
    }
    let Some((d, has_time)) = to_calendar(ctx, &vals[0]) else {
        return Ok(Value::Null);
    };
    let text = vals[1].to_text().unwrap_or_default();
    let Some(amount) = compound_amount(&text, fields, micro_last) else {
        return Ok(Value::Null);
    };
    let unit = if months {
        Unit::Month
    } else {
        Unit::Microsecond
    };
    let Some(r) = add_interval(
        d,
        &Value::Decimal(crate::decimal::Decimal {
            mant: amount,
            scale: 0,
        }),
        unit,
        sub,
    ) else {
        ctx.warn(
            shoal_errors::ER_DATETIME_FUNCTION_OVERFLOW.code,
            "Datetime function: datetime field overflow".into(),
        );
        return Ok(Value::Null);
    };
    let is_time = !months;
    Ok(match &vals[0] {
        Value::Date(_) if !is_time => Value::Date(r),
        Value::Date(_) | Value::DateTime(..) => {
            let fsp = value_fsp(&vals[0]).max(if micro_last { 6 } else { 0 });
            Value::DateTime(r, fsp)
        }
        _ if has_time || is_time => {
            let decimals = if micro_last || d.micro != 0 { 6 } else { 0 };
            Value::Str(datetime_text(&r, decimals))
        }
        _ => Value::Str(date_text(&r)),
    })
}

/// The fractional digits a DATETIME value shows (none for anything else).
fn value_fsp(v: &Value) -> u8 {
    crate::value::temporal_fsp(v.sql_type())
}

/// The fractional digits an interval of `unit` (`None`: a compound unit without
/// microseconds) by an amount of type `amount` gives a DATETIME, as MariaDB types it:
/// six for MICROSECOND, for SECOND a DECIMAL's scale (six for a double or a string), else none.
fn interval_fsp(unit: Option<Unit>, amount: SqlType) -> u8 {
    match (unit, amount) {
        (Some(Unit::Microsecond), _) => 6,
        (Some(Unit::Second), SqlType::Decimal(s)) => s.min(6),
        (Some(Unit::Second), SqlType::Double | SqlType::Str | SqlType::Bytes) => 6,
        _ => 0,
    }
}

/// DATE_ADD / DATE_SUB over evaluated arguments `[date, amount, unit]`.
fn date_add(ctx: &mut dyn Context, vals: &[Value], sub: bool) -> Result<Value, SqlError> {
    if let Some((fields, micro_last)) = compound_fields(&vals[2].to_text().unwrap_or_default()) {
        return date_add_compound(ctx, vals, sub, fields, micro_last);
    }
    let unit = unit_arg(&vals[2])?;
    if vals[1].is_null() {
        return Ok(Value::Null);
    }
    if let Value::Time(t) = &vals[0] {
        if matches!(unit, Unit::Month | Unit::Quarter | Unit::Year) {
            super::time::overflow(ctx);
            return Ok(Value::Null);
        }
        let (m, fsp) = micros_of(&vals[1], unit);
        let fsp = if unit == Unit::Microsecond { 6 } else { fsp };
        let m = if sub { -m } else { m };
        return Ok(super::time::add_interval(ctx, t, m, fsp as u8));
    }
    let Some((d, has_time)) = to_calendar(ctx, &vals[0]) else {
        return Ok(Value::Null);
    };
    let Some(r) = add_interval(d, &vals[1], unit, sub) else {
        ctx.warn(
            shoal_errors::ER_DATETIME_FUNCTION_OVERFLOW.code,
            "Datetime function: datetime field overflow".into(),
        );
        return Ok(Value::Null);
    };
    Ok(match &vals[0] {
        Value::Date(_) if !unit.is_time() => Value::Date(r),
        Value::Date(_) | Value::DateTime(..) => {
            let fsp = value_fsp(&vals[0]).max(interval_fsp(Some(unit), vals[1].sql_type()));
            Value::DateTime(r.truncated(fsp), fsp)
        }
        _ if has_time || unit.is_time() => {
            let decimals = match unit {
                Unit::Microsecond => 6,
                Unit::Second => micros_of(&vals[1], unit).1,
                _ => 0,
            }
            .max(if d.micro != 0 { 6 } else { 0 });
            Value::Str(datetime_text(&r, decimals))
        }
        _ => Value::Str(date_text(&r)),
    })
}

/// TIMESTAMPDIFF(unit, a, b): `b - a` in whole units (toward zero), as `timestampdiff`.
fn timestampdiff(unit: Unit, a: &DateTime, b: &DateTime) -> i128 {
    let micros = |d: &DateTime| {
        (daynr(d.year as i64, d.month as i64, d.day as i64) as i128 * 86_400
            + d.hour as i128 * 3600
            + d.minute as i128 * 60
            + d.second as i128)
            * 1_000_000
            + d.micro as i128
    };
    let diff = micros(b) - micros(a);
    let neg: i128 = if diff < 0 { -1 } else { 1 };
    let abs = diff.abs();
    match unit {
        Unit::Year | Unit::Quarter | Unit::Month => {
            let (beg, end) = if neg < 0 { (b, a) } else { (a, b) };
            let secs = |d: &DateTime| d.hour as u32 * 3600 + d.minute as u32 * 60 + d.second as u32;
            let before = end.month < beg.month || (end.month == beg.month && end.day < beg.day);
            let mut years = end.year as i128 - beg.year as i128;
            if before {
                years -= 1;
            }
            let mut months = 12 * years;
            if before {
                months += 12 - (beg.month as i128 - end.month as i128);
            } else {
                months += end.month as i128 - beg.month as i128;
            }
            if end.day < beg.day
                || (end.day == beg.day
                    && (secs(end) < secs(beg) || (secs(end) == secs(beg) && end.micro < beg.micro)))
            {
                months -= 1;
            }
            neg * match unit {
                Unit::Year => months / 12,
                Unit::Quarter => months / 3,
                _ => months,
            }
        }
        Unit::Week => neg * (abs / 1_000_000 / 86_400 / 7),
        Unit::Day => neg * (abs / 1_000_000 / 86_400),
        Unit::Hour => neg * (abs / 1_000_000 / 3600),
        Unit::Minute => neg * (abs / 1_000_000 / 60),
        Unit::Second => neg * (abs / 1_000_000),
        Unit::Microsecond => diff,
    }
}

fn ordinal_suffix(day: u8) -> &'static str {
    match day {
        11..=13 => "th",
        _ => match day % 10 {
            1 => "st",
            2 => "nd",
            3 => "rd",
            _ => "th",
        },
    }
}

/// DATE_FORMAT's text of `d` (the formatting of `make_date_time`). Names of a zero month or
/// day are NULL (None), as in MariaDB.
fn format_date(d: &DateTime, fmt: &str) -> Option<String> {
    let mut out = String::with_capacity(fmt.len() * 2);
    let mut it = fmt.chars();
    let nr = || daynr(d.year as i64, d.month as i64, d.day as i64);
    let hour12 = |h: u8| if h.is_multiple_of(12) { 12 } else { h % 12 };
    while let Some(c) = it.next() {
        if c != '%' {
            out.push(c);
            continue;
        }
        let Some(f) = it.next() else {
            out.push('%');
            break;
        };
        match f {
            'a' | 'W' => {
                if d.month == 0 || d.day == 0 {
                    return None;
                }
                let name = DAY_NAMES[weekday(nr(), false) as usize];
                out.push_str(if f == 'a' { &name[..3] } else { name });
            }
            'b' | 'M' => {
                let name = MONTH_NAMES.get((d.month as usize).wrapping_sub(1))?;
                out.push_str(if f == 'b' { &name[..3] } else { name });
            }
            'c' => out.push_str(&d.month.to_string()),
            'm' => out.push_str(&format!("{:02}", d.month)),
            'D' => out.push_str(&format!("{}{}", d.day, ordinal_suffix(d.day))),
            'd' => out.push_str(&format!("{:02}", d.day)),
            'e' => out.push_str(&d.day.to_string()),
            'f' => out.push_str(&format!("{:06}", d.micro)),
            'H' => out.push_str(&format!("{:02}", d.hour)),
            'k' => out.push_str(&d.hour.to_string()),
            'h' | 'I' => out.push_str(&format!("{:02}", hour12(d.hour))),
            'l' => out.push_str(&hour12(d.hour).to_string()),
            'i' => out.push_str(&format!("{:02}", d.minute)),
            'j' => {
                if d.month == 0 || d.day == 0 {
                    return None;
                }
                let doy = nr() - daynr(d.year as i64, 1, 1) + 1;
                out.push_str(&format!("{doy:03}"));
            }
            'p' => out.push_str(if d.hour < 12 { "AM" } else { "PM" }),
            'r' => out.push_str(&format!(
                "{:02}:{:02}:{:02} {}",
                hour12(d.hour),
                d.minute,
                d.second,
                if d.hour < 12 { "AM" } else { "PM" }
            )),
            'S' | 's' => out.push_str(&format!("{:02}", d.second)),
            'T' => out.push_str(&format!("{:02}:{:02}:{:02}", d.hour, d.minute, d.second)),
            'U' | 'u' | 'V' | 'v' | 'X' | 'x' => {
                if d.month == 0 || d.day == 0 {
                    return None;
                }
                let behaviour = match f {
                    'U' => WEEK_FIRST_WEEKDAY,
                    'u' => WEEK_MONDAY_FIRST,
                    'V' | 'X' => WEEK_YEAR | WEEK_FIRST_WEEKDAY,
                    _ => WEEK_MONDAY_FIRST | WEEK_YEAR,
                };
                let (week, year) = calc_week(d, behaviour);
                if matches!(f, 'X' | 'x') {
                    out.push_str(&format!("{year:04}"));
                } else {
                    out.push_str(&format!("{week:02}"));
                }
            }
            'w' => {
                if d.month == 0 || d.day == 0 {
                    return None;
                }
                out.push_str(&weekday(nr(), true).to_string());
            }
            'Y' => out.push_str(&format!("{:04}", d.year)),
            'y' => out.push_str(&format!("{:02}", d.year % 100)),
            other => out.push(other),
        }
    }
    Some(out)
}

/// What STR_TO_DATE's format asks for: a date part, a time part, fractional seconds.
fn format_kind(fmt: &str) -> (bool, bool, bool) {
    let (mut date, mut time, mut frac) = (false, false, false);
    let mut it = fmt.chars();
    while let Some(c) = it.next() {
        if c == '%' {
            match it.next() {
                Some('H' | 'k' | 'h' | 'I' | 'l' | 'i' | 's' | 'S' | 'p' | 'r' | 'T') => {
                    time = true
                }
                Some('f') => {
                    time = true;
                    frac = true
                }
                Some(
                    'Y' | 'y' | 'm' | 'c' | 'M' | 'b' | 'd' | 'e' | 'D' | 'j' | 'a' | 'W' | 'U'
                    | 'u' | 'V' | 'v' | 'X' | 'x' | 'w',
                ) => date = true,
                _ => {}
            }
        }
    }
    (date, time, frac)
}

/// Matches a (case-insensitive) name from `names` at the start of `v`, full or its first three
/// letters when `abbr`; the index.
fn match_name(v: &[u8], names: &[&str], abbr: bool) -> Option<(usize, usize)> {
    names.iter().enumerate().find_map(|(i, n)| {
        let n = if abbr { &n[..3] } else { n };
        (v.len() >= n.len() && v[..n.len()].eq_ignore_ascii_case(n.as_bytes()))
            .then_some((i, n.len()))
    })
}

/// The fields STR_TO_DATE collects.
#[derive(Default)]
struct Fields {
    year: u64,
    month: u64,
    day: u64,
    hour: u64,
    minute: u64,
    second: u64,
    micro: u64,
    yday: Option<u64>,
    pm: Option<bool>,
    twelve: bool,
}

/// `extract_date_time`: reads `v` by `fmt` into `f`; returns where the value's unread rest
/// starts. Err(true): a specifier this implementation does not read (week numbers).
fn extract(v: &[u8], fmt: &str, f: &mut Fields) -> Result<usize, bool> {
    let mut i = 0usize;
    let mut it = fmt.chars().peekable();
    while let Some(c) = it.next() {
        while i < v.len() && v[i].is_ascii_whitespace() {
            i += 1;
        }
        if i >= v.len() {
            break;
        }
        if c != '%' || it.peek().is_none() {
            if c.is_whitespace() {
                continue;
            }
            let mut buf = [0u8; 4];
            let enc = c.encode_utf8(&mut buf).as_bytes();
            if !v[i..].starts_with(enc) {
                return Err(false);
            }
            i += enc.len();
            continue;
        }
        let spec = it.next().unwrap_or('%');
        let num = |i: &mut usize, max: usize| digits(v, i, max).ok_or(false);
        match spec {
            'Y' => {
                let start = i;
                let y = num(&mut i, 4)?;
                f.year = if i - start <= 2 { year_2000(y) } else { y };
            }
            'y' => f.year = year_2000(num(&mut i, 2)?),
            'm' | 'c' => f.month = num(&mut i, 2)?,
            'M' | 'b' => {
                let (m, n) = match_name(&v[i..], &MONTH_NAMES, spec == 'b').ok_or(false)?;
                f.month = m as u64 + 1;
                i += n;
            }
            'd' | 'e' => f.day = num(&mut i, 2)?,
            'D' => {
                f.day = num(&mut i, 2)?;
                i = (i + 2).min(v.len());
            }
            'H' | 'k' => f.hour = num(&mut i, 2)?,
            'h' | 'I' | 'l' => {
                f.hour = num(&mut i, 2)?;
                f.twelve = true;
            }
            'i' => f.minute = num(&mut i, 2)?,
            's' | 'S' => f.second = num(&mut i, 2)?,
            'f' => {
                let start = i;
                let n = num(&mut i, 6)?;
                f.micro = n * 10u64.pow(6 - (i - start) as u32);
            }
            'p' => {
                let rest = &v[i..];
                if rest.len() >= 2 && rest[..2].eq_ignore_ascii_case(b"AM") {
                    f.pm = Some(false);
                } else if rest.len() >= 2 && rest[..2].eq_ignore_ascii_case(b"PM") {
                    f.pm = Some(true);
                } else {
                    return Err(false);
                }
                i += 2;
            }
            'W' | 'a' => {
                let (_, n) = match_name(&v[i..], &DAY_NAMES, spec == 'a').ok_or(false)?;
                i += n;
            }
            'w' => {
                num(&mut i, 1)?;
            }
            'j' => f.yday = Some(num(&mut i, 3)?),
            'T' => i += extract(&v[i..], "%H:%i:%S", f)?,
            'r' => i += extract(&v[i..], "%I:%i:%S %p", f)?,
            '%' => {
                if v[i] != b'%' {
                    return Err(false);
                }
                i += 1;
            }
            'U' | 'u' | 'V' | 'v' | 'X' | 'x' => return Err(true),
            other => {
                let mut buf = [0u8; 4];
                let enc = other.encode_utf8(&mut buf).as_bytes();
                if !v[i..].starts_with(enc) {
                    return Err(false);
                }
                i += enc.len();
            }
        }
    }
    Ok(i)
}

/// STR_TO_DATE(s, fmt): a DATE, DATETIME or TIME by what the format holds.
fn str_to_date(ctx: &mut dyn Context, s: &str, fmt: &str) -> Result<Value, SqlError> {
    let bad = |ctx: &mut dyn Context| {
        ctx.warn(
            shoal_errors::ER_WRONG_VALUE_FOR_TYPE.code,
            format!("Incorrect datetime value: '{s}' for function str_to_date"),
        );
        Ok(Value::Null)
    };
    let (has_date, has_time, frac) = format_kind(fmt);
    let mut f = Fields::default();
    let end = match extract(s.as_bytes(), fmt, &mut f) {
        Ok(end) => end,
        Err(true) => {
            return Err(SqlError::Unsupported(
                "week specifiers (%U %u %V %v %X %x) in STR_TO_DATE".into(),
            ))
        }
        Err(false) => return bad(ctx),
    };
    if f.twelve {
        if f.hour == 0 || f.hour > 12 {
            return bad(ctx);
        }
        if let Some(pm) = f.pm {
            f.hour = f.hour % 12 + if pm { 12 } else { 0 };
        }
    } else if f.pm.is_some() {
        return bad(ctx);
    }
    if let Some(yday) = f.yday {
        let n = daynr(f.year as i64, 1, 1) + yday as i64 - 1;
        if yday == 0 || n > MAX_DAY_NUMBER {
            return bad(ctx);
        }
        let d = from_daynr(n);
        (f.month, f.day) = (d.month as u64, d.day as u64);
    }
    if f.year > 9999 || f.month > 12 || f.day > 31 || f.hour > 23 || f.minute > 59 || f.second > 59
    {
        return bad(ctx);
    }
    // MariaDB checks the ranges only: STR_TO_DATE('2024-02-30', '%Y-%m-%d') is 2024-02-30.
    let d = DateTime {
        year: f.year as u16,
        month: f.month as u8,
        day: f.day as u8,
        hour: f.hour as u8,
        minute: f.minute as u8,
        second: f.second as u8,
        micro: f.micro as u32,
    };
    if !s.as_bytes()[end..].iter().all(u8::is_ascii_whitespace) {
        let kind = match (has_date, has_time) {
            (true, false) => "date",
            (false, true) => "time",
            _ => "datetime",
        };
        ctx.warn(
            shoal_errors::ER_TRUNCATED_WRONG_VALUE.code,
            format!("Truncated incorrect {kind} value: '{s}'"),
        );
    }
    Ok(match (has_date, has_time) {
        (true, false) => Value::Date(d),
        // Only a time: a TIME, of six digits when the format reads a fraction.
        (false, true) => Value::Time(Time::of(&d).with_fsp(if frac { 6 } else { 0 })),
        _ => Value::DateTime(d, if frac { 6 } else { 0 }),
    })
}

/// FROM_UNIXTIME's argument: seconds and microseconds, with the fractional digits it shows;
/// None (NULL) outside 0 ..= 2^31-1 (warning 1292 above it, as MariaDB).
fn unixtime(ctx: &mut dyn Context, v: &Value) -> Option<(i64, u32, u32)> {
    let (secs, micro, decimals): (i128, u32, u32) = match v {
        Value::Null => return None,
        Value::Int(_) | Value::UInt(_) => (v.to_i128()?, 0, 0),
        Value::Decimal(d) => {
            let m = d.rescale(6).map(|x| x.mant).unwrap_or(i128::MAX);
            (
                m.div_euclid(1_000_000),
                m.rem_euclid(1_000_000) as u32,
                d.scale.min(6),
            )
        }
        other => {
            let f = other.to_f64()?;
            let m = (f * 1e6).round();
            let m = if m.is_finite() {
                m.clamp(-1e30, 1e30) as i128
            } else {
                i128::MAX
            };
            let decimals = if matches!(other, Value::Double(_)) && f.fract() != 0.0 {
                6
            } else {
                0
            };
            (
                m.div_euclid(1_000_000),
                m.rem_euclid(1_000_000) as u32,
                decimals,
            )
        }
    };
    if secs < 0 {
        return None;
    }
    if secs > i32::MAX as i128 {
        ctx.warn(
            shoal_errors::ER_TRUNCATED_WRONG_VALUE.code,
            format!(
                "Truncated incorrect unixtime value: '{}'",
                v.to_text().unwrap_or_default()
            ),
        );
        return None;
    }
    Some((secs as i64, micro, decimals))
}

/// `EXTRACT(DAY_MINUTE FROM x)` and the other compound units: the fields' values as the
/// digits of one number, two per field after the first (six for microseconds), as MySQL
/// computes them: `EXTRACT(DAY_MINUTE FROM '2020-01-02 03:04')` is 20304. Units from `HOUR`
/// down read a time (negative for a negative TIME); `DAY_*` and `YEAR_MONTH` read a date.
/// `None` when `unit` is no compound unit.
fn extract_compound(ctx: &mut dyn Context, unit: &Value, v: &Value) -> Option<Value> {
    let Value::Str(unit) = unit else {
        return None;
    };
    let unit = unit.to_ascii_uppercase();
    compound_fields(&unit)?;
    let fields: Vec<(&str, i64)> = if unit == "YEAR_MONTH" || unit.starts_with("DAY_") {
        let Some((d, _)) = to_datetime(ctx, v) else {
            return Some(Value::Null);
        };
        vec![
            ("YEAR", d.year as i64),
            ("MONTH", d.month as i64),
            ("DAY", d.day as i64),
            ("HOUR", d.hour as i64),
            ("MINUTE", d.minute as i64),
            ("SECOND", d.second as i64),
            ("MICROSECOND", d.micro as i64),
        ]
    } else {
        let Some(t) = to_time(ctx, v) else {
            return Some(Value::Null);
        };
        let sign = if t.neg { -1 } else { 1 };
        vec![
            ("HOUR", sign * t.hour as i64),
            ("MINUTE", sign * t.minute as i64),
            ("SECOND", sign * t.second as i64),
            ("MICROSECOND", sign * t.micro as i64),
        ]
    };
    let (first, last) = unit.split_once('_')?;
    let start = fields.iter().position(|(n, _)| *n == first)?;
    let end = fields.iter().position(|(n, _)| *n == last)?;
    let mut out: i64 = 0;
    for (i, (name, value)) in fields[start..=end].iter().enumerate() {
        let scale = match (i, *name) {
            (0, _) => 1,
            (_, "MICROSECOND") => 1_000_000,
            _ => 100,
        };
        out = out * scale + value;
    }
    Some(Value::Int(out))
}

/// The first argument of EXTRACT, TIMESTAMPDIFF, TIMESTAMPADD: a unit name.
fn is_unit_literal(e: Option<&Expr>) -> Option<Unit> {
    match e {
        Some(Expr::Literal(Value::Str(s))) => Unit::parse(s),
        _ => None,
    }
}

pub(super) fn call(
    name: &str,
    args: &[Expr],
    vals: &[Value],
    ctx: &mut dyn Context,
) -> Result<Option<Value>, SqlError> {
    let int = |v: i64| Value::Int(v);
    Ok(Some(match name {
        "YEAR" | "MONTH" | "DAY" | "DAYOFMONTH" | "QUARTER" => {
            arity(name, args, 1, 1)?;
            match to_datetime(ctx, &vals[0]) {
                None => Value::Null,
                Some((d, _)) => int(match name {
                    "YEAR" => d.year as i64,
                    "MONTH" => d.month as i64,
                    "QUARTER" => (d.month as i64 + 2) / 3,
                    _ => d.day as i64,
                }),
            }
        }
        "HOUR" | "MINUTE" | "SECOND" | "MICROSECOND" => {
            arity(name, args, 1, 1)?;
            match to_time(ctx, &vals[0]) {
                None => Value::Null,
                Some(t) => int(match name {
                    "HOUR" => t.hour as i64,
                    "MINUTE" => t.minute as i64,
                    "SECOND" => t.second as i64,
                    _ => t.micro as i64,
                }),
            }
        }
        "DAYOFWEEK" | "WEEKDAY" | "DAYOFYEAR" | "DAYNAME" | "MONTHNAME" | "TO_DAYS"
        | "LAST_DAY" | "WEEKOFYEAR" => {
            arity(name, args, 1, 1)?;
            let Some((d, _)) = to_calendar(ctx, &vals[0]) else {
                return Ok(Some(Value::Null));
            };
            let nr = daynr(d.year as i64, d.month as i64, d.day as i64);
            match name {
                "DAYOFWEEK" => int(weekday(nr, true) + 1),
                "WEEKDAY" => int(weekday(nr, false)),
                "DAYOFYEAR" => int(nr - daynr(d.year as i64, 1, 1) + 1),
                "DAYNAME" => Value::Str(DAY_NAMES[weekday(nr, false) as usize].into()),
                "MONTHNAME" => MONTH_NAMES
                    .get(d.month as usize - 1)
                    .map_or(Value::Null, |m| Value::Str((*m).into())),
                "TO_DAYS" => int(nr),
                "WEEKOFYEAR" => int(calc_week(&d, week_mode(3)).0),
                _ => {
                    let mut r = d;
                    r.day = days_in_month(d.year as i64, d.month);
                    (r.hour, r.minute, r.second, r.micro) = (0, 0, 0, 0);
                    Value::Date(r)
                }
            }
        }
        "WEEK" | "YEARWEEK" => {
            arity(name, args, 1, 2)?;
            let mode = if args.len() == 2 {
                match vals[1].to_i128() {
                    Some(m) => m.rem_euclid(8) as u32,
                    None => return Ok(Some(Value::Null)),
                }
            } else {
                0
            };
            let Some((d, _)) = to_calendar(ctx, &vals[0]) else {
                return Ok(Some(Value::Null));
            };
            if name == "WEEK" {
                int(calc_week(&d, week_mode(mode)).0)
            } else {
                let (w, y) = calc_week(&d, week_mode(mode) | WEEK_YEAR);
                int(y * 100 + w)
            }
        }
        "DATE" => {
            arity(name, args, 1, 1)?;
            match to_datetime(ctx, &vals[0]) {
                None => Value::Null,
                Some((mut d, _)) => {
                    (d.hour, d.minute, d.second, d.micro) = (0, 0, 0, 0);
                    Value::Date(d)
                }
            }
        }
        "DATEDIFF" => {
            arity(name, args, 2, 2)?;
            let a = to_calendar(ctx, &vals[0]);
            let b = to_calendar(ctx, &vals[1]);
            match (a, b) {
                (Some((a, _)), Some((b, _))) => {
                    int(daynr(a.year as i64, a.month as i64, a.day as i64)
                        - daynr(b.year as i64, b.month as i64, b.day as i64))
                }
                _ => Value::Null,
            }
        }
        "DATE_ADD" | "ADDDATE" | "DATE_SUB" | "SUBDATE" => {
            // Translated to (date, amount, unit); ADDDATE(d, n) is (d, n, 'DAY').
            arity(name, args, 3, 3)?;
            date_add(ctx, vals, matches!(name, "DATE_SUB" | "SUBDATE"))?
        }
        "TIMESTAMPADD" => {
            arity(name, args, 3, 3)?;
            date_add(
                ctx,
                &[vals[2].clone(), vals[1].clone(), vals[0].clone()],
                false,
            )?
        }
        "TIMESTAMPDIFF" => {
            arity(name, args, 3, 3)?;
            let unit = unit_arg(&vals[0])?;
            let a = to_calendar(ctx, &vals[1]);
            let b = to_calendar(ctx, &vals[2]);
            match (a, b) {
                (Some((a, _)), Some((b, _))) => Value::Int(
                    timestampdiff(unit, &a, &b).clamp(i64::MIN as i128, i64::MAX as i128) as i64,
                ),
                _ => Value::Null,
            }
        }
        "EXTRACT" => {
            // Translated to (unit, date).
            arity(name, args, 2, 2)?;
            if let Some(v) = extract_compound(ctx, &vals[0], &vals[1]) {
                return Ok(Some(v));
            }
            let unit = unit_arg(&vals[0])?;
            if unit.is_time() {
                match to_time(ctx, &vals[1]) {
                    None => Value::Null,
                    Some(t) => {
                        let sign = if t.neg { -1 } else { 1 };
                        int(sign
                            * match unit {
                                Unit::Hour => t.hour as i64,
                                Unit::Minute => t.minute as i64,
                                Unit::Second => t.second as i64,
                                _ => t.micro as i64,
                            })
                    }
                }
            } else {
                match to_datetime(ctx, &vals[1]) {
                    None => Value::Null,
                    Some((d, _)) => int(match unit {
                        Unit::Year => d.year as i64,
                        Unit::Quarter => (d.month as i64 + 2) / 3,
                        Unit::Month => d.month as i64,
                        Unit::Day => d.day as i64,
                        _ if d.month == 0 || d.day == 0 => return Ok(Some(Value::Null)),
                        _ => calc_week(&d, week_mode(0)).0,
                    }),
                }
            }
        }
        "TO_SECONDS" => {
            arity(name, args, 1, 1)?;
            match to_calendar(ctx, &vals[0]) {
                None => Value::Null,
                Some((d, _)) => int(daynr(d.year as i64, d.month as i64, d.day as i64) * 86400
                    + d.hour as i64 * 3600
                    + d.minute as i64 * 60
                    + d.second as i64),
            }
        }
        "FROM_DAYS" => {
            arity(name, args, 1, 1)?;
            match vals[0].to_i128() {
                None => Value::Null,
                Some(n) => Value::Date(from_daynr(n.clamp(0, i64::MAX as i128) as i64)),
            }
        }
        "MAKEDATE" => {
            arity(name, args, 2, 2)?;
            let (Some(y), Some(doy)) = (vals[0].to_i128(), vals[1].to_i128()) else {
                return Ok(Some(Value::Null));
            };
            if doy <= 0 || !(0..=9999).contains(&y) {
                return Ok(Some(Value::Null));
            }
            let y = if y < 100 {
                year_2000(y as u64) as i64
            } else {
                y as i64
            };
            let n = (daynr(y, 1, 1) as i128).saturating_add(doy - 1);
            if n > MAX_DAY_NUMBER as i128 {
                Value::Null
            } else {
                Value::Date(from_daynr(n as i64))
            }
        }
        "DATE_FORMAT" => {
            arity(name, args, 2, 2)?;
            let Some(fmt) = vals[1].to_text() else {
                return Ok(Some(Value::Null));
            };
            match to_datetime(ctx, &vals[0]) {
                Some((d, _)) if !fmt.is_empty() => {
                    format_date(&d, &fmt).map(Value::Str).unwrap_or(Value::Null)
                }
                _ => Value::Null,
            }
        }
        "STR_TO_DATE" => {
            arity(name, args, 2, 2)?;
            match (vals[0].to_text(), vals[1].to_text()) {
                (Some(s), Some(fmt)) => str_to_date(ctx, &s, &fmt)?,
                _ => Value::Null,
            }
        }
        "FROM_UNIXTIME" => {
            arity(name, args, 1, 2)?;
            let Some((secs, micro, decimals)) = unixtime(ctx, &vals[0]) else {
                return Ok(Some(Value::Null));
            };
            let d = DateTime::from_unix(secs, micro);
            if args.len() == 2 {
                match vals[1].to_text() {
                    Some(fmt) if !fmt.is_empty() => {
                        format_date(&d, &fmt).map(Value::Str).unwrap_or(Value::Null)
                    }
                    _ => Value::Null,
                }
            } else if let Value::Decimal(_) = vals[0] {
                // A DECIMAL's scale is the result's precision.
                Value::DateTime(d, decimals as u8)
            } else if decimals > 0 {
                Value::Str(datetime_text(&d, decimals))
            } else {
                Value::DateTime(d, 0)
            }
        }
        _ => return Ok(None),
    }))
}

pub(super) fn static_type(name: &str, args: &[Expr]) -> Option<SqlType> {
    use crate::eval::static_type as ty;
    Some(match name {
        "YEAR" | "MONTH" | "DAY" | "DAYOFMONTH" | "QUARTER" | "HOUR" | "MINUTE" | "SECOND"
        | "MICROSECOND" | "DAYOFWEEK" | "WEEKDAY" | "DAYOFYEAR" | "TO_DAYS" | "WEEKOFYEAR"
        | "WEEK" | "YEARWEEK" | "DATEDIFF" | "TIMESTAMPDIFF" | "EXTRACT" | "TO_SECONDS" => {
            SqlType::Int
        }
        "DAYNAME" | "MONTHNAME" | "DATE_FORMAT" => SqlType::Str,
        "LAST_DAY" | "DATE" | "FROM_DAYS" | "MAKEDATE" => SqlType::Date,
        "DATE_ADD" | "ADDDATE" | "DATE_SUB" | "SUBDATE" | "TIMESTAMPADD" => {
            let (d, unit) = if name == "TIMESTAMPADD" {
                (args.get(2), is_unit_literal(args.first()))
            } else {
                (args.first(), is_unit_literal(args.get(2)))
            };
            // A compound unit of whole months (YEAR_MONTH) keeps a DATE a DATE, as a
            // day-or-longer simple unit does.
            let months = match (name, args.get(2)) {
                ("TIMESTAMPADD", _) => false,
                (_, Some(Expr::Literal(Value::Str(s)))) => s.eq_ignore_ascii_case("YEAR_MONTH"),
                _ => false,
            };
            // A TIME moved by a unit below a month stays a TIME, of the larger precision
            // (`INTERVAL 1.5 SECOND` shows one digit, MICROSECOND six).
            let amount = args.get(1);
            let time_fsp = match (unit, amount.map(ty)) {
                (Some(Unit::Microsecond), _) => 6,
                (None, _) if compound_micro(args, name) => 6,
                (Some(Unit::Second), Some(SqlType::Decimal(s))) => s.min(6),
                (Some(Unit::Second), Some(SqlType::Double)) => 6,
                _ => 0,
            };
            match (d.map(ty), unit) {
                (Some(SqlType::Time(_)), Some(Unit::Month | Unit::Quarter | Unit::Year)) => {
                    SqlType::DateTime(0)
                }
                (Some(SqlType::Time(_)), None) if months => SqlType::DateTime(0),
                (Some(SqlType::Time(n)), _) => SqlType::Time(n.max(time_fsp)),
                (Some(SqlType::Date), Some(u)) if !u.is_time() => SqlType::Date,
                (Some(SqlType::Date), None) if months => SqlType::Date,
                (Some(t @ (SqlType::Date | SqlType::DateTime(_))), _) => {
                    let micro = if unit.is_none() && compound_micro(args, name) {
                        6
                    } else {
                        0
                    };
                    let interval = interval_fsp(unit, amount.map_or(SqlType::Int, ty));
                    SqlType::DateTime(crate::value::temporal_fsp(t).max(interval).max(micro))
                }
                _ => SqlType::Str,
            }
        }
        "STR_TO_DATE" => match args.get(1) {
            Some(Expr::Literal(Value::Str(f))) => match format_kind(f) {
                (true, false, _) => SqlType::Date,
                (false, true, frac) => SqlType::Time(if frac { 6 } else { 0 }),
                (_, _, frac) => SqlType::DateTime(if frac { 6 } else { 0 }),
            },
            // A format only known at run time: the value's own type, carried as text.
            _ => SqlType::Str,
        },
        "FROM_UNIXTIME" => match (args.len(), args.first().map(ty)) {
            (1, Some(SqlType::Decimal(s))) => SqlType::DateTime(s.min(6)),
            (1, Some(SqlType::Double | SqlType::Str)) => SqlType::Str,
            (1, _) => SqlType::DateTime(0),
            _ => SqlType::Str,
        },
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn day_numbers_round_trip() {
        assert_eq!(daynr(2024, 1, 15), 739_265);
        assert_eq!(daynr(0, 1, 1), 1);
        for n in [366, 700_000, 739_265, 739_310, MAX_DAY_NUMBER] {
            let d = from_daynr(n);
            assert_eq!(daynr(d.year as i64, d.month as i64, d.day as i64), n);
        }
        let d = from_daynr(739_265);
        assert_eq!((d.year, d.month, d.day), (2024, 1, 15));
    }
}
