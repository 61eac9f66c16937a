//! The app documents a session has read, kept for its next app of the same document: bounded in
//! count per session and in bytes across the host, the least recently used going first.

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use crate::apps::AppDocument;

/// The most documents one session keeps.
pub(super) const MAX_CACHED_DOCUMENTS: usize = 16;
/// The most bytes of documents all sessions of a host keep together.
pub(super) const MAX_CACHED_DOCUMENT_BYTES: usize = 64 * 1024 * 1024;

/// A document by server and URI.
pub(super) type DocumentKey = (String, String);

/// The bytes the documents of all of a host's sessions hold, against a limit.
pub(super) struct CacheBudget {
    used: AtomicUsize,
    limit: usize,
}

impl CacheBudget {
    pub(super) fn new(limit: usize) -> CacheBudget {
        CacheBudget {
            used: AtomicUsize::new(0),
            limit,
        }
    }

    fn take(&self, bytes: usize) -> bool {
        self.used
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |used| {
                (used + bytes <= self.limit).then_some(used + bytes)
            })
            .is_ok()
    }

    fn give_back(&self, bytes: usize) {
        let _ = self
            .used
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |used| {
                Some(used.saturating_sub(bytes))
            });
    }
}

/// One session's documents, each with what `T` says about where it was read.
pub(super) struct DocumentCache<T> {
    entries: HashMap<DocumentKey, Entry<T>>,
    /// Counts uses, to find the least recently used entry.
    clock: u64,
    max_entries: usize,
}

struct Entry<T> {
    read_on: T,
    document: Arc<AppDocument>,
    bytes: usize,
    used: u64,
}

impl<T> Default for DocumentCache<T> {
    fn default() -> Self {
        DocumentCache::with_limit(MAX_CACHED_DOCUMENTS)
    }
}

impl<T> DocumentCache<T> {
    pub(super) fn with_limit(max_entries: usize) -> Self {
        DocumentCache {
            entries: HashMap::new(),
            clock: 0,
            max_entries,
        }
    }

    /// The document kept under `key`, when `fresh` says where it was read still serves it.
    pub(super) fn get(
        &mut self,
        key: &DocumentKey,
        fresh: impl FnOnce(&T) -> bool,
    ) -> Option<Arc<AppDocument>> {
        self.clock += 1;
        let entry = self
            .entries
            .get_mut(key)
            .filter(|entry| fresh(&entry.read_on))?;
        entry.used = self.clock;
        Some(Arc::clone(&entry.document))
    }

    /// Whether a document is kept under `key` (fresh or not).
    #[cfg(test)]
    fn contains(&self, key: &DocumentKey) -> bool {
        self.entries.contains_key(key)
    }

    /// Keeps `document` under `key`, making room: the least recently used of this session go
    /// first, past the count or the host's bytes. A document that does not fit even then is
    /// not kept (it is read again next time). `false` when it was not kept.
    pub(super) fn insert(
        &mut self,
        key: DocumentKey,
        read_on: T,
        document: Arc<AppDocument>,
        budget: &CacheBudget,
    ) -> bool {
        if let Some(old) = self.entries.remove(&key) {
            budget.give_back(old.bytes);
        }
        let bytes = document.html.len();
        while self.entries.len() >= self.max_entries && self.evict_oldest(budget) {}
        while !budget.take(bytes) {
            if !self.evict_oldest(budget) {
                return false;
            }
        }
        self.clock += 1;
        let entry = Entry {
            read_on,
            document,
            bytes,
            used: self.clock,
        };
        self.entries.insert(key, entry);
        true
    }

    fn evict_oldest(&mut self, budget: &CacheBudget) -> bool {
        let Some(oldest) = self
            .entries
            .iter()
            .min_by_key(|(_, entry)| entry.used)
            .map(|(key, _)| key.clone())
        else {
            return false;
        };
        if let Some(entry) = self.entries.remove(&oldest) {
            budget.give_back(entry.bytes);
        }
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::apps::{PluginPlace, sandbox_policy};

    fn document(bytes: usize) -> Arc<AppDocument> {
        Arc::new(AppDocument {
            uri: "ui://t/app.html".to_owned(),
            mime_type: "text/html;profile=mcp-app".to_owned(),
            html: "x".repeat(bytes),
            skybridge: false,
            policy: sandbox_policy(None, None, PluginPlace::Local),
            prefers_border: None,
        })
    }

    fn key(uri: &str) -> DocumentKey {
        ("s".to_owned(), uri.to_owned())
    }

    #[test]
    fn a_session_keeps_its_most_recently_used_documents() {
        let budget = CacheBudget::new(1000);
        let mut cache = DocumentCache::with_limit(2);
        assert!(cache.insert(key("a"), (), document(10), &budget));
        assert!(cache.insert(key("b"), (), document(10), &budget));
        assert!(cache.get(&key("a"), |_| true).is_some());
        assert!(cache.insert(key("c"), (), document(10), &budget));
        assert!(cache.contains(&key("a")) && cache.contains(&key("c")));
        assert!(!cache.contains(&key("b")), "b was the least recently used");
        assert_eq!(budget.used.load(Ordering::Acquire), 20);
        // A stale entry is not served, and is replaced in place.
        assert!(cache.get(&key("a"), |_| false).is_none());
        assert!(cache.insert(key("a"), (), document(30), &budget));
        assert_eq!(budget.used.load(Ordering::Acquire), 40);
    }

    #[test]
    fn the_hosts_bytes_bound_every_session() {
        let budget = CacheBudget::new(100);
        let mut first = DocumentCache::with_limit(16);
        let mut second = DocumentCache::with_limit(16);
        assert!(first.insert(key("a"), (), document(60), &budget));
        // The second session makes room among its own documents only; there are none.
        assert!(!second.insert(key("b"), (), document(60), &budget));
        assert!(!second.contains(&key("b")));
        assert!(second.insert(key("c"), (), document(40), &budget));
        // The first session's next document pushes its own older one out.
        assert!(first.insert(key("d"), (), document(50), &budget));
        assert!(!first.contains(&key("a")) && first.contains(&key("d")));
        assert_eq!(budget.used.load(Ordering::Acquire), 90);
        // One larger than the whole budget is never kept.
        assert!(!first.insert(key("e"), (), document(101), &budget));
        assert_eq!(budget.used.load(Ordering::Acquire), 40);
    }
}
