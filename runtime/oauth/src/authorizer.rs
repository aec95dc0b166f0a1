//! The person in the loop: the [`Authorizer`] the host gives to have an authorization URL
//! approved, and [`Headless`], for authorization servers that approve without anyone (test
//! servers, the conformance suite's).

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use switchboard_transports::connection::BoxFuture;
use url::Url;

use super::error::{Error, Step};
use super::net::Net;

/// One authorization to be approved.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct AuthorizationRequest {
    /// The server's name.
    pub server: Arc<str>,
    /// The URL to open in a browser.
    pub url: Url,
    /// The redirect URI in it (the authorizer's own [`Authorizer::redirect_uri`]).
    pub redirect_uri: String,
    /// The `state` in it; the redirect must carry the same (checked again by the OAuth
    /// client, so an authorizer may use it only to pick its redirect among others).
    pub state: String,
}

/// Has a person approve an authorization: opens or shows the URL, and returns the URL the
/// authorization server redirected the browser to (with `code` and `state` in its query).
///
/// The OAuth client checks everything in the redirect (`state`, `iss`, `error`); the
/// authorizer only carries it back.
pub trait Authorizer: Send + Sync + fmt::Debug {
    /// The redirect URI to register and to send in authorization requests.
    fn redirect_uri(&self) -> String;

    /// Has the authorization approved; returns the redirect URL. The error text is shown
    /// to the user.
    fn authorize(&self, request: AuthorizationRequest) -> BoxFuture<Result<String, String>>;
}

/// Approves by GETting the authorization URL itself, without following the redirect, and
/// returning its `Location`: for authorization servers that approve without a person (test
/// servers, the MCP conformance suite's). Never use it with a real authorization server: it
/// would send nobody to a login page and get nothing back.
#[derive(Debug, Clone)]
pub struct Headless {
    redirect_uri: String,
    net: Net,
}

impl Headless {
    /// Redirects to `redirect_uri`, which nothing needs to listen on. Fails only when no
    /// HTTP client can be built (no TLS backend).
    pub fn new(redirect_uri: impl Into<String>) -> Result<Headless, Error> {
        Ok(Headless {
            redirect_uri: redirect_uri.into(),
            net: Net::new("headless".into(), Duration::from_secs(30))?,
        })
    }
}

impl Authorizer for Headless {
    fn redirect_uri(&self) -> String {
        self.redirect_uri.clone()
    }

    fn authorize(&self, request: AuthorizationRequest) -> BoxFuture<Result<String, String>> {
        let net = self.net.clone();
        Box::pin(async move {
            let location = net
                .get_redirect(Step::Authorization, &request.url)
                .await
                .map_err(|e| e.to_string())?
                .ok_or_else(|| "the authorization endpoint did not redirect".to_owned())?;
            // A relative Location is resolved against the authorization URL.
            request
                .url
                .join(&location)
                .map(String::from)
                .map_err(|_| "the redirect location is not a url".to_owned())
        })
    }
}
