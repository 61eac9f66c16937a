//! How much one plugin may make the host write down: a plugin that floods the connection with
//! broken messages, log notifications or forms that are declined fills no disk and no
//! transcript. Each line (a warning about its messages, one of its log notifications, a
//! diagnostic in a session) takes a token; tokens come back one per second up to a burst. What is
//! left out is counted and said with the next line that is written.

use std::time::Duration;

use tokio::time::Instant;

/// How many lines one connection may log at once.
pub(crate) const LOG_BURST: u32 = 20;

/// How often a spent token comes back.
pub(crate) const LOG_REFILL: Duration = Duration::from_secs(1);

/// The longest piece of plugin text (a log notification's `data`, say) put in one log line.
pub(crate) const MAX_LOGGED_BYTES: usize = 2048;

/// The tokens of one connection.
#[derive(Debug)]
pub(crate) struct LogBudget {
    tokens: u32,
    refilled: Instant,
    suppressed: u64,
}

impl Default for LogBudget {
    /// A full budget from now.
    fn default() -> Self {
        LogBudget::new(Instant::now())
    }
}

impl LogBudget {
    pub(crate) fn new(now: Instant) -> Self {
        LogBudget {
            tokens: LOG_BURST,
            refilled: now,
            suppressed: 0,
        }
    }

    /// Whether a line may be logged now; `Some(n)`: yes, and `n` lines were left out since the
    /// last one.
    pub(crate) fn take(&mut self, now: Instant) -> Option<u64> {
        let earned = now.saturating_duration_since(self.refilled).as_secs();
        if earned > 0 {
            let earned = u32::try_from(earned).unwrap_or(u32::MAX);
            self.tokens = self.tokens.saturating_add(earned).min(LOG_BURST);
            self.refilled += LOG_REFILL * earned;
        }
        if self.tokens == 0 {
            self.suppressed += 1;
            return None;
        }
        self.tokens -= 1;
        Some(std::mem::take(&mut self.suppressed))
    }
}

/// `text` cut to [`MAX_LOGGED_BYTES`] (at a character boundary), saying how much was left out.
pub(crate) fn clipped(text: &str) -> std::borrow::Cow<'_, str> {
    if text.len() <= MAX_LOGGED_BYTES {
        return text.into();
    }
    let mut end = MAX_LOGGED_BYTES;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}… ({} more bytes)", &text[..end], text.len() - end).into()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_burst_then_one_line_a_second_with_the_count_of_those_left_out() {
        let start = Instant::now();
        let mut budget = LogBudget::new(start);
        for _ in 0..LOG_BURST {
            assert_eq!(budget.take(start), Some(0));
        }
        for _ in 0..5 {
            assert_eq!(budget.take(start), None);
        }
        assert_eq!(budget.take(start + Duration::from_millis(999)), None);
        assert_eq!(budget.take(start + LOG_REFILL), Some(6));
        assert_eq!(budget.take(start + LOG_REFILL), None);
        // A long quiet spell refills up to the burst, no more.
        let later = start + LOG_REFILL * 1000;
        assert_eq!(budget.take(later), Some(1));
        for _ in 1..LOG_BURST {
            assert_eq!(budget.take(later), Some(0));
        }
        assert_eq!(budget.take(later), None);
    }

    #[test]
    fn long_text_is_clipped_at_a_character() {
        assert_eq!(clipped("short"), "short");
        let long = "é".repeat(MAX_LOGGED_BYTES);
        let clipped = clipped(&long);
        assert!(clipped.starts_with(&"é".repeat(MAX_LOGGED_BYTES / 2)));
        assert!(clipped.ends_with(&format!("… ({} more bytes)", MAX_LOGGED_BYTES)));
    }
}
