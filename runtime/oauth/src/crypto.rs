//! The few cryptographic pieces OAuth needs, on `ring`: random `state` and PKCE verifiers,
//! the S256 challenge (RFC 7636), and signed JWT client assertions for `private_key_jwt`
//! (RFC 7523).

use std::fmt;
use std::time::{SystemTime, UNIX_EPOCH};

use base64::engine::general_purpose::{STANDARD, URL_SAFE_NO_PAD};
use base64::Engine;
use ring::rand::{SecureRandom, SystemRandom};
use ring::signature::{self, EcdsaKeyPair, RsaKeyPair};

/// `n` random bytes, base64url without padding.
pub(crate) fn random_string(n: usize) -> Result<String, String> {
    let mut bytes = vec![0u8; n];
    SystemRandom::new()
        .fill(&mut bytes)
        .map_err(|_| "the system random generator failed".to_owned())?;
    Ok(URL_SAFE_NO_PAD.encode(bytes))
}

/// A PKCE pair: the verifier kept for the token request, the challenge sent with the
/// authorization request.
pub(crate) struct Pkce {
    pub(crate) verifier: String,
    pub(crate) challenge: String,
}

impl fmt::Debug for Pkce {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Pkce").finish_non_exhaustive()
    }
}

impl Pkce {
    /// A fresh pair: 32 random bytes (a 43-character verifier, RFC 7636 §4.1).
    pub(crate) fn new() -> Result<Pkce, String> {
        let verifier = random_string(32)?;
        Ok(Pkce {
            challenge: s256(&verifier),
            verifier,
        })
    }
}

/// `BASE64URL(SHA256(verifier))`.
pub(crate) fn s256(verifier: &str) -> String {
    URL_SAFE_NO_PAD.encode(ring::digest::digest(
        &ring::digest::SHA256,
        verifier.as_bytes(),
    ))
}

/// The signature algorithm of a `private_key_jwt` key.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum SigningAlgorithm {
    /// ECDSA with P-256 and SHA-256.
    #[default]
    Es256,
    /// RSASSA-PKCS1-v1_5 with SHA-256.
    Rs256,
}

impl SigningAlgorithm {
    /// `ES256` or `RS256`, case-insensitive.
    pub fn parse(name: &str) -> Option<SigningAlgorithm> {
        match name.to_ascii_uppercase().as_str() {
            "ES256" => Some(SigningAlgorithm::Es256),
            "RS256" => Some(SigningAlgorithm::Rs256),
            _ => None,
        }
    }

    fn name(self) -> &'static str {
        match self {
            SigningAlgorithm::Es256 => "ES256",
            SigningAlgorithm::Rs256 => "RS256",
        }
    }
}

/// A private key for `private_key_jwt`: a PKCS#8 PEM (`-----BEGIN PRIVATE KEY-----`) and
/// its algorithm. `Debug` shows the algorithm only.
#[derive(Clone)]
pub struct PrivateKey {
    pem: String,
    algorithm: SigningAlgorithm,
}

impl fmt::Debug for PrivateKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PrivateKey")
            .field("algorithm", &self.algorithm)
            .finish_non_exhaustive()
    }
}

impl PrivateKey {
    /// A PKCS#8 PEM key for `algorithm`; checked when first used.
    pub fn from_pem(pem: impl Into<String>, algorithm: SigningAlgorithm) -> PrivateKey {
        PrivateKey {
            pem: pem.into(),
            algorithm,
        }
    }

    /// A signed client assertion (RFC 7523 §3): `iss` and `sub` the client id, `aud` the
    /// authorization server, valid for five minutes, with a random `jti`.
    pub(crate) fn assertion(&self, client_id: &str, audience: &str) -> Result<String, String> {
        let der = pkcs8_der(&self.pem)?;
        let now = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(|d| d.as_secs())
            .unwrap_or(0);
        let header = serde_json::json!({"alg": self.algorithm.name(), "typ": "JWT"});
        let claims = serde_json::json!({
            "iss": client_id,
            "sub": client_id,
            "aud": audience,
            "iat": now,
            "exp": now + 300,
            "jti": random_string(16)?,
        });
        let signing_input = format!(
            "{}.{}",
            URL_SAFE_NO_PAD.encode(header.to_string()),
            URL_SAFE_NO_PAD.encode(claims.to_string())
        );
        let rng = SystemRandom::new();
        let signature = match self.algorithm {
            SigningAlgorithm::Es256 => {
                let key = EcdsaKeyPair::from_pkcs8(
                    &signature::ECDSA_P256_SHA256_FIXED_SIGNING,
                    &der,
                    &rng,
                )
                .map_err(|e| format!("the private key is not a PKCS#8 P-256 key: {e}"))?;
                key.sign(&rng, signing_input.as_bytes())
                    .map_err(|_| "signing failed".to_owned())?
                    .as_ref()
                    .to_vec()
            }
            SigningAlgorithm::Rs256 => {
                let key = RsaKeyPair::from_pkcs8(&der)
                    .map_err(|e| format!("the private key is not a PKCS#8 RSA key: {e}"))?;
                let mut out = vec![0u8; key.public().modulus_len()];
                key.sign(
                    &signature::RSA_PKCS1_SHA256,
                    &rng,
                    signing_input.as_bytes(),
                    &mut out,
                )
                .map_err(|_| "signing failed".to_owned())?;
                out
            }
        };
        Ok(format!(
            "{signing_input}.{}",
            URL_SAFE_NO_PAD.encode(signature)
        ))
    }
}

/// The DER inside a `PRIVATE KEY` PEM block.
fn pkcs8_der(pem: &str) -> Result<Vec<u8>, String> {
    const BEGIN: &str = "-----BEGIN PRIVATE KEY-----";
    const END: &str = "-----END PRIVATE KEY-----";
    let start = pem
        .find(BEGIN)
        .ok_or_else(|| "the private key is not a PKCS#8 PEM (BEGIN PRIVATE KEY)".to_owned())?
        + BEGIN.len();
    let end = pem[start..]
        .find(END)
        .ok_or_else(|| "the private key PEM has no END line".to_owned())?
        + start;
    let body: String = pem[start..end]
        .chars()
        .filter(|c| !c.is_whitespace())
        .collect();
    STANDARD
        .decode(body)
        .map_err(|_| "the private key PEM is not valid base64".to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn s256_matches_rfc7636_appendix_b() {
        assert_eq!(
            s256("dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk"),
            "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM"
        );
    }

    #[test]
    fn pkce_pairs_are_fresh_and_consistent() {
        let a = Pkce::new().unwrap();
        let b = Pkce::new().unwrap();
        assert_eq!(a.verifier.len(), 43);
        assert_ne!(a.verifier, b.verifier);
        assert_eq!(a.challenge, s256(&a.verifier));
    }

    #[test]
    fn es256_assertion_verifies() {
        let rng = SystemRandom::new();
        let pkcs8 = EcdsaKeyPair::generate_pkcs8(&signature::ECDSA_P256_SHA256_FIXED_SIGNING, &rng)
            .unwrap();
        let pem = format!(
            "-----BEGIN PRIVATE KEY-----\n{}\n-----END PRIVATE KEY-----\n",
            STANDARD.encode(pkcs8.as_ref())
        );
        let pair = EcdsaKeyPair::from_pkcs8(
            &signature::ECDSA_P256_SHA256_FIXED_SIGNING,
            pkcs8.as_ref(),
            &rng,
        )
        .unwrap();
        let key = PrivateKey::from_pem(pem, SigningAlgorithm::Es256);
        let jwt = key.assertion("client-1", "https://as.example.com").unwrap();
        let parts: Vec<&str> = jwt.split('.').collect();
        assert_eq!(parts.len(), 3);
        let claims: serde_json::Value =
            serde_json::from_slice(&URL_SAFE_NO_PAD.decode(parts[1]).unwrap()).unwrap();
        assert_eq!(claims["iss"], "client-1");
        assert_eq!(claims["sub"], "client-1");
        assert_eq!(claims["aud"], "https://as.example.com");
        use ring::signature::KeyPair;
        let public = signature::UnparsedPublicKey::new(
            &signature::ECDSA_P256_SHA256_FIXED,
            pair.public_key().as_ref(),
        );
        let signed = format!("{}.{}", parts[0], parts[1]);
        public
            .verify(
                signed.as_bytes(),
                &URL_SAFE_NO_PAD.decode(parts[2]).unwrap(),
            )
            .unwrap();
        // A tampered payload does not verify.
        assert!(public
            .verify(b"x.y", &URL_SAFE_NO_PAD.decode(parts[2]).unwrap())
            .is_err());
    }

    #[test]
    fn a_bad_key_is_a_clear_error_without_the_key() {
        let key = PrivateKey::from_pem("secret-material", SigningAlgorithm::Es256);
        let e = key.assertion("c", "a").unwrap_err();
        assert!(e.contains("PKCS#8") && !e.contains("secret-material"));
        assert!(!format!("{key:?}").contains("secret-material"));
    }
}
