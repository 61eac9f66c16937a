//! A stdio MCP plugin with one tool, `pick_strategy` (see the crate README).

fn main() -> std::process::ExitCode {
    form_examples::serve(form_examples::Example::Strategy)
}
