//! Cross-app access (SEP-990) against the OAuth fixture's identity provider and
//! authorization server on 127.0.0.1: the user's ID token exchanged for an ID-JAG, the
//! ID-JAG presented with the JWT bearer grant, a fresh ID-JAG for each new token, and the
//! refusals (the identity provider says no, its answer is not an ID-JAG, the authorization
//! server does not offer the grant or refuses the client).

use serde_json::json;
use switchboard::oauth::{
    self, Error as OAuthError, IdentityAssertion, IdentityProvider, OAuth, Step,
};

use crate::oauth_fixture::{serve, Fixture, Knobs, IDP_CLIENT, ID_TOKEN, JWT_BEARER};

/// The host's cross-app access client of the fixture's server: `svc` at the authorization
/// server (with `secret`), `host-at-idp` at the identity provider, for the user's ID token.
fn client(fixture: &Fixture, secret: &str) -> OAuth {
    let idp = IdentityProvider::new(
        fixture.idp_url(),
        IDP_CLIENT.0,
        IdentityAssertion::IdToken(ID_TOKEN.into()),
    )
    .client_secret(IDP_CLIENT.1);
    let config = oauth::Config::new()
        .client_id("svc")
        .client_secret(secret)
        .identity_provider(idp);
    OAuth::new("guarded", &fixture.mcp_url(), config).unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cross_app_access_exchanges_the_id_token_then_presents_the_id_jag() {
    let fixture = serve(Knobs::default()).await;
    let auth = client(&fixture, "svc-secret");
    let (rt, server) = crate::oauth::runtime(&fixture, &auth).await;
    let text = server.call_tool("whoami", json!({})).await.unwrap().text();
    assert_eq!(text, "scopes: read");
    rt.shutdown().await;

    let exchanges = fixture.requests("/idp/token");
    assert_eq!(exchanges.len(), 1);
    let exchange = &exchanges[0].params;
    assert_eq!(
        exchange["audience"],
        fixture.issuer(),
        "the server's issuer"
    );
    assert_eq!(exchange["resource"], fixture.mcp_url());
    assert_eq!(exchange["scope"], "read", "the challenge's scope");
    let grants = fixture.grants(JWT_BEARER);
    assert_eq!(grants.len(), 1);
    assert!(grants[0].params["assertion"].starts_with("jag-"));
    assert_eq!(grants[0].params["resource"], fixture.mcp_url());
    assert!(
        grants[0]
            .authorization
            .as_deref()
            .is_some_and(|a| a.starts_with("Basic ")),
        "client_secret_basic as the server's metadata allows"
    );
    assert!(fixture.requests("/as/authorize").is_empty());
    assert!(fixture.requests("/as/register").is_empty());

    // A new token means a new ID-JAG: the fixture takes each one only once.
    auth.login().await.unwrap();
    assert_eq!(fixture.requests("/idp/token").len(), 2);
    let grants = fixture.grants(JWT_BEARER);
    assert_eq!(grants.len(), 2);
    assert_ne!(grants[0].params["assertion"], grants[1].params["assertion"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cross_app_access_needs_neither_pkce_nor_an_authorization_endpoint() {
    // An authorization server for the JWT bearer grant alone has no use for either.
    let fixture = serve(Knobs {
        metadata_patch: Some(json!({
            "authorization_endpoint": null,
            "code_challenge_methods_supported": null,
            "grant_types_supported": [JWT_BEARER],
        })),
        ..Knobs::default()
    })
    .await;
    client(&fixture, "svc-secret").login().await.unwrap();
    assert_eq!(fixture.grants(JWT_BEARER).len(), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn identity_provider_refusal_is_a_typed_error_naming_server_and_step() {
    let fixture = serve(Knobs {
        idp_refusal: Some("access_denied"),
        ..Knobs::default()
    })
    .await;
    let error = client(&fixture, "svc-secret").login().await.unwrap_err();
    assert!(
        matches!(&error, OAuthError::Refused { step: Step::TokenExchange, error, .. } if error == "access_denied"),
        "{error:?}"
    );
    let message = error.to_string();
    assert!(
        message.starts_with("guarded: token exchange at the identity provider"),
        "{message}"
    );
    assert!(
        !message.contains(ID_TOKEN) && !message.contains(IDP_CLIENT.1),
        "{message}"
    );
    assert!(
        fixture.grants(JWT_BEARER).is_empty(),
        "no grant without an id-jag"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn token_exchange_answer_that_is_not_an_id_jag_is_refused() {
    let bodies = [
        json!({"issued_token_type": "urn:ietf:params:oauth:token-type:id-jag", "token_type": "N_A"}),
        json!({"access_token": "at-1", "issued_token_type": "urn:ietf:params:oauth:token-type:access_token", "token_type": "Bearer"}),
        json!({"access_token": "at-1", "token_type": "Bearer"}),
    ];
    for body in bodies {
        let fixture = serve(Knobs {
            idp_body: Some(body.clone()),
            ..Knobs::default()
        })
        .await;
        let error = client(&fixture, "svc-secret").login().await.unwrap_err();
        assert!(
            matches!(
                error,
                OAuthError::BadTokenResponse {
                    step: Step::TokenExchange,
                    ..
                }
            ),
            "{body}: {error:?}"
        );
        assert!(!error.to_string().contains("at-1"), "{error}");
        assert!(
            fixture.grants(JWT_BEARER).is_empty(),
            "{body}: nothing presented"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn authorization_server_without_the_jwt_bearer_grant_is_refused_before_the_exchange() {
    let fixture = serve(Knobs {
        metadata_patch: Some(json!({"grant_types_supported": ["authorization_code"]})),
        ..Knobs::default()
    })
    .await;
    let error = client(&fixture, "svc-secret").login().await.unwrap_err();
    assert!(
        matches!(&error, OAuthError::GrantUnsupported { grant, .. } if grant == JWT_BEARER),
        "{error:?}"
    );
    assert!(
        fixture.requests("/idp/token").is_empty(),
        "the user's assertion is not spent"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn authorization_server_refusal_names_the_jwt_bearer_step() {
    let fixture = serve(Knobs::default()).await;
    let error = client(&fixture, "wrong-secret").login().await.unwrap_err();
    assert!(
        matches!(&error, OAuthError::Refused { step: Step::JwtBearer, error, .. } if error == "invalid_client"),
        "{error:?}"
    );
    assert!(!error.to_string().contains("jag-"), "{error}");
    assert_eq!(fixture.requests("/idp/token").len(), 1);
}

#[test]
fn cross_app_access_needs_a_client_id() {
    let idp = IdentityProvider::new(
        "https://idp.example/token",
        IDP_CLIENT.0,
        IdentityAssertion::IdToken(ID_TOKEN.into()),
    );
    let config = oauth::Config::new().identity_provider(idp);
    let error = OAuth::new("guarded", "https://mcp.example/mcp", config).unwrap_err();
    assert!(
        matches!(error, OAuthError::InvalidConfig { .. }),
        "{error:?}"
    );
    let config = oauth::Config::new()
        .client_id("svc")
        .grant(oauth::GrantType::CrossAppAccess);
    let error = OAuth::new("guarded", "https://mcp.example/mcp", config).unwrap_err();
    assert!(error.to_string().contains("identity provider"), "{error}");
}
