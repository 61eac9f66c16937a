// The form of every part of `cargo xtask bench`, shared by its plugins: `bench_form.json`, which the Rust
// instrument (`examples/load-bench`) reads too.
//
// The seed's strategy choice plus the fields a real "how should I continue?" form tends to carry. Every field has a
// default, so "accept with the defaults" is a valid answer, and `EXPECTED` is exactly that answer.
import { readFileSync } from "node:fs";

const form = JSON.parse(readFileSync(new URL("./bench_form.json", import.meta.url), "utf8"));
export const params = form.params;
export const EXPECTED = form.expected;
