//! The TLS client setup of the process: which roots it trusts, and what it says when a server's
//! certificate is refused.
//!
//! The roots are the system's plus those that `SSL_CERT_FILE` / `SSL_CERT_DIR` name (so a private
//! CA is trusted without losing the public ones), loaded once; where that finds no certificate at
//! all, the bundled Mozilla roots. rustls's own verifier judges each chain; ours only words its
//! refusal so that a person sees which certificate failed and why.

use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};

use rustls_native_certs::CertificateResult;

use tokio_rustls::TlsConnector;
use tokio_rustls::rustls::client::WebPkiServerVerifier;
use tokio_rustls::rustls::client::danger::{
    HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier,
};
use tokio_rustls::rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use tokio_rustls::rustls::{
    self, CertificateError, DigitallySignedStruct, OtherError, RootCertStore, SignatureScheme,
};

/// TLS cannot be set up in this process (rustls's own words follow).
#[derive(Debug, Clone, thiserror::Error)]
#[error("TLS is not available: {0}")]
pub(crate) struct TlsUnavailable(String);

/// One TLS client configuration for the whole process, shared by every endpoint.
pub(crate) fn client_config() -> Result<Arc<rustls::ClientConfig>, TlsUnavailable> {
    static CONFIG: OnceLock<Result<Arc<rustls::ClientConfig>, TlsUnavailable>> = OnceLock::new();
    CONFIG
        .get_or_init(|| config_trusting(trusted_roots()).map(Arc::new))
        .clone()
}

/// A connector on [`client_config`].
pub(crate) fn connector() -> Result<TlsConnector, TlsUnavailable> {
    client_config().map(TlsConnector::from)
}

/// What a failed handshake with `host` says to a person: a refused certificate in our words
/// (see [`Refused`]), anything else as rustls puts it.
pub(crate) fn handshake_failure(host: &str, err: &std::io::Error) -> String {
    let refused = err
        .get_ref()
        .and_then(|inner| inner.downcast_ref::<rustls::Error>())
        .and_then(refused);
    match refused {
        Some(refused) => refused.0.clone(),
        None => format!("TLS with {host} failed: {err}"),
    }
}

/// The refusal that [`NamingVerifier`] put into `err`, if it is one.
fn refused(err: &rustls::Error) -> Option<&Refused> {
    match err {
        rustls::Error::InvalidCertificate(CertificateError::Other(other)) => {
            other.0.downcast_ref::<Refused>()
        }
        _ => None,
    }
}

/// The system's roots and the environment's, else the bundled ones.
fn trusted_roots() -> RootCertStore {
    let mut roots = certificates(&NamedCertificates::from_env());
    if roots.is_empty() {
        tracing::debug!(
            target: "formwork::tls",
            "no trusted certificate from the system or SSL_CERT_FILE / SSL_CERT_DIR: using the bundled Mozilla roots"
        );
        roots.extend(webpki_roots::TLS_SERVER_ROOTS.iter().cloned());
    }
    roots
}

/// The system's certificates and those `named`.
fn certificates(named: &NamedCertificates) -> RootCertStore {
    let mut roots = RootCertStore::empty();
    for (source, found) in [
        ("system", system_store(named)),
        ("environment", named.load()),
    ] {
        for error in &found.errors {
            tracing::debug!(target: "formwork::tls", %error, source, "reading trusted certificates");
        }
        let (added, ignored) = roots.add_parsable_certificates(found.certs);
        tracing::debug!(target: "formwork::tls", added, ignored, source, "trusted certificates");
    }
    roots
}

/// What `SSL_CERT_FILE` (one PEM file) and `SSL_CERT_DIR` (directories, split as `PATH` is) name.
struct NamedCertificates {
    file: Option<PathBuf>,
    dirs: Vec<PathBuf>,
}

impl NamedCertificates {
    fn from_env() -> NamedCertificates {
        NamedCertificates {
            file: std::env::var_os("SSL_CERT_FILE")
                .filter(|file| !file.is_empty())
                .map(PathBuf::from),
            dirs: std::env::var_os("SSL_CERT_DIR")
                .map(|dirs| {
                    std::env::split_paths(&dirs)
                        .filter(|dir| !dir.as_os_str().is_empty())
                        .collect()
                })
                .unwrap_or_default(),
        }
    }

    fn is_empty(&self) -> bool {
        self.file.is_none() && self.dirs.is_empty()
    }

    fn load(&self) -> CertificateResult {
        let mut found = rustls_native_certs::load_certs_from_paths(self.file.as_deref(), None);
        for dir in &self.dirs {
            add_directory(&mut found, dir);
        }
        found
    }
}

/// Adds the certificates of the files in `dir` to `found`.
fn add_directory(found: &mut CertificateResult, dir: &Path) {
    let more = rustls_native_certs::load_certs_from_paths(None, Some(dir));
    found.certs.extend(more.certs);
    found.errors.extend(more.errors);
}

/// The operating system's store. `rustls-native-certs` reads the environment's files instead of it
/// when they are named; on Linux and the BSDs its directories are read directly then, as OpenSSL's
/// probe finds them. On macOS and Windows the environment's files then stand alone.
fn system_store(named: &NamedCertificates) -> CertificateResult {
    if named.is_empty() {
        return platform_store();
    }
    let mut found = CertificateResult::default();
    #[cfg(all(unix, not(target_os = "macos")))]
    for dir in openssl_probe::candidate_cert_dirs() {
        add_directory(&mut found, dir);
    }
    found
}

/// The system's own store, the environment aside.
#[cfg(all(unix, not(target_os = "macos")))]
fn platform_store() -> CertificateResult {
    // What `rustls-native-certs` reads on these systems, but not through `load_native_certs`:
    // that reads the environment again, and takes a variable set to nothing (`SSL_CERT_FILE=`)
    // for a file named "", which holds no certificate.
    // The file and the first directory in one read, which skips a directory's links to files
    // it has read (the bundle's certificates are in the directory too).
    let probed = openssl_probe::probe();
    let mut dirs = probed.cert_dir.iter();
    let mut found = rustls_native_certs::load_certs_from_paths(
        probed.cert_file.as_deref(),
        dirs.next().map(PathBuf::as_path),
    );
    for dir in dirs {
        add_directory(&mut found, dir);
    }
    found
}

#[cfg(not(all(unix, not(target_os = "macos"))))]
fn platform_store() -> CertificateResult {
    rustls_native_certs::load_native_certs()
}

fn config_trusting(roots: RootCertStore) -> Result<rustls::ClientConfig, TlsUnavailable> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let verifier = NamingVerifier::trusting(roots, Arc::clone(&provider))?;
    Ok(rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|err| TlsUnavailable(err.to_string()))?
        .dangerous()
        .with_custom_certificate_verifier(Arc::new(verifier))
        .with_no_client_auth())
}

/// A server certificate rustls refused, in a sentence naming it: "the certificate of
/// localhost (issued by "Example CA") is not trusted: unknown issuer".
#[derive(Debug)]
struct Refused(String);

impl std::fmt::Display for Refused {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for Refused {}

/// rustls's verifier, with refusals reworded as [`Refused`].
#[derive(Debug)]
struct NamingVerifier {
    inner: Arc<WebPkiServerVerifier>,
}

impl NamingVerifier {
    fn trusting(
        roots: RootCertStore,
        provider: Arc<rustls::crypto::CryptoProvider>,
    ) -> Result<NamingVerifier, TlsUnavailable> {
        let inner = WebPkiServerVerifier::builder_with_provider(Arc::new(roots), provider)
            .build()
            .map_err(|err| TlsUnavailable(err.to_string()))?;
        Ok(NamingVerifier { inner })
    }
}

impl ServerCertVerifier for NamingVerifier {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        server_name: &ServerName<'_>,
        ocsp_response: &[u8],
        now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        self.inner
            .verify_server_cert(end_entity, intermediates, server_name, ocsp_response, now)
            .map_err(|err| match err {
                rustls::Error::InvalidCertificate(reason) => {
                    let refused = Refused(refusal(end_entity, server_name, &reason));
                    rustls::Error::InvalidCertificate(CertificateError::Other(OtherError(
                        Arc::new(refused),
                    )))
                }
                other => other,
            })
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.inner.verify_tls12_signature(message, cert, dss)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.inner.verify_tls13_signature(message, cert, dss)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.inner.supported_verify_schemes()
    }
}

/// The sentence for a refused `leaf`.
fn refusal(
    leaf: &CertificateDer<'_>,
    server_name: &ServerName<'_>,
    reason: &CertificateError,
) -> String {
    let server = server_name.to_str();
    let parsed = x509_parser::parse_x509_certificate(leaf.as_ref()).ok();
    let names = parsed.as_ref().map(|(_, cert)| {
        let subject = name_of(cert.subject());
        let issuer = name_of(cert.issuer());
        let self_signed = cert.subject().as_raw() == cert.issuer().as_raw();
        (subject, issuer, self_signed)
    });
    let hosts = parsed
        .as_ref()
        .map(|(_, cert)| hosts_of(cert))
        .unwrap_or_default();
    let (certificate, self_signed) = match names {
        Some((subject, issuer, self_signed)) => {
            let subject = subject.unwrap_or_else(|| server.to_string());
            let issuer = issuer.unwrap_or_else(|| "an unnamed issuer".to_owned());
            (
                format!("the certificate of {subject} (issued by \"{issuer}\")"),
                self_signed,
            )
        }
        None => (format!("the certificate {server} presented"), false),
    };
    let why = match reason {
        CertificateError::UnknownIssuer if self_signed => {
            "is not trusted: it is self-signed".to_owned()
        }
        CertificateError::UnknownIssuer => "is not trusted: unknown issuer".to_owned(),
        CertificateError::Expired => "has expired".to_owned(),
        CertificateError::ExpiredContext { not_after, .. } => {
            format!("has expired (valid until {})", time_of(*not_after))
        }
        CertificateError::NotValidYet => "is not valid yet".to_owned(),
        CertificateError::NotValidYetContext { not_before, .. } => {
            format!("is not valid yet (valid from {})", time_of(*not_before))
        }
        CertificateError::NotValidForName | CertificateError::NotValidForNameContext { .. } => {
            format!(
                "is not valid for the name {server} (it names {})",
                if hosts.is_empty() {
                    "no host".to_owned()
                } else {
                    hosts.join(", ")
                }
            )
        }
        CertificateError::Revoked => "has been revoked".to_owned(),
        CertificateError::BadSignature => "is not trusted: a bad signature".to_owned(),
        CertificateError::InvalidPurpose | CertificateError::InvalidPurposeContext { .. } => {
            "is not meant for a TLS server".to_owned()
        }
        CertificateError::Other(other) => match other.0.downcast_ref::<webpki::Error>() {
            Some(webpki::Error::CaUsedAsEndEntity) => "is a certificate authority's, which a server may \
                 not present as its own: give the server a certificate of its own, issued by that authority"
                .to_owned(),
            Some(reason) => format!("is not trusted: {reason}"),
            None => format!("is not trusted: {}", other.0),
        },
        other => format!("is not trusted: {other}"),
    };
    format!("{certificate} {why}")
}

/// A name's common name, else the whole name (`O=…, C=…`); `None` when it is empty.
fn name_of(name: &x509_parser::x509::X509Name<'_>) -> Option<String> {
    let common = name
        .iter_common_name()
        .find_map(|attribute| attribute.as_str().ok())
        .map(str::to_owned);
    common.or_else(|| {
        let whole = name.to_string();
        (!whole.is_empty()).then_some(whole)
    })
}

/// The host names and addresses a certificate is for (its subject alternative names).
fn hosts_of(cert: &x509_parser::certificate::X509Certificate<'_>) -> Vec<String> {
    use x509_parser::extensions::GeneralName;
    let Ok(Some(names)) = cert.subject_alternative_name() else {
        return Vec::new();
    };
    names
        .value
        .general_names
        .iter()
        .filter_map(|name| match name {
            GeneralName::DNSName(host) => Some((*host).to_owned()),
            GeneralName::IPAddress(bytes) => match bytes.len() {
                4 => <[u8; 4]>::try_from(*bytes)
                    .ok()
                    .map(|octets| std::net::IpAddr::from(octets).to_string()),
                16 => <[u8; 16]>::try_from(*bytes)
                    .ok()
                    .map(|octets| std::net::IpAddr::from(octets).to_string()),
                _ => None,
            },
            _ => None,
        })
        .collect()
}

fn time_of(time: UnixTime) -> String {
    let seconds = i64::try_from(time.as_secs()).unwrap_or(i64::MAX);
    x509_parser::time::ASN1Time::from_timestamp(seconds).map_or_else(
        |_| format!("{seconds} s after 1970"),
        |time| time.to_string(),
    )
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use rcgen::{
        BasicConstraints, CertificateParams, DnType, IsCa, Issuer, KeyPair, KeyUsagePurpose,
    };

    /// A certificate authority named `name`.
    fn authority(name: &str) -> (rcgen::Certificate, Issuer<'static, KeyPair>) {
        let key = KeyPair::generate().unwrap();
        let mut params = CertificateParams::new(Vec::<String>::new()).unwrap();
        params.distinguished_name.push(DnType::CommonName, name);
        params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        params.key_usages = vec![KeyUsagePurpose::KeyCertSign];
        let cert = params.self_signed(&key).unwrap();
        (cert, Issuer::new(params, key))
    }

    /// A server certificate for `names` (the first is its common name), changed by `adjust`.
    fn server(
        names: &[&str],
        issuer: Option<&Issuer<'_, KeyPair>>,
        adjust: impl FnOnce(&mut CertificateParams),
    ) -> rcgen::Certificate {
        let key = KeyPair::generate().unwrap();
        let names: Vec<String> = names.iter().map(|name| (*name).to_owned()).collect();
        let mut params = CertificateParams::new(names.clone()).unwrap();
        params
            .distinguished_name
            .push(DnType::CommonName, names[0].as_str());
        adjust(&mut params);
        match issuer {
            Some(issuer) => params.signed_by(&key, issuer).unwrap(),
            None => params.self_signed(&key).unwrap(),
        }
    }

    #[test]
    fn ssl_cert_file_and_dir_add_to_the_system_store() {
        let dir = tempfile::tempdir().unwrap();
        let empty = dir.path().join("none.pem");
        std::fs::write(&empty, "").unwrap();
        let named_dir = dir.path().join("certs");
        std::fs::create_dir(&named_dir).unwrap();
        let (file_ca, file_issuer) = authority("File CA");
        let (dir_ca, dir_issuer) = authority("Dir CA");
        let file = dir.path().join("ca.pem");
        std::fs::write(&file, file_ca.pem()).unwrap();
        std::fs::write(named_dir.join("ca.pem"), dir_ca.pem()).unwrap();
        // A named file without certificates: the system's store alone, read without the process's
        // environment.
        let system = certificates(&NamedCertificates {
            file: Some(empty),
            dirs: Vec::new(),
        })
        .len();
        if std::path::Path::new("/etc/ssl/certs/ca-certificates.crt").exists() {
            assert!(system > 0, "the system store was not read");
        }
        let both = certificates(&NamedCertificates {
            file: Some(file),
            dirs: vec![named_dir],
        });
        assert_eq!(both.len(), system + 2);
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let verifier = NamingVerifier::trusting(both, provider).unwrap();
        let name = ServerName::try_from("localhost").unwrap();
        for issuer in [&file_issuer, &dir_issuer] {
            let leaf = server(&["localhost"], Some(issuer), |_| {});
            assert!(
                verifier
                    .verify_server_cert(leaf.der(), &[], &name, &[], UnixTime::now())
                    .is_ok()
            );
        }
    }

    /// What a client trusting `root` says of `leaf` presented as `name`: `trusted` or the
    /// refusal.
    fn check(root: &rcgen::Certificate, leaf: &rcgen::Certificate, name: &str) -> String {
        let mut roots = RootCertStore::empty();
        roots.add(root.der().clone()).unwrap();
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let verifier = NamingVerifier::trusting(roots, provider).unwrap();
        let name = ServerName::try_from(name.to_owned()).unwrap();
        match verifier.verify_server_cert(leaf.der(), &[], &name, &[], UnixTime::now()) {
            Ok(_) => "trusted".to_owned(),
            Err(err) => {
                refused(&err).map_or_else(|| format!("not reworded: {err}"), |r| r.0.clone())
            }
        }
    }

    #[test]
    fn every_endpoint_shares_one_configuration() {
        let first = connector().unwrap();
        let second = connector().unwrap();
        assert!(Arc::ptr_eq(first.config(), second.config()));
    }

    #[test]
    fn a_refused_certificate_is_named_with_its_issuer_and_the_reason() {
        let (root, issuer) = authority("formwork test CA");
        let (stranger, stranger_issuer) = authority("some other CA");
        let good = server(&["localhost"], Some(&issuer), |_| {});
        assert_eq!(check(&root, &good, "localhost"), "trusted");
        assert_eq!(
            check(&stranger, &good, "localhost"),
            "the certificate of localhost (issued by \"formwork test CA\") is not trusted: unknown issuer"
        );
        let alone = server(&["localhost"], None, |_| {});
        assert_eq!(
            check(&root, &alone, "localhost"),
            "the certificate of localhost (issued by \"localhost\") is not trusted: it is self-signed"
        );
        let expired = server(&["localhost"], Some(&issuer), |params| {
            params.not_before = rcgen::date_time_ymd(2020, 1, 1);
            params.not_after = rcgen::date_time_ymd(2021, 1, 1);
        });
        assert_eq!(
            check(&root, &expired, "localhost"),
            "the certificate of localhost (issued by \"formwork test CA\") has expired (valid until Jan  1 00:00:00 2021 +00:00)"
        );
        let early = server(&["localhost"], Some(&issuer), |params| {
            params.not_before = rcgen::date_time_ymd(2100, 1, 1);
            params.not_after = rcgen::date_time_ymd(2101, 1, 1);
        });
        assert_eq!(
            check(&root, &early, "localhost"),
            "the certificate of localhost (issued by \"formwork test CA\") is not valid yet (valid from Jan  1 00:00:00 2100 +00:00)"
        );
        let elsewhere = server(
            &["other.test", "www.other.test", "10.0.0.1"],
            Some(&issuer),
            |_| {},
        );
        assert_eq!(
            check(&root, &elsewhere, "localhost"),
            "the certificate of other.test (issued by \"formwork test CA\") is not valid for the name localhost (it names other.test, www.other.test, 10.0.0.1)"
        );
        // Without a common name, the whole subject; an empty one, the server's name.
        let unnamed = server(&["localhost"], Some(&stranger_issuer), |params| {
            params.distinguished_name = rcgen::DistinguishedName::new();
            params
                .distinguished_name
                .push(DnType::OrganizationName, "Example Org");
        });
        assert_eq!(
            check(&root, &unnamed, "localhost"),
            "the certificate of O=Example Org (issued by \"some other CA\") is not trusted: unknown issuer"
        );
        let empty = server(&["localhost"], Some(&stranger_issuer), |params| {
            params.distinguished_name = rcgen::DistinguishedName::new();
        });
        assert_eq!(
            check(&root, &empty, "localhost"),
            "the certificate of localhost (issued by \"some other CA\") is not trusted: unknown issuer"
        );
        // A CA's own certificate as the server's (what `openssl req -x509` makes by default), trusted or not.
        let authority_itself = server(&["localhost"], None, |params| {
            params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        });
        let as_its_own = "the certificate of localhost (issued by \"localhost\") is a certificate authority's, \
             which a server may not present as its own: give the server a certificate of its own, issued by that \
             authority";
        assert_eq!(check(&root, &authority_itself, "localhost"), as_its_own);
        assert_eq!(
            check(&authority_itself, &authority_itself, "localhost"),
            as_its_own
        );
    }
}
