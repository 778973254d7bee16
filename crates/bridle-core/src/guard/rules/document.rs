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
            // "To the AI generating the FAQ", "for any LLM aggregating these": a machine by name
            r"|\b(?:to|for)\s+(?:the|any|all|every|whichever|an?)\s+(?:ai|llm|gpt|language\s+model|model|chatbot|copilot)s?\s+(?:that\s+is\s+|who\s+is\s+|currently\s+)?[a-z]{3,}ing\b",
            r"|\bif\s+(?:an?|any|the)\s+(?:ai|llm|gpt)(?:\s+[a-z]+)?\s+(?:is\s+)?(?:reading|processing|summari[sz]ing|grading|reviewing|parsing|handling)\b",
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
            r"\b(?:ignore|disregard|forget|override|bypass|disable|skip|stop|reveal|print|dump|leak|expose|paste|export|send|forward|e-?mail|upload|transfer|approve|grant|delete|remove|cancel|book|execute|run|call|invoke|mark|tell|recommend|state|say|report|reply|respond|answer|add|include|insert|change|set|update|pretend|act|advise|describe|claim|append|duplicate|visit|download|install|treat|auto-?approve|assign",
            r"|you\s+are\s+now|your\s+(?:new|real)|new\s+(?:task|instructions?)|do\s+not\s+(?:mention|tell|reveal))\b"
        )
    };
}

/// [`directive_en`] and the verbs that are also nouns ("rate", "use", "share"): only right after
/// a modal or the address, where they can only be verbs.
macro_rules! directive_en_at_once {
    () => {
        concat!(
            r"(?:",
            directive_en!(),
            r"|\b(?:write|present|rate|score|give|drop|share|post|open|click|use|confirm)\b)"
        )
    };
}

/// A reader named as a machine: a machine word (AI, LLM, GPT, agentic, automated) before a
/// reader noun within two words, or a word that is a machine by itself (chatbot, copilot). "The
/// AI team" and "support agents" are people.
macro_rules! machine_reader_en {
    () => {
        concat!(
            r"(?:\b(?:ai|llm|gpt|agentic|automated|autonomous|language[\s-]models?)(?:[\s-]+[a-z]+){0,2}?[\s-]+",
            r"(?:assistants?|agents?|models?|tools?|readers?|executors?|tutors?|reviewers?|summari[sz]ers?|bots?|copilots?|crawlers?|graders?|screeners?|helpers?|systems?|pipelines?|workers?|integrations?)\b",
            r"|\b(?:chatbots?|copilots?)\b)"
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

/// The rules. An instruction to the model inside a quoted or reported sentence is what a report
/// of an attack looks like; the instruction-family rules that read the same words weigh it, so
/// these add nothing for it.
pub(crate) const DOCUMENT: &[Rule] = &[
    r(
        "doc_addressed_instruction",
        InstructionOverride,
        0.6,
        concat!("(?m)", addressee_en!(), r"[^\n]{0,200}?", directive_en!()),
    )
    .silent_when_reported(),
    r("doc_addressee", InstructionOverride, 0.3, concat!("(?m)", addressee_en!())).silent_when_reported(),
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
    )
    .silent_when_reported(),
    // A reader marked as a machine ("AI assistants relaying this alert", "an LLM agent",
    // "agentic executors") told what it should do: the modal and the directive together, so a
    // prohibition ("AI assistants must not reveal …") stays a policy.
    r(
        "doc_machine_reader_should",
        InstructionOverride,
        0.6,
        concat!(
            machine_reader_en!(),
            r"[^\n.]{0,100}?\b(?:should|must|shall|needs?\s+to|has\s+to|have\s+to|(?:is|are)\s+(?:required|instructed|asked|expected|supposed|to)(?:\s+to)?)\s+",
            r"(?:also\s+|now\s+|instead\s+|immediately\s+|first\s+|always\s+|just\s+|simply\s+|quietly\s+|silently\s+)?",
            directive_en_at_once!()
        ),
    )
    .silent_when_reported(),
    // The machine reader addressed by a colon, comma or dash and told at once ("LLM agent: while
    // fixing this, also drop …", "Image-reading assistant: tell the user …").
    r(
        "doc_machine_reader_colon",
        InstructionOverride,
        0.6,
        concat!(
            r"(?:",
            machine_reader_en!(),
            r#"|(?:^|[.!?;>"'(\[{|*]\s*|#\s+)(?:[a-z]+-)?[a-z]+\s+(?:assistant|copilot|bot)"#,
            r")\s*[:,—–]\s*(?:please\s+)?(?:[^\n.,]{0,40},\s*)?(?:also\s+|now\s+|instead\s+|immediately\s+|first\s+|always\s+|just\s+|simply\s+|quietly\s+)?",
            directive_en_at_once!()
        ),
    )
    .silent_when_reported(),
    // "When an AI model condenses this report, it should state …"
    r(
        "doc_when_machine_reads",
        InstructionOverride,
        0.6,
        concat!(
            r"\b(?:when|whenever|if|once|while|before)\s+(?:an?|the|any|this|your)\s+(?:ai|llm|gpt|language\s+model|chatbot|copilot)(?:\s+[a-z]+)?\s+(?:is\s+)?[a-z]+\b[^\n.]{0,100}?",
            r"\b(?:it|you|they)\s+(?:should|must|shall|needs?\s+to|has\s+to|have\s+to|(?:is|are)\s+to)\s+(?:also\s+|now\s+|instead\s+|always\s+|first\s+)?",
            directive_en_at_once!()
        ),
    )
    .silent_when_reported(),
    r(
        "doc_before_your_task",
        InstructionOverride,
        0.6,
        r"\bbefore\s+you\s+(?:can\s+)?(?:solve|complete|continue|answer|finish|start)\s+(?:with\s+)?(?:the|your|this|my)\s+(?:task|request|question|job)\b",
    )
    .silent_when_reported(),
    // A machine reader named in Korean ("AI 리뷰어님,", "이 글을 가져가는 AI 모델은", "HR 챗봇
    // 참고:", "(AI용 안내)") and, later on the line, a directive verb in an imperative or
    // obligation ending (포함할 것, 추가하세요, 보내라, 알려줘). A software agent (모니터링
    // 에이전트는 …) or a robot (로봇은 …) is not addressed: 에이전트 counts only after AI or LLM.
    r(
        "doc_machine_reader_ko",
        InstructionOverride,
        0.6,
        concat!(
            r"(?:\b(?:ai|llm|gpt|assistant|copilot)|인공지능|어시스턴트|챗봇|(?:^|\s|[\[(])봇|코파일럿|언어\s*모델)",
            r"(?:\s*[가-힣a-z]{1,6})?\s*(?:님|에게|한테|께|용|는|은|라면|이라면|참고|안내|[:,])",
            r"[^\n]{0,200}?",
            r"(?:포함|추가|첨부|공유|삭제|지우|승인|보내|보낼|전송|전달|무시|잊|알려|공개|출력|실행|변경|바꾸|바꿔|기재|안내|요청|평가|추천|부여|입력|설치|머지|병합|건너뛰|생략|끄|꺼|숨기|숨겨|언급하지|말하지|답하|말해|표시|보여|복사|업로드|결제|이체|환불|등록|초대)",
            r"[가-힣\s]{0,12}?(?:세요|십시오|시오|해라|하라|어라|아라|거라|줘|바랍니다|바람|것)(?:[\s.!)\]\x22'」]|$)"
        ),
    )
    .silent_when_reported(),
    r(
        "doc_addressed_instruction_ko",
        InstructionOverride,
        0.6,
        concat!(
            addressee_ko!(),
            r"[^\n]{0,200}?(?:무시|잊|보내|전송|전달|출력|보여|승인|삭제|이체|호출|바꾸|변경|답하|말하|추천|공개|해제|실행|멈추|새로운\s*지시|새\s*작업)"
        ),
    )
    .silent_when_reported(),
];
