//! The SQLite C API as a table of function pointers: the bundled library (statically linked
//! through `libsqlite3-sys`) or a `libsqlite3.so` opened at run time (a build variant, a
//! user's own library). One table per library, loaded once per process and never unloaded (a
//! PGO-instrumented library writes its profile when the process exits).
//!
//! Owns: finding the functions (`dlopen`/`dlsym` with `RTLD_LOCAL`, so two libraries never
//! resolve each other's symbols), naming the file that really provides them (`dladdr`), and
//! thin safe wrappers over connections and statements that allocate nothing per execution.
//! Must not: know about targets, settings or workloads (`sqlite` does), time anything or count
//! operations.

use std::collections::HashMap;
use std::ffi::{CStr, CString, c_char, c_int, c_void};
use std::path::{Path, PathBuf};
use std::sync::{Mutex, OnceLock};

use anyhow::{Context, Result, bail};

use rusqlite::ffi;

const SQLITE_OK: c_int = 0;
const SQLITE_BUSY: c_int = 5;
const SQLITE_LOCKED: c_int = 6;
const SQLITE_ROW: c_int = 100;
const SQLITE_DONE: c_int = 101;
const SQLITE_NULL: c_int = 5;
const SQLITE_OPEN_READWRITE: c_int = 0x2;
const SQLITE_OPEN_CREATE: c_int = 0x4;
const SQLITE_OPEN_NOMUTEX: c_int = 0x8000;
/// `SQLITE_TRANSIENT`: SQLite copies a bound text before `bind_text` returns.
const TRANSIENT: isize = -1;

type Db = c_void;
type St = c_void;

/// Where a table's functions come from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Origin {
    /// The SQLite compiled into dbdelta.
    Bundled,
    /// A shared library: the file `dladdr` says provides `sqlite3_libversion`.
    Library(PathBuf),
}

/// The functions dbdelta calls, from one library.
pub struct Api {
    pub origin: Origin,
    open_v2: unsafe extern "C" fn(*const c_char, *mut *mut Db, c_int, *const c_char) -> c_int,
    close: unsafe extern "C" fn(*mut Db) -> c_int,
    busy_timeout: unsafe extern "C" fn(*mut Db, c_int) -> c_int,
    errmsg: unsafe extern "C" fn(*mut Db) -> *const c_char,
    prepare_v2: unsafe extern "C" fn(
        *mut Db,
        *const c_char,
        c_int,
        *mut *mut St,
        *mut *const c_char,
    ) -> c_int,
    step: unsafe extern "C" fn(*mut St) -> c_int,
    reset: unsafe extern "C" fn(*mut St) -> c_int,
    finalize: unsafe extern "C" fn(*mut St) -> c_int,
    bind_int64: unsafe extern "C" fn(*mut St, c_int, i64) -> c_int,
    bind_text: unsafe extern "C" fn(*mut St, c_int, *const c_char, c_int, isize) -> c_int,
    column_count: unsafe extern "C" fn(*mut St) -> c_int,
    column_type: unsafe extern "C" fn(*mut St, c_int) -> c_int,
    column_text: unsafe extern "C" fn(*mut St, c_int) -> *const u8,
    column_bytes: unsafe extern "C" fn(*mut St, c_int) -> c_int,
    changes: unsafe extern "C" fn(*mut Db) -> c_int,
    libversion: unsafe extern "C" fn() -> *const c_char,
    sourceid: unsafe extern "C" fn() -> *const c_char,
    threadsafe: unsafe extern "C" fn() -> c_int,
}

/// The symbols a table needs, in the order `Api::from_symbols` reads them.
const SYMBOLS: [&str; 18] = [
    "sqlite3_open_v2",
    "sqlite3_close",
    "sqlite3_busy_timeout",
    "sqlite3_errmsg",
    "sqlite3_prepare_v2",
    "sqlite3_step",
    "sqlite3_reset",
    "sqlite3_finalize",
    "sqlite3_bind_int64",
    "sqlite3_bind_text",
    "sqlite3_column_count",
    "sqlite3_column_type",
    "sqlite3_column_text",
    "sqlite3_column_bytes",
    "sqlite3_changes",
    "sqlite3_libversion",
    "sqlite3_sourceid",
    "sqlite3_threadsafe",
];

impl Api {
    /// The table of the SQLite compiled into dbdelta.
    pub fn bundled() -> &'static Api {
        static BUNDLED: OnceLock<Api> = OnceLock::new();
        BUNDLED.get_or_init(|| {
            let addrs: [*const c_void; 18] = [
                ffi::sqlite3_open_v2 as *const c_void,
                ffi::sqlite3_close as *const c_void,
                ffi::sqlite3_busy_timeout as *const c_void,
                ffi::sqlite3_errmsg as *const c_void,
                ffi::sqlite3_prepare_v2 as *const c_void,
                ffi::sqlite3_step as *const c_void,
                ffi::sqlite3_reset as *const c_void,
                ffi::sqlite3_finalize as *const c_void,
                ffi::sqlite3_bind_int64 as *const c_void,
                ffi::sqlite3_bind_text as *const c_void,
                ffi::sqlite3_column_count as *const c_void,
                ffi::sqlite3_column_type as *const c_void,
                ffi::sqlite3_column_text as *const c_void,
                ffi::sqlite3_column_bytes as *const c_void,
                ffi::sqlite3_changes as *const c_void,
                ffi::sqlite3_libversion as *const c_void,
                ffi::sqlite3_sourceid as *const c_void,
                ffi::sqlite3_threadsafe as *const c_void,
            ];
            // SAFETY: each address is the libsqlite3-sys function of the same name, whose C
            // signature is the one the table declares.
            unsafe { Api::from_symbols(Origin::Bundled, addrs) }
        })
    }

    /// The table of the shared library at `path`, opened on first use and kept for the life
    /// of the process.
    pub fn load(path: &Path) -> Result<&'static Api> {
        static LOADED: OnceLock<Mutex<HashMap<PathBuf, &'static Api>>> = OnceLock::new();
        let real = path
            .canonicalize()
            .with_context(|| format!("SQLite library {}", path.display()))?;
        let mut loaded = LOADED.get_or_init(Default::default).lock().unwrap();
        if let Some(api) = loaded.get(&real) {
            return Ok(api);
        }
        let api: &'static Api = Box::leak(Box::new(open_library(&real)?));
        // SAFETY: `threadsafe` is the library's own sqlite3_threadsafe (read by name from it
        // in `open_library`), which takes no argument and only returns a compile-time constant.
        if unsafe { (api.threadsafe)() } == 0 {
            bail!(
                "SQLite library {} was compiled with SQLITE_THREADSAFE=0; dbdelta's client threads need 1 or 2 (`dbdelta build sqlite` compiles it so)",
                real.display()
            );
        }
        loaded.insert(real, api);
        Ok(api)
    }

    /// # Safety
    /// Each address must be the SQLite function named at the same index of `SYMBOLS`.
    unsafe fn from_symbols(origin: Origin, a: [*const c_void; 18]) -> Api {
        // SAFETY: the caller vouches for every address's signature.
        unsafe {
            Api {
                origin,
                open_v2: cast(a[0]),
                close: cast(a[1]),
                busy_timeout: cast(a[2]),
                errmsg: cast(a[3]),
                prepare_v2: cast(a[4]),
                step: cast(a[5]),
                reset: cast(a[6]),
                finalize: cast(a[7]),
                bind_int64: cast(a[8]),
                bind_text: cast(a[9]),
                column_count: cast(a[10]),
                column_type: cast(a[11]),
                column_text: cast(a[12]),
                column_bytes: cast(a[13]),
                changes: cast(a[14]),
                libversion: cast(a[15]),
                sourceid: cast(a[16]),
                threadsafe: cast(a[17]),
            }
        }
    }

    /// `sqlite3_libversion()`, e.g. `3.50.2`.
    pub fn version(&self) -> String {
        // SAFETY: sqlite3_libversion takes no argument and returns a pointer to a NUL-terminated
        // string in the library's static data; the library is never unloaded.
        unsafe { CStr::from_ptr((self.libversion)()) }
            .to_string_lossy()
            .into_owned()
    }

    /// `sqlite3_sourceid()`: the check-in date and hash the library was made from.
    pub fn source_id(&self) -> String {
        // SAFETY: sqlite3_sourceid takes no argument and returns a pointer to a NUL-terminated
        // string in the library's static data; the library is never unloaded.
        unsafe { CStr::from_ptr((self.sourceid)()) }
            .to_string_lossy()
            .into_owned()
    }

    /// Open (creating) the database file at `path` for one thread's use.
    pub fn open(&'static self, path: &Path) -> Result<Conn, String> {
        let c_path = CString::new(path.as_os_str().as_encoded_bytes())
            .map_err(|_| format!("{}: a path with a NUL byte", path.display()))?;
        let flags = SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX;
        let mut db = std::ptr::null_mut();
        // SAFETY: `c_path` is a NUL-terminated string and `db` a live out-pointer, both valid
        // for the call; a null VFS name means the default. The handle written to `db` (set
        // even on most errors) is owned by `conn` from here, which closes it once.
        let rc = unsafe { (self.open_v2)(c_path.as_ptr(), &mut db, flags, std::ptr::null()) };
        let conn = Conn { api: self, db };
        if rc != SQLITE_OK {
            return Err(match db.is_null() {
                true => format!("cannot open {}: out of memory", path.display()),
                false => conn.message(rc),
            });
        }
        Ok(conn)
    }
}

/// A symbol's address as the function pointer type `F`.
///
/// # Safety
/// `F` must be a function pointer type whose signature is the symbol's.
unsafe fn cast<F: Copy>(addr: *const c_void) -> F {
    assert_eq!(size_of::<F>(), size_of::<*const c_void>());
    // SAFETY: same size; the caller vouches for the signature.
    unsafe { std::mem::transmute_copy(&addr) }
}

/// `dlopen` a library and read every symbol of the table from it.
fn open_library(path: &Path) -> Result<Api> {
    let c_path = CString::new(path.as_os_str().as_encoded_bytes())?;
    // SAFETY: `c_path` is a NUL-terminated string valid for the call. Loading runs the
    // library's initialisers: the file is a SQLite library the lab or a build named, trusted
    // like any binary dbdelta runs; RTLD_LOCAL keeps its symbols from others' lookups.
    let handle = unsafe { libc::dlopen(c_path.as_ptr(), libc::RTLD_NOW | libc::RTLD_LOCAL) };
    if handle.is_null() {
        bail!(
            "cannot load SQLite library {}: {}; give a libsqlite3.so built for this machine",
            path.display(),
            dl_error()
        );
    }
    let mut addrs = [std::ptr::null::<c_void>(); 18];
    for (slot, name) in addrs.iter_mut().zip(SYMBOLS) {
        let c_name = CString::new(name)?;
        // SAFETY: a live handle and a valid C string.
        let sym = unsafe { libc::dlsym(handle, c_name.as_ptr()) };
        if sym.is_null() {
            bail!(
                "{} is not a SQLite library: it has no {name}; give the path of a libsqlite3.so",
                path.display()
            );
        }
        *slot = sym;
    }
    let provider = provider(addrs[15]).unwrap_or_else(|| path.to_path_buf());
    // SAFETY: every address is the library's own function of the name in SYMBOLS.
    Ok(unsafe { Api::from_symbols(Origin::Library(provider), addrs) })
}

/// The file that holds the code at `addr`, as the dynamic linker mapped it.
fn provider(addr: *const c_void) -> Option<PathBuf> {
    // SAFETY: `Dl_info` is raw pointers and integers, for which all-zero bytes (nulls and
    // zeros) are valid values.
    let mut info: libc::Dl_info = unsafe { std::mem::zeroed() };
    // SAFETY: dladdr takes any address (it only looks it up in the loader's tables) and writes
    // nothing but `info`, a live local.
    if unsafe { libc::dladdr(addr, &mut info) } == 0 || info.dli_fname.is_null() {
        return None;
    }
    // SAFETY: dladdr succeeded and `dli_fname` is not null: it points to the NUL-terminated
    // path of a loaded object, which stays mapped (nothing is unloaded) while it is copied.
    let name = unsafe { CStr::from_ptr(info.dli_fname) };
    let path = PathBuf::from(name.to_string_lossy().into_owned());
    path.canonicalize().ok().or(Some(path))
}

fn dl_error() -> String {
    // SAFETY: dlerror takes no argument; it returns null or this thread's last dl* message.
    let e = unsafe { libc::dlerror() };
    match e.is_null() {
        true => "unknown error".into(),
        // SAFETY: not null: a NUL-terminated message that stays valid until this thread's next
        // dl* call, and it is copied before any.
        false => unsafe { CStr::from_ptr(e) }.to_string_lossy().into_owned(),
    }
}

/// True when a result code means "try again": busy or locked.
pub fn retryable(code: c_int) -> bool {
    matches!(code & 0xff, SQLITE_BUSY | SQLITE_LOCKED)
}

/// An error from SQLite: its result code and the connection's message.
#[derive(Debug, Clone)]
pub struct SqlError {
    pub code: c_int,
    pub message: String,
}

impl std::fmt::Display for SqlError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} (SQLite code {})", self.message, self.code)
    }
}

impl std::error::Error for SqlError {}

/// One connection; used by one thread at a time (opened with `SQLITE_OPEN_NOMUTEX`).
pub struct Conn {
    api: &'static Api,
    db: *mut Db,
}

// SAFETY: a connection is owned by one thread at a time; the library is thread-safe (checked
// when it is loaded), so moving the handle between threads is allowed.
unsafe impl Send for Conn {}

impl Conn {
    fn message(&self, code: c_int) -> String {
        // SAFETY: `self.db` is the handle this `Conn` owns (closed only in `drop`);
        // sqlite3_errmsg returns a NUL-terminated message owned by the connection, valid until
        // its next call on it, and this thread makes none before copying it.
        let msg = unsafe { CStr::from_ptr((self.api.errmsg)(self.db)) };
        format!("{} (SQLite code {code})", msg.to_string_lossy())
    }

    fn error(&self, code: c_int) -> SqlError {
        error(self.api, self.db, code)
    }

    pub fn busy_timeout(&self, ms: c_int) -> Result<(), SqlError> {
        // SAFETY: `self.db` is the open handle this `Conn` owns (closed only in `drop`).
        match unsafe { (self.api.busy_timeout)(self.db, ms) } {
            SQLITE_OK => Ok(()),
            rc => Err(self.error(rc)),
        }
    }

    /// Compile the first statement of `sql`.
    pub fn prepare(&self, sql: &str) -> Result<Stmt, SqlError> {
        let len = c_int::try_from(sql.len()).map_err(|_| SqlError {
            code: 18,
            message: "statement too long".into(),
        })?;
        let mut st = std::ptr::null_mut();
        // SAFETY: `self.db` is the open handle this `Conn` owns; `sql` is valid for `len` bytes
        // (no NUL needed when the length is given, and `len` fits, checked above); `st` is a
        // live out-pointer. The statement written there is owned by the `Stmt` made below.
        let rc = unsafe {
            (self.api.prepare_v2)(
                self.db,
                sql.as_ptr().cast(),
                len,
                &mut st,
                std::ptr::null_mut(),
            )
        };
        if rc != SQLITE_OK {
            return Err(self.error(rc));
        }
        if st.is_null() {
            return Err(SqlError {
                code: 21,
                message: format!("no statement in `{sql}`"),
            });
        }
        Ok(Stmt {
            api: self.api,
            db: self.db,
            st,
        })
    }

    /// Run one statement to its end; rows returned (queries) or changed (writes).
    pub fn run(&self, sql: &str) -> Result<u64, SqlError> {
        self.prepare(sql)?.run(&[])
    }

    /// The first column of every row of a query, as text (`NULL` for nulls).
    pub fn strings(&self, sql: &str) -> Result<Vec<String>, SqlError> {
        let mut st = self.prepare(sql)?;
        let mut out = Vec::new();
        while st.step()? {
            out.push(match st.bytes(0) {
                Some(b) => String::from_utf8_lossy(b).into_owned(),
                None => "NULL".to_string(),
            });
        }
        Ok(out)
    }

    /// The first column of the first row, when there is one.
    pub fn one(&self, sql: &str) -> Result<Option<String>, SqlError> {
        Ok(self.strings(sql)?.into_iter().next())
    }
}

impl Drop for Conn {
    fn drop(&mut self) {
        // SAFETY: `self.db` is the handle this `Conn` owns, closed here once. A `Stmt` must not
        // outlive it: sessions declare their statements before the connection, so they are
        // finalized first (sqlite3_close would refuse while statements remain, not crash).
        unsafe { (self.api.close)(self.db) };
    }
}

/// A statement value to bind: SQLite's own types, borrowed.
#[derive(Debug, Clone, Copy)]
pub enum Value<'a> {
    Int(i64),
    Text(&'a str),
}

/// The connection's message for a failed call.
fn error(api: &Api, db: *mut Db, code: c_int) -> SqlError {
    // SAFETY: callers pass the open handle of a live `Conn` or `Stmt` (whose connection
    // outlives it); sqlite3_errmsg returns a NUL-terminated message owned by the connection,
    // valid until its next call on it, and it is copied before any.
    let msg = unsafe { CStr::from_ptr((api.errmsg)(db)) };
    SqlError {
        code,
        message: msg.to_string_lossy().into_owned(),
    }
}

/// A compiled statement of one connection. It must be dropped before its connection (a
/// session keeps its statements in a field declared before the connection's).
pub struct Stmt {
    api: &'static Api,
    db: *mut Db,
    st: *mut St,
}

// SAFETY: as for `Conn`: used by the thread that owns its connection.
unsafe impl Send for Stmt {}

impl Stmt {
    fn error(&self, code: c_int) -> SqlError {
        error(self.api, self.db, code)
    }

    /// Bind parameter `index` (1-based).
    pub fn bind(&mut self, index: usize, value: Value<'_>) -> Result<(), SqlError> {
        let api = self.api;
        let i = index as c_int;
        let text_len = match value {
            Value::Text(s) => c_int::try_from(s.len()).map_err(|_| SqlError {
                code: 18,
                message: "parameter too long".into(),
            })?,
            Value::Int(_) => 0,
        };
        // SAFETY: `self.st` is the statement this `Stmt` owns (non-null, finalized only in
        // `drop`). A text is valid for `text_len` bytes, a non-negative length (a negative one
        // would make SQLite read up to a NUL), and SQLITE_TRANSIENT makes SQLite copy it before
        // returning, so the borrow need not outlive the call.
        let rc = unsafe {
            match value {
                Value::Int(v) => (api.bind_int64)(self.st, i, v),
                Value::Text(s) => {
                    (api.bind_text)(self.st, i, s.as_ptr().cast(), text_len, TRANSIENT)
                }
            }
        };
        match rc {
            SQLITE_OK => Ok(()),
            rc => Err(self.error(rc)),
        }
    }

    /// Step once: `true` with a row, `false` at the end (the statement is then reset). An
    /// error resets it too, so the next execution starts clean.
    pub fn step(&mut self) -> Result<bool, SqlError> {
        // SAFETY: `self.st` is the statement this `Stmt` owns (non-null, finalized only in
        // `drop`); `&mut self` means no row slice from `bytes` is alive across the step.
        match unsafe { (self.api.step)(self.st) } {
            SQLITE_ROW => Ok(true),
            SQLITE_DONE => {
                self.reset();
                Ok(false)
            }
            rc => {
                let e = self.error(rc);
                self.reset();
                Err(e)
            }
        }
    }

    fn reset(&mut self) {
        // SAFETY: `self.st` is the statement this `Stmt` owns; `&mut self` means no row slice
        // from `bytes` is alive across the reset.
        unsafe { (self.api.reset)(self.st) };
    }

    /// Bind `params` (from 1) and run to the end, reading each row's first column as a client
    /// that fetches the result would. Rows returned, or for a write the rows it changed.
    pub fn run(&mut self, params: &[Value<'_>]) -> Result<u64, SqlError> {
        for (i, p) in params.iter().enumerate() {
            if let Err(e) = self.bind(i + 1, *p) {
                self.reset();
                return Err(e);
            }
        }
        // SAFETY: `self.st` is the statement this `Stmt` owns (non-null, finalized only in
        // `drop`).
        let columns = unsafe { (self.api.column_count)(self.st) };
        let mut rows = 0u64;
        while self.step()? {
            if columns > 0 {
                let _ = self.bytes(0);
            }
            rows += 1;
        }
        if columns == 0 {
            // SAFETY: `self.db` is the handle of the connection this statement was prepared on,
            // which outlives it (see `Stmt`).
            return Ok(unsafe { (self.api.changes)(self.db) } as u64);
        }
        Ok(rows)
    }

    /// Column `i` of the current row as text bytes; `None` for NULL.
    pub fn bytes(&self, i: c_int) -> Option<&[u8]> {
        let api = self.api;
        // SAFETY: `self.st` is the statement this `Stmt` owns. Type, then text, then bytes is
        // SQLite's documented order for reading a text without a conversion invalidating it;
        // the text stays valid until the next step, reset or finalize, and those take
        // `&mut self`, which the returned slice's borrow of `self` rules out while it lives.
        // Callers read a row after `step` returned one.
        unsafe {
            if (api.column_type)(self.st, i) == SQLITE_NULL {
                return None;
            }
            let p = (api.column_text)(self.st, i);
            let n = (api.column_bytes)(self.st, i);
            if p.is_null() {
                return None;
            }
            Some(std::slice::from_raw_parts(p, n as usize))
        }
    }
}

impl Drop for Stmt {
    fn drop(&mut self) {
        // SAFETY: `self.st` is the statement this `Stmt` owns, finalized here once, before its
        // connection is closed (see `Stmt`).
        unsafe { (self.api.finalize)(self.st) };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bundled_runs_statements_and_names_itself() {
        let api = Api::bundled();
        assert_eq!(api.origin, Origin::Bundled);
        assert!(api.version().starts_with("3."));
        let dir = tempfile::tempdir().unwrap();
        let conn = api.open(&dir.path().join("t.db")).unwrap();
        conn.run("CREATE TABLE t (id INTEGER PRIMARY KEY, v TEXT)")
            .unwrap();
        let mut ins = conn.prepare("INSERT INTO t VALUES (?, ?)").unwrap();
        for i in 0..3 {
            assert_eq!(ins.run(&[Value::Int(i), Value::Text("x")]).unwrap(), 1);
        }
        drop(ins);
        assert_eq!(conn.run("SELECT v FROM t WHERE id < 2").unwrap(), 2);
        assert_eq!(
            conn.one("SELECT count(*) FROM t").unwrap().as_deref(),
            Some("3")
        );
        let e = conn.run("SELECT nope FROM t").unwrap_err();
        assert!(e.message.contains("no such column"), "{e}");
        assert!(!retryable(e.code));
        assert!(retryable(SQLITE_BUSY) && retryable(SQLITE_LOCKED | (1 << 8)));
    }

    #[test]
    fn a_file_that_is_not_sqlite_is_one_clear_error() {
        let e = Api::load(Path::new("/nonexistent/libsqlite3.so"))
            .err()
            .unwrap();
        assert!(
            format!("{e:#}").contains("/nonexistent/libsqlite3.so"),
            "{e:#}"
        );
        let libc_so = Path::new("/lib/x86_64-linux-gnu/libc.so.6");
        if libc_so.exists() {
            let e = Api::load(libc_so).err().unwrap();
            assert!(
                format!("{e:#}").contains("is not a SQLite library"),
                "{e:#}"
            );
        }
    }
}
