//! The client handlers the server-everything tests install: fixed roots, a sampler that
//! answers from a named model, and an elicitation handler for forms and URLs. Each records
//! what the server asked, so the tests check the server's real requests, not only its
//! answers.

use std::sync::{Arc, Mutex};

use serde_json::json;
use switchboard::client::{
    BoxFuture, ClientHandlers, ElicitationHandler, ElicitationRequest, ElicitationResponse, Root,
    RootsHandler, SamplingHandler, SamplingRequest, SamplingResponse, UrlElicitation,
};
use switchboard::model::Content;

/// The model name the sampler answers with.
pub(super) const MODEL: &str = "switchboard-interop-model";

/// What the sampler's answer says, before the first message's text.
pub(super) const SAMPLED_PREFIX: &str = "sampled by switchboard: ";

/// The roots the runtime offers: one named, one not.
pub(super) fn roots() -> Vec<Root> {
    vec![
        Root::new("file:///switchboard/interop/project").name("interop project"),
        Root::new("file:///switchboard/interop/unnamed"),
    ]
}

/// Every request the server sent the client, in order of arrival.
#[derive(Debug, Default)]
pub(super) struct Seen {
    pub(super) roots: usize,
    pub(super) sampling: Vec<SamplingRequest>,
    pub(super) forms: Vec<ElicitationRequest>,
    pub(super) urls: Vec<UrlElicitation>,
}

/// The recording handlers; clones share what they saw.
#[derive(Debug, Clone, Default)]
pub(super) struct Recorder(Arc<Mutex<Seen>>);

impl Recorder {
    /// Roots, sampling and elicitation (form and URL mode), all recording into `self`.
    pub(super) fn handlers(&self) -> ClientHandlers {
        ClientHandlers::new()
            .roots(self.clone())
            .sampling(self.clone())
            .elicitation(self.clone())
    }

    /// Looks at what was seen so far.
    pub(super) fn seen<R>(&self, look: impl FnOnce(&Seen) -> R) -> R {
        look(&self.0.lock().unwrap())
    }
}

impl RootsHandler for Recorder {
    fn list_roots(&self, _server: &str) -> BoxFuture<Result<Vec<Root>, String>> {
        self.0.lock().unwrap().roots += 1;
        Box::pin(async { Ok(roots()) })
    }
}

impl SamplingHandler for Recorder {
    fn create_message(
        &self,
        _server: &str,
        request: SamplingRequest,
    ) -> BoxFuture<Result<SamplingResponse, String>> {
        // Answers with the first message's text, so the tool result shows it went through.
        let prompt = request
            .messages
            .first()
            .and_then(|m| m.content.first())
            .and_then(|c| match c {
                Content::Text(text) => Some(text.text.clone()),
                _ => None,
            })
            .unwrap_or_default();
        self.0.lock().unwrap().sampling.push(request);
        let response =
            SamplingResponse::new(MODEL, [Content::text(SAMPLED_PREFIX.to_owned() + &prompt)])
                .stop_reason("endTurn");
        Box::pin(async move { Ok(response) })
    }
}

impl ElicitationHandler for Recorder {
    /// Accepts the form with its defaults and a name (as `interop::AcceptWithName`).
    fn elicit(
        &self,
        _server: &str,
        request: ElicitationRequest,
    ) -> BoxFuture<Result<ElicitationResponse, String>> {
        let mut content = request.defaults();
        content.insert("name".into(), json!("Switchboard"));
        self.0.lock().unwrap().forms.push(request);
        Box::pin(async move { Ok(ElicitationResponse::accept(content)) })
    }

    fn handles_url(&self) -> bool {
        true
    }

    fn elicit_url(
        &self,
        _server: &str,
        request: UrlElicitation,
    ) -> BoxFuture<Result<ElicitationResponse, String>> {
        self.0.lock().unwrap().urls.push(request);
        Box::pin(async { Ok(ElicitationResponse::accept_url()) })
    }
}
