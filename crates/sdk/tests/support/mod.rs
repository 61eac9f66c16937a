//! What the peer test binaries share: the test plugin and a small harness (where the peers are is
//! formwork-testkit's, re-exported here).

pub mod plugin;

pub use formwork_testkit::{peers_dir, repo_root};

pub type Case = (&'static str, fn());

/// The `main` of a peer test binary (`harness = false`: the binary must be able to serve stdio
/// without the test runner writing to stdout). With `FORMWORK_SDK_PLUGIN` set it is the test
/// plugin; otherwise it runs the cases, two at a time, each mostly a peer process starting up.
/// Like libtest, positional arguments filter by name and flags (e.g. `--nocapture`) are ignored.
pub fn main(cases: &[Case]) {
    if std::env::var_os("FORMWORK_SDK_PLUGIN").is_some() {
        plugin::serve();
        return;
    }
    let filters: Vec<String> = std::env::args()
        .skip(1)
        .filter(|arg| !arg.starts_with('-'))
        .collect();
    let selected: Vec<&Case> = cases
        .iter()
        .filter(|(name, _)| {
            filters.is_empty() || filters.iter().any(|filter| name.contains(filter.as_str()))
        })
        .collect();
    println!("running {} tests", selected.len());
    let next = std::sync::atomic::AtomicUsize::new(0);
    let failed = std::sync::Mutex::new(Vec::new());
    std::thread::scope(|scope| {
        for _ in 0..2 {
            scope.spawn(|| {
                while let Some((name, case)) = selected
                    .get(next.fetch_add(1, std::sync::atomic::Ordering::Relaxed))
                    .copied()
                {
                    let passed = std::panic::catch_unwind(case).is_ok();
                    println!("test {name} ... {}", if passed { "ok" } else { "FAILED" });
                    if !passed {
                        failed.lock().unwrap_or_else(|e| e.into_inner()).push(*name);
                    }
                }
            });
        }
    });
    let failed = failed.into_inner().unwrap_or_else(|e| e.into_inner());
    if !failed.is_empty() {
        println!("failed: {}", failed.join(", "));
        std::process::exit(1);
    }
    println!("test result: ok");
}
