// The form of every part of `cargo xtask bench`, shared by its plugins.
//
// The seed's strategy choice plus the fields a real "how should I continue?" form tends to carry. Every field has a
// default, so "accept with the defaults" is a valid answer, and `EXPECTED` is exactly that answer.
export const params = {
  mode: "form",
  message: "Choose how to continue",
  requestedSchema: {
    type: "object",
    properties: {
      strategy: {
        type: "string",
        title: "Strategy",
        description: "How should the plugin continue?",
        oneOf: [
          { const: "fast", title: "Fast" },
          { const: "safe", title: "Safe" },
          { const: "manual", title: "Ask me before each step" },
        ],
        default: "safe",
      },
      dry_run: { type: "boolean", title: "Dry run", description: "Only show what would change", default: true },
      retries: { type: "integer", title: "Retries", minimum: 0, maximum: 10, default: 3 },
      target: { type: "string", title: "Target environment", minLength: 1, maxLength: 40, default: "staging" },
    },
    required: ["strategy"],
  },
};
export const EXPECTED = { strategy: "safe", dry_run: true, retries: 3, target: "staging" };
