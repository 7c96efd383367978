//! `LastNObservations` kept between calls: the masked request grows by the
//! messages appended since the last call, and only the observations that
//! fell out of the last `n` since are masked.
//!
//! Upstream masks a fresh copy of the whole history at every step; done so
//! here, a long run copied the whole history and counted the lines of every
//! masked observation at every call. Without tool tags the processor is
//! monotone on a history that only grows: the observations only grow, so
//! the masked ones (all but the first and the last `n`, rounded by
//! `polling`) only grow, and a masked observation's placeholder depends on
//! it alone. So the request kept here is what [`LastNObservations::apply`]
//! makes of each call's history, with the same events in the same order.
//! With tool tags (a later call naming an earlier result's tool can change
//! its tags) the whole processor runs instead.

use super::mask::{mask_message, LastNObservations};
use crate::message::{Message, Role};
use crate::policy::PolicyEvent;

/// The masking as of the last call.
#[derive(Debug, Clone)]
pub struct KeptMask {
    /// The processor it was made with (a change starts it again).
    config: LastNObservations,
    /// The history so far, masked observations edited.
    request: Vec<Message>,
    /// Indices of the observations in it.
    observations: Vec<usize>,
    /// `observations[1..masked]` are masked.
    masked: usize,
    /// Every masked result, oldest first (recorded again at every call).
    events: Vec<PolicyEvent>,
}

impl KeptMask {
    /// Whether `config` can be kept this way at all.
    pub fn applies(config: &LastNObservations) -> bool {
        config.tool_tags.is_empty()
    }

    /// Nothing seen yet.
    pub fn new(config: &LastNObservations) -> KeptMask {
        KeptMask {
            config: config.clone(),
            request: Vec::new(),
            observations: Vec::new(),
            masked: 1,
            events: Vec::new(),
        }
    }

    /// Whether this state can go on for a history of `len` messages: made
    /// with the same processor, from a history that only grew.
    pub fn fits(&self, config: &LastNObservations, len: usize) -> bool {
        self.config == *config && self.request.len() <= len
    }

    /// The masked request of `history`, with this call's events.
    pub fn advance(&mut self, history: &[Message], events: &mut Vec<PolicyEvent>) -> &[Message] {
        for m in &history[self.request.len()..] {
            let i = self.request.len();
            if (i == 0 && m.role == Role::User) || m.is_tool_result() {
                self.observations.push(i);
            }
            self.request.push(m.clone());
        }
        let polling = self.config.polling;
        let last_removed =
            ((self.observations.len() / polling) * polling).saturating_sub(self.config.n);
        for k in self.masked..last_removed {
            let i = self.observations[k];
            mask_message(&mut self.request[i], &mut self.events);
        }
        self.masked = self.masked.max(last_removed);
        events.extend(self.events.iter().cloned());
        &self.request
    }
}
