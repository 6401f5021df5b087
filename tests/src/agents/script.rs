//! The scripted model the real agents talk to (through the gateway): it has the agent run a
//! shell command printing `WORD-n` and 500 lines of prose, round after round, so the
//! session grows by some 6.5K tokens a round and the agent's own auto-compaction fires within a
//! few rounds (its threshold set low); it reports the prompt `usage` of what it received (a
//! quarter of the request's bytes), so the agent's meter follows the view the gateway sends.
//! After the rounds, when the engine offers `lcm_grep`, it searches for the first word; then it
//! answers.
//! Whatever wire the agent speaks, the decision is the same ([`Script::next`]); each agent's
//! module reads its wire into a [`Seen`] and renders the [`Move`] back.

use std::sync::Mutex;

/// The word the first round echoes: the one `lcm_grep` must still find after the agent compacted.
pub const FIRST_WORD: &str = "WORD-0";

/// What the model saw in one request, whatever the wire.
#[derive(Debug, Default)]
pub struct Seen {
    /// The text of the last message when it is the user's (tool results left out).
    pub user_text: String,
    /// The last message's tool result, when it ends with one: its call id and text.
    pub tool_result: Option<(String, String)>,
    /// Tool results anywhere in the request.
    pub tool_results: usize,
    /// The tools offered, by name.
    pub tools: Vec<String>,
}

/// The shell command of round `n`: its word, then 500 lines of prose (some 25 KB, 6.5K
/// tokens, about four bytes a token however the agent quotes it) to make the round weigh.
pub fn echo_command(n: usize) -> String {
    format!("echo WORD-{n}; seq -f 'row %g: the quick brown fox jumps over the lazy dog' 1 500")
}

/// The prompt tokens the model reports for `request`: a quarter of its bytes.
pub fn prompt_tokens(request: &crate::upstream::Recorded) -> u64 {
    request.body.len() as u64 / 4
}

/// What the model answers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Move {
    /// Run [`echo_command`] `n` with the agent's shell tool (the call id is `call_echo_n`).
    Echo(usize),
    /// Search the engine's store for [`FIRST_WORD`] (call id [`GREP_CALL`]).
    Grep,
    /// A text answer.
    Say(String),
}

/// The call id of the model's `lcm_grep` call.
pub const GREP_CALL: &str = "call_grep";

#[derive(Debug, Default)]
struct State {
    echoed: usize,
    grepped: bool,
    grep_result: Option<String>,
    compaction_prompts: usize,
}

/// One agent session's script.
#[derive(Debug)]
pub struct Script {
    rounds: usize,
    /// Echo rounds per prompt of the session (the last prompt ends the rounds).
    per_prompt: usize,
    /// How the agent's own compaction prompt begins (it must never reach the model).
    compaction_prompt: &'static str,
    state: Mutex<State>,
}

impl Script {
    pub fn new(rounds: usize, compaction_prompt: &'static str) -> Self {
        Script::per_prompt(rounds, rounds, compaction_prompt)
    }

    /// A session of several prompts, `per_prompt` echo rounds each, `rounds` in all: each
    /// prompt's rounds end with a text answer, and the next prompt takes them up again.
    pub fn per_prompt(rounds: usize, per_prompt: usize, compaction_prompt: &'static str) -> Self {
        Script {
            rounds,
            per_prompt: per_prompt.max(1),
            compaction_prompt,
            state: Mutex::default(),
        }
    }

    /// The model's next move. Echo rounds first (a prompt's last round answered by a text);
    /// then, if the engine offers `lcm_grep`, one search; given its result, the final answer
    /// says whether the first word was found.
    pub fn next(&self, seen: &Seen) -> Move {
        let mut state = self.state.lock().unwrap();
        if seen.user_text.contains(self.compaction_prompt) {
            // Only reached when the gateway let the agent's compaction through: the test fails
            // on it, but the agent still gets a summary so its run ends.
            state.compaction_prompts += 1;
            return Move::Say(format!(
                "<summary>Summary written by the upstream model after {} rounds.</summary>",
                state.echoed
            ));
        }
        if seen.tools.is_empty() {
            // The agent's side requests (titles and the like).
            return Move::Say("ok".to_string());
        }
        if let Some((call, text)) = &seen.tool_result {
            if call == GREP_CALL {
                let found = text.contains(FIRST_WORD);
                state.grep_result = Some(text.clone());
                return Move::Say(format!("lcm_grep found {FIRST_WORD}: {found}"));
            }
        }
        let prompt_done =
            seen.tool_result.is_some() && state.echoed.is_multiple_of(self.per_prompt);
        if prompt_done && state.echoed > 0 && state.echoed < self.rounds {
            return Move::Say(format!("done after {} rounds", state.echoed));
        }
        if state.echoed < self.rounds {
            state.echoed += 1;
            return Move::Echo(state.echoed - 1);
        }
        if seen.tools.iter().any(|t| t == "lcm_grep") && !state.grepped {
            state.grepped = true;
            return Move::Grep;
        }
        Move::Say(format!("done after {} rounds", state.echoed))
    }

    /// How many times the agent's compaction prompt reached the model.
    pub fn compaction_prompts(&self) -> usize {
        self.state.lock().unwrap().compaction_prompts
    }

    /// What `lcm_grep` returned to the model, if it searched.
    pub fn grep_result(&self) -> Option<String> {
        self.state.lock().unwrap().grep_result.clone()
    }

    /// The echo rounds the model asked for.
    pub fn echoed(&self) -> usize {
        self.state.lock().unwrap().echoed
    }
}

/// The final answer the script gives for `engine` (`lcm` searches first).
pub fn expected_answer(engine: &str, rounds: usize) -> String {
    if engine == "lcm" {
        format!("lcm_grep found {FIRST_WORD}: true")
    } else {
        format!("done after {rounds} rounds")
    }
}
