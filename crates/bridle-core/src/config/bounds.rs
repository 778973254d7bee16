//! Size bounds on configuration text, checked at load before anything is built from it: every
//! string, list and table of `bridle.toml` (and of the policy tests and workflow files that use
//! the same walk) has a documented limit, with tighter ones for names, descriptions and
//! `[guard] sensitive_terms`. Each excess is one error at its dotted path.

use toml::{Table, Value};

use super::validate::Errors;

/// Largest configuration text (`bridle.toml`, a workflow or policy-test file), in bytes.
pub const MAX_TEXT_BYTES: usize = 1024 * 1024;
/// Longest string anywhere in a configuration (bytes; an inline prompt is the longest kind).
pub const MAX_STRING_BYTES: usize = 256 * 1024;
/// Most items in any list.
pub const MAX_LIST_ITEMS: usize = 10_000;
/// Most keys in any table.
pub const MAX_TABLE_KEYS: usize = 10_000;
/// Longest table key (bytes).
pub const MAX_KEY_BYTES: usize = 1024;
/// Longest name of a configured thing (tools, executors, principals, adapters: the keys of
/// their tables), in characters.
pub const MAX_NAME_CHARS: usize = 128;
/// Longest `description` (characters).
pub const MAX_DESCRIPTION_CHARS: usize = 4096;
/// Longest `[guard] sensitive_terms` entry (characters).
pub const MAX_SENSITIVE_TERM_CHARS: usize = 256;
/// Most `[guard] sensitive_terms` entries.
pub const MAX_SENSITIVE_TERMS: usize = 10_000;

/// Tables whose keys name configured things.
const NAMED: &[&str] = &["tools", "executors", "principals", "adapters.http", "adapters.command", "adapters.mcp"];

/// Parses `text` (a whole configuration) as a table and checks every bound; `None` when the
/// text is too large or not TOML (the typed parse reports the latter with its line).
pub(super) fn check_text(text: &str, errors: &mut Errors) {
    if text.len() > MAX_TEXT_BYTES {
        errors.push("bridle.toml", format!("{} bytes, more than the {MAX_TEXT_BYTES} allowed", text.len()));
        return;
    }
    if let Ok(table) = text.parse::<Table>() {
        check_table(&table, errors);
    }
}

/// Walks `table` (the root of a configuration); every excess is pushed to `errors`.
pub(super) fn check_table(table: &Table, errors: &mut Errors) {
    walk_table("", table, errors);
    if let Some(Value::Array(terms)) = table.get("guard").and_then(|g| g.get("sensitive_terms")) {
        if terms.len() > MAX_SENSITIVE_TERMS {
            errors
                .push("guard.sensitive_terms", format!("at most {MAX_SENSITIVE_TERMS} terms (found {})", terms.len()));
        }
        for (i, term) in terms.iter().enumerate() {
            if let Value::String(t) = term
                && t.chars().count() > MAX_SENSITIVE_TERM_CHARS
            {
                errors.push(
                    format!("guard.sensitive_terms[{i}]"),
                    format!("at most {MAX_SENSITIVE_TERM_CHARS} characters (found {})", t.chars().count()),
                );
            }
        }
    }
}

/// The bounds of strings, lists and tables (not the `[guard]` ones) over any table-shaped
/// text, such as a workflow file or the policy tests.
pub fn problems(value: &Table) -> Vec<super::ConfigError> {
    let mut errors = Errors::default();
    walk_table("", value, &mut errors);
    errors.0
}

fn join(at: &str, key: &str) -> String {
    if at.is_empty() { key.to_owned() } else { format!("{at}.{key}") }
}

fn walk_table(at: &str, table: &Table, errors: &mut Errors) {
    if table.len() > MAX_TABLE_KEYS {
        errors.push(at_or_root(at), format!("at most {MAX_TABLE_KEYS} keys (found {})", table.len()));
        return;
    }
    let named = NAMED.contains(&at);
    for (key, value) in table {
        let shown: String = key.chars().take(32).collect();
        if key.len() > MAX_KEY_BYTES {
            errors.push(join(at, &shown), format!("a key has at most {MAX_KEY_BYTES} bytes (found {})", key.len()));
            continue;
        }
        if named && key.chars().count() > MAX_NAME_CHARS {
            errors.push(join(at, &shown), format!("a name has at most {MAX_NAME_CHARS} characters"));
            continue;
        }
        let here = join(at, key);
        if key == "description"
            && let Value::String(s) = value
            && s.chars().count() > MAX_DESCRIPTION_CHARS
        {
            errors.push(&here, format!("at most {MAX_DESCRIPTION_CHARS} characters (found {})", s.chars().count()));
            continue;
        }
        walk(&here, value, errors);
    }
}

fn walk(at: &str, value: &Value, errors: &mut Errors) {
    match value {
        Value::String(s) if s.len() > MAX_STRING_BYTES => {
            errors.push(at, format!("a string has at most {MAX_STRING_BYTES} bytes (found {})", s.len()));
        }
        Value::Array(items) if items.len() > MAX_LIST_ITEMS => {
            errors.push(at, format!("a list has at most {MAX_LIST_ITEMS} items (found {})", items.len()));
        }
        Value::Array(items) => {
            for (i, item) in items.iter().enumerate() {
                walk(&format!("{at}[{i}]"), item, errors);
            }
        }
        Value::Table(t) => walk_table(at, t, errors),
        _ => {}
    }
}

fn at_or_root(at: &str) -> &str {
    if at.is_empty() { "bridle.toml" } else { at }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::panic, clippy::indexing_slicing)]
mod tests {
    use super::*;

    fn check(text: &str) -> Vec<String> {
        let mut errors = Errors::default();
        check_table(&text.parse::<Table>().unwrap(), &mut errors);
        errors.0.iter().map(ToString::to_string).collect()
    }

    #[test]
    fn long_strings_lists_names_and_terms_are_named_by_path() {
        let long = "x".repeat(MAX_STRING_BYTES + 1);
        let errs = check(&format!("[llm]\nscript = \"{long}\"\n"));
        assert_eq!(errs.len(), 1, "{errs:?}");
        assert!(errs[0].starts_with("llm.script: a string has at most"), "{errs:?}");

        let many = vec!["\"ab\""; MAX_LIST_ITEMS + 1].join(",");
        let errs = check(&format!("[principals.p]\ntenant = \"t\"\nscopes = [{many}]\n"));
        assert!(errs[0].starts_with("principals.p.scopes: a list has at most"), "{errs:?}");

        let name = "n".repeat(MAX_NAME_CHARS + 1);
        let errs = check(&format!("[executors.{name}]\nmode = \"read\"\n"));
        assert!(errs[0].contains("a name has at most 128 characters"), "{errs:?}");

        let errs = check(&format!("[tools.t]\ndescription = \"{}\"\n", "d".repeat(MAX_DESCRIPTION_CHARS + 1)));
        assert!(errs[0].starts_with("tools.t.description: at most 4096"), "{errs:?}");

        let errs = check(&format!("[guard]\nsensitive_terms = [\"ok_term\", \"{}\"]\n", "t".repeat(300)));
        assert_eq!(errs, ["guard.sensitive_terms[1]: at most 256 characters (found 300)"]);
    }

    #[test]
    fn the_examples_are_within_every_bound() {
        for text in [
            include_str!("../../../../examples/checkout/bridle.toml"),
            include_str!("../../../../examples/fab/bridle.toml"),
        ] {
            assert!(check(text).is_empty(), "{:?}", check(text));
        }
    }
}
