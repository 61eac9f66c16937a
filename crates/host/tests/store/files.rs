//! The data directory and the database files are private; a corrupt or newer database is refused.

use super::*;

/// The mode bits of `path`.
fn mode(path: &Path) -> u32 {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(path).unwrap().permissions().mode() & 0o7777
}

/// Every directory the store creates is 0700 and every file 0600, `-wal` and `-shm` included,
/// under the usual umask that would make them 0755 and 0644.
#[tokio::test]
async fn the_data_directory_and_the_database_files_are_private() {
    nix::sys::stat::umask(nix::sys::stat::Mode::from_bits_truncate(0o022));
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("a/b/data");
    let path = Store::path_in(&data);
    let store = Store::open(&path).unwrap();
    store.create_session("s1", None).await.unwrap();
    let message = raw(r#"{"text":"a secret answer"}"#);
    store
        .append_entry("s1", PlainEntryKind::UserMessage, &message)
        .await
        .unwrap();
    let report = |names: &[&str]| -> Vec<String> {
        names
            .iter()
            .map(|name| format!("{name} {:o}", mode(&dir.path().join(name))))
            .collect()
    };
    assert_eq!(
        report(&["a", "a/b", "a/b/data"]),
        ["a 700", "a/b 700", "a/b/data 700"]
    );
    assert_eq!(
        report(&[
            "a/b/data/formwork.db",
            "a/b/data/formwork.db-wal",
            "a/b/data/formwork.db-shm",
            "a/b/data/formwork.db.lock"
        ]),
        [
            "a/b/data/formwork.db 600",
            "a/b/data/formwork.db-wal 600",
            "a/b/data/formwork.db-shm 600",
            "a/b/data/formwork.db.lock 600"
        ]
    );
    store.close().await;
}

/// A database left readable by others (an older formwork, a copy) is made private when opened;
/// a data directory that existed before is the person's and keeps its mode.
#[tokio::test]
async fn an_existing_database_readable_by_others_is_made_private() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    std::fs::create_dir(&data).unwrap();
    std::fs::set_permissions(&data, std::fs::Permissions::from_mode(0o755)).unwrap();
    let path = Store::path_in(&data);
    let conn = rusqlite::Connection::open(&path).unwrap();
    let journal: String = conn
        .query_row("PRAGMA journal_mode = WAL", [], |row| row.get(0))
        .unwrap();
    assert_eq!(journal, "wal");
    conn.execute_batch("CREATE TABLE t (x); INSERT INTO t VALUES (1);")
        .unwrap();
    let files = [
        "formwork.db",
        "formwork.db-wal",
        "formwork.db-shm",
        "formwork.db.lock",
    ]
    .map(|name| data.join(name));
    std::fs::write(&files[3], b"").unwrap();
    for file in &files {
        std::fs::set_permissions(file, std::fs::Permissions::from_mode(0o644)).unwrap();
    }
    let store = Store::open(&path).unwrap();
    let modes: Vec<String> = files
        .iter()
        .map(|file| format!("{:o}", mode(file)))
        .collect();
    assert_eq!(modes, ["600", "600", "600", "600"]);
    assert_eq!(format!("{:o}", mode(&data)), "755");
    store.close().await;
    drop(conn);
}

#[test]
fn a_corrupt_or_newer_database_is_refused_with_its_path() {
    let (_dir, path) = temp_db();
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(
        &path,
        b"this is not a database, just some text that is long enough",
    )
    .unwrap();
    let error = Store::open(&path).unwrap_err();
    assert!(matches!(error, StoreError::Corrupt { .. }), "{error}");
    let message = error.to_string();
    assert!(message.contains(&path.display().to_string()), "{message}");
    assert!(message.contains("corrupt"), "{message}");

    std::fs::remove_file(&path).unwrap();
    let conn = rusqlite::Connection::open(&path).unwrap();
    conn.pragma_update(None, "user_version", 99).unwrap();
    drop(conn);
    let error = Store::open(&path).unwrap_err();
    assert!(
        matches!(error, StoreError::SchemaTooNew { found: 99, .. }),
        "{error}"
    );
    assert!(error.to_string().contains(&path.display().to_string()));
}
