//! `requestState` the server can trust: what a 2026-07-28 input-required round hands the
//! client is sealed with an HMAC-SHA256 under a key only the server holds, so a state the
//! client altered (or made up) is refused (-32602) rather than believed.
//!
//! The sealed text is `hex(payload) "." hex(tag)`: opaque to the client, and checked in
//! constant time.

use ring::hmac;
use serde_json::Value;

/// Seals and opens request states under one key.
pub(crate) struct Sealer {
    key: hmac::Key,
}

impl Sealer {
    /// A sealer with a fresh random key, or with `secret` (replicas that share it accept
    /// each other's states).
    pub(crate) fn new(secret: Option<&[u8]>) -> Self {
        let key = match secret {
            Some(secret) => hmac::Key::new(hmac::HMAC_SHA256, secret),
            None => {
                let rng = ring::rand::SystemRandom::new();
                match hmac::Key::generate(hmac::HMAC_SHA256, &rng) {
                    Ok(key) => key,
                    // No randomness: a key from the clock and the address space still differs
                    // per process, which is all an ephemeral key needs.
                    Err(_) => {
                        let fallback = format!("{:?}{:p}", std::time::SystemTime::now(), &rng);
                        hmac::Key::new(hmac::HMAC_SHA256, fallback.as_bytes())
                    }
                }
            }
        };
        Sealer { key }
    }

    pub(crate) fn seal(&self, payload: &Value) -> String {
        let bytes = serde_json::to_vec(payload).unwrap_or_default();
        let tag = hmac::sign(&self.key, &bytes);
        format!("{}.{}", hex::encode(&bytes), hex::encode(tag.as_ref()))
    }

    /// The payload, if `sealed` is what [`seal`](Self::seal) made.
    pub(crate) fn open(&self, sealed: &str) -> Option<Value> {
        let (payload, tag) = sealed.split_once('.')?;
        let (payload, tag) = (hex::decode(payload).ok()?, hex::decode(tag).ok()?);
        hmac::verify(&self.key, &payload, &tag).ok()?;
        serde_json::from_slice(&payload).ok()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_sealed_state_opens_and_a_tampered_one_does_not() {
        let sealer = Sealer::new(None);
        let sealed = sealer.seal(&json!({"round": 1}));
        assert_eq!(sealer.open(&sealed), Some(json!({"round": 1})));
        let mut tampered = sealed.clone().into_bytes();
        tampered[1] = if tampered[1] == b'0' { b'1' } else { b'0' };
        assert_eq!(sealer.open(&String::from_utf8(tampered).unwrap()), None);
        assert_eq!(sealer.open("{\"round\":2}"), None);
        assert_eq!(Sealer::new(None).open(&sealed), None, "another key");
        let shared = Sealer::new(Some(b"secret"));
        assert!(Sealer::new(Some(b"secret"))
            .open(&shared.seal(&json!(1)))
            .is_some());
    }
}
