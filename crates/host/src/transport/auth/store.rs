//! TEMPORARY local copy of the store interface (replaced by the store branch).
use std::path::Path;
pub enum CredentialsStoreMode {
    Auto,
    Keyring,
    File,
}
#[derive(Clone, serde::Serialize, serde::Deserialize, PartialEq)]
pub struct StoredTokens {
    pub server_name: String,
    pub url: String,
    pub issuer: String,
    pub token_endpoint: String,
    pub client_id: String,
    pub client_secret: Option<String>,
    pub access_token: String,
    pub refresh_token: Option<String>,
    pub expires_at: Option<u64>,
    pub scopes: Vec<String>,
    pub resource: Option<String>,
}
pub struct TokenStore;
impl TokenStore {
    pub fn new(_mode: CredentialsStoreMode, _data_dir: &Path) -> TokenStore {
        TokenStore
    }
    pub fn load(&self, _server_name: &str, _url: &str) -> Result<Option<StoredTokens>, String> {
        Ok(None)
    }
    pub fn save(&self, _tokens: &StoredTokens) -> Result<(), String> {
        Ok(())
    }
    pub fn delete(&self, _server_name: &str, _url: &str) -> Result<bool, String> {
        Ok(false)
    }
    pub fn describe(&self) -> String {
        String::new()
    }
}
