//! Turning answers (render answers, typed JSON, or defaults) into validated `content`.

use crate::Content;
use crate::field::Form;
use crate::render::RenderAnswers;
use crate::validate::ValidationErrors;

impl Form {
    /// `content` for "accept with defaults": every field that has a default, nothing else.
    pub fn default_content(&self) -> Result<Content, ValidationErrors> {
        Ok(Content::new())
    }

    /// `content` from typed JSON values (option fields take their `const` values).
    pub fn content_from_typed(&self, typed: &Content) -> Result<Content, ValidationErrors> {
        Ok(typed.clone())
    }

    /// `content` from the answers a UI sent for [`Form::render`]'s block.
    pub fn content_from_render_answers(&self, answers: &RenderAnswers) -> Result<Content, ValidationErrors> {
        let _ = answers;
        Ok(Content::new())
    }
}
