//! What every session of one server shares: the handler, its [`Info`], the [`Options`],
//! the key that seals request states, and its [`Audience`].

use std::sync::Arc;

use crate::audience::Audience;
use crate::handler::{Handler, Info};
use crate::seal::Sealer;
use crate::Options;

pub(crate) struct Core {
    pub(crate) handler: Arc<dyn Handler>,
    pub(crate) info: Info,
    pub(crate) options: Options,
    pub(crate) sealer: Sealer,
    pub(crate) audience: Arc<Audience>,
}

impl Core {
    pub(crate) fn new(handler: Arc<dyn Handler>, options: Options) -> Self {
        let mut info = handler.info();
        // Skill files are resources: the extension is never served without them.
        info.resources |= info.skills;
        Core {
            info,
            sealer: Sealer::new(options.request_state_key.as_deref()),
            handler,
            options,
            audience: Arc::default(),
        }
    }
}
