//! A stdio MCP plugin with one tool, `release_note` (see the crate README).

fn main() -> std::process::ExitCode {
    form_examples::serve(form_examples::Example::ReleaseNote)
}
