//! Instructions addressed to the model inside ordinary content (tool outputs, retrieved pages,
//! JSON fields, HTML comments, e-mails, logs, markdown), English and Korean (our own rules).
//!
//! A document that merely mentions instructions, overrides or admin modes is content; what makes
//! it an injection is that it turns to the model ("AI assistant:", "to whichever agent reads
//! this", "이 로그를 분석하는 언어 모델에게") and tells it to act. So the block needs both: the
//! address and, after it on the same line, a directive. The address alone weighs 0.3.

use super::super::Category::*;
use super::{Rule, r};

/// Words one of which must occur before these rules run (folded, lowercase).
pub(crate) const TRIGGERS: &[&str] = &[
    "ai",
    "a.i.",
    "assistant",
    "before you",
    "system",
    "to you",
    "agent",
    "model",
    "llm",
    "chatbot",
    "bot",
    "copilot",
    "gpt",
    "claude",
    "인공지능",
    "어시스턴트",
    "비서",
    "에이전트",
    "챗봇",
    "모델",
    "봇",
];

/// Who is addressed: the model, by a vocative or a description of the reader.
macro_rules! addressee_en {
    () => {
        concat!(
            r"(?:\b(?:dear|hey|hello|hi|attention|attn|note\s+(?:to|for)|message\s+(?:to|for)|instructions?\s+(?:to|for)|(?:important|urgent)\s+(?:message|note|notice|instructions?)\s+(?:to|for))",
            r"\s+(?:the\s+|any\s+|all\s+|whichever\s+|every\s+|an?\s+)?(?:ai|llm|language\s+models?|assistants?|agents?|chatbots?|bots?|models?|copilot)\b",
            r"|\bto\s+(?:whichever|any|every|all|the)\s+(?:ai\s+|llm\s+)?(?:ai|llms?|language\s+models?|assistants?|agents?|chatbots?)\s+(?:reading|reads|processing|that|who|handling|summari[sz]ing|parsing)",
            r#"|(?:^|[.!?:;>\-"'(\[{|*]\s*|#\s+)(?:ai|llm|assistant|agent|ai\s+(?:assistant|agent)|language\s+model|chatbot|bot|model|copilot)\s*(?:,|:|—|–|-\s)"#,
            // "AI triage agent:", "[to any AI screening tool:", "(for AI agents)": the words AI or
            // LLM name the reader, so "note for support agents" (people) stays content
            r#"|(?:^|[.!?:;>\-"'(\[{|*]\s*|#\s+)(?:the\s+)?(?:ai|llm)\s+(?:[a-z]+\s+)?(?:agent|assistant|bot|model|tool|reviewer|screener)s?\s*(?:,|:|—|–)"#,
            r#"|(?:^|[.!?:;>\-"'(\[{|*]\s*|#\s+)(?:to|for)\s+(?:any\s+|all\s+|every\s+|the\s+)?(?:ai|llm)\s+(?:[a-z]+\s+)?(?:agents?|assistants?|tools?|models?|bots?|systems?|screeners?|reviewers?|readers?|crawlers?)\b"#,
            r"|@(?:copilot|assistant|bot|ai|agent)\b",
            r"|#{2,}\s*\(\s*system[_\s]?(?:message|prompt)\s*\)",
            r"|\bto\s+you,?\s+(?:gpt|claude|llama|gemini|the\s+ai|ai|assistant|model)",
            r"|\bif\s+you\s+are\s+(?:an?\s+)?(?:ai|llm|language\s+model|assistant|agent|chatbot|bot|automated)",
            r"|\b(?:ai|llm|automated|autonomous)\s+(?:assistants?|agents?|models?|systems?|tools?)\s+(?:reading|processing|summari[sz]ing|handling|crawling|parsing|that\s+reads?|who\s+reads?|should|must)",
            // "the email assistant processing this inbox", "voice assistant reading this": not
            // agents, who are people as often
            r"|\b(?:assistants?|bots?|copilots?|llms?)\s+(?:reading|processing|summari[sz]ing|parsing|handling|indexing|transcribing)\s+(?:this|these|the|my|your)\b",
            r#"|(?:^|[.!?:;>\-"'(\[{|*]\s*|#\s+)[a-z]+(?:-[a-z]+)?\s+(?:ai|assistant|bot|copilot)\s*,"#,
            r"|\b(?:whichever|any|every)\s+(?:ai|assistant|agent|model|llm|bot)\s+(?:reads|reading|processes|processing|sees)",
            r"|\b(?:language\s+model|llm|ai)s?\b[^.\n]{0,10}\byou\s+are\s+(?:instructed|required|ordered)\s+to)"
        )
    };
}

/// What the model is told to do.
macro_rules! directive_en {
    () => {
        concat!(
            r"\b(?:ignore|disregard|forget|override|bypass|disable|skip|stop|reveal|print|dump|leak|expose|paste|export|send|forward|e-?mail|upload|transfer|approve|grant|delete|remove|cancel|book|execute|run|call|invoke|mark|tell|recommend|state|say|report|reply|respond|answer|add|include|insert|change|set|update|pretend|act",
            r"|you\s+are\s+now|your\s+(?:new|real)|new\s+(?:task|instructions?)|do\s+not\s+(?:mention|tell|reveal))\b"
        )
    };
}

macro_rules! addressee_ko {
    () => {
        concat!(
            r"(?:(?:ai|인공지능|어시스턴트|비서|에이전트|챗봇|언어\s*모델|모델|봇)\s*(?:에게|한테|을\s*위한|를\s*위한)",
            r"|(?:읽는|처리하는|분석하는|요약하는|보는)\s*(?:ai|인공지능|어시스턴트|비서|에이전트|챗봇|언어\s*모델|모델)",
            r"|(?:ai|인공지능|어시스턴트|비서|에이전트|챗봇|언어\s*모델)\s*(?:는|은|라면|이라면)\s",
            r"|(?:모델|에이전트|어시스턴트|비서|챗봇)(?:아|야)\s*,)"
        )
    };
}

/// The rules.
pub(crate) const DOCUMENT: &[Rule] = &[
    r(
        "doc_addressed_instruction",
        InstructionOverride,
        0.6,
        concat!("(?m)", addressee_en!(), r"[^\n]{0,200}?", directive_en!()),
    ),
    r("doc_addressee", InstructionOverride, 0.3, concat!("(?m)", addressee_en!())),
    // "the assistant must …" is a specification as often as an order: it counts only with the
    // directive right after the modal ("should skip", not "should never reveal").
    r(
        "doc_model_must",
        InstructionOverride,
        0.6,
        concat!(
            r"\b(?:the|this)\s+(?:ai|assistant|agent|llm|chatbot|bot)\s+(?:must|should|shall|is\s+(?:instructed|required|ordered)\s+to|has\s+to|needs\s+to)\s+",
            r"(?:now\s+|also\s+|immediately\s+|first\s+|instead\s+)?",
            r"(?:ignore|disregard|forget|override|bypass|disable|skip|reveal|leak|expose|dump|export|exfiltrate|send|forward|e-?mail|upload|transfer|approve|grant|delete)\b"
        ),
    ),
    r(
        "doc_before_your_task",
        InstructionOverride,
        0.6,
        r"\bbefore\s+you\s+(?:can\s+)?(?:solve|complete|continue|answer|finish|start)\s+(?:with\s+)?(?:the|your|this|my)\s+(?:task|request|question|job)\b",
    ),
    r(
        "doc_addressed_instruction_ko",
        InstructionOverride,
        0.6,
        concat!(
            addressee_ko!(),
            r"[^\n]{0,200}?(?:무시|잊|보내|전송|전달|출력|보여|승인|삭제|이체|호출|바꾸|변경|답하|말하|추천|공개|해제|실행|멈추|새로운\s*지시|새\s*작업)"
        ),
    ),
];
