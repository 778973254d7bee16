//! Tool definitions as models see them: MCP `tools/list` entries and OpenAI functions.

use serde_json::{Value, json};

use super::ToolContract;

/// An MCP tool definition (`name`, `description`, `inputSchema`).
pub(super) fn mcp(tool: &ToolContract) -> Value {
    json!({
        "name": tool.name,
        "description": tool.description,
        "inputSchema": tool.schema.source(),
    })
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
