//! The host-side Rust examples of `docs/agents.md` and `docs/host.md`,
//! compiled and run by `cargo test --doc -p agent-surface-docs-host` (part
//! of `cargo test --workspace`). This crate has what a native agent host
//! application has — `agent-surface` (features `mcp`, `axum`, `sqlite`,
//! `tokio`), `tokio` and `axum` — and nothing else, so an example that
//! needs another crate fails here as it would in such an application.
//!
//! The examples' hidden set-up lines take the page, the transport and the
//! backend from [`fixture`]: stand-ins for what the application provides
//! (its UI state, its socket, its oRPC server), so that what a reader
//! copies is the library's part, compiled and run.
#![forbid(unsafe_code)]

#[cfg(doctest)]
#[doc = include_str!("../../../docs/agents.md")]
pub struct Agents;

#[cfg(doctest)]
#[doc = include_str!("../../../docs/host.md")]
pub struct Host;

/// The application's side of the examples (not part of any example).
#[doc(hidden)]
pub mod fixture {
    use std::sync::{Arc, Mutex};

    use agent_surface::host::{
        AgentHost, AgentRun, AuthenticatedConnection, BrowserSurfaceAnnouncement, KnownBuild,
        ToolCallRequest,
    };
    use agent_surface::serde::Serialize;
    use agent_surface::serde_json::{self, json, Value};
    use agent_surface::sync::BoxFuture;
    use agent_surface::{
        AgentProcedureBinding, AgentProcedureExecutor, ConfirmationLevel, ConsumerKind, ErrorCode,
        ExecuteRequest, ExecutionError, RegistrationHandle, Retry, SurfaceRegistry,
    };

    /// The manifest of the examples (`docs/example.manifest.json`).
    pub mod api {
        agent_surface::manifest!("agent.manifest.json");
    }

    /// The table's selection, bound into `devices.disable` (locked).
    #[agent_surface::agent_procedure(api, "devices.disable", overridable(reason))]
    pub struct DisableSelection {
        /// The selected ids.
        pub device_ids: Vec<String>,
        /// Why (the agent may set it).
        pub reason: Option<String>,
    }

    /// The page's build id.
    pub const BUILD_ID: &str = "build-2026.12";

    /// The backend: `devices.disable` answers `{"disabled": deviceIds}`.
    pub struct Backend;

    impl AgentProcedureExecutor for Backend {
        fn execute(&self, request: ExecuteRequest) -> BoxFuture<'_, Result<Value, ExecutionError>> {
            Box::pin(async move {
                match &*request.path {
                    "devices.disable" => Ok(json!({"disabled": request.input["deviceIds"]})),
                    _ => Err(ExecutionError::new(
                        ErrorCode::ExecutionFailed,
                        "Not served here.",
                        Retry::No,
                    )),
                }
            })
        }
    }

    /// The page: a registry over the example manifest with
    /// `devices.disable` bound to a selection of `dev-1`.
    pub struct Page {
        /// The page's registry.
        pub registry: SurfaceRegistry,
        _disable: RegistrationHandle,
    }

    impl Page {
        /// A page whose `devices.disable` asks for `confirmation`.
        pub fn new(confirmation: ConfirmationLevel) -> Self {
            let registry = SurfaceRegistry::new(api::authority());
            registry.set_procedure_executor(Arc::new(Backend));
            let disable = registry
                .register_procedure(
                    AgentProcedureBinding::new(api::devices::disable())
                        .bind(|| DisableSelection {
                            device_ids: vec!["dev-1".into()],
                            reason: None,
                        })
                        .confirmation(confirmation),
                )
                .expect("devices.disable registers");
            Self {
                registry,
                _disable: disable,
            }
        }
    }

    /// The application's socket to the host: records each message as the
    /// JSON text it would send.
    #[derive(Clone, Default)]
    pub struct Transport(Arc<Mutex<Vec<String>>>);

    impl Transport {
        /// Sends one message.
        pub fn send<T: Serialize>(&self, message: &T) {
            let text = serde_json::to_string(message).expect("a protocol message serializes");
            self.0.lock().unwrap().push(text);
        }

        /// Everything sent, oldest first.
        pub fn sent(&self) -> Vec<Value> {
            let sent = self.0.lock().unwrap();
            sent.iter()
                .map(|t| serde_json::from_str(t).unwrap())
                .collect()
        }
    }

    /// An AG-UI agent server stand-in: answers each run with the next
    /// recorded event stream (`tests/fixtures/agui/`, from `@ag-ui/mastra`;
    /// the tool name as this page declares it) and keeps every request.
    #[derive(Clone, Default)]
    pub struct AgUiServer(Arc<Mutex<(usize, Vec<Value>)>>);

    /// The recorded runs of the `disable` script: a call of
    /// `devices__disable`, then text quoting its result.
    const AG_UI_RUNS: [&str; 2] = [
        include_str!("../../fixtures/agui/disable-1.sse"),
        include_str!("../../fixtures/agui/disable-2.sse"),
    ];

    impl AgUiServer {
        /// The `RunAgentInput`s posted, oldest first.
        pub fn requests(&self) -> Vec<Value> {
            self.0.lock().unwrap().1.clone()
        }
    }

    impl agent_surface::agui::AgUiTransport for AgUiServer {
        fn url(&self) -> &str {
            "http://agent.example/agent"
        }

        fn post(
            &self,
            body: String,
            _limits: agent_surface::agui::AgUiLimits,
        ) -> BoxFuture<
            'static,
            Result<agent_surface::agui::AgUiResponse, agent_surface::agui::AgUiError>,
        > {
            let mut state = self.0.lock().unwrap();
            state.1.push(serde_json::from_str(&body).unwrap());
            let run = AG_UI_RUNS[state.0.min(1)].replace("devices_disable", "devices__disable");
            state.0 += 1;
            let chunks = run.as_bytes().chunks(64).map(<[u8]>::to_vec).collect();
            let response = agent_surface::agui::AgUiResponse::from_chunks(
                200,
                Some("text/event-stream".into()),
                chunks,
            );
            Box::pin(async move { Ok(response) })
        }
    }

    /// The dialog of the application: what it shows, by confirmation id.
    #[derive(Clone, Default)]
    pub struct Dialogs(Arc<Mutex<Vec<(String, Value)>>>);

    impl Dialogs {
        /// Shows a confirmation of `input`.
        pub fn show(&self, confirmation_id: &str, input: &Value) {
            let mut shown = self.0.lock().unwrap();
            shown.push((confirmation_id.to_string(), input.clone()));
        }

        /// Takes it down.
        pub fn hide(&self, confirmation_id: &str) {
            self.0
                .lock()
                .unwrap()
                .retain(|(id, _)| id != confirmation_id);
        }

        /// What is shown.
        pub fn shown(&self) -> Vec<(String, Value)> {
            self.0.lock().unwrap().clone()
        }

        /// Waits until a confirmation is shown (the user's click): its id.
        pub async fn clicked_approve(&self) -> String {
            let shown = async {
                loop {
                    if let Some((id, _)) = self.shown().first() {
                        return id.clone();
                    }
                    tokio::time::sleep(std::time::Duration::from_millis(5)).await;
                }
            };
            tokio::time::timeout(std::time::Duration::from_secs(5), shown)
                .await
                .expect("no confirmation was shown within 5 s")
        }
    }

    /// The host side of one call: an agent host that knows the page's
    /// build, accepted `announcement` on connection `conn-1` and dispatched
    /// `devices.disable` (input `{"reason": "lost"}`) for run `run-1`;
    /// returns the host and the call as the page receives it (JSON text).
    pub fn dispatched_call(
        announcement: &BrowserSurfaceAnnouncement,
        invocation_id: &str,
    ) -> (AgentHost, String) {
        let identity = &announcement.identity;
        let host = AgentHost::new().with_known_build(KnownBuild::new(
            "console",
            BUILD_ID,
            api::authority(),
        ));
        let auth = AuthenticatedConnection::new(
            announcement.connection_id.clone(),
            identity.session_id.clone(),
            "user-1",
        );
        host.accept_announcement(&auth, announcement)
            .expect("the announcement is accepted");
        host.start_run(AgentRun {
            run_id: "run-1".into(),
            session_id: identity.session_id.clone(),
            tab_id: Some(identity.tab_id.clone()),
            kind: ConsumerKind::Embedded,
        })
        .expect("the run starts");
        let call = host
            .dispatch(ToolCallRequest::new(
                "run-1",
                "tool-call-1",
                invocation_id,
                "domain:devices.disable",
                json!({"reason": "lost"}),
            ))
            .expect("the call is dispatched");
        let text = serde_json::to_string(&call).unwrap();
        (host, text)
    }

    /// The backend's capability gateway with the requester's credential
    /// (`docs/host.md`, "The approvals service"): refuses every call — the
    /// example only mounts the service.
    pub struct Gateway;

    fn unreachable_gateway<T: Send + 'static>(
    ) -> BoxFuture<'static, Result<T, agent_surface::bridge::OrpcCallError>> {
        Box::pin(async {
            Err(agent_surface::bridge::OrpcCallError::Transport {
                message: "no gateway in the examples".into(),
            })
        })
    }

    impl agent_surface::bridge::CapabilityClient for Gateway {
        fn describe(
            &self,
            _: agent_surface::bridge::DescribeScope,
            _: agent_surface::bridge::CallOptions,
        ) -> BoxFuture<
            '_,
            Result<
                Vec<agent_surface::manifest::CapabilityDescriptor>,
                agent_surface::bridge::OrpcCallError,
            >,
        > {
            unreachable_gateway()
        }
        fn invoke(
            &self,
            _: agent_surface::bridge::InvokeRequest,
            _: agent_surface::bridge::CallOptions,
        ) -> BoxFuture<
            '_,
            Result<agent_surface::bridge::GatewayOutcome, agent_surface::bridge::OrpcCallError>,
        > {
            unreachable_gateway()
        }
        fn get_invocation<'a>(
            &'a self,
            _: &'a str,
            _: agent_surface::bridge::CallOptions,
        ) -> BoxFuture<
            'a,
            Result<
                Option<agent_surface::bridge::InvocationReceipt>,
                agent_surface::bridge::OrpcCallError,
            >,
        > {
            unreachable_gateway()
        }
        fn get_approval<'a>(
            &'a self,
            _: &'a str,
            _: agent_surface::bridge::CallOptions,
        ) -> BoxFuture<
            'a,
            Result<
                Option<agent_surface::bridge::GatewayApproval>,
                agent_surface::bridge::OrpcCallError,
            >,
        > {
            unreachable_gateway()
        }
        fn resume_approval(
            &self,
            _: agent_surface::bridge::ResumeApprovalRequest,
            _: agent_surface::bridge::CallOptions,
        ) -> BoxFuture<
            '_,
            Result<agent_surface::bridge::GatewayOutcome, agent_surface::bridge::OrpcCallError>,
        > {
            unreachable_gateway()
        }
    }
}
