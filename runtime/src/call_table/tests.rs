use std::sync::atomic::AtomicUsize;

use switchboard_codecs::mcp::ProgressToken;

use super::*;
use crate::admission::Admission;
use crate::deadline::ToolPolicy;

/// A table of a stdio connection, or (`keeps_frames`) of an HTTP one.
fn table(keeps_frames: bool) -> (Table, mpsc::UnboundedReceiver<Outbound>) {
    let (table, out, _) = table_with_silences(keeps_frames);
    (table, out)
}

fn slots(n: usize) -> Admission {
    Admission::new(n, metrics::Gauge::noop())
}

fn table_with_silences(
    keeps_frames: bool,
) -> (
    Table,
    mpsc::UnboundedReceiver<Outbound>,
    mpsc::UnboundedReceiver<Silence>,
) {
    let (tx, rx) = mpsc::unbounded_channel();
    let (silences, silenced) = mpsc::unbounded_channel();
    let metrics = crate::metrics::RuntimeMetrics::new(crate::metrics::Sink::Global);
    let table = Table::new(
        "s".into(),
        Sender::new(tx),
        if keeps_frames {
            Kind::StreamableHttp
        } else {
            Kind::Stdio
        },
        silences,
        Arc::new(metrics.server("s")),
    );
    (table, rx, silenced)
}

struct Registered {
    rx: oneshot::Receiver<Answer>,
}

fn register(
    table: &Table,
    admission: &Admission,
    id: i64,
    deadline: Option<Instant>,
    track: Option<(Instant, DeadlinePolicy, Option<ProgressFn>)>,
) -> Result<Registered, Unsent> {
    let (tx, rx) = oneshot::channel();
    let slot = admission.try_admit().expect("open").expect("a free slot");
    let (policy, progress) = match track {
        Some((since, policy, progress)) => (Some((since, policy)), progress),
        None => (None, None),
    };
    let waiter = Waiter::new(
        "s".into(),
        id,
        "tools/call".into(),
        Some("echo".into()),
        Instant::now(),
        deadline,
        Track::new(policy, progress, None),
        true,
        Some(slot),
        tx,
    );
    let frame = Outbound::request(
        Id::Number(id),
        "tools/call".into(),
        None,
        bytes::Bytes::from_static(b"{}"),
    );
    table.register(waiter, frame).map(|()| Registered { rx })
}

fn response(id: i64, result: &str) -> Response {
    Response {
        id: Some(Id::Number(id)),
        outcome: Outcome::Result(RawValue::from_string(result.into()).expect("json")),
    }
}

#[test]
fn registering_writes_the_frame_and_an_answer_reaches_its_waiter_and_frees_the_slot() {
    let (table, mut out) = table(false);
    let admission = slots(2);
    let mut one = register(&table, &admission, 1, None, None).expect("open");
    let mut two = register(&table, &admission, 2, None, None).expect("open");
    assert_eq!(
        out.try_recv().expect("a frame").request_id().cloned(),
        Some(Id::Number(1))
    );
    assert_eq!(
        out.try_recv().expect("a frame").request_id().cloned(),
        Some(Id::Number(2))
    );
    assert_eq!(admission.taken(), 2);
    assert!(table.claim(response(2, "{\"n\":2}")).is_none());
    assert_eq!(admission.taken(), 1);
    let answer = two.rx.try_recv().expect("answered").expect("a result");
    assert_eq!(answer.get(), "{\"n\":2}");
    assert!(one.rx.try_recv().is_err(), "the other waiter still waits");
    assert_eq!(table.len(), 1);
}

#[test]
fn an_unknown_or_string_id_is_handed_back() {
    let (table, _out) = table(false);
    assert!(table.claim(response(7, "{}")).is_some());
    let string_id = Response {
        id: Some(Id::String("7".into())),
        outcome: Outcome::Result(RawValue::from_string("{}".into()).expect("json")),
    };
    assert!(table.claim(string_id).is_some());
}

#[test]
fn a_closed_table_fails_every_waiter_once_and_refuses_new_ones() {
    let (table, _out) = table(false);
    let admission = slots(40);
    let mut waiting = Vec::new();
    for id in 0..33 {
        waiting.push(register(&table, &admission, id, None, None).expect("open"));
    }
    let reason = Arc::new(CloseReason::aborted("test"));
    let calls = AtomicUsize::new(0);
    table.close(|w| {
        calls.fetch_add(1, Ordering::Relaxed);
        w.disconnected(reason.clone())
    });
    assert_eq!(calls.load(Ordering::Relaxed), 33);
    for mut w in waiting {
        assert!(matches!(
            w.rx.try_recv(),
            Ok(Err(e)) if matches!(e.kind(), ErrorKind::Disconnected { .. })
        ));
    }
    assert_eq!(admission.taken(), 0);
    assert!(table.is_closed());
    let refused = register(&table, &admission, 99, None, None);
    assert!(
        matches!(refused, Err(Unsent { slot: Some(_) })),
        "the slot comes back"
    );
    assert_eq!(table.len(), 0);
}

#[test]
fn a_waiter_whose_deadline_passed_fails_as_a_timeout_when_the_table_closes() {
    let (table, _out) = table(false);
    let admission = slots(2);
    let past = Instant::now();
    let future = Instant::now() + Duration::from_secs(60);
    let mut late = register(&table, &admission, 1, Some(past), None).expect("open");
    let mut early = register(&table, &admission, 2, Some(future), None).expect("open");
    let reason = Arc::new(CloseReason::aborted("restarted"));
    table.close(|w| w.disconnected(reason.clone()));
    assert!(matches!(
        late.rx.try_recv(),
        Ok(Err(e)) if e.is_timeout() && e.request_id() == Some(1)
    ));
    assert!(matches!(
        early.rx.try_recv(),
        Ok(Err(e)) if matches!(e.kind(), ErrorKind::Disconnected { .. })
    ));
}

#[test]
fn a_waiter_dropped_unanswered_settles_its_caller_with_a_typed_error() {
    let admission = slots(1);
    let mut rx = {
        let (table, _out) = table(false);
        register(&table, &admission, 1, None, None)
            .expect("open")
            .rx
    };
    assert!(
        matches!(rx.try_recv(), Ok(Err(e)) if matches!(e.kind(), ErrorKind::Disconnected { .. }))
    );
    assert_eq!(admission.taken(), 0);
}

#[test]
fn progress_runs_the_callback_and_moves_a_resetting_deadline_within_max_total() {
    let (table, _out) = table(false);
    let admission = slots(1);
    let seen = Arc::new(AtomicUsize::new(0));
    let counter = seen.clone();
    let callback: ProgressFn = Arc::new(move |_| {
        counter.fetch_add(1, Ordering::Relaxed);
    });
    let policy = DeadlinePolicy::resolve(
        &ToolPolicy::new()
            .timeout(Duration::from_secs(1))
            .reset_on_progress(true)
            .max_total(Duration::from_secs(3)),
        None,
        None,
        Duration::from_secs(1),
    );
    let started = Instant::now();
    let first = policy.first(started);
    let track = Some((started, policy, Some(callback)));
    let _w = register(&table, &admission, 5, Some(first), track).expect("open");
    let track = table.track_of(5).expect("a track");
    let params = |token| ProgressNotificationParams {
        progress_token: token,
        progress: 1.0,
        total: None,
        message: None,
        extra: Default::default(),
    };
    assert!(table.progress(params(ProgressToken::Number(5))));
    assert!(
        !table.progress(params(ProgressToken::Number(6))),
        "no such call"
    );
    assert!(!table.progress(params(ProgressToken::String("5".into()))));
    assert_eq!(seen.load(Ordering::Relaxed), 1);
    let moved = track.moved_past(first).expect("moved");
    assert!(moved > first && moved <= started + Duration::from_secs(3));
}

#[test]
fn a_plain_call_carries_no_track() {
    let policy =
        DeadlinePolicy::resolve(&ToolPolicy::default(), None, None, Duration::from_secs(1));
    assert!(Track::new(Some((Instant::now(), policy)), None, None).is_none());
}

#[test]
fn session_loss_fails_all_but_the_rejected_request_whose_frame_is_kept() {
    let (table, _out) = table(true);
    let admission = slots(3);
    let mut a = register(&table, &admission, 1, None, None).expect("open");
    let mut b = register(&table, &admission, 2, None, None).expect("open");
    let reason = Arc::new(CloseReason::aborted("session expired"));
    table.fail_all_except(Some(2), |w| w.disconnected(reason.clone()));
    assert!(matches!(
        a.rx.try_recv(),
        Ok(Err(e)) if matches!(e.kind(), ErrorKind::Disconnected { .. })
    ));
    assert!(b.rx.try_recv().is_err(), "the rejected request still waits");
    let kept = table.frame_of(2).expect("kept");
    assert_eq!(&kept.payload[..], b"{}");
    assert!(!table.is_closed());
}

/// The frames written since the last look, as text.
fn written(out: &mut mpsc::UnboundedReceiver<Outbound>) -> Vec<String> {
    std::iter::from_fn(|| out.try_recv().ok())
        .map(|o| String::from_utf8_lossy(&o.payload).into_owned())
        .collect()
}

#[test]
fn a_sweep_times_out_what_is_due_cancels_it_and_reports_silence_only_when_nothing_was_heard() {
    let (table, mut out, mut silenced) = table_with_silences(false);
    let admission = slots(4);
    let now = Instant::now();
    let past = now - Duration::from_millis(1);
    let mut due = register(&table, &admission, 1, Some(past), None).expect("open");
    let mut later = register(
        &table,
        &admission,
        2,
        Some(now + Duration::from_secs(60)),
        None,
    )
    .expect("open");
    let _ = written(&mut out);
    assert_eq!(table.sweep(now), Some(now + Duration::from_secs(60)));
    assert!(matches!(
        due.rx.try_recv(),
        Ok(Err(e)) if e.is_timeout() && e.request_id() == Some(1)
    ));
    assert!(later.rx.try_recv().is_err(), "not due yet");
    let frames = written(&mut out);
    assert!(
        frames.len() == 1 && frames[0].contains("notifications/cancelled"),
        "{frames:?}"
    );
    assert!(silenced.try_recv().is_ok(), "nothing heard since the write");
    assert_eq!(admission.taken(), 1, "the slot is free");

    // Something heard since the write: a slow tool, not a silent server.
    let _late = register(&table, &admission, 3, Some(past), None).expect("open");
    table.hear();
    table.sweep(now);
    assert!(silenced.try_recv().is_err());
    assert_eq!(table.len(), 1);
}

#[test]
fn an_answer_or_a_caller_taking_its_waiter_back_leaves_no_deadline_behind() {
    let (table, _out) = table(false);
    let admission = slots(8);
    let now = Instant::now();
    // Out of order: a shorter timeout registered after longer ones.
    for (id, secs) in [(1, 30), (2, 10), (3, 30), (4, 20)] {
        let w = register(
            &table,
            &admission,
            id,
            Some(now + Duration::from_secs(secs)),
            None,
        );
        std::mem::forget(w.expect("open"));
    }
    let queued = |table: &Table| -> Vec<(Instant, i64)> {
        let mut all: Vec<_> = table
            .shards
            .iter()
            .flat_map(|s| s.lock().unwrap().deadlines.clone())
            .collect();
        all.sort();
        all
    };
    assert_eq!(queued(&table).len(), 4);
    assert!(table.claim(response(2, "{}")).is_none());
    table.take(4).expect("waiting");
    assert_eq!(
        queued(&table),
        vec![
            (now + Duration::from_secs(30), 1),
            (now + Duration::from_secs(30), 3)
        ]
    );
    assert_eq!(table.sweep(now), Some(now + Duration::from_secs(30)));
}

#[test]
fn a_deadline_progress_moved_is_queued_again_not_timed_out() {
    let (table, _out) = table(false);
    let admission = slots(1);
    let policy = DeadlinePolicy::resolve(
        &ToolPolicy::new()
            .timeout(Duration::from_millis(100))
            .reset_on_progress(true),
        None,
        None,
        Duration::from_secs(1),
    );
    let started = Instant::now();
    let first = policy.first(started);
    let mut w = register(
        &table,
        &admission,
        7,
        Some(first),
        Some((started, policy, None)),
    )
    .expect("open");
    // Progress 50 ms in: the deadline moves to about 150 ms.
    let params = ProgressNotificationParams {
        progress_token: ProgressToken::Number(7),
        progress: 1.0,
        total: None,
        message: None,
        extra: Default::default(),
    };
    std::thread::sleep(Duration::from_millis(50));
    assert!(table.progress(params));
    let next = table.sweep(first).expect("queued again");
    assert!(next > first, "moved");
    assert!(w.rx.try_recv().is_err(), "still waiting");
    assert!(table.sweep(next).is_none());
    assert!(matches!(w.rx.try_recv(), Ok(Err(e)) if matches!(e.kind(), ErrorKind::Timeout { .. })));
}

#[tokio::test]
async fn the_deadline_task_wakes_for_an_earlier_deadline_and_ends_with_the_table() {
    let (table, _out) = table(false);
    let table = Arc::new(table);
    let task = tokio::spawn(run_deadlines(&table));
    let admission = slots(2);
    let now = Instant::now();
    let _long = register(
        &table,
        &admission,
        1,
        Some(now + Duration::from_secs(60)),
        None,
    );
    // Let the task go to sleep until the long deadline, then queue a short one.
    tokio::time::sleep(Duration::from_millis(20)).await;
    let short = register(
        &table,
        &admission,
        2,
        Some(Instant::now() + Duration::from_millis(30)),
        None,
    )
    .expect("open");
    let answer = tokio::time::timeout(Duration::from_secs(5), short.rx)
        .await
        .expect("timed out by the task, not after the long deadline");
    assert!(matches!(
        answer,
        Ok(Err(e)) if e.is_timeout() && e.request_id() == Some(2)
    ));
    table.close(|w| w.disconnected(Arc::new(CloseReason::aborted("test"))));
    tokio::time::timeout(Duration::from_secs(5), task)
        .await
        .expect("the task ends once the table is closed")
        .expect("no panic");
}
