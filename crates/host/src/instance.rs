//! A random mark per running process: in the ids a host mints and on the rows its store writes,
//! so that replicas sharing one store never mint the same id and each knows its own writes.

/// Eight hex digits from the OS's randomness (the process id and the clock if it has none).
pub(crate) fn random_mark() -> String {
    let random = getrandom::u32().unwrap_or_else(|_| {
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |elapsed| elapsed.subsec_nanos());
        std::process::id() ^ nanos
    });
    format!("{random:08x}")
}
