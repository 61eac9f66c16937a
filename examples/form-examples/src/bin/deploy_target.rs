//! A stdio MCP plugin with one tool, `choose_target` (see the crate README).

fn main() -> std::process::ExitCode {
    form_examples::serve(form_examples::Example::Target)
}
