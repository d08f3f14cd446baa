//! Build versions: numeric order and prefix matching (`17`, `8.0`, `10.2.11`,
//! `17.10.0-beta.17`). Must not: know any registry.

/// A version, ordered numerically (`17.10.0-beta.17`, `8.0.31`).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct Version {
    pub major: u64,
    pub minor: u64,
    pub patch: u64,
    /// Pre-release number (`beta.17` → 17); later builds of the same release are newer, and a
    /// release without one sorts after every pre-release.
    pub pre: u64,
    pub text: String,
}

/// `17.10.0-beta.17`, `8.0.31`, or PostgreSQL's own two-part `17.12` (a Debian build; patch 0).
pub fn parse_version(text: &str) -> Option<Version> {
    let (release, pre) = text.split_once('-').unwrap_or((text, ""));
    let mut parts = release.split('.').map(|p| p.parse::<u64>());
    let (major, minor) = (parts.next()?.ok()?, parts.next()?.ok()?);
    let patch = match parts.next() {
        Some(p) => p.ok()?,
        None if pre.is_empty() => 0,
        None => return None,
    };
    let pre = pre
        .rsplit('.')
        .next()
        .and_then(|n| n.parse().ok())
        .unwrap_or(u64::MAX);
    Some(Version {
        major,
        minor,
        patch,
        pre,
        text: text.to_string(),
    })
}

/// Does `wanted` (`17`, `17.10`, `17.10.0`, or exact) select `v`?
pub fn matches(wanted: &str, v: &Version) -> bool {
    if wanted == v.text {
        return true;
    }
    let nums: Vec<&str> = wanted.split('.').collect();
    let have = [v.major, v.minor, v.patch];
    !nums.is_empty()
        && nums.len() <= 3
        && nums
            .iter()
            .zip(have)
            .all(|(n, h)| n.parse::<u64>().ok() == Some(h))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions_order_and_match() {
        let a = parse_version("17.10.0-beta.17").unwrap();
        let b = parse_version("17.9.0-beta.17").unwrap();
        let c = parse_version("17.10.0-beta.16").unwrap();
        assert!(a > b && a > c);
        assert!(matches("17", &a) && matches("17.10", &a) && matches("17.10.0", &a));
        assert!(matches("17.10.0-beta.17", &a));
        assert!(!matches("1", &a) && !matches("17.1", &a) && !matches("16", &a));
        assert!(!matches("", &a));
        // A Debian PostgreSQL build: two parts, newer than npm's betas of the minor before.
        let d = parse_version("17.12").unwrap();
        assert!(d > a && matches("17.12", &d) && matches("17.12.0", &d) && !matches("17.1", &d));
        assert_eq!(parse_version("17.12-beta.1"), None);
        assert_eq!(parse_version("17"), None);
    }

    #[test]
    fn mysql_versions_match_by_prefix() {
        let v8031 = parse_version("8.0.31").unwrap();
        let v8015 = parse_version("8.0.15").unwrap();
        let v1011 = parse_version("10.11.5").unwrap();
        let v102 = parse_version("10.2.11").unwrap();
        assert!(v8031 > v8015 && v1011 > v102);
        assert!(matches("8.0", &v8031) && matches("8", &v8015));
        assert!(matches("10.2", &v102) && !matches("10.2", &v1011));
        assert!(matches("10.11.5", &v1011) && !matches("10.1", &v1011));
    }
}
