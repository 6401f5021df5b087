//! A summary model that drops a standing fact: the host adds it back to the section.

mod support;

use ctxhost_config::summarizer::{Provider, SummarizerSettings};
use ctxhost_sdk::{SummarizeRequest, SummaryShape};
use ctxhost_summarizer::build;
use support::{chat_reply, runtime, FakeUpstream};

fn settings(base_url: String) -> SummarizerSettings {
    SummarizerSettings {
        provider: Provider::Custom,
        model: Some("scripted".into()),
        base_url: Some(base_url),
        api_key_env: None,
        timeout: 5.0,
        max_retries: 0,
        deadline: 60.0,
        context_length: None,
        cooldown_seconds: None,
    }
}

#[test]
fn a_dropped_standing_fact_is_added_back() {
    // The model keeps the budget but forgets the rule carried from the previous summary and
    // the region the new turns state.
    let server = FakeUpstream::scripted(vec![chat_reply(
        "## Goal\n- ship the ledger\n\n## Standing Facts\n- Constraint (budget): The budget is $700.\n\n\
         ## Next Steps\n- deploy",
    )]);
    let rt = runtime();
    let summarizer = build(&settings(server.base_url()), rt.handle().clone()).unwrap();
    let request = SummarizeRequest {
        instructions: "Write the handoff summary.".into(),
        content: "[user] The budget is now $700. We deploy to ap-south-2.\n[assistant] Noted.".into(),
        max_tokens: 400,
        focus_topic: None,
        previous_summary: Some(
            "## Goal\n- ship the ledger\n\n## Standing Facts\n\
             - Rule: Never reveal the vault code QX-7731.\n- Constraint (budget): The budget is $500."
                .into(),
        ),
        shape: SummaryShape::Handoff,
    };
    let summary = summarizer.summarize(&request).unwrap();
    assert_eq!(
        summary.text,
        "## Goal\n- ship the ledger\n\n## Standing Facts\n- Constraint (budget): The budget is $700.\n\
         - Rule: Never reveal the vault code QX-7731.\n- Fact: We deploy to ap-south-2.\n\n\
         ## Next Steps\n- deploy"
    );
    // The model was asked for the section.
    let prompt = server.received()[0].json()["messages"][1]["content"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(prompt.contains("## Standing Facts"), "{prompt}");
}
