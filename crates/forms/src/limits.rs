//! Documented size limits. Anything larger is declined, so hostile input costs bounded time and memory.
//!
//! The limits are generous for real forms (server-everything's 13 fields, SDK forms with a handful of
//! options) and small enough that a request can never make the host hang or run out of memory.

/// Most properties one form may have.
pub const MAX_PROPERTIES: usize = 100;

/// Most options (`enum`, `oneOf`, `items.anyOf`, `x-openai-suggestions` entries) one field may have.
pub const MAX_OPTIONS: usize = 1000;

/// Longest text, in bytes, of a `message`, `title`, `description`, option label, option value or
/// option description.
pub const MAX_TEXT_BYTES: usize = 16 * 1024;

/// Longest property key, in bytes.
pub const MAX_KEY_BYTES: usize = 1024;

/// Longest `pattern`, in bytes.
pub const MAX_PATTERN_BYTES: usize = 1024;

/// Longest `url` of a URL-mode request, in bytes.
pub const MAX_URL_BYTES: usize = 8 * 1024;

/// Longest `data:` URI of a thumbnail, in bytes (an `https://` thumbnail is bounded by
/// [`MAX_URL_BYTES`]).
pub const MAX_THUMBNAIL_BYTES: usize = 256 * 1024;

/// Largest whole `params` object (and so any `requestedSchema`), measured as the bytes of its strings
/// and keys plus 8 bytes for every other JSON value.
pub const MAX_REQUEST_BYTES: usize = 1024 * 1024;

/// Deepest nesting of JSON arrays and objects anywhere in the params, unknown keywords and `_meta`
/// included.
pub const MAX_DEPTH: usize = 32;
