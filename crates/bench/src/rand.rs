//! sysbench-compatible random numbers.
//!
//! sysbench 1.0 draws every row id through `sysbench.rand.default(1, table_size)`, whose
//! distribution is chosen by `--rand-type` (`special` by default). To load a server the same
//! way sysbench does, we re-implement its generators with the same parameters and the same
//! arithmetic (including its integer truncations):
//!
//! * `uniform`: `a + r % (b - a + 1)`.
//! * `gaussian`: the mean of `--rand-spec-iter` uniform doubles, scaled to `[a, b]`
//!   (an approximation of a normal distribution centred in the range).
//! * `special` (default): the range is stretched by `100 / (100 - rand_spec_res)` (integer
//!   division, 4 with the default 75); a draw that lands in the original range is "gaussian",
//!   the rest (75 % by default) is folded onto the `--rand-spec-pct` percent (1 % by default)
//!   of values around the middle of the range: a hot spot.
//! * `pareto`: `a + (b - a + 1) * u^(ln h / ln(1 - h))` with `h = --rand-pareto-h`.
//!
//! The underlying generator is xoshiro256** (as in sysbench), seeded per client from
//! `--rand-seed` (or the clock) through splitmix64, so each client has an independent stream.
//! `rand_string` implements `sysbench.rand.string`: `#` becomes a digit, `@` a letter.

use std::str::FromStr;

/// Distribution used for row ids (`--rand-type`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum RandType {
    Uniform,
    Gaussian,
    Special,
    Pareto,
}

impl FromStr for RandType {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "uniform" => Ok(Self::Uniform),
            "gaussian" => Ok(Self::Gaussian),
            "special" => Ok(Self::Special),
            "pareto" => Ok(Self::Pareto),
            other => Err(format!(
                "unknown --rand-type '{other}' (uniform, gaussian, special, pareto)"
            )),
        }
    }
}

/// Parameters of the id distribution (sysbench's `--rand-*` options).
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct RandSpec {
    pub kind: RandType,
    /// `--rand-spec-iter`: uniform draws summed for gaussian-like values.
    pub iter: u32,
    /// `--rand-spec-pct`: percentage of values treated as hot ("special").
    pub pct: u32,
    /// `--rand-spec-res`: percentage of draws that go to the hot values.
    pub res: u32,
    /// `--rand-pareto-h`.
    pub pareto_h: f64,
}

impl Default for RandSpec {
    fn default() -> Self {
        Self {
            kind: RandType::Special,
            iter: 12,
            pct: 1,
            res: 75,
            pareto_h: 0.2,
        }
    }
}

/// xoshiro256** generator (public domain algorithm by Blackman and Vigna).
#[derive(Debug, Clone)]
pub struct Rng {
    s: [u64; 4],
}

fn splitmix64(state: &mut u64) -> u64 {
    *state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
    let mut z = *state;
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

impl Rng {
    /// A generator for stream `stream` of seed `seed`.
    pub fn new(seed: u64, stream: u64) -> Self {
        let mut st = seed ^ stream.wrapping_mul(0xD134_2543_DE82_EF95);
        let mut s = [0u64; 4];
        for v in &mut s {
            *v = splitmix64(&mut st);
        }
        if s.iter().all(|&v| v == 0) {
            s[0] = 1;
        }
        Self { s }
    }

    pub fn next_u64(&mut self) -> u64 {
        let result = self.s[1].wrapping_mul(5).rotate_left(7).wrapping_mul(9);
        let t = self.s[1] << 17;
        self.s[2] ^= self.s[0];
        self.s[3] ^= self.s[1];
        self.s[1] ^= self.s[2];
        self.s[0] ^= self.s[3];
        self.s[2] ^= t;
        self.s[3] = self.s[3].rotate_left(45);
        result
    }

    /// Uniform double in [0, 1).
    pub fn next_f64(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 * (1.0 / (1u64 << 53) as f64)
    }

    /// sysbench `sb_rand_uniform(a, b)`: inclusive bounds.
    pub fn uniform(&mut self, a: u32, b: u32) -> u32 {
        if b <= a {
            return a;
        }
        a + (self.next_u64() % (u64::from(b - a) + 1)) as u32
    }

    fn gaussian(&mut self, a: u32, b: u32, iter: u32) -> u32 {
        let t = f64::from(b - a);
        let iter = iter.max(1);
        let mut sum = 0.0;
        for _ in 0..iter {
            sum += self.next_f64();
        }
        a + (sum * t / f64::from(iter)) as u32
    }

    fn special(&mut self, a: u32, b: u32, spec: &RandSpec) -> u32 {
        if a >= b {
            return a;
        }
        let t = u64::from(b - a);
        let res = u64::from(spec.res.min(99));
        let range_size = t * (100 / (100 - res));
        let r = if range_size == 0 {
            0
        } else {
            self.next_u64() % (range_size + 1)
        };
        if r < t {
            return self.gaussian(a, b, spec.iter);
        }
        let pct = u64::from(spec.pct);
        let d = (t * pct / 100).max(1);
        let v = r % d + (t / 2).saturating_sub(t * pct / 200);
        a + v as u32
    }

    fn pareto(&mut self, a: u32, b: u32, h: f64) -> u32 {
        let power = h.ln() / (1.0 - h).ln();
        let v = (f64::from(b - a) + 1.0) * self.next_f64().powf(power);
        (a + v as u32).min(b)
    }

    /// sysbench `sysbench.rand.default(a, b)` with the configured distribution.
    pub fn default_dist(&mut self, a: u32, b: u32, spec: &RandSpec) -> u32 {
        if b <= a {
            return a;
        }
        match spec.kind {
            RandType::Uniform => self.uniform(a, b),
            RandType::Gaussian => self.gaussian(a, b, spec.iter),
            RandType::Special => self.special(a, b, spec),
            RandType::Pareto => self.pareto(a, b, spec.pareto_h),
        }
    }

    /// sysbench `sysbench.rand.string(template)`: `#` -> digit, `@` -> lowercase letter.
    pub fn rand_string_into(&mut self, template: &str, out: &mut String) {
        out.clear();
        for ch in template.chars() {
            match ch {
                '#' => out.push((b'0' + self.uniform(0, 9) as u8) as char),
                '@' => out.push((b'a' + self.uniform(0, 25) as u8) as char),
                c => out.push(c),
            }
        }
    }

    pub fn rand_string(&mut self, template: &str) -> String {
        let mut s = String::with_capacity(template.len());
        self.rand_string_into(template, &mut s);
        s
    }
}

/// The 120-character template of column `c` (sysbench `c_value_template`).
pub const C_TEMPLATE: &str = "###########-###########-###########-###########-###########-###########-###########-###########-###########-###########";
/// The 60-character template of column `pad`.
pub const PAD_TEMPLATE: &str = "###########-###########-###########-###########-###########";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn templates_have_sysbench_lengths() {
        assert_eq!(C_TEMPLATE.len(), 119);
        assert_eq!(PAD_TEMPLATE.len(), 59);
        let mut r = Rng::new(1, 2);
        let s = r.rand_string(C_TEMPLATE);
        assert_eq!(s.len(), 119);
        assert!(s.chars().all(|c| c.is_ascii_digit() || c == '-'));
        assert_ne!(s, r.rand_string(C_TEMPLATE));
    }

    #[test]
    fn all_distributions_stay_in_range() {
        for kind in [
            RandType::Uniform,
            RandType::Gaussian,
            RandType::Special,
            RandType::Pareto,
        ] {
            let spec = RandSpec {
                kind,
                ..RandSpec::default()
            };
            let mut r = Rng::new(42, 0);
            for _ in 0..100_000 {
                let v = r.default_dist(1, 1000, &spec);
                assert!((1..=1000).contains(&v), "{kind:?} gave {v}");
            }
        }
    }

    #[test]
    fn special_has_a_hot_spot_in_the_middle() {
        let spec = RandSpec::default();
        let mut r = Rng::new(7, 0);
        let n = 200_000;
        let hot = (0..n)
            .map(|_| r.default_dist(1, 10_000, &spec))
            .filter(|v| (4950..=5051).contains(v))
            .count();
        // 75 % of the draws go to the 1 % hot values (plus a few gaussian ones).
        let share = hot as f64 / n as f64;
        assert!(share > 0.70 && share < 0.85, "hot share {share}");
    }

    #[test]
    fn uniform_is_flat() {
        let mut r = Rng::new(3, 9);
        let mut buckets = [0u32; 10];
        for _ in 0..100_000 {
            buckets[(r.uniform(0, 9)) as usize] += 1;
        }
        for b in buckets {
            assert!((9_000..11_000).contains(&b), "{buckets:?}");
        }
    }
}
