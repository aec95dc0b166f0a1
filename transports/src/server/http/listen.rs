//! Where a server listens, written as on a command line (`serve --listen`, `demo-server
//! --http`): a bare port is loopback's, as the server is by default.
//!
//! ```
//! use switchboard_transports::server::http::listen_addr;
//!
//! assert_eq!(listen_addr("8080").unwrap(), "127.0.0.1:8080".parse().unwrap());
//! assert_eq!(listen_addr("0.0.0.0:8080").unwrap(), "0.0.0.0:8080".parse().unwrap());
//! assert!(listen_addr("localhost:8080").is_err());
//! ```

use std::net::{IpAddr, Ipv4Addr, SocketAddr};

/// A listen address that is neither a port nor an IP address with its port.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("expected PORT or IP:PORT (127.0.0.1:8080, [::1]:8080), not {text:?}")]
pub struct InvalidListenAddr {
    text: String,
}

/// Where to listen, as a command line writes it: a bare port is on the loopback address
/// (`8080` is `127.0.0.1:8080`); anything else is a whole socket address, IPv4 or IPv6
/// (`0.0.0.0:8080`, `[::1]:8080`). Host names are refused, not resolved, so that what is
/// exposed is what is written.
pub fn listen_addr(text: &str) -> Result<SocketAddr, InvalidListenAddr> {
    if let Ok(port) = text.parse::<u16>() {
        return Ok(SocketAddr::new(IpAddr::V4(Ipv4Addr::LOCALHOST), port));
    }
    text.parse().map_err(|_| InvalidListenAddr {
        text: text.to_owned(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn addr(text: &str) -> SocketAddr {
        text.parse().unwrap()
    }

    #[test]
    fn a_bare_port_is_loopback_and_other_addresses_are_explicit() {
        assert_eq!(listen_addr("8080"), Ok(addr("127.0.0.1:8080")));
        assert_eq!(listen_addr("0"), Ok(addr("127.0.0.1:0")));
        assert_eq!(listen_addr("0.0.0.0:9000"), Ok(addr("0.0.0.0:9000")));
        assert_eq!(listen_addr("[::1]:9000"), Ok(addr("[::1]:9000")));
        for bad in ["localhost:80", "99999", "", "-1", "127.0.0.1", "::1", ":80"] {
            let error = listen_addr(bad).unwrap_err();
            assert_eq!(
                error.to_string(),
                format!("expected PORT or IP:PORT (127.0.0.1:8080, [::1]:8080), not {bad:?}")
            );
        }
    }
}
