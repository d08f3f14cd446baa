//! Writing a file the user named (`-o FILE`, `init FILE`, the files of `--png DIR` and
//! `profile -o DIR`) without harming what is already there.
//!
//! Owns the rule for what a name may be replaced with: a regular file or a new name is written
//! whole through a temporary file of our own beside it, renamed into place (the old file's mode
//! and owner carried over); a symbolic link is followed and its target written the same way;
//! anything else that exists (a device such as `/dev/null`, a FIFO, `/dev/stdout`) is written in
//! place, never renamed over; a directory is refused. Also owns the check that a name can be
//! written before long work starts, and the errno name in a failure's message. Must not: remove,
//! rename or chmod anything it did not create, or touch the file system beyond the named file and
//! its own temporary files.

use std::fs::{File, Metadata, OpenOptions};
use std::io::{self, Write};
use std::os::unix::fs::{FileTypeExt, MetadataExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU32, Ordering};

/// Why a named file could not be written.
#[derive(Debug, thiserror::Error)]
pub enum OutputError {
    /// The name is a directory (or a link to one): bad input.
    #[error("is a directory; name a file in it, e.g. {}", .path.join("report.txt").display())]
    Directory { path: PathBuf },
    /// The directory the file would go in does not exist: bad input.
    #[error("the directory {} does not exist; create it or name a file in an existing directory", .dir.display())]
    NoDirectory { path: PathBuf, dir: PathBuf },
    /// `init`'s file exists already: bad input.
    #[error("the file exists and is kept; name another file")]
    Exists { path: PathBuf },
    /// Writing failed (a full disk, no permission, a read-only file system).
    #[error("{}", describe(.source))]
    Io { path: PathBuf, source: io::Error },
}

impl OutputError {
    /// The name the user gave.
    pub fn path(&self) -> &Path {
        match self {
            OutputError::Directory { path }
            | OutputError::NoDirectory { path, .. }
            | OutputError::Exists { path }
            | OutputError::Io { path, .. } => path,
        }
    }

    /// Whether the user can fix this by naming another file (exit 2), not a failure (exit 1).
    pub fn is_input(&self) -> bool {
        matches!(
            self,
            OutputError::Directory { .. }
                | OutputError::NoDirectory { .. }
                | OutputError::Exists { .. }
        )
    }
}

/// Where the bytes for a name go.
#[derive(Debug, PartialEq)]
enum Dest {
    /// A new or regular file, replaced whole; with the mode and owner of the file it replaces.
    Whole {
        file: PathBuf,
        kept: Option<(u32, u32, u32)>,
    },
    /// A device, FIFO or socket: opened and written where it is.
    InPlace(PathBuf),
}

/// Write `bytes` to `path` by the module's rule (see the module doc).
pub fn write(path: &Path, bytes: &[u8]) -> Result<(), OutputError> {
    let io_err = |source| OutputError::Io {
        path: path.to_path_buf(),
        source,
    };
    match dest(path)? {
        Dest::InPlace(p) => {
            let mut f = OpenOptions::new().write(true).open(&p).map_err(io_err)?;
            f.write_all(bytes).and_then(|()| f.flush()).map_err(io_err)
        }
        Dest::Whole { file, kept } => {
            let (tmp, mut f) = temporary(path, &file)?;
            let written = fill(&mut f, bytes, kept).and_then(|()| std::fs::rename(&tmp, &file));
            written.map_err(|e| {
                let _ = std::fs::remove_file(&tmp);
                io_err(e)
            })
        }
    }
}

/// Write `bytes` to `path`, a name that must not exist yet (`dbdelta init`): written whole
/// beside it, then linked into place, so a full disk leaves no empty or partial file.
pub fn create_new(path: &Path, bytes: &[u8]) -> Result<(), OutputError> {
    let io_err = |source| OutputError::Io {
        path: path.to_path_buf(),
        source,
    };
    if std::fs::symlink_metadata(path).is_ok() {
        return Err(OutputError::Exists {
            path: path.to_path_buf(),
        });
    }
    let (tmp, mut f) = temporary(path, path)?;
    let linked = fill(&mut f, bytes, None).and_then(|()| std::fs::hard_link(&tmp, path));
    let _ = std::fs::remove_file(&tmp);
    match linked {
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists => Err(OutputError::Exists {
            path: path.to_path_buf(),
        }),
        r => r.map_err(io_err),
    }
}

/// Whether `path` can be written later (checked before a run's hours of measuring): its
/// directory exists and takes a file of ours, a device opens for writing; nothing is left
/// behind and nothing that exists is changed.
pub fn check_writable(path: &Path) -> Result<(), OutputError> {
    match dest(path)? {
        Dest::InPlace(p) => {
            let meta = std::fs::metadata(&p).map_err(|source| OutputError::Io {
                path: path.to_path_buf(),
                source,
            })?;
            // A FIFO without a reader would block here, a socket cannot be opened: both are
            // opened when the report is written.
            if meta.file_type().is_fifo() || meta.file_type().is_socket() {
                return Ok(());
            }
            OpenOptions::new()
                .write(true)
                .open(&p)
                .map(drop)
                .map_err(|source| OutputError::Io {
                    path: path.to_path_buf(),
                    source,
                })
        }
        Dest::Whole { file, .. } => {
            let (tmp, f) = temporary(path, &file)?;
            drop(f);
            let _ = std::fs::remove_file(&tmp);
            Ok(())
        }
    }
}

/// Classify `path`: a link is followed to what it names (a dangling one to the name it
/// points at).
fn dest(path: &Path) -> Result<Dest, OutputError> {
    let io_err = |source| OutputError::Io {
        path: path.to_path_buf(),
        source,
    };
    let own = match std::fs::symlink_metadata(path) {
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(whole(path.into(), None)),
        Err(e) => return Err(io_err(e)),
        Ok(m) => m,
    };
    if !own.file_type().is_symlink() {
        return classify(path, path.to_path_buf(), &own);
    }
    if through_proc(path) {
        // `/dev/stdout`, `/dev/fd/N`: a descriptor of this process, whatever it is open on.
        return Ok(Dest::InPlace(path.to_path_buf()));
    }
    match std::fs::metadata(path) {
        Ok(target) if target.is_file() => {
            let real = std::fs::canonicalize(path).map_err(io_err)?;
            classify(path, real, &target)
        }
        Ok(target) => classify(path, path.to_path_buf(), &target),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(whole(dangling(path)?, None)),
        Err(e) => Err(io_err(e)),
    }
}

fn whole(file: PathBuf, meta: Option<&Metadata>) -> Dest {
    Dest::Whole {
        file,
        kept: meta.map(|m| (m.mode() & 0o7777, m.uid(), m.gid())),
    }
}

fn classify(named: &Path, file: PathBuf, meta: &Metadata) -> Result<Dest, OutputError> {
    if meta.is_dir() {
        return Err(OutputError::Directory {
            path: named.to_path_buf(),
        });
    }
    Ok(match meta.is_file() {
        true => whole(file, Some(meta)),
        false => Dest::InPlace(file),
    })
}

/// Whether a link's chain passes through `/proc` (the descriptors behind `/dev/stdout`).
fn through_proc(path: &Path) -> bool {
    let mut at = path.to_path_buf();
    for _ in 0..40 {
        let Ok(next) = std::fs::read_link(&at) else {
            return false;
        };
        let dir = at.parent().map(Path::to_path_buf).unwrap_or_default();
        at = dir.join(next);
        if at.starts_with("/proc") {
            return true;
        }
    }
    false
}

/// The name a dangling link's chain ends at (at most 40 links, as the kernel allows).
fn dangling(path: &Path) -> Result<PathBuf, OutputError> {
    let mut at = path.to_path_buf();
    for _ in 0..40 {
        match std::fs::read_link(&at) {
            Ok(next) => {
                let dir = at.parent().map(Path::to_path_buf).unwrap_or_default();
                at = dir.join(next);
            }
            Err(_) => return Ok(at),
        }
    }
    Err(OutputError::Io {
        path: path.to_path_buf(),
        source: io::Error::from_raw_os_error(libc::ELOOP),
    })
}

/// A new file of ours beside `file` (never an existing name: created exclusively).
fn temporary(named: &Path, file: &Path) -> Result<(PathBuf, File), OutputError> {
    static SEQ: AtomicU32 = AtomicU32::new(0);
    let dir = match file.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    let base = file.file_name().unwrap_or_default().to_string_lossy();
    loop {
        let n = SEQ.fetch_add(1, Ordering::Relaxed);
        let tmp = dir.join(format!(".{base}.{}.{n}.dbdelta~", std::process::id()));
        match OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o666)
            .open(&tmp)
        {
            Ok(f) => return Ok((tmp, f)),
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => continue,
            Err(e) if e.kind() == io::ErrorKind::NotFound && !dir.is_dir() => {
                return Err(OutputError::NoDirectory {
                    path: named.to_path_buf(),
                    dir: dir.to_path_buf(),
                });
            }
            Err(source) => {
                return Err(OutputError::Io {
                    path: named.to_path_buf(),
                    source,
                });
            }
        }
    }
}

/// Our temporary file's bytes, synced, with the replaced file's mode and owner.
fn fill(f: &mut File, bytes: &[u8], kept: Option<(u32, u32, u32)>) -> io::Result<()> {
    f.write_all(bytes)?;
    if let Some((mode, uid, gid)) = kept {
        f.set_permissions(std::fs::Permissions::from_mode(mode))?;
        // Only root may give a file away; another user keeps the new file as its own.
        let _ = std::os::unix::fs::fchown(&*f, Some(uid), Some(gid));
    }
    f.sync_all()
}

/// An I/O error as one line that names its errno: "no space left on device (ENOSPC)".
pub fn describe(e: &io::Error) -> String {
    let Some(code) = e.raw_os_error() else {
        return e.to_string();
    };
    let text = e.to_string();
    let text = text
        .split(" (os error")
        .next()
        .unwrap_or(&text)
        .to_lowercase();
    match errno_name(code) {
        Some(name) => format!("{text} ({name})"),
        None => format!("{text} (errno {code})"),
    }
}

/// The symbolic name of the errors writing a file can meet.
fn errno_name(code: i32) -> Option<&'static str> {
    Some(match code {
        libc::ENOSPC => "ENOSPC",
        libc::EDQUOT => "EDQUOT",
        libc::EACCES => "EACCES",
        libc::EPERM => "EPERM",
        libc::EROFS => "EROFS",
        libc::ENOENT => "ENOENT",
        libc::ENOTDIR => "ENOTDIR",
        libc::EISDIR => "EISDIR",
        libc::ENXIO => "ENXIO",
        libc::EPIPE => "EPIPE",
        libc::EIO => "EIO",
        libc::EFBIG => "EFBIG",
        libc::ETXTBSY => "ETXTBSY",
        libc::ELOOP => "ELOOP",
        libc::ENAMETOOLONG => "ENAMETOOLONG",
        libc::EXDEV => "EXDEV",
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scratch() -> tempfile::TempDir {
        tempfile::tempdir().unwrap()
    }

    /// Files in `dir` other than the ones named: no temporary file is left behind.
    fn leftovers(dir: &Path, named: &[&str]) -> Vec<String> {
        let mut names: Vec<String> = std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .filter(|n| !named.contains(&n.as_str()))
            .collect();
        names.sort();
        names
    }

    #[test]
    fn a_new_name_and_a_regular_file_are_written_whole_keeping_the_mode() {
        let d = scratch();
        let p = d.path().join("report.txt");
        write(&p, b"one").unwrap();
        assert_eq!(std::fs::read(&p).unwrap(), b"one");
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o640)).unwrap();
        write(&p, b"two").unwrap();
        assert_eq!(std::fs::read(&p).unwrap(), b"two");
        let mode = std::fs::metadata(&p).unwrap().mode() & 0o7777;
        assert_eq!(mode, 0o640, "the replaced file's mode is kept");
        assert!(leftovers(d.path(), &["report.txt"]).is_empty());
    }

    #[test]
    fn a_symlink_is_followed_and_stays_a_link() {
        let d = scratch();
        let target = d.path().join("real.txt");
        std::fs::write(&target, b"old").unwrap();
        let link = d.path().join("link.txt");
        std::os::unix::fs::symlink("real.txt", &link).unwrap();
        write(&link, b"new").unwrap();
        assert!(
            std::fs::symlink_metadata(&link)
                .unwrap()
                .file_type()
                .is_symlink()
        );
        assert_eq!(std::fs::read(&target).unwrap(), b"new");
        // A dangling link gets its target created.
        let dangling = d.path().join("dangling.txt");
        std::os::unix::fs::symlink("made.txt", &dangling).unwrap();
        write(&dangling, b"made").unwrap();
        assert!(
            std::fs::symlink_metadata(&dangling)
                .unwrap()
                .file_type()
                .is_symlink()
        );
        assert_eq!(std::fs::read(d.path().join("made.txt")).unwrap(), b"made");
    }

    #[test]
    fn a_fifo_is_written_in_place_not_replaced() {
        let d = scratch();
        let fifo = d.path().join("pipe");
        let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
        // SAFETY: a valid NUL-terminated path; mkfifo only creates the node.
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
        check_writable(&fifo).unwrap();
        let reader = {
            let fifo = fifo.clone();
            std::thread::spawn(move || std::fs::read(fifo).unwrap())
        };
        write(&fifo, b"through the pipe").unwrap();
        assert_eq!(reader.join().unwrap(), b"through the pipe");
        assert!(
            std::fs::symlink_metadata(&fifo)
                .unwrap()
                .file_type()
                .is_fifo()
        );
        assert!(leftovers(d.path(), &["pipe"]).is_empty());
    }

    #[test]
    fn a_directory_and_a_missing_directory_are_input_errors() {
        let d = scratch();
        let e = write(d.path(), b"x").unwrap_err();
        assert!(
            e.is_input() && e.to_string().contains("is a directory"),
            "{e}"
        );
        let e = check_writable(&d.path().join("no/such/file")).unwrap_err();
        assert!(
            e.is_input() && e.to_string().contains("does not exist"),
            "{e}"
        );
        assert!(leftovers(d.path(), &[]).is_empty());
    }

    #[test]
    fn create_new_never_replaces_and_leaves_nothing_on_failure() {
        let d = scratch();
        let p = d.path().join("lab.toml");
        create_new(&p, b"[lab]").unwrap();
        let e = create_new(&p, b"other").unwrap_err();
        assert!(matches!(e, OutputError::Exists { .. }), "{e}");
        assert_eq!(std::fs::read(&p).unwrap(), b"[lab]");
        assert!(leftovers(d.path(), &["lab.toml"]).is_empty());
    }

    #[test]
    fn describe_names_the_errno() {
        let e = io::Error::from_raw_os_error(libc::ENOSPC);
        assert_eq!(describe(&e), "no space left on device (ENOSPC)");
    }
}
