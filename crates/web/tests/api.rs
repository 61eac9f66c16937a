//! The REST routes: sessions and the tool catalogue (each tool with the render block of its
//! inputSchema, or the reason there is none).

mod common;

use common::{Server, ts_server};
use serde_json::{Value, json};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sessions_are_listed_and_created() {
    let server = Server::start("", None).await;
    let listed = server.get("/api/sessions").await.json();
    assert_eq!(
        listed,
        json!({"sessions": [{"id": server.session, "title": null, "open": 0}]})
    );
    let created = server.post("/api/sessions").await;
    assert_eq!(created.status, 201);
    let id = created.json()["id"].as_str().expect("id").to_owned();
    let ids: Vec<Value> = server.get("/api/sessions").await.json()["sessions"]
        .as_array()
        .expect("list")
        .iter()
        .map(|session| session["id"].clone())
        .collect();
    assert_eq!(ids, [json!(server.session), json!(id)]);

    let info = server.get("/api/info").await.json();
    assert_eq!(info["model"], false);
    assert_eq!(info["model_name"], Value::Null);
    assert_eq!(info["runtime"], "formwork");
    assert_eq!(info["servers"], json!([]));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tools_of_every_server_with_their_argument_forms() {
    let config = format!(
        "{}\n[mcp_servers.broken]\ncommand = \"/nonexistent/formwork-test-plugin\"\nstartup_timeout_sec = 20\n",
        ts_server("ts", "approve")
    );
    let server = Server::start(&config, None).await;
    let catalogue = server.get("/api/tools").await.json();
    let servers = catalogue["servers"].as_array().expect("servers");
    let names: Vec<&str> = servers.iter().filter_map(|s| s["name"].as_str()).collect();
    assert_eq!(names, ["ts", "broken"]);

    let ts = &servers[0];
    assert_eq!(ts["error"], Value::Null);
    let tools = ts["tools"].as_array().expect("tools");
    let ask_form = tools
        .iter()
        .find(|tool| tool["name"] == "ask_form")
        .expect("ask_form");
    assert_eq!(ask_form["description"], "Ask for the 10-field form");
    assert_eq!(ask_form["render"]["type"], "request_user_input");
    assert_eq!(ask_form["render"]["questions"], json!([]));
    assert_eq!(ask_form["unsupported"], Value::Null);

    assert!(servers[1]["error"].is_string(), "{}", servers[1]);
    assert_eq!(servers[1]["tools"], json!([]));

    // Cached until a refresh.
    assert_eq!(server.get("/api/tools").await.json(), catalogue);
    assert_eq!(
        server.get("/api/tools?refresh=true").await.json()["servers"][0]["name"],
        "ts"
    );
}
