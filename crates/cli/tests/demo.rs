//! `formwork demo` (docs/cli.md): the bundled demo plugin, with no terminal and no answers, accepts defaults.

mod common;

use common::formwork;

#[test]
fn demo_without_a_terminal_accepts_defaults() {
    let output = formwork(&["demo"], None);
    output.assert_code(0);
    let result = output.json();
    assert!(
        result["content"].is_array(),
        "no CallToolResult on stdout: {output}"
    );
    assert_ne!(result["isError"], true, "{output}");
}
