//! `formwork completions SHELL`: the scripts complete formwork's own subcommands and flags, in
//! the shells that run them here (bash; zsh and fish only when installed).

#![allow(clippy::unwrap_used)]

mod common;

use std::process::Command;

use common::formwork;

/// What bash offers for `formwork <words>` with the cursor at the end of the last word.
fn bash_offers(words: &[&str]) -> Vec<String> {
    let script = formwork(&["completions", "bash"], None);
    script.assert_code(0);
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("formwork.bash");
    std::fs::write(&path, &script.stdout).unwrap();
    let line = std::iter::once("formwork")
        .chain(words.iter().copied())
        .collect::<Vec<_>>();
    let quoted: Vec<String> = line.iter().map(|word| format!("'{word}'")).collect();
    let program = format!(
        "source '{}'; COMP_WORDS=({}); COMP_CWORD={}; COMP_LINE='{}'; COMP_POINT=${{#COMP_LINE}}; \
         _formwork formwork '{}' '{}'; printf '%s\\n' \"${{COMPREPLY[@]}}\"",
        path.display(),
        quoted.join(" "),
        line.len() - 1,
        line.join(" "),
        line[line.len() - 1],
        line[line.len().saturating_sub(2)],
    );
    let output = Command::new("bash")
        .arg("-c")
        .arg(program)
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8(output.stdout)
        .unwrap()
        .lines()
        .map(str::to_owned)
        .collect()
}

#[test]
fn bash_completes_subcommands_and_their_flags() {
    assert_eq!(bash_offers(&["lo"]), ["login", "logout"]);
    assert_eq!(bash_offers(&["completions", "f"]), ["fish"]);
    let flags = bash_offers(&["login", "--"]);
    assert!(flags.contains(&"--data-dir".to_owned()), "{flags:?}");
    assert!(flags.contains(&"--config".to_owned()), "{flags:?}");
}

#[test]
fn every_shell_gets_a_script_and_an_unknown_one_is_refused() {
    for (shell, opening) in [
        ("bash", "_formwork() {"),
        ("zsh", "#compdef formwork"),
        ("fish", "complete -c formwork"),
        ("elvish", "set edit:completion:arg-completer[formwork]"),
        ("powershell", "Register-ArgumentCompleter"),
    ] {
        let output = formwork(&["completions", shell], None);
        output.assert_code(0);
        assert!(
            output.stdout.contains(opening),
            "{shell}: {}",
            output.stdout
        );
        assert!(
            output.stdout.contains("logout"),
            "{shell} knows the subcommands"
        );
    }
    let unknown = formwork(&["completions", "tcsh"], None);
    unknown.assert_code(2);
    unknown.assert_stderr_mentions("invalid value 'tcsh'");
}
