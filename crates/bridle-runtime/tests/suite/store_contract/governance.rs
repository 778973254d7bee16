//! The kill switch and the action history: switches per exact scope, the covering read the gate
//! makes on every call, and executed actions rated in place.

use anyhow::ensure;
use bridle_core::history::{ActionRecord, Outcome, OutcomeSource, Rating};
use bridle_core::kill::{KillScope, KillSwitch};
use bridle_core::ports::{Taint, TaintMark, TaintVia};
use bridle_core::runs::{Admitted, RunAdmit, RunLimits, RunRefusal, TaintCheck};
use bridle_runtime::store::Stores;

use super::secs;

fn switch(scope: KillScope, at: i64) -> KillSwitch {
    KillSwitch { scope, reason: format!("reason {at}"), set_by: "ops-lead".into(), set_at: secs(at) }
}

pub async fn kill_switches_cover_their_scope_until_lifted(s: Stores) -> anyhow::Result<()> {
    let k = &s.kills;
    ensure!(k.active_kills().await?.is_empty());
    ensure!(k.kill_covering("fab-1", Some("advisor")).await?.is_none());
    // An agent switch covers that agent's calls in every tenant, nothing else.
    ensure!(k.set_kill(&switch(KillScope::agent("advisor"), 1), Vec::new()).await?, "newly set");
    ensure!(k.kill_covering("fab-1", Some("advisor")).await?.map(|s| s.scope) == Some(KillScope::agent("advisor")));
    ensure!(k.kill_covering("fab-2", Some("advisor")).await?.is_some());
    ensure!(k.kill_covering("fab-1", Some("diagnostician")).await?.is_none());
    ensure!(k.kill_covering("fab-1", None).await?.is_none(), "a call on no agent's behalf");
    // A tenant switch covers every call of the tenant; setting it again replaces its reason.
    ensure!(k.set_kill(&switch(KillScope::tenant("fab-2"), 2), Vec::new()).await?);
    ensure!(!k.set_kill(&switch(KillScope::tenant("fab-2"), 3), Vec::new()).await?, "already on");
    let got = k.kill_covering("fab-2", None).await?;
    ensure!(got == Some(switch(KillScope::tenant("fab-2"), 3)), "{got:?}");
    // The oldest covering switch is the one reported.
    ensure!(k.kill_covering("fab-2", Some("advisor")).await?.map(|s| s.set_at) == Some(secs(1)));
    ensure!(k.kill_covering("fab-1", None).await?.is_none());
    // All.
    ensure!(k.set_kill(&switch(KillScope::all(), 4), Vec::new()).await?);
    ensure!(k.kill_covering("other", None).await?.map(|s| s.scope) == Some(KillScope::all()));
    let active = k.active_kills().await?;
    ensure!(active.len() == 3 && active.first().map(|s| s.set_at) == Some(secs(1)), "{active:?}");
    // Lifting is per exact scope.
    ensure!(k.lift_kill(&KillScope::tenant("fab-1"), Vec::new()).await?.is_none());
    ensure!(k.lift_kill(&KillScope::all(), Vec::new()).await? == Some(switch(KillScope::all(), 4)));
    ensure!(k.lift_kill(&KillScope::all(), Vec::new()).await?.is_none(), "lifted once");
    ensure!(k.kill_covering("other", None).await?.is_none());
    let both = KillScope { tenant: Some("fab-1".into()), agent: Some("chat".into()) };
    ensure!(k.set_kill(&switch(both.clone(), 5), Vec::new()).await?);
    ensure!(k.kill_covering("fab-1", Some("chat")).await?.map(|s| s.scope) == Some(both.clone()));
    ensure!(k.kill_covering("fab-3", Some("chat")).await?.is_none());
    ensure!(k.lift_kill(&both, Vec::new()).await?.is_some());
    ensure!(k.lift_kill(&KillScope::agent("advisor"), Vec::new()).await?.is_some());
    ensure!(k.lift_kill(&KillScope::tenant("fab-2"), Vec::new()).await?.is_some());
    ensure!(k.active_kills().await?.is_empty());
    Ok(())
}

/// An admission with `kill_check` reads the switches in its own transaction: a covered call is
/// refused with the earliest covering switch and counts nothing (the run is not even opened); an
/// uncovered one (another tenant, another agent) is admitted; without the flag the store does
/// not look.
pub async fn admission_reads_the_kill_switch_and_counts_nothing_when_killed(s: Stores) -> anyhow::Result<()> {
    let now = secs(100);
    let admit = |tenant: &'static str, agent: Option<&'static str>, kill_check: bool| RunAdmit {
        tenant,
        run_id: "run-k",
        subject: "requester-1",
        agent,
        now,
        limits: RunLimits::default(),
        lease: None,
        kill_check,
        taint_check: None,
    };
    ensure!(s.runs.admit(&admit("fab-1", None, true)).await?.is_ok(), "nothing is on");
    ensure!(s.kills.set_kill(&switch(KillScope::agent("advisor"), 2), Vec::new()).await?);
    ensure!(s.kills.set_kill(&switch(KillScope::tenant("fab-2"), 1), Vec::new()).await?);
    // Both cover fab-2's advisor: the earlier one is reported.
    let refused = s.runs.admit(&admit("fab-2", Some("advisor"), true)).await?;
    ensure!(refused == Err(RunRefusal::Killed(switch(KillScope::tenant("fab-2"), 1))), "{refused:?}");
    ensure!(s.runs.run("fab-2", "run-k").await?.is_none(), "a killed call opens no run");
    let refused = s.runs.admit(&admit("fab-1", Some("advisor"), true)).await?;
    ensure!(refused == Err(RunRefusal::Killed(switch(KillScope::agent("advisor"), 2))), "{refused:?}");
    ensure!(s.runs.run("fab-1", "run-k").await?.map(|r| r.calls) == Some(1), "the killed call was not counted");
    // Not covered: another agent of fab-1, no agent.
    ensure!(s.runs.admit(&admit("fab-1", Some("diagnostician"), true)).await?.is_ok());
    ensure!(s.runs.admit(&admit("fab-1", None, true)).await?.map(|a| a.record.calls) == Ok(3));
    // Without the flag the admission does not read the switches.
    ensure!(s.runs.admit(&admit("fab-1", Some("advisor"), false)).await?.is_ok());
    ensure!(s.kills.lift_kill(&KillScope::agent("advisor"), Vec::new()).await?.is_some());
    ensure!(s.runs.admit(&admit("fab-1", Some("advisor"), true)).await?.map(|a| a.record.calls) == Ok(5));
    Ok(())
}

/// An admission with a taint check answers the taint `RunFlags::tainted` would: the run's first
/// reason before any actor's, the actor's only within its window, nothing for a clean run or
/// without the check; a refused call answers no taint and counts nothing.
pub async fn admission_reads_the_taint_it_is_asked_for(s: Stores) -> anyhow::Result<()> {
    let admit = |run_id: &'static str, taint_check: Option<TaintCheck>| RunAdmit {
        tenant: "fab-1",
        run_id,
        subject: "requester-1",
        agent: None,
        now: secs(100),
        limits: RunLimits { calls: Some(3), ..RunLimits::default() },
        lease: None,
        kill_check: true,
        taint_check,
    };
    let check =
        |actor: Option<&str>, since: i64| Some(TaintCheck { actor: actor.map(str::to_owned), since: secs(since) });
    let taint = |reason: &str, via| Some(Taint { reason: reason.to_owned(), via });
    let taint_of = |a: Result<Admitted, RunRefusal>| a.map(|a| a.taint);
    ensure!(taint_of(s.runs.admit(&admit("run-t", check(Some("agent:advisor"), 0))).await?) == Ok(None), "clean");
    let mark = |run_id, actor, reason, at| TaintMark { tenant: "fab-1", run_id, actor, reason, at: secs(at) };
    s.run_flags.taint(&mark("run-other", Some("agent:advisor"), "tool `fetch` in call c-1", 50)).await?;
    // The actor's taint reaches another run of it within the window, not before `since`.
    let within = taint_of(s.runs.admit(&admit("run-t", check(Some("agent:advisor"), 40))).await?);
    ensure!(within == Ok(taint("tool `fetch` in call c-1", TaintVia::Actor)), "{within:?}");
    let after = taint_of(s.runs.admit(&admit("run-u", check(Some("agent:advisor"), 60))).await?);
    ensure!(after == Ok(None), "outside the window: {after:?}");
    let other = taint_of(s.runs.admit(&admit("run-u", check(Some("agent:chat"), 0))).await?);
    ensure!(other == Ok(None), "another actor: {other:?}");
    // The run's own taint comes first; without a check nothing is read.
    s.run_flags.taint(&mark("run-t", None, "tool `fetch` in call c-2", 70)).await?;
    let run = taint_of(s.runs.admit(&admit("run-t", check(Some("agent:advisor"), 0))).await?);
    ensure!(run == Ok(taint("tool `fetch` in call c-2", TaintVia::Run)), "{run:?}");
    ensure!(taint_of(s.runs.admit(&admit("run-u", None)).await?) == Ok(None), "no check, no taint");
    // run-t has had its three calls: refused, nothing counted.
    let refused = s.runs.admit(&admit("run-t", check(None, 0))).await?;
    ensure!(refused == Err(RunRefusal::CallsSpent { used: 3, limit: 3 }), "{refused:?}");
    ensure!(s.runs.run("fab-1", "run-t").await?.map(|r| r.calls) == Some(3));
    Ok(())
}

fn action(job: &str, tool: &str, class: &str, at: i64) -> ActionRecord {
    ActionRecord {
        tenant: "fab-1".into(),
        job_id: job.into(),
        tool: tool.into(),
        diagnosis: "heater drift".into(),
        equipment_class: class.into(),
        equipment: format!("{class}-01"),
        executed_at: secs(at),
        rating: None,
    }
}

pub async fn action_history_rates_in_place_and_filters(s: Stores) -> anyhow::Result<()> {
    let h = &s.history;
    h.record_action(&action("j1", "set_temperature", "cvd", 10)).await?;
    h.record_action(&action("j2", "set_temperature", "cvd", 20)).await?;
    h.record_action(&action("j3", "set_temperature", "etch", 30)).await?;
    h.record_action(&action("j4", "hold_equipment", "cvd", 40)).await?;
    // Recording a job again changes nothing.
    h.record_action(&action("j1", "set_temperature", "cvd", 99)).await?;
    let rating = Rating {
        outcome: Outcome::Failure,
        source: OutcomeSource::Operator,
        rated_by: "operator-kim".into(),
        note: Some("drift came back «within» the hour".into()),
        rated_at: secs(50),
    };
    let rated = h.rate_action("fab-1", "j1", &rating, &|_| Vec::new()).await?;
    ensure!(rated.as_ref().and_then(|a| a.rating.clone()) == Some(rating.clone()), "{rated:?}");
    ensure!(rated.map(|a| a.executed_at) == Some(secs(10)));
    ensure!(h.rate_action("fab-1", "nope", &rating, &|_| Vec::new()).await?.is_none());
    ensure!(h.rate_action("fab-2", "j1", &rating, &|_| Vec::new()).await?.is_none(), "another tenant's job");
    let observed = Rating { outcome: Outcome::Success, source: OutcomeSource::Observation, note: None, ..rating };
    h.rate_action("fab-1", "j2", &observed, &|_| Vec::new()).await?;
    let got = h.action_history("fab-1", "set_temperature", "heater drift", "cvd", secs(0)).await?;
    let jobs: Vec<&str> = got.iter().map(|a| a.job_id.as_str()).collect();
    ensure!(jobs == ["j2", "j1"], "newest first, one class: {jobs:?}");
    ensure!(got.first().and_then(ActionRecord::outcome) == Some(Outcome::Success));
    let recent = h.action_history("fab-1", "set_temperature", "heater drift", "cvd", secs(15)).await?;
    ensure!(recent.len() == 1, "window: {recent:?}");
    ensure!(h.action_history("fab-1", "set_temperature", "other", "cvd", secs(0)).await?.is_empty());
    ensure!(h.action_history("fab-2", "set_temperature", "heater drift", "cvd", secs(0)).await?.is_empty());
    Ok(())
}
