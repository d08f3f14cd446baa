//! The superuser password of a server dbdelta starts, and the private files that hand it over.
//!
//! Owns: drawing a fresh random password per server start (it lives in memory and, for whoever
//! runs dbdelta, in `<data dir>.password` beside the data directory while the server runs;
//! every cell's data directory is created fresh, so no later start or `--resume` needs an old
//! one), and writing a file only its owner can read (the server account when dbdelta is root)
//! for the tools that take a password from a file (`initdb --pwfile`, MySQL's `--init-file`),
//! removed when the [`PrivateFile`] is dropped.
//! Must not: print, log or store a password (a run's records never hold one).

use std::io::Write;
use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use rand::distr::{Alphanumeric, SampleString};

use crate::engine::common::process::{self, ServerUser};

/// Characters of a password: 32 alphanumerics (190 bits), nothing any client or SQL literal
/// would need to escape.
const PASSWORD_LEN: usize = 32;

/// A new random password, from the operating system's seeded CSPRNG.
pub fn new_password() -> String {
    Alphanumeric.sample_string(&mut rand::rng(), PASSWORD_LEN)
}

/// A file of mode 0600, owned by `user` (or by us), removed on drop.
#[derive(Debug)]
pub struct PrivateFile {
    path: PathBuf,
}

impl PrivateFile {
    /// Create `path` (it must not exist) holding `text`, readable by its owner only.
    pub fn create(path: &Path, text: &str, user: Option<&ServerUser>) -> Result<PrivateFile> {
        let mut f = std::fs::File::options()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(path)
            .with_context(|| format!("creating the private file {}", path.display()))?;
        let file = PrivateFile {
            path: path.to_path_buf(),
        };
        // The mode given to open(2) is cut by the umask: never wider than 0600, but set it.
        f.set_permissions(std::fs::Permissions::from_mode(0o600))?;
        f.write_all(text.as_bytes())
            .with_context(|| format!("writing {}", path.display()))?;
        if let Some(u) = user {
            process::chown_tree(path, u)?;
        }
        Ok(file)
    }

    pub fn path(&self) -> &Path {
        &self.path
    }
}

impl Drop for PrivateFile {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.path);
    }
}

/// `<data_dir>.password`: the server's password for dbdelta's own user (mode 0600, owned by
/// whoever runs dbdelta), so that user can look into a running server (`psql`, `mariadb`) and
/// nobody else can; removed when the server stops.
pub fn password_file(data_dir: &Path, password: &str) -> Result<PrivateFile> {
    let path = PathBuf::from(format!("{}.password", data_dir.display()));
    PrivateFile::create(&path, &format!("{password}\n"), None)
}

/// Make `dir` enterable by its owner only (mode 0700).
pub fn private_dir(dir: &Path) -> Result<()> {
    std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700))
        .with_context(|| format!("chmod 700 {}", dir.display()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::MetadataExt;

    #[test]
    fn passwords_are_long_alphanumeric_and_fresh() {
        let (a, b) = (new_password(), new_password());
        assert_eq!(a.len(), PASSWORD_LEN);
        assert!(a.chars().all(|c| c.is_ascii_alphanumeric()), "{a}");
        assert_ne!(a, b);
    }

    #[test]
    fn a_private_file_is_0600_and_goes_when_dropped() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("pw");
        let f = PrivateFile::create(&path, "secret\n", None).unwrap();
        assert_eq!(std::fs::metadata(&path).unwrap().mode() & 0o777, 0o600);
        assert_eq!(std::fs::read_to_string(f.path()).unwrap(), "secret\n");
        assert!(PrivateFile::create(&path, "again", None).is_err());
        drop(f);
        assert!(!path.exists());
    }
}
