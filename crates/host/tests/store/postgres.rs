//! What only the PostgreSQL engine has: migrations under an advisory lock, several stores on one
//! database, a URL whose password never shows, and libpq's ways of finding that password.

use super::*;

/// Selects the child mode that connects with the password from the environment.
const PASSWORD_CHILD: &str = "pg-password";
/// The URL the child connects to.
const CHILD_URL_ENV: &str = "STORE_CHILD_URL";

fn database_name(url: &str) -> &str {
    url.rsplit('/').next().unwrap()
}

#[tokio::test]
async fn an_empty_database_is_migrated_and_a_newer_one_refused() {
    let cluster = Cluster::shared();
    let url = cluster.new_database();
    let name = database_name(&url);
    let store = Store::connect(&StoreUrl::parse(&url).unwrap(), Path::new("/unused"))
        .await
        .unwrap();
    assert_eq!(
        cluster.psql(name, "SELECT version FROM formwork_schema"),
        "3\n"
    );
    let tables = cluster.psql(
        name,
        "SELECT string_agg(tablename, ',' ORDER BY tablename) FROM pg_tables \
         WHERE schemaname = 'public'",
    );
    assert_eq!(
        tables,
        "app_state,approvals,forms,formwork_schema,invocations,model_items,sessions,transcript\n"
    );
    store.create_session("s", None).await.unwrap();
    store.close().await;

    // Opening again migrates nothing and keeps what was written.
    let again = Store::connect(&StoreUrl::parse(&url).unwrap(), Path::new("/unused"))
        .await
        .unwrap();
    assert_eq!(again.list_sessions().await.unwrap().len(), 1);
    again.close().await;

    cluster.psql(name, "UPDATE formwork_schema SET version = 99");
    let error = Store::connect(&StoreUrl::parse(&url).unwrap(), Path::new("/unused"))
        .await
        .unwrap_err();
    assert!(
        matches!(
            error,
            StoreError::PostgresSchemaTooNew {
                found: 99,
                supported: 3,
                ..
            }
        ),
        "{error}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stores_migrating_one_database_at_once_all_succeed() {
    let cluster = Cluster::shared();
    let url = StoreUrl::parse(&cluster.new_database()).unwrap();
    let mut opening = tokio::task::JoinSet::new();
    for _ in 0..4 {
        let url = url.clone();
        opening.spawn(async move { Store::connect(&url, Path::new("/unused")).await });
    }
    let mut stores = Vec::new();
    while let Some(opened) = opening.join_next().await {
        stores.push(opened.unwrap().unwrap());
    }
    assert_eq!(stores.len(), 4);
    let StoreUrl::Postgres(pg) = &url else {
        unreachable!()
    };
    assert_eq!(
        cluster.psql(&pg.database, "SELECT version FROM formwork_schema"),
        "3\n"
    );
}

#[tokio::test]
async fn a_write_is_visible_to_a_second_store_on_the_same_database() {
    let url = StoreUrl::parse(&Cluster::shared().new_database()).unwrap();
    let first = Store::connect(&url, Path::new("/unused")).await.unwrap();
    let second = Store::connect(&url, Path::new("/unused")).await.unwrap();
    first.create_session("s", Some("Shared")).await.unwrap();
    let request = raw(REQUEST);
    first
        .insert_form(NewForm {
            id: "f",
            session: "s",
            invocation: None,
            plugin: "p",
            request: &request,
            render: None,
            asked_as: None,
        })
        .await
        .unwrap();
    // The second store answers the form the first asked: one ending stands.
    second
        .resolve_form(
            "f",
            FormResolution::Accepted {
                content: Some(&raw(ANSWER)),
            },
        )
        .await
        .unwrap();
    let late = first
        .resolve_form("f", FormResolution::Declined { reason: None })
        .await
        .unwrap_err();
    assert!(
        matches!(
            late,
            StoreError::AlreadyResolved {
                status: "accepted",
                ..
            }
        ),
        "{late}"
    );
    let session = second.session("s").await.unwrap().unwrap();
    assert_eq!(session.title.as_deref(), Some("Shared"));
    let form = first.form("f").await.unwrap().unwrap();
    assert_eq!(form.content.unwrap().get(), ANSWER);
    let kinds: Vec<EntryKind> = first
        .transcript("s")
        .await
        .unwrap()
        .iter()
        .map(|entry| entry.kind)
        .collect();
    assert_eq!(kinds, [EntryKind::Form, EntryKind::FormEnd]);
    first.close().await;
    assert!(matches!(
        first.session("s").await.unwrap_err(),
        StoreError::Closed
    ));
    assert!(second.session("s").await.unwrap().is_some());
}

/// The next notice within 10 s.
async fn next_notice(
    notices: &mut tokio::sync::mpsc::UnboundedReceiver<StoreNotice>,
) -> StoreNotice {
    tokio::time::timeout(Duration::from_secs(10), notices.recv())
        .await
        .expect("a notice within 10 s")
        .expect("the notices go on")
}

/// A store hears what another store commits on the database, in commit order, and not what it
/// writes itself; reading after the last entry it holds gives the other's entries only; after
/// its listening connection is lost it connects again and says to resynchronise.
#[tokio::test]
async fn a_store_hears_what_another_commits_and_not_its_own_writes() {
    let cluster = Cluster::shared();
    let url = cluster.new_database();
    let parsed = StoreUrl::parse(&url).unwrap();
    let other = Store::connect(&parsed, Path::new("/unused")).await.unwrap();
    let this = Store::connect(&parsed, Path::new("/unused")).await.unwrap();
    assert_ne!(other.origin(), this.origin());
    let mut notices = this.follow().await.unwrap().unwrap();

    other.create_session("s 1", None).await.unwrap();
    let text = |text: &str| raw(&format!(r#"{{"text":{text:?}}}"#));
    other
        .append_entry("s 1", PlainEntryKind::UserMessage, &text("first"))
        .await
        .unwrap();
    this.append_entry("s 1", PlainEntryKind::AssistantMessage, &text("own"))
        .await
        .unwrap();
    other
        .append_entry("s 1", PlainEntryKind::UserMessage, &text("third"))
        .await
        .unwrap();
    other.delete_session("s 1").await.unwrap();
    let session = || "s 1".to_owned();
    assert_eq!(
        next_notice(&mut notices).await,
        StoreNotice::Created { session: session() }
    );
    assert_eq!(
        next_notice(&mut notices).await,
        StoreNotice::Appended {
            session: session(),
            seq: 1
        }
    );
    assert_eq!(
        next_notice(&mut notices).await,
        StoreNotice::Appended {
            session: session(),
            seq: 3
        }
    );
    assert_eq!(
        next_notice(&mut notices).await,
        StoreNotice::Deleted { session: session() }
    );

    other.create_session("s2", None).await.unwrap();
    for word in ["a", "b"] {
        other
            .append_entry("s2", PlainEntryKind::UserMessage, &text(word))
            .await
            .unwrap();
    }
    this.append_entry("s2", PlainEntryKind::AssistantMessage, &text("c"))
        .await
        .unwrap();
    let (entries, last) = this.entries_after("s2", 1).await.unwrap();
    let read: Vec<(u64, &str)> = entries
        .iter()
        .map(|entry| (entry.seq, entry.payload.get()))
        .collect();
    assert_eq!(read, [(2, r#"{"text":"b"}"#)]);
    assert_eq!(last, 3);
    assert_eq!(this.entries_after("gone", 0).await.unwrap().1, 0);
    let mut heads = this.session_heads().await.unwrap();
    heads.sort();
    assert_eq!(heads, [("s2".to_owned(), 3)]);
    while tokio::time::timeout(Duration::from_millis(200), notices.recv())
        .await
        .is_ok()
    {}

    // Cut the listening connection: the store connects again and asks for a resync.
    let mark = this.origin().unwrap();
    let cut = cluster.psql(
        database_name(&url),
        &format!(
            "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity \
             WHERE application_name = 'formwork-listen-{mark}'"
        ),
    );
    assert_eq!(cut, "1\n");
    assert_eq!(next_notice(&mut notices).await, StoreNotice::Resync);
    other
        .append_entry("s2", PlainEntryKind::UserMessage, &text("d"))
        .await
        .unwrap();
    assert_eq!(
        next_notice(&mut notices).await,
        StoreNotice::Appended {
            session: "s2".to_owned(),
            seq: 4
        }
    );
    this.close().await;
    other.close().await;
}

/// A running call's lease lasts as long as its store says and is renewed while the store is
/// open; once the store is gone and the lease expired, another store sees the call expired and
/// claims it, and a third, racing, does not; an ended call is nobody's to claim.
#[tokio::test]
async fn a_calls_lease_is_renewed_while_its_store_lives_and_claimed_once_after() {
    let cluster = Cluster::shared();
    let url = cluster.new_database();
    let parsed = StoreUrl::parse(&url).unwrap();
    let lease = Duration::from_millis(600);
    let connect = || Store::connect_with_lease(&parsed, Path::new("/unused"), lease);
    let holder = connect().await.unwrap();
    let (second, third) = (connect().await.unwrap(), connect().await.unwrap());
    assert_eq!(holder.lease(), Some(lease));
    holder.create_session("s", None).await.unwrap();
    for id in ["c", "done"] {
        holder
            .begin_invocation(NewInvocation {
                id,
                session: "s",
                server: "p",
                tool: "t",
                arguments: None,
                asked_by: None,
            })
            .await
            .unwrap();
    }
    holder
        .finish_invocation("done", InvocationOutcome::Failed { error: "over" })
        .await
        .unwrap();
    let left = |id: &str| -> i64 {
        cluster
            .psql(
                database_name(&url),
                &format!(
                    "SELECT lease_until - formwork_now_ms() FROM invocations WHERE id = '{id}'"
                ),
            )
            .trim()
            .parse()
            .unwrap()
    };
    assert!((1..=600).contains(&left("c")), "{}", left("c"));
    // Renewed: after twice the lease it is still running under its holder.
    tokio::time::sleep(lease * 2).await;
    assert!(left("c") > 0, "{}", left("c"));
    assert_eq!(second.expired_calls().await.unwrap(), []);
    assert!(!second.claim_call("c").await.unwrap());

    holder.close().await;
    tokio::time::sleep(lease + Duration::from_millis(200)).await;
    assert_eq!(
        second.expired_calls().await.unwrap(),
        [("c".to_owned(), "s".to_owned())]
    );
    let (a, b) = tokio::join!(second.claim_call("c"), third.claim_call("c"));
    assert!(a.unwrap() ^ b.unwrap(), "exactly one store claims the call");
    assert_eq!(second.expired_calls().await.unwrap(), []);
    assert!(!second.claim_call("done").await.unwrap());
    second.close().await;
    third.close().await;
}

#[test]
fn a_url_shows_no_password_and_a_bad_one_is_a_clear_error() {
    let url = StoreUrl::parse("postgresql://ada:s%40cret@db.example:6543/formwork").unwrap();
    assert_eq!(url.to_string(), "postgres://ada@db.example:6543/formwork");
    assert_eq!(
        format!("{url:?}"),
        r#"Postgres("postgres://ada@db.example:6543/formwork")"#
    );
    let StoreUrl::Postgres(pg) = &url else {
        unreachable!()
    };
    assert_eq!(
        (pg.user.as_str(), pg.host.as_str(), pg.port),
        ("ada", "db.example", 6543)
    );
    let url = StoreUrl::parse("postgres://ada@db.example/formwork").unwrap();
    assert_eq!(url.to_string(), "postgres://ada@db.example:5432/formwork");
    assert_eq!(
        StoreUrl::parse("data/formwork.db").unwrap(),
        StoreUrl::Sqlite("data/formwork.db".into())
    );

    let check = |text: &str, expected: &str| {
        let error = StoreUrl::parse(text).unwrap_err().to_string();
        assert_eq!(error, expected, "{text}");
        assert!(!error.contains("s3cret"), "{error}");
    };
    check(
        "",
        "the store location is empty: give a SQLite file's path or a postgres:// URL",
    );
    check(
        "mysql://ada:s3cret@h/db",
        r#"the store URL scheme "mysql" is not supported: use postgres:// or a file path"#,
    );
    check(
        "postgres://ada:s3cret@h/db?sslmode=require",
        "the store URL postgres://ada@h/db?sslmode=require is invalid: query parameters are not \
         supported (TLS and other options are not yet either)",
    );
    check(
        "postgres://:s3cret@h/db",
        "the store URL postgres://@h/db is invalid: it names no user (postgres://USER@HOST/DATABASE)",
    );
    check(
        "postgres://ada:s3cret@h",
        "the store URL postgres://ada@h is invalid: it names no database, or more than one path \
         segment",
    );
    check(
        "postgres://ada:s3cret@h:99999/db",
        "the store URL postgres://ada@h:99999/db is invalid: not a URL",
    );
}

#[tokio::test]
async fn passwords_come_from_the_url_pgpassword_or_a_pgpass_file_and_never_show() {
    let cluster = Cluster::shared();
    cluster.require_password("ada", "s3cret-pw");
    let database = database_name(&cluster.new_database()).to_owned();
    let port = cluster.port();
    let bare = format!("postgres://ada@127.0.0.1:{port}/{database}");

    // The URL's own password.
    let with = StoreUrl::parse(&format!(
        "postgres://ada:s3cret-pw@127.0.0.1:{port}/{database}"
    ))
    .unwrap();
    let store = Store::connect(&with, Path::new("/unused")).await.unwrap();
    assert!(!format!("{store:?}").contains("s3cret-pw"));
    // A wrong one is refused, and the error does not repeat it.
    let wrong = StoreUrl::parse(&format!(
        "postgres://ada:wrong-pw@127.0.0.1:{port}/{database}"
    ))
    .unwrap();
    let error = Store::connect(&wrong, Path::new("/unused"))
        .await
        .unwrap_err();
    let shown = format!("{error} {error:?}");
    assert!(matches!(error, StoreError::Connect { .. }), "{shown}");
    assert!(shown.contains(&bare), "{shown}");
    assert!(!shown.contains("wrong-pw"), "{shown}");

    // PGPASSWORD, and a .pgpass file, each in a child process with that environment.
    let dir = tempfile::tempdir().unwrap();
    let pgpass = dir.path().join("pgpass");
    std::fs::write(&pgpass, format!("127.0.0.1:{port}:*:ada:s3cret-pw\n")).unwrap();
    std::fs::set_permissions(&pgpass, std::os::unix::fs::PermissionsExt::from_mode(0o600)).unwrap();
    for (variable, value) in [
        ("PGPASSWORD", "s3cret-pw".to_owned()),
        ("PGPASSFILE", pgpass.display().to_string()),
    ] {
        let output = Command::new(std::env::current_exe().unwrap())
            .args(["--exact", "postgres::password_child", "--nocapture"])
            .env(CHILD_ENV, PASSWORD_CHILD)
            .env(CHILD_URL_ENV, &bare)
            .env_remove("PGPASSWORD")
            .env_remove("PGPASSFILE")
            .env(variable, value)
            .output()
            .unwrap();
        let stdout = String::from_utf8_lossy(&output.stdout);
        assert!(stdout.contains("connected\n"), "{variable}: {stdout}");
        assert!(!stdout.contains("s3cret-pw"), "{stdout}");
    }
}

/// Child mode of [`passwords_come_from_the_url_pgpassword_or_a_pgpass_file_and_never_show`].
#[tokio::test]
async fn password_child() {
    if std::env::var(CHILD_ENV).as_deref() != Ok(PASSWORD_CHILD) {
        return;
    }
    let url = StoreUrl::parse(&std::env::var(CHILD_URL_ENV).unwrap()).unwrap();
    match Store::connect(&url, Path::new("/unused")).await {
        Ok(_) => println!("connected"),
        Err(error) => println!("refused: {error}"),
    }
}

/// The durability invariant on PostgreSQL: a child writing as fast as it can is SIGKILLed at
/// random moments, and every write it was told had committed is in the database. What it left
/// pending stays pending (opening cancels nothing on PostgreSQL).
#[test]
fn kill_nine_loses_no_acknowledged_write_on_postgres() {
    const ROUNDS: u32 = 4;
    let url = Cluster::shared().new_database();
    let mut random = Random::seeded();
    let mut total = 0;
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    for round in 0..ROUNDS {
        let acks = write_until_killed(round, url.as_ref(), &mut random);
        total += acks.len();
        runtime.block_on(check_acknowledged(&url, &acks));
    }
    eprintln!("{total} acknowledged writes checked over {ROUNDS} kills");
}

/// Every acknowledged write is in the database at `url`, read through a new store.
async fn check_acknowledged(url: &str, acks: &[String]) {
    let store = Store::connect(&StoreUrl::parse(url).unwrap(), Path::new("/unused"))
        .await
        .unwrap();
    let mut transcripts = std::collections::HashMap::new();
    for ack in acks {
        let fields: Vec<&str> = ack.split(' ').collect();
        match fields.as_slice() {
            ["session", id] => assert!(store.session(id).await.unwrap().is_some(), "{ack}"),
            ["form", id] => {
                let form = store.form(id).await.unwrap().expect(ack);
                assert!(
                    matches!(form.status, FormStatus::Pending | FormStatus::Accepted),
                    "{ack}: {}",
                    form.status
                );
            }
            ["resolved", id] => {
                let form = store.form(id).await.unwrap().expect(ack);
                assert_eq!(form.status, FormStatus::Accepted, "{ack}");
                assert_eq!(form.content.unwrap().get(), ANSWER);
            }
            ["entry", session, seq] => {
                if !transcripts.contains_key(*session) {
                    let seqs: Vec<u64> = store
                        .transcript(session)
                        .await
                        .unwrap()
                        .iter()
                        .map(|entry| entry.seq)
                        .collect();
                    transcripts.insert(session.to_string(), seqs);
                }
                let seq: u64 = seq.parse().unwrap();
                assert!(transcripts[*session].contains(&seq), "{ack}");
            }
            _ => panic!("unexpected line from the child: {ack}"),
        }
    }
    store.close().await;
}
