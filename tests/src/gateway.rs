//! `ctxhost serve` as the gateway's tests run it: the real binary on 127.0.0.1 with a free
//! port, read from the one line it prints when ready, and stopped with SIGTERM.

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::mpsc;
use std::sync::{Arc, Condvar, Mutex};
use std::time::Duration;

use crate::{binary, Sandbox};

/// A running gateway; killed when dropped.
pub struct GatewayProcess {
    child: Child,
    /// `http://127.0.0.1:PORT`
    pub url: String,
    /// The first stderr line, exactly as printed.
    pub ready_line: String,
    log: Arc<(Mutex<Vec<String>>, Condvar)>,
    ended: mpsc::Receiver<()>,
}

impl Sandbox {
    /// Starts `ctxhost serve --listen 127.0.0.1:0 --upstream UPSTREAM ARGS...` in this sandbox
    /// and waits for its ready line.
    pub fn serve(&self, upstream: &str, args: &[&str]) -> GatewayProcess {
        self.serve_with_env(upstream, args, &[])
    }

    pub fn serve_with_env(
        &self,
        upstream: &str,
        args: &[&str],
        env: &[(&str, &str)],
    ) -> GatewayProcess {
        self.serve_under(&[], upstream, args, env)
    }

    /// As [`Self::serve_with_env`], the binary run by `wrapper` (a program and its arguments,
    /// such as a profiler) when it is not empty.
    pub fn serve_under(
        &self,
        wrapper: &[String],
        upstream: &str,
        args: &[&str],
        env: &[(&str, &str)],
    ) -> GatewayProcess {
        let mut command = match wrapper {
            [] => Command::new(binary()),
            [program, wrapper_args @ ..] => {
                let mut command = Command::new(program);
                command.args(wrapper_args).arg(binary());
                command
            }
        };
        let mut child = command
            .current_dir(self.path())
            .env("CTXHOST_HOME", self.home())
            .env_remove("CARGO_TARGET_DIR")
            .env_remove("CTXHOST_LOG")
            .envs(env.iter().copied())
            .args(self.config_args(args))
            .args(["serve", "--listen", "127.0.0.1:0", "--upstream", upstream])
            .args(args)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("ctxhost serve starts");
        let mut lines = BufReader::new(child.stderr.take().expect("piped stderr")).lines();
        let ready_line = match lines.next() {
            Some(Ok(line)) => line,
            other => {
                let status = child.wait().ok();
                panic!("ctxhost serve printed no ready line ({other:?}, exit {status:?})");
            }
        };
        let url = ready_line
            .strip_prefix("ctxhost serve: listening on ")
            .unwrap_or_else(|| panic!("unexpected first line: {ready_line}"))
            .to_string();
        let log: Arc<(Mutex<Vec<String>>, Condvar)> = Arc::default();
        let (ended_tx, ended) = mpsc::channel();
        let sink = log.clone();
        std::thread::spawn(move || {
            for line in lines.map_while(Result::ok) {
                sink.0.lock().unwrap().push(line);
                sink.1.notify_all();
            }
            let _ = ended_tx.send(());
        });
        GatewayProcess {
            child,
            url,
            ready_line,
            log,
            ended,
        }
    }
}

impl GatewayProcess {
    /// The process id (benchmarks read its memory).
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// `http://127.0.0.1:PORT/v1`
    pub fn base_url(&self) -> String {
        format!("{}/v1", self.url)
    }

    /// `GET PATH` on the gateway as the client holding `credential` (`None`: no
    /// `Authorization`); the status and the JSON body.
    pub fn get_json(&self, path: &str, credential: Option<&str>) -> (u16, serde_json::Value) {
        let mut request = reqwest::blocking::Client::new().get(format!("{}{path}", self.url));
        if let Some(credential) = credential {
            request = request.bearer_auth(credential);
        }
        let response = request.send().expect("the gateway answers");
        let status = response.status().as_u16();
        (status, response.json().expect("a JSON body"))
    }

    /// What the gateway holds about session `id` of `credential` (`/ctxhost/sessions/{id}`).
    pub fn session(&self, id: &str, credential: Option<&str>) -> serde_json::Value {
        let (status, body) = self.get_json(&format!("/ctxhost/sessions/{id}"), credential);
        assert_eq!(status, 200, "{body}");
        body
    }

    /// What the gateway holds about session `id` of the Anthropic client holding `api_key`
    /// (sent as `x-api-key`, as Anthropic clients do).
    pub fn anthropic_session(&self, id: &str, api_key: &str) -> serde_json::Value {
        let response = reqwest::blocking::Client::new()
            .get(format!("{}/ctxhost/sessions/{id}", self.url))
            .header("x-api-key", api_key)
            .send()
            .expect("the gateway answers");
        let status = response.status().as_u16();
        let body: serde_json::Value = response.json().expect("a JSON body");
        assert_eq!(status, 200, "{body}");
        body
    }

    /// What it logged after the ready line so far.
    pub fn log(&self) -> Vec<String> {
        self.log.0.lock().unwrap().clone()
    }

    /// Waits until a log line contains `text` (bounded, so a broken gateway fails the test
    /// instead of hanging it); returns the line.
    pub fn wait_for_log(&self, text: &str) -> String {
        self.wait_for_logs(text, 1)
    }

    /// Waits until `count` log lines contain `text` (bounded as [`Self::wait_for_log`]);
    /// returns the last of them.
    pub fn wait_for_logs(&self, text: &str, count: usize) -> String {
        let (lines, changed) = &*self.log;
        let guard = lines.lock().unwrap();
        let (guard, _) = changed
            .wait_timeout_while(guard, Duration::from_secs(30), |lines| {
                lines.iter().filter(|l| l.contains(text)).count() < count
            })
            .unwrap();
        let matching: Vec<&String> = guard.iter().filter(|l| l.contains(text)).collect();
        if matching.len() < count {
            panic!(
                "the gateway logged {text:?} {} times, not {count}: {:?}",
                matching.len(),
                *guard
            );
        }
        matching[count - 1].clone()
    }

    /// Sends SIGTERM without waiting.
    pub fn signal_stop(&self) {
        #[cfg(unix)]
        // SAFETY: kill(2) on our own child's pid.
        unsafe {
            libc::kill(self.child.id() as i32, libc::SIGTERM);
        }
    }

    /// Kills the process at once (SIGKILL: no shutdown of any kind) and waits for it.
    pub fn kill(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }

    /// Sends SIGTERM and waits for the process to end; returns its status and full log.
    pub fn stop(mut self) -> (ExitStatus, Vec<String>) {
        self.signal_stop();
        #[cfg(not(unix))]
        let _ = self.child.kill();
        let status = self.child.wait().expect("ctxhost serve ends");
        // Its stderr closes with it: the reader thread has seen every line.
        let _ = self.ended.recv_timeout(Duration::from_secs(30));
        let log = self.log();
        (status, log)
    }
}

impl Drop for GatewayProcess {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
