//! Reading dates and times: the one parser behind every place a string or a number becomes a
//! DATE, DATETIME, TIMESTAMP or TIME — `CAST`, comparisons with a date, the date functions
//! (`DATE_ADD`, `DATEDIFF`, `DATE_FORMAT`, `HOUR`, ...) and values written into date columns
//! (`crates/exec/src/convert.rs`). What it accepts, and how each reader reports what it could
//! not take, follows MariaDB 10.11, established by running the forms against it (the fixtures
//! in `tests/sql/dates.test` and `tests/sql/sql_mode.test` check them on every run).
//!
//! # Dates and datetimes ([`read_datetime`])
//!
//! Leading whitespace and one `+` are skipped; trailing whitespace is no loss. Then the text
//! is read in one of two shapes, decided by what follows the first run of digits:
//!
//! * **Delimited** (the run is followed by punctuation): `Y-M-D`, each part a run of digits
//!   and exactly one ASCII punctuation character between them (`2024/1/5`, `2024.01.05`,
//!   `02024-0001-0005`; but not `2024--01-05`, and a space does not separate date parts). The
//!   parts are numbers, not fixed-width fields. A year of exactly two digits is completed
//!   (00-69: 20xx, 70-99: 19xx) unless every field of the value is zero; other widths are
//!   taken as they are (`1-01-05` is year 1). The time of day may follow after whitespace,
//!   one `T` or one punctuation character (`2024-01-05.10:11:12`): `h[:m[:s[.f]]]`, again any
//!   one punctuation character between the parts, `.` before the fraction. A separator with
//!   nothing after it (`2024-01-05-`, `2024-01-05T`, `2024-01-05 10:`) is no loss; a separator
//!   followed by anything but a digit ends the value there (`2024-01-05 :10` is the date and
//!   trailing garbage).
//! * **Digits only**: the run alone, optionally continued after one `T` by more digits
//!   (`20240105T101112`). Its length picks the layout: 8, or 14 and more, start with a
//!   four-digit year; 5..=13 other than 8 with a two-digit year; fewer than 5 digits are no
//!   date. Then month, day, hour, minute, second take two digits each, the last one fewer when
//!   the digits run out (`9901051` is `1999-01-05 01:00:00`); digits past the seconds are
//!   trailing garbage. A fraction (`.ffffff`) follows only a complete time, and whitespace
//!   followed by another digit makes the whole text invalid (`20240105 10:11:12` is no
//!   datetime, though `2024-01-05 10:11:12` is).
//!
//! A fraction keeps six digits; more are dropped and flagged ([`DateTimeRead::extra_digits`],
//! even when they are zeros, as MariaDB flags them). The value must then be a calendar value:
//! year 0..=9999, month 0..=12, day 0..=31 and within its month unless month or day is zero
//! (`2024-00-00` and `0000-00-00` are dates, `2024-02-30` and `1900-02-29` are not), hour 0..=23,
//! minute and second 0..=59. Anything else makes the whole text invalid, never a partial value.
//!
//! Numbers ([`datetime_of_number`]) are read as their digits: YYMMDD, YYYYMMDD, YYMMDDhhmmss,
//! YYYYMMDDhhmmss (0 is the zero date); a fraction is microseconds of a datetime, and dropped
//! (flagged) on a date.
//!
//! # Times ([`read_time`])
//!
//! A text that is a datetime with a time of day is that time (`2024-01-05 03:04:05` is
//! `03:04:05`; a datetime-shaped text that is not valid, `2024-01-05 25:00:00`, is no time).
//! Otherwise: an optional `-`, then `d h[:m[:s]]` (days and hours, `1 02:03:04` is 26 hours),
//! `h:m[:s]`, or a run of digits read as `hhmmss` from the right (`10203` is `01:02:03`,
//! `2024` is `00:20:24`, `1000000` is `100:00:00`: fewer than 12 digits alone are never read as
//! a datetime), then `.ffffff`. The time shows the fractional digits written ([`Time::fsp`],
//! [`frac_digits`]): `'10:00:00.50'` is a time of two digits, as MariaDB types a constant. Minutes and seconds past 59 make it invalid; hours
//! past 838 are clipped to `838:59:59` ([`TimeRead::clipped`]). So a date that is not a datetime
//! reads as a time from its first number (`2024-01-05` is `00:20:24` and trailing garbage),
//! which is what MariaDB answers too.
//!
//! # Non-strict degradation
//!
//! The readers only describe what they found; the caller decides what it costs:
//!
//! | found | expressions ([`datetime_of`], [`time_of`]) | writes, strict | writes, not strict |
//! |---|---|---|---|
//! | extra fraction digits | note 1292 `Truncated incorrect datetime value` | note 1265 | note 1265 |
//! | trailing garbage | the value, warning 1292 `Truncated incorrect date[time] value` | error 1292 | the value, warning 1265 |
//! | invalid | NULL, warning 1292 `Incorrect datetime value` | error 1292 | the zero date, warning 1265 |
//!
//! (Writes are `crates/exec/src/convert.rs`; a time of day written into a DATE column is a note
//! 1265 in either mode.)

use crate::eval::Context;
use crate::value::{DateTime, Value};

/// `micro` with only its first `fsp` digits (of six) kept, as a value of that precision holds
/// it (MariaDB truncates unless `TIME_ROUND_FRACTIONAL` is set).
pub fn truncate_micro(micro: u32, fsp: u8) -> u32 {
    let unit = 10u32.pow(6 - u32::from(fsp.min(6)));
    micro - micro % unit
}

/// What [`read_datetime`] found in a text.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DateTimeRead {
    /// The date and time (midnight when the text had no time).
    pub value: DateTime,
    /// The text had a time of day: MariaDB's messages then say "datetime" rather than "date",
    /// and a DATE column drops it with a note.
    pub has_time: bool,
    /// Fraction digits past the sixth were dropped.
    pub extra_digits: bool,
    /// Characters other than whitespace follow the value (it was read up to them).
    pub trailing: bool,
}

/// Whitespace as MariaDB skips it around a value.
fn is_space(c: u8) -> bool {
    matches!(c, b' ' | b'\t' | b'\n' | b'\r' | 0x0b | 0x0c)
}

/// Whether only whitespace remains in `b`.
fn blank(b: &[u8]) -> bool {
    b.iter().all(|&c| is_space(c))
}

/// A two-digit year as MySQL completes it (00-69: 20xx, 70-99: 19xx).
fn full_year(y: u32) -> u32 {
    if y < 70 {
        y + 2000
    } else {
        y + 1900
    }
}

/// Days in `month` (1..=12) of `year` (proleptic Gregorian; year 0 is not a leap year, as
/// MySQL counts).
pub fn days_in_month(year: u32, month: u32) -> u32 {
    match month {
        2 if year != 0
            && year.is_multiple_of(4)
            && (!year.is_multiple_of(100) || year.is_multiple_of(400)) =>
        {
            29
        }
        2 => 28,
        4 | 6 | 9 | 11 => 30,
        _ => 31,
    }
}

/// Whether the fields make a date and time MariaDB accepts (zero month or day allowed).
fn calendar(year: u32, month: u32, day: u32, hour: u32, minute: u32, second: u32) -> bool {
    year <= 9999
        && month <= 12
        && day <= 31
        && (month == 0 || day == 0 || day <= days_in_month(year, month))
        && hour <= 23
        && minute <= 59
        && second <= 59
}

/// A run of digits at `b[*i..]` as a number (saturating: a huge run is simply out of range),
/// and how many digits it had.
fn run(b: &[u8], i: &mut usize) -> (u32, usize) {
    let start = *i;
    let mut v: u32 = 0;
    while *i < b.len() && b[*i].is_ascii_digit() {
        v = v.saturating_mul(10).saturating_add(u32::from(b[*i] - b'0'));
        *i += 1;
    }
    (v, *i - start)
}

/// The digits of a fraction at `b[*i..]` as microseconds (the first six count), and whether
/// there were more than six.
fn fraction(b: &[u8], i: &mut usize) -> (u32, bool) {
    let (mut micro, mut extra) = (0, false);
    let mut scale = 100_000;
    while *i < b.len() && b[*i].is_ascii_digit() {
        micro += u32::from(b[*i] - b'0') * scale;
        extra |= scale == 0;
        scale /= 10;
        *i += 1;
    }
    (micro, extra)
}

/// Reads a date or a date and time from `s` (see the module doc); `None` when it is neither.
pub fn read_datetime(s: &str) -> Option<DateTimeRead> {
    read_datetime_bytes(s.as_bytes())
}

/// [`read_datetime`] over bytes (a binary string; only ASCII bytes are ever part of a value).
pub fn read_datetime_bytes(s: &[u8]) -> Option<DateTimeRead> {
    let start = s.iter().position(|&c| !is_space(c)).unwrap_or(s.len());
    let mut b = &s[start..];
    if b.first() == Some(&b'+') {
        b = &b[1..];
    }
    let mut i = 0;
    let (first, first_len) = run(b, &mut i);
    if first_len == 0 {
        return None;
    }
    let next = b.get(i).copied();
    let delimited =
        next.is_some_and(|c| c.is_ascii_punctuation() && !(c == b'.' && first_len >= 12));
    if delimited {
        delimited_datetime(b, first, first_len, i)
    } else {
        digits_datetime(b, i)
    }
}

/// The delimited shape: `first` (of `first_len` digits) is the year and `b[i]` the
/// punctuation after it.
fn delimited_datetime(
    b: &[u8],
    first: u32,
    first_len: usize,
    mut i: usize,
) -> Option<DateTimeRead> {
    // One punctuation character, then digits.
    let part = |i: &mut usize| -> Option<u32> {
        if *i < b.len() && b[*i].is_ascii_punctuation() {
            let mut j = *i + 1;
            let (v, n) = run(b, &mut j);
            if n > 0 {
                *i = j;
                return Some(v);
            }
        }
        None
    };
    let month = part(&mut i)?;
    let day = part(&mut i)?;
    let (mut hour, mut minute, mut second, mut micro) = (0, 0, 0, 0);
    let (mut has_time, mut extra_digits) = (false, false);
    // The separator before the time: whitespace, one `T` or one punctuation character.
    let mut j = i;
    match b.get(j) {
        Some(&c) if is_space(c) => {
            while j < b.len() && is_space(b[j]) {
                j += 1;
            }
        }
        Some(&c) if c == b'T' || c.is_ascii_punctuation() => j += 1,
        _ => {}
    }
    if j > i && j < b.len() && b[j].is_ascii_digit() {
        has_time = true;
        i = j;
        hour = run(b, &mut i).0;
        // `h:`, `h:m:` with nothing after the separator: no loss.
        let dangling = |i: usize| i + 1 == b.len() && b[i].is_ascii_punctuation();
        if let Some(m) = part(&mut i) {
            minute = m;
            if let Some(sec) = part(&mut i) {
                second = sec;
                if b.get(i) == Some(&b'.') {
                    i += 1;
                    (micro, extra_digits) = fraction(b, &mut i);
                }
            } else if dangling(i) {
                i += 1;
            }
        } else if dangling(i) {
            i += 1;
        }
    } else if j == b.len() && j == i + 1 {
        // `2024-01-05-`, `2024-01-05T`: a separator with nothing after it.
        i = j;
    }
    let year = if first_len == 2 && (first, month, day, hour, minute, second) != (0, 0, 0, 0, 0, 0)
    {
        full_year(first)
    } else {
        first
    };
    finish(
        b,
        i,
        [year, month, day, hour, minute, second],
        micro,
        has_time,
        extra_digits,
    )
}

/// The digits-only shape: the run ends at `b[end]`.
fn digits_datetime(b: &[u8], end: usize) -> Option<DateTimeRead> {
    let mut digits: Vec<u8> = b[..end].to_vec();
    let mut i = end;
    // `20240105T101112`: the digits after one `T` continue the run.
    if b.get(i) == Some(&b'T') && b.get(i + 1).is_some_and(u8::is_ascii_digit) {
        let start = i + 1;
        i = start;
        run(b, &mut i);
        digits.extend_from_slice(&b[start..i]);
    } else if b.get(i) == Some(&b'T') && blank(&b[i + 1..]) {
        // `20240105T`: a `T` with nothing after it.
        i += 1;
    }
    let n = digits.len();
    if n < 5 {
        return None;
    }
    let year_len = if n == 8 || n >= 14 { 4 } else { 2 };
    let used = n.min(year_len + 10);
    let number = |r: &[u8]| r.iter().fold(0u32, |v, c| v * 10 + u32::from(c - b'0'));
    let mut fields = [0u32; 6];
    fields[0] = number(&digits[..year_len]);
    let mut at = year_len;
    for f in fields.iter_mut().skip(1) {
        if at >= used {
            break;
        }
        let to = (at + 2).min(used);
        *f = number(&digits[at..to]);
        at = to;
    }
    if year_len == 2 && fields.iter().any(|&f| f != 0) {
        fields[0] = full_year(fields[0]);
    }
    let has_time = used > year_len + 4;
    let (mut micro, mut extra_digits) = (0, false);
    if n > used {
        // Digits past the seconds: the value is read up to them.
        let mut r = finish(b, i, fields, 0, has_time, false)?;
        r.trailing = true;
        return Some(r);
    }
    if used == year_len + 10
        && b.get(i) == Some(&b'.')
        && b.get(i + 1).is_none_or(u8::is_ascii_digit)
    {
        i += 1;
        (micro, extra_digits) = fraction(b, &mut i);
    }
    // Whitespace and then another digit: not a datetime at all.
    let mut j = i;
    while j < b.len() && is_space(b[j]) {
        j += 1;
    }
    if j > i && b.get(j).is_some_and(u8::is_ascii_digit) {
        return None;
    }
    finish(b, i, fields, micro, has_time, extra_digits)
}

/// The value of `fields` (year .. second) and `micro` if it is a calendar value, read up to
/// `b[i]`.
fn finish(
    b: &[u8],
    i: usize,
    fields: [u32; 6],
    micro: u32,
    has_time: bool,
    extra_digits: bool,
) -> Option<DateTimeRead> {
    let [year, month, day, hour, minute, second] = fields;
    if !calendar(year, month, day, hour, minute, second) {
        return None;
    }
    Some(DateTimeRead {
        value: DateTime {
            year: year as u16,
            month: month as u8,
            day: day as u8,
            hour: hour as u8,
            minute: minute as u8,
            second: second as u8,
            micro,
        },
        has_time,
        extra_digits,
        trailing: !blank(&b[i..]),
    })
}

/// The datetime a string compares as beside a date or datetime, as MariaDB reads it there: the
/// value it starts with (trailing characters ignored: `'2024-01-05abc'` is 2024-01-05), and the
/// zero date for a string that is no date (`'abc'`, `''`, `'2024-13-01'`). `None` for a time
/// (`'12:00'`, which MariaDB puts on today's date) and for a date whose only fault is a day past
/// its month's end (`'2024-02-30'`, which MariaDB compares by its fields): the caller compares
/// those as text. (MariaDB also warns 1292 for the garbage and the non-dates; a comparison
/// here has no statement to warn in.)
pub fn compare_operand(s: &[u8]) -> Option<DateTime> {
    let start = s.iter().position(|&c| !is_space(c)).unwrap_or(s.len());
    let b = &s[start..];
    let mut i = 0;
    let lead = run(b, &mut i).1;
    if lead > 0 && b.get(i) == Some(&b':') {
        return None;
    }
    if let Some(r) = read_datetime_bytes(b) {
        return Some(r.value);
    }
    // `y-m-d` with a real month and a day of at most 31.
    let mut i = 0;
    let mut f = [0u32; 3];
    for (k, v) in f.iter_mut().enumerate() {
        let (x, n) = run(b, &mut i);
        if n == 0 {
            return Some(DateTime::ZERO);
        }
        *v = x;
        if k < 2 {
            if !b.get(i).is_some_and(u8::is_ascii_punctuation) {
                return Some(DateTime::ZERO);
            }
            i += 1;
        }
    }
    let [_, month, day] = f;
    if (1..=12).contains(&month) && (1..=31).contains(&day) {
        None
    } else {
        Some(DateTime::ZERO)
    }
}

/// An integer read as a DATETIME (`YYMMDD`, `YYYYMMDD`, `YYMMDDhhmmss`, `YYYYMMDDhhmmss`; years
/// 00-69 are 20YY, 70-99 19YY); 0 is the zero date. `None` for any other number (5, 691232,
/// 20240230); the flag says whether it had a time part.
pub fn datetime_of_int(n: i128) -> Option<(DateTime, bool)> {
    if n == 0 {
        return Some((DateTime::ZERO, false));
    }
    let (full, has_time): (i128, bool) = match n {
        101..=691_231 => ((n + 20_000_000) * 1_000_000, false),
        700_101..=991_231 => ((n + 19_000_000) * 1_000_000, false),
        10_000_101..=99_991_231 => (n * 1_000_000, false),
        101_000_000..=691_231_235_959 => (n + 20_000_000_000_000, true),
        700_101_000_000..=991_231_235_959 => (n + 19_000_000_000_000, true),
        10_000_101_000_000..=99_991_231_235_959 => (n, true),
        _ => return None,
    };
    let (ymd, hms) = (full / 1_000_000, full % 1_000_000);
    let f = [
        ymd / 10_000,
        ymd / 100 % 100,
        ymd % 100,
        hms / 10_000,
        hms / 100 % 100,
        hms % 100,
    ]
    .map(|x| x as u32);
    if !calendar(f[0], f[1], f[2], f[3], f[4], f[5]) {
        return None;
    }
    let d = DateTime {
        year: f[0] as u16,
        month: f[1] as u8,
        day: f[2] as u8,
        hour: f[3] as u8,
        minute: f[4] as u8,
        second: f[5] as u8,
        micro: 0,
    };
    Some((d, has_time))
}

/// A number read as a DATETIME ([`datetime_of_int`] of its integer part); a fraction is the
/// microseconds of a datetime and is dropped (flagged) from a date. `None`, as for integers,
/// for a number that is no date, negative ones included.
pub fn datetime_of_number(v: &Value) -> Option<DateTimeRead> {
    let (int, micro) = match v {
        Value::Int(i) => (i128::from(*i), 0),
        Value::UInt(u) => (i128::from(*u), 0),
        Value::Decimal(d) => {
            let unit = 10i128.checked_pow(d.scale)?;
            let frac = (d.mant % unit).unsigned_abs();
            let micro = if d.scale <= 6 {
                frac * 10u128.pow(6 - d.scale)
            } else {
                frac / 10u128.pow(d.scale - 6)
            };
            (d.trunc(), micro as u32)
        }
        Value::Double(f) => {
            if !f.is_finite() || *f < 0.0 || *f >= 1e15 {
                return None;
            }
            (
                f.trunc() as i128,
                ((f.fract() * 1e6).round() as u32).min(999_999),
            )
        }
        _ => return None,
    };
    if int < 0 {
        return None;
    }
    let (mut value, has_time) = datetime_of_int(int)?;
    let mut extra_digits = false;
    if has_time {
        value.micro = micro;
    } else {
        extra_digits = micro != 0;
    }
    Some(DateTimeRead {
        value,
        has_time,
        extra_digits,
        trailing: false,
    })
}

/// A TIME: `[-]hours:minutes:seconds.micro`, hours past 23 allowed (up to 838), and the
/// number of fractional digits it shows (`fsp`: a TIME(2) column's values show two, a TIME read
/// from the text `'10:00:00.50'` the two written). The fsp is display only: comparisons,
/// arithmetic and keys use [`Time::micros`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Time {
    /// Negative.
    pub neg: bool,
    /// Hours, 0..=838.
    pub hour: u32,
    /// Minutes, 0..=59.
    pub minute: u8,
    /// Seconds, 0..=59.
    pub second: u8,
    /// Microseconds.
    pub micro: u32,
    /// Fractional digits shown (0..=6).
    pub fsp: u8,
}

/// The largest hour of a TIME.
pub const MAX_TIME_HOUR: u32 = 838;

/// The largest TIME in microseconds, `838:59:59.999999`.
pub const MAX_TIME_MICROS: i64 = ((838 * 3600 + 59 * 60 + 59) * 1_000_000) + 999_999;

impl Time {
    /// The time of day of a datetime (fsp 6 when it has a fraction, else 0).
    pub fn of(d: &DateTime) -> Time {
        Time {
            neg: false,
            hour: u32::from(d.hour),
            minute: d.minute,
            second: d.second,
            micro: d.micro,
            fsp: if d.micro != 0 { 6 } else { 0 },
        }
    }

    /// The signed number of microseconds.
    pub fn micros(&self) -> i64 {
        let m = ((i64::from(self.hour) * 60 + i64::from(self.minute)) * 60
            + i64::from(self.second))
            * 1_000_000
            + i64::from(self.micro);
        if self.neg {
            -m
        } else {
            m
        }
    }

    /// The time of `micros` microseconds, showing `fsp` digits (no range check: callers clip
    /// with [`Time::clipped`]).
    pub fn from_micros(micros: i64, fsp: u8) -> Time {
        let a = micros.unsigned_abs();
        let secs = a / 1_000_000;
        Time {
            neg: micros < 0,
            hour: u32::try_from(secs / 3600).unwrap_or(u32::MAX),
            minute: (secs / 60 % 60) as u8,
            second: (secs % 60) as u8,
            micro: (a % 1_000_000) as u32,
            fsp: fsp.min(6),
        }
    }

    /// `micros` within TIME's range (MariaDB clips to `±838:59:59` and the fsp's largest
    /// fraction, `838:59:59.999999` at fsp 6); the flag says it was clipped.
    pub fn clipped(micros: i64, fsp: u8) -> (Time, bool) {
        let fsp = fsp.min(6);
        let max = MAX_TIME_MICROS - 999_999 + i64::from(truncate_micro(999_999, fsp));
        if micros.abs() > max {
            (Time::from_micros(max * micros.signum(), fsp), true)
        } else {
            (Time::from_micros(micros, fsp), false)
        }
    }

    /// The same time showing `fsp` digits, the fraction truncated to them.
    pub fn with_fsp(self, fsp: u8) -> Time {
        let fsp = fsp.min(6);
        Time {
            micro: truncate_micro(self.micro, fsp),
            fsp,
            ..self
        }
    }

    /// As a number, `[-]hhmmss[.ffffff]`, as TIME reads in numeric context: the integer part
    /// and the microseconds, both signed.
    pub fn number(&self) -> (i64, i64) {
        let hms =
            i64::from(self.hour) * 10_000 + i64::from(self.minute) * 100 + i64::from(self.second);
        let micro = i64::from(self.micro);
        if self.neg {
            (-hms, -micro)
        } else {
            (hms, micro)
        }
    }

    /// `[-]hh:mm:ss` and exactly `fsp` fractional digits (truncated), as a TIME(fsp) shows.
    pub fn text_fsp(&self, fsp: u8) -> String {
        let mut s = format!(
            "{}{:02}:{:02}:{:02}",
            if self.neg { "-" } else { "" },
            self.hour,
            self.minute,
            self.second
        );
        if fsp > 0 {
            s.push('.');
            s.push_str(&format!("{:06}", self.micro)[..usize::from(fsp.min(6))]);
        }
        s
    }

    /// The text with the value's own fsp.
    pub fn text(&self) -> String {
        self.text_fsp(self.fsp)
    }
}

/// How many fractional digits a temporal text writes (at most 6): the digits after the `.`
/// that follows the seconds (`'10:00:00.50'`: 2, `'20240105101112.5'`: 1, `'10:00'`: 0).
pub fn frac_digits(s: &[u8]) -> u8 {
    let start = s.iter().rposition(|&c| c == b':').map_or(0, |i| i + 1);
    let b = &s[start..];
    let Some(dot) = b.iter().position(|&c| c == b'.') else {
        return 0;
    };
    if start == 0
        && !b[..dot]
            .iter()
            .all(|c| c.is_ascii_digit() || is_space(*c) || *c == b'-' || *c == b'+')
    {
        return 0;
    }
    b[dot + 1..]
        .iter()
        .take_while(|c| c.is_ascii_digit())
        .count()
        .min(6) as u8
}

/// What [`read_time`] found in a text.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TimeRead {
    /// The time.
    pub value: Time,
    /// Characters other than whitespace follow the value.
    pub trailing: bool,
    /// The hours were past 838 and the value is `838:59:59`.
    pub clipped: bool,
    /// The text was a datetime (MariaDB's truncation message then says "datetime").
    pub datetime: bool,
}

/// Whether `b` starts like a delimited date followed by a time (`2024-01-05 25:00:00`): such a
/// text is read as a datetime or not at all.
fn datetime_shaped(b: &[u8]) -> bool {
    let mut i = 0;
    for k in 0..3 {
        if run(b, &mut i).1 == 0 {
            return false;
        }
        if k < 2 {
            if !b.get(i).is_some_and(u8::is_ascii_punctuation) {
                return false;
            }
            i += 1;
        }
    }
    let mut j = i;
    if b.get(j) == Some(&b'T') {
        j += 1;
    } else {
        while j < b.len() && is_space(b[j]) {
            j += 1;
        }
    }
    j > i && b.get(j).is_some_and(u8::is_ascii_digit)
}

/// Reads a TIME from `s` (see the module doc); `None` when it is none.
pub fn read_time(s: &[u8]) -> Option<TimeRead> {
    let start = s.iter().position(|&c| !is_space(c)).unwrap_or(s.len());
    let b = &s[start..];
    // `h:m...` is a time, whatever else it could be read as (`10:11:12.5` is no date).
    let lead = b.iter().take_while(|c| c.is_ascii_digit()).count();
    let hours_first = b.get(lead) == Some(&b':');
    // Fewer than 12 digits alone (a fraction may follow) are `hhmmss`, never a datetime:
    // `1000000` is `100:00:00`, not the 7-digit datetime `10-00-00 0`.
    let end = b.iter().rposition(|&c| !is_space(c)).map_or(0, |i| i + 1);
    let short_digits = lead < 12 && (lead == end || b.get(lead) == Some(&b'.'));
    if !hours_first && !short_digits {
        match read_datetime_bytes(b) {
            Some(r) if r.has_time => {
                return Some(TimeRead {
                    value: Time {
                        fsp: frac_digits(b),
                        ..Time::of(&r.value)
                    },
                    trailing: r.trailing,
                    clipped: false,
                    datetime: true,
                })
            }
            None if datetime_shaped(b) => return None,
            _ => {}
        }
    }
    let mut i = 0;
    let neg = b.first() == Some(&b'-');
    if neg {
        i += 1;
    }
    let (first, n) = run(b, &mut i);
    if n == 0 {
        return None;
    }
    let (mut hours, mut minute, mut second) = (u64::from(first), 0u32, 0u32);
    let (mut micro, mut fsp) = (0, 0u8);
    let colon_part = |i: &mut usize| -> Option<u32> {
        if b.get(*i) == Some(&b':') && b.get(*i + 1).is_some_and(u8::is_ascii_digit) {
            *i += 1;
            Some(run(b, i).0)
        } else {
            None
        }
    };
    let mut j = i;
    while j < b.len() && is_space(b[j]) {
        j += 1;
    }
    let days = j > i && b.get(j).is_some_and(u8::is_ascii_digit);
    if days || b.get(i) == Some(&b':') {
        if days {
            i = j;
            hours = u64::from(first) * 24 + u64::from(run(b, &mut i).0);
        }
        if let Some(m) = colon_part(&mut i) {
            minute = m;
            if let Some(s) = colon_part(&mut i) {
                second = s;
            }
        } else if !days {
            // `10:` alone.
            i += 1;
        }
    } else {
        // A run of digits: hhmmss from the right.
        let v = u64::from(first);
        if n > 10 {
            return None;
        }
        (hours, minute, second) = (v / 10_000, (v / 100 % 100) as u32, (v % 100) as u32);
    }
    if b.get(i) == Some(&b'.') && b.get(i + 1).is_some_and(u8::is_ascii_digit) {
        i += 1;
        let from = i;
        micro = fraction(b, &mut i).0;
        fsp = (i - from).min(6) as u8;
    }
    if minute > 59 || second > 59 {
        return None;
    }
    let clipped = hours > u64::from(MAX_TIME_HOUR);
    let value = if clipped {
        Time {
            neg,
            hour: MAX_TIME_HOUR,
            minute: 59,
            second: 59,
            micro: 0,
            fsp: 0,
        }
    } else {
        Time {
            neg,
            hour: hours as u32,
            minute: minute as u8,
            second: second as u8,
            micro,
            fsp,
        }
    };
    Some(TimeRead {
        value,
        trailing: !blank(&b[i..]),
        clipped,
        datetime: false,
    })
}

/// 1292 with `message` as a warning of the statement.
fn warn_1292(ctx: &mut dyn Context, message: String) {
    ctx.warn(shoal_errors::ER_TRUNCATED_WRONG_VALUE.code, message);
}

/// A value as a date and time the way expressions read one (CAST, the date functions), with
/// MariaDB's diagnostics (see the module doc's table); `None` for NULL or a value that is no
/// date. The flag says whether the value carries a time of day (a DATETIME, or a text or number
/// with a time).
pub fn datetime_of(ctx: &mut dyn Context, v: &Value) -> Option<(DateTime, bool)> {
    let read = match v {
        Value::Null => return None,
        Value::Date(d) => return Some((*d, false)),
        Value::DateTime(d, _) => return Some((*d, true)),
        // A TIME is that long after today's midnight, as MariaDB converts it.
        Value::Time(t) => return Some((crate::value::time_on_today(t), true)),
        Value::Str(s) => read_datetime(s),
        Value::Bytes(b) => read_datetime_bytes(b),
        Value::Int(_) | Value::UInt(_) | Value::Decimal(_) | Value::Double(_) => {
            datetime_of_number(v)
        }
    };
    let shown = || v.to_text().unwrap_or_default();
    let Some(r) = read else {
        warn_1292(ctx, format!("Incorrect datetime value: '{}'", shown()));
        return None;
    };
    let kind = if r.has_time { "datetime" } else { "date" };
    if r.trailing {
        warn_1292(
            ctx,
            format!("Truncated incorrect {kind} value: '{}'", shown()),
        );
    } else if r.extra_digits {
        ctx.note(
            shoal_errors::ER_TRUNCATED_WRONG_VALUE.code,
            format!("Truncated incorrect {kind} value: '{}'", shown()),
        );
    }
    Some((r.value, r.has_time))
}

/// What a value reads as as a TIME: `Ok` for values that are one already (NULL, TIME, DATE,
/// DATETIME: no diagnostics), `Err` with what the reader found in a text or number.
fn read_time_value(v: &Value) -> Result<Option<Time>, Option<TimeRead>> {
    Err(match v {
        Value::Null => return Ok(None),
        Value::Time(t) => return Ok(Some(*t)),
        Value::Date(d) => return Ok(Some(Time::of(d))),
        Value::DateTime(d, fsp) => return Ok(Some(Time::of(d).with_fsp(*fsp))),
        Value::Str(s) => read_time(s.as_bytes()),
        Value::Bytes(b) => read_time(b),
        // A number of more than 7 digits is a datetime (`20240105` is midnight).
        n => {
            let big = n.to_f64().is_some_and(|f| f.abs() >= 1e7);
            match (big, datetime_of_number(n)) {
                (true, Some(r)) => return Ok(Some(Time::of(&r.value))),
                _ => read_time(n.to_text().unwrap_or_default().as_bytes()),
            }
        }
    })
}

/// The microseconds a value compares as beside a TIME, as MariaDB compares them: a text or
/// number read as a time (clipped to the range), and `00:00:00` for one that is no time
/// (MariaDB warns 1292 there; comparisons here have no diagnostics). `None` for NULL.
pub fn time_operand(v: &Value) -> Option<i64> {
    match read_time_value(v) {
        Ok(t) => t.map(|t| t.micros()),
        Err(r) => Some(r.map_or(0, |r| r.value.micros())),
    }
}

/// A value as a TIME the way expressions read one (HOUR(), TIME(), CAST AS TIME), with
/// MariaDB's warnings; `None` for NULL or a value that is no time.
pub fn time_of(ctx: &mut dyn Context, v: &Value) -> Option<Time> {
    let r = match read_time_value(v) {
        Ok(t) => return t,
        Err(r) => r,
    };
    let shown = || v.to_text().unwrap_or_default();
    let Some(r) = r else {
        warn_1292(ctx, format!("Incorrect time value: '{}'", shown()));
        return None;
    };
    if r.trailing || r.clipped {
        let kind = if r.datetime { "datetime" } else { "time" };
        warn_1292(
            ctx,
            format!("Truncated incorrect {kind} value: '{}'", shown()),
        );
    }
    Some(r.value)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dt(s: &str) -> Option<(String, bool, bool)> {
        read_datetime(s).map(|r| {
            let d = r.value;
            (
                format!(
                    "{:04}-{:02}-{:02} {:02}:{:02}:{:02}.{:06}",
                    d.year, d.month, d.day, d.hour, d.minute, d.second, d.micro
                ),
                r.has_time,
                r.trailing,
            )
        })
    }

    #[test]
    fn datetime_forms_as_mariadb_reads_them() {
        let exact = |s: &str, want: &str| {
            let got = dt(s).unwrap_or_else(|| panic!("{s:?} is a datetime"));
            assert_eq!((got.0.as_str(), got.2), (want, false), "{s:?}");
        };
        exact("2024-1-5", "2024-01-05 00:00:00.000000");
        exact("2024-01-05 3:4:5", "2024-01-05 03:04:05.000000");
        exact("20240105", "2024-01-05 00:00:00.000000");
        exact("240105", "2024-01-05 00:00:00.000000");
        exact("2024/01/05", "2024-01-05 00:00:00.000000");
        exact("2024.01.05", "2024-01-05 00:00:00.000000");
        exact("2024-01-05T03:04:05", "2024-01-05 03:04:05.000000");
        exact("2024-01-05 03:04:05.1234567", "2024-01-05 03:04:05.123456");
        exact("0000-00-00", "0000-00-00 00:00:00.000000");
        exact("00-00-00 01:00:00", "2000-00-00 01:00:00.000000");
        exact("000000", "0000-00-00 00:00:00.000000");
        exact("1-01-05", "0001-01-05 00:00:00.000000");
        exact("69-01-05", "2069-01-05 00:00:00.000000");
        exact("70-01-05", "1970-01-05 00:00:00.000000");
        exact("9901051", "1999-01-05 01:00:00.000000");
        exact("99010", "1999-01-00 00:00:00.000000");
        exact("20240105T101112", "2024-01-05 10:11:12.000000");
        exact("20240105101112.5", "2024-01-05 10:11:12.500000");
        exact("  +2024-01-05\t", "2024-01-05 00:00:00.000000");
        exact("2024-01-05T", "2024-01-05 00:00:00.000000");
        exact("20240105T", "2024-01-05 00:00:00.000000");
        exact("2024-01-05-", "2024-01-05 00:00:00.000000");
        exact("2024-01-05 10:", "2024-01-05 10:00:00.000000");
        exact("2024-01-05.10.11.12", "2024-01-05 10:11:12.000000");
        exact("2024-01-05\t\t10", "2024-01-05 10:00:00.000000");
        exact("2024-01-05 10:11.5", "2024-01-05 10:11:05.000000");
        let cut = |s: &str, want: &str| {
            let got = dt(s).unwrap_or_else(|| panic!("{s:?} starts with a datetime"));
            assert_eq!((got.0.as_str(), got.2), (want, true), "{s:?}");
        };
        cut("2024-01-05abc", "2024-01-05 00:00:00.000000");
        cut("2024-01-05 :10", "2024-01-05 00:00:00.000000");
        cut("2024-01-05--10", "2024-01-05 00:00:00.000000");
        cut("2024-01-05 10:11:12,5", "2024-01-05 10:11:12.000000");
        cut("2024-01-05 10::12", "2024-01-05 10:00:00.000000");
        cut("202401051030045", "2024-01-05 10:30:04.000000");
        cut("20240105 x", "2024-01-05 00:00:00.000000");
        for s in [
            "",
            "abc",
            "2024",
            "2024-1",
            "2024-01-",
            "2024--01-05",
            "2024 01 05",
            "2024-02-30",
            "1900-02-29",
            "2024-13-01",
            "2024-01-05 24:00:00",
            "2024-01-05 10:60",
            "99999-01-01",
            "-2024-01-05",
            "/2024-01-05",
            "20240105 10:11:12",
            "2024-01-05 101112",
            "20240105.123",
            "990105103.5",
            "2024010510",
            "838:59:59",
            "é",
            "99999999999999999999",
        ] {
            assert_eq!(dt(s), None, "{s:?}");
        }
    }

    #[test]
    fn comparison_operands() {
        let c = |s: &str| compare_operand(s.as_bytes()).map(|d| (d.year, d.month, d.day));
        assert_eq!(c("2024-01-05abc"), Some((2024, 1, 5)));
        assert_eq!(c("abc"), Some((0, 0, 0)));
        assert_eq!(c(""), Some((0, 0, 0)));
        assert_eq!(c("2024-13-01"), Some((0, 0, 0)));
        assert_eq!(c("2024"), Some((0, 0, 0)));
        assert_eq!(c("2024-02-30"), None);
        assert_eq!(c("12:00:00"), None);
    }

    #[test]
    fn numbers_as_dates() {
        assert_eq!(datetime_of_int(20240105).map(|d| d.0.day), Some(5));
        assert_eq!(datetime_of_int(240105).map(|d| d.0.year), Some(2024));
        assert_eq!(datetime_of_int(20240105103004).map(|d| d.1), Some(true));
        for n in [5, 99010, 20240230, 1_000_000, 2024010510, -1] {
            assert_eq!(datetime_of_int(n), None, "{n}");
        }
        let r = datetime_of_number(&Value::Double(20240105.5)).unwrap();
        assert!(r.extra_digits && !r.has_time);
    }

    #[test]
    fn time_range_and_numbers() {
        let (t, clipped) = Time::clipped(-900 * 3_600_000_000, 2);
        assert!(clipped);
        assert_eq!(t.text(), "-838:59:59.99");
        let (t, clipped) = Time::clipped(MAX_TIME_MICROS, 6);
        assert!(!clipped);
        assert_eq!(t.text(), "838:59:59.999999");
        let t = Time::from_micros(-3_723_500_000, 1);
        assert_eq!(
            (t.text(), t.number()),
            ("-01:02:03.5".into(), (-10203, -500_000))
        );
        assert_eq!(Time::from_micros(t.micros(), 6).micros(), -3_723_500_000);
        assert_eq!(frac_digits(b"10:00:00.50"), 2);
        assert_eq!(frac_digits(b"20240105101112.5"), 1);
        assert_eq!(frac_digits(b"10:00"), 0);
        assert_eq!(frac_digits(b"2024-01-05 10:00:00.1234567"), 6);
    }

    #[test]
    fn time_forms_as_mariadb_reads_them() {
        let t = |s: &str| read_time(s.as_bytes()).map(|r| (r.value.text(), r.trailing));
        assert_eq!(t("838:59:59"), Some(("838:59:59".into(), false)));
        assert_eq!(t("-01:00"), Some(("-01:00:00".into(), false)));
        assert_eq!(t("1 02:03:04"), Some(("26:03:04".into(), false)));
        assert_eq!(t("10203"), Some(("01:02:03".into(), false)));
        assert_eq!(t("2024-1-5"), Some(("00:20:24".into(), true)));
        // The fraction shows the digits written.
        assert_eq!(t("2024.01.05"), Some(("00:20:24.01".into(), true)));
        assert_eq!(t("1000000"), Some(("100:00:00".into(), false)));
        assert_eq!(t("1000000.250"), Some(("100:00:00.250".into(), false)));
        assert_eq!(t("2024-01-05 3:4:5.5"), Some(("03:04:05.5".into(), false)));
        assert_eq!(t("2024-01-05 3:4:5"), Some(("03:04:05".into(), false)));
        assert_eq!(t("240105"), Some(("24:01:05".into(), false)));
        assert_eq!(t("1:2"), Some(("01:02:00".into(), false)));
        assert_eq!(t("10:11:12.5"), Some(("10:11:12.5".into(), false)));
        let r = read_time(b"20240105").unwrap();
        assert!(r.clipped && r.value.hour == MAX_TIME_HOUR);
        for s in ["", "abc", "99-12-31", "1234567", "2024-01-05 25:00:00", "-"] {
            assert_eq!(t(s), None, "{s:?}");
        }
    }
}
