//! Crash tests (`docs/host.md`, "Restart recovery"): a real host process
//! (this test binary re-run as `host_probe`, a [`DurableHost`] driven by
//! JSON lines on stdin) is killed with `kill -9` (SIGKILL) and started
//! again on the same SQLite file or PostgreSQL database. The browser side
//! (session, registry, counting executor) lives in the test process, so
//! what executed is counted outside the killed host.
//!
//! * between dispatch and result: after the restart the call is reported
//!   interrupted, its id refused, nothing executed twice;
//! * a result arriving twice across the restart is a duplicate;
//! * with an approval pending: after the restart the approver decides,
//!   the host is killed again before resuming, and the next incarnation
//!   resumes once (the backend — a file outside the killed processes —
//!   executes once) and the run gets the outcome; a later incarnation
//!   answers from the store without calling the backend.

#[path = "../../surface-runtime/tests/host_support/mod.rs"]
mod host_support;
mod support;

use std::io::{BufRead, BufReader, Write};
use std::os::unix::process::ExitStatusExt;
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc::{channel, Receiver};
use std::time::Duration;

use host_support::session;
use serde_json::{json, Value};
use support::pg::PgCluster;
use support::{auth, devices_host, temp_dir, Db};
use surface_host::host::{DurableError, DurableHost};
use surface_runtime::bridge::{
    CallOptions, CapabilityClient, DescribeScope, GatewayApproval, GatewayOutcome,
    InvocationReceipt, InvokeRequest, OrpcCallError, ResumeApprovalRequest,
};
use surface_runtime::host::{
    AgentRun, BrowserSurfaceAnnouncement, BrowserSurfaceCall, BrowserSurfaceOutcome,
    BrowserSurfaceResult, HostError, ResultDisposition, ToolCallRequest,
};
use surface_runtime::manifest::CapabilityDescriptor;
use surface_runtime::sync::BoxFuture;
use surface_runtime::{AgentError, AgentInvocationResult, ConsumerKind, ErrorCode, Retry};
use surface_store::{ApprovalDecision, Decision};

const PROBE_ENV: &str = "SURFACE_STORE_PROBE";
/// The file the probe's backend keeps its executions in.
const BACKEND_ENV: &str = "SURFACE_STORE_PROBE_BACKEND";
const WAIT: Duration = Duration::from_secs(60);

/// The host process: not a test of its own (ignored), run by
/// [`Probe::start`] with `PROBE_ENV` naming the database.
#[test]
#[ignore = "the crash tests' host process; run by them"]
fn host_probe() {
    let Ok(spec) = std::env::var(PROBE_ENV) else {
        panic!("host_probe is started by the crash tests with {PROBE_ENV} set");
    };
    let runtime = tokio::runtime::Runtime::new().unwrap();
    runtime.block_on(probe_main(Db::from_probe_spec(&spec)));
}

fn say(line: Value) {
    let mut out = std::io::stdout().lock();
    writeln!(out, "PROBE {line}").unwrap();
    out.flush().unwrap();
}

fn kind(error: &DurableError) -> String {
    match error {
        DurableError::Host(HostError::InvocationConflict(_)) => "invocation-conflict".into(),
        DurableError::Host(HostError::ChangedDuplicate(_)) => "changed-duplicate".into(),
        DurableError::NotInState { state, .. } => format!("not-in-state:{}", state.as_str()),
        DurableError::NotDecided(_) => "not-decided".into(),
        other => format!("other:{other}"),
    }
}

async fn probe_main(db: Db) {
    let (host, recovery) = DurableHost::open(devices_host(), db.connect().await, "host-1")
        .await
        .expect("probe host opens");
    let ids = |calls: &[surface_store::CallRecord]| -> Vec<String> {
        calls.iter().map(|c| c.invocation_id.clone()).collect()
    };
    say(json!({"ready": {
        "interrupted": ids(&recovery.interrupted),
        "runs": recovery.runs.iter().map(|r| r.run_id.clone()).collect::<Vec<_>>(),
        "pendingApprovals": recovery.pending_approvals.iter().map(|a| a.approval_id.clone()).collect::<Vec<_>>(),
        "awaitingResume": recovery.awaiting_resume.iter().map(|a| a.approval_id.clone()).collect::<Vec<_>>(),
    }}));
    let backend = FileBackend(std::env::var(BACKEND_ENV).unwrap_or_default().into());
    for line in std::io::stdin().lines() {
        let command: Value = serde_json::from_str(&line.unwrap()).unwrap();
        let answer = match command["op"].as_str().unwrap() {
            "announce" => {
                let a: BrowserSurfaceAnnouncement =
                    serde_json::from_value(command["announcement"].clone()).unwrap();
                let conn = command["connection"].as_str().unwrap();
                host.accept_announcement(&auth(conn), &a)
                    .await
                    .map(|_| json!("announced"))
            }
            "startRun" => host
                .start_run(AgentRun {
                    run_id: "run-1".into(),
                    session_id: "sess-1".into(),
                    tab_id: Some("tab-1".into()),
                    kind: ConsumerKind::Embedded,
                })
                .await
                .map(|_| json!("started")),
            "dispatch" => {
                let id = command["invocationId"].as_str().unwrap();
                let request = ToolCallRequest::new(
                    "run-1",
                    format!("tc-{id}"),
                    id,
                    command["capabilityId"].as_str().unwrap(),
                    command["input"].clone(),
                );
                host.dispatch(request)
                    .await
                    .map(|c| serde_json::to_value(c).unwrap())
            }
            "result" => {
                let r: BrowserSurfaceResult =
                    serde_json::from_value(command["result"].clone()).unwrap();
                let conn = command["connection"].as_str().unwrap();
                host.accept_result(&auth(conn), &r).await.map(|d| match d {
                    ResultDisposition::Completed(_) => json!("completed"),
                    ResultDisposition::Duplicate => json!("duplicate"),
                })
            }
            "decide" => host
                .decide_approval(
                    command["approvalId"].as_str().unwrap(),
                    ApprovalDecision::Approve,
                    "approver-1",
                )
                .await
                .map(|d| json!(matches!(d, Decision::Applied))),
            "resume" => host
                .resume_approval(
                    command["approvalId"].as_str().unwrap(),
                    &backend,
                    CallOptions::default(),
                )
                .await
                .map(|r| serde_json::to_value(r).unwrap()),
            "runApprovals" => host.run_approvals("run-1", 10).await.map(|a| {
                json!(a
                    .iter()
                    .map(|a| json!({"approvalId": a.approval_id, "state": a.state.as_str(),
                        "outcome": a.outcome.as_deref().map(|o| serde_json::from_str::<Value>(o).unwrap())}))
                    .collect::<Vec<_>>())
            }),
            other => panic!("unknown probe op {other}"),
        };
        say(match answer {
            Ok(value) => json!({"ok": value}),
            Err(error) => json!({"error": kind(&error)}),
        });
    }
}

/// The backend's `resumeApproval`, kept outside the killed host processes:
/// a file with one line per execution (`<invocation id> <outcome JSON>`).
/// A known id returns its stored outcome (the backend is idempotent); a new
/// one executes — appends a line — and returns `completed {purged}`.
struct FileBackend(std::path::PathBuf);

impl FileBackend {
    fn resume_now(&self, invocation_id: &str) -> Result<GatewayOutcome, OrpcCallError> {
        let text = std::fs::read_to_string(&self.0).unwrap_or_default();
        for line in text.lines() {
            if let Some((id, outcome)) = line.split_once(' ') {
                if id == invocation_id {
                    return Ok(serde_json::from_str(outcome).unwrap());
                }
            }
        }
        let outcome = GatewayOutcome::Completed {
            invocation_id: invocation_id.to_string(),
            execution_id: "exec-1".into(),
            output: json!({"purged": ["dev-2"]}),
        };
        let mut file = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&self.0)
            .unwrap();
        writeln!(
            file,
            "{invocation_id} {}",
            serde_json::to_string(&outcome).unwrap()
        )
        .unwrap();
        file.sync_all().unwrap();
        Ok(outcome)
    }
}

impl CapabilityClient for FileBackend {
    fn describe(
        &self,
        _: DescribeScope,
        _: CallOptions,
    ) -> BoxFuture<'_, Result<Vec<CapabilityDescriptor>, OrpcCallError>> {
        unreachable!("the host never describes")
    }
    fn invoke(
        &self,
        _: InvokeRequest,
        _: CallOptions,
    ) -> BoxFuture<'_, Result<GatewayOutcome, OrpcCallError>> {
        unreachable!("the host never invokes: nothing is re-dispatched")
    }
    fn get_invocation<'a>(
        &'a self,
        _: &'a str,
        _: CallOptions,
    ) -> BoxFuture<'a, Result<Option<InvocationReceipt>, OrpcCallError>> {
        unreachable!("not reconciled here")
    }
    fn get_approval<'a>(
        &'a self,
        _: &'a str,
        _: CallOptions,
    ) -> BoxFuture<'a, Result<Option<GatewayApproval>, OrpcCallError>> {
        unreachable!("the host never reads approvals here")
    }
    fn resume_approval(
        &self,
        request: ResumeApprovalRequest,
        _: CallOptions,
    ) -> BoxFuture<'_, Result<GatewayOutcome, OrpcCallError>> {
        Box::pin(std::future::ready(self.resume_now(&request.invocation_id)))
    }
}

/// A running host process.
struct Probe {
    child: Child,
    stdin: ChildStdin,
    lines: Receiver<Value>,
}

impl Probe {
    fn start(db: &Db) -> (Self, Value) {
        Self::start_with(db, std::path::Path::new(""))
    }

    /// [`Probe::start`] with the backend's execution file.
    fn start_with(db: &Db, backend: &std::path::Path) -> (Self, Value) {
        let mut child = Command::new(std::env::current_exe().unwrap())
            .args([
                "host_probe",
                "--exact",
                "--ignored",
                "--nocapture",
                "--test-threads=1",
            ])
            .env(PROBE_ENV, db.probe_spec())
            .env(BACKEND_ENV, backend)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .expect("the host process starts");
        let stdin = child.stdin.take().unwrap();
        let stdout = child.stdout.take().unwrap();
        let (tx, lines) = channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                // libtest prints `test host_probe ... ` before the first line.
                if let Some((_, json)) = line.split_once("PROBE ") {
                    if tx.send(serde_json::from_str(json).unwrap()).is_err() {
                        break;
                    }
                }
            }
        });
        let mut probe = Self {
            child,
            stdin,
            lines,
        };
        let ready = probe.next("the host process's ready line");
        (probe, ready["ready"].clone())
    }

    fn next(&mut self, what: &str) -> Value {
        self.lines
            .recv_timeout(WAIT)
            .unwrap_or_else(|e| panic!("{what} did not arrive within {WAIT:?}: {e}"))
    }

    fn ask(&mut self, command: Value) -> Value {
        writeln!(self.stdin, "{command}").unwrap();
        self.stdin.flush().unwrap();
        self.next(&format!("the answer to {}", command["op"]))
    }

    fn announce(&mut self, connection: &str, a: &BrowserSurfaceAnnouncement) {
        let answer =
            self.ask(json!({"op": "announce", "connection": connection, "announcement": a}));
        assert_eq!(answer, json!({"ok": "announced"}));
    }

    fn dispatch(&mut self, id: &str) -> Value {
        self.ask(json!({"op": "dispatch", "invocationId": id,
            "capabilityId": "domain:devices.disable", "input": {"reason": "lost"}}))
    }

    /// `kill -9`, and the exit status says so.
    fn kill9(mut self) {
        self.child.kill().expect("SIGKILL sent");
        let status = self.child.wait().unwrap();
        assert_eq!(status.signal(), Some(9), "the host process died of SIGKILL");
    }
}

fn killed_between_dispatch_and_result(db: &Db) {
    let s = session();
    let (mut probe, ready) = Probe::start(db);
    assert_eq!(ready["interrupted"], json!([]));
    probe.announce("conn-1", &s.session.connect("conn-1").unwrap());
    assert_eq!(
        probe.ask(json!({"op": "startRun"})),
        json!({"ok": "started"})
    );
    let call: BrowserSurfaceCall =
        serde_json::from_value(probe.dispatch("inv-1")["ok"].clone()).expect("a call");
    // The page starts executing it; the executor holds it (no result yet).
    let gate = s.fx.executor.close_gate();
    let mut pending = Box::pin(s.session.invoke(call));
    assert!(futures_util::FutureExt::now_or_never(&mut pending).is_none());
    assert_eq!(
        s.fx.executor.count(),
        1,
        "{}: the call reached the executor",
        db.name()
    );
    probe.kill9();

    let (mut probe, ready) = Probe::start(db);
    assert_eq!(ready["interrupted"], json!(["inv-1"]), "{}", db.name());
    assert_eq!(ready["runs"], json!(["run-1"]));
    // The tab reconnects (the page aborts what was pending on the old
    // connection) and announces to the restarted host.
    probe.announce("conn-2", &s.session.connect("conn-2").unwrap());
    assert_eq!(
        probe.dispatch("inv-1"),
        json!({"error": "invocation-conflict"})
    );
    gate.cancel();
    let aborted = futures_util::FutureExt::now_or_never(&mut pending).expect("answered");
    assert!(
        serde_json::to_string(&aborted.result)
            .unwrap()
            .contains("disconnected"),
        "{aborted:?}"
    );
    assert_eq!(
        s.fx.executor.count(),
        1,
        "{}: nothing executed twice",
        db.name()
    );
    // The late answer of the interrupted call changes nothing.
    let late = json!({"op": "result", "connection": "conn-2", "result": aborted});
    assert_eq!(
        probe.ask(late),
        json!({"error": "not-in-state:interrupted"})
    );
    probe.kill9();
}

fn a_result_twice_across_the_restart_is_a_duplicate(db: &Db) {
    let s = session();
    let (mut probe, _) = Probe::start(db);
    probe.announce("conn-1", &s.session.connect("conn-1").unwrap());
    probe.ask(json!({"op": "startRun"}));
    let call: BrowserSurfaceCall =
        serde_json::from_value(probe.dispatch("inv-1")["ok"].clone()).expect("a call");
    let result = futures_util::FutureExt::now_or_never(s.session.invoke(call)).expect("answered");
    let deliver = |conn: &str| json!({"op": "result", "connection": conn, "result": result});
    assert_eq!(probe.ask(deliver("conn-1")), json!({"ok": "completed"}));
    probe.kill9();

    let (mut probe, ready) = Probe::start(db);
    assert_eq!(ready["interrupted"], json!([]), "{}", db.name());
    probe.announce("conn-2", &s.session.connect("conn-2").unwrap());
    assert_eq!(
        probe.ask(deliver("conn-2")),
        json!({"ok": "duplicate"}),
        "{}",
        db.name()
    );
    assert_eq!(s.fx.executor.count(), 1);
    probe.kill9();
}

/// The page's answer to `call`: the backend asked for approval `appr-1`.
fn approval_required(call: &BrowserSurfaceCall) -> BrowserSurfaceResult {
    let mut details = serde_json::Map::new();
    details.insert("approvalId".into(), json!("appr-1"));
    let error = AgentError {
        code: ErrorCode::DomainApprovalRequired,
        message: "The backend requires an approval.".into(),
        retry: Retry::No,
        details,
    };
    BrowserSurfaceResult::for_call(
        &call.identity,
        call,
        BrowserSurfaceOutcome::Invocation(AgentInvocationResult::err(
            call.invocation.invocation_id.clone(),
            call.invocation.capability_id.clone(),
            error,
            call.invocation.surface_version.unwrap(),
        )),
    )
}

fn killed_with_an_approval_pending(db: &Db, dir: &std::path::Path) {
    let s = session();
    let backend = dir.join(format!("backend-{}.log", db.name()));
    let (mut probe, _) = Probe::start_with(db, &backend);
    probe.announce("conn-1", &s.session.connect("conn-1").unwrap());
    probe.ask(json!({"op": "startRun"}));
    let call: BrowserSurfaceCall =
        serde_json::from_value(probe.dispatch("inv-a")["ok"].clone()).expect("a call");
    let result = approval_required(&call);
    assert_eq!(
        probe.ask(json!({"op": "result", "connection": "conn-1", "result": result})),
        json!({"ok": "completed"})
    );
    probe.kill9();

    // Restarted: the approval is still pending; the approver decides, and
    // the host dies again before it resumes.
    let (mut probe, ready) = Probe::start_with(db, &backend);
    assert_eq!(ready["pendingApprovals"], json!(["inv-a"]), "{}", db.name());
    // The host knows the approval by its held call's invocation id.
    let resume = json!({"op": "resume", "approvalId": "inv-a"});
    assert_eq!(probe.ask(resume.clone()), json!({"error": "not-decided"}));
    assert_eq!(
        probe.ask(json!({"op": "decide", "approvalId": "inv-a"})),
        json!({"ok": true})
    );
    probe.kill9();
    assert!(!backend.exists(), "{}: nothing resumed yet", db.name());

    // The next incarnation resumes once; the run gets the outcome.
    let (mut probe, ready) = Probe::start_with(db, &backend);
    assert_eq!(ready["pendingApprovals"], json!([]), "{}", db.name());
    assert_eq!(ready["awaitingResume"], json!(["inv-a"]), "{}", db.name());
    let outcome = json!({"status": "ok", "invocationId": "inv-a",
        "capabilityId": "domain:devices.disable", "output": {"purged": ["dev-2"]},
        "surfaceVersion": "0"});
    assert_eq!(
        probe.ask(resume.clone()),
        json!({"ok": outcome}),
        "{}",
        db.name()
    );
    assert_eq!(
        probe.ask(json!({"op": "runApprovals"})),
        json!({"ok": [{"approvalId": "inv-a", "state": "approved", "outcome": outcome}]})
    );
    probe.kill9();
    let executions = std::fs::read_to_string(&backend).unwrap();
    assert_eq!(
        executions.lines().count(),
        1,
        "{}: executed once",
        db.name()
    );

    // Without the backend's file, a call to it would execute again: the
    // next incarnation answers from the store.
    std::fs::remove_file(&backend).unwrap();
    let (mut probe, ready) = Probe::start_with(db, &backend);
    assert_eq!(ready["awaitingResume"], json!([]), "{}", db.name());
    assert_eq!(probe.ask(resume), json!({"ok": outcome}), "{}", db.name());
    probe.kill9();
    assert!(
        !backend.exists(),
        "{}: the backend was not called again",
        db.name()
    );
    assert_eq!(
        s.fx.executor.count(),
        0,
        "the page call was never re-dispatched"
    );
}

#[test]
fn crash_sqlite_approval_pending_is_decided_and_resumed_once_across_restarts() {
    let dir = temp_dir("surface-store-crash");
    killed_with_an_approval_pending(&Db::Sqlite(dir.join("host.db")), &dir);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn crash_sqlite_killed_between_dispatch_and_result() {
    let dir = temp_dir("surface-store-crash");
    killed_between_dispatch_and_result(&Db::Sqlite(dir.join("host.db")));
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn crash_sqlite_result_twice_across_restart_is_duplicate() {
    let dir = temp_dir("surface-store-crash");
    a_result_twice_across_the_restart_is_a_duplicate(&Db::Sqlite(dir.join("host.db")));
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn crash_postgres() {
    let Some(cluster) = PgCluster::require("crash_postgres") else {
        return;
    };
    killed_between_dispatch_and_result(&Db::Postgres(cluster.database("crash")));
    a_result_twice_across_the_restart_is_a_duplicate(&Db::Postgres(cluster.database("crash")));
    let dir = temp_dir("surface-store-crash-pg");
    killed_with_an_approval_pending(&Db::Postgres(cluster.database("crash")), &dir);
    let _ = std::fs::remove_dir_all(&dir);
}
