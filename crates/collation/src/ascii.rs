//! ASCII text's fold in one pass: check, copy and uppercase 16 bytes at a time.
//!
//! Most strings a server sorts, groups and keys are ASCII, and their fold is the ASCII
//! uppercase of their bytes. The obvious code is three passes: `is_ascii`, a copy, and
//! `make_ascii_uppercase` in place. Measured under callgrind on sysbench's 120-character `c`
//! column (ORDER BY and DISTINCT weigh every row of a range, 200 strings a read-write
//! transaction), that was 578 instructions a string: the uppercase loop is not vectorized by
//! the compiler (345 of them) and `is_ascii` takes another 73. Two word-at-a-time rewrites in
//! plain Rust did no better (docs/perf-log, session 25).
//!
//! On x86-64, SSE2 is part of the base instruction set, so [`push_upper`] uses it unconditionally:
//! each 16-byte block is loaded once, its high bits collected (`movemask`: any set means not
//! ASCII), its lowercase letters found with one subtraction and an unsigned `min` compare
//! (`b - 'a' <= 25`), their 0x20 bit cleared, and the block stored. A last partial block is
//! done as an overlapping full block ending at the string's end (the source is read, never the
//! output, so overlapping writes write the same bytes again); strings under 16 bytes go byte by
//! byte. Elsewhere the same contract is met by the portable three passes.

/// Whether `b` is ASCII: 16 bytes a step on x86-64 (std's `is_ascii` takes 8), the test that
/// lets a decoded column value skip UTF-8 validation.
pub fn is_ascii(b: &[u8]) -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        sse2::is_ascii(b)
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        b.is_ascii()
    }
}

/// `b` as a `String`, without copying: checked by [`is_ascii`] first (most text is ASCII, and
/// ASCII is UTF-8), by `String::from_utf8` otherwise.
pub fn string_from_utf8(b: Vec<u8>) -> Result<String, std::string::FromUtf8Error> {
    if is_ascii(&b) {
        // SAFETY: ASCII bytes are valid UTF-8.
        Ok(unsafe { String::from_utf8_unchecked(b) })
    } else {
        String::from_utf8(b)
    }
}

/// Appends the ASCII uppercase of `src` to `out` and returns true if `src` is ASCII; otherwise
/// returns false and leaves `out` as it was.
pub(crate) fn push_upper(out: &mut Vec<u8>, src: &[u8]) -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        out.reserve(src.len());
        let start = out.len();
        let spare = &mut out.spare_capacity_mut()[..src.len()];
        // SAFETY: `spare` has room for `src.len()` bytes (reserved above), and SSE2 is part of
        // x86-64's base instruction set.
        let ascii = unsafe { sse2::upper_into(spare.as_mut_ptr().cast::<u8>(), src) };
        if ascii {
            // SAFETY: `upper_into` wrote all `src.len()` bytes after `start` when it returned true.
            unsafe { out.set_len(start + src.len()) };
        }
        ascii
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        if !src.is_ascii() {
            return false;
        }
        let start = out.len();
        out.extend_from_slice(src);
        out[start..].make_ascii_uppercase();
        true
    }
}

#[cfg(target_arch = "x86_64")]
mod sse2 {
    use std::arch::x86_64::{
        __m128i, _mm_and_si128, _mm_cmpeq_epi8, _mm_loadu_si128, _mm_min_epu8, _mm_movemask_epi8,
        _mm_or_si128, _mm_set1_epi8, _mm_setzero_si128, _mm_storeu_si128, _mm_sub_epi8,
        _mm_xor_si128,
    };

    pub(super) fn is_ascii(b: &[u8]) -> bool {
        let n = b.len();
        if n < 16 {
            return b.is_ascii();
        }
        // SAFETY: every block read starts at most `n - 16` bytes into `b`; SSE2 is baseline.
        unsafe {
            let mut high = _mm_setzero_si128();
            let mut i = 0;
            while i + 16 <= n {
                high = _mm_or_si128(high, _mm_loadu_si128(b.as_ptr().add(i).cast()));
                i += 16;
            }
            if i < n {
                high = _mm_or_si128(high, _mm_loadu_si128(b.as_ptr().add(n - 16).cast()));
            }
            _mm_movemask_epi8(high) == 0
        }
    }

    /// One block: its uppercase (if ASCII) and its high bits.
    ///
    /// # Safety
    /// `src` must be readable for 16 bytes.
    #[inline(always)]
    unsafe fn block(src: *const u8) -> (__m128i, __m128i) {
        // SAFETY: the caller guarantees 16 readable bytes; SSE2 is baseline on x86-64.
        unsafe {
            let b = _mm_loadu_si128(src.cast());
            let t = _mm_sub_epi8(b, _mm_set1_epi8(b'a' as i8));
            let lower = _mm_cmpeq_epi8(_mm_min_epu8(t, _mm_set1_epi8(25)), t);
            let upper = _mm_xor_si128(b, _mm_and_si128(lower, _mm_set1_epi8(0x20)));
            (upper, b)
        }
    }

    /// Writes the ASCII uppercase of `src` to `dst[..src.len()]` and returns whether `src` is
    /// ASCII (if not, what `dst` holds is unspecified).
    ///
    /// # Safety
    /// `dst` must be writable for `src.len()` bytes and not overlap `src`.
    pub(super) unsafe fn upper_into(dst: *mut u8, src: &[u8]) -> bool {
        let n = src.len();
        if n < 16 {
            let mut high = 0u8;
            for (i, &b) in src.iter().enumerate() {
                high |= b;
                // SAFETY: i < n, within `dst`'s `n` writable bytes.
                unsafe { dst.add(i).write(b.to_ascii_uppercase()) };
            }
            return high < 0x80;
        }
        // SAFETY: every block read starts at most `n - 16` bytes into `src` and every write at
        // most `n - 16` bytes into `dst`, both valid for `n` bytes.
        unsafe {
            let mut high = _mm_setzero_si128();
            let mut i = 0;
            while i + 16 <= n {
                let (u, b) = block(src.as_ptr().add(i));
                _mm_storeu_si128(dst.add(i).cast(), u);
                high = _mm_or_si128(high, b);
                i += 16;
            }
            if i < n {
                let (u, b) = block(src.as_ptr().add(n - 16));
                _mm_storeu_si128(dst.add(n - 16).cast(), u);
                high = _mm_or_si128(high, b);
            }
            _mm_movemask_epi8(high) == 0
        }
    }
}

#[cfg(test)]
mod tests {
    use super::push_upper;

    /// Against the portable definition, for every length up to 70 around every block edge,
    /// with every byte value at every position.
    #[test]
    fn matches_the_three_passes() {
        let base: Vec<u8> = (0..70u8)
            .map(|i| b"aZz`{@[mq~ 09"[i as usize % 13])
            .collect();
        for len in 0..=base.len() {
            let src = &base[..len];
            let mut out = b"pre".to_vec();
            assert!(push_upper(&mut out, src));
            let mut want = b"pre".to_vec();
            want.extend(src.to_ascii_uppercase());
            assert_eq!(out, want, "len {len}");
            for pos in 0..len {
                for v in 0..=255u8 {
                    let mut s = src.to_vec();
                    s[pos] = v;
                    let mut out = b"pre".to_vec();
                    let ascii = push_upper(&mut out, &s);
                    assert_eq!(ascii, s.is_ascii(), "len {len} pos {pos} byte {v}");
                    assert_eq!(super::is_ascii(&s), s.is_ascii(), "is_ascii, len {len}");
                    assert_eq!(
                        super::string_from_utf8(s.clone()).ok(),
                        String::from_utf8(s.clone()).ok()
                    );
                    if ascii {
                        assert_eq!(&out[3..], &s.to_ascii_uppercase()[..]);
                    } else {
                        assert_eq!(out, b"pre", "not ASCII: nothing appended");
                    }
                }
            }
        }
    }
}
