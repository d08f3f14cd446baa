//! Registries' checksums of archives: the [`Checksum`] an index or a package's metadata gives,
//! its `sha1:<hex>` text as the cache records it, hashing a file against one and a download
//! verified while it streams. Also the hex decoding the registries' digests need.
//! Must not: know where an archive is kept (the cache does) or which registry it came from.

use std::fs::File;
use std::io::{Read, Write};
use std::path::Path;

use anyhow::{Context, Result, bail};
use sha2::Digest;

use super::unpack;

/// A registry's checksum of an archive.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Checksum {
    /// Maven's `.sha1` files.
    Sha1(Vec<u8>),
    /// npm's `sha512-…` integrity.
    Sha512(Vec<u8>),
    /// A Debian index's `SHA256`.
    Sha256(Vec<u8>),
}

impl Checksum {
    pub fn algorithm(&self) -> &'static str {
        match self {
            Checksum::Sha1(_) => "sha1",
            Checksum::Sha512(_) => "sha512",
            Checksum::Sha256(_) => "sha256",
        }
    }

    fn digest(&self) -> &[u8] {
        match self {
            Checksum::Sha1(d) | Checksum::Sha512(d) | Checksum::Sha256(d) => d,
        }
    }

    /// `sha1:<hex>` / `sha512:<hex>`, as recorded.
    pub(super) fn to_text(&self) -> String {
        format!("{}:{}", self.algorithm(), unpack::hex(self.digest()))
    }

    pub(super) fn parse(text: &str) -> Option<Checksum> {
        let (algo, hex) = text.split_once(':')?;
        let digest = decode_hex(hex)?;
        match algo {
            "sha1" => Some(Checksum::Sha1(digest)),
            "sha512" => Some(Checksum::Sha512(digest)),
            "sha256" => Some(Checksum::Sha256(digest)),
            _ => None,
        }
    }

    fn hasher(&self) -> Hasher {
        match self {
            Checksum::Sha1(_) => Hasher::Sha1(sha1::Sha1::new()),
            Checksum::Sha512(_) => Hasher::Sha512(sha2::Sha512::new()),
            Checksum::Sha256(_) => Hasher::Sha256(sha2::Sha256::new()),
        }
    }
}

enum Hasher {
    Sha1(sha1::Sha1),
    Sha512(sha2::Sha512),
    Sha256(sha2::Sha256),
}

impl Hasher {
    fn update(&mut self, bytes: &[u8]) {
        match self {
            Hasher::Sha1(h) => h.update(bytes),
            Hasher::Sha512(h) => h.update(bytes),
            Hasher::Sha256(h) => h.update(bytes),
        }
    }

    fn finish(self) -> Vec<u8> {
        match self {
            Hasher::Sha1(h) => h.finalize().to_vec(),
            Hasher::Sha512(h) => h.finalize().to_vec(),
            Hasher::Sha256(h) => h.finalize().to_vec(),
        }
    }
}

/// Hash a whole file with the algorithm of `expected`; true when it matches.
pub(super) fn archive_matches(path: &Path, expected: &Checksum) -> Result<bool> {
    let mut h = expected.hasher();
    unpack::read_chunks(path, |chunk| h.update(chunk))?;
    Ok(h.finish() == expected.digest())
}

/// Stream `url` into `dest`, hashing as it comes; fail (and remove the file) when the hash is not
/// the registry's.
pub(super) fn download(url: &str, dest: &Path, expected: &Checksum) -> Result<u64> {
    let mut resp = super::agent()
        .get(url)
        .call()
        .with_context(|| format!("downloading {url}"))?;
    let mut reader = resp.body_mut().as_reader();
    let mut out = File::create(dest).with_context(|| format!("writing {}", dest.display()))?;
    let mut h = expected.hasher();
    let mut buf = vec![0u8; 1 << 20];
    let mut total = 0u64;
    loop {
        let n = reader
            .read(&mut buf)
            .with_context(|| format!("downloading {url}"))?;
        if n == 0 {
            break;
        }
        h.update(&buf[..n]);
        out.write_all(&buf[..n])?;
        total += n as u64;
    }
    out.sync_all()?;
    if h.finish() != expected.digest() {
        let _ = std::fs::remove_file(dest);
        bail!(
            "{url} does not match the registry's {} checksum; nothing was unpacked",
            expected.algorithm()
        );
    }
    Ok(total)
}

/// Bytes from hex digits (`0aff` → `[10, 255]`); `None` for an odd length or a non-hex digit.
pub fn decode_hex(hex: &str) -> Option<Vec<u8>> {
    if !hex.len().is_multiple_of(2) {
        return None;
    }
    (0..hex.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(hex.get(i..i + 2)?, 16).ok())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn checksums_round_trip_as_text() {
        let c = Checksum::Sha1(vec![0xde, 0xad, 0xbe, 0xef]);
        assert_eq!(c.to_text(), "sha1:deadbeef");
        assert_eq!(Checksum::parse("sha1:deadbeef"), Some(c));
        assert_eq!(
            Checksum::parse("sha512:00ff"),
            Some(Checksum::Sha512(vec![0, 255]))
        );
        assert_eq!(Checksum::parse("md5:00"), None);
    }

    #[test]
    fn archive_hash_is_checked() {
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("a.jar");
        std::fs::write(&f, b"abc").unwrap();
        // sha1("abc")
        let good = Checksum::Sha1(decode_hex("a9993e364706816aba3e25717850c26c9cd0d89d").unwrap());
        assert!(archive_matches(&f, &good).unwrap());
        std::fs::write(&f, b"abd").unwrap();
        assert!(!archive_matches(&f, &good).unwrap());
    }

    #[test]
    fn hex_decodes_pairs_of_digits() {
        assert_eq!(decode_hex("0aff"), Some(vec![10, 255]));
        assert_eq!(decode_hex("0g"), None);
    }
}
