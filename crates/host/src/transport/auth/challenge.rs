//! The `Bearer` challenge of a `WWW-Authenticate` header (RFC 6750 §3, RFC 9728 §5.1).

/// What a 401 or 403 asks for.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Challenge {
    /// `error`, e.g. `invalid_token` or `insufficient_scope`.
    pub error: Option<String>,
    /// `scope`: the scopes the request needs, space-separated.
    pub scope: Option<String>,
    /// `resource_metadata`: where the protected resource metadata is.
    pub resource_metadata: Option<String>,
}

impl Challenge {
    /// Reads the parameters of the first `Bearer` challenge, in any order, quoted or not. The
    /// header may list several challenges (RFC 9110 §11.6.1: `Basic realm="x", Bearer
    /// scope="y"`): a bare token after the first parameter, or after a comma, starts the next
    /// one, and each parameter belongs to the challenge before it. No `Bearer` challenge (or
    /// a malformed list) yields an empty challenge: discovery then goes on from the well-known
    /// URLs.
    pub fn parse(header: Option<&str>) -> Challenge {
        let mut challenge = Challenge::default();
        let Some(header) = header else {
            return challenge;
        };
        // The parameters of the first Bearer challenge: from its scheme to the next scheme.
        let mut bearer = Vec::new();
        let mut in_bearer = false;
        let mut seen_bearer = false;
        // Right after a scheme: a bare token there is its token68, not the next scheme.
        let mut after_scheme = false;
        for item in items(header) {
            match item {
                Item::Bare(_) if after_scheme => after_scheme = false,
                Item::Bare(scheme) => {
                    in_bearer = !seen_bearer && scheme.eq_ignore_ascii_case("bearer");
                    seen_bearer |= in_bearer;
                    after_scheme = true;
                }
                Item::Param(key, value) => {
                    after_scheme = false;
                    if in_bearer {
                        bearer.push((key, value));
                    }
                }
            }
        }
        for (key, value) in bearer {
            let slot = match key.to_ascii_lowercase().as_str() {
                "error" => &mut challenge.error,
                "scope" => &mut challenge.scope,
                "resource_metadata" => &mut challenge.resource_metadata,
                _ => continue,
            };
            if slot.is_none() {
                *slot = Some(value);
            }
        }
        challenge
    }

    /// The scopes named, in their order, each once.
    pub fn scopes(&self) -> Vec<String> {
        split_scopes(self.scope.as_deref().unwrap_or_default())
    }

    pub fn insufficient_scope(&self) -> bool {
        self.error.as_deref() == Some("insufficient_scope")
    }
}

pub(crate) fn split_scopes(scope: &str) -> Vec<String> {
    let mut scopes: Vec<String> = Vec::new();
    for scope in scope.split_ascii_whitespace() {
        if !scopes.iter().any(|known| known == scope) {
            scopes.push(scope.to_owned());
        }
    }
    scopes
}

/// One item of a `WWW-Authenticate` list: a bare token (a scheme, or a token68) or a parameter.
enum Item {
    Bare(String),
    Param(String, String),
}

/// The items of a challenge list: bare tokens and `key=value` pairs, separated by whitespace
/// or commas; values are tokens or quoted strings with `\` escapes.
fn items(text: &str) -> Vec<Item> {
    let mut pairs = Vec::new();
    let mut chars = text.chars().peekable();
    loop {
        while chars
            .next_if(|c| c.is_ascii_whitespace() || *c == ',')
            .is_some()
        {}
        let mut key = String::new();
        while let Some(c) = chars.next_if(|c| *c != '=' && *c != ',' && !c.is_ascii_whitespace()) {
            key.push(c);
        }
        while chars.next_if(char::is_ascii_whitespace).is_some() {}
        if key.is_empty() || chars.next_if_eq(&'=').is_none() {
            if !key.is_empty() {
                pairs.push(Item::Bare(key));
            }
            if chars.peek().is_none() {
                return pairs;
            }
            // Not a token at all (a stray `=`): skip it.
            if chars.peek() == Some(&'=') {
                chars.next();
            }
            continue;
        }
        while chars.next_if(char::is_ascii_whitespace).is_some() {}
        let mut value = String::new();
        if chars.next_if_eq(&'"').is_some() {
            while let Some(c) = chars.next() {
                match c {
                    '\\' => value.extend(chars.next()),
                    '"' => break,
                    c => value.push(c),
                }
            }
        } else {
            while let Some(c) = chars.next_if(|c| *c != ',' && !c.is_ascii_whitespace()) {
                value.push(c);
            }
        }
        pairs.push(Item::Param(key, value));
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn reads_parameters_in_any_order_quoted_or_not() {
        let header = r#"Bearer error="invalid_token", error_description="Missing Authorization header", scope="mcp:basic mcp:write", resource_metadata="http://localhost:1/.well-known/oauth-protected-resource/mcp""#;
        assert_eq!(
            Challenge::parse(Some(header)),
            Challenge {
                error: Some("invalid_token".into()),
                scope: Some("mcp:basic mcp:write".into()),
                resource_metadata: Some(
                    "http://localhost:1/.well-known/oauth-protected-resource/mcp".into()
                ),
            }
        );
        let other_order = r#"bearer resource_metadata=https://a.example/prm,scope="a \"b\"" , error=insufficient_scope"#;
        let parsed = Challenge::parse(Some(other_order));
        assert_eq!(
            parsed.resource_metadata.as_deref(),
            Some("https://a.example/prm")
        );
        assert_eq!(parsed.scope.as_deref(), Some(r#"a "b""#));
        assert!(parsed.insufficient_scope());
    }

    /// One header may list several challenges; the Bearer one is read, and its parameters end
    /// where the next challenge starts.
    #[test]
    fn the_bearer_challenge_is_found_among_others() {
        let header = r#"Basic realm="api", Bearer resource_metadata="https://a.example/prm", scope="mcp:x", DPoP algs="ES256", scope="admin", error="use_dpop_nonce""#;
        assert_eq!(
            Challenge::parse(Some(header)),
            Challenge {
                error: None,
                scope: Some("mcp:x".into()),
                resource_metadata: Some("https://a.example/prm".into()),
            }
        );
        let token68 =
            r#"Negotiate abc123, Bearer error="insufficient_scope", scope="b", Bearer scope="c""#;
        let parsed = Challenge::parse(Some(token68));
        assert_eq!(parsed.scope.as_deref(), Some("b"));
        assert!(parsed.insufficient_scope());
    }

    #[test]
    fn another_scheme_or_garbage_gives_nothing() {
        assert_eq!(
            Challenge::parse(Some(r#"Basic realm="x""#)),
            Challenge::default()
        );
        assert_eq!(Challenge::parse(Some("Bearer")), Challenge::default());
        assert_eq!(
            Challenge::parse(Some("Bearer ,,, =x, y")),
            Challenge::default()
        );
        assert_eq!(Challenge::parse(None), Challenge::default());
        assert_eq!(
            Challenge::parse(Some(r#"Basic realm="x", Digest scope="y""#)),
            Challenge::default()
        );
        assert_eq!(
            Challenge::parse(Some(r#"Bearer scope="a b a""#)).scopes(),
            vec!["a".to_owned(), "b".to_owned()]
        );
    }
}
