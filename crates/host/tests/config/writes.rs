//! How files are written.

use super::*;

fn names_in(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .expect("read dir")
        .map(|entry| {
            entry
                .expect("entry")
                .file_name()
                .to_string_lossy()
                .into_owned()
        })
        .collect();
    names.sort();
    names
}

#[test]
fn a_file_formwork_creates_is_private_even_with_secrets_in_it() {
    let (_dir, root) = canonical_tempdir();
    let path = root.join("new/dir/formwork.toml");
    let report = config::import(&fixture("vscode_mcp.json"), &path).expect("import");
    assert!(report.written);
    assert!(read(&path).contains("http_headers = { Authorization = "));
    assert_eq!(mode(&path), 0o600);
    assert_eq!(mode(path.parent().expect("dir")), 0o700);
    assert_eq!(mode(&root.join("new")), 0o700);
    assert_eq!(names_in(path.parent().expect("dir")), ["formwork.toml"]);
}

#[test]
fn a_rewrite_keeps_the_mode_and_leaves_no_temporary_file() {
    let (_dir, root) = canonical_tempdir();
    let path = root.join("formwork.toml");
    std::fs::write(&path, "[mcp_servers.shop]\ncommand = \"x\"\n").expect("write");
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o640)).expect("chmod");
    config::remember_always_allow(&path, "shop", "refund").expect("remember");
    assert_eq!(mode(&path), 0o640);
    assert_eq!(
        read(&path),
        "[mcp_servers.shop]\ncommand = \"x\"\n\n[mcp_servers.shop.tools.refund]\napproval_mode = \"approve\"\n"
    );
    assert_eq!(names_in(&root), ["formwork.toml"]);
}

#[test]
fn a_symlinked_config_is_written_through_and_stays_a_symlink() {
    let (_dir, root) = canonical_tempdir();
    let real = root.join("dotfiles/formwork.toml");
    std::fs::create_dir_all(real.parent().expect("dir")).expect("dir");
    std::fs::write(&real, "approval_policy = \"never\" # kept in dotfiles\n").expect("write");
    std::fs::set_permissions(&real, std::fs::Permissions::from_mode(0o644)).expect("chmod");
    let link = root.join("formwork.toml");
    std::os::unix::fs::symlink("dotfiles/formwork.toml", &link).expect("symlink");

    config::sync(&link, Path::new(EXE)).expect("sync");
    let metadata = std::fs::symlink_metadata(&link).expect("link");
    assert!(metadata.file_type().is_symlink());
    assert_eq!(
        std::fs::read_link(&link).expect("read link"),
        Path::new("dotfiles/formwork.toml")
    );
    assert_eq!(
        read(&real),
        "approval_policy = \"never\" # kept in dotfiles\n\n[mcp_servers.demo]\ncommand = \"/opt/formwork/bin/formwork\"\nargs = [\"demo-plugin\"]\ndefault_tools_approval_mode = \"approve\"\n"
    );
    assert_eq!(mode(&real), 0o644);
    // The temporary file was made beside the real file, and is gone.
    assert_eq!(names_in(real.parent().expect("dir")), ["formwork.toml"]);
}

#[test]
fn a_taken_temporary_name_is_neither_followed_nor_replaced() {
    let (_dir, root) = canonical_tempdir();
    let project = root.join("proj");
    std::fs::create_dir_all(&project).expect("dir");
    let path = project.join("formwork.toml");
    std::fs::write(&path, "").expect("write");
    let victim = root.join("victim");
    std::fs::write(&victim, "precious\n").expect("write victim");
    // The name the first attempt would use, taken by a link to somewhere else.
    let squatter = project.join(format!(".formwork.toml.{}.tmp", std::process::id()));
    std::os::unix::fs::symlink(&victim, &squatter).expect("symlink");

    config::sync(&path, Path::new(EXE)).expect("sync");
    assert_eq!(read(&victim), "precious\n");
    assert!(
        std::fs::symlink_metadata(&squatter)
            .expect("still there")
            .file_type()
            .is_symlink()
    );
    assert!(read(&path).starts_with("[mcp_servers.demo]\n"));
    let mut expected = vec![
        "formwork.toml".to_owned(),
        format!(".formwork.toml.{}.tmp", std::process::id()),
    ];
    expected.sort();
    assert_eq!(names_in(&project), expected);
}

#[test]
fn the_forms_table_is_checked() {
    check_error(
        "[forms]\nmax_pending = 0\n",
        "formwork.toml:2:1: forms.max_pending: expected a whole number from 1 to 1000",
    );
    check_error(
        "[forms]\nmax_pending = 1001\n",
        "formwork.toml:2:1: forms.max_pending: expected a whole number from 1 to 1000",
    );
    let wrong = Config::from_toml("[forms]\nsensitive_fields = \"maybe\"\n", None)
        .expect_err("an unknown choice")
        .to_string();
    assert!(wrong.contains("forms.sensitive_fields"), "{wrong}");
    let typo = Config::from_toml("[forms]\nmax_pendng = 3\n", None)
        .expect_err("an unknown key")
        .to_string();
    assert!(typo.contains("max_pendng"), "{typo}");
    let config =
        Config::from_toml("[forms]\nsensitive_fields = \"decline\"\n", None).expect("a good file");
    assert_eq!(
        config.forms,
        formwork_host::config::FormsConfig {
            max_pending: 16,
            sensitive_fields: formwork_host::config::SensitiveFields::Decline,
        }
    );
}
