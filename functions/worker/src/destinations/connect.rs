//! The start-up every token-keyed destination shares (HubSpot, Pipedrive,
//! Mailchimp, Brevo, Attio and the next): the gates' key and the CRM's
//! token read now, the adapter built from them, and the token's source
//! kept so that a refused call can read it again. Each adapter's
//! `build.rs` says only what its vendor needs differently; one that keeps
//! gates and a person memory needs no `build.rs` ([`GatedTokenCrm`]).

use std::fmt;
use std::marker::PhantomData;
use std::sync::Arc;
use std::time::Duration;

use aws_sdk_secretsmanager::Client;
use shared::config::ConfigError;
use shared::newest::{GateKeySetting, GateSecret};

use crate::destinations::gates::gate_secret;
use crate::destinations::memory::dynamodb::DynamoPersonMemory;
use crate::destinations::token::{
    CrmToken, Source, TokenError, TokenSetting, TOKEN_REFRESH_INTERVAL,
};
use crate::destinations::{
    Boxed, BuildEnv, ConfiguredDestination, Destination, DestinationKind, DestinationSettings,
};
use crate::secrets::token_and_source;

/// What a token-keyed adapter is built from.
pub struct StartKeys {
    /// The CRM's token, if one is configured.
    pub token: Option<CrmToken>,
    /// The gates' key, if the destination keeps gates.
    pub gate_secret: Option<GateSecret>,
}

impl StartKeys {
    /// The gates' key, for a destination that cannot work without one.
    pub fn required_gate_secret(&mut self) -> Result<GateSecret, ConfigError> {
        self.gate_secret
            .take()
            .ok_or(ConfigError::Missing("GATE_KEY or GATE_KEY_SECRET_ARN"))
    }
}

/// Where a built adapter reads its token again.
pub type TokenSource = Arc<dyn Source<CrmToken, TokenError>>;

/// Reads the keys (`token_arn` names the token's secret variable in
/// errors), builds the adapter with `build`, and, when the token came from
/// Secrets Manager, hands its source to `renewing` with `refresh_interval`.
pub async fn connect_keyed<T>(
    gate_key: Option<&GateKeySetting>,
    token: TokenSetting,
    token_arn: &'static str,
    client: impl Fn() -> Client,
    refresh_interval: Duration,
    build: impl FnOnce(StartKeys) -> Result<T, ConfigError>,
    renewing: impl FnOnce(T, TokenSource, Duration) -> T,
) -> Result<T, ConfigError> {
    let gate_secret = gate_secret(gate_key, &client).await?;
    let (token, source) = token_and_source(token, token_arn, client).await?;
    let built = build(StartKeys { token, gate_secret })?;
    Ok(match source {
        Some(source) => renewing(built, source, refresh_interval),
        None => built,
    })
}

/// The one error of a client that cannot be built (no TLS backend), named
/// after the setting the adapter calls.
pub fn client_not_built(name: &'static str) -> impl FnOnce(reqwest::Error) -> ConfigError {
    move |_| ConfigError::Invalid {
        name,
        reason: "the HTTP client could not be built".to_owned(),
    }
}

/// A CRM reached with one token (an API token or key) that keeps
/// newest-wins gates and a person memory on the receipts table (Pipedrive,
/// Brevo, Attio): its start-up is the same for each, and
/// [`GatedTokenConfig`] does it; the adapter says only what is its own.
pub trait GatedTokenCrm: Destination + Sized + Send + 'static {
    /// Everything it is configured with but the token.
    type Settings: fmt::Debug + Clone + PartialEq + Eq + Send + Sync + 'static;
    const KIND: DestinationKind;
    /// The variables naming its token's secret and its base URL, as errors
    /// name them.
    const TOKEN_SECRET_ARN: &'static str;
    const BASE_URL: &'static str;

    /// Its settings and where its token comes from, as read at init.
    fn read_settings(
        get: &dyn Fn(&str) -> Option<String>,
        allow_http: bool,
    ) -> Result<(Self::Settings, TokenSetting), ConfigError>;

    /// Its gates' key setting, to be made its own beside other destinations.
    fn gate_key(settings: &mut Self::Settings) -> &mut GateKeySetting;

    fn open(
        settings: Self::Settings,
        token: Option<CrmToken>,
        gate_secret: GateSecret,
        memory: DynamoPersonMemory,
    ) -> Result<Self, reqwest::Error>;

    /// The adapter reading its token again from `source` every `interval`
    /// (and when refused).
    fn renewing(self, source: TokenSource, interval: Duration) -> Self;
}

/// `DESTINATION=<kind>`'s settings for a [`GatedTokenCrm`], and where its
/// token comes from, as read at init.
pub struct GatedTokenConfig<C: GatedTokenCrm> {
    pub settings: C::Settings,
    pub token: TokenSetting,
    crm: PhantomData<fn() -> C>,
}

impl<C: GatedTokenCrm> GatedTokenConfig<C> {
    pub fn from_lookup(
        get: &impl Fn(&str) -> Option<String>,
        allow_http: bool,
    ) -> Result<Self, ConfigError> {
        let (settings, token) = C::read_settings(get, allow_http)?;
        Ok(GatedTokenConfig {
            settings,
            token,
            crm: PhantomData,
        })
    }
}

impl<C: GatedTokenCrm> fmt::Debug for GatedTokenConfig<C> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("GatedTokenConfig")
            .field("kind", &C::KIND)
            .field("settings", &self.settings)
            .field("token", &self.token)
            .finish()
    }
}

impl<C: GatedTokenCrm> DestinationSettings for GatedTokenConfig<C> {
    fn kind(&self) -> DestinationKind {
        C::KIND
    }

    fn build<'a>(
        self: Box<Self>,
        env: BuildEnv<'a>,
    ) -> Boxed<'a, Result<ConfiguredDestination, ConfigError>> {
        Box::pin(async move {
            let memory = DynamoPersonMemory::new(env.dynamodb.clone(), env.receipts_table);
            let mut settings = self.settings;
            let gate_key = C::gate_key(&mut settings);
            *gate_key = env.own_gates(gate_key.clone());
            let gate_key = gate_key.clone();
            let crm = connect_keyed(
                Some(&gate_key),
                self.token,
                C::TOKEN_SECRET_ARN,
                || env.secrets_client(),
                TOKEN_REFRESH_INTERVAL,
                |mut keys| {
                    let gate_secret = keys.required_gate_secret()?;
                    C::open(settings, keys.token, gate_secret, memory)
                        .map_err(client_not_built(C::BASE_URL))
                },
                C::renewing,
            )
            .await?;
            Ok(ConfiguredDestination::new(crm))
        })
    }
}
