//! Tool definitions as models see them: MCP `tools/list` entries and OpenAI functions.

use serde_json::{Value, json};

use super::{Mode, RiskTier, ToolContract};

/// An MCP tool definition (`name`, `title`, `description`, `inputSchema`) with annotations
/// from the contract, never from an upstream: `readOnlyHint` for read tools; for the others
/// `destructiveHint` from the risk tier and `idempotentHint` from `[tools.X] idempotent`.
pub(super) fn mcp(tool: &ToolContract) -> Value {
    let read_only = tool.mode == Mode::Read;
    let mut annotations = json!({"title": tool.title, "readOnlyHint": read_only});
    if !read_only && let Some(a) = annotations.as_object_mut() {
        a.insert("destructiveHint".into(), Value::Bool(tool.risk == RiskTier::Destructive));
        a.insert("idempotentHint".into(), Value::Bool(tool.idempotent));
    }
    let mut listed = json!({
        "name": tool.name,
        "title": tool.title,
        "description": tool.description,
        "inputSchema": tool.schema.source(),
        "annotations": annotations,
    });
    if let (Some(output), Some(fields)) = (&tool.output_schema, listed.as_object_mut()) {
        fields.insert("outputSchema".into(), output.source().clone());
    }
    listed
}

/// An OpenAI function-calling tool definition.
pub(super) fn openai(tool: &ToolContract) -> Value {
    json!({
        "type": "function",
        "function": {
            "name": tool.name,
            "description": tool.description,
            "parameters": tool.schema.source(),
        }
    })
}
