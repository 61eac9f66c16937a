#![doc = include_str!("../README.md")]
#![warn(missing_docs)]

mod ask;
mod consumed;
pub mod openai;
mod schema;
mod state;

pub use ask::{Ask, AskError, Asker, Forms};
pub use schema::{Elicit, FormSchema, SchemaError};
pub use state::StateKey;
