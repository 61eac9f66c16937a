//! The password for a PostgreSQL URL, found the way libpq finds it: the URL's own, then
//! `PGPASSWORD`, then the first matching line of the password file (`PGPASSFILE`, else
//! `~/.pgpass`). The password is handed to the connection and nowhere else.

use std::path::{Path, PathBuf};

use crate::store_url::PgUrl;

/// The password to connect to `url` with, if any is known. `env` reads an environment variable
/// (a parameter so tests need not change the process's environment).
pub(crate) fn password(url: &PgUrl, env: impl Fn(&str) -> Option<String>) -> Option<String> {
    if let Some(password) = &url.password {
        return Some(password.clone());
    }
    if let Some(password) = env("PGPASSWORD").filter(|password| !password.is_empty()) {
        return Some(password);
    }
    let file = match env("PGPASSFILE").filter(|file| !file.is_empty()) {
        Some(file) => PathBuf::from(file),
        None => dirs::home_dir()?.join(".pgpass"),
    };
    from_file(&file, url)
}

/// The password of the first line of the password file `file` that matches `url`. Like libpq,
/// a file that others may read is ignored (with a warning naming it, never its content).
fn from_file(file: &Path, url: &PgUrl) -> Option<String> {
    use std::os::unix::fs::PermissionsExt;
    let mode = std::fs::metadata(file).ok()?.permissions().mode();
    if mode & 0o077 != 0 {
        tracing::warn!(file = %file.display(), "ignoring a password file others may read (chmod 0600 it)");
        return None;
    }
    let text = std::fs::read_to_string(file).ok()?;
    lookup(&text, url)
}

/// The password of the first line of a `.pgpass` text matching `url`: each line is
/// `host:port:database:user:password`, `*` matches anything in the first four fields, `\:` and
/// `\\` stand for `:` and `\`, and lines starting with `#` are comments.
pub(crate) fn lookup(text: &str, url: &PgUrl) -> Option<String> {
    let port = url.port.to_string();
    let wanted = [url.host.as_str(), &port, &url.database, &url.user];
    text.lines()
        .filter(|line| !line.starts_with('#'))
        .filter_map(fields)
        .find(|fields| {
            wanted
                .iter()
                .zip(fields.iter())
                .all(|(wanted, field)| field == "*" || field == wanted)
        })
        .map(|mut fields| fields.swap_remove(4))
}

/// The five fields of a line, unescaped; `None` for a line of another shape.
fn fields(line: &str) -> Option<Vec<String>> {
    let mut fields = Vec::with_capacity(5);
    let mut field = String::new();
    let mut chars = line.chars();
    while let Some(c) = chars.next() {
        match c {
            '\\' => field.push(chars.next().unwrap_or('\\')),
            // The password, last, may hold unescaped colons.
            ':' if fields.len() < 4 => fields.push(std::mem::take(&mut field)),
            c => field.push(c),
        }
    }
    fields.push(field);
    (fields.len() == 5).then_some(fields)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store_url::StoreUrl;

    fn url(text: &str) -> PgUrl {
        match StoreUrl::parse(text) {
            Ok(StoreUrl::Postgres(url)) => url,
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn pgpass_lines_match_with_wildcards_and_escapes() {
        let text = "# a comment\n\
                    other:5432:app:ada:wrong\n\
                    db.local:5433:*:ada:first\\:part\\\\\n\
                    *:*:*:ada:fallback\n\
                    too:few:fields\n";
        let check = |target: &str, expected: Option<&str>| {
            assert_eq!(lookup(text, &url(target)).as_deref(), expected, "{target}");
        };
        check("postgres://ada@db.local:5433/app", Some("first:part\\"));
        check("postgres://ada@db.local/app", Some("fallback"));
        check("postgres://ada@other/app", Some("wrong"));
        check("postgres://bob@other/app", None);
    }

    #[test]
    fn the_url_then_pgpassword_then_the_file() {
        let dir = tempfile::tempdir().unwrap_or_else(|error| panic!("{error}"));
        let file = dir.path().join("pgpass");
        std::fs::write(&file, "*:*:*:ada:from-file\n").unwrap_or_else(|error| panic!("{error}"));
        let file_name = file.display().to_string();
        let env = |pgpassword: Option<&'static str>| {
            let file_name = file_name.clone();
            move |name: &str| match name {
                "PGPASSWORD" => pgpassword.map(str::to_owned),
                "PGPASSFILE" => Some(file_name.clone()),
                _ => None,
            }
        };
        let bare = url("postgres://ada@h/db");
        let with = url("postgres://ada:from-url@h/db");
        assert_eq!(
            password(&with, env(Some("from-env"))).as_deref(),
            Some("from-url")
        );
        assert_eq!(
            password(&bare, env(Some("from-env"))).as_deref(),
            Some("from-env")
        );

        use std::os::unix::fs::PermissionsExt;
        let private = std::fs::Permissions::from_mode(0o600);
        std::fs::set_permissions(&file, private).unwrap_or_else(|error| panic!("{error}"));
        assert_eq!(password(&bare, env(None)).as_deref(), Some("from-file"));
        // A file others may read is ignored, as libpq does.
        let open = std::fs::Permissions::from_mode(0o644);
        std::fs::set_permissions(&file, open).unwrap_or_else(|error| panic!("{error}"));
        assert_eq!(password(&bare, env(None)), None);
    }
}
