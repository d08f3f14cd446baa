//! A target that is an already running server: its `connect = "postgres://…"` or
//! `"mysql://…"` URL, parsed into where and as whom to connect.
//!
//! Owns the URL grammar (`scheme://[user[:password]@][host][:port][/database][?host=/socket/dir]`,
//! percent-decoded; libpq's and MySQL's URL forms) and how a URL is shown (never with its
//! password). Must not: connect (the engine's driver does), or start or stop anything.

use std::path::PathBuf;

use percent_encoding::{NON_ALPHANUMERIC, percent_decode_str, utf8_percent_encode};

use crate::engine::EngineKind;

/// Where the server listens.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Address {
    /// A unix socket: PostgreSQL's socket directory (the file is `.s.PGSQL.<port>` in it),
    /// MySQL's socket file.
    Unix(PathBuf),
    /// A TCP host name or address.
    Tcp(String),
}

/// A family's `connect` URL form ([`crate::engine::Family::url`]): its schemes (the first is
/// how the URL is shown) and what an URL leaves out defaults to.
#[derive(Debug)]
pub struct UrlForm {
    pub schemes: &'static [&'static str],
    pub user: &'static str,
    pub port: u16,
    pub database: &'static str,
    /// The query key naming a unix socket (`host`: PostgreSQL's directory; `socket`: MySQL's
    /// file).
    pub socket_key: &'static str,
    /// The socket of an URL with an empty host.
    pub socket: &'static str,
}

/// A parsed `connect` URL.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConnectUrl {
    pub engine: EngineKind,
    pub user: String,
    pub password: Option<String>,
    pub address: Address,
    pub port: u16,
    pub database: String,
}

impl ConnectUrl {
    /// Parse `postgres://`, `postgresql://`, `mysql://` or `mariadb://` URLs. The default
    /// user is `postgres`/`root`, the default port 5432/3306, the default database `postgres`
    /// /`dbdelta`; `?host=/dir` (PostgreSQL) or `?socket=/file` (MySQL) names a unix socket,
    /// as does an empty host (PostgreSQL: `/var/run/postgresql`; MySQL:
    /// `/run/mysqld/mysqld.sock`).
    pub fn parse(text: &str) -> Result<ConnectUrl, String> {
        ConnectUrl::parse_as(text, "connect =")
    }

    /// [`ConnectUrl::parse`], its messages naming the URL as `what` (a lab key or a flag).
    pub fn parse_as(text: &str, what: &str) -> Result<ConnectUrl, String> {
        let bad = |why: &str| {
            format!(
                "{what} \"{}\": {why}; expected e.g. \"postgres://user@127.0.0.1:5432/db\", \
                 \"postgres:///db?host=/run/postgresql\" or \"mysql://root@127.0.0.1:3306/db\"",
                redact_secrets(text)
            )
        };
        let (scheme, rest) = text.split_once("://").ok_or_else(|| bad("no scheme"))?;
        let (engine, form) = EngineKind::by_scheme(scheme).ok_or_else(|| {
            let schemes: Vec<String> = (EngineKind::url_forms().iter())
                .map(|u| format!("{}://", u.schemes[0]))
                .collect();
            bad(&format!("the scheme must be {}", schemes.join(" or ")))
        })?;
        let (rest, query) = rest.split_once('?').unwrap_or((rest, ""));
        let (authority, path) = rest.split_once('/').unwrap_or((rest, ""));
        let (userinfo, hostport) = match authority.rsplit_once('@') {
            Some((u, h)) => (Some(u), h),
            None => (None, authority),
        };
        let (user, password) = match userinfo {
            Some(u) => match u.split_once(':') {
                Some((u, p)) => (
                    decode(u).map_err(|e| bad(&e))?,
                    Some(decode(p).map_err(|_| {
                        bad("the password is not valid percent-encoded UTF-8 (write %25 for a literal %)")
                    })?),
                ),
                None => (decode(u).map_err(|e| bad(&e))?, None),
            },
            None => (String::new(), None),
        };
        let (host, port) = split_port(hostport).map_err(|e| bad(&e))?;
        let mut socket = None;
        for pair in query.split('&').filter(|p| !p.is_empty()) {
            let (k, v) = pair
                .split_once('=')
                .ok_or_else(|| bad("a parameter without '='"))?;
            if k != form.socket_key {
                return Err(bad(&format!("unknown parameter {k}")));
            }
            socket = Some(PathBuf::from(decode(v).map_err(|e| bad(&e))?));
        }
        let host = decode(host).map_err(|e| bad(&e))?;
        let address = match (socket, host.is_empty()) {
            (Some(s), _) => Address::Unix(s),
            (None, false) if host.starts_with('/') => Address::Unix(PathBuf::from(host)),
            (None, false) => Address::Tcp(host),
            (None, true) => Address::Unix(PathBuf::from(form.socket)),
        };
        let database = decode(path).map_err(|e| bad(&e))?;
        Ok(ConnectUrl {
            engine,
            user: if user.is_empty() {
                form.user.into()
            } else {
                user
            },
            password,
            address,
            port: port.unwrap_or(form.port),
            database: if database.is_empty() {
                form.database.into()
            } else {
                database
            },
        })
    }

    /// The URL as recorded and shown: the password replaced by `***`.
    pub fn shown(&self) -> String {
        let pw = if self.password.is_some() { ":***" } else { "" };
        self.render(pw)
    }

    /// The whole URL, password included (percent-encoded), for handing to a child process
    /// over a pipe. Never for a message, a log or the store: those take [`ConnectUrl::shown`].
    pub fn with_secret(&self) -> String {
        match &self.password {
            Some(p) => self.render(&format!(":{}", utf8_percent_encode(p, NON_ALPHANUMERIC))),
            None => self.render(""),
        }
    }

    fn render(&self, pw: &str) -> String {
        let form = (self.engine.family().url()).expect("a connect URL's family has a URL form");
        let scheme = form.schemes[0];
        match &self.address {
            Address::Tcp(h) => format!(
                "{scheme}://{}{pw}@{h}:{}/{}",
                self.user, self.port, self.database
            ),
            Address::Unix(p) => format!(
                "{scheme}://{}{pw}@:{}/{}?{}={}",
                self.user,
                self.port,
                self.database,
                form.socket_key,
                p.display()
            ),
        }
    }
}

fn decode(s: &str) -> Result<String, String> {
    let b = s.as_bytes();
    if let Some(at) = (0..b.len()).find(|&i| {
        b[i] == b'%' && !(b.get(i + 1..i + 3)).is_some_and(|h| h.iter().all(u8::is_ascii_hexdigit))
    }) {
        return Err(format!(
            "{s:?} has a '%' not followed by two hex digits at byte {at} (write %25 for a literal %)"
        ));
    }
    percent_decode_str(s)
        .decode_utf8()
        .map(|c| c.into_owned())
        .map_err(|_| format!("{s:?} is not UTF-8 once percent-decoded"))
}

/// `host:port`, `[v6]:port`, `host` or `:port`.
fn split_port(hostport: &str) -> Result<(&str, Option<u16>), String> {
    let (host, port) = if let Some(rest) = hostport.strip_prefix('[') {
        let (h, after) = rest.split_once(']').ok_or("an unclosed [ in the host")?;
        (h, after.strip_prefix(':'))
    } else {
        match hostport.rsplit_once(':') {
            Some((h, p)) => (h, Some(p)),
            None => (hostport, None),
        }
    };
    let port = port
        .map(|p| {
            p.parse::<u16>()
                .map_err(|_| format!("port {p:?} is not a number"))
        })
        .transpose()?;
    Ok((host, port))
}

/// What stands for a password in everything shown or stored.
pub const REDACTED: &str = "***";

/// `text` with every password in it replaced by `***`: the password of each
/// `scheme://user:PASSWORD@host` URL and the value of each libpq `password=VALUE` keyword
/// (`primary_conninfo`). The one redaction of the crate: messages about a URL that did not
/// parse, and everything the results store keeps (a lab's text, a server's settings, errors).
pub fn redact_secrets(text: &str) -> std::borrow::Cow<'_, str> {
    let spans = secret_spans(text);
    if spans.iter().all(|s| &text[s.clone()] == REDACTED) {
        return std::borrow::Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len());
    let mut at = 0;
    for span in spans {
        out.push_str(&text[at..span.start]);
        out.push_str(REDACTED);
        at = span.end;
    }
    out.push_str(&text[at..]);
    std::borrow::Cow::Owned(out)
}

/// Whether `text` holds a password [`redact_secrets`] replaced: the text of a lab as stored,
/// which cannot run again without the password.
pub fn holds_redacted(text: &str) -> bool {
    secret_spans(text)
        .iter()
        .any(|s| &text[s.clone()] == REDACTED)
}

/// Where the passwords of `text` are, in order, not overlapping.
fn secret_spans(text: &str) -> Vec<std::ops::Range<usize>> {
    let mut spans: Vec<_> = text
        .match_indices("://")
        .filter_map(|(i, _)| url_password(text, i + 3))
        .chain(
            text.match_indices("password")
                .filter_map(|(i, _)| keyword_password(text, i)),
        )
        .chain(super::secret_env::spans(text))
        .collect();
    spans.sort_by_key(|s| s.start);
    spans.dedup_by(|b, a| b.start < a.end);
    spans
}

/// The password of the URL whose authority starts at `start`: after the first `:` of the
/// user info, up to the last `@` of the authority (as [`ConnectUrl::parse`] splits it). The
/// authority ends where the URL's path or query starts, or at a quote or a line's end (the
/// end of a TOML or JSON string); a backslash escapes the character after it.
fn url_password(text: &str, start: usize) -> Option<std::ops::Range<usize>> {
    let bytes = text.as_bytes();
    let mut end = start;
    let mut at = None;
    while end < bytes.len() {
        match bytes[end] {
            b'/' | b'?' | b'"' | b'\'' | b'\n' | b'\r' => break,
            b'\\' => end += 1,
            b'@' => at = Some(end),
            _ => {}
        }
        end += 1;
    }
    let at = at?;
    let colon = start + text[start..at].find(':')?;
    Some(colon + 1..at)
}

/// The value of a libpq `password = VALUE` keyword starting at `start` (a word of its own:
/// `password_encryption` is not one; a MySQL option file's `password = "…"` is).
fn keyword_password(text: &str, start: usize) -> Option<std::ops::Range<usize>> {
    let word = |c: u8| c.is_ascii_alphanumeric() || c == b'_' || c == b'.';
    let bytes = text.as_bytes();
    if start > 0 && word(bytes[start - 1]) {
        return None;
    }
    let rest = &text[start + "password".len()..];
    let after_eq = rest.trim_start_matches([' ', '\t']).strip_prefix('=')?;
    assigned_value(text, text.len() - after_eq.len())
}

/// The value that starts after blanks at `from` (just after an `=` or `:`): a quoted value
/// (also a TOML multi-line one) ends at its closing quote(s), a bare one at a blank, a quote, `,` or `}`; a backslash
/// escapes the character after it. `None` when it is empty.
pub(super) fn assigned_value(text: &str, from: usize) -> Option<std::ops::Range<usize>> {
    let value = text[from..].trim_start_matches([' ', '\t']);
    // A TOML multi-line string: up to its closing triple quote.
    if let Some(triple) = ["\"\"\"", "'''"].into_iter().find(|q| value.starts_with(q)) {
        let inner = &value[3..];
        let start = text.len() - inner.len();
        let span = start..start + inner.find(triple).unwrap_or(inner.len());
        return (!span.is_empty()).then_some(span);
    }
    // A quote may itself be escaped, as in a TOML string (`"password = \"x y\""`): then so
    // is its end.
    let escaped = value.starts_with(['\\']);
    let quote = value[escaped as usize..]
        .chars()
        .next()
        .filter(|c| matches!(c, '\'' | '"'));
    let value = match quote {
        Some(_) => &value[escaped as usize + 1..],
        None => value,
    };
    let mut chars = value.char_indices().peekable();
    let mut end = value.len();
    while let Some((i, c)) = chars.next() {
        let next = chars.peek().map(|&(_, n)| n);
        let closes = match (quote, escaped) {
            (Some(q), true) => c == '\\' && next == Some(q),
            (Some(q), false) => c == q,
            (None, _) => c.is_whitespace() || matches!(c, '"' | '\'' | ',' | '}'),
        };
        if closes {
            end = i;
            break;
        }
        if c == '\\' {
            chars.next();
        }
    }
    let from = text.len() - value.len();
    let span = from..from + end;
    (!span.is_empty()).then_some(span)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_bad_percent_escape_is_refused_naming_the_url_not_the_password() {
        let e = ConnectUrl::parse_as("postgres://%zz", "--store").unwrap_err();
        assert!(e.contains("'%' not followed by two hex digits"), "{e}");
        let e = ConnectUrl::parse_as("postgres://u:se%zzcret@h/db", "--store").unwrap_err();
        assert!(e.contains("password") && !e.contains("se%zzcret"), "{e}");
        assert!(ConnectUrl::parse("postgres://u:s%40cret@h/db").is_ok());
    }

    #[test]
    fn postgres_urls_over_tcp_and_unix_sockets() {
        let u = ConnectUrl::parse("postgres://bench:s%40cret@127.0.0.1:6543/sb").unwrap();
        assert_eq!(u.engine, EngineKind::parse("postgres").unwrap());
        assert_eq!(
            (u.user.as_str(), u.password.as_deref()),
            ("bench", Some("s@cret"))
        );
        assert_eq!(u.address, Address::Tcp("127.0.0.1".into()));
        assert_eq!((u.port, u.database.as_str()), (6543, "sb"));
        assert_eq!(u.shown(), "postgres://bench:***@127.0.0.1:6543/sb");
        let u = ConnectUrl::parse("postgresql:///db?host=%2Ftmp%2Fpg").unwrap();
        assert_eq!(u.address, Address::Unix("/tmp/pg".into()));
        assert_eq!((u.user.as_str(), u.port), ("postgres", 5432));
        let u = ConnectUrl::parse("postgres://[::1]:5433").unwrap();
        assert_eq!((u.address, u.port), (Address::Tcp("::1".into()), 5433));
        assert_eq!(u.database, "postgres");
    }

    #[test]
    fn mysql_urls_and_errors_that_hide_the_password() {
        let u = ConnectUrl::parse("mysql://root@127.0.0.1/bench").unwrap();
        assert_eq!(
            (u.engine, u.port),
            (EngineKind::parse("mysql").unwrap(), 3306)
        );
        let u = ConnectUrl::parse("mariadb://root@/bench?socket=/tmp/my.sock").unwrap();
        assert_eq!(u.address, Address::Unix("/tmp/my.sock".into()));
        let mut u = ConnectUrl::parse("mysql://root@/bench?socket=/tmp/my.sock").unwrap();
        u.password = Some("p@ss:w/rd".into());
        assert_eq!(ConnectUrl::parse(&u.with_secret()).unwrap(), u);
        assert!(!u.shown().contains("rd"), "{}", u.shown());
        let e = ConnectUrl::parse("oracle://u:pw@h/db").unwrap_err();
        assert!(e.contains("u:***@h/db") && !e.contains("pw"), "{e}");
        let e = ConnectUrl::parse("postgres://u:pw@h:99999/db").unwrap_err();
        assert!(e.contains("port \"99999\"") && !e.contains(":pw@"), "{e}");
        let e = ConnectUrl::parse("postgres://h/db?sslmode=require").unwrap_err();
        assert!(e.contains("unknown parameter sslmode"), "{e}");
    }

    #[test]
    fn every_password_in_free_text_is_redacted_once() {
        let lab = "[[target]]\nconnect = \"postgres://bench:s3cr@t 1#x@10.0.0.5:5432/db\"\n\
                   # old: mysql://root:hunter2@h/db\nhost = \"ssh://bench@h\"\n";
        let r = redact_secrets(lab);
        assert!(!r.contains("s3cr") && !r.contains("hunter2"), "{r}");
        assert!(
            r.contains("\"postgres://bench:***@10.0.0.5:5432/db\""),
            "{r}"
        );
        assert!(
            r.contains("mysql://root:***@h/db") && r.contains("ssh://bench@h"),
            "{r}"
        );
        assert!(holds_redacted(&r) && !holds_redacted(lab));
        assert_eq!(redact_secrets(&r), r, "redacting twice changes nothing");
        // TOML and JSON escapes inside the password; no password: the text itself.
        let r = redact_secrets(r#"connect = "postgres://u:p\"w\\@h/db""#);
        assert_eq!(r, r#"connect = "postgres://u:***@h/db""#);
        for plain in [
            "postgres:///db?host=/run/pg",
            "postgres://u@h/db",
            "a://b:c d",
        ] {
            assert!(matches!(
                redact_secrets(plain),
                std::borrow::Cow::Borrowed(_)
            ));
        }
        // libpq's keywords (a replica's primary_conninfo) and MySQL option files' quotes.
        let conf = "primary_conninfo = 'host=a password=s3cret user=r'\n\
                    x = password='q u\\'v' password_encryption = scram-sha-256\n\
                    password = \"x y\"";
        let r = redact_secrets(conf);
        assert_eq!(
            r,
            "primary_conninfo = 'host=a password=*** user=r'\n\
             x = password='***' password_encryption = scram-sha-256\npassword = \"***\""
        );
        // A quoted value whose quotes are escaped, as in a TOML string.
        let r = redact_secrets(r#"settings = ["password = \"x y\"", "a"]"#);
        assert_eq!(r, r#"settings = ["password = \"***\"", "a"]"#);
        let json = serde_json::json!({"é": "é://ü:ä@ö", "k": "password=s3"}).to_string();
        let back: serde_json::Value = serde_json::from_str(&redact_secrets(&json)).unwrap();
        assert_eq!(
            (&back["é"], &back["k"]),
            (&"é://ü:***@ö".into(), &"password=***".into())
        );
    }
}
