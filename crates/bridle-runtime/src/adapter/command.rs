//! The command adapter: runs a configured program with an argv template, never a shell.
//!
//! - An argv element `{param}` becomes the argument's value as exactly one argument; nothing is
//!   ever interpreted by a shell (`; rm -rf /` arrives as one literal element).
//! - The environment is cleared except the configured allowlist, plus `BRIDLE_IDENTITY` (the
//!   executor identity) and `BRIDLE_JOB_ID` (changes: lets the program deduplicate), plus the
//!   call's context where `context_env` names a variable for it (tenant, subject, run id,
//!   incident: from the principal and the run record, never from arguments).
//! - stdin is closed; the process is killed on timeout (`kill_on_drop`); stdout is capped at
//!   `max_output_bytes` (more fails the call, never buffered unbounded); a non-zero exit fails
//!   with a clipped stderr. stdout is returned as JSON when it parses, else as `{"output": …}`.
//! - `outcome` cannot ask a program about a past run: always unknown.

use std::collections::BTreeMap;
use std::process::Stdio;

use async_trait::async_trait;
use bridle_core::config::CommandAdapterSettings;
use bridle_core::contract::Mode;
use bridle_core::job::Job;
use bridle_core::ports::{Adapter, AdapterCall, AdapterError, Outcome};
use serde_json::Value;
use tokio::io::{AsyncRead, AsyncReadExt};

/// Bytes of stderr kept for a failure message.
const STDERR_KEEP: usize = 4096;
/// Characters of stderr quoted in a failure.
const STDERR_CHARS: usize = 200;

/// A configured command and the tools it serves (tool → mode and executor identity).
#[derive(Debug)]
pub struct CommandAdapter {
    name: String,
    settings: CommandAdapterSettings,
    tools: BTreeMap<String, (Mode, String)>,
}

/// Reads up to `cap` bytes; with `drain`, keeps reading (and discarding) to the end so the
/// writer never blocks on a full pipe.
async fn read_capped<R: AsyncRead + Unpin>(reader: Option<R>, cap: usize, drain: bool) -> Vec<u8> {
    let mut kept = Vec::new();
    let Some(mut reader) = reader else { return kept };
    let mut chunk = [0_u8; 8192];
    loop {
        match reader.read(&mut chunk).await {
            Ok(0) | Err(_) => break,
            Ok(n) => {
                let take = n.min(cap.saturating_sub(kept.len()));
                kept.extend_from_slice(chunk.get(..take).unwrap_or_default());
                if kept.len() >= cap && !drain {
                    break;
                }
            }
        }
    }
    kept
}

impl CommandAdapter {
    /// A command named `name` serving `tools`.
    pub fn new(name: &str, settings: CommandAdapterSettings, tools: BTreeMap<String, (Mode, String)>) -> Self {
        Self { name: name.to_owned(), settings, tools }
    }

    /// The argv of a call: placeholders replaced by whole arguments.
    pub fn argv(&self, arguments: &Value) -> Result<Vec<String>, AdapterError> {
        self.settings
            .argv
            .iter()
            .map(|arg| match arg.strip_prefix('{').and_then(|a| a.strip_suffix('}')) {
                None => Ok(arg.clone()),
                Some(param) => match arguments.get(param) {
                    Some(Value::String(s)) => Ok(s.clone()),
                    Some(Value::Number(n)) => Ok(n.to_string()),
                    Some(Value::Bool(b)) => Ok(b.to_string()),
                    Some(_) => Err(AdapterError::Failed(format!("argument `{param}` is not a scalar"))),
                    None => Err(AdapterError::Failed(format!("argument `{param}` is missing for the command"))),
                },
            })
            .collect()
    }

    async fn run(&self, call: &AdapterCall, mode: Mode) -> Result<Value, AdapterError> {
        let (tool_mode, executor) = self
            .tools
            .get(&call.tool)
            .ok_or_else(|| AdapterError::Failed(format!("`{}` is not served by `{}`", call.tool, self.name)))?;
        if *tool_mode != mode {
            return Err(AdapterError::Failed(format!("`{}` is not a {} tool", call.tool, mode.as_str())));
        }
        if executor != &call.identity {
            return Err(AdapterError::IdentityRejected(call.identity.clone()));
        }
        let argv = self.argv(&call.arguments)?;
        let Some((program, args)) = argv.split_first() else {
            return Err(AdapterError::Failed(format!("command `{}` has no program", self.name)));
        };
        let mut command = tokio::process::Command::new(program);
        command.args(args).env_clear();
        for var in &self.settings.env_allow {
            if let Some(value) = std::env::var_os(var) {
                command.env(var, value);
            }
        }
        command.env("BRIDLE_IDENTITY", &call.identity);
        if let Some(job) = &call.job_id {
            command.env("BRIDLE_JOB_ID", job);
        }
        for (field, var) in &self.settings.context_env {
            let value = field.value(call);
            if value.contains('\0') {
                return Err(AdapterError::Failed(format!("the {} holds a NUL character", field.as_str())));
            }
            command.env(var, value);
        }
        command.stdin(Stdio::null()).stdout(Stdio::piped()).stderr(Stdio::piped()).kill_on_drop(true);
        let mut child = command
            .spawn()
            .map_err(|e| AdapterError::Failed(format!("command `{}` could not start: {e}", self.name)))?;
        let max = self.settings.max_output_bytes;
        let stdout = child.stdout.take();
        let stderr = child.stderr.take();
        let work = async {
            let (out, err) =
                tokio::join!(read_capped(stdout, max.saturating_add(1), false), read_capped(stderr, STDERR_KEEP, true));
            if out.len() > max {
                return Err(AdapterError::Failed(format!(
                    "command `{}` wrote more than {max} bytes of output",
                    self.name
                )));
            }
            let status = child.wait().await.map_err(|e| AdapterError::Failed(e.to_string()))?;
            Ok((out, err, status))
        };
        let finished = tokio::time::timeout(self.settings.timeout, work).await;
        let (out, err, status) = match finished {
            Ok(Ok(done)) => done,
            Ok(Err(e)) => {
                let _ = child.start_kill();
                return Err(e);
            }
            Err(_) => {
                let _ = child.start_kill();
                return Err(AdapterError::Timeout);
            }
        };
        if !status.success() {
            let text = String::from_utf8_lossy(&err);
            let clipped: String =
                text.chars().take(STDERR_CHARS).map(|c| if c.is_control() { ' ' } else { c }).collect();
            let code = status.code().map_or_else(|| "a signal".to_owned(), |c| format!("code {c}"));
            return Err(AdapterError::Failed(format!(
                "command `{}` exited with {code}: {}",
                self.name,
                clipped.trim()
            )));
        }
        let text = String::from_utf8_lossy(&out);
        Ok(serde_json::from_str(&text).unwrap_or_else(|_| serde_json::json!({ "output": text })))
    }
}

#[async_trait]
impl Adapter for CommandAdapter {
    async fn read(&self, call: &AdapterCall) -> Result<Value, AdapterError> {
        self.run(call, Mode::Read).await
    }

    async fn change(&self, call: &AdapterCall) -> Result<Value, AdapterError> {
        self.run(call, Mode::Change).await
    }

    async fn outcome(&self, _job: &Job) -> Result<Outcome, AdapterError> {
        Ok(Outcome::Unknown)
    }
}
