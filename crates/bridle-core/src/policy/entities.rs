//! Cedar entities and context built from a principal, a tool and its arguments.

use std::collections::{HashMap, HashSet};
use std::str::FromStr;

use cedar_policy::{Entities, Entity, EntityId, EntityTypeName, EntityUid, RestrictedExpression, Schema};
use serde_json::Value;

use crate::contract::ToolContract;
use crate::principal::Principal;

/// Cedar namespace of Bridle's entity types.
pub const NAMESPACE: &str = "Bridle";

/// The resource a call acts on.
pub(crate) struct Resource<'a> {
    pub tenant: &'a str,
    pub kind: &'a str,
    pub name: &'a str,
}

/// The three entity types, parsed once.
#[derive(Debug, Clone)]
pub(crate) struct Types {
    principal: EntityTypeName,
    action: EntityTypeName,
    resource: EntityTypeName,
}

impl Types {
    pub(crate) fn new() -> Result<Self, String> {
        let parse = |name: &str| {
            EntityTypeName::from_str(&format!("{NAMESPACE}::{name}")).map_err(|e| format!("entity type `{name}`: {e}"))
        };
        Ok(Self { principal: parse("Principal")?, action: parse("Action")?, resource: parse("Resource")? })
    }

    pub(crate) fn principal_uid(&self, p: &Principal) -> EntityUid {
        EntityUid::from_type_name_and_id(self.principal.clone(), EntityId::new(&p.subject))
    }

    pub(crate) fn action_uid(&self, tool: &str) -> EntityUid {
        EntityUid::from_type_name_and_id(self.action.clone(), EntityId::new(tool))
    }

    pub(crate) fn resource_uid(&self, r: &Resource<'_>) -> EntityUid {
        let id = format!("{}/{}/{}", r.tenant, r.kind, r.name);
        EntityUid::from_type_name_and_id(self.resource.clone(), EntityId::new(id))
    }
}

fn string_set<'a>(items: impl IntoIterator<Item = &'a String>) -> RestrictedExpression {
    RestrictedExpression::new_set(items.into_iter().map(|s| RestrictedExpression::new_string(s.clone())))
}

/// Principal and resource entities plus the schema's action entities, checked against the schema.
pub(crate) fn build(
    types: &Types,
    p: &Principal,
    r: &Resource<'_>,
    actions: &Entities,
    schema: &Schema,
) -> Result<Entities, String> {
    let principal = Entity::new(
        types.principal_uid(p),
        HashMap::from([
            ("tenant".to_owned(), RestrictedExpression::new_string(p.tenant.clone())),
            ("services".to_owned(), string_set(&p.services)),
            ("scopes".to_owned(), string_set(&p.scopes)),
        ]),
        HashSet::new(),
    )
    .map_err(|e| format!("principal entity: {e}"))?;
    let resource = Entity::new(
        types.resource_uid(r),
        HashMap::from([
            ("tenant".to_owned(), RestrictedExpression::new_string(r.tenant.to_owned())),
            ("kind".to_owned(), RestrictedExpression::new_string(r.kind.to_owned())),
            ("name".to_owned(), RestrictedExpression::new_string(r.name.to_owned())),
        ]),
        HashSet::new(),
    )
    .map_err(|e| format!("resource entity: {e}"))?;
    actions.clone().add_entities([principal, resource], Some(schema)).map_err(|e| format!("entities: {e}"))
}

/// Context pairs: `scope`, `mode`, `risk` and, when given, the `arguments` record.
pub(crate) fn context(
    tool: &ToolContract,
    args: Option<&Value>,
) -> Result<Vec<(String, RestrictedExpression)>, String> {
    let mut pairs = vec![
        ("scope".to_owned(), RestrictedExpression::new_string(tool.scope.clone())),
        ("mode".to_owned(), RestrictedExpression::new_string(tool.mode.as_str().to_owned())),
        ("risk".to_owned(), RestrictedExpression::new_string(tool.risk.as_str().to_owned())),
    ];
    if let Some(args) = args {
        pairs.push(("arguments".to_owned(), to_cedar(args, 0)?));
    }
    Ok(pairs)
}

/// Deepest argument nesting passed to Cedar.
const MAX_DEPTH: usize = 32;

/// JSON → Cedar: integers are `Long`, other numbers `decimal` (4 places), arrays sets,
/// objects records; `null` fields are left out. A value Cedar cannot hold is an error.
fn to_cedar(v: &Value, depth: usize) -> Result<RestrictedExpression, String> {
    if depth > MAX_DEPTH {
        return Err("arguments nested too deeply for policy".to_owned());
    }
    Ok(match v {
        Value::Bool(b) => RestrictedExpression::new_bool(*b),
        Value::String(s) => RestrictedExpression::new_string(s.clone()),
        Value::Number(n) => match n.as_i64() {
            Some(i) => RestrictedExpression::new_long(i),
            None => RestrictedExpression::new_decimal(format!("{:.4}", decimal(n)?)),
        },
        Value::Array(items) => {
            RestrictedExpression::new_set(items.iter().map(|i| to_cedar(i, depth + 1)).collect::<Result<Vec<_>, _>>()?)
        }
        Value::Object(map) => {
            let fields = map
                .iter()
                .filter(|(_, v)| !v.is_null())
                .map(|(k, v)| Ok((k.clone(), to_cedar(v, depth + 1)?)))
                .collect::<Result<Vec<_>, String>>()?;
            RestrictedExpression::new_record(fields).map_err(|e| format!("arguments: {e}"))?
        }
        Value::Null => return Err("null is not a policy value".to_owned()),
    })
}

/// A number that is not a `Long` as Cedar's `decimal` can hold it (four places, below 9·10¹⁴).
fn decimal(n: &serde_json::Number) -> Result<f64, String> {
    n.as_f64()
        .filter(|f| f.is_finite() && f.abs() < 9.0e14)
        .ok_or_else(|| format!("number `{n}` is out of range for policy"))
}

/// `Ok` exactly when [`to_cedar`] would convert `v`, without building anything: a tool whose
/// policies never read the arguments still denies what Cedar could not hold.
pub(crate) fn fits(v: &Value, depth: usize) -> Result<(), String> {
    if depth > MAX_DEPTH {
        return Err("arguments nested too deeply for policy".to_owned());
    }
    match v {
        Value::Bool(_) | Value::String(_) => Ok(()),
        Value::Number(n) => n.as_i64().map_or_else(|| decimal(n).map(drop), |_| Ok(())),
        Value::Array(items) => items.iter().try_for_each(|i| fits(i, depth + 1)),
        Value::Object(map) => map.values().filter(|v| !v.is_null()).try_for_each(|v| fits(v, depth + 1)),
        Value::Null => Err("null is not a policy value".to_owned()),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn fits_agrees_with_the_conversion() {
        let mut deep = json!(1);
        for _ in 0..=MAX_DEPTH {
            deep = json!([deep]);
        }
        let values = [
            json!({"service": "checkout", "replicas": 3}),
            json!({"n": 1e300}),
            json!({"n": 2.5, "m": -7}),
            json!({"n": u64::MAX}),
            json!({"list": [1, null]}),
            json!({"skipped": null, "kept": "x"}),
            json!(null),
            json!({"nested": {"a": [true, "x", {"b": 9.0e15}]}}),
            deep.clone(),
            deep.as_array().and_then(|a| a.first()).cloned().unwrap_or_default(),
        ];
        let mut refused = 0;
        for v in &values {
            let converted = to_cedar(v, 0).map(drop);
            assert_eq!(fits(v, 0), converted, "{v}");
            refused += usize::from(converted.is_err());
        }
        assert_eq!(refused, 6);
    }
}
