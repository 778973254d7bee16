//! Each tool's slice of the policy set, cut once at load: the policies whose action scope can
//! match the tool, and, when none of them reads `context.arguments`, the tool's context built
//! once.
//!
//! Cedar evaluates every policy it is given; a policy scoped to other actions can only come out
//! as "does not apply", so leaving it out changes no decision, reason or error. Likewise an
//! attribute no policy reads cannot change an evaluation: a slice that never names
//! `context.arguments` gets a context of the tool's constants (`scope`, `mode`, `risk`), shared
//! by every call, instead of one converted from each call's arguments. Arguments Cedar could not
//! hold (a number past its range, nesting past 32 levels, a `null` in a list) still deny the call
//! (`entities::fits`), as they do when a policy reads them.

use std::collections::HashMap;

use cedar_policy::{ActionConstraint, Context, Entities, EntityUid, PolicySet};
use serde_json::Value;

use super::entities::{self, Types};
use crate::contract::Registry;

/// One tool's policies and, when they never read its arguments, its context.
pub(super) struct Slice {
    /// The policies whose action scope can match the tool's action.
    pub policies: PolicySet,
    /// The context every call of the tool gets, when no policy of the slice reads
    /// `context.arguments`; `None`: built per call, arguments included.
    pub context: Option<Context>,
}

/// Each registered tool's slice: the policies whose action scope matches its action (any action,
/// the action itself, or a group it is in by the schema's action hierarchy, which is the only
/// hierarchy an action has at evaluation).
pub(super) fn slices(
    policies: &PolicySet,
    registry: &Registry,
    types: &Types,
    actions: &Entities,
) -> Result<HashMap<String, Slice>, String> {
    // Each policy read back once, not once per tool; one whose form cannot be read back is
    // taken to read everything.
    let read: Vec<_> =
        policies.policies().map(|p| (p, p.to_json().map_or(true, |est| reads_arguments(&est)))).collect();
    let mut out = HashMap::new();
    for tool in registry.iter() {
        let action = types.action_uid(&tool.name);
        let within = |group: &EntityUid| group == &action || actions.is_ancestor_of(group, &action);
        let mut slice = PolicySet::new();
        let mut arguments_read = false;
        for &(policy, reads) in &read {
            let applies = match policy.action_constraint() {
                ActionConstraint::Any => true,
                ActionConstraint::Eq(uid) => uid == action,
                ActionConstraint::In(groups) => groups.iter().any(within),
            };
            if applies {
                arguments_read |= reads;
                slice.add(policy.clone()).map_err(|e| format!("policy slice of `{}`: {e}", tool.name))?;
            }
        }
        let context = if arguments_read {
            None
        } else {
            let pairs = entities::context(tool, None)?;
            Some(Context::from_pairs(pairs).map_err(|e| format!("context of `{}`: {e}", tool.name))?)
        };
        out.insert(tool.name.clone(), Slice { policies: slice, context });
    }
    Ok(out)
}

/// Whether a policy (in Cedar's JSON form) may read `context.arguments`: it names the attribute
/// on `context` (`context.arguments`, `context["arguments"]`, `context has arguments`), or it
/// uses `context` other than through one named attribute (`context == {…}`, which compares the
/// whole record). Any other use of `context` reads only the attribute it names.
pub(super) fn reads_arguments(est: &Value) -> bool {
    match est {
        Value::Object(map) => {
            if map.get("Var").and_then(Value::as_str) == Some("context") {
                return true;
            }
            map.iter().any(|(key, value)| match (key.as_str(), value) {
                ("." | "has", Value::Object(access)) if is_context(access.get("left")) => {
                    access.get("attr").and_then(Value::as_str) == Some(ARGUMENTS)
                }
                _ => reads_arguments(value),
            })
        }
        Value::Array(items) => items.iter().any(reads_arguments),
        _ => false,
    }
}

/// The context attribute that holds a call's arguments.
const ARGUMENTS: &str = "arguments";

fn is_context(left: Option<&Value>) -> bool {
    left.and_then(|l| l.get("Var")).and_then(Value::as_str) == Some("context")
}

#[cfg(test)]
mod tests {
    use std::str::FromStr;

    use super::*;

    fn reads(text: &str) -> bool {
        let set = PolicySet::from_str(text).unwrap_or_else(|e| unreachable!("{e}"));
        let policy = set.policies().next().unwrap_or_else(|| unreachable!("one policy"));
        reads_arguments(&policy.to_json().unwrap_or_else(|e| unreachable!("{e}")))
    }

    #[test]
    fn a_policy_reads_the_arguments_when_it_names_them_or_takes_the_whole_context() {
        let reading = [
            r"permit (principal, action, resource) when { context.arguments.replicas > 2 };",
            r#"permit (principal, action, resource) when { context["arguments"] has service };"#,
            r"permit (principal, action, resource) when { context has arguments };",
            r#"forbid (principal, action, resource) unless { context == {scope: "a", mode: "read", risk: "low"} };"#,
            r"permit (principal, action, resource) when { principal.scopes.contains(context.scope) } unless { context.arguments.x };",
            r#"permit (principal, action, resource) when { [context].contains({scope: "a"}) };"#,
        ];
        for text in reading {
            assert!(reads(text), "{text}");
        }
        let not_reading = [
            r"permit (principal, action, resource) when { principal.scopes.contains(context.scope) };",
            r#"forbid (principal, action, resource) when { context.mode == "change" && context has risk };"#,
            r#"permit (principal, action, resource) when { resource.name == "arguments" };"#,
            r"permit (principal, action, resource);",
        ];
        for text in not_reading {
            assert!(!reads(text), "{text}");
        }
    }
}
