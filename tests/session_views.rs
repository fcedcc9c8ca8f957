//! Watching a session from a host: the subscription API (replay, live
//! output, the agent's commands shown as typed, close), a person's input,
//! resizing, human names, and secret prompts recognized from the terminal.

mod common;

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use bash_mcp::session::{RunOptions, RunState, SessionManager, StartOptions, TerminalCallback, TerminalEvent};
use common::*;

fn start(m: &SessionManager, tag: &str) -> String {
    m.start(&StartOptions {
        env: vec![(TAG_VAR.into(), tag.into())],
        ..Default::default()
    })
    .unwrap()
}

fn within(secs: u64) -> RunOptions {
    RunOptions {
        timeout: Some(Duration::from_secs(secs)),
        ..Default::default()
    }
}

/// A callback that records what a subscriber is shown.
fn screen() -> (Arc<Mutex<Vec<u8>>>, TerminalCallback) {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let sink = seen.clone();
    let callback = Box::new(move |event: TerminalEvent<'_>| match event {
        TerminalEvent::Output(bytes) => sink.lock().unwrap().extend_from_slice(bytes),
        TerminalEvent::Closed => sink.lock().unwrap().extend_from_slice(b"[closed]"),
    });
    (seen, callback)
}

/// Waits (generously) until the recorded screen holds `needle`.
fn wait_for(seen: &Mutex<Vec<u8>>, needle: &str) -> String {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let text = String::from_utf8_lossy(&seen.lock().unwrap()).into_owned();
        if text.contains(needle) {
            return text;
        }
        assert!(Instant::now() < deadline, "{needle:?} never appeared in {text:?}");
        std::thread::sleep(Duration::from_millis(10));
    }
}

#[test]
fn a_subscriber_sees_the_agents_commands_as_typed_without_plumbing() {
    let tag = unique_tag("view");
    let m = session_manager();
    let id = start(&m, &tag);
    m.run(&id, "echo before-subscribing", &within(10)).unwrap();
    let (seen, callback) = screen();
    let subscription = m.subscribe(&id, callback).unwrap();
    // The replay shows what came before.
    wait_for(&seen, "$ echo before-subscribing\r\nbefore-subscribing\r\n$ ");
    let r = m.run(&id, "printf 'a\\nb\\n'", &within(10)).unwrap();
    assert_eq!(r.watchers, 1);
    assert_eq!(r.output, "a\nb\n", "the agent's result is unchanged: {r:?}");
    let text = wait_for(&seen, "$ printf 'a\\nb\\n'\r\na\r\nb\r\n$ ");
    assert!(
        !text.contains("633;") && !text.contains("__bm"),
        "plumbing shown: {text:?}"
    );
    drop(subscription);
    let r = m.run(&id, "echo unwatched", &within(10)).unwrap();
    assert_eq!(r.watchers, 0);
    m.close(&id).unwrap();
    assert_no_survivors(&tag);
}

#[test]
fn closing_the_session_tells_every_subscriber() {
    let tag = unique_tag("view-close");
    let m = session_manager();
    let id = start(&m, &tag);
    let (a, callback_a) = screen();
    let (b, callback_b) = screen();
    let _sa = m.subscribe(&id, callback_a).unwrap();
    let _sb = m.subscribe(&id, callback_b).unwrap();
    assert_eq!(m.list()[0].watchers, 2);
    m.close(&id).unwrap();
    wait_for(&a, "[closed]");
    wait_for(&b, "[closed]");
    assert_no_survivors(&tag);
}

#[test]
fn a_secret_prompt_is_recognized_and_the_person_answers_it() {
    let tag = unique_tag("view-secret");
    let m = session_manager();
    let id = start(&m, &tag);
    let name = m.list()[0].handle.clone();
    // A plain prompt echoes: waiting for input, but not a secret.
    let r = m
        .run(&id, "read -r -p 'Name: ' n; echo \"hi $n\"", &within(10))
        .unwrap();
    assert!(r.waiting_for_input && !r.secret_prompt, "{r:?}");
    let r = m.write(&id, "ann\n", &[], Duration::from_secs(10), false).unwrap();
    assert_eq!((r.state, r.output.as_str()), (RunState::Finished(0), "hi ann\n"));

    let (seen, callback) = screen();
    let _subscription = m.subscribe(&id, callback).unwrap();
    let r = m
        .run(
            &id,
            "read -r -s -p 'Password: ' pw; echo; echo \"length ${#pw}\"",
            &within(10),
        )
        .unwrap();
    assert!(r.waiting_for_input && r.secret_prompt, "{r:?}");
    let doc = r.to_value();
    let hint = doc["hint"].as_str().unwrap();
    assert!(hint.contains(&format!("`bash-mcp attach {name}`")), "{hint}");
    assert!(hint.contains("never send it with session_write"), "{hint}");
    wait_for(&seen, "Password: ");
    m.type_input(&id, b"hunter2\r").unwrap();
    let r = m.wait(&id, Duration::from_secs(10), false).unwrap();
    assert_eq!(r.state, RunState::Finished(0), "{r:?}");
    assert!(r.person_typed, "{r:?}");
    assert!(r.output.contains("length 7"), "{r:?}");
    let everything = format!("{r:?}{}", r.to_value());
    assert!(
        !everything.contains("hunter2"),
        "the secret reached the agent: {everything}"
    );
    let text = wait_for(&seen, "length 7");
    assert!(!text.contains("hunter2"), "the secret was echoed: {text:?}");
    // Told once: the next look has nothing new from the person.
    let r = m.read(&id, None, false).unwrap();
    assert!(!r.person_typed, "{r:?}");
    m.close(&id).unwrap();
    assert_no_survivors(&tag);
}

#[test]
fn resizing_reaches_the_program_and_names_resolve() {
    let tag = unique_tag("view-size");
    let m = session_manager();
    let id = start(&m, &tag);
    let info = m.list().into_iter().next().unwrap();
    assert_eq!(info.title(), format!("#{} {}", info.number, info.handle));
    for key in [
        id.as_str(),
        info.handle.as_str(),
        &info.title(),
        &format!("#{}", info.number),
    ] {
        assert_eq!(m.resolve(key).unwrap(), id, "{key}");
    }
    let err = m.resolve("nosuchname").unwrap_err();
    assert!(err.hint.contains(&info.title()), "{err}");
    m.resize(&id, 33, 101).unwrap();
    let r = m.run(&id, "stty size", &within(10)).unwrap();
    assert_eq!(r.output, "33 101\n");
    assert!(m.resize(&id, 0, 10).is_err());
    m.close(&id).unwrap();
    assert_no_survivors(&tag);
}

#[test]
fn a_persons_interrupt_stops_the_command() {
    let tag = unique_tag("view-intr");
    let m = session_manager();
    let id = start(&m, &tag);
    let r = m
        .run(
            &id,
            "sleep 600",
            &RunOptions {
                timeout: Some(Duration::from_millis(200)),
                ..Default::default()
            },
        )
        .unwrap();
    assert_eq!(r.state, RunState::Running);
    m.type_input(&id, b"\x03").unwrap();
    let r = m.wait(&id, Duration::from_secs(30), false).unwrap();
    assert_eq!(r.state, RunState::Finished(130), "{r:?}");
    assert!(r.person_typed);
    m.close(&id).unwrap();
    assert_no_survivors(&tag);
}
