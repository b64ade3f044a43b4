//! Packet framing: the 4-byte MySQL packet header, multi-packet messages and small byte helpers.
//!
//! Every MySQL packet is `len:u24 LE | seq:u8 | payload`. A *message* (one command, one row, ...)
//! longer than `0xFF_FFFF` bytes is split into packets of exactly `0xFF_FFFF` bytes followed by a
//! shorter one (possibly empty); the receiver concatenates them. Sequence ids increase by one per
//! packet in both directions and wrap at 256; a client command starts at 0.
//!
//! [`scan_message`] looks at buffered input without consuming it and answers "complete message of
//! N packets / total length", "need more bytes", or an error (wrong sequence id, message larger
//! than the allowed maximum). The maximum is checked from the headers alone, so an absurd length
//! is refused before any of its payload has to be buffered.
//!
//! [`write_message`] does the reverse for replies and returns the next sequence id.
//!
//! [`Reader`] is a bounds-checked cursor: every read returns `Option`, so truncated input can
//! never panic, only produce a protocol error.

/// Largest payload of one physical packet.
pub const MAX_PACKET_CHUNK: usize = 0xFF_FFFF;

/// Result of looking for one complete message in buffered input.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scan {
    /// Not enough bytes yet.
    NeedMore,
    /// A complete message is buffered.
    Complete {
        /// Bytes the message occupies in the buffer, headers included.
        wire_len: usize,
        /// Payload length after concatenation.
        payload_len: usize,
        /// Sequence id of the last packet of the message.
        last_seq: u8,
    },
    /// The first packet does not carry the expected sequence id.
    OutOfOrder,
    /// The message is longer than allowed.
    TooLarge,
}

/// Looks for one complete message at the start of `buf`, whose first packet must have sequence
/// id `first_seq`; refuses messages with a payload larger than `max_payload`.
pub fn scan_message(buf: &[u8], first_seq: u8, max_payload: usize) -> Scan {
    let mut pos = 0usize;
    let mut total = 0usize;
    let mut seq = first_seq;
    loop {
        if buf.len() < pos + 4 {
            return Scan::NeedMore;
        }
        let len = u32::from_le_bytes([buf[pos], buf[pos + 1], buf[pos + 2], 0]) as usize;
        if buf[pos + 3] != seq {
            return Scan::OutOfOrder;
        }
        total += len;
        if total > max_payload {
            return Scan::TooLarge;
        }
        if buf.len() < pos + 4 + len {
            return Scan::NeedMore;
        }
        pos += 4 + len;
        if len < MAX_PACKET_CHUNK {
            return Scan::Complete {
                wire_len: pos,
                payload_len: total,
                last_seq: seq,
            };
        }
        seq = seq.wrapping_add(1);
    }
}

/// Concatenates the payloads of a message found by [`scan_message`] (`wire_len` bytes of `buf`).
pub fn gather_payload(buf: &[u8], wire_len: usize, payload_len: usize) -> Vec<u8> {
    let mut out = Vec::with_capacity(payload_len);
    let mut pos = 0usize;
    while pos < wire_len {
        let len = u32::from_le_bytes([buf[pos], buf[pos + 1], buf[pos + 2], 0]) as usize;
        out.extend_from_slice(&buf[pos + 4..pos + 4 + len]);
        pos += 4 + len;
    }
    out
}

/// Appends `payload` to `out` as one message starting at sequence id `seq`, split into packets
/// as needed. Returns the sequence id for the next packet.
pub fn write_message(out: &mut Vec<u8>, mut seq: u8, payload: &[u8]) -> u8 {
    let mut rest = payload;
    loop {
        let n = rest.len().min(MAX_PACKET_CHUNK);
        out.extend_from_slice(&(n as u32).to_le_bytes()[..3]);
        out.push(seq);
        out.extend_from_slice(&rest[..n]);
        seq = seq.wrapping_add(1);
        rest = &rest[n..];
        if n < MAX_PACKET_CHUNK {
            return seq;
        }
    }
}

/// Appends a length-encoded integer.
pub fn put_lenenc_int(out: &mut Vec<u8>, v: u64) {
    if v < 251 {
        out.push(v as u8);
    } else if v < 1 << 16 {
        out.push(0xFC);
        out.extend_from_slice(&(v as u16).to_le_bytes());
    } else if v < 1 << 24 {
        out.push(0xFD);
        out.extend_from_slice(&(v as u32).to_le_bytes()[..3]);
    } else {
        out.push(0xFE);
        out.extend_from_slice(&v.to_le_bytes());
    }
}

/// Appends a length-encoded string.
pub fn put_lenenc_bytes(out: &mut Vec<u8>, b: &[u8]) {
    put_lenenc_int(out, b.len() as u64);
    out.extend_from_slice(b);
}

/// A bounds-checked cursor over a payload; every read fails softly with `None`.
#[derive(Debug, Clone)]
pub struct Reader<'a> {
    buf: &'a [u8],
    pos: usize,
}

impl<'a> Reader<'a> {
    /// A cursor at the start of `buf`.
    pub fn new(buf: &'a [u8]) -> Self {
        Reader { buf, pos: 0 }
    }

    /// Bytes not read yet.
    pub fn remaining(&self) -> usize {
        self.buf.len() - self.pos
    }

    /// Reads `n` bytes.
    pub fn bytes(&mut self, n: usize) -> Option<&'a [u8]> {
        if self.remaining() < n {
            return None;
        }
        let s = &self.buf[self.pos..self.pos + n];
        self.pos += n;
        Some(s)
    }

    /// Reads everything left.
    pub fn rest(&mut self) -> &'a [u8] {
        let s = &self.buf[self.pos..];
        self.pos = self.buf.len();
        s
    }

    /// Reads one byte.
    pub fn u8(&mut self) -> Option<u8> {
        self.bytes(1).map(|b| b[0])
    }

    /// Reads a little-endian u16.
    pub fn u16(&mut self) -> Option<u16> {
        self.bytes(2).map(|b| u16::from_le_bytes([b[0], b[1]]))
    }

    /// Reads a little-endian u32.
    pub fn u32(&mut self) -> Option<u32> {
        self.bytes(4)
            .map(|b| u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
    }

    /// Reads a little-endian u64.
    pub fn u64(&mut self) -> Option<u64> {
        self.bytes(8).map(|b| {
            let mut a = [0u8; 8];
            a.copy_from_slice(b);
            u64::from_le_bytes(a)
        })
    }

    /// Reads a NUL-terminated string (the NUL is consumed, not returned). Without a NUL, `None`.
    pub fn null_str(&mut self) -> Option<&'a [u8]> {
        let rest = &self.buf[self.pos..];
        let end = rest.iter().position(|&b| b == 0)?;
        self.pos += end + 1;
        Some(&rest[..end])
    }

    /// Reads a length-encoded integer.
    pub fn lenenc_int(&mut self) -> Option<u64> {
        match self.u8()? {
            x @ 0..=0xFA => Some(x as u64),
            0xFC => self.u16().map(u64::from),
            0xFD => self
                .bytes(3)
                .map(|b| u32::from_le_bytes([b[0], b[1], b[2], 0]) as u64),
            0xFE => self.u64(),
            _ => None,
        }
    }

    /// Reads a length-encoded string.
    pub fn lenenc_bytes(&mut self) -> Option<&'a [u8]> {
        let n = self.lenenc_int()?;
        let n = usize::try_from(n).ok()?;
        self.bytes(n)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn split_and_scan_roundtrip_at_chunk_boundaries() {
        for size in [
            0,
            1,
            MAX_PACKET_CHUNK - 1,
            MAX_PACKET_CHUNK,
            MAX_PACKET_CHUNK + 1,
            2 * MAX_PACKET_CHUNK,
        ] {
            let payload: Vec<u8> = (0..size).map(|i| (i % 251) as u8).collect();
            let mut wire = Vec::new();
            let next = write_message(&mut wire, 7, &payload);
            let packets = size / MAX_PACKET_CHUNK + 1;
            assert_eq!(next, 7u8.wrapping_add(packets as u8));
            assert_eq!(wire.len(), size + 4 * packets);
            match scan_message(&wire, 7, usize::MAX) {
                Scan::Complete {
                    wire_len,
                    payload_len,
                    last_seq,
                } => {
                    assert_eq!(wire_len, wire.len());
                    assert_eq!(payload_len, size);
                    assert_eq!(last_seq, next.wrapping_sub(1));
                    assert_eq!(gather_payload(&wire, wire_len, payload_len), payload);
                }
                other => panic!("size {size}: {other:?}"),
            }
            // Every strict prefix is incomplete.
            if size > 0 {
                assert_eq!(
                    scan_message(&wire[..wire.len() - 1], 7, usize::MAX),
                    Scan::NeedMore
                );
            }
            assert_eq!(scan_message(&wire, 8, usize::MAX), Scan::OutOfOrder);
        }
    }

    #[test]
    fn too_large_is_detected_from_the_header_alone() {
        // Header announcing 16 MB, no payload at all.
        let wire = [0xFF, 0xFF, 0xFF, 0];
        assert_eq!(scan_message(&wire, 0, 1024), Scan::TooLarge);
        assert_eq!(scan_message(&wire, 0, usize::MAX), Scan::NeedMore);
    }

    #[test]
    fn lenenc_roundtrip() {
        for v in [
            0u64,
            250,
            251,
            65535,
            65536,
            (1 << 24) - 1,
            1 << 24,
            u64::MAX,
        ] {
            let mut b = Vec::new();
            put_lenenc_int(&mut b, v);
            let mut r = Reader::new(&b);
            assert_eq!(r.lenenc_int(), Some(v));
            assert_eq!(r.remaining(), 0);
            // Truncated encodings fail softly.
            for cut in 0..b.len() {
                assert_eq!(Reader::new(&b[..cut]).lenenc_int(), None);
            }
        }
        assert_eq!(Reader::new(&[0xFF]).lenenc_int(), None);
        assert_eq!(Reader::new(&[0xFB]).lenenc_int(), None);
    }
}
