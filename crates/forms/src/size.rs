//! Bounding the size and depth of incoming JSON before anything else reads it.
