//! The page's files, embedded in the binary so that `cargo build` alone makes a working
//! workbench. They are plain JavaScript modules and CSS: there is no build step.

use axum::extract::Path;
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};

/// One embedded file.
struct Asset {
    name: &'static str,
    mime: &'static str,
    body: &'static str,
}

const JS: &str = "text/javascript; charset=utf-8";

/// Every file under `/assets/`.
const ASSETS: &[Asset] = &[
    Asset {
        name: "style.css",
        mime: "text/css; charset=utf-8",
        body: include_str!("../assets/style.css"),
    },
    Asset {
        name: "favicon.svg",
        mime: "image/svg+xml",
        body: include_str!("../assets/favicon.svg"),
    },
    Asset {
        name: "app.js",
        mime: JS,
        body: include_str!("../assets/app.js"),
    },
    Asset {
        name: "dom.js",
        mime: JS,
        body: include_str!("../assets/dom.js"),
    },
    Asset {
        name: "net.js",
        mime: JS,
        body: include_str!("../assets/net.js"),
    },
    Asset {
        name: "fields.js",
        mime: JS,
        body: include_str!("../assets/fields.js"),
    },
    Asset {
        name: "wire.js",
        mime: JS,
        body: include_str!("../assets/wire.js"),
    },
    Asset {
        name: "cards.js",
        mime: JS,
        body: include_str!("../assets/cards.js"),
    },
    Asset {
        name: "transcript.js",
        mime: JS,
        body: include_str!("../assets/transcript.js"),
    },
    Asset {
        name: "apps.js",
        mime: JS,
        body: include_str!("../assets/apps.js"),
    },
    Asset {
        name: "app-view.js",
        mime: JS,
        body: include_str!("../assets/app-view.js"),
    },
    Asset {
        name: "app-spare.js",
        mime: JS,
        body: include_str!("../assets/app-spare.js"),
    },
    Asset {
        name: "app-frames.js",
        mime: JS,
        body: include_str!("../assets/app-frames.js"),
    },
    Asset {
        name: "app-context.js",
        mime: JS,
        body: include_str!("../assets/app-context.js"),
    },
    Asset {
        name: "palette.js",
        mime: JS,
        body: include_str!("../assets/palette.js"),
    },
];

const INDEX: &str = include_str!("../assets/index.html");

/// `GET /`: the page.
pub(crate) async fn index() -> Response {
    ([(header::CONTENT_TYPE, "text/html; charset=utf-8")], INDEX).into_response()
}

/// `GET /assets/{file}`.
pub(crate) async fn file(Path(name): Path<String>) -> Response {
    match ASSETS.iter().find(|asset| asset.name == name) {
        Some(asset) => ([(header::CONTENT_TYPE, asset.mime)], asset.body).into_response(),
        None => (StatusCode::NOT_FOUND, "formwork: no such file\n").into_response(),
    }
}
