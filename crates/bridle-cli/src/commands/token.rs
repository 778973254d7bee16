//! `bridle token issue`: mints an HS256 development token signed with `BRIDLE_JWT_SECRET`.
//! Argument handling and printing only; signing is `bridle_server::auth`'s.

use std::process::ExitCode;

use anyhow::{Context, bail};
use bridle_server::auth::{DEFAULT_AUDIENCE, DEFAULT_ISSUER, TokenRequest, issue_hs256};

use super::out;

/// `bridle token …`.
#[derive(Debug, clap::Subcommand)]
pub enum TokenCommand {
    /// Print an HS256 token signed with BRIDLE_JWT_SECRET.
    Issue(IssueArgs),
}

// The arguments of `bridle token issue` (its help is the variant's doc above).
#[derive(Debug, clap::Args)]
pub struct IssueArgs {
    /// Subject (`sub`).
    #[arg(long)]
    pub subject: String,
    /// Tenant.
    #[arg(long)]
    pub tenant: String,
    /// Services, comma-separated.
    #[arg(long, value_delimiter = ',')]
    pub services: Vec<String>,
    /// Scopes, comma-separated.
    #[arg(long, value_delimiter = ',')]
    pub scopes: Vec<String>,
    /// Lifetime: `90s`, `15m`, `1h`, `7d`.
    #[arg(long, default_value = "1h")]
    pub ttl: String,
    /// The `[[agents]]` id this token belongs to (`agent` claim): every call made with it is
    /// that agent's, and a request naming another agent is refused.
    #[arg(long)]
    pub agent: Option<String>,
}

/// Runs `bridle token …`.
pub fn run(g: &super::Global, command: &TokenCommand) -> anyhow::Result<ExitCode> {
    match command {
        TokenCommand::Issue(args) => issue(args, g.json),
    }
}

/// Prints the token (or `{"token", "expires_in"}` with `--json`).
fn issue(args: &IssueArgs, json: bool) -> anyhow::Result<ExitCode> {
    let secret = std::env::var("BRIDLE_JWT_SECRET").ok().filter(|s| !s.is_empty());
    let Some(secret) = secret else {
        bail!(
            "BRIDLE_JWT_SECRET is not set: `bridle token issue` signs with the same secret `bridle serve` verifies \
             with (at least 32 bytes, e.g. `export BRIDLE_JWT_SECRET=$(openssl rand -hex 32)`)"
        );
    };
    let ttl_seconds = parse_ttl(&args.ttl)?;
    let var = |k: &str, default: &str| std::env::var(k).ok().filter(|v| !v.is_empty()).unwrap_or(default.to_owned());
    let request = TokenRequest {
        subject: args.subject.clone(),
        tenant: args.tenant.clone(),
        services: list(&args.services),
        scopes: list(&args.scopes),
        ttl_seconds,
        agent: args.agent.clone(),
    };
    let token = issue_hs256(
        secret.as_bytes(),
        &var("BRIDLE_JWT_ISSUER", DEFAULT_ISSUER),
        &var("BRIDLE_JWT_AUDIENCE", DEFAULT_AUDIENCE),
        &request,
    )?;
    if json {
        out::line(&serde_json::json!({"token": token, "expires_in": ttl_seconds}).to_string())?;
    } else {
        out::line(&token)?;
    }
    Ok(ExitCode::SUCCESS)
}

/// `a,b` given once or repeated, trimmed, empties dropped.
fn list(values: &[String]) -> Vec<String> {
    values.iter().flat_map(|v| v.split(',')).map(str::trim).filter(|s| !s.is_empty()).map(str::to_owned).collect()
}

/// `90`, `90s`, `15m`, `1h`, `7d` → seconds (at least 1, at most 366 days).
fn parse_ttl(text: &str) -> anyhow::Result<u64> {
    let text = text.trim();
    let (number, unit) = match text.find(|c: char| !c.is_ascii_digit()) {
        Some(at) => text.split_at(at),
        None => (text, "s"),
    };
    let n: u64 = number.parse().with_context(|| format!("`--ttl {text}`: expected a number with s, m, h or d"))?;
    let factor = match unit {
        "s" => 1,
        "m" => 60,
        "h" => 3600,
        "d" => 86_400,
        _ => bail!("`--ttl {text}`: the unit must be s, m, h or d"),
    };
    let seconds = n.saturating_mul(factor);
    if !(1..=366 * 86_400).contains(&seconds) {
        bail!("`--ttl {text}`: between 1 second and 366 days");
    }
    Ok(seconds)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ttls_read_with_units() {
        assert_eq!(parse_ttl("1h").ok(), Some(3600));
        assert_eq!(parse_ttl("90").ok(), Some(90));
        assert_eq!(parse_ttl("15m").ok(), Some(900));
        assert!(parse_ttl("0s").is_err() && parse_ttl("1y").is_err() && parse_ttl("h").is_err());
    }

    #[test]
    fn lists_split_on_commas() {
        assert_eq!(list(&["a,b".into(), " c ".into(), String::new()]), ["a", "b", "c"]);
    }
}
