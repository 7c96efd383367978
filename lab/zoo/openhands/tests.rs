//! Golden requests derived from the upstream source read line by line
//! (`openhands-ai` pulls in a runtime too heavy to install here; each
//! expectation below names the upstream lines that give it).

use std::path::Path;

use serde_json::json;

use super::*;
use crate::message::{Block, Role};
use crate::policy::model::{ModelError, ModelRole, Scripted};
use crate::storage::MemFs;
use crate::tokens::Approx;

fn call(i: usize) -> Message {
    Message::assistant(vec![
        Block::Text {
            text: format!("thought {i}"),
        },
        Block::ToolUse {
            id: format!("c{i}"),
            name: "bash".into(),
            input: json!({ "command": format!("ls {i}") }).into(),
        },
    ])
}

fn result(i: usize) -> Message {
    Message::tool_results(vec![(format!("c{i}"), format!("out {i}"))])
}

/// Task then `k` steps: events are system 0, task 1, then action 2i+2 and
/// observation 2i+3 for step i.
fn steps(k: usize) -> Vec<Message> {
    let mut h = vec![Message::user_text("task")];
    for i in 0..k {
        h.push(call(i));
        h.push(result(i));
    }
    h
}

fn prepare(p: &mut OpenHands, h: &[Message], model: &mut dyn ModelRole) -> Prepared {
    let mut hist = h.to_vec();
    let out = PolicyCtx::with_test("/run/oh", model, |ctx| p.prepare(&mut hist, ctx)).unwrap();
    assert_eq!(hist, h, "projecting: the history stays whole");
    out
}

fn none() -> Scripted {
    Scripted::default()
}

#[test]
fn an_uncondensed_view_renders_the_history_back() {
    let mut h = steps(2);
    h.push(Message::user_text("more"));
    h.push(Message::user_text("and more"));
    let mut p = OpenHands::new("t", Condenser::Recent(RecentEvents::default()));
    let got = prepare(&mut p, &h, &mut none()).request;
    // `_apply_user_message_formatting`: a user message after a user message
    // gets "\n\n" before its first text.
    let mut want = h.clone();
    want[6] = Message::user_text("\n\nand more");
    // The view (8 events) is shorter than max_events, so `recent` repeats the
    // system event: [sys, sys, task, ...]; `_ensure_initial_user_message` then
    // finds a system event at index 1 and inserts the task there, so upstream
    // sends system, task, system, task, ... (the lab sends no system message).
    want.insert(0, Message::user_text("task"));
    assert_eq!(got, want);
}

#[test]
fn masking_hides_the_call_with_its_observation() {
    let h = steps(3);
    let mut p = OpenHands::new(
        "t",
        Condenser::ObservationMasking(ObservationMasking {
            attention_window: 3,
        }),
    );
    let got = prepare(&mut p, &h, &mut none());
    // 8 events; observations at index < 8 - 3 = 5 are masked: event 3 (c0).
    // `<MASKED>` answers no call, so the response with c0 never completes
    // (`process_events` pending check) and is never sent; `<MASKED>` follows
    // the task, a user message, so it gets "\n\n".
    let want = vec![
        Message::user_text("task"),
        Message::user_text("\n\n<MASKED>"),
        call(1),
        result(1),
        call(2),
        result(2),
    ];
    assert_eq!(got.request, want);
    assert_eq!(
        got.events,
        vec![PolicyEvent::Cleared {
            id: "c0".into(),
            part: "result",
            placeholder: "<MASKED>".into()
        }]
    );
}

#[test]
fn recent_keeps_head_and_tail_and_brings_the_task_back() {
    let h = steps(3);
    let mut p = OpenHands::new(
        "t",
        Condenser::Recent(RecentEvents {
            keep_first: 1,
            max_events: 4,
        }),
    );
    let got = prepare(&mut p, &h, &mut none());
    // head [sys], tail view[-3:] = [obs c1, act c2, obs c2]; index 1 is not a
    // user message, so the task is inserted; obs c1 has no call: never sent.
    assert_eq!(
        got.request,
        vec![Message::user_text("task"), call(2), result(2)]
    );
}

#[test]
fn amortized_forgets_the_middle_once_past_max_size() {
    let p = AmortizedForgetting {
        max_size: 8,
        keep_first: 1,
    };
    let mut pol = OpenHands::new("t", Condenser::Amortized(p));
    // steps(3) has 8 events: not more than max_size, nothing happens.
    assert!(prepare(&mut pol, &steps(3), &mut none()).events.is_empty());
    // steps(4): 10 events > 8. target 4: head [sys], tail the newest 3
    // (obs c2, act c3, obs c3); forgotten ids 1..=6 (task, c0, c1, act c2).
    let got = prepare(&mut pol, &steps(4), &mut none());
    assert_eq!(
        got.request,
        vec![Message::user_text("task"), call(3), result(3)]
    );
    assert!(matches!(
        &got.events[0],
        PolicyEvent::Dropped { messages: 6, why } if why.contains("1..=6")
    ));
    // The next call keeps the condensation: view = sys, obs c2, c3, c4 (7 events).
    let next = prepare(&mut pol, &steps(5), &mut none());
    assert!(next.events.is_empty());
    assert_eq!(
        next.request,
        vec![
            Message::user_text("task"),
            call(3),
            result(3),
            call(4),
            result(4)
        ]
    );
}

/// Records what the summariser was given.
#[derive(Default)]
struct Recorder {
    seen: Vec<(String, Vec<Message>)>,
}

impl ModelRole for Recorder {
    fn name(&self) -> String {
        "recorder".into()
    }

    fn summarise(&mut self, req: &SummaryRequest<'_>) -> Result<String, ModelError> {
        assert_eq!(req.prompt, condensers::LLM_SUMMARY_PROMPT);
        self.seen
            .push((req.previous.unwrap_or("").into(), req.messages.to_vec()));
        Ok(format!("SUMMARY {}", self.seen.len()))
    }
}

#[test]
fn llm_summary_sits_at_keep_first_and_folds_the_previous_one() {
    let cfg = LlmSummarizing {
        keep_first: 1,
        max_size: 8,
        max_event_length: 10_000,
    };
    let mut pol = OpenHands::new("t", Condenser::Llm(cfg));
    let mut model = Recorder::default();
    // 10 events > 8: head [sys], events_from_tail = 8 // 2 - 1 - 1 = 2, so the
    // forgotten events are view[1:-2] = ids 1..=7: the task and steps c0..c2.
    let got = prepare(&mut pol, &steps(4), &mut model);
    // Summary at offset 1, then act c3 (8) and obs c3 (9); `_ensure_initial_user_message`
    // puts the task back before the summary (index 1 is the summary, not a user message).
    assert_eq!(
        got.request,
        vec![
            Message::user_text("task"),
            Message::user_text("\n\nSUMMARY 1"),
            call(3),
            result(3),
        ]
    );
    assert_eq!(model.seen[0].0, "No events summarized");
    let mut forgotten = vec![Message::user_text("task")];
    forgotten.extend(steps(3).into_iter().skip(1));
    assert_eq!(model.seen[0].1, forgotten, "the task and the pairs c0..c2");
    // Two more steps: view = sys, summary, c3, c4, c5 = 8 events, not > 8.
    assert!(prepare(&mut pol, &steps(6), &mut model).events.is_empty());
    // Seven steps: 10 events; the previous summary is view[1] and is folded in.
    let again = prepare(&mut pol, &steps(7), &mut model);
    assert!(matches!(again.events[0], PolicyEvent::Summarised { .. }));
    assert_eq!(model.seen[1].0, "SUMMARY 1");
    assert_eq!(again.request[1], Message::user_text("\n\nSUMMARY 2"));
    assert_eq!(again.request.len(), 4);
    assert_eq!(again.request[0].role, Role::User);
}

#[test]
fn invalid_switches_are_refused_and_truncation_matches_upstream() {
    let mut pol = OpenHands::new(
        "t",
        Condenser::Amortized(AmortizedForgetting {
            max_size: 4,
            keep_first: 2,
        }),
    );
    let storage = MemFs::new();
    let mut model = none();
    let mut ctx = PolicyCtx {
        storage: &storage,
        root: Path::new("/r"),
        tokens: &Approx,
        turn: 0,
        envelope: 0,
        anchor: None,
        read_lines: None,
        now_ms: None,
        model: &mut model,
    };
    let err = pol.prepare(&mut steps(1), &mut ctx).unwrap_err();
    assert!(err.to_string().contains("keep_first (2)"), "{err}");
    // truncate_content('abcdefghij', 4) == 'ab\n[... Observation truncated due to length ...]\nij'
    assert_eq!(
        truncate_content("abcdefghij", 4),
        "ab\n[... Observation truncated due to length ...]\nij"
    );
    assert_eq!(truncate_content("abc", 4), "abc");
}

#[test]
fn conversation_window_keeps_the_task_and_the_newer_half_without_dangling_results() {
    let mut roomy = OpenHands::new(
        "t",
        Condenser::ConversationWindow(ConversationWindow::default()),
    );
    assert!(prepare(&mut roomy, &steps(5), &mut none())
        .events
        .is_empty());
    let mut tight = OpenHands::new(
        "t",
        Condenser::ConversationWindow(ConversationWindow {
            context_window_tokens: 10,
        }),
    );
    let got = prepare(&mut tight, &steps(5), &mut none());
    // 12 events, essential system 0 and task 1; keep max(1, 10 // 2) = 5 from
    // index 7, which is obs c2 (dangling), so the kept slice starts at 8.
    assert_eq!(
        got.request,
        vec![
            Message::user_text("task"),
            call(3),
            result(3),
            call(4),
            result(4)
        ]
    );
    assert!(matches!(
        &got.events[0],
        PolicyEvent::Dropped { messages: 6, .. }
    ));
}

/// `process_events` gets `max_message_chars` from the LLM config (30,000 by
/// default, `llm_config.py`) and `_process_observation` cuts an observation's
/// content to it with `truncate_content` (`conversation_memory.py`); an
/// `AgentCondensationObservation` (a summary) is cut the same way. Whole
/// in the history, cut in every request of every condenser.
#[test]
fn observations_over_max_message_chars_are_cut_in_the_request() {
    let big: String = (0..40_000)
        .map(|i| char::from(b'a' + (i % 26) as u8))
        .collect();
    let mut h = steps(1);
    h.push(call(1));
    h.push(Message::tool_results(vec![("c1".into(), big.clone())]));
    let chars: Vec<char> = big.chars().collect();
    let want = format!(
        "{}\n[... Observation truncated due to length ...]\n{}",
        chars[..15_000].iter().collect::<String>(),
        chars[40_000 - 15_000..].iter().collect::<String>()
    );
    for make in [super::recent, super::observation_masking, super::amortized] {
        let mut p = make();
        let mut hist = h.clone();
        let mut model = none();
        let got =
            PolicyCtx::with_test("/run/oh", &mut model, |ctx| p.prepare(&mut hist, ctx)).unwrap();
        assert_eq!(hist, h, "the history keeps the whole observation");
        let sent: Vec<&str> = got
            .request
            .iter()
            .flat_map(|m| m.blocks())
            .filter_map(|b| match b {
                Block::ToolResult { content, .. } => Some(content.as_str()),
                _ => None,
            })
            .collect();
        // Compared without printing 30,000 characters on failure.
        let lens: Vec<usize> = sent.iter().map(|t| t.chars().count()).collect();
        assert!(
            sent == ["out 0", want.as_str()],
            "{}: result lengths {lens:?}",
            p.info().name
        );
    }
    // A summary over the limit is cut too (AgentCondensationObservation);
    // it follows the task, so `\n\n` comes first.
    let long_summary = "s".repeat(30_001);
    let view = [Event {
        id: events::NO_ID,
        ev: Ev::Condensed(long_summary.clone()),
    }];
    let view: Vec<&Event> = view.iter().collect();
    let sent = events::render(&view, &steps(0), events::LlmConfig::default());
    let want = format!("\n\n{}", truncate_content(&long_summary, 30_000));
    assert!(sent[1].text() == want, "the summary is not cut");
    assert_eq!(want.chars().count(), 2 + 30_000 + 47);
}

#[test]
fn the_stream_grown_call_by_call_equals_the_stream_of_the_whole_history() {
    let session: Vec<Message> = ctxlab_import::generate::Generator::new(13, 80_000).collect();
    let mut stream = Vec::new();
    let mut from = 0;
    for (k, m) in session.iter().enumerate() {
        if m.role == Role::Assistant {
            events::extend(&mut stream, &session[..k], from);
            from = k;
            assert_eq!(stream, events::events(&session[..k]), "before message {k}");
        }
    }
    assert!(stream.len() > 60, "{} events", stream.len());
}

/// The view kept between calls equals `View.from_events` of the whole stream
/// at every call of a generated session, for each condenser that forgets
/// (ranges, a summary at an offset, id sets), and after the history was
/// replaced.
#[test]
fn the_kept_view_equals_the_whole_view_at_every_call() {
    let session: Vec<Message> = ctxlab_import::generate::Generator::new(5, 60_000).collect();
    let condensers = [
        Condenser::Amortized(AmortizedForgetting {
            max_size: 20,
            keep_first: 1,
        }),
        Condenser::Llm(LlmSummarizing {
            keep_first: 1,
            max_size: 20,
            max_event_length: 10_000,
        }),
        Condenser::ConversationWindow(ConversationWindow {
            context_window_tokens: 6_000,
        }),
    ];
    for condenser in condensers {
        let mut p = OpenHands::new("t", condenser);
        let mut model = Scripted::replies((0..1000).map(|i| format!("summary {i}")));
        let mut calls = 0;
        for (k, m) in session.iter().enumerate() {
            if m.role != Role::Assistant {
                continue;
            }
            if k == session.len() / 2 {
                p.history_replaced();
            }
            prepare(&mut p, &session[..k], &mut model);
            calls += 1;
            let kept: Vec<Event> = p.live.view(&p.stream).into_iter().cloned().collect();
            let whole = events::view(&p.stream, &p.condensations);
            assert!(
                kept == whole,
                "{:?}: the views differ before message {k}",
                p.condenser
            );
        }
        assert!(calls > 50, "{calls} calls");
        assert!(p.condensations.len() > 3, "{:?}", p.condenser);
    }
}

/// A history that exercises the masked render's seams: parallel calls
/// answered one result per message and out of order (so a response's
/// actions and observations straddle the masked prefix's end), a result
/// carrying text beside it, an agent message without calls, a reused call
/// id, and no user text before the first call when `lead` is false.
fn seams(n: usize, lead: bool) -> Vec<Message> {
    let mut h = Vec::new();
    if lead {
        h.push(Message::user_text("task"));
    }
    for i in 0..n {
        let ids: Vec<String> = (0..=(i % 3)).map(|j| format!("p{i}_{j}")).collect();
        // Every seventh step reuses the id of the newest single-call step
        // (so a response emitted once could wrongly be emitted again).
        let ids: Vec<String> = if i % 7 == 6 {
            vec![format!("p{}_0", (i - 1) / 3 * 3)]
        } else {
            ids
        };
        h.push(Message::assistant(
            ids.iter()
                .map(|id| Block::ToolUse {
                    id: id.clone(),
                    name: "bash".into(),
                    input: json!({ "command": format!("{id} at step {i}") }).into(),
                })
                .collect(),
        ));
        for id in ids.iter().rev() {
            h.push(Message::tool_results(vec![(
                id.clone(),
                format!("out {id}"),
            )]));
        }
        if i % 5 == 4 {
            let mut m = Message::tool_results(vec![(format!("late{i}"), "x".into())]);
            if let crate::message::Content::Blocks(b) = &mut m.content {
                b.push(Block::Text {
                    text: format!("note {i}"),
                });
            }
            h.push(m);
            h.push(Message::assistant(vec![Block::Text {
                text: format!("thinking aloud {i}"),
            }]));
        }
        if !lead && i == n / 3 {
            h.push(Message::user_text("late task"));
        }
    }
    h
}

/// Observation masking renders its request from a masked prefix kept
/// between calls ([`events::MaskedRender`]); at every call it equals the
/// whole render of the masked view, for generated and hand-made histories,
/// windows from 1 to the default, and after the history was replaced.
#[test]
fn the_kept_masked_render_equals_the_whole_render_at_every_call() {
    let generated: Vec<Message> = ctxlab_import::generate::Generator::new(11, 60_000).collect();
    let histories = [generated, seams(40, true), seams(40, false)];
    for (h, session) in histories.iter().enumerate() {
        for window in (1..=8).chain([100]) {
            let m = ObservationMasking {
                attention_window: window,
            };
            let mut p = OpenHands::new("t", Condenser::ObservationMasking(m.clone()));
            let mut calls = 0;
            let mut kept_prefix = 0;
            for k in 1..=session.len() {
                if k == session.len() / 2 {
                    p.history_replaced();
                }
                let sent = prepare(&mut p, &session[..k], &mut none()).request;
                let view = p.live.view(&p.stream);
                let whole = events::render(&m.condense(&view), &session[..k], p.llm);
                assert!(
                    sent == whole,
                    "history {h}, window {window}: requests differ at {k} messages"
                );
                calls += 1;
                kept_prefix = kept_prefix.max(p.masked.kept());
            }
            assert!(calls > 50, "{calls} calls");
            // The fast path ran: a prefix was kept.
            assert!(
                kept_prefix > 20,
                "history {h}, window {window}: {kept_prefix}"
            );
        }
    }
}

/// The conversation window renders and counts its growing view from where
/// the last call left it ([`events::GrowingRender`]); at every call its
/// request and events equal those of the same policy made to fold from
/// scratch (its kept fold cleared before each call, as the whole render
/// did), through several condensations and a replaced history, on
/// generated and hand-made histories.
#[test]
fn the_kept_window_render_equals_the_whole_render_at_every_call() {
    let generated: Vec<Message> = ctxlab_import::generate::Generator::new(17, 60_000).collect();
    let histories = [generated, seams(60, true), seams(60, false)];
    for (h, session) in histories.iter().enumerate() {
        // Windows that condense several times on each history.
        let windows = if h == 0 { [600, 3_000] } else { [200, 500] };
        for window in windows {
            let condenser = Condenser::ConversationWindow(ConversationWindow {
                context_window_tokens: window,
            });
            let mut kept = OpenHands::new("t", condenser.clone());
            let mut whole = OpenHands::new("t", condenser);
            let (mut whole_folded, mut calls) = (0, 0);
            for k in 1..=session.len() {
                if k == session.len() / 2 {
                    kept.history_replaced();
                    whole.history_replaced();
                }
                whole.window.clear();
                let a = prepare(&mut kept, &session[..k], &mut none());
                let b = prepare(&mut whole, &session[..k], &mut none());
                assert!(
                    a.request == b.request && a.events == b.events,
                    "history {h}, window {window}: calls differ at {k} messages"
                );
                calls += 1;
                // Folded from scratch: the whole view, every call.
                whole_folded += whole.window.kept();
            }
            assert!(calls > 50, "{calls} calls");
            assert!(
                kept.condensations.len() > 2,
                "history {h}, window {window}: {} condensations",
                kept.condensations.len()
            );
            let folded = kept.window.folded();
            assert!(
                folded * 2 < whole_folded,
                "history {h}, window {window}: the kept fold folded {folded} events, from scratch {whole_folded}"
            );
        }
    }
}
