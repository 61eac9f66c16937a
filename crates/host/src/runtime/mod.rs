//! Conversation runtimes that run beside formwork's own model loop (`agent/`): each talks to
//! an outside program that runs the conversation, and knows nothing of sessions; the session
//! layer bridges its events into the transcript and its questions into cards.

pub mod codex;
