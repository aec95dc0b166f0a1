//! Sealed session ids: a handshake-era session that any replica can serve.
//!
//! With session keys configured, the `Mcp-Session-Id` an `initialize` answer carries is the
//! session's own state (what the service's [`session_state`] gives: the negotiated version
//! and the client's capabilities), encrypted and authenticated with ChaCha20-Poly1305 under
//! the first key. A replica that has never seen the id opens it with any of its keys and
//! rebuilds the session ([`restore`]), so a plain round-robin load balancer needs no session
//! table and no affinity for requests and their answers. A tampered or foreign id opens
//! under no key and is an unknown session (404). Keys rotate by putting the new one first
//! and keeping the old ones after it until the sessions they sealed are gone.
//!
//! The id is `s1.` and the hex of nonce, ciphertext and tag: visible ASCII, as the spec asks
//! of a session id, and opaque to the client.
//!
//! [`session_state`]: super::super::Service::session_state
//! [`restore`]: super::super::Service::restore

use std::fmt;

use ring::aead::{self, Aad, LessSafeKey, Nonce, UnboundKey, CHACHA20_POLY1305, NONCE_LEN};
use ring::digest;
use serde_json::{json, Value};

const PREFIX: &str = "s1.";
/// Binds a ciphertext to its use: a sealed `requestState` (or anything else sealed under
/// the same secret) never opens as a session id.
const AAD: &[u8] = b"mcp-session-id/1";
/// The largest state sealed: an id travels in every request's headers, and proxies refuse
/// headers beyond a few KiB (nginx's default buffer is 8 KiB for the whole line).
const MAX_STATE: usize = 2048;

/// Seals with the first key, opens with any.
pub(crate) struct SessionSeal {
    keys: Vec<LessSafeKey>,
}

impl fmt::Debug for SessionSeal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // Never the keys themselves: configs are logged.
        f.debug_struct("SessionSeal")
            .field("keys", &self.keys.len())
            .finish()
    }
}

impl SessionSeal {
    /// A seal from secrets of any length (each is hashed to a 256-bit key); `None` for none.
    pub(crate) fn new<K: AsRef<[u8]>>(secrets: &[K]) -> Option<Self> {
        let keys: Vec<LessSafeKey> = secrets
            .iter()
            .filter_map(|secret| {
                let key = digest::digest(&digest::SHA256, secret.as_ref());
                UnboundKey::new(&CHACHA20_POLY1305, key.as_ref())
                    .ok()
                    .map(LessSafeKey::new)
            })
            .collect();
        (!keys.is_empty()).then_some(SessionSeal { keys })
    }

    /// The id carrying `state`, or `None` if it is too large to travel in a header (or the
    /// system has no randomness for a nonce).
    pub(crate) fn seal(&self, state: &Value) -> Option<String> {
        let mut payload = serde_json::to_vec(&json!({"state": state})).ok()?;
        if payload.len() > MAX_STATE {
            return None;
        }
        let mut nonce = [0u8; NONCE_LEN];
        getrandom::getrandom(&mut nonce).ok()?;
        self.keys[0]
            .seal_in_place_append_tag(
                Nonce::assume_unique_for_key(nonce),
                Aad::from(AAD),
                &mut payload,
            )
            .ok()?;
        Some(format!(
            "{PREFIX}{}{}",
            hex::encode(nonce),
            hex::encode(&payload)
        ))
    }

    /// The state `id` carries, if one of the keys sealed it.
    pub(crate) fn open(&self, id: &str) -> Option<Value> {
        let bytes = hex::decode(id.strip_prefix(PREFIX)?).ok()?;
        if bytes.len() < NONCE_LEN + aead::MAX_TAG_LEN || bytes.len() > 2 * MAX_STATE {
            return None;
        }
        let (nonce, sealed) = bytes.split_at(NONCE_LEN);
        self.keys.iter().find_map(|key| {
            let nonce = Nonce::try_assume_unique_for_key(nonce).ok()?;
            let mut sealed = sealed.to_vec();
            let plain = key.open_in_place(nonce, Aad::from(AAD), &mut sealed).ok()?;
            let mut payload: Value = serde_json::from_slice(plain).ok()?;
            Some(payload.get_mut("state")?.take())
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_id_opens_under_its_keys_and_a_tampered_or_foreign_one_does_not() {
        let state = json!({"protocolVersion": "2025-11-25", "capabilities": {"sampling": {}}});
        let seal = SessionSeal::new(&["one"]).unwrap();
        let id = seal.seal(&state).unwrap();
        assert!(id.starts_with("s1.") && id.bytes().all(|b| (0x21..=0x7e).contains(&b)));
        assert_eq!(seal.open(&id), Some(state.clone()));
        assert_ne!(
            seal.seal(&state),
            Some(id.clone()),
            "a fresh nonce each time"
        );
        for i in PREFIX.len()..id.len() {
            let mut tampered = id.clone().into_bytes();
            tampered[i] = if tampered[i] == b'0' { b'1' } else { b'0' };
            let tampered = String::from_utf8(tampered).unwrap();
            assert_eq!(seal.open(&tampered), None, "byte {i} changed");
        }
        assert_eq!(SessionSeal::new(&["two"]).unwrap().open(&id), None);
        // Rotation: the new key seals, the old one still opens.
        let rotated = SessionSeal::new(&["two", "one"]).unwrap();
        assert_eq!(rotated.open(&id), Some(state.clone()));
        assert_eq!(seal.open(&rotated.seal(&state).unwrap()), None);
        assert_eq!(seal.open("s1.zz"), None);
        assert_eq!(seal.open(""), None);
        assert!(SessionSeal::new::<&str>(&[]).is_none());
    }

    #[test]
    fn a_state_too_large_for_a_header_is_not_sealed() {
        let seal = SessionSeal::new(&["k"]).unwrap();
        assert!(seal.seal(&json!({"x": "y".repeat(MAX_STATE)})).is_none());
    }
}
