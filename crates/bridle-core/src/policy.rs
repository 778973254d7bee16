//! Policy: Cedar decides whether a principal may call a tool on a resource.
//!
//! Principal × action (the tool) × resource (tenant/kind/name) × context (scope, mode, risk,
//! arguments). Default deny, forbid overrides permit, and any evaluation error denies: a policy
//! that could not be evaluated never lets a call through. Entities are cached per principal,
//! tool and resource, so a call does not rebuild them, and each tool is authorized against only
//! the policies whose action scope can match it (its slice, cut once at load, `slice.rs`): Cedar
//! evaluates every policy it is given, and a policy scoped to other actions can only evaluate to
//! "does not apply", so leaving it out changes no decision, reason or error. A slice that never
//! reads `context.arguments` has its context built once, so its calls convert no arguments.

mod entities;
mod expectations;
mod slice;

use std::collections::HashMap;
use std::hash::BuildHasher;
use std::str::FromStr;
use std::sync::{Arc, Mutex};

use cedar_policy::{Authorizer, Context, Entities, PolicyId, PolicySet, Request, Schema, ValidationMode, Validator};
use hashbrown::{DefaultHashBuilder, HashTable};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use sha2::{Digest, Sha256};

use crate::contract::{Registry, ToolContract};
use crate::nesting;
use crate::principal::Principal;

pub use expectations::{ExpectationsError, PolicyExpectation, parse_expectations};

/// Largest Cedar policy or schema text (bytes) the engine parses.
pub const MAX_TEXT_BYTES: usize = 1024 * 1024;

/// Most cached entity sets before the cache is cleared.
const CACHE_LIMIT: usize = 4096;

/// The outcome of one authorization: never an error.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PolicyDecision {
    /// Whether the call may proceed.
    pub allowed: bool,
    /// Policies that decided (the permits that allowed, or the forbids that denied).
    pub deciding: Vec<String>,
    /// Problems met; any problem means `allowed == false`.
    pub errors: Vec<String>,
}

impl PolicyDecision {
    fn deny_with(error: String) -> Self {
        Self { allowed: false, deciding: Vec::new(), errors: vec![error] }
    }
}

/// One policy source file.
#[derive(Debug, Clone)]
pub struct PolicySource {
    /// Name used in messages and default policy ids (usually the path).
    pub name: String,
    /// Cedar policy text.
    pub text: String,
}

/// A loaded, validated policy set with its schema.
pub struct PolicyEngine {
    policies: PolicySet,
    /// Per registered tool, the policies whose action scope can match its action, and its
    /// context when they never read the arguments.
    slices: HashMap<String, slice::Slice>,
    schema: Schema,
    version: String,
    action_entities: Entities,
    authorizer: Authorizer,
    types: entities::Types,
    /// Entity sets by principal, tool and resource, compared whole (no key text to build or
    /// to collide).
    cache: Mutex<HashTable<Cached>>,
    hasher: DefaultHashBuilder,
}

/// One cached entity set and what it was built from.
struct Cached {
    principal: Principal,
    tool: String,
    resource: [String; 3],
    entities: Arc<Entities>,
}

/// What a cached entity set is looked up by: principal, tool, and resource tenant, kind and name.
type CacheKey<'a> = (&'a Principal, &'a str, &'a str, &'a str, &'a str);

impl Cached {
    fn key(&self) -> CacheKey<'_> {
        let [tenant, kind, name] = &self.resource;
        (&self.principal, &self.tool, tenant, kind, name)
    }
}

impl std::fmt::Debug for PolicyEngine {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PolicyEngine").field("version", &self.version).finish_non_exhaustive()
    }
}

impl PolicyEngine {
    /// Parses and validates policies against the Cedar schema (strict mode) and checks that
    /// every registered tool is an action of the schema. Collects every problem.
    pub fn load(
        schema_text: &str,
        sources: &[PolicySource],
        registry: &Registry,
        version: Option<&str>,
    ) -> Result<Self, Vec<String>> {
        // Cedar's parser and validator recurse on the (bounded) nesting: on a stack of their own.
        nesting::with_parser_stack(|| Self::load_here(schema_text, sources, registry, version))
            .unwrap_or_else(|e| Err(vec![e.to_string()]))
    }

    fn load_here(
        schema_text: &str,
        sources: &[PolicySource],
        registry: &Registry,
        version: Option<&str>,
    ) -> Result<Self, Vec<String>> {
        let mut errors = Vec::new();
        let types = entities::Types::new().map_err(|e| vec![e])?;
        // INVARIANT: no text reaches Cedar's recursive parser before its size and nesting are
        // bounded, so a deep policy is a load error instead of a stack overflow.
        let schema = match bounded(schema_text, nesting::CEDAR_SCHEMA) {
            Err(e) => {
                errors.push(format!("cedar schema: {e}"));
                None
            }
            Ok(()) => match Schema::from_cedarschema_str(schema_text) {
                Ok((schema, _warnings)) => Some(schema),
                Err(e) => {
                    errors.push(format!("cedar schema: {e}"));
                    None
                }
            },
        };
        let mut policies = PolicySet::new();
        for source in sources {
            if let Err(e) = bounded(&source.text, nesting::CEDAR_POLICY) {
                errors.push(format!("{}: {e}", source.name));
                continue;
            }
            match PolicySet::from_str(&source.text) {
                Ok(set) => {
                    for (n, policy) in set.policies().enumerate() {
                        let id = policy.annotation("id").map_or_else(|| format!("{}#{n}", source.name), str::to_owned);
                        if let Err(e) = policies.add(policy.new_id(PolicyId::new(&id))) {
                            errors.push(format!("{}: policy `{id}`: {e}", source.name));
                        }
                    }
                }
                Err(e) => errors.push(format!("{}: {e}", source.name)),
            }
        }
        let Some(schema) = schema else { return Err(errors) };
        let result = Validator::new(schema.clone()).validate(&policies, ValidationMode::Strict);
        errors.extend(result.validation_errors().map(|e| format!("policy validation: {e}")));
        for tool in registry.iter() {
            let uid = types.action_uid(&tool.name);
            if !schema.actions().any(|a| a == &uid) {
                errors.push(format!("tool `{}` has no action `{uid}` in the cedar schema", tool.name));
            }
        }
        let action_entities = match schema.action_entities() {
            Ok(e) => e,
            Err(e) => {
                errors.push(format!("cedar schema actions: {e}"));
                Entities::empty()
            }
        };
        if !errors.is_empty() {
            return Err(errors);
        }
        let version = version.map_or_else(|| content_version(schema_text, sources), str::to_owned);
        let slices = slice::slices(&policies, registry, &types, &action_entities).map_err(|e| vec![e])?;
        Ok(Self {
            policies,
            slices,
            schema,
            version,
            action_entities,
            authorizer: Authorizer::new(),
            types,
            cache: Mutex::new(HashTable::new()),
            hasher: DefaultHashBuilder::default(),
        })
    }

    /// The policy version recorded on every audit event.
    pub fn version(&self) -> &str {
        &self.version
    }

    /// Decides whether `principal` may call `tool` with `arguments`. Total: errors deny.
    pub fn authorize(&self, principal: &Principal, tool: &ToolContract, arguments: &Value) -> PolicyDecision {
        let (kind, name) = tool.resource_of(&principal.tenant, arguments);
        self.authorize_on(principal, tool, arguments, &principal.tenant, &kind, &name)
    }

    /// [`Self::authorize`] on an explicit resource (policy tests name foreign tenants).
    pub fn authorize_on(
        &self,
        principal: &Principal,
        tool: &ToolContract,
        arguments: &Value,
        resource_tenant: &str,
        kind: &str,
        name: &str,
    ) -> PolicyDecision {
        let resource = entities::Resource { tenant: resource_tenant, kind, name };
        match self.slices.get(&tool.name) {
            Some(slice) if slice.context.is_some() => {
                // Unread, but what Cedar could not hold still denies, as if it had been read.
                if let Err(e) = entities::fits(arguments, 0) {
                    return PolicyDecision::deny_with(e);
                }
                self.authorize_with(&slice.policies, slice.context.clone(), principal, tool, None, &resource)
            }
            Some(slice) => self.authorize_with(&slice.policies, None, principal, tool, Some(arguments), &resource),
            None => self.authorize_with(&self.policies, None, principal, tool, Some(arguments), &resource),
        }
    }

    /// Decides the call against `policies` (a tool's slice, or in tests the whole set), in
    /// `context` when the slice has one built (`arguments` is then `None`: no policy reads them),
    /// else in one built from the tool and `arguments`.
    fn authorize_with(
        &self,
        policies: &PolicySet,
        context: Option<Context>,
        principal: &Principal,
        tool: &ToolContract,
        arguments: Option<&Value>,
        resource: &entities::Resource<'_>,
    ) -> PolicyDecision {
        let entities = match self.entities(principal, &tool.name, resource) {
            Ok(e) => e,
            Err(e) => return PolicyDecision::deny_with(e),
        };
        let context = match context {
            Some(c) => c,
            None => match entities::context(tool, arguments)
                .and_then(|pairs| Context::from_pairs(pairs).map_err(|e| format!("context: {e}")))
            {
                Ok(c) => c,
                Err(e) => return PolicyDecision::deny_with(e),
            },
        };
        let request = match Request::new(
            self.types.principal_uid(principal),
            self.types.action_uid(&tool.name),
            self.types.resource_uid(resource),
            context,
            None,
        ) {
            Ok(r) => r,
            Err(e) => return PolicyDecision::deny_with(format!("request: {e}")),
        };
        let response = self.authorizer.is_authorized(&request, policies, &entities);
        let errors: Vec<String> = response.diagnostics().errors().map(ToString::to_string).collect();
        let mut deciding: Vec<String> = response.diagnostics().reason().map(ToString::to_string).collect();
        deciding.sort_unstable();
        // INVARIANT: a policy that errored is skipped by Cedar; if it was a forbid, skipping it
        // could allow. Any error therefore denies.
        let allowed = response.decision() == cedar_policy::Decision::Allow && errors.is_empty();
        PolicyDecision { allowed, deciding, errors }
    }

    fn entities(
        &self,
        principal: &Principal,
        tool: &str,
        resource: &entities::Resource<'_>,
    ) -> Result<Arc<Entities>, String> {
        let key = (principal, tool, resource.tenant, resource.kind, resource.name);
        let hash = self.hasher.hash_one(key);
        if let Ok(cache) = self.cache.lock()
            && let Some(hit) = cache.find(hash, |c| c.key() == key)
        {
            return Ok(Arc::clone(&hit.entities));
        }
        let built = Arc::new(entities::build(&self.types, principal, resource, &self.action_entities, &self.schema)?);
        if let Ok(mut cache) = self.cache.lock() {
            if cache.len() >= CACHE_LIMIT {
                cache.clear();
            }
            let cached = Cached {
                principal: principal.clone(),
                tool: tool.to_owned(),
                resource: [resource.tenant.to_owned(), resource.kind.to_owned(), resource.name.to_owned()],
                entities: Arc::clone(&built),
            };
            cache.insert_unique(hash, cached, |c| self.hasher.hash_one(c.key()));
        }
        Ok(built)
    }

    /// Runs policy expectations; returns one message per failed expectation.
    pub fn check_expectations(&self, registry: &Registry, expectations: &[PolicyExpectation]) -> Vec<String> {
        expectations::check(self, registry, expectations)
    }
}

/// `Ok` when `text` is small and shallow enough for Cedar's parser.
fn bounded(text: &str, syntax: nesting::Syntax) -> Result<(), String> {
    if text.len() > MAX_TEXT_BYTES {
        return Err(format!("{} bytes, more than the {MAX_TEXT_BYTES} a policy or schema text may have", text.len()));
    }
    nesting::check(text, syntax, nesting::MAX_DEPTH).map_err(|e| e.to_string())
}

/// `sha256:` and the first 12 hex digits of the schema and policy texts.
fn content_version(schema_text: &str, sources: &[PolicySource]) -> String {
    let mut h = Sha256::new();
    h.update(schema_text.as_bytes());
    for s in sources {
        h.update([0u8]);
        h.update(s.name.as_bytes());
        h.update([0u8]);
        h.update(s.text.as_bytes());
    }
    let hex = hex::encode(h.finalize());
    format!("sha256:{}", hex.get(..12).unwrap_or_default())
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::config::load;

    fn read(path: &str) -> Result<String, String> {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/checkout");
        std::fs::read_to_string(dir.join(path)).map_err(|e| e.to_string())
    }

    /// Policies of every action-scope shape: any action, one action, a group, a list naming a
    /// group and an action, and a forbid on a group.
    const SHAPES: &str = r#"
        @id("any") permit (principal, action, resource) when { principal.scopes.contains("all") };
        @id("eq") permit (principal, action == Bridle::Action::"calculate", resource);
        @id("group") permit (principal, action in Bridle::Action::"read", resource)
          when { context.arguments has service && context.arguments.service == "checkout" };
        @id("list") permit (principal, action in [Bridle::Action::"workbench", Bridle::Action::"scale_replicas"], resource)
          when { context.arguments has replicas && context.arguments.replicas > 2 };
        @id("no-payments") forbid (principal, action in Bridle::Action::"change", resource)
          when { resource.name == "payments" };
        @id("overflow") forbid (principal, action == Bridle::Action::"scale_replicas", resource)
          when { context.arguments.replicas > 2 && context.arguments.replicas * 4611686018427387904 > 0 };
    "#;

    #[test]
    fn each_tool_is_decided_by_its_slice_exactly_as_by_every_policy() {
        let config = load(&read("bridle.toml").unwrap_or_default(), &read).unwrap_or_else(|e| unreachable!("{e}"));
        let schema = read("policies/bridle.cedarschema").unwrap_or_default();
        let checkout = ["policies/tenancy.cedar", "policies/workbench.cedar"]
            .map(|name| PolicySource { name: name.into(), text: read(name).unwrap_or_default() });
        let shapes = [PolicySource { name: "shapes".into(), text: SHAPES.into() }];
        let principals = [
            Principal::new("a", "tenant-a", &["checkout"], &["all"]),
            Principal::new("b", "tenant-a", &["checkout", "payments"], &["service:read"]),
            Principal::new("c", "tenant-a", &["checkout"], &["service:read", "service:scale", "workbench:use"]),
        ];
        let arguments = [
            json!({"service": "checkout", "replicas": 3, "resource_version": 7}),
            json!({"service": "payments", "replicas": 1, "resource_version": 7}),
            json!({"service": "checkout", "query": "x", "expression": "1+1", "value": 1, "from": "m", "to": "km"}),
        ];
        let (mut allowed, mut denied, mut errored) = (0, 0, 0);
        for sources in [&shapes[..], &checkout[..]] {
            let engine =
                PolicyEngine::load(&schema, sources, &config.registry, None).unwrap_or_else(|e| unreachable!("{e:?}"));
            for tool in config.registry.iter() {
                let fixed = engine.slices.get(&tool.name).is_some_and(|s| s.context.is_some());
                // The shapes read the arguments of every tool; the checkout policies never do.
                assert_eq!(fixed, sources.len() == 2, "{}", tool.name);
                for p in &principals {
                    for args in &arguments {
                        let sliced = engine.authorize(p, tool, args);
                        let (kind, name) = tool.resource_of(&p.tenant, args);
                        let resource = entities::Resource { tenant: &p.tenant, kind: &kind, name: &name };
                        let all = engine.authorize_with(&engine.policies, None, p, tool, Some(args), &resource);
                        assert_eq!(sliced, all, "{} for {} with {args}", tool.name, p.subject);
                        allowed += usize::from(sliced.allowed);
                        denied += usize::from(!sliced.allowed && sliced.errors.is_empty());
                        errored += usize::from(!sliced.errors.is_empty());
                    }
                }
            }
            let slice = |tool: &str| {
                engine.slices.get(tool).map(|s| s.policies.policies().map(|p| p.id().to_string()).collect())
            };
            let mut ids: Vec<String> = slice("scale_replicas").unwrap_or_default();
            ids.sort_unstable();
            let expected: &[&str] = if sources.len() == 2 {
                &["change-needs-scale-scope", "no-cross-tenant", "scoped-service-call"]
            } else {
                &["any", "list", "no-payments", "overflow"]
            };
            assert_eq!(ids, expected);
        }
        // The cases reach allows, denials and evaluation errors alike.
        assert!(allowed > 0 && denied > 0 && errored > 0, "{allowed} {denied} {errored}");
    }
}
