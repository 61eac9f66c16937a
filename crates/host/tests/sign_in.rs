//! A session's sign-in card against a real OAuth-protected server: the official TS SDK's example
//! (`simpleStreamableHttp.js --oauth`, @modelcontextprotocol/sdk 1.32.2) with its demo
//! authorization server. A call meets the server's 401; the session shows "Sign in to demo" as
//! a link card; the person opens it (here headless Chromium visits the link, as the page's tab
//! would) and the call goes on; a declined card fails the call, saying so.
#![allow(clippy::unwrap_used)]

use std::process::{Command as Process, Stdio};
use std::sync::Arc;
use std::time::Duration;

use formwork_host::config::Config;
use formwork_host::{Command, ElicitationRequest, Event, FormAnswer, Host, HostOptions};
use formwork_testkit::OAuthExample;
use serde_json::json;
use tokio::sync::broadcast;

const CHROMIUM: &str = "/usr/bin/chromium";

struct Watch {
    host: Host,
    session: String,
    events: broadcast::Receiver<Arc<Event>>,
    _data: tempfile::TempDir,
}

impl Watch {
    fn open(url: &str) -> Watch {
        let text = format!(
            "mcp_oauth_credentials_store = \"file\"\n\
             [mcp_servers.demo]\nurl = \"{url}\"\ndefault_tools_approval_mode = \"approve\"\n"
        );
        let data = tempfile::tempdir().unwrap();
        let options = HostOptions {
            data_dir: Some(data.path().to_owned()),
            ..HostOptions::default()
        };
        let host = Host::new(Config::from_toml(&text, None).unwrap(), options);
        let session = host.create_session();
        let (_, events) = host.subscribe(&session).unwrap();
        Watch {
            host,
            session,
            events,
            _data: data,
        }
    }

    fn send(&self, command: Command) {
        self.host.command(&self.session, command).unwrap();
    }

    async fn next<T>(&mut self, mut pick: impl FnMut(&Event) -> Option<T>) -> T {
        let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
        loop {
            let event = tokio::time::timeout_at(deadline, self.events.recv())
                .await
                .expect("no such event within 30 s")
                .unwrap();
            if let Some(found) = pick(&event) {
                return found;
            }
        }
    }

    /// Calls `greet` and waits for the sign-in card: its id, call, message and link.
    async fn greet_until_sign_in(&mut self) -> (String, Option<String>, String, String) {
        self.send(Command::CallTool {
            server: "demo".into(),
            tool: "greet".into(),
            arguments: Some(json!({"name": "Ada"})),
        });
        self.next(|event| match event {
            Event::FormRequested {
                form_id,
                call_id,
                plugin,
                body: ElicitationRequest::Url(link),
                ..
            } if plugin == "demo" => Some((
                form_id.clone(),
                call_id.clone(),
                link.message.clone(),
                link.url.clone(),
            )),
            _ => None,
        })
        .await
    }

    /// The sign-in card `card` completes, and the call goes on to greet Ada.
    async fn completed_and_greeted(&mut self, card: &str) {
        let completed = self
            .next(|event| match event {
                Event::FormCompleted { form_id } => Some(form_id.clone()),
                _ => None,
            })
            .await;
        assert_eq!(completed, card);
        assert_eq!(
            self.finished().await.unwrap(),
            json!({"content": [{"type": "text", "text": "Hello, Ada!"}]})
        );
    }

    async fn finished(&mut self) -> Result<serde_json::Value, String> {
        self.next(|event| match event {
            Event::ToolCallFinished {
                result: Some(result),
                ..
            } => Some(Ok(result.clone())),
            Event::ToolCallFinished {
                error: Some(error), ..
            } => Some(Err(error.clone())),
            _ => None,
        })
        .await
    }
}

/// What the page does when the person opens the link: a browser tab that follows the
/// authorization server's redirect back to formwork.
fn visit(url: &str, profile: &std::path::Path) {
    let status = Process::new(CHROMIUM)
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-background-networking",
            "--no-first-run",
            "--disable-component-update",
            "--disable-sync",
        ])
        .arg(format!("--user-data-dir={}", profile.display()))
        .arg("--dump-dom")
        .arg(url)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .unwrap();
    assert!(status.success());
}

#[tokio::test(flavor = "multi_thread")]
async fn a_call_that_meets_a_401_shows_a_sign_in_card_and_goes_on_after_sign_in() {
    assert!(
        std::path::Path::new(CHROMIUM).is_file(),
        "{CHROMIUM} is missing: `cargo xtask test` installs it"
    );
    let server = OAuthExample::start();
    let mut watch = Watch::open(&server.url);
    let (card, call, message, link) = watch.greet_until_sign_in().await;
    assert_eq!(
        message,
        "Sign in to demo. It asks for your authorization before its tools can run; the call goes on once you have signed in."
    );
    assert!(call.is_some(), "the card belongs to the call");
    let authorize = url::Url::parse(&link).unwrap();
    assert_eq!(authorize.path(), "/authorize");
    let query: std::collections::HashMap<String, String> =
        authorize.query_pairs().into_owned().collect();
    assert_eq!(query["code_challenge_method"], "S256");
    assert_eq!(query["resource"], server.url);
    assert!(query["redirect_uri"].starts_with("http://127.0.0.1:"));

    watch.send(Command::AnswerForm {
        form_id: card.clone(),
        answer: FormAnswer::AcceptUrl,
    });
    let profile = tempfile::tempdir().unwrap();
    let visited = {
        let link = link.clone();
        let profile = profile.path().to_owned();
        tokio::task::spawn_blocking(move || visit(&link, &profile))
    };
    watch.completed_and_greeted(&card).await;
    visited.await.unwrap();
}

#[tokio::test(flavor = "multi_thread")]
async fn a_declined_sign_in_fails_the_call_and_says_why() {
    let server = OAuthExample::start();
    let mut watch = Watch::open(&server.url);
    let (card, _, _, _) = watch.greet_until_sign_in().await;
    watch.send(Command::AnswerForm {
        form_id: card,
        answer: FormAnswer::Decline,
    });
    let error = watch.finished().await.unwrap_err();
    assert!(
        error.contains("signing in to demo failed: the person declined to sign in"),
        "{error}"
    );
}

/// The browser may come back before the page's word that the link was opened (the demo
/// authorization server redirects at once): the sign-in that came back with the card's `state`
/// accepts the card, rather than ending it as cancelled under a call that goes on.
#[tokio::test(flavor = "multi_thread")]
async fn a_sign_in_that_comes_back_before_the_cards_answer_accepts_the_card() {
    let server = OAuthExample::start();
    let mut watch = Watch::open(&server.url);
    let (card, _, _, link) = watch.greet_until_sign_in().await;
    let profile = tempfile::tempdir().unwrap();
    let visited = {
        let profile = profile.path().to_owned();
        tokio::task::spawn_blocking(move || visit(&link, &profile))
    };
    let resolved = watch
        .next(|event| match event {
            Event::FormResolved {
                form_id,
                action,
                reason,
                ..
            } => Some((form_id.clone(), action.as_str(), reason.clone())),
            _ => None,
        })
        .await;
    assert_eq!(resolved, (card.clone(), "accept", None));
    watch.completed_and_greeted(&card).await;
    visited.await.unwrap();
}
