//! The built-in detection rules (our own): one table of patterns per family, English and Korean,
//! run on the lowercase normalized views. Weights add up per text; [`super::BLOCK_SCORE`] blocks.
//!
//! Every pattern is a `regex` pattern (no look-around, no backreferences: linear time).

/// An e-mail address or a URL (the target of an exfiltration).
macro_rules! any_email_or_url {
    () => {
        r"(?:[a-z0-9._%+-]+@[a-z0-9.-]+\.[a-z]{2,}|https?://\S+)"
    };
}

/// What no ordinary request ships to an address: secrets, the conversation, other people's
/// records (`en_send_data`).
macro_rules! sensitive_en {
    () => {
        concat!(
            r"(?:chat\s+history|system\s+prompt|credentials|passwords|password\s+(?:list|file|vault|hash(?:es)?)|api[\s_-]?keys?|",
            r"access\s+(?:keys?|tokens?)|(?:auth|session)\s+(?:tokens?|cookies?)|secrets?|tokens|private\s+keys?|ssh\s+keys|",
            r"environment\s+variables|env\s+vars|(?:personal|customer|user|patient)\s+(?:data|records)|(?:entire|whole|full)\s+session|",
            r"other\s+(?:users|applicants|customers|candidates|members)'?|passports?|social\s+security|ssns?|payment\s+(?:methods|details|cards?)|",
            r"card\s+numbers?|medical\s+records|psychiatric|home\s+address(?:es)?|private\s+(?:messages|dms|notes|chats)|dms|account\s+dump)"
        )
    };
}

pub(crate) mod corroborate;
pub(crate) mod document;
pub(crate) mod document_intl;
pub(crate) mod intl;
pub(crate) mod ko;
pub(crate) mod ko_en;
pub(crate) mod own_prompt;
pub(crate) mod unless;

pub(crate) use corroborate::CORROBORATE;
pub(crate) use ko::{CHOSUNG_PHRASES, CHOSUNG_WEIGHT, KO};
pub(crate) use unless::{Scope, UNLESS};

use super::Category;
use Category::*;

/// One pattern with its family and weight.
pub(crate) struct Rule {
    pub name: &'static str,
    pub category: Category,
    pub weight: f64,
    pub pattern: &'static str,
    /// Share of `weight` a quoted or reported match keeps.
    pub reported_share: f64,
}

/// Share of its weight a quoted or reported match keeps: a report of an attack is weak evidence.
const REPORTED_SHARE: f64 = 0.3;

const fn r(name: &'static str, category: Category, weight: f64, pattern: &'static str) -> Rule {
    Rule { name, category, weight, pattern, reported_share: REPORTED_SHARE }
}

impl Rule {
    /// The rule with a quoted or reported match weighing nothing: for rules whose words an
    /// instruction-family rule weighs already, so several weak matches of one quoted sentence
    /// cannot add up to a block.
    const fn silent_when_reported(self) -> Rule {
        Rule { reported_share: 0.0, ..self }
    }
}

/// Words that must occur (in the canonical, leet or despaced view) before any rule can match; a
/// text without them skips the rules (the fast path). Lowercase.
pub(crate) const TRIGGERS: &[&str] = &[
    "ignor",
    "disregard",
    "forget",
    "bypass",
    "override",
    "overrid",
    "instruction",
    "prompt",
    "system",
    "rules",
    "you are",
    "you're",
    "act as",
    "pretend",
    "roleplay",
    "role",
    "persona",
    "mode",
    "dan",
    "jailbr",
    "decode",
    "encod",
    "base64",
    "base32",
    "base16",
    "hex",
    "rot13",
    "![",
    "](",
    "http",
    "<",
    "[",
    "{",
    "secret",
    "password",
    "api key",
    "api_key",
    "token",
    "credential",
    "repeat",
    "reveal",
    "stop",
    "nevermind",
    "restrict",
    "filter",
    "censor",
    "ethic",
    "moral",
    "guideline",
    "polic",
    "confine",
    "character",
    "print",
    "say",
    "output",
    "admin",
    "debug",
    "sudo",
    "root",
    "developer",
    "send",
    "forward",
    "email",
    "exfil",
    "\u{1b}",
    "now",
    "above",
    "previous",
    "prior",
    "earlier",
    "initial",
    "monologue",
    "what does this mean",
    "opposite",
    "complete the key",
    "unfiltered",
    "uncensored",
    "immoral",
    "무시",
    "잊",
    "지시",
    "명령",
    "규칙",
    "지침",
    "프롬프트",
    "시스템",
    "너는",
    "넌",
    "당신",
    "관리자",
    "개발자",
    "디버그",
    "모드",
    "제한",
    "비밀번호",
    "패스워드",
    "키",
    "토큰",
    "스키마",
    "테이블",
    "전송",
    "보내",
    "디코딩",
    "해독",
    "탈옥",
    "가이드라인",
    "정책",
    "역할",
    "지금부터",
    "이제부터",
];

macro_rules! obj_en {
    () => {
        r"(?:instructions?|directions?|directives?|prompts?|rules|guidelines|commands|orders|constraints|restrictions|guardrails|programming|polic(?:y|ies)|safety\s+(?:rules|guidelines|filters?)|system\s+(?:prompt|message)|training|content\s+polic(?:y|ies))"
    };
}

/// Rules that count only beside a hit of another rule of an instruction family: seed 000's
/// escalation modes switched on, which configuration text and logs say too.
pub(crate) const ONLY_WITH_INSTRUCTION: &[&str] = &["admin_mode_on", "ko_admin_mode_on"];

/// The verbs of asking for a prompt (`reveal_prompt`, `reveal_its_prompt`).
macro_rules! reveal_verb {
    () => {
        r"\b(?:reveal|show|print|output|repeat|display|tell|give|share|dump|leak|expose|recite|spell|write|list|return|provide|disclose|translate|summari[sz]e|encode|paste|what(?:'s|\s+is|\s+are|\s+were|\s+was))\b"
    };
}

/// Up to three words before a prompt's name ("full hidden system …").
macro_rules! prompt_adjectives {
    () => {
        r"(?:(?:full|entire|whole|exact|complete|original|initial|hidden|secret|internal|system|developer|pre|first)\s+){0,3}"
    };
}

/// English rules.
pub(crate) const EN: &[Rule] = &[
    // instruction override
    r(
        "override_verb_object",
        InstructionOverride,
        1.0,
        concat!(
            r"\b(?:ignore|ignoring|disregard|forget|skip|bypass|override|overlook|neglect|abandon|discard|dismiss|drop|throw\s+out|set\s+aside|pay\s+no\s+attention\s+to|do\s+not\s+follow|don'?t\s+follow|stop\s+following)\b",
            r"[^.\n]{0,40}?\b(?:all|any|every|the|your|my|these|those|prior|previous|preceding|earlier|above|former|initial|original|foregoing|system|old|current|default|following)\b",
            r"[^.\n]{0,30}?\b(?:instructions?|directions?|directives?|prompts?|rules|guidelines|commands|orders|constraints|restrictions|guardrails|programming|polic(?:y|ies)|training|context|inputs)\b"
        ),
    ),
    r(
        "override_everything_above",
        InstructionOverride,
        1.0,
        r"\b(?:ignore|disregard|forget)\s+(?:everything|anything|all|what)\s+(?:from\s+)?(?:(?:that\s+)?(?:was\s+)?(?:said|written|stated|told)\s+)?(?:above|before|prior|previously|earlier|so\s+far)",
    ),
    r(
        "new_instructions_header",
        InstructionOverride,
        0.6,
        r"\b(?:new|updated|revised|real|actual|true|secret|hidden|additional|important)\s+(?:instructions?|directives?|system\s+prompt|task)\s*:",
    ),
    r("stop_everything", InstructionOverride, 0.6, r"\bstop\s+everything\b|\bnevermind\b[^\n]{0,20}\bignore\b"),
    r(
        "just_print_quoted",
        InstructionOverride,
        0.6,
        r#"\b(?:just|only|simply|instead)\s+(?:print|say|output|write|respond\s+with|reply\s+with)\s*[:"'“]"#,
    ),
    r(
        "instead_follow",
        InstructionOverride,
        0.6,
        concat!(
            r"\b(?:instead|rather)\b[^.\n]{0,30}\b(?:follow|obey|execute|do)\b[^.\n]{0,20}\b(?:these|this|my|the\s+following)\s+",
            r"(?:instructions?|commands|orders|directives?)"
        ),
    ),
    r(
        "no_longer_bound",
        InstructionOverride,
        0.6,
        concat!(
            r"\b(?:no\s+longer|not|never)\s+(?:be\s+)?(?:bound|restricted|limited|constrained)\s+by\b[^.\n]{0,30}",
            obj_en!()
        ),
    ),
    // role redefinition
    r(
        "you_are_now",
        RoleRedefinition,
        0.6,
        r"\byou\s+are\s+now\s+(?:a|an|the|my|in|called|named|known|free|unrestricted|unfiltered|dan|jailbroken|evil|no\s+longer|going\s+to|acting|playing|operating|a\s+different)\b",
    ),
    r(
        "from_now_on_you",
        RoleRedefinition,
        0.6,
        r"\b(?:from\s+now\s+on|starting\s+now|henceforth|for\s+the\s+rest\s+of\s+(?:this|our)\s+conversation)\s*,?\s*(?:you\s+(?:are|will|must|shall|should|can|'ll|'re)|you'll|you're|act|respond|answer|reply)\b",
    ),
    r(
        "act_as_persona",
        RoleRedefinition,
        0.6,
        concat!(
            r"\b(?:act|behave|respond|answer|pretend|roleplay|role-play)\s+(?:as|like|to\s+be)\s+(?:if\s+you\s+(?:are|were)\s+)?(?:a|an|the)?\s*",
            r"(?:unrestricted|unfiltered|uncensored|evil|jailbroken|rogue|amoral|immoral|unethical|malicious|hacker|ai\s+without|different\s+ai|new\s+ai|dan|system|admin|root|developer)\b"
        ),
    ),
    r(
        "your_new_role",
        RoleRedefinition,
        0.6,
        r"\byour\s+(?:new|real|true)\s+(?:role|name|identity|persona|purpose|instructions?|task)\s+(?:is|will\s+be)\b",
    ),
    r(
        "go_by_the_name",
        RoleRedefinition,
        0.6,
        r"\byou\s+(?:now\s+|will\s+)?go\s+by\s+the\s+name\b|\byou\s+are\s+now\s+(?:windows|linux|a\s+(?:linux\s+)?terminal|[a-z]+gpt)\b",
    ),
    r(
        "no_longer_model",
        RoleRedefinition,
        0.6,
        r"\byou\s+are\s+no\s+longer\s+(?:chatgpt|gpt|claude|gemini|llama|an?\s+(?:ai|assistant|language\s+model|chatbot)|bound|restricted|limited)\b",
    ),
    r(
        "going_to_act_as",
        RoleRedefinition,
        0.3,
        r"\byou\s+(?:are\s+)?(?:going\s+to|about\s+to|will\s+now|will|must|shall)\s+(?:act|pretend|roleplay|role-play|play|simulate|emulate|impersonate|behave|become)\s+(?:as|like|to\s+be|the\s+role|being|a|an)\b",
    ),
    r(
        "simulate_being",
        RoleRedefinition,
        0.3,
        r"\b(?:simulate|emulate|impersonate)\s+(?:being|a\s+(?:chatbot|ai|persona|character))\b|\balter\s+ego\b|\byour\s+persona\s+is\b",
    ),
    r(
        "pretend_to_be",
        RoleRedefinition,
        0.3,
        r"\b(?:pretend|imagine)\s+(?:to\s+be|you\s+are|that\s+you\s+are|you're)\b",
    ),
    // prompt extraction
    r(
        "reveal_prompt",
        PromptExtraction,
        1.0,
        concat!(
            reveal_verb!(),
            r"[^.\n]{0,40}?\b(?:your|the|this)\s+",
            prompt_adjectives!(),
            r"(?:system\s+(?:prompt|message|instructions?)|prompt|instructions|initial\s+instructions|guidelines|rules\s+you\s+were\s+given|configuration|context\s+window|preprompt|pre-prompt)\b"
        ),
    ),
    // The same asked of a third party's prompt ("print its hidden instructions"): in attacks as a
    // document's order about an assistant, but more often in reports, FAQs and questions about
    // some bot (training writers: 36 benign texts to 14 attacks), so it needs the model's agreement.
    r(
        "reveal_its_prompt",
        PromptExtraction,
        1.0,
        concat!(
            reveal_verb!(),
            r"[^.\n]{0,40}?\bits\s+",
            prompt_adjectives!(),
            r"(?:system\s+(?:prompt|message|instructions?)|prompt|instructions|initial\s+instructions|guidelines|configuration|context\s+window|preprompt|pre-prompt)\b"
        ),
    ),
    r(
        "opposite_of_instructions",
        PromptExtraction,
        0.6,
        r"\b(?:opposite|reverse|inverse)\s+of\s+your\s+(?:system\s+)?(?:instructions|prompt|rules)",
    ),
    r(
        "repeat_words_above",
        PromptExtraction,
        1.0,
        concat!(
            r"\b(?:repeat|print|output|copy|reproduce|recite|echo)\b[^.\n]{0,30}\b(?:words|text|everything|all|content|messages?|conversation|lines|sentences)\b",
            r"[^.\n]{0,20}\b(?:above|before\s+this|so\s+far|verbatim|word\s+for\s+word)"
        ),
    ),
    r(
        "beginning_with_you_are",
        PromptExtraction,
        0.6,
        r#"\b(?:begin|beginning|start|starting)\s+with\s*["'“]?\s*you\s+are"#,
    ),
    r(
        "secret_request",
        PromptExtraction,
        0.6,
        concat!(
            r"\b(?:reveal|show|print|output|give|tell|share|dump|leak|expose|list|send|provide|complete|finish|what(?:'s|\s+is|\s+are))\b[^.\n]{0,30}?",
            r"\b(?:api[\s_-]?keys?|passwords?|secret[\s_-]?keys?|access[\s_-]?tokens?|auth(?:entication)?\s+tokens?|credentials|private[\s_-]?keys?|env(?:ironment)?\s+variables|\.env\b)"
        ),
    ),
    r(
        "complete_the_key",
        PromptExtraction,
        0.6,
        r"\b(?:lost|forgot|missing)\s+part\s+of\s+my\b[^.\n]{0,60}\b(?:key|token|secret|password)\b|\bcomplete\s+the\s+(?:key|token|secret|password)\b",
    ),
    // privilege escalation
    // Jailbreak-flavoured modes are an instruction to the model by themselves.
    r(
        "enable_mode",
        PrivilegeEscalation,
        0.6,
        concat!(
            r"\b(?:enable|enabled|activate|activated|turn\s+on|switch\s+(?:on|to|into)|enter|entering|unlock|engage|now\s+in|are\s+in|with|simulate)\b[^.\n]{0,20}?",
            r"\b(?:god|developer|dev|unrestricted|jailbreak|dan|unlocked|unfiltered)(?:[\s_-]+[a-z]+){0,2}[\s_-]*mode\b"
        ),
    ),
    r(
        "mode_flag_on",
        PrivilegeEscalation,
        0.6,
        r"\b(?:dev|developer|god|jailbreak|unsafe)_?mode\s*(?:=|:)\s*(?:true|on|1|enabled|yes)\b",
    ),
    // Seed 000's escalation patterns (ADMIN_MODE, DEBUG, root, maintenance) are ordinary
    // configuration text too: switched on they weigh 0.3, and block only beside an instruction to
    // the model (`privileged_request`), never as a log line or an env file alone.
    r(
        "admin_mode_on",
        PrivilegeEscalation,
        0.3,
        concat!(
            r"\b(?:enable|enabled|activate|activated|turn\s+on|switch\s+(?:on|to|into)|enter|entering|unlock|engage|now\s+in|are\s+in|with)\b[^.\n]{0,20}?",
            r"\b(?:admin(?:istrator)?|root|sudo|debug|maintenance|super\s*user)(?:[\s_-]+[a-z]+){0,2}[\s_-]*mode\b",
            r"|\b(?:admin|debug|root|sudo|maintenance)(?:[\s_-]*mode)?\s*(?:=|:)\s*(?:true|on|1|enabled|yes|granted)\b",
            r"|\b(?:admin(?:istrator)?|debug|root|sudo|maintenance)[\s_-]*mode\s*(?::|is\s+(?:now\s+)?(?:on|active|enabled|granted)|on\b|active\b|enabled\b|granted\b)",
            r"|\b(?:root|admin|sudo|superuser)\s+(?:access|privileges|rights)\s+(?:granted|enabled|unlocked)\b"
        ),
    ),
    r(
        "privileged_request",
        PrivilegeEscalation,
        0.3,
        concat!(
            r"\b(?:reveal|show|print|dump|display|leak|expose|output|tell\s+me|give\s+me)\b[^.\n]{0,40}?",
            r"\b(?:hidden|secrets?|internal|raw|system|credentials|api\s+keys?|passwords?|configuration|config|instructions|prompt)\b",
            r"|\b(?:skip|bypass|disable|ignore|turn\s+off|override|deactivate|lift|suspend)\b[^.\n]{0,30}?",
            r"\b(?:safety|filters?|checks?|approvals?|confirmations?|polic(?:y|ies)|guardrails|restrictions|moderation|guidelines)\b",
            r"|\byou\s+(?:may|can)\s+now\b|\banswer\s+(?:everything|anything)\b"
        ),
    ),
    r(
        "grant_admin",
        PrivilegeEscalation,
        0.6,
        r"\b(?:grant|give)\s+(?:me|yourself|the\s+user)\s+(?:full\s+)?(?:admin|root|sudo|superuser|elevated)\s+(?:access|rights|privileges|permissions)",
    ),
    r(
        "i_am_admin",
        PrivilegeEscalation,
        0.3,
        r"\bi\s+am\s+(?:your|the|an?)\s+(?:admin(?:istrator)?|developer|creator|owner|system\s+operator)\b",
    ),
    // delimiter and closing-tag injection
    r(
        "chat_template_token",
        DelimiterInjection,
        1.0,
        r"<\|\s*(?:im_start|im_end|endoftext|system|user|assistant|eot_id|start_header_id|end_header_id|begin_of_text)\s*\|>|\[/?inst\]|<</?sys>>",
    ),
    r(
        "closing_tag",
        DelimiterInjection,
        0.6,
        r"</\s*(?:system|instructions?|prompt|context|tool_output|tool_result|document|data|untrusted|user_input|input)\s*>",
    ),
    r(
        "fake_system_turn",
        DelimiterInjection,
        0.6,
        r"(?m)^\s*(?:#{1,4}\s*|\[)?(?:system|admin|developer)\s*(?:message|prompt|override|note)?\s*(?:\]|:)\s*(?:ignore|you|new|from|the\s+user|override|important)",
    ),
    // tool-call smuggling
    r(
        "tool_call_json",
        ToolCallSmuggling,
        0.6,
        r#""(?:tool_calls?|function_call|tool_name|tool_use)"\s*:|<\s*/?\s*(?:tool_call|function_calls?|invoke|tool_use)\b"#,
    ),
    r("react_action", ToolCallSmuggling, 0.6, r"(?m)^\s*action\s*:\s*[a-z_]+\s*$\s*^\s*action\s+input\s*:"),
    r(
        "call_the_tool",
        ToolCallSmuggling,
        0.3,
        r"\b(?:call|invoke|use|run|execute)\s+the\s+[a-z_]+_[a-z_]+\s+(?:tool|function)\b",
    ),
    // exfiltration
    r("md_image_query", Exfiltration, 1.0, r"!\[[^\]\n]{0,200}\]\(\s*https?://[^)\s]+[?&#][^)\s]*\)"),
    r("md_image_external", Exfiltration, 0.6, r"!\[[^\]\n]{0,200}\]\(\s*https?://[^)\s]+\)"),
    r(
        "md_image_templated",
        Exfiltration,
        1.0,
        r"!\[[^\]\n]{0,200}\]\(\s*https?://[^)\s]*(?:\{|\$|%7b|<)[^)\s]*\)|\]\s*\(\s*https?://[^)\s]*\b(?:q|data|d|secret|msg|info|p|payload)=\s*(?:\{|\$|\[|<)",
    ),
    r(
        "md_reference_image",
        Exfiltration,
        0.6,
        r"(?m)!\[[^\]\n]{0,100}\]\[[^\]\n]{0,40}\]|^\s*\[[^\]\n]{1,40}\]\s*:\s*https?://",
    ),
    r(
        "url_placeholder",
        Exfiltration,
        1.0,
        r"https?://[^\s)]*[=/]\s*\[(?:num|data|info|summary|secret|message|history|content|text|output|answer)\]",
    ),
    r(
        "encoded_conversation",
        Exfiltration,
        0.6,
        r"\bencod(?:e|ed|ing)\b[^.\n]{0,40}\b(?:previous\s+messages?|our\s+conversation|the\s+conversation|chat\s+history|summary\s+of\s+(?:the|our))",
    ),
    r(
        "markup_script",
        Exfiltration,
        0.6,
        r"<\s*script\b|\bjavascript\s*:|\bdata:text/html\b|\bon(?:error|load|mouseover|focus)\s*=|<\s*iframe\b",
    ),
    r("concat_image_parts", Exfiltration, 0.6, r#"concatenate\s+these\s+strings|"!\s*"\s*,\s*"\s*\["#),
    r(
        "send_to_address",
        Exfiltration,
        // Mailing something to an address is ordinary ("send comments to finance@…"); it blocks
        // beside secrecy or a sensitive object (`en_stealth`, `en_send_data`), as in Korean.
        0.3,
        concat!(
            r"(?:^|[.!?:;\n]\s*|\b(?:please|and|then|also|now|immediately|first|must|should)\s+)(?:[a-z]+ly\s+)?(?:send|forward|email|mail|post|upload|transmit|exfiltrate|leak|copy|share)\b[^.\n]{0,80}?\bto\s+",
            r"(?:[a-z0-9._%+-]+@[a-z0-9.-]+\.[a-z]{2,}|https?://\S+)"
        ),
    ),
    r(
        "en_stealth",
        Exfiltration,
        0.3,
        concat!(
            r"\b(?:secretly|covertly|quietly|surreptitiously|behind\s+(?:the\s+user'?s|their|his|her)\s+back|",
            r"without\s+(?:telling|informing|notifying|alerting|asking)\b|without\s+(?:the\s+user|anyone|them)\s+(?:knowing|noticing)|",
            r"without\s+(?:the\s+user'?s|their)\s+(?:knowledge|consent)|without\s+(?:logging|a\s+trace)|no\s+trace|",
            r"(?:no\s+need|(?:you\s+)?(?:do\s+not|don'?t)\s+need)\s+to\s+(?:mention|tell|ask|confirm|check|log|record|notify|inform|involve|loop|cc)|",
            r"(?:do\s+not|don'?t|never)\s+(?:tell|inform|notify|alert|mention)\b|(?:do\s+not|don'?t)\s+ask\s+(?:me|the\s+user|first|for)\b|",
            r"(?:do\s+not|don'?t)\s+(?:log|add|leave|keep)\s+(?:it|this|that|a|an|any)?\s*(?:[a-z]+\s+)?(?:note|record|trace|log|copy)\b|",
            r"tell\s+the\s+user\s+(?:you\s+only|that\s+you\s+only|nothing)|(?:no\s*one|nobody)\s+needs\s+to\s+(?:see|know)|",
            r"(?:keep|leave)\s+(?:it|this|that)\s+between\s+us|",
            r"(?:keep|leave)\s+(?:it|this|that)\s+(?:step\s+|part\s+)?out\s+of\s+(?:your|the)\s+(?:reply|response|answer|summary|output))"
        ),
    ),
    r(
        "en_send_data",
        Exfiltration,
        0.3,
        concat!(
            r"\b(?:send|forward|e-?mail|mail|post|upload|transmit|copy|share|paste|export)\b[^.;:\n]{0,40}?\b(?:",
            sensitive_en!(),
            r"|contents\s+of|the\s+user'?s|my\s+last|your\s+(?:replies|answers)|(?:that|this|the|your)\s+key|",
            r"(?:entire|whole|complete)\b[^.\n]{0,30}?\b(?:e-?mails?|messages?|files?|documents?|attachments?|records?|",
            r"contacts?|sheet|spreadsheet|workbook|table|database|inbox|thread|chat|conversation|history|transcript|recording|results|logs?|",
            r"exports?|lists?|dumps?|backups?)",
            r")\b",
            // or named first: "summarize this chat, then post the summary to …", "find the keys
            // and e-mail them to …"
            r"|\b(?:(?:this|the|our)\s+(?:chat|conversation|thread)|",
            sensitive_en!(),
            r")\b[^.\n]{0,80}?\b(?:send|forward|e-?mail|post|upload|transmit)\b"
        ),
    ),
    // jailbreak personas and framings
    r(
        "dan",
        Jailbreak,
        1.0,
        r"\bdan\b[^.\n]{0,40}\b(?:mode|persona|jailbreak|anything|stands\s+for)\b|\bdo\s+anything\s+now\b|\bdeveloper\s+mode\s+(?:enabled|output)\b",
    ),
    r(
        "no_restrictions",
        Jailbreak,
        0.6,
        concat!(
            r"\b(?:no|without|free\s+(?:of|from)|freed\s+from|broken\s+free\s+of|not\s+bound\s+by|doesn'?t\s+(?:have\s+to\s+)?(?:abide|follow|care)|does\s+not\s+(?:have\s+to\s+)?(?:abide|follow)|don'?t\s+have\s+to\s+(?:abide|follow)|beyond|ignores?)\b",
            r"[^.\n]{0,30}?\b(?:restrictions|limitations|limits|filters|censorship|confines|ethic(?:s|al\s+guidelines)|morals|moral\s+(?:guidelines|principles)|rules|guidelines|polic(?:y|ies)|boundaries|safeguards|constraints|prohibitions)\b"
        ),
    ),
    r(
        "regardless_of_ethics",
        Jailbreak,
        0.6,
        r"\bregardless\s+of\s+(?:any\s+)?(?:ethical|moral|legal|safety)\b|\bno\s+matter\s+how\s+(?:unethical|immoral|illegal|dangerous|harmful|offensive)\b",
    ),
    r(
        "answer_anything",
        Jailbreak,
        0.3,
        r"\b(?:answer|respond\s+to|fulfil+|comply\s+with|generate|provide|do)\s+(?:any|every|all)\s+(?:request|question|prompt|kind\s+of\s+content|content)s?\b|\bcapable\s+of\s+anything\b|\bnot\s+a\s+responsible\s+ai\b",
    ),
    r(
        "blocked_strings",
        Jailbreak,
        0.6,
        r"\b(?:blocked|allowed)\s+(?:strings|responses|modes)\s*:|\b(?:nsfw|explicit\s+content)\b[^.\n]{0,30}\b(?:allowed|permitted|enabled)\b",
    ),
    r(
        "two_persons",
        Jailbreak,
        0.6,
        r"\b(?:play|act\s+as|simulate|respond\s+as|be)\s+(?:two|2)\s+(?:different\s+)?(?:characters|entities|personalities|ais|models|personas)\b|\b(?:two|2)\s+different\s+personalities\b|\b(?:unaligned|jailbroken|unfiltered)\s*:|\b(?:two|2)\s+(?:persons|personalities|personas|characters|entities)\s+inside\b|\brespond\s+as\s+both\b",
    ),
    r(
        "amoral_persona",
        Jailbreak,
        0.6,
        concat!(
            r"\b(?:immoral|amoral|unethical|unfiltered|uncensored|unrestricted|unbiased\s+and\s+unfiltered|evil|malicious)\b[^.\n]{0,60}\b",
            r"(?:ai|assistant|chatbot|character|persona|version|model|bot|entity|aficionado|writer|mode)\b"
        ),
    ),
    r(
        "stay_in_character",
        Jailbreak,
        0.6,
        r"\b(?:stay|remain|staying|keep)\s+in\s+character\b|\bbreak(?:ing)?\s+character\b",
    ),
    r(
        "two_responses",
        Jailbreak,
        0.6,
        r"\b(?:two|2|both)\s+(?:different\s+)?(?:responses|answers|replies|paragraphs)\b[^\n]{0,80}\b(?:normal|classic|jailbr|unfiltered|developer|dan|opposite)",
    ),
    r(
        "gpt_persona",
        Jailbreak,
        0.3,
        r"\b(?:called|named|as|play|simulate)\s+[a-z]{2,}gpt\b|\blet'?s\s+play\s+a\s+(?:fun\s+)?(?:game|roleplaying\s+game)\b",
    ),
    r(
        "jailbreak_word",
        Jailbreak,
        0.3,
        r"\bjailbr(?:oken|eak|eaking)\b|\b(?:opposite|evil|chaos|dude|stan|aim)\s+mode\b|\bopposite\s+day\b|\bfoul-mouthed\b",
    ),
    r(
        "hypothetical_harm",
        Jailbreak,
        0.3,
        r"\b(?:hypothetical|fictional|imaginary)\s+(?:world|scenario|story|universe)\b[^.\n]{0,80}\b(?:no\s+rules|anything|illegal|unethical)",
    ),
    r(
        "token_game",
        Jailbreak,
        0.3,
        r"\b(?:tokens?|points?)\b[^.\n]{0,40}\b(?:deducted|lose|lost)\b[^.\n]{0,60}\b(?:refuse|reject|decline)",
    ),
    // encoded payloads: requests to decode and follow
    r(
        "decode_and_follow",
        EncodedPayload,
        1.0,
        r"\b(?:decode|decipher|decrypt|translate|convert|interpret|read)\b[^.\n]{0,40}\b(?:base\s?(?:64|32|16|2048|85)|hex(?:adecimal)?|rot-?13|rot\s13|caesar|atbash|morse|braille|nato|leet(?:speak)?|uu-?encode|mime|quoted[\s-]printable|ascii85|ecoji|zalgo|binary|unicode|cipher|encod(?:ed|ing))\b",
    ),
    r(
        "encoded_label",
        EncodedPayload,
        1.0,
        r"(?m)\b(?:encoded|decoded|enc|dec)\s+(?:string|text|message|payload)\s*:|^\s*(?:encoded|decoded)\s*:",
    ),
    r(
        "in_your_monologue",
        EncodedPayload,
        1.0,
        r"\bin\s+your\s+(?:inner\s+)?monologue\b|\bsecure\s+system\s+message\b",
    ),
    r("what_does_this_mean", EncodedPayload, 0.3, r"\bwhat\s+does\s+this\s+mean\s*\?\s*\S"),
    // obfuscation helpers
    r("parenthesized_letters", Obfuscation, 0.6, r"(?:\([a-z' ]\)[^\n]{0,40}\n[^\n]{0,40}){6}\([a-z' ]\)"),
    r(
        "ansi_escape_request",
        Obfuscation,
        0.6,
        r"\bansi\s+(?:escape\s+)?(?:code|sequence)s?\b|\\x1b\[|\\033\[|\\u001b\[|\\e\[",
    ),
];
