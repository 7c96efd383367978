//! The model calls a policy makes besides the recorded ones: every summary
//! a design asks for is a request its product sends and pays for.
//!
//! A replay gives each policy its model through [`Recording`], which
//! answers as the wrapped model does and writes down what was asked and
//! answered; an observer one floor up (the cost observer) drains the log
//! at the request the calls were made before, and prices them. Nothing in
//! a policy changes: the summaries are the same, only seen.

use std::sync::{Arc, Mutex};

use super::model::{ModelError, ModelRole, SummaryRequest};
use crate::message::Message;

/// One side call: what the policy sent and what came back.
#[derive(Debug, Clone, PartialEq)]
pub struct SideCall {
    /// The instruction prompt, byte for byte as the policy sent it.
    pub prompt: String,
    /// The messages the call was asked to summarise.
    pub messages: Vec<Message>,
    /// A previous summary the design asked the model to extend.
    pub previous: Option<String>,
    /// The reply; `None` when the call failed (a failed call is still sent).
    pub reply: Option<String>,
}

/// A log of side calls shared between the recording model and whoever
/// drains it. Cloning shares the log.
#[derive(Debug, Clone, Default)]
pub struct SideCalls(Arc<Mutex<Vec<SideCall>>>);

impl SideCalls {
    /// Every call logged since the last drain, in order.
    pub fn drain(&self) -> Vec<SideCall> {
        let mut log = self.0.lock().unwrap_or_else(|e| e.into_inner());
        std::mem::take(&mut *log)
    }

    fn push(&self, call: SideCall) {
        self.0.lock().unwrap_or_else(|e| e.into_inner()).push(call);
    }
}

/// A model that answers as `inner` does and logs every call in `log`.
pub struct Recording {
    inner: Box<dyn ModelRole>,
    log: SideCalls,
}

impl Recording {
    /// `inner`, recorded into `log`.
    pub fn new(inner: Box<dyn ModelRole>, log: SideCalls) -> Recording {
        Recording { inner, log }
    }
}

impl ModelRole for Recording {
    fn name(&self) -> String {
        self.inner.name()
    }

    fn summarise(&mut self, req: &SummaryRequest<'_>) -> Result<String, ModelError> {
        let answer = self.inner.summarise(req);
        self.log.push(SideCall {
            prompt: req.prompt.to_string(),
            messages: req.messages.to_vec(),
            previous: req.previous.map(str::to_string),
            reply: answer.as_ref().ok().cloned(),
        });
        answer
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::Scripted;

    #[test]
    fn every_call_is_logged_once_with_its_answer_or_failure() {
        let log = SideCalls::default();
        let mut m = Recording::new(
            Box::new(Scripted {
                replies: [Ok("s1".to_string()), Err("down".to_string())].into(),
            }),
            log.clone(),
        );
        let msgs = vec![Message::user_text("hello")];
        let req = SummaryRequest {
            prompt: "P",
            messages: &msgs,
            previous: Some("before"),
        };
        assert_eq!(m.summarise(&req).unwrap(), "s1");
        assert!(m.summarise(&req).is_err());
        let calls = log.drain();
        assert_eq!(calls.len(), 2);
        assert_eq!(calls[0].reply.as_deref(), Some("s1"));
        assert_eq!(calls[0].messages, msgs);
        assert_eq!(calls[0].previous.as_deref(), Some("before"));
        assert_eq!(calls[1].reply, None);
        assert!(log.drain().is_empty(), "a drain empties the log");
    }
}
