//! LLM clients, their limits and validated agent outputs.

mod agent;
mod limits;
mod openai;
mod scripted;
