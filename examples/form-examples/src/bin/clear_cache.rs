//! A stdio MCP plugin with one tool, `clear_cache` (see the crate README).

fn main() -> std::process::ExitCode {
    form_examples::serve(form_examples::Example::Cache)
}
