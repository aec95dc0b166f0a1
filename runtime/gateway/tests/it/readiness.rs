//! What a gateway calls ready, beside an upstream that cannot start: by default it is (fail
//! open), with `Readiness::All` it is not, and with `Readiness::Servers` it is as long as
//! the named ones are ready.

use switchboard::{Runtime, ServerConfig};
use switchboard_gateway::{Gateway, Readiness};

use crate::support::demo;

#[tokio::test]
async fn an_upstream_that_cannot_start_is_ready_only_for_who_does_not_require_it() {
    let upstream = Runtime::builder()
        .server("demo", demo(&[]))
        .server(
            "broken",
            ServerConfig::stdio("/nonexistent/switchboard-no-such-server"),
        )
        .build()
        .await
        .expect("the upstream runtime");
    let broken = upstream.server("broken").expect("broken").status();
    assert!(!broken.is_ready(), "{broken:?}");
    let gateway = Gateway::new(upstream.clone());
    assert!(gateway.is_ready(), "fail open by default");
    assert!(gateway.is_ready_for(&Readiness::Started));
    assert!(!gateway.is_ready_for(&Readiness::All));
    assert!(gateway.is_ready_for(&Readiness::servers(["demo"])));
    assert!(!gateway.is_ready_for(&Readiness::servers(["demo", "broken"])));
    assert!(!gateway.is_ready_for(&Readiness::servers(["elsewhere"])));
    assert_eq!(gateway.in_flight(), 0);
    upstream.shutdown().await;
}
