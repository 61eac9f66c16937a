//! The formwork workbench: a local web server and page through which a person drives sessions,
//! calls plugin tools and answers plugin forms.
//!
//! The server listens on 127.0.0.1 only and is locked: every request's `Host` and `Origin` must
//! name the bound address, and every request for data (the API and the session socket) must carry
//! the access token minted at start, so neither another site nor a DNS-rebinding page can reach
//! the person's plugins. [`Workbench::url`] carries the token in its fragment; the page keeps it
//! and sends it as a header or WebSocket subprotocol, never in a cookie, so no other server on
//! the machine ever receives it (`access.rs` says why). The page is plain JavaScript and CSS
//! embedded in the binary; it sets every piece of plugin text with `textContent` and runs under a
//! strict Content-Security-Policy.
//!
//! The page talks to the host through one WebSocket per open session: the server sends the
//! session's [`formwork_host::Event`]s (the snapshot, then live ones) exactly as the host
//! serialises them, and the page sends [`formwork_host::Command`]s. `docs/workbench.md`
//! documents the protocol.
//!
//! **Invariant:** this crate is the only one that knows HTML or JavaScript; it reaches plugins
//! only through `formwork-host`.

mod access;
mod api;
mod assets;
mod assistant;
mod error;
pub mod model;
mod sandbox;
mod socket;
mod tools;

use std::future::Future;
use std::net::{Ipv4Addr, SocketAddr};
use std::sync::Arc;

use axum::Router;
use axum::extract::DefaultBodyLimit;
use axum::routing::{get, post};
use axum::serve::ListenerExt;
use formwork_host::Host;
use formwork_host::store::MAX_UPLOAD_BYTES;
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;

pub use access::usable_token;
pub use error::WebError;
pub use model::{ModelError, ScriptedModel};

/// How to start the workbench.
#[derive(Debug, Clone, Default)]
pub struct WebOptions {
    /// The port on 127.0.0.1; `0` picks a free one.
    pub port: u16,
    /// The scripted model that answers messages; `None` records messages only.
    pub model: Option<ScriptedModel>,
    /// The access token: 32 to 128 letters, digits, `-`, `.`, `_` or `~` (it travels in a URL
    /// fragment and a WebSocket subprotocol); `None` mints a random one (what `formwork serve`
    /// does).
    pub token: Option<String>,
}

/// A bound, not yet serving workbench.
pub struct Workbench {
    listener: TcpListener,
    /// The app sandbox's listener: app documents, each on an origin of its own.
    apps_listener: TcpListener,
    addr: SocketAddr,
    state: AppState,
}

/// What every handler shares.
#[derive(Clone)]
pub(crate) struct AppState {
    pub(crate) host: Host,
    pub(crate) access: Arc<access::Access>,
    pub(crate) model: Option<Arc<ScriptedModel>>,
    pub(crate) tools: Arc<tools::Catalogue>,
    pub(crate) sandbox: Arc<sandbox::Sandbox>,
    /// Cancelled when the server stops, so open sockets close instead of holding it up.
    pub(crate) shutdown: CancellationToken,
}

impl Workbench {
    /// Binds 127.0.0.1:`port` and mints the access token. Listing the configured servers'
    /// tools starts in the background, so the palette is ready when the page opens.
    pub async fn bind(host: Host, options: WebOptions) -> Result<Workbench, WebError> {
        let listener = TcpListener::bind((Ipv4Addr::LOCALHOST, options.port))
            .await
            .map_err(|source| WebError::Bind {
                port: options.port,
                source,
            })?;
        let addr = listener.local_addr().map_err(|source| WebError::Bind {
            port: options.port,
            source,
        })?;
        let apps_listener = TcpListener::bind((Ipv4Addr::LOCALHOST, 0))
            .await
            .map_err(|source| WebError::Bind { port: 0, source })?;
        let apps_port = apps_listener
            .local_addr()
            .map_err(|source| WebError::Bind { port: 0, source })?
            .port();
        let token = match options.token {
            Some(token) if access::usable_token(&token) => token,
            Some(_) => return Err(WebError::Token),
            None => access::mint_token()?,
        };
        let state = AppState {
            host,
            access: Arc::new(access::Access::new(token, addr.port(), apps_port)),
            model: options.model.map(Arc::new),
            tools: Arc::new(tools::Catalogue::default()),
            sandbox: Arc::new(sandbox::Sandbox::new(addr.port(), apps_port)),
            shutdown: CancellationToken::new(),
        };
        let warm = state.clone();
        tokio::spawn(async move {
            warm.tools.list(&warm.host, false).await;
        });
        Ok(Workbench {
            listener,
            apps_listener,
            addr,
            state,
        })
    }

    /// The bound address (always 127.0.0.1).
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// The port of the app sandbox's listener (app documents are served on
    /// `http://<document>.localhost:<port>/`).
    pub fn apps_port(&self) -> u16 {
        self.apps_listener
            .local_addr()
            .map_or(0, |addr| addr.port())
    }

    /// The access token.
    pub fn token(&self) -> &str {
        self.state.access.token()
    }

    /// The page's URL, as printed at start: `http://127.0.0.1:PORT/#token=TOKEN`. The token is in
    /// the fragment, which a browser keeps to itself; the page takes it from there.
    pub fn url(&self) -> String {
        format!("http://{}/#token={}", self.addr, self.token())
    }

    /// Serves until `shutdown` resolves; open sockets are closed then.
    pub async fn serve(
        self,
        shutdown: impl Future<Output = ()> + Send + 'static,
    ) -> Result<(), WebError> {
        let stop = self.state.shutdown.clone();
        let apps = Router::new()
            // Only a frame's GET: a HEAD would spend the document's one load unseen.
            .route(
                "/",
                get(sandbox::document)
                    .head(sandbox::nothing)
                    .fallback(sandbox::nothing),
            )
            .fallback(sandbox::nothing)
            .with_state(self.state.clone());
        let apps_stop = stop.clone();
        let apps_server = axum::serve(self.apps_listener, apps)
            .with_graceful_shutdown(async move { apps_stop.cancelled().await });
        tokio::spawn(async move {
            if let Err(err) = apps_server.await {
                tracing::error!(target: "formwork::web", %err, "the app sandbox listener failed");
            }
        });
        let app = router(self.state);
        // Events are small and must reach the page at once: no Nagle delay on the socket.
        let listener = self.listener.tap_io(|tcp| {
            let _ = tcp.set_nodelay(true);
        });
        axum::serve(listener, app)
            .with_graceful_shutdown(async move {
                shutdown.await;
                stop.cancel();
            })
            .await
            .map_err(WebError::Serve)
    }
}

fn router(state: AppState) -> Router {
    Router::new()
        .route("/", get(assets::index))
        .route("/assets/{file}", get(assets::file))
        .route("/api/info", get(api::info))
        .route(
            "/api/sessions",
            get(api::list_sessions).post(api::create_session),
        )
        .route(
            "/api/sessions/{id}",
            axum::routing::delete(api::delete_session),
        )
        .route("/api/tools", get(api::tools))
        .route("/api/sessions/{id}/app-spare", post(sandbox::spare))
        .route("/api/sessions/{id}/apps/{call}", post(sandbox::open))
        .route("/api/apps/{doc}/rpc", post(sandbox::relay))
        .route("/api/apps/{doc}", axum::routing::delete(sandbox::release))
        .route("/api/sessions/{id}/socket", get(socket::upgrade))
        .route(
            "/api/sessions/{id}/uploads",
            post(api::upload).layer(DefaultBodyLimit::max(MAX_UPLOAD_BYTES)),
        )
        .fallback(api::not_found)
        .layer(axum::middleware::from_fn_with_state(
            state.clone(),
            access::guard,
        ))
        .with_state(state)
}
