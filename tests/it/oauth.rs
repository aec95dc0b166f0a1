//! OAuth against a scripted authorization server and protected MCP server on 127.0.0.1
//! (`oauth_fixture`): login through the runtime, refresh before expiry and after a 401,
//! one refresh for many concurrent calls, step-up on 403, and the refusals (revoked refresh
//! token, tampered `state`, wrong `iss`, bad metadata, token response without a token).

use std::sync::Arc;
use std::time::Duration;

use serde_json::json;
use switchboard::oauth::{self, Error as OAuthError, OAuth, Step};
use switchboard::transport::HttpKind;
use switchboard::{Liveness, RestartPolicy, Runtime, ServerConfig, ServerHandle};

use crate::oauth_fixture::{serve, Fixture, Knobs};

/// The OAuth client of the fixture's MCP server, approving headlessly.
pub(crate) fn client(fixture: &Fixture) -> OAuth {
    let authorizer = oauth::Headless::new("http://127.0.0.1/callback").unwrap();
    OAuth::new(
        "guarded",
        &fixture.mcp_url(),
        oauth::Config::new().authorizer(Arc::new(authorizer)),
    )
    .unwrap()
}

/// A runtime with the fixture's server behind `auth`, ready.
pub(crate) async fn runtime(fixture: &Fixture, auth: &OAuth) -> (Runtime, ServerHandle) {
    let rt = Runtime::builder()
        .server(
            "guarded",
            ServerConfig::http(fixture.mcp_url(), HttpKind::StreamableHttp)
                .auth(Arc::new(auth.clone()))
                .restart(RestartPolicy::off())
                .liveness(Liveness::off())
                .timeout(Duration::from_secs(20)),
        )
        .build()
        .await
        .unwrap();
    let server = rt.server("guarded").unwrap();
    assert!(server.status().is_ready(), "{:?}", server.status().state);
    (rt, server)
}

async fn whoami(server: &ServerHandle) -> String {
    server.call_tool("whoami", json!({})).await.unwrap().text()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn login_discovers_registers_and_authorizes_with_pkce_and_resource() {
    let fixture = serve(Knobs::default()).await;
    let auth = client(&fixture);
    let (rt, server) = runtime(&fixture, &auth).await;
    assert_eq!(whoami(&server).await, "scopes: read");

    // Discovery came from the 401's challenge, then registration, one authorization.
    assert_eq!(
        fixture
            .requests("/.well-known/oauth-protected-resource/mcp")
            .len(),
        1
    );
    assert_eq!(
        fixture
            .requests("/.well-known/oauth-authorization-server/as")
            .len(),
        1
    );
    assert_eq!(fixture.requests("/as/register").len(), 1);
    let authorize = fixture.requests("/as/authorize");
    assert_eq!(authorize.len(), 1);
    let query = &authorize[0].params;
    assert_eq!(query["client_id"], "dyn-client");
    assert_eq!(query["code_challenge_method"], "S256");
    assert_eq!(query["scope"], "read", "the challenge's scope");
    assert_eq!(query["resource"], fixture.mcp_url());
    // The fixture checks the verifier against the challenge and the resource.
    let codes = fixture.grants("authorization_code");
    assert_eq!(codes.len(), 1);
    assert_eq!(codes[0].params["resource"], fixture.mcp_url());
    // Every MCP request after the first 401 carried the token.
    let mcp = fixture.requests("/mcp");
    assert!(mcp[0].authorization.is_none());
    assert!(mcp[1..]
        .iter()
        .filter(|s| s.method == hyper::Method::POST)
        .all(|s| s.authorization.as_deref() == Some("Bearer tok-1")));
    rt.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn token_due_to_expire_is_refreshed_before_use() {
    let fixture = serve(Knobs {
        expires_in: Some(8),
        ..Knobs::default()
    })
    .await;
    let auth = client(&fixture);
    let (rt, server) = runtime(&fixture, &auth).await;
    assert_eq!(whoami(&server).await, "scopes: read");
    assert!(fixture.grants("refresh_token").is_empty());
    // Refreshed at three quarters of its 8 s life (long beside a loaded machine's start-up),
    // before the server would refuse it.
    tokio::time::sleep(Duration::from_millis(6200)).await;
    assert_eq!(whoami(&server).await, "scopes: read");
    assert_eq!(fixture.grants("refresh_token").len(), 1);
    let last = fixture.requests("/mcp").pop().unwrap();
    assert_eq!(last.authorization.as_deref(), Some("Bearer tok-2"));
    let refused = fixture
        .requests("/mcp")
        .iter()
        .filter(|s| {
            s.authorization.as_deref() == Some("Bearer tok-1")
                && s.rpc.as_deref() == Some("tools/call")
        })
        .count();
    assert_eq!(refused, 1, "only the first call used the first token");
    assert_eq!(
        fixture.requests("/as/authorize").len(),
        1,
        "no second login"
    );
    rt.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn refused_token_is_refreshed_once_for_fifty_concurrent_calls() {
    let fixture = serve(Knobs {
        refresh_delay: Duration::from_millis(300),
        ..Knobs::default()
    })
    .await;
    let auth = client(&fixture);
    let (rt, server) = runtime(&fixture, &auth).await;
    assert_eq!(whoami(&server).await, "scopes: read");

    // The server stops accepting the token: every call gets a 401, one refresh serves all.
    fixture.invalidate_access_tokens();
    let calls: Vec<_> = (0..50)
        .map(|_| {
            let server = server.clone();
            tokio::spawn(async move { server.call_tool("whoami", json!({})).await })
        })
        .collect();
    for call in calls {
        assert_eq!(call.await.unwrap().unwrap().text(), "scopes: read");
    }
    assert_eq!(
        fixture.grants("refresh_token").len(),
        1,
        "exactly one refresh"
    );
    assert_eq!(
        fixture.requests("/as/authorize").len(),
        1,
        "no second login"
    );
    rt.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fifty_calls_on_an_expiring_token_make_one_refresh() {
    let fixture = serve(Knobs {
        expires_in: Some(8),
        refresh_delay: Duration::from_millis(300),
        ..Knobs::default()
    })
    .await;
    let auth = client(&fixture);
    let (rt, server) = runtime(&fixture, &auth).await;
    assert_eq!(whoami(&server).await, "scopes: read");
    tokio::time::sleep(Duration::from_millis(6200)).await;
    let calls: Vec<_> = (0..50)
        .map(|_| {
            let server = server.clone();
            tokio::spawn(async move { server.call_tool("whoami", json!({})).await })
        })
        .collect();
    for call in calls {
        call.await.unwrap().unwrap();
    }
    assert_eq!(
        fixture.grants("refresh_token").len(),
        1,
        "exactly one refresh"
    );
    rt.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn insufficient_scope_authorizes_again_with_the_wider_scope() {
    let fixture = serve(Knobs {
        call_needs: Some("write"),
        ..Knobs::default()
    })
    .await;
    let auth = client(&fixture);
    let (rt, server) = runtime(&fixture, &auth).await;
    assert_eq!(whoami(&server).await, "scopes: read write");
    let authorize = fixture.requests("/as/authorize");
    assert_eq!(authorize.len(), 2);
    assert_eq!(authorize[0].params["scope"], "read");
    assert_eq!(authorize[1].params["scope"], "read write");
    rt.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_new_authorization_server_means_a_new_registration() {
    let fixture = serve(Knobs::default()).await;
    let auth = client(&fixture);
    let (rt, server) = runtime(&fixture, &auth).await;
    assert_eq!(whoami(&server).await, "scopes: read");

    // The server now names another authorization server and refuses the old tokens: the
    // client looks again, registers there, and never shows it the first one's client id.
    fixture.knobs.lock().unwrap().migrated = true;
    assert_eq!(whoami(&server).await, "scopes: read");
    assert_eq!(fixture.requests("/as2/register").len(), 1);
    let authorize = fixture.requests("/as2/authorize");
    assert_eq!(authorize.len(), 1);
    assert_eq!(authorize[0].params["client_id"], "dyn-client-2");
    assert!(
        fixture.grants("refresh_token").is_empty(),
        "the first server's refresh token is not used"
    );
    let stored = auth.credentials().await.unwrap();
    assert_eq!(stored.client.unwrap().issuer, fixture.issuer());
    rt.shutdown().await;
}

/// The service client `svc` with the client credentials grant: no authorizer, no browser.
async fn client_credentials_call(fixture: &Fixture, config: oauth::Config) -> String {
    let config = config
        .grant(oauth::GrantType::ClientCredentials)
        .client_id("svc");
    let auth = OAuth::new("guarded", &fixture.mcp_url(), config).unwrap();
    let (rt, server) = runtime(fixture, &auth).await;
    let text = whoami(&server).await;
    rt.shutdown().await;
    text
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn client_credentials_with_client_secret_basic() {
    let fixture = serve(Knobs::default()).await;
    let config = oauth::Config::new().client_secret("svc-secret");
    assert_eq!(
        client_credentials_call(&fixture, config).await,
        "scopes: read"
    );
    let grants = fixture.grants("client_credentials");
    assert_eq!(grants.len(), 1);
    assert_eq!(grants[0].params["scope"], "read", "the challenge's scope");
    assert_eq!(grants[0].params["resource"], fixture.mcp_url());
    assert!(fixture.requests("/as/authorize").is_empty());
    assert!(fixture.requests("/as/register").is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn client_credentials_with_private_key_jwt() {
    use base64::Engine;
    use ring::signature::{EcdsaKeyPair, KeyPair, ECDSA_P256_SHA256_FIXED_SIGNING};
    let rng = ring::rand::SystemRandom::new();
    let pkcs8 = EcdsaKeyPair::generate_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, &rng).unwrap();
    let pair =
        EcdsaKeyPair::from_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, pkcs8.as_ref(), &rng).unwrap();
    let pem = format!(
        "-----BEGIN PRIVATE KEY-----\n{}\n-----END PRIVATE KEY-----\n",
        base64::engine::general_purpose::STANDARD.encode(pkcs8.as_ref())
    );
    let fixture = serve(Knobs {
        svc_key: Some(pair.public_key().as_ref().to_vec()),
        ..Knobs::default()
    })
    .await;
    let key = oauth::PrivateKey::from_pem(pem, oauth::SigningAlgorithm::Es256);
    let config = oauth::Config::new().private_key(key);
    assert_eq!(
        client_credentials_call(&fixture, config).await,
        "scopes: read"
    );
    let grants = fixture.grants("client_credentials");
    assert_eq!(grants.len(), 1);
    assert!(grants[0].authorization.is_none(), "no secret is sent");

    // A key the server does not know is refused, with the step named.
    let other = EcdsaKeyPair::generate_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, &rng).unwrap();
    let pem = format!(
        "-----BEGIN PRIVATE KEY-----\n{}\n-----END PRIVATE KEY-----\n",
        base64::engine::general_purpose::STANDARD.encode(other.as_ref())
    );
    let config = oauth::Config::new()
        .grant(oauth::GrantType::ClientCredentials)
        .client_id("svc")
        .private_key(oauth::PrivateKey::from_pem(
            pem,
            oauth::SigningAlgorithm::Es256,
        ));
    let error = OAuth::new("guarded", &fixture.mcp_url(), config)
        .unwrap()
        .login()
        .await
        .unwrap_err();
    assert!(
        matches!(&error, OAuthError::Refused { step: Step::ClientCredentials, error, .. } if error == "invalid_client"),
        "{error:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn revoked_refresh_token_is_a_typed_error_and_forgotten() {
    let fixture = serve(Knobs::default()).await;
    let auth = client(&fixture);
    auth.login().await.unwrap();
    auth.refresh().await.unwrap();
    fixture.knobs.lock().unwrap().refresh_revoked = true;
    let error = auth.refresh().await.unwrap_err();
    match &error {
        OAuthError::Refused { step, error, .. } => {
            assert_eq!(*step, Step::Refresh);
            assert_eq!(error, "invalid_grant");
        }
        other => panic!("not a refused refresh: {other:?}"),
    }
    assert!(!error.to_string().contains("ref-"), "{error}");
    assert!(auth.credentials().await.unwrap().tokens.is_none());
    assert!(matches!(
        auth.refresh().await,
        Err(OAuthError::NoRefreshToken { .. })
    ));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tampered_state_is_refused_before_any_token_request() {
    let fixture = serve(Knobs {
        redirect_state: Some("forged"),
        ..Knobs::default()
    })
    .await;
    let error = client(&fixture).login().await.unwrap_err();
    assert!(
        matches!(error, OAuthError::StateMismatch { .. }),
        "{error:?}"
    );
    assert!(fixture.requests("/as/token").is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_redirect_with_an_error_is_refused_naming_the_step_and_the_error() {
    let fixture = serve(Knobs {
        redirect_error: Some("access_denied"),
        ..Knobs::default()
    })
    .await;
    let error = client(&fixture).login().await.unwrap_err();
    match &error {
        OAuthError::Refused {
            server,
            step: Step::Authorization,
            error: code,
            description,
        } => {
            assert_eq!(server.as_ref(), "guarded");
            assert_eq!(code, "access_denied");
            assert_eq!(description.as_deref(), Some("the user declined"));
        }
        other => panic!("{other:?}"),
    }
    let text = error.to_string();
    assert!(
        text.contains("guarded") && text.contains("access_denied"),
        "{text}"
    );
    assert!(fixture.requests("/as/token").is_empty(), "no token request");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn wrong_or_missing_iss_is_refused() {
    let fixture = serve(Knobs {
        redirect_iss: Some("http://evil.example".into()),
        ..Knobs::default()
    })
    .await;
    let error = client(&fixture).login().await.unwrap_err();
    assert!(
        matches!(
            error,
            OAuthError::IssuerMismatch {
                step: Step::Authorization,
                ..
            }
        ),
        "{error:?}"
    );

    // A server that promises `iss` (RFC 9207) and leaves it out is refused too.
    let fixture = serve(Knobs {
        metadata_patch: Some(json!({"authorization_response_iss_parameter_supported": true})),
        ..Knobs::default()
    })
    .await;
    let error = client(&fixture).login().await.unwrap_err();
    assert!(
        matches!(error, OAuthError::IssuerMismatch { .. }),
        "{error:?}"
    );
    assert!(fixture.requests("/as/token").is_empty());

    // The right one is accepted.
    let fixture = serve(Knobs::default()).await;
    fixture.knobs.lock().unwrap().redirect_iss = Some(fixture.issuer());
    client(&fixture).login().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_authorization_server_metadata_is_refused() {
    async fn login_with(knobs: Knobs) -> (Arc<Fixture>, OAuthError) {
        let fixture = serve(knobs).await;
        let error = client(&fixture).login().await.unwrap_err();
        (fixture, error)
    }
    let (_, e) = login_with(Knobs {
        metadata_body: Some("<html>not json</html>".into()),
        ..Knobs::default()
    })
    .await;
    assert!(
        matches!(
            e,
            OAuthError::BadMetadata {
                step: Step::ServerMetadata,
                ..
            }
        ),
        "{e:?}"
    );
    let (_, e) = login_with(Knobs {
        metadata_patch: Some(json!({"token_endpoint": null})),
        ..Knobs::default()
    })
    .await;
    assert!(
        matches!(&e, OAuthError::BadMetadata { reason, .. } if reason.contains("token_endpoint")),
        "{e:?}"
    );
    let (_, e) = login_with(Knobs {
        metadata_patch: Some(json!({"issuer": "http://127.0.0.1:1/other"})),
        ..Knobs::default()
    })
    .await;
    assert!(
        matches!(
            e,
            OAuthError::IssuerMismatch {
                step: Step::ServerMetadata,
                ..
            }
        ),
        "{e:?}"
    );
    let (fixture, e) = login_with(Knobs {
        metadata_patch: Some(json!({"code_challenge_methods_supported": null})),
        ..Knobs::default()
    })
    .await;
    assert!(matches!(e, OAuthError::PkceUnsupported { .. }), "{e:?}");
    assert!(
        fixture.requests("/as/authorize").is_empty(),
        "no authorization without PKCE"
    );
    assert!(
        fixture.requests("/as/register").is_empty(),
        "nor registration"
    );
    let (fixture, e) = login_with(Knobs {
        metadata_patch: Some(json!({"authorization_endpoint": null})),
        ..Knobs::default()
    })
    .await;
    assert!(
        matches!(&e, OAuthError::BadMetadata { reason, .. } if reason.contains("authorization_endpoint")),
        "{e:?}"
    );
    assert!(fixture.requests("/as/register").is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn token_response_without_access_token_is_refused() {
    let fixture = serve(Knobs {
        token_body: Some(json!({"token_type": "Bearer", "expires_in": 60})),
        ..Knobs::default()
    })
    .await;
    let error = client(&fixture).login().await.unwrap_err();
    assert!(
        matches!(
            error,
            OAuthError::BadTokenResponse {
                step: Step::CodeExchange,
                ..
            }
        ),
        "{error:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn oauth_failure_fails_the_handshake_with_its_reason() {
    let fixture = serve(Knobs {
        metadata_patch: Some(json!({"code_challenge_methods_supported": ["plain"]})),
        ..Knobs::default()
    })
    .await;
    let auth = client(&fixture);
    let rt = Runtime::builder()
        .server(
            "guarded",
            ServerConfig::http(fixture.mcp_url(), HttpKind::StreamableHttp)
                .auth(Arc::new(auth))
                .restart(RestartPolicy::off())
                .liveness(Liveness::off()),
        )
        .build()
        .await
        .unwrap();
    let server = rt.server("guarded").unwrap();
    let state = format!("{:?}", server.status().state);
    assert!(!server.status().is_ready(), "{state}");
    assert!(state.contains("pkce"), "{state}");
    rt.shutdown().await;
}
