//! `ctxhost run` in dollars: each call's prompt priced against the provider's simulated prompt
//! cache, with the engine and with no engine.

use ctxhost_tests::upstream::{completion, Answer, FakeUpstream};
use ctxhost_tests::{long_session, workspace_root, Sandbox};
use serde_json::{json, Value};

fn priced(sandbox: &Sandbox, args: &[&str]) -> Value {
    let run = sandbox.ctxhost(args);
    assert!(run.success(), "{args:?}: {}", run.stderr);
    run.json()["runs"][0].clone()
}

fn long_transcript(sandbox: &Sandbox) -> String {
    let mut session = long_session();
    session.truncate(160);
    let path = sandbox.write_json("long.json", &Value::Array(session));
    path.to_str().unwrap().to_string()
}

fn dollars(value: &Value) -> f64 {
    value
        .as_f64()
        .unwrap_or_else(|| panic!("{value} is a number"))
}

#[test]
fn every_call_is_priced_with_and_without_the_engine_and_the_totals_add_up() {
    let sandbox = Sandbox::new();
    sandbox.write_config("model:\n  name: claude-sonnet-4-5\n  context_length: 16000\n");
    let transcript = long_transcript(&sandbox);
    let report = priced(&sandbox, &["run", &transcript, "--json"]);
    let cost = &report["cost"];
    assert_eq!(cost["provider"], "anthropic", "{cost}");
    assert_eq!(cost["model"], "claude-sonnet-4-5");
    let calls = cost["calls"].as_array().unwrap();
    let points = report["calls"].as_array().unwrap();
    assert_eq!(calls.len(), points.len());
    assert!(
        report["compressions"].as_array().unwrap().len() >= 2,
        "the session compresses"
    );
    let (mut engine, mut no_engine) = (0.0, 0.0);
    for (call, point) in calls.iter().zip(points) {
        // Every input token is billed exactly once: uncached, written or read.
        let input = |side: &Value| {
            ["uncached", "cache_write", "cache_read"]
                .iter()
                .map(|k| side[k].as_u64().unwrap())
                .sum::<u64>()
        };
        assert_eq!(input(&call["engine"]), point["tokens"].as_u64().unwrap());
        assert_eq!(
            input(&call["no_engine"]),
            point["baseline_tokens"].as_u64().unwrap()
        );
        engine += dollars(&call["engine_dollars"]);
        no_engine += dollars(&call["no_engine_dollars"]);
    }
    assert!((dollars(&cost["engine"]["total_dollars"]) - engine).abs() < 1e-9);
    assert!((dollars(&cost["no_engine"]["total_dollars"]) - no_engine).abs() < 1e-9);
    assert!(
        (dollars(&cost["saving_dollars"]) - (no_engine - engine)).abs() < 1e-9,
        "{cost}"
    );
    // Sonnet's price by hand: the engine's tokens of each kind times their price.
    let tokens = &cost["engine"]["tokens"];
    let count = |k: &str| tokens[k].as_u64().unwrap() as f64;
    let by_hand = (count("uncached") * 3.0
        + count("cache_write") * 3.75
        + count("cache_read") * 0.3
        + count("output") * 15.0)
        / 1e6;
    assert!((by_hand - engine).abs() < 1e-9, "{by_hand} vs {engine}");
}

#[test]
fn a_pause_past_the_caches_life_makes_the_next_call_write_everything_again() {
    let sandbox = Sandbox::new();
    sandbox.write_config("model:\n  name: claude-haiku-4-5\n  context_length: 64000\n");
    let transcript = long_transcript(&sandbox);
    let steady = priced(&sandbox, &["run", &transcript, "--json"]);
    let paused = priced(
        &sandbox,
        &["run", &transcript, "--json", "--pause", "20:301"],
    );
    let call = |report: &Value, n: usize| report["cost"]["calls"][n - 1].clone();
    // Calls 30 s apart keep the cache warm: call 20 reads what call 19 sent.
    assert!(
        call(&steady, 20)["no_engine"]["cache_read"]
            .as_u64()
            .unwrap()
            > 0
    );
    // After 5 minutes and a second the cache is cold: nothing read, the prompt written again.
    let cold = call(&paused, 20)["no_engine"].clone();
    assert_eq!(cold["cache_read"], 0, "{cold}");
    assert!(cold["cache_write"].as_u64().unwrap() > 0);
    assert_eq!(call(&paused, 20)["at_seconds"], 19.0 * 30.0 + 301.0);
    let total = |report: &Value| dollars(&report["cost"]["no_engine"]["total_dollars"]);
    assert!(total(&paused) > total(&steady));
    assert_eq!(paused["cost"]["pauses"][0]["before_call"], 20);
    // A bad pause is one line naming the form.
    let bad = sandbox.ctxhost(&["run", &transcript, "--pause", "0:30"]);
    assert!(!bad.success());
    assert!(
        bad.stderr.contains("not a model call number"),
        "{}",
        bad.stderr
    );
}

#[test]
fn a_claude_code_log_times_its_calls_by_its_own_timestamps() {
    let sandbox = Sandbox::new();
    sandbox.write_config("model:\n  name: claude-opus-4-5\n  context_length: 200000\n");
    let log = workspace_root().join("tests/fixtures/transcripts/claude-code.jsonl");
    let log = log.to_str().unwrap();
    let report = priced(&sandbox, &["run", log, "--json"]);
    let cost = &report["cost"];
    let calls = cost["calls"].as_array().unwrap();
    assert!(!calls.is_empty());
    assert_eq!(cost["timed_calls"].as_u64().unwrap(), calls.len() as u64);
    let text = sandbox.ctxhost(&["run", log]);
    assert!(text.success(), "{}", text.stderr);
    assert!(
        text.stdout.contains("calls timed by the transcript"),
        "{}",
        text.stdout
    );
    // The dollar line leads, the tokens follow.
    let cost_line = text.stdout.find("cost         $").expect("a dollar line");
    let tokens_line = text.stdout.find("input tokens").expect("a token line");
    assert!(cost_line < tokens_line, "{}", text.stdout);
}

#[test]
fn a_configured_price_prices_the_replay_and_a_bad_one_is_refused_in_one_line() {
    let sandbox = Sandbox::new();
    sandbox.write_config(
        "model:\n  name: my-finetune\n  context_length: 16000\nserve:\n  models:\n    my-finetune:\n      provider: openai\n      price: {input: 1, cache_read: 0.25, output: 2}\n",
    );
    let transcript = long_transcript(&sandbox);
    let report = priced(&sandbox, &["run", &transcript, "--json"]);
    let cost = &report["cost"];
    assert_eq!(cost["prices"], "prices from the config", "{cost}");
    assert_eq!(cost["provider"], "openai");
    let tokens = &cost["engine"]["tokens"];
    let count = |k: &str| tokens[k].as_u64().unwrap() as f64;
    // OpenAI writes the cache for free: nothing is billed as a write.
    assert_eq!(count("cache_write"), 0.0);
    let by_hand = (count("uncached") + count("cache_read") * 0.25 + count("output") * 2.0) / 1e6;
    assert!((by_hand - dollars(&cost["engine"]["total_dollars"])).abs() < 1e-9);

    sandbox.write_config(
        "model:\n  name: my-finetune\nserve:\n  models:\n    my-finetune:\n      provider: openai\n      price: {input: -1, cache_read: 0.25, output: 2}\n",
    );
    let bad = sandbox.ctxhost(&["run", &transcript]);
    assert!(!bad.success());
    assert!(
        bad.stderr.contains("serve.models.my-finetune.price.input"),
        "{}",
        bad.stderr
    );
    assert_eq!(bad.stderr.trim().lines().count(), 1, "{}", bad.stderr);

    // A model nobody priced: the report says so and how to fix it, and still runs.
    sandbox.write_config("model:\n  name: my-finetune\n  context_length: 16000\n");
    let unpriced = sandbox.ctxhost(&["run", &transcript]);
    assert!(unpriced.success(), "{}", unpriced.stderr);
    assert!(
        unpriced
            .stdout
            .contains("no price for my-finetune (set serve.models.my-finetune.price"),
        "{}",
        unpriced.stdout
    );
}

#[test]
fn the_plot_draws_the_dollars_spent_under_the_tokens() {
    let sandbox = Sandbox::new();
    sandbox.link_repo_plugins();
    sandbox.write_config("model:\n  name: gpt-5\n  context_length: 16000\n");
    let transcript = long_transcript(&sandbox);
    let plot = sandbox.path().join("cost.svg");
    let run = sandbox.ctxhost(&[
        "run",
        &transcript,
        "--compare",
        "window",
        "--plot",
        plot.to_str().unwrap(),
    ]);
    assert!(run.success(), "{}", run.stderr);
    assert!(
        run.stdout.contains("compare      compressor costs $"),
        "{}",
        run.stdout
    );
    let svg = std::fs::read_to_string(&plot).unwrap();
    assert_eq!(svg.matches(r#"<g class="cost">"#).count(), 2);
    assert!(svg.contains("dollars spent"));
    assert!(svg.contains(r#"class="cost-engine""#) && svg.contains(r#"class="cost-baseline""#));
}

#[test]
fn the_cache_ttl_comes_from_the_gateways_setting_unless_the_flag_says() {
    let sandbox = Sandbox::new();
    let transcript = long_transcript(&sandbox);
    let config =
        |ttl: &str| format!("model:\n  name: claude-sonnet-4-5\n  context_length: 16000\n{ttl}");
    let ttl = |report: &Value| report["cost"]["cache_ttl"].clone();
    let write_dollars =
        |report: &Value| dollars(&report["cost"]["no_engine"]["dollars"]["cache_write"]);
    sandbox.write_config(&config(""));
    let five_minutes = priced(&sandbox, &["run", &transcript, "--json"]);
    assert_eq!(ttl(&five_minutes), "5m", "the default");
    sandbox.write_config(&config("serve:\n  anthropic:\n    cache_ttl: 1h\n"));
    let one_hour = priced(&sandbox, &["run", &transcript, "--json"]);
    assert_eq!(ttl(&one_hour), "1h", "{}", one_hour["cost"]);
    // The same writes at 2x input instead of 1.25x.
    let ratio = write_dollars(&one_hour) / write_dollars(&five_minutes);
    assert!((ratio - 2.0 / 1.25).abs() < 1e-9, "{ratio}");
    let flagged = priced(
        &sandbox,
        &["run", &transcript, "--json", "--cache-ttl", "5m"],
    );
    assert_eq!(ttl(&flagged), "5m", "the flag wins over the setting");
}

/// An LLM summarizer's own calls are priced with its model's prices, as their own row, and
/// counted in what the session cost with the engine.
#[test]
fn the_summarizers_own_calls_are_priced_as_its_own_row() {
    // Each summary call: 2,000 tokens in (1,024 of them from the provider's cache), 300 out.
    let server = FakeUpstream::start(|_| {
        let usage = json!({"prompt_tokens": 2_000, "completion_tokens": 300,
                           "total_tokens": 2_300,
                           "prompt_tokens_details": {"cached_tokens": 1_024}});
        let message = json!({"role": "assistant", "content": "## Goal\nPriced summary."});
        Answer::Json(200, completion(message, Some(usage)))
    });
    let sandbox = Sandbox::new();
    let config = |model: &str| {
        format!(
            "model:\n  name: claude-sonnet-4-5\n  context_length: 16000\nauxiliary:\n  \
             compression:\n    provider: custom\n    model: {model}\n    base_url: {}\n    \
             api_key_env: CTXHOST_E2E_SUMMARY_KEY\n    timeout: 15\n",
            server.base_url()
        )
    };
    sandbox.write_config(&config("gpt-4o-mini"));
    let transcript = long_transcript(&sandbox);
    let env = [("CTXHOST_E2E_SUMMARY_KEY", "k")];
    let run = sandbox.ctxhost_with_env(&["run", &transcript, "--json"], &env);
    assert!(run.success(), "{}", run.stderr);
    let report = run.json()["runs"][0].clone();
    let calls = server.received().len() as u64;
    assert!(calls >= 1, "the summarizer was called");
    let cost = &report["cost"];
    let summarizer = &cost["summarizer"];
    assert_eq!(summarizer["model"], "gpt-4o-mini", "{cost}");
    assert_eq!(summarizer["usage"]["calls"], calls, "{summarizer}");
    assert_eq!(summarizer["usage"]["input_tokens"], calls * 2_000);
    assert_eq!(summarizer["usage"]["cache_read_tokens"], calls * 1_024);
    assert_eq!(summarizer["usage"]["output_tokens"], calls * 300);
    // gpt-4o-mini by hand ($0.15 input, $0.075 cached input, $0.60 output per million).
    let by_hand = calls as f64 * (976.0 * 0.15 + 1_024.0 * 0.075 + 300.0 * 0.6) / 1e6;
    let total = dollars(&summarizer["total_dollars"]);
    assert!((total - by_hand).abs() < 1e-12, "{total} vs {by_hand}");
    // The session's cost with the engine counts it; the model's calls stay apart.
    let model_calls = dollars(&cost["engine"]["total_dollars"]);
    let with_engine = dollars(&cost["engine_total_dollars"]);
    assert!(
        (with_engine - (model_calls + by_hand)).abs() < 1e-9,
        "{cost}"
    );
    let no_engine = dollars(&cost["no_engine"]["total_dollars"]);
    assert!((dollars(&cost["saving_dollars"]) - (no_engine - with_engine)).abs() < 1e-9);
    // Each compression says what its summaries used.
    let per_compression: u64 = report["compressions"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|c| c["summarizer_usage"]["calls"].as_u64())
        .sum();
    assert_eq!(per_compression, calls, "{}", report["compressions"]);

    let text = sandbox.ctxhost_with_env(&["run", &transcript], &env);
    assert!(text.success(), "{}", text.stderr);
    let row = text
        .stdout
        .lines()
        .find(|l| l.starts_with("summarizer   $"))
        .unwrap_or_else(|| panic!("a summarizer row: {}", text.stdout));
    assert!(row.contains("with custom:gpt-4o-mini@"), "{row}");
    assert!(row.contains(&format!(" {calls} call")), "{row}");

    // A summarizer model nobody priced: its tokens are shown, its dollars said to be unknown.
    sandbox.write_config(&config("tiny-summarizer"));
    let unpriced = sandbox.ctxhost_with_env(&["run", &transcript], &env);
    assert!(unpriced.success(), "{}", unpriced.stderr);
    let row = unpriced
        .stdout
        .lines()
        .find(|l| l.starts_with("summarizer   custom:tiny-summarizer@"))
        .unwrap_or_else(|| panic!("a summarizer row: {}", unpriced.stdout));
    assert!(
        row.ends_with(
            "no price for tiny-summarizer (set serve.models.tiny-summarizer.price), not counted"
        ),
        "{row}"
    );
    // With the offline summarizer there is no row.
    sandbox.write_config("model:\n  name: claude-sonnet-4-5\n  context_length: 16000\n");
    let offline = priced(&sandbox, &["run", &transcript, "--json"]);
    assert!(
        offline["cost"].get("summarizer").is_none(),
        "{}",
        offline["cost"]
    );
}

/// The cache-aware policy costs no more than compressing whenever the engine asks, for every
/// engine and both providers: on the example session with breaks past the cache's life
/// (strictly less: each break is a free rewrite), and on three corpus sessions squeezed into
/// a small window (where most compressions leave most of the context).
#[test]
fn the_cache_aware_policy_never_costs_more_than_the_token_only_one() {
    let sandbox = Sandbox::new();
    // A project with the repository's plugins (window, lcm) beside its config.
    sandbox.link_repo_plugins();
    sandbox.write_config("model:\n  name: gpt-5\n");
    let example = workspace_root().join("examples/session.json");
    let corpus = ctxhost_tests::corpus_dir();
    let mut sessions = vec![(
        example.to_str().unwrap().to_string(),
        vec![
            "--pause", "60:900", "--pause", "150:900", "--pause", "200:3600",
        ],
        true,
    )];
    for name in [
        "ctf__pwn__warmup",
        "ctf__web__i_got_id_demo",
        "ctf__crypto__katy",
    ] {
        let path = corpus.join(format!("{name}.json"));
        sessions.push((
            path.to_str().unwrap().to_string(),
            vec!["--context-length", "8000"],
            false,
        ));
    }
    for (transcript, extra, paused) in &sessions {
        for model in ["claude-sonnet-4-5", "gpt-5"] {
            for engine in ["compressor", "window", "lcm"] {
                let cost = |policy: &str| {
                    let mut args = vec![
                        "run", transcript, "--json", "--engine", engine, "--model", model,
                        "--policy", policy,
                    ];
                    args.extend(extra.iter().copied());
                    dollars(&priced(&sandbox, &args)["cost"]["engine_total_dollars"])
                };
                let (tokens, cache_aware) = (cost("tokens"), cost("cache-aware"));
                let case = format!("{transcript} {model} {engine}: {cache_aware} vs {tokens}");
                assert!(cache_aware <= tokens + 1e-12, "{case}");
                if *paused {
                    assert!(cache_aware < tokens, "{case}");
                }
            }
        }
    }
}
