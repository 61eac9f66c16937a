// The wire names the page matches on, in one place. They mirror the host's wire module
// (crates/host/src/session/wire.rs, and policy's ApprovalChoice); `cargo xtask test` fails when the
// keys here and the Rust enums' wire names differ.

// Why a card ended without the person (EndReason), with the words the page shows for it.
export const END_REASONS = {
  "new-message": "a new message was sent",
  stopped: "the turn was stopped",
  "plugin-gone": "the plugin went away",
  "ui-gone": "no page was open for too long",
  "timed-out": "it timed out",
  "call-ended": "its tool call ended first",
  "host-stopped": "formwork stopped",
  "not-stored": "the answer could not be stored",
  "answered-elsewhere": "it was answered in another client",
};

// The approval choices (ApprovalChoice), in the order a card offers them: the label the host's
// approval question gives each option, and the words of the outcome.
export const APPROVAL_CHOICES = {
  allow: { label: "Allow", done: "Allowed" },
  allow_for_session: { label: "Allow for this session", done: "Allowed for this session" },
  always_allow: { label: "Always allow", done: "Always allowed" },
  deny: { label: "Deny", done: "Denied" },
};
