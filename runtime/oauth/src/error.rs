//! Why an OAuth step failed: one typed error per cause, naming the server and the step.

use std::fmt;
use std::sync::Arc;

use super::store::StoreError;

/// A step of the OAuth flow, as errors name it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Step {
    /// Fetching the Protected Resource Metadata (RFC 9728).
    ResourceMetadata,
    /// Fetching the authorization server's metadata (RFC 8414, OpenID Connect discovery).
    ServerMetadata,
    /// Registering the client (RFC 7591).
    Registration,
    /// The authorization request and its redirect.
    Authorization,
    /// Exchanging the authorization code for tokens.
    CodeExchange,
    /// Refreshing the access token.
    Refresh,
    /// The client credentials grant.
    ClientCredentials,
    /// Cross-app access: exchanging the identity assertion for an ID-JAG at the identity
    /// provider (RFC 8693).
    TokenExchange,
    /// Cross-app access: presenting the ID-JAG to the authorization server (RFC 7523).
    JwtBearer,
    /// A gateway's token exchange (RFC 8693): a client's token for one meant for the server.
    OnBehalfOf,
}

impl fmt::Display for Step {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Step::ResourceMetadata => "protected resource metadata",
            Step::ServerMetadata => "authorization server metadata",
            Step::Registration => "client registration",
            Step::Authorization => "authorization",
            Step::CodeExchange => "code exchange",
            Step::Refresh => "token refresh",
            Step::ClientCredentials => "client credentials grant",
            Step::TokenExchange => "token exchange at the identity provider",
            Step::JwtBearer => "jwt bearer grant",
            Step::OnBehalfOf => "token exchange on the client's behalf",
        })
    }
}

/// Why OAuth for a server failed. Messages never contain tokens, secrets, codes or keys.
#[derive(Debug, Clone, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The OAuth configuration cannot be used.
    #[error("{server}: invalid oauth configuration: {reason}")]
    InvalidConfig {
        /// The server's name.
        server: Arc<str>,
        /// What is wrong.
        reason: String,
    },
    /// A request could not be made or its answer not read.
    #[error("{server}: {step}: request to {url} failed: {reason}")]
    Network {
        /// The server's name.
        server: Arc<str>,
        /// The step.
        step: Step,
        /// The URL (without query).
        url: String,
        /// The cause.
        reason: String,
    },
    /// An endpoint answered with an unexpected HTTP status.
    #[error("{server}: {step}: {url} answered http status {status}")]
    Status {
        /// The server's name.
        server: Arc<str>,
        /// The step.
        step: Step,
        /// The URL (without query).
        url: String,
        /// The status code.
        status: u16,
    },
    /// A metadata document is not JSON, lacks a required field or has a wrong one.
    #[error("{server}: {step}: bad metadata from {url}: {reason}")]
    BadMetadata {
        /// The server's name.
        server: Arc<str>,
        /// The step.
        step: Step,
        /// Where it came from.
        url: String,
        /// What is wrong.
        reason: String,
    },
    /// No metadata was found at any of the places the specification lists.
    #[error("{server}: {step}: none found (tried {tried})")]
    NoMetadata {
        /// The server's name.
        server: Arc<str>,
        /// The step.
        step: Step,
        /// The URLs tried, comma-separated.
        tried: String,
    },
    /// The Protected Resource Metadata describes another resource than this server.
    #[error("{server}: the protected resource metadata is for {resource}, not for {expected}")]
    ResourceMismatch {
        /// The server's name.
        server: Arc<str>,
        /// The `resource` it names.
        resource: String,
        /// The server's URL.
        expected: String,
    },
    /// An issuer is not the expected one: the metadata's `issuer` (RFC 8414 §3.3) or the
    /// authorization response's `iss` (RFC 9207).
    #[error("{server}: {step}: issuer mismatch: expected {expected}, got {found}")]
    IssuerMismatch {
        /// The server's name.
        server: Arc<str>,
        /// The step.
        step: Step,
        /// The issuer expected.
        expected: String,
        /// The issuer found (empty when it was missing).
        found: String,
    },
    /// The authorization server does not advertise PKCE with `S256`.
    #[error("{server}: the authorization server {issuer} does not support pkce with S256")]
    PkceUnsupported {
        /// The server's name.
        server: Arc<str>,
        /// The authorization server.
        issuer: String,
    },
    /// An authorization server endpoint is plain `http` on a host that is not loopback.
    #[error("{server}: {step}: refusing {url}: authorization endpoints must use https (http only on a loopback host)")]
    InsecureEndpoint {
        /// The server's name.
        server: Arc<str>,
        /// The step.
        step: Step,
        /// The endpoint.
        url: String,
    },
    /// The authorization server's metadata lists the grants it supports, and not this one.
    #[error("{server}: the authorization server {issuer} does not support the {grant} grant")]
    GrantUnsupported {
        /// The server's name.
        server: Arc<str>,
        /// The authorization server.
        issuer: String,
        /// The grant type, e.g. `urn:ietf:params:oauth:grant-type:jwt-bearer`.
        grant: String,
    },
    /// No client identity: nothing pre-registered, no Client ID Metadata Document support,
    /// no registration endpoint.
    #[error("{server}: cannot register with {issuer}: configure a client id (it offers neither client id metadata documents nor dynamic registration)")]
    NoRegistration {
        /// The server's name.
        server: Arc<str>,
        /// The authorization server.
        issuer: String,
    },
    /// The authorization code grant needs a person and no [`Authorizer`](super::Authorizer)
    /// is configured.
    #[error("{server}: authorization needs a person and no authorizer is configured (run `switchboard auth login {server}`)")]
    NoAuthorizer {
        /// The server's name.
        server: Arc<str>,
    },
    /// The [`Authorizer`](super::Authorizer) failed.
    #[error("{server}: the authorizer failed: {reason}")]
    Authorizer {
        /// The server's name.
        server: Arc<str>,
        /// Its explanation.
        reason: String,
    },
    /// The redirect's `state` is not the one sent.
    #[error("{server}: the authorization response's state does not match the request's")]
    StateMismatch {
        /// The server's name.
        server: Arc<str>,
    },
    /// An endpoint refused with an OAuth error (`error`, `error_description`).
    #[error("{server}: {step}: refused with {error}{}", description.as_ref().map(|d| format!(": {d}")).unwrap_or_default())]
    Refused {
        /// The server's name.
        server: Arc<str>,
        /// The step.
        step: Step,
        /// The OAuth error code, e.g. `invalid_grant`, `access_denied`.
        error: String,
        /// The `error_description`, if any.
        description: Option<String>,
    },
    /// A token response is not usable (not JSON, no `access_token`, not a bearer token).
    #[error("{server}: {step}: bad token response: {reason}")]
    BadTokenResponse {
        /// The server's name.
        server: Arc<str>,
        /// The step.
        step: Step,
        /// What is wrong.
        reason: String,
    },
    /// The server asks for scope the token already has: authorizing again cannot help.
    #[error("{server}: the server refuses with insufficient scope, but the token was already granted {scope}")]
    ScopeNotGranted {
        /// The server's name.
        server: Arc<str>,
        /// The scope it asked for.
        scope: String,
    },
    /// The server kept asking for more scope.
    #[error("{server}: gave up after {attempts} step-up authorizations")]
    StepUpLimit {
        /// The server's name.
        server: Arc<str>,
        /// How many were made.
        attempts: u32,
    },
    /// No refresh token to refresh with.
    #[error("{server}: no refresh token; authorize again")]
    NoRefreshToken {
        /// The server's name.
        server: Arc<str>,
    },
    /// The token store failed.
    #[error("{server}: token store: {source}")]
    Store {
        /// The server's name.
        server: Arc<str>,
        /// The cause.
        #[source]
        source: StoreError,
    },
}
