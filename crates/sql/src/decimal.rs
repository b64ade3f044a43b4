//! Exact decimal arithmetic for DECIMAL values: an `i128` mantissa with a decimal scale.
//!
//! MySQL DECIMAL has up to 65 digits; we keep up to 38 (what fits an `i128`) and report an
//! overflow (error 1690) beyond that instead of losing precision silently. Scales are capped at
//! 30 like MySQL; multiplication and division round half away from zero to the capped scale.

use std::cmp::Ordering;
use std::fmt;

/// Maximum number of fractional digits (MySQL's `DECIMAL_MAX_SCALE`).
pub const MAX_SCALE: u32 = 30;

/// An exact decimal number `mant * 10^-scale`.
#[derive(Debug, Clone, Copy)]
pub struct Decimal {
    /// Unscaled value.
    pub mant: i128,
    /// Number of fractional digits.
    pub scale: u32,
}

fn pow10(n: u32) -> Option<i128> {
    10i128.checked_pow(n)
}

impl Decimal {
    /// `mant * 10^-scale`.
    pub fn new(mant: i128, scale: u32) -> Self {
        Decimal { mant, scale }
    }

    /// From an integer.
    pub fn from_i128(i: i128) -> Self {
        Decimal { mant: i, scale: 0 }
    }

    /// Parses `[-+]digits[.digits]` (no exponent); `None` if malformed or too long.
    pub fn parse(s: &str) -> Option<Decimal> {
        let s = s.trim();
        let (neg, body) = match s.as_bytes().first() {
            Some(b'-') => (true, &s[1..]),
            Some(b'+') => (false, &s[1..]),
            _ => (false, s),
        };
        let (int, frac) = match body.find('.') {
            Some(p) => (&body[..p], &body[p + 1..]),
            None => (body, ""),
        };
        if int.is_empty() && frac.is_empty() {
            return None;
        }
        if !int.bytes().chain(frac.bytes()).all(|b| b.is_ascii_digit()) {
            return None;
        }
        let mut mant: i128 = 0;
        for b in int.bytes().chain(frac.bytes()) {
            mant = mant.checked_mul(10)?.checked_add((b - b'0') as i128)?;
        }
        Some(Decimal {
            mant: if neg { -mant } else { mant },
            scale: frac.len() as u32,
        })
    }

    /// Rescales to `scale` digits (rounding half away from zero when reducing).
    pub fn rescale(self, scale: u32) -> Option<Decimal> {
        match scale.cmp(&self.scale) {
            Ordering::Equal => Some(self),
            Ordering::Greater => Some(Decimal {
                mant: self.mant.checked_mul(pow10(scale - self.scale)?)?,
                scale,
            }),
            Ordering::Less => {
                let div = pow10(self.scale - scale)?;
                let q = self.mant / div;
                let r = self.mant % div;
                let q = if r.abs() * 2 >= div {
                    q + self.mant.signum()
                } else {
                    q
                };
                Some(Decimal { mant: q, scale })
            }
        }
    }

    fn align(a: Decimal, b: Decimal) -> Option<(i128, i128, u32)> {
        let s = a.scale.max(b.scale);
        Some((a.rescale(s)?.mant, b.rescale(s)?.mant, s))
    }

    /// Exact sum; `None` on overflow.
    pub fn checked_add(self, o: Decimal) -> Option<Decimal> {
        let (a, b, s) = Self::align(self, o)?;
        Some(Decimal::new(a.checked_add(b)?, s))
    }

    /// Exact difference; `None` on overflow.
    pub fn checked_sub(self, o: Decimal) -> Option<Decimal> {
        let (a, b, s) = Self::align(self, o)?;
        Some(Decimal::new(a.checked_sub(b)?, s))
    }

    /// Exact product (scale capped at [`MAX_SCALE`]); `None` on overflow.
    pub fn checked_mul(self, o: Decimal) -> Option<Decimal> {
        let d = Decimal::new(self.mant.checked_mul(o.mant)?, self.scale + o.scale);
        if d.scale > MAX_SCALE {
            d.rescale(MAX_SCALE)
        } else {
            Some(d)
        }
    }

    /// Quotient with `scale` fractional digits; `None` on overflow or division by zero.
    pub fn checked_div(self, o: Decimal, scale: u32) -> Option<Decimal> {
        if o.mant == 0 {
            return None;
        }
        let scale = scale.min(MAX_SCALE);
        // result = a/b with `scale` digits: (a * 10^(scale + b.scale - a.scale + 1)) / b, rounded.
        let shift = scale as i64 + o.scale as i64 - self.scale as i64 + 1;
        let (num, den) = if shift >= 0 {
            (self.mant.checked_mul(pow10(shift as u32)?)?, o.mant)
        } else {
            (self.mant, o.mant.checked_mul(pow10((-shift) as u32)?)?)
        };
        let q = num / den; // one extra digit for rounding
        let r = q % 10;
        let mut q = q / 10;
        if r.abs() >= 5 {
            q += if (num < 0) != (den < 0) { -1 } else { 1 };
        }
        Some(Decimal::new(q, scale))
    }

    /// Integer quotient truncated toward zero (`DIV`); `None` on overflow or division by zero.
    pub fn checked_int_div(self, o: Decimal) -> Option<i128> {
        if o.mant == 0 {
            return None;
        }
        let (a, b, _) = Self::align(self, o)?;
        Some(a / b)
    }

    /// Remainder with the sign of the dividend; `None` on division by zero.
    pub fn checked_rem(self, o: Decimal) -> Option<Decimal> {
        if o.mant == 0 {
            return None;
        }
        let (a, b, s) = Self::align(self, o)?;
        Some(Decimal::new(a % b, s))
    }

    /// Negation.
    pub fn negated(self) -> Decimal {
        Decimal::new(-self.mant, self.scale)
    }

    /// Nearest double.
    pub fn to_f64(self) -> f64 {
        self.to_string().parse().unwrap_or(0.0)
    }

    /// Integer part (truncated toward zero).
    pub fn trunc(self) -> i128 {
        self.mant / pow10(self.scale).unwrap_or(1)
    }

    /// Rounded to an integer (half away from zero).
    pub fn round_int(self) -> i128 {
        self.rescale(0).map(|d| d.mant).unwrap_or(0)
    }

    /// Whether it is zero.
    pub fn is_zero(self) -> bool {
        self.mant == 0
    }
}

impl PartialEq for Decimal {
    fn eq(&self, o: &Self) -> bool {
        self.cmp(o) == Ordering::Equal
    }
}
impl Eq for Decimal {}
impl PartialOrd for Decimal {
    fn partial_cmp(&self, o: &Self) -> Option<Ordering> {
        Some(self.cmp(o))
    }
}
impl Ord for Decimal {
    fn cmp(&self, o: &Self) -> Ordering {
        match Decimal::align(*self, *o) {
            Some((a, b, _)) => a.cmp(&b),
            None => self.to_f64().total_cmp(&o.to_f64()),
        }
    }
}

impl fmt::Display for Decimal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let neg = self.mant < 0;
        let digits = self.mant.unsigned_abs().to_string();
        let s = self.scale as usize;
        let body = if s == 0 {
            digits
        } else if digits.len() > s {
            format!(
                "{}.{}",
                &digits[..digits.len() - s],
                &digits[digits.len() - s..]
            )
        } else {
            format!("0.{}{}", "0".repeat(s - digits.len()), digits)
        };
        if neg {
            write!(f, "-{body}")
        } else {
            write!(f, "{body}")
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn d(s: &str) -> Decimal {
        Decimal::parse(s).unwrap()
    }

    #[test]
    fn parse_and_print() {
        assert_eq!(d("1.50").to_string(), "1.50");
        assert_eq!(d("-0.05").to_string(), "-0.05");
        assert_eq!(d(".5").to_string(), "0.5");
        assert!(Decimal::parse("1.2.3").is_none());
        assert!(Decimal::parse("abc").is_none());
    }

    #[test]
    fn arithmetic_is_exact() {
        assert_eq!(d("0.1").checked_add(d("0.2")).unwrap().to_string(), "0.3");
        assert_eq!(
            d("1.5").checked_mul(d("2.25")).unwrap().to_string(),
            "3.375"
        );
        assert_eq!(d("1").checked_div(d("3"), 4).unwrap().to_string(), "0.3333");
        assert_eq!(d("2").checked_div(d("3"), 4).unwrap().to_string(), "0.6667");
        assert_eq!(
            d("-2").checked_div(d("3"), 4).unwrap().to_string(),
            "-0.6667"
        );
        assert_eq!(
            d("10").checked_div(d("4"), 4).unwrap().to_string(),
            "2.5000"
        );
        assert!(d("1").checked_div(d("0"), 4).is_none());
        assert_eq!(d("7.5").checked_rem(d("2")).unwrap().to_string(), "1.5");
        assert_eq!(d("0.9999999").checked_int_div(d("1")), Some(0));
        assert_eq!(d("-7.5").checked_int_div(d("2")), Some(-3));
        assert_eq!(d("1.10"), d("1.1"));
        assert!(d("1.09") < d("1.1"));
        assert_eq!(d("2.5").round_int(), 3);
        assert_eq!(d("-2.5").round_int(), -3);
    }
}
