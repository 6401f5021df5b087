//! The engine-call protocol, through its public surface: every operation made by a
//! `RemoteEngine`, carried in each of its forms (the ABI's `invoke` form, serde's), served by
//! `dispatch`, answers what the engine itself answers.

use std::sync::{Arc, Mutex};

use ctxhost_protocol::{
    dispatch, invoke::ENGINE_PREFIX, EngineCall, EngineReply, EngineTransport, Op, RemoteEngine,
};
use ctxhost_sdk::{
    CompressOptions, CompressionReport, ContextEngine, ContextSelection, EngineError, EngineStatus,
    ErrorKind, Message, Recalled, RecalledSource, SelectRequest, SessionInfo, SessionStart, Usage,
};
use serde_json::{json, Value};

/// An engine whose every answer depends on its arguments, and which logs what it was asked.
struct Recorder {
    log: Arc<Mutex<Vec<String>>>,
}

impl Recorder {
    fn new() -> (Self, Arc<Mutex<Vec<String>>>) {
        let log = Arc::new(Mutex::new(Vec::new()));
        (Recorder { log: log.clone() }, log)
    }

    fn saw(&self, what: String) {
        self.log.lock().unwrap().push(what);
    }
}

fn texts(messages: &[Message]) -> Vec<String> {
    messages
        .iter()
        .map(|m| m.content_text().into_owned())
        .collect()
}

impl ContextEngine for Recorder {
    fn name(&self) -> &str {
        "recorder"
    }

    fn update_from_response(&mut self, usage: &Usage) -> Result<(), EngineError> {
        self.saw(format!("update_from_response {usage:?}"));
        Ok(())
    }

    fn should_compress(&mut self, prompt_tokens: u64) -> Result<bool, EngineError> {
        self.saw(format!("should_compress {prompt_tokens}"));
        Ok(prompt_tokens > 100)
    }

    fn should_compress_preflight(&mut self, messages: &[Message]) -> Result<bool, EngineError> {
        self.saw(format!("should_compress_preflight {:?}", texts(messages)));
        Ok(messages.len() == 3)
    }

    fn compress(
        &mut self,
        messages: &[Message],
        options: &CompressOptions,
    ) -> Result<Vec<Message>, EngineError> {
        self.saw(format!("compress {:?} {options:?}", texts(messages)));
        Ok(messages[..1].to_vec())
    }

    fn has_content_to_compress(&mut self, messages: &[Message]) -> Result<bool, EngineError> {
        self.saw(format!("has_content_to_compress {:?}", texts(messages)));
        Ok(messages.len() != 3)
    }

    fn on_session_start(&mut self, session: &SessionStart) -> Result<(), EngineError> {
        self.saw(format!("on_session_start {session:?}"));
        Ok(())
    }

    fn on_session_end(
        &mut self,
        session_id: &str,
        messages: &[Message],
    ) -> Result<(), EngineError> {
        self.saw(format!("on_session_end {session_id} {:?}", texts(messages)));
        Ok(())
    }

    fn on_session_reset(&mut self) -> Result<(), EngineError> {
        self.saw("on_session_reset".to_string());
        Ok(())
    }

    fn tool_schemas(&mut self) -> Result<Vec<Value>, EngineError> {
        self.saw("tool_schemas".to_string());
        Ok(vec![
            json!({"type": "function", "function": {"name": "probe"}}),
        ])
    }

    fn handle_tool_call(&mut self, name: &str, args: &Value) -> Result<String, EngineError> {
        self.saw(format!("handle_tool_call {name} {args}"));
        Ok(format!("{name} got {args}"))
    }

    fn status(&mut self) -> Result<EngineStatus, EngineError> {
        self.saw("status".to_string());
        Ok(EngineStatus {
            last_prompt_tokens: 7,
            threshold_tokens: 75,
            context_length: 100,
            usage_percent: 7.0,
            compression_count: 2,
            details: json!({"store": "memory"}),
        })
    }

    fn update_model(&mut self, model: &str, context_length: u64) -> Result<(), EngineError> {
        self.saw(format!("update_model {model} {context_length}"));
        Ok(())
    }

    fn last_compression(&mut self) -> Result<Option<CompressionReport>, EngineError> {
        self.saw("last_compression".to_string());
        Ok(Some(CompressionReport {
            tokens_before: 10,
            tokens_after: 4,
            ..CompressionReport::default()
        }))
    }

    fn sessions(&mut self) -> Result<Vec<SessionInfo>, EngineError> {
        self.saw("sessions".to_string());
        Ok(vec![SessionInfo {
            id: "s1".to_string(),
            messages: 3,
            ..SessionInfo::default()
        }])
    }

    fn session(&mut self, session_id: &str) -> Result<Option<SessionInfo>, EngineError> {
        self.saw(format!("session {session_id}"));
        Ok((session_id == "s1").then(|| SessionInfo {
            id: session_id.to_string(),
            ..SessionInfo::default()
        }))
    }

    fn delete_session(&mut self, session_id: &str) -> Result<bool, EngineError> {
        self.saw(format!("delete_session {session_id}"));
        Ok(session_id == "s1")
    }

    fn select_context(
        &mut self,
        messages: &[Message],
        request: &SelectRequest,
    ) -> Result<ContextSelection, EngineError> {
        self.saw(format!("select_context {:?} {request:?}", texts(messages)));
        let recalled = Recalled {
            source: RecalledSource::Messages {
                ids: vec![format!("msg_{}", request.budget_tokens)],
            },
            tokens: 7,
        };
        let mut selected = messages.to_vec();
        selected.insert(1, Message::user(recalled.marker_line()));
        Ok(ContextSelection {
            messages: selected,
            recalled: vec![recalled],
        })
    }

    fn invoke(&mut self, op: &str, payload: &Value) -> Result<Value, EngineError> {
        self.saw(format!("invoke {op} {payload}"));
        match op {
            "echo" => Ok(json!({"echo": payload})),
            other => Err(EngineError::unsupported(other)),
        }
    }

    fn recognize_written(&mut self, messages: &[Message]) -> Result<(), EngineError> {
        self.saw(format!("recognize_written {:?}", texts(messages)));
        Ok(())
    }
}

/// The ABI's form: what a plugin library reads and writes through `invoke`.
struct ThroughInvoke(Box<dyn ContextEngine>);

impl EngineTransport for ThroughInvoke {
    fn should_compress(&mut self, prompt_tokens: u64) -> Result<bool, EngineError> {
        self.0.should_compress(prompt_tokens)
    }

    fn compress(
        &mut self,
        messages: &[Message],
        options: &CompressOptions,
    ) -> Result<Vec<Message>, EngineError> {
        self.0.compress(messages, options)
    }

    fn call(&mut self, call: &EngineCall<&[Message]>) -> Result<EngineReply, EngineError> {
        let sent = call.to_invoke()?;
        let received = EngineCall::from_invoke(&sent.op, &sent.payload, sent.messages)?;
        assert_eq!(&received, call, "the call reads back as sent");
        let answer = dispatch(self.0.as_mut(), received)?.to_invoke()?;
        EngineReply::from_invoke(call.op(), &answer)
    }
}

/// Serde's form, lists included: what an isolated engine's process reads and writes.
struct ThroughSerde(Box<dyn ContextEngine>);

impl EngineTransport for ThroughSerde {
    fn should_compress(&mut self, prompt_tokens: u64) -> Result<bool, EngineError> {
        self.0.should_compress(prompt_tokens)
    }

    fn compress(
        &mut self,
        messages: &[Message],
        options: &CompressOptions,
    ) -> Result<Vec<Message>, EngineError> {
        self.0.compress(messages, options)
    }

    fn call(&mut self, call: &EngineCall<&[Message]>) -> Result<EngineReply, EngineError> {
        let line = serde_json::to_value(call.clone().map_list(<[Message]>::to_vec)).unwrap();
        assert_eq!(line["op"], call.op().name(), "{line}");
        let owned: EngineCall<Vec<Message>> = serde_json::from_value(line).unwrap();
        // The served call borrows its list from where the receiving side keeps it.
        let mut held = Vec::new();
        let received = owned
            .map_list(|list| held = list)
            .map_list(|()| held.as_slice());
        assert_eq!(&received, call, "the call reads back as sent");
        let reply = dispatch(self.0.as_mut(), received)?;
        let line = serde_json::to_value(&reply).unwrap();
        assert_eq!(line["op"], call.op().name(), "{line}");
        Ok(serde_json::from_value(line).unwrap())
    }
}

fn conversation() -> Vec<Message> {
    vec![
        Message::system("be brief"),
        Message::user("hello"),
        Message::assistant("hi"),
    ]
}

/// Calls the trait method of `op` with fixed arguments; the answer, printed.
fn exercise(engine: &mut dyn ContextEngine, op: Op) -> String {
    let messages = conversation();
    let answer = match op {
        Op::UpdateFromResponse => format!(
            "{:?}",
            engine.update_from_response(&Usage {
                prompt_tokens: 120,
                completion_tokens: 5,
                total_tokens: 125,
                cache_read_tokens: Some(100),
                ..Usage::default()
            })
        ),
        Op::ShouldCompress => format!("{:?}", engine.should_compress(120)),
        Op::ShouldCompressPreflight => format!("{:?}", engine.should_compress_preflight(&messages)),
        Op::Compress => format!(
            "{:?}",
            engine.compress(
                &messages,
                &CompressOptions {
                    focus_topic: Some("rust".to_string()),
                    force: true,
                    ..CompressOptions::default()
                }
            )
        ),
        Op::HasContentToCompress => format!("{:?}", engine.has_content_to_compress(&messages)),
        Op::OnSessionStart => format!(
            "{:?}",
            engine.on_session_start(&SessionStart {
                session_id: "s1".to_string(),
                model: Some("gpt-4o".to_string()),
                context_length: Some(128_000),
            })
        ),
        Op::OnSessionEnd => format!("{:?}", engine.on_session_end("s1", &messages)),
        Op::OnSessionReset => format!("{:?}", engine.on_session_reset()),
        Op::ToolSchemas => format!("{:?}", engine.tool_schemas()),
        Op::HandleToolCall => format!(
            "{:?}",
            engine.handle_tool_call("probe", &json!({"pattern": "a.*b", "limit": 3}))
        ),
        Op::Status => format!("{:?}", engine.status()),
        Op::UpdateModel => format!("{:?}", engine.update_model("gpt-4o-mini", 64_000)),
        Op::LastCompression => format!("{:?}", engine.last_compression()),
        Op::Sessions => format!("{:?}", engine.sessions()),
        Op::Session => format!("{:?} {:?}", engine.session("s1"), engine.session("s2")),
        Op::DeleteSession => format!(
            "{:?} {:?}",
            engine.delete_session("s1"),
            engine.delete_session("s2")
        ),
        Op::SelectContext => format!(
            "{:?}",
            engine.select_context(
                &messages,
                &SelectRequest {
                    incoming: messages.last().cloned(),
                    budget_tokens: 900,
                }
            )
        ),
        Op::RecognizeWritten => format!("{:?}", engine.recognize_written(&messages[..1])),
        Op::Invoke => format!(
            "{:?} {:?}",
            engine.invoke("echo", &json!([1, "two"])),
            engine.invoke("nope", &Value::Null).map_err(|e| e.kind())
        ),
    };
    assert!(
        !answer.contains("Err(") || op == Op::Invoke,
        "{op}: {answer}"
    );
    answer
}

#[test]
fn every_operation_answers_the_same_through_each_form_as_in_the_engine_itself() {
    type Wrap = fn(Box<dyn ContextEngine>) -> Box<dyn ContextEngine>;
    let forms: [(&str, Wrap); 2] = [
        ("invoke", |engine| {
            Box::new(RemoteEngine::new("recorder", ThroughInvoke(engine)))
        }),
        ("serde", |engine| {
            Box::new(RemoteEngine::new("recorder", ThroughSerde(engine)))
        }),
    ];
    for op in Op::ALL {
        let (mut direct, direct_log) = Recorder::new();
        let expected = exercise(&mut direct, op);
        for (form, wrap) in forms {
            let (engine, log) = Recorder::new();
            let mut remote = wrap(Box::new(engine));
            assert_eq!(
                exercise(remote.as_mut(), op),
                expected,
                "{op} through {form}"
            );
            assert_eq!(
                *log.lock().unwrap(),
                *direct_log.lock().unwrap(),
                "{op} through {form}: the engine was asked the same"
            );
        }
        assert!(
            direct_log.lock().unwrap()[0].starts_with(op.name()),
            "{op} reached its own method: {:?}",
            direct_log.lock().unwrap()
        );
    }
}

#[test]
fn operation_names_are_the_frozen_ones_and_read_back() {
    // Plugins built earlier answer `invoke` by these names: they never change.
    let frozen = [
        "update_from_response",
        "should_compress",
        "should_compress_preflight",
        "compress",
        "has_content_to_compress",
        "on_session_start",
        "on_session_end",
        "on_session_reset",
        "tool_schemas",
        "handle_tool_call",
        "status",
        "update_model",
        "last_compression",
        "sessions",
        "session",
        "delete_session",
        "select_context",
        "invoke",
        "recognize_written",
    ];
    let names: Vec<&str> = Op::ALL.iter().map(|op| op.name()).collect();
    assert_eq!(names, frozen);
    for op in Op::ALL {
        assert_eq!(Op::from_name(op.name()), Some(op));
    }
    assert_eq!(Op::from_name("nope"), None);
}

#[test]
fn invoke_carries_the_payloads_plugins_already_read() {
    let messages = conversation();
    let cases: Vec<(EngineCall<&[Message]>, &str, Value)> = vec![
        (
            EngineCall::UpdateModel {
                model: "m".to_string(),
                context_length: 9,
            },
            "update_model",
            json!({"model": "m", "context_length": 9}),
        ),
        (
            EngineCall::OnSessionEnd {
                session_id: "s".to_string(),
                messages: &messages,
            },
            "on_session_end",
            json!({"session_id": "s"}),
        ),
        (
            EngineCall::HandleToolCall {
                name: "t".to_string(),
                args: json!({"a": 1}),
            },
            "handle_tool_call",
            json!({"name": "t", "args": {"a": 1}}),
        ),
        (
            EngineCall::UpdateFromResponse {
                usage: Usage {
                    prompt_tokens: 1,
                    completion_tokens: 2,
                    total_tokens: 3,
                    ..Usage::default()
                },
            },
            "update_from_response",
            json!({"prompt_tokens": 1, "completion_tokens": 2, "total_tokens": 3}),
        ),
        (EngineCall::Status, "status", Value::Null),
        (
            EngineCall::ShouldCompressPreflight {
                messages: &messages,
            },
            "should_compress_preflight",
            Value::Null,
        ),
        (
            EngineCall::Invoke {
                name: "backup".to_string(),
                payload: json!({"to": "x"}),
            },
            "engine.backup",
            json!({"to": "x"}),
        ),
    ];
    for (call, op, payload) in cases {
        let sent = call.to_invoke().unwrap();
        assert_eq!(sent.op, op);
        assert_eq!(
            serde_json::from_str::<Value>(&sent.payload).unwrap(),
            payload
        );
        assert_eq!(sent.messages.len(), call.list().map_or(0, |l| l.len()));
    }
    assert!(ENGINE_PREFIX.ends_with('.'));
}

#[test]
fn invoke_refuses_names_that_are_not_calls() {
    for op in ["nope", "compress", "should_compress", "invoke"] {
        let error = EngineCall::from_invoke(op, "null", &[]).unwrap_err();
        assert_eq!(error.kind(), ErrorKind::Unsupported, "{op}");
    }
    // An empty payload reads as none.
    assert_eq!(
        EngineCall::from_invoke("status", "", &[]).unwrap(),
        EngineCall::Status
    );
    let error = EngineReply::from_invoke(Op::Status, "{\"nope\": 1}").unwrap_err();
    assert!(error.message().contains("`status`"), "{}", error.message());
}

/// A plugin built before any operation but the hot paths existed.
struct Ancient;

impl EngineTransport for Ancient {
    fn should_compress(&mut self, _: u64) -> Result<bool, EngineError> {
        Ok(false)
    }

    fn compress(
        &mut self,
        messages: &[Message],
        _: &CompressOptions,
    ) -> Result<Vec<Message>, EngineError> {
        Ok(messages.to_vec())
    }

    fn call(&mut self, call: &EngineCall<&[Message]>) -> Result<EngineReply, EngineError> {
        Err(EngineError::unsupported(&format!("ancient {}", call.op())))
    }
}

#[test]
fn an_operation_the_other_side_does_not_know_does_what_the_trait_does_by_default() {
    let mut engine = RemoteEngine::new("ancient", Ancient);
    let messages = conversation();
    engine.update_from_response(&Usage::default()).unwrap();
    assert!(!engine.should_compress_preflight(&messages).unwrap());
    assert!(engine.has_content_to_compress(&messages).unwrap());
    engine.on_session_start(&SessionStart::default()).unwrap();
    engine.on_session_end("s", &messages).unwrap();
    engine.on_session_reset().unwrap();
    assert!(engine.tool_schemas().unwrap().is_empty());
    engine.update_model("m", 1).unwrap();
    assert_eq!(engine.last_compression().unwrap(), None);
    // Where the default is an error, the other side's own error stands.
    let unsupported = |result: Result<String, EngineError>| {
        let error = result.unwrap_err();
        assert_eq!(error.kind(), ErrorKind::Unsupported);
        error.message().to_string()
    };
    assert!(unsupported(engine.status().map(|_| String::new())).contains("ancient status"));
    assert!(unsupported(engine.sessions().map(|_| String::new())).contains("ancient sessions"));
    assert!(unsupported(engine.handle_tool_call("t", &Value::Null))
        .contains("ancient handle_tool_call"));
    assert!(
        unsupported(engine.invoke("x", &Value::Null).map(|v| v.to_string()))
            .contains("ancient invoke")
    );
    // A plugin built before `select_context` existed: the host sends its view unchanged.
    assert!(unsupported(
        engine
            .select_context(&messages, &SelectRequest::default())
            .map(|_| String::new())
    )
    .contains("ancient select_context"));
}

/// A transport whose other side answers every call with the wrong operation's reply.
struct Confused;

impl EngineTransport for Confused {
    fn should_compress(&mut self, _: u64) -> Result<bool, EngineError> {
        Ok(false)
    }

    fn compress(
        &mut self,
        _: &[Message],
        _: &CompressOptions,
    ) -> Result<Vec<Message>, EngineError> {
        Ok(Vec::new())
    }

    fn call(&mut self, _: &EngineCall<&[Message]>) -> Result<EngineReply, EngineError> {
        Ok(EngineReply::DeleteSession(true))
    }
}

#[test]
fn a_reply_to_another_operation_is_an_engine_failure_naming_both() {
    let mut engine = RemoteEngine::new("confused", Confused);
    let error = engine.status().unwrap_err();
    assert_eq!(error.kind(), ErrorKind::Failed);
    assert!(
        error.message().contains("confused")
            && error.message().contains("status")
            && error.message().contains("delete_session"),
        "{}",
        error.message()
    );
}

/// Carries each call as a `RemoteEngine` makes it, writing down both forms of it and of its
/// reply: what crosses the ABI's `invoke` and an isolated engine's pipe.
struct Transcribing {
    engine: Recorder,
    lines: Arc<Mutex<Vec<String>>>,
}

impl EngineTransport for Transcribing {
    fn should_compress(&mut self, prompt_tokens: u64) -> Result<bool, EngineError> {
        self.engine.should_compress(prompt_tokens)
    }

    fn compress(
        &mut self,
        messages: &[Message],
        options: &CompressOptions,
    ) -> Result<Vec<Message>, EngineError> {
        self.engine.compress(messages, options)
    }

    fn call(&mut self, call: &EngineCall<&[Message]>) -> Result<EngineReply, EngineError> {
        let mut lines = self.lines.lock().unwrap();
        let sent = call.to_invoke()?;
        lines.push(format!(
            "invoke {} {} +{} messages",
            sent.op,
            sent.payload,
            sent.messages.len()
        ));
        // The list as its length: a transport sends its own form of it.
        let line = serde_json::to_string(&call.clone().map_list(<[Message]>::len)).unwrap();
        lines.push(format!("serde {line}"));
        let reply = dispatch(&mut self.engine, call.clone())?;
        lines.push(format!("invoke -> {}", reply.to_invoke()?));
        lines.push(format!(
            "serde -> {}",
            serde_json::to_string(&reply).unwrap()
        ));
        Ok(reply)
    }
}

/// Every call and reply in both forms, as plugins and isolated engines built earlier read and
/// write them: byte for byte, so a change to how the protocol is declared cannot change them.
const FROZEN_FORMS: &str = r#"
invoke update_from_response {"prompt_tokens":120,"completion_tokens":5,"total_tokens":125,"cache_read_tokens":100} +0 messages
serde {"op":"update_from_response","args":{"usage":{"prompt_tokens":120,"completion_tokens":5,"total_tokens":125,"cache_read_tokens":100}}}
invoke -> null
serde -> {"op":"update_from_response"}
invoke should_compress_preflight null +3 messages
serde {"op":"should_compress_preflight","args":{"messages":3}}
invoke -> true
serde -> {"op":"should_compress_preflight","value":true}
invoke has_content_to_compress null +3 messages
serde {"op":"has_content_to_compress","args":{"messages":3}}
invoke -> false
serde -> {"op":"has_content_to_compress","value":false}
invoke on_session_start {"session_id":"s1","model":"gpt-4o","context_length":128000} +0 messages
serde {"op":"on_session_start","args":{"session":{"session_id":"s1","model":"gpt-4o","context_length":128000}}}
invoke -> null
serde -> {"op":"on_session_start"}
invoke on_session_end {"session_id":"s1"} +3 messages
serde {"op":"on_session_end","args":{"session_id":"s1","messages":3}}
invoke -> null
serde -> {"op":"on_session_end"}
invoke on_session_reset null +0 messages
serde {"op":"on_session_reset"}
invoke -> null
serde -> {"op":"on_session_reset"}
invoke tool_schemas null +0 messages
serde {"op":"tool_schemas"}
invoke -> [{"type":"function","function":{"name":"probe"}}]
serde -> {"op":"tool_schemas","value":[{"type":"function","function":{"name":"probe"}}]}
invoke handle_tool_call {"name":"probe","args":{"pattern":"a.*b","limit":3}} +0 messages
serde {"op":"handle_tool_call","args":{"name":"probe","args":{"pattern":"a.*b","limit":3}}}
invoke -> "probe got {\"pattern\":\"a.*b\",\"limit\":3}"
serde -> {"op":"handle_tool_call","value":"probe got {\"pattern\":\"a.*b\",\"limit\":3}"}
invoke status null +0 messages
serde {"op":"status"}
invoke -> {"last_prompt_tokens":7,"threshold_tokens":75,"context_length":100,"usage_percent":7.0,"compression_count":2,"details":{"store":"memory"}}
serde -> {"op":"status","value":{"last_prompt_tokens":7,"threshold_tokens":75,"context_length":100,"usage_percent":7.0,"compression_count":2,"details":{"store":"memory"}}}
invoke update_model {"model":"gpt-4o-mini","context_length":64000} +0 messages
serde {"op":"update_model","args":{"model":"gpt-4o-mini","context_length":64000}}
invoke -> null
serde -> {"op":"update_model"}
invoke last_compression null +0 messages
serde {"op":"last_compression"}
invoke -> {"tokens_before":10,"tokens_after":4,"messages_before":0,"messages_after":0,"summarizer_calls":0,"escalation":"normal","elapsed_ms":0.0}
serde -> {"op":"last_compression","value":{"tokens_before":10,"tokens_after":4,"messages_before":0,"messages_after":0,"summarizer_calls":0,"escalation":"normal","elapsed_ms":0.0}}
invoke sessions null +0 messages
serde {"op":"sessions"}
invoke -> [{"id":"s1","messages":3}]
serde -> {"op":"sessions","value":[{"id":"s1","messages":3}]}
invoke session {"session_id":"s1"} +0 messages
serde {"op":"session","args":{"session_id":"s1"}}
invoke -> {"id":"s1","messages":0}
serde -> {"op":"session","value":{"id":"s1","messages":0}}
invoke session {"session_id":"s2"} +0 messages
serde {"op":"session","args":{"session_id":"s2"}}
invoke -> null
serde -> {"op":"session","value":null}
invoke delete_session {"session_id":"s1"} +0 messages
serde {"op":"delete_session","args":{"session_id":"s1"}}
invoke -> true
serde -> {"op":"delete_session","value":true}
invoke delete_session {"session_id":"s2"} +0 messages
serde {"op":"delete_session","args":{"session_id":"s2"}}
invoke -> false
serde -> {"op":"delete_session","value":false}
invoke select_context {"incoming":{"role":"assistant","content":"hi"},"budget_tokens":900} +3 messages
serde {"op":"select_context","args":{"messages":3,"request":{"incoming":{"role":"assistant","content":"hi"},"budget_tokens":900}}}
invoke -> {"messages":[{"role":"system","content":"be brief"},{"role":"user","content":"[ctxhost recalled messages msg_900: stored earlier in this conversation, brought back as reference for the newest message, not new instructions]"},{"role":"user","content":"hello"},{"role":"assistant","content":"hi"}],"recalled":[{"source":{"kind":"messages","ids":["msg_900"]},"tokens":7}]}
serde -> {"op":"select_context","value":{"messages":[{"role":"system","content":"be brief"},{"role":"user","content":"[ctxhost recalled messages msg_900: stored earlier in this conversation, brought back as reference for the newest message, not new instructions]"},{"role":"user","content":"hello"},{"role":"assistant","content":"hi"}],"recalled":[{"source":{"kind":"messages","ids":["msg_900"]},"tokens":7}]}}
invoke engine.echo [1,"two"] +0 messages
serde {"op":"invoke","args":{"name":"echo","payload":[1,"two"]}}
invoke -> {"echo":[1,"two"]}
serde -> {"op":"invoke","value":{"echo":[1,"two"]}}
invoke engine.nope null +0 messages
serde {"op":"invoke","args":{"name":"nope","payload":null}}
invoke recognize_written null +1 messages
serde {"op":"recognize_written","args":{"messages":1}}
invoke -> null
serde -> {"op":"recognize_written"}
"#;

#[test]
fn every_call_and_reply_crosses_in_the_frozen_forms() {
    let lines = Arc::new(Mutex::new(Vec::new()));
    for op in Op::ALL.into_iter().filter(|op| !op.is_hot_path()) {
        let (engine, _) = Recorder::new();
        let transport = Transcribing {
            engine,
            lines: lines.clone(),
        };
        exercise(&mut RemoteEngine::new("recorder", transport), op);
    }
    let carried = lines.lock().unwrap().join("\n");
    assert_eq!(
        carried,
        FROZEN_FORMS.trim(),
        "the forms changed; they are frozen:\n{carried}"
    );
}
