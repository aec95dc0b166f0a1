//! Admission, the exchange's first stage: a caller's request takes one of its server's
//! in-flight slots, waiting for one within its deadline.
//!
//! The slot is held by the request's waiter in the call table and freed as soon as the
//! waiter is settled (answered, timed out, failed or taken back), so a caller woken by its
//! answer can start its next call at once. `switchboard_requests_in_flight` follows the
//! slots: a [`Slot`] counts itself while it lives.

use std::sync::Arc;
use std::time::Instant;

use metrics::Gauge;
use tokio::sync::{OwnedSemaphorePermit, Semaphore, TryAcquireError};

/// Why a request got no slot.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Refused {
    /// Every slot stayed taken until the deadline.
    Full,
    /// The server is gone (the runtime stopped it).
    Closed,
}

/// One server's in-flight slots.
#[derive(Debug)]
pub(crate) struct Admission {
    permits: Arc<Semaphore>,
    max: usize,
    in_flight: Gauge,
}

/// One request's in-flight slot.
///
/// # Drop behavior
///
/// Dropping it frees the slot and counts the request out of
/// `switchboard_requests_in_flight`.
#[derive(Debug)]
pub(crate) struct Slot {
    _permit: OwnedSemaphorePermit,
    in_flight: Gauge,
}

impl Drop for Slot {
    fn drop(&mut self) {
        self.in_flight.decrement(1.0);
    }
}

impl Admission {
    pub(crate) fn new(max: usize, in_flight: Gauge) -> Self {
        Admission {
            permits: Arc::new(Semaphore::new(max)),
            max,
            in_flight,
        }
    }

    /// The bound on requests in flight.
    pub(crate) fn max(&self) -> usize {
        self.max
    }

    /// Requests holding a slot now.
    pub(crate) fn taken(&self) -> usize {
        self.max - self.permits.available_permits()
    }

    /// A slot, waiting for one until `deadline` (`None`: as long as it takes).
    ///
    /// # Cancel safety
    ///
    /// Cancel safe: a request dropped while it waits holds no slot.
    pub(crate) async fn admit(&self, deadline: Option<Instant>) -> Result<Slot, Refused> {
        match self.try_admit()? {
            Some(slot) => Ok(slot),
            // Boxed: waiting is rare, and would otherwise enlarge every call's future.
            None => {
                let permit = Box::pin(self.wait(deadline)).await?;
                Ok(self.slot(permit))
            }
        }
    }

    /// A slot if one is free now (`None`: all are taken).
    pub(crate) fn try_admit(&self) -> Result<Option<Slot>, Refused> {
        match self.permits.clone().try_acquire_owned() {
            Ok(permit) => Ok(Some(self.slot(permit))),
            Err(TryAcquireError::Closed) => Err(Refused::Closed),
            Err(TryAcquireError::NoPermits) => Ok(None),
        }
    }

    fn slot(&self, permit: OwnedSemaphorePermit) -> Slot {
        self.in_flight.increment(1.0);
        Slot {
            _permit: permit,
            in_flight: self.in_flight.clone(),
        }
    }

    async fn wait(&self, deadline: Option<Instant>) -> Result<OwnedSemaphorePermit, Refused> {
        let acquire = self.permits.clone().acquire_owned();
        match deadline {
            Some(at) => match tokio::time::timeout_at(at.into(), acquire).await {
                Ok(Ok(permit)) => Ok(permit),
                Ok(Err(_)) => Err(Refused::Closed),
                Err(_) => Err(Refused::Full),
            },
            None => acquire.await.map_err(|_| Refused::Closed),
        }
    }

    /// No request is admitted any more: the server is gone.
    pub(crate) fn close(&self) {
        self.permits.close();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[tokio::test]
    async fn slots_are_bounded_freed_on_drop_and_refused_past_the_deadline() {
        let admission = Admission::new(2, Gauge::noop());
        let a = admission.admit(None).await.unwrap();
        let _b = admission.admit(None).await.unwrap();
        assert_eq!(admission.taken(), 2);
        let soon = Instant::now() + Duration::from_millis(20);
        assert_eq!(
            admission.admit(Some(soon)).await.unwrap_err(),
            Refused::Full
        );
        drop(a);
        assert_eq!(admission.taken(), 1);
        let _c = admission.admit(Some(soon)).await.unwrap();
        admission.close();
        drop(_c);
        assert_eq!(admission.admit(None).await.unwrap_err(), Refused::Closed);
    }
}
