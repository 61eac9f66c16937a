//! Whether a field asks for a secret. MCP servers must not ask for sensitive information in
//! form mode; a host cannot stop one from trying, but it can tell the person. A field is taken to
//! ask for a secret when its key or title names one: a password, passcode, PIN, API key, token,
//! secret, private key or card number, in English (as words, so `max_tokens` or `pinned` do
//! not count) or in Chinese.

/// Word sequences that name a secret, after the text is split into lowercase words.
const SECRET_WORDS: &[&[&str]] = &[
    &["password"],
    &["passwd"],
    &["passcode"],
    &["passphrase"],
    &["pin"],
    &["pincode"],
    &["api", "key"],
    &["apikey"],
    &["token"],
    &["secret"],
    &["private", "key"],
    &["privatekey"],
    &["card", "number"],
    &["cardnumber"],
    &["cvv"],
    &["cvc"],
];

/// Chinese names of secrets, matched anywhere in the text.
const SECRET_PHRASES: &[&str] = &[
    "密码",
    "口令",
    "密钥",
    "秘钥",
    "私钥",
    "令牌",
    "卡号",
    "验证码",
];

/// Whether `text` (a property key or title) names a secret.
pub(crate) fn names_a_secret(text: &str) -> bool {
    if SECRET_PHRASES.iter().any(|phrase| text.contains(phrase)) {
        return true;
    }
    let words = words(text);
    SECRET_WORDS.iter().any(|secret| {
        words
            .windows(secret.len())
            .any(|window| window.iter().zip(secret.iter()).all(|(a, b)| a == b))
    })
}

/// Lowercase words of `text`: split at anything not a letter or digit, and where a lowercase
/// letter or digit meets an uppercase one (`apiKey`, `cardNumber2`).
fn words(text: &str) -> Vec<String> {
    let mut words = Vec::new();
    let mut word = String::new();
    let mut previous_lower = false;
    for c in text.chars() {
        if !c.is_alphanumeric() {
            if !word.is_empty() {
                words.push(std::mem::take(&mut word));
            }
            previous_lower = false;
            continue;
        }
        if c.is_uppercase() && previous_lower && !word.is_empty() {
            words.push(std::mem::take(&mut word));
        }
        previous_lower = c.is_lowercase() || c.is_numeric();
        word.extend(c.to_lowercase());
    }
    if !word.is_empty() {
        words.push(word);
    }
    words
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn secrets_are_named_in_keys_and_titles() {
        for text in [
            "password",
            "new_password",
            "Password",
            "userPassword",
            "PIN",
            "pin_code",
            "apiKey",
            "API key",
            "api-key",
            "OPENAI_API_KEY",
            "access token",
            "githubToken",
            "client_secret",
            "Private key",
            "cardNumber",
            "Card number",
            "CVV",
            "支付密码",
            "API 密钥",
            "银行卡号",
            "访问令牌",
        ] {
            assert!(names_a_secret(text), "{text}");
        }
    }

    #[test]
    fn words_that_only_look_alike_are_not_secrets() {
        for text in [
            "max_tokens",
            "pinned",
            "spinner",
            "secretary",
            "keyboard",
            "passport_country",
            "card_holder",
            "number",
            "颜色",
        ] {
            assert!(!names_a_secret(text), "{text}");
        }
    }
}
