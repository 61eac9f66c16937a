//! TEMPORARY local copy of the settings interface (replaced by the store branch).
#[derive(Clone, Default)]
pub struct AuthSettings {
    pub client_id: Option<String>,
    pub client_secret: Option<String>,
    pub client_metadata_url: Option<String>,
    pub grant: Grant,
    pub private_key_pem: Option<String>,
    pub signing_algorithm: Option<String>,
    pub scopes: Vec<String>,
    pub resource: Option<String>,
}
#[derive(Clone, Copy, Default, Debug, PartialEq, Eq)]
pub enum Grant {
    #[default]
    AuthorizationCode,
    ClientCredentials,
}
