//! The OAuth client's own HTTP: JSON GETs and form POSTs to metadata, registration and
//! token endpoints, with bounded bodies, no redirects, and URLs in errors without queries.

use std::sync::Arc;
use std::time::Duration;

use reqwest::header::{HeaderMap, HeaderValue, ACCEPT, AUTHORIZATION};
use reqwest::{RequestBuilder, StatusCode};
use serde_json::Value;
use url::Url;

use super::error::{Error, Step};

/// The largest metadata or token response read.
const MAX_BODY: usize = 1024 * 1024;

/// What an endpoint answered.
#[derive(Debug)]
pub(crate) struct Answer {
    pub(crate) status: StatusCode,
    pub(crate) body: Vec<u8>,
}

impl Answer {
    pub(crate) fn json(&self) -> Option<Value> {
        serde_json::from_slice(&self.body).ok()
    }
}

/// The client and the server's name for errors.
#[derive(Debug, Clone)]
pub(crate) struct Net {
    pub(crate) server: Arc<str>,
    client: reqwest::Client,
}

impl Net {
    pub(crate) fn new(server: Arc<str>, timeout: Duration) -> Result<Net, Error> {
        let client = reqwest::Client::builder()
            .timeout(timeout)
            // A metadata or token endpoint that redirects is not followed: a redirect could
            // carry the client's credentials to another host.
            .redirect(reqwest::redirect::Policy::none())
            .build()
            .map_err(|e| Error::InvalidConfig {
                server: server.clone(),
                reason: format!("cannot build the http client: {e}"),
            })?;
        Ok(Net { server, client })
    }

    /// GET `url` asking for JSON.
    pub(crate) async fn get(&self, step: Step, url: &Url) -> Result<Answer, Error> {
        let request = self
            .client
            .get(url.clone())
            .header(ACCEPT, "application/json");
        self.send(step, url, request).await
    }

    /// GET `url` without following its redirect, for [`Headless`](super::Headless).
    pub(crate) async fn get_redirect(
        &self,
        step: Step,
        url: &Url,
    ) -> Result<Option<String>, Error> {
        let response = self
            .client
            .get(url.clone())
            .send()
            .await
            .map_err(|e| self.network(step, url, e))?;
        Ok(response
            .headers()
            .get(reqwest::header::LOCATION)
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned))
    }

    /// POST a form to `url`, with `Authorization: Basic` when `basic` is given.
    pub(crate) async fn post_form(
        &self,
        step: Step,
        url: &Url,
        form: &[(&str, &str)],
        basic: Option<HeaderValue>,
    ) -> Result<Answer, Error> {
        let mut headers = HeaderMap::new();
        headers.insert(ACCEPT, HeaderValue::from_static("application/json"));
        if let Some(basic) = basic {
            headers.insert(AUTHORIZATION, basic);
        }
        let request = self.client.post(url.clone()).headers(headers).form(form);
        self.send(step, url, request).await
    }

    /// POST a JSON body to `url`.
    pub(crate) async fn post_json(
        &self,
        step: Step,
        url: &Url,
        body: &Value,
    ) -> Result<Answer, Error> {
        let request = self
            .client
            .post(url.clone())
            .header(ACCEPT, "application/json")
            .header(reqwest::header::CONTENT_TYPE, "application/json")
            .body(body.to_string());
        self.send(step, url, request).await
    }

    async fn send(&self, step: Step, url: &Url, request: RequestBuilder) -> Result<Answer, Error> {
        let mut response = request
            .send()
            .await
            .map_err(|e| self.network(step, url, e))?;
        let status = response.status();
        let mut body = Vec::new();
        while let Some(chunk) = response
            .chunk()
            .await
            .map_err(|e| self.network(step, url, e))?
        {
            if body.len() + chunk.len() > MAX_BODY {
                return Err(Error::Network {
                    server: self.server.clone(),
                    step,
                    url: display(url),
                    reason: format!("the answer is larger than {MAX_BODY} bytes"),
                });
            }
            body.extend_from_slice(&chunk);
        }
        Ok(Answer { status, body })
    }

    fn network(&self, step: Step, url: &Url, e: reqwest::Error) -> Error {
        // reqwest's message may name the URL with its query; the cause chain does not.
        let mut reason = if e.is_timeout() {
            "timed out".to_owned()
        } else if e.is_connect() {
            "cannot connect".to_owned()
        } else {
            "request failed".to_owned()
        };
        let mut source = std::error::Error::source(&e);
        while let Some(cause) = source {
            reason.push_str(": ");
            reason.push_str(&cause.to_string());
            source = cause.source();
        }
        Error::Network {
            server: self.server.clone(),
            step,
            url: display(url),
            reason,
        }
    }
}

/// A URL as errors show it: no user info, query or fragment.
pub(crate) fn display(url: &Url) -> String {
    let mut shown = url.clone();
    let _ = shown.set_username("");
    let _ = shown.set_password(None);
    shown.set_query(None);
    shown.set_fragment(None);
    shown.to_string()
}

/// `Authorization: Basic` for a client id and secret (RFC 6749 §2.3.1: both
/// form-urlencoded first), marked sensitive.
pub(crate) fn basic_auth(client_id: &str, secret: &str) -> Option<HeaderValue> {
    use base64::Engine;
    let encode = |s: &str| url::form_urlencoded::byte_serialize(s.as_bytes()).collect::<String>();
    let credentials = format!("{}:{}", encode(client_id), encode(secret));
    let mut value = HeaderValue::from_str(&format!(
        "Basic {}",
        base64::engine::general_purpose::STANDARD.encode(credentials)
    ))
    .ok()?;
    value.set_sensitive(true);
    Some(value)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn display_drops_secrets() {
        let url = Url::parse("https://u:p@as.example.com/token?code=abc#f").unwrap();
        assert_eq!(display(&url), "https://as.example.com/token");
    }

    #[test]
    fn basic_auth_encodes_both_parts() {
        let value = basic_auth("id:1", "s e").unwrap();
        assert!(value.is_sensitive());
        // base64("id%3A1:s+e")
        assert_eq!(value.to_str().unwrap(), "Basic aWQlM0ExOnMrZQ==");
    }
}
