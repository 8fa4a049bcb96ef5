//! A `postgresql://` address: what to connect to, and how messages name it.
//!
//! The URL is parsed once, when the store is opened. The password goes into
//! the connection settings and nowhere else: [`Address::location`] is built
//! from the other parts, [`Address::identity`] from them and a keyed digest
//! of the whole URL, and no message of this module repeats any part of the
//! URL it could not read.
//!
//! `tokio-postgres` reads the URL, except for two parameters it does not
//! know in libpq's meaning, which are taken out first:
//! * `sslmode`: `disable`, `prefer` (the default), `require`, `verify-ca`,
//!   `verify-full` (see tls.rs);
//! * `sslrootcert`: a PEM file of the certificate authorities to trust
//!   instead of the public ones.

use std::path::PathBuf;

use percent_encoding::percent_decode_str;
use postgres::Config;
use postgres::config::{Host, SslMode};

use crate::error::{Location, Result, StoreError};

/// The URL schemes of a PostgreSQL store (§12).
const SCHEMES: [&str; 2] = ["postgresql://", "postgres://"];

/// §12: whether `text` names a PostgreSQL store rather than a file.
pub fn is_database_url(text: &str) -> bool {
    SCHEMES.iter().any(|scheme| {
        text.len() >= scheme.len() && text[..scheme.len()].eq_ignore_ascii_case(scheme)
    })
}

/// How far to trust the server's certificate (libpq's `sslmode` values).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum TlsMode {
    Disable,
    /// TLS when the server offers it; the certificate is not checked.
    Prefer,
    /// TLS or no connection; the certificate is checked only against an
    /// `sslrootcert` given (as libpq does).
    Require,
    /// TLS; the certificate chain is checked, not the host name.
    VerifyCa,
    /// TLS; the chain and the host name are checked.
    VerifyFull,
}

/// A parsed address.
pub(crate) struct Address {
    pub config: Config,
    pub tls: TlsMode,
    pub root_certificates: Option<PathBuf>,
    /// `postgresql://user@host:port/database`, without the password.
    pub server: String,
    /// A digest of the URL as given, every setting included (password,
    /// `sslmode`, `options`...), keyed per process: see
    /// [`Address::identity`].
    settings: u64,
}

impl Address {
    pub(crate) fn parse(url: &str) -> Result<Address> {
        let bad = |why: &str| {
            StoreError::invalid(format!(
                "not a usable PostgreSQL address ({why}); expected \
                 postgresql://user:password@host:port/database"
            ))
        };
        if !is_database_url(url) {
            return Err(bad("it must start with postgresql:// or postgres://"));
        }
        let scheme_end = url.find("://").map_or(0, |i| i + 3);
        let (base, query) = match url.split_once('?') {
            Some((base, query)) => (base, Some(query)),
            None => (url, None),
        };
        // An `@` of an unencoded password would make the rest of it the
        // host name, which messages show.
        if base[scheme_end..].matches('@').count() > 1 {
            return Err(bad(
                "more than one '@': write an '@' inside the user name or password as %40",
            ));
        }
        let mut tls = TlsMode::Prefer;
        let mut root_certificates = None;
        let mut passed = Vec::new();
        for pair in query.into_iter().flat_map(|q| q.split('&')) {
            let (key, value) = pair.split_once('=').unwrap_or((pair, ""));
            let decode = |text: &str| {
                percent_decode_str(text)
                    .decode_utf8()
                    .map(std::borrow::Cow::into_owned)
                    .map_err(|_| bad("a parameter is not UTF-8 once decoded"))
            };
            match decode(key)?.as_str() {
                "sslmode" => {
                    tls = match decode(value)?.as_str() {
                        "disable" => TlsMode::Disable,
                        "prefer" => TlsMode::Prefer,
                        "require" => TlsMode::Require,
                        "verify-ca" => TlsMode::VerifyCa,
                        "verify-full" => TlsMode::VerifyFull,
                        _ => {
                            return Err(bad(
                                "sslmode must be disable, prefer, require, verify-ca or \
                                 verify-full",
                            ));
                        }
                    };
                }
                "sslrootcert" => root_certificates = Some(PathBuf::from(decode(value)?)),
                _ => passed.push(pair),
            }
        }
        let rest = if passed.is_empty() {
            base.to_string()
        } else {
            format!("{base}?{}", passed.join("&"))
        };
        // The parser's messages name an option or a position, never a value.
        let mut config: Config = rest
            .parse()
            .map_err(|e: postgres::Error| bad(&super::errors::detail(&e)))?;
        config.ssl_mode(if tls == TlsMode::Disable {
            SslMode::Disable
        } else if tls == TlsMode::Prefer {
            SslMode::Prefer
        } else {
            SslMode::Require
        });
        if config.get_hosts().is_empty() {
            return Err(bad("no host"));
        }
        if config.get_application_name().is_none() {
            config.application_name("membolt");
        }
        let server = server_text(&config);
        Ok(Address {
            config,
            tls,
            root_certificates,
            server,
            settings: settings_digest(url),
        })
    }

    /// §12: the store as messages name it: no password, ever.
    pub(crate) fn location(&self, project: &str) -> Location {
        Location::new(format!("{} (project {project})", self.server))
    }

    /// What makes two handles in one process the same store, sharing one
    /// state and one connection: the same server and project, opened with
    /// the same URL, every setting included. A handle opened with another
    /// password, `sslmode` or `options` gets a connection of its own, so it
    /// neither borrows a connection it could not make nor is refused for
    /// another's mistake. (Two URLs that differ only in how they spell the
    /// same settings do not share: nothing is lost but a connection.)
    pub(crate) fn identity(&self, project: &str) -> String {
        format!(
            "postgresql:{}\0{project}\0{:016x}",
            self.server, self.settings
        )
    }
}

/// The URL's digest for [`Address::identity`]: `SipHash` under a key drawn
/// once per process, so that equal URLs give equal digests here and the key
/// says nothing of the password anywhere else.
fn settings_digest(url: &str) -> u64 {
    use std::hash::BuildHasher;
    static KEY: std::sync::OnceLock<std::collections::hash_map::RandomState> =
        std::sync::OnceLock::new();
    KEY.get_or_init(std::collections::hash_map::RandomState::new)
        .hash_one(url)
}

fn server_text(config: &Config) -> String {
    let user = config.get_user().unwrap_or("");
    let ports = config.get_ports();
    let hosts: Vec<String> = config
        .get_hosts()
        .iter()
        .enumerate()
        .map(|(i, host)| {
            let port = ports.get(i).or(ports.first()).copied().unwrap_or(5432);
            match host {
                Host::Tcp(name) if name.contains(':') => format!("[{name}]:{port}"),
                Host::Tcp(name) => format!("{name}:{port}"),
                Host::Unix(path) => format!("{}:{port}", path.display()),
            }
        })
        .collect();
    let database = config.get_dbname().unwrap_or(user);
    format!("postgresql://{user}@{}/{database}", hosts.join(","))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn schemes_are_recognised_in_any_case() {
        assert!(is_database_url("postgresql://u@h/db"));
        assert!(is_database_url("POSTGRES://u@h/db"));
        assert!(!is_database_url("postgresql:/u@h/db"));
        assert!(!is_database_url("memory.redb"));
        assert!(!is_database_url("pg"));
    }

    #[test]
    fn the_location_never_shows_the_password() {
        let address = Address::parse("postgresql://bob:hunter%402@db.example:6543/team").unwrap();
        assert_eq!(address.config.get_password(), Some(&b"hunter@2"[..]));
        let location = address.location("acme").to_string();
        assert_eq!(
            location,
            "postgresql://bob@db.example:6543/team (project acme)"
        );
        assert!(!address.identity("acme").contains("hunter"));
    }

    #[test]
    fn only_equal_connection_settings_make_the_same_store() {
        let identity = |url: &str| Address::parse(url).unwrap().identity("acme");
        let base = "postgresql://bob:pw@db.example:6543/team";
        assert_eq!(identity(base), identity(base));
        for other in [
            "postgresql://bob:other@db.example:6543/team",
            "postgresql://bob:pw@db.example:6543/team?sslmode=verify-full",
            "postgresql://bob:pw@db.example:6543/team?options=-csearch_path%3Dm",
        ] {
            assert_ne!(identity(base), identity(other), "{other}");
        }
        assert_ne!(
            identity(base),
            Address::parse(base).unwrap().identity("other")
        );
    }

    #[test]
    fn libpq_tls_parameters_are_understood() {
        let address = Address::parse(
            "postgres://u:p@h/db?sslmode=verify-full&sslrootcert=%2Fca.pem&connect_timeout=3",
        )
        .unwrap();
        assert_eq!(address.tls, TlsMode::VerifyFull);
        assert_eq!(address.root_certificates, Some(PathBuf::from("/ca.pem")));
        assert_eq!(address.config.get_ssl_mode(), SslMode::Require);
        assert_eq!(
            Address::parse("postgres://u@h/db").unwrap().tls,
            TlsMode::Prefer
        );
    }

    #[test]
    fn bad_addresses_are_refused_without_repeating_them() {
        for url in [
            "postgresql://u:p@ss@h/db",
            "postgresql://u:secretword@h/db?sslmode=secretword",
            "postgresql://u:secretword@h/db?nonsense=secretword",
            "postgresql://u:secretword@h:port/db",
            "file.redb",
        ] {
            let message = Address::parse(url).err().expect(url).to_string();
            assert!(!message.contains("secretword"), "{message}");
            assert!(!message.contains("ss@h"), "{message}");
            assert!(message.contains("PostgreSQL address"), "{message}");
        }
    }
}
