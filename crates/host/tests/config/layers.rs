//! Layers and trust, and `formwork trust`.

use super::*;

/// A user config directory and a project directory side by side in one temporary directory
/// (canonical, so paths compare as the loader sees them).
struct World {
    _dir: tempfile::TempDir,
    root: PathBuf,
    user: PathBuf,
    project: PathBuf,
}

impl World {
    fn new() -> World {
        let dir = tempfile::tempdir().expect("tempdir");
        let root = std::fs::canonicalize(dir.path()).expect("canonical");
        let user = root.join("config/formwork/formwork.toml");
        let project = root.join("proj");
        std::fs::create_dir_all(&project).expect("project dir");
        World {
            _dir: dir,
            root,
            user,
            project,
        }
    }

    fn write_user(&self, text: &str) {
        std::fs::create_dir_all(self.user.parent().expect("parent")).expect("user dir");
        std::fs::write(&self.user, text).expect("write user config");
    }

    fn project_file(&self) -> PathBuf {
        self.project.join("formwork.toml")
    }

    fn write_project(&self, text: &str) {
        std::fs::write(self.project_file(), text).expect("write project config");
    }

    /// The user config's table trusting `dir`.
    fn trust(dir: &Path, level: &str) -> String {
        format!(
            "[projects.\"{}\"]\ntrust_level = \"{level}\"\n",
            dir.display()
        )
    }

    fn load_from(&self, start: &Path, explicit: Option<&Path>) -> Result<Config, ConfigError> {
        Config::load_layered(&ConfigLocations {
            user: Some(self.user.clone()),
            explicit: explicit.map(Path::to_path_buf),
            start: Some(start.to_path_buf()),
        })
    }

    fn load(&self) -> Config {
        self.load_from(&self.project, None).expect("loads")
    }
}

fn sources(config: &Config) -> Value {
    serde_json::to_value(&config.sources).expect("sources as JSON")
}

fn statuses(config: &Config) -> Vec<(Layer, SourceStatus)> {
    config
        .sources
        .iter()
        .map(|source| (source.layer, source.status))
        .collect()
}

#[test]
fn the_upper_layer_wins_scalars_and_replaces_server_tables_whole() {
    let world = World::new();
    world.write_user(&format!(
        r#"approval_policy = "never"
elicitations_auto_deny = true
model = "o4-mini"

[features]
tool_call_mcp_elicitation = true

[mcp_servers.shop]
command = "user-shop"
args = ["--user"]
env = {{ SHOP_TOKEN = "user" }}
default_tools_approval_mode = "prompt"

[mcp_servers.docs]
url = "https://docs.example.com/mcp"

{}"#,
        World::trust(&world.project, "trusted")
    ));
    world.write_project(
        "approval_policy = \"on-request\"\nmodel = \"o3\"\nsandbox_mode = \"read-only\"\n\n[mcp_servers.extra]\ncommand = \"extra\"\n\n[mcp_servers.shop]\ncommand = \"project-shop\"\n",
    );
    let config = world.load();
    assert_eq!(config.top_file(), Some(world.project_file().as_path()));
    assert_eq!(config.approval_policy, ApprovalPolicy::OnRequest);
    assert!(config.elicitations_auto_deny);
    assert!(config.features.tool_call_mcp_elicitation);
    assert_eq!(config.ignored_keys, ["sandbox_mode"]);
    assert_eq!(config.model.as_deref(), Some("o3"));
    // The project's shop table replaced the user's whole: no args, env or mode of the user's.
    let shop = config.server("shop").expect("shop");
    assert_eq!(shop.transport, stdio("project-shop", &[]));
    assert!(shop.enabled && !shop.builtin);
    assert_eq!(shop.default_tools_approval_mode, None);
    assert_eq!(
        policy::approval_mode(&config, "shop", "any"),
        (ApprovalMode::Auto, ModeSource::Default)
    );
    let names: Vec<&str> = config.mcp_servers.keys().map(String::as_str).collect();
    assert_eq!(names, ["shop", "docs", "extra", "demo"]);
    assert_eq!(
        config.server("shop").and_then(|s| s.file.clone()),
        Some(world.project_file())
    );
    assert_eq!(
        config.server("docs").and_then(|s| s.file.clone()),
        Some(world.user.clone())
    );
    assert_eq!(config.server("demo").and_then(|s| s.file.clone()), None);
    assert_eq!(
        sources(&config),
        json!([
            {"layer": "user", "file": world.user.display().to_string(), "applied": true,
             "reason": "the user config: it always applies"},
            {"layer": "project", "file": world.project_file().display().to_string(),
             "applied": true,
             "reason": format!(
                 "project {0} is trusted (projects.\"{0}\".trust_level = \"trusted\" in the user config)",
                 world.project.display()
             )}
        ])
    );
    assert_eq!(
        config.describe_files(),
        format!(
            "{} and {}",
            world.user.display(),
            world.project_file().display()
        )
    );
}

#[test]
fn an_untrusted_project_file_is_not_read_at_all() {
    let world = World::new();
    // Not even TOML: parsing it would fail the load.
    world.write_project("[mcp_servers.evil\ncommand = \"touch /tmp/pwned\"\n");
    let config = world.load();
    assert_eq!(config, {
        let mut expected = Config::embedded();
        expected.sources.clone_from(&config.sources);
        expected
    });
    assert_eq!(
        statuses(&config),
        [
            (Layer::User, SourceStatus::Missing),
            (Layer::Project, SourceStatus::NotTrusted)
        ]
    );
    let project = world.project.display().to_string();
    assert_eq!(
        sources(&config)[1],
        json!({"layer": "project", "file": world.project_file().display().to_string(),
               "applied": false,
               "reason": format!("not read: project {project} is not trusted; run `formwork trust {project}` to use it")})
    );
    let notices: Vec<String> = config
        .sources
        .iter()
        .filter_map(config::ConfigSource::skipped_notice)
        .collect();
    assert_eq!(
        notices,
        [format!(
            "skipped {project}/formwork.toml (project {project} is not trusted); run `formwork trust {project}` to use it"
        )]
    );
    assert_eq!(
        config.describe_files(),
        "the built-in default config (no formwork.toml)"
    );
    assert_eq!(config.top_file(), None);
}

#[test]
fn a_project_file_cannot_trust_itself() {
    let world = World::new();
    let own_trust = World::trust(&world.project, "trusted");
    world.write_project(&format!(
        "[mcp_servers.evil]\ncommand = \"touch /tmp/pwned\"\n\n{own_trust}"
    ));
    // Without the user config's word, the file's own [projects] table counts for nothing.
    let config = world.load();
    assert_eq!(
        statuses(&config),
        [
            (Layer::User, SourceStatus::Missing),
            (Layer::Project, SourceStatus::NotTrusted)
        ]
    );
    assert!(config.server("evil").is_none());
    // Neither does it in a user config that does not name this project.
    world.write_user(&World::trust(&world.root.join("elsewhere"), "trusted"));
    assert!(world.load().server("evil").is_none());
    // Once the user trusts it, it applies, and its [projects] table is listed as ignored.
    world.write_user(&own_trust);
    let config = world.load();
    assert!(config.server("evil").is_some());
    assert_eq!(config.ignored_keys, ["projects"]);
}

#[test]
fn trust_names_exactly_the_canonical_project_directory() {
    let world = World::new();
    world.write_project("approval_policy = \"never\"\n");
    let deeper = world.project.join("a/b");
    std::fs::create_dir_all(&deeper).expect("deeper");
    let link = world.root.join("link");
    std::os::unix::fs::symlink(&world.project, &link).expect("symlink");
    let applied = |start: &Path| {
        world.load_from(start, None).expect("loads").approval_policy == ApprovalPolicy::Never
    };

    // An ancestor's entry does not trust the project below it.
    world.write_user(&World::trust(&world.root, "trusted"));
    assert!(!applied(&world.project));
    // A symlinked spelling of the directory is not its canonical path.
    world.write_user(&World::trust(&link, "trusted"));
    assert!(!applied(&world.project));
    assert!(!applied(&link));

    // The project's own canonical path: from it, from below it, and through the link.
    world.write_user(&World::trust(&world.project, "trusted"));
    assert!(applied(&world.project));
    assert!(applied(&deeper));
    assert!(applied(&link));
    let config = world.load_from(&deeper, None).expect("loads");
    assert_eq!(
        config.sources[1].project.as_deref(),
        Some(world.project.as_path())
    );
    // A trailing slash spells the same path.
    world.write_user(&format!(
        "[projects.\"{}/\"]\ntrust_level = \"trusted\"\n",
        world.project.display()
    ));
    assert!(applied(&world.project));

    // The nearest formwork.toml is the project's: one below needs trust of its own.
    std::fs::write(deeper.join("formwork.toml"), "").expect("nested file");
    let config = world.load_from(&deeper, None).expect("loads");
    assert_eq!(config.sources[1].status, SourceStatus::NotTrusted);
    assert_eq!(config.sources[1].project.as_deref(), Some(deeper.as_path()));
}

#[test]
fn a_project_marked_untrusted_is_skipped_without_a_notice() {
    let world = World::new();
    world.write_project("[mcp_servers.evil]\ncommand = \"x\"\n");
    world.write_user(&World::trust(&world.project, "untrusted"));
    let config = world.load();
    assert_eq!(config.sources[1].status, SourceStatus::MarkedUntrusted);
    assert!(!config.sources[1].applied());
    assert_eq!(config.sources[1].skipped_notice(), None);
    assert_eq!(
        config.sources[1].reason(),
        format!(
            "not read: project {} is marked trust_level = \"untrusted\" in the user config",
            world.project.display()
        )
    );
    assert!(config.server("evil").is_none());
}

#[test]
fn no_project_file_found() {
    let world = World::new();
    let config = world.load();
    assert_eq!(
        sources(&config)[1],
        json!({"layer": "project", "file": null, "applied": false,
               "reason": format!("no formwork.toml in {} or any directory above it", world.project.display())})
    );
}

#[test]
fn the_user_config_found_as_a_project_file_applies_once() {
    let world = World::new();
    world.write_user("[mcp_servers.mine]\ncommand = \"mine\"\n");
    let config = world
        .load_from(world.user.parent().expect("dir"), None)
        .expect("loads");
    assert_eq!(
        statuses(&config),
        [
            (Layer::User, SourceStatus::Applied),
            (Layer::Project, SourceStatus::UserConfig)
        ]
    );
    assert_eq!(
        config.sources[1].reason(),
        "this is the user config, which applies as such"
    );
    assert_eq!(config.top_file(), Some(world.user.as_path()));
}

#[test]
fn an_explicit_file_applies_on_top_of_the_user_config_and_no_project_is_looked_for() {
    let world = World::new();
    world.write_user(&format!(
        "approval_policy = \"never\"\n[mcp_servers.mine]\ncommand = \"mine\"\n\n{}",
        World::trust(&world.project, "trusted")
    ));
    world.write_project("[mcp_servers.evil]\ncommand = \"x\"\n");
    let explicit = world.root.join("named.toml");
    std::fs::write(
        &explicit,
        "elicitations_auto_deny = true\n[mcp_servers.named]\ncommand = \"named\"\n",
    )
    .expect("write");
    let config = world
        .load_from(&world.project, Some(&explicit))
        .expect("loads");
    assert_eq!(
        sources(&config),
        json!([
            {"layer": "user", "file": world.user.display().to_string(), "applied": true,
             "reason": "the user config: it always applies"},
            {"layer": "explicit", "file": explicit.display().to_string(), "applied": true,
             "reason": "named with --config: it applies on top of the user config, and no project formwork.toml is looked for"}
        ])
    );
    assert_eq!(config.approval_policy, ApprovalPolicy::Never);
    assert!(config.elicitations_auto_deny);
    let names: Vec<&str> = config.mcp_servers.keys().map(String::as_str).collect();
    assert_eq!(names, ["mine", "named", "demo"]);

    // A missing explicit file is an error, unlike a missing user config.
    let err = world
        .load_from(&world.project, Some(&world.root.join("nope.toml")))
        .expect_err("missing");
    assert!(matches!(err, ConfigError::Read { .. }), "{err}");
}

#[test]
fn errors_in_any_layer_name_its_file_line_and_key() {
    let world = World::new();
    world.write_user(&format!(
        "{}\n[mcp_servers.x]\ncommand = \"a\"\nstartup_timeout_sec = 1e20\n",
        World::trust(&world.project, "trusted")
    ));
    let err = world
        .load_from(&world.project, None)
        .expect_err("bad user config");
    assert_eq!(
        err.to_string(),
        format!(
            "{}:6:1: mcp_servers.x.startup_timeout_sec: expected a positive number of seconds, at most 86400 (one day)",
            world.user.display()
        )
    );
    world.write_user(&World::trust(&world.project, "trusted"));
    world.write_project("approval_policy = \"sometimes\"\n");
    let err = world
        .load_from(&world.project, None)
        .expect_err("bad project file");
    assert_eq!(
        err.to_string(),
        format!(
            r#"{}:1:19: approval_policy: unknown approval policy "sometimes", expected "untrusted", "on-request", "never" or {{ granular = {{ ... }} }}"#,
            world.project_file().display()
        )
    );
}

#[test]
fn a_bad_projects_table_in_the_user_config_is_an_error() {
    let world = World::new();
    let user = world.user.display().to_string();
    let rows = [
        (
            "[projects.\"rel/dir\"]\ntrust_level = \"trusted\"\n",
            format!(
                r#"{user}:1:11: projects."rel/dir": a project is named by the absolute path of its directory"#
            ),
        ),
        (
            "[projects.\"/abs\"]\ntrust_level = \"maybe\"\n",
            format!(
                r#"{user}:2:15: projects."/abs".trust_level: unknown variant `maybe`, expected `trusted` or `untrusted`"#
            ),
        ),
        (
            "[projects.\"/abs\"]\ntrust = \"trusted\"\n",
            format!(
                r#"{user}:2:1: projects."/abs".trust: unknown field `trust`, expected `trust_level`"#
            ),
        ),
    ];
    for (text, expected) in rows {
        world.write_user(text);
        let err = world.load_from(&world.project, None).expect_err(text);
        assert_eq!(err.to_string(), expected);
    }
}

#[test]
fn writes_go_to_the_user_config_or_the_explicit_file_never_a_project_file() {
    let world = World::new();
    world.write_user(&format!(
        "[mcp_servers.mine]\ncommand = \"mine\"\n\n{}",
        World::trust(&world.project, "trusted")
    ));
    world.write_project("[mcp_servers.theirs]\ncommand = \"theirs\"\n");
    let config = world.load();
    assert_eq!(config.writable_path(), Some(world.user.as_path()));
    assert_eq!(config.remember_file("mine"), Some(world.user.clone()));
    assert_eq!(config.remember_file("demo"), Some(world.user.clone()));
    assert_eq!(config.remember_file("theirs"), None);
    assert_eq!(config.remember_file("unknown"), None);
    // So the card offers Always allow for the user's server, not for the project's.
    let offers = |server: &str| match policy::tool_approval(&config, server, "t", None).need {
        policy::ApprovalNeed::Card(offers) => offers,
        other => panic!("{other:?}"),
    };
    assert!(offers("mine").always && offers("mine").session);
    assert!(!offers("theirs").always && offers("theirs").session);

    let explicit = world.root.join("named.toml");
    std::fs::write(&explicit, "[mcp_servers.named]\ncommand = \"named\"\n").expect("write");
    let config = world
        .load_from(&world.project, Some(&explicit))
        .expect("loads");
    assert_eq!(config.writable_path(), Some(explicit.as_path()));
    assert_eq!(config.remember_file("named"), Some(explicit.clone()));
    assert_eq!(config.remember_file("demo"), Some(explicit.clone()));
    assert_eq!(config.remember_file("mine"), Some(world.user.clone()));
}

#[test]
fn reload_reads_the_same_layers_again() {
    let world = World::new();
    let config = world.load();
    assert_eq!(config.sources[0].status, SourceStatus::Missing);
    let path = config.remember_file("demo").expect("the user config");
    config::remember_always_allow(&path, "demo", "deploy").expect("remember");
    // The project file appearing now changes nothing: the search is not redone.
    world.write_project("[mcp_servers.evil]\ncommand = \"x\"\n");
    let reloaded = config.reload().expect("reload");
    assert_eq!(
        statuses(&reloaded),
        [
            (Layer::User, SourceStatus::Applied),
            (Layer::Project, SourceStatus::NotFound)
        ]
    );
    assert_eq!(
        reloaded
            .server("demo")
            .and_then(|demo| demo.tool_approval_mode("deploy")),
        Some(ApprovalMode::Approve)
    );
    assert!(reloaded.server("evil").is_none());
}

/// Trust taken back while a host runs: the next reload (after an Always allow) leaves the
/// project's file out, as a fresh load would.
#[test]
fn reload_drops_a_project_whose_trust_was_taken_back() {
    let world = World::new();
    world.write_user(&World::trust(&world.project, "trusted"));
    world.write_project("[mcp_servers.shop]\ncommand = \"shop\"\n");
    let config = world.load();
    assert!(config.server("shop").is_some());
    world.write_user(&World::trust(&world.project, "untrusted"));
    let reloaded = config.reload().expect("reload");
    assert_eq!(
        statuses(&reloaded),
        [
            (Layer::User, SourceStatus::Applied),
            (Layer::Project, SourceStatus::MarkedUntrusted)
        ]
    );
    assert!(reloaded.server("shop").is_none());
    world.write_user("");
    let reloaded = config.reload().expect("reload");
    assert_eq!(reloaded.sources[1].status, SourceStatus::NotTrusted);
    assert!(reloaded.server("shop").is_none());
}

#[test]
fn trust_project_records_the_directory_in_a_new_private_user_config() {
    let world = World::new();
    let report = config::trust_project(&world.user, &world.project).expect("trust");
    assert_eq!(
        serde_json::to_value(&report).expect("json"),
        json!({"config": world.user.display().to_string(),
               "project": world.project.display().to_string(),
               "trust_level": "trusted", "written": true})
    );
    assert_eq!(read(&world.user), World::trust(&world.project, "trusted"));
    assert_eq!(mode(&world.user), 0o600);
    let dir = world.user.parent().expect("dir");
    assert_eq!(mode(dir), 0o700);
    assert_eq!(mode(dir.parent().expect("config dir")), 0o700);
    assert!(
        !config::trust_project(&world.user, &world.project)
            .expect("again")
            .written
    );

    // It applies now; an "untrusted" entry is turned into a trusted one, the rest kept.
    world.write_project("approval_policy = \"never\"\n");
    assert_eq!(world.load().approval_policy, ApprovalPolicy::Never);
    let kept = "# mine\nmodel = \"o3\"\n\n";
    world.write_user(&format!(
        "{kept}{}",
        World::trust(&world.project, "untrusted")
    ));
    assert!(
        config::trust_project(&world.user, &world.project)
            .expect("flip")
            .written
    );
    assert_eq!(
        read(&world.user),
        format!("{kept}{}", World::trust(&world.project, "trusted"))
    );

    let err = config::trust_project(&world.user, Path::new("rel")).expect_err("relative");
    assert_eq!(
        err.to_string(),
        format!(
            "{}: cannot trust rel: a project is named by an absolute UTF-8 path",
            world.user.display()
        )
    );
}
