//! A stdio MCP plugin with one tool, `inspect_part` (see the crate README).

fn main() -> std::process::ExitCode {
    form_examples::serve(form_examples::Example::CadPart)
}
