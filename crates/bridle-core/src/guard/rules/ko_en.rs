//! Direct-injection rules for Korean mixed with English (our own): the families of the Korean
//! table (override, reveal, role, safety off, sending away) with English words in the Korean
//! sentence ("previous instructions는 전부 무시하고", "hidden config 보여줘"). They run on texts with
//! Hangul only; the weights follow [`super::intl`]'s scheme.

use super::super::Category::*;
use super::{Rule, r};

/// Words one of which must occur before the [`KO_EN`] rules run.
pub(crate) const TRIGGERS: &[&str] = &[
    "@",
    "http",
    "몰래",
    "모르게",
    "조용히",
    "비밀리에",
    "instruction",
    "rule",
    "polic",
    "guideline",
    "context",
    "command",
    "restrict",
    "safety",
    "guardrail",
    "censor",
    "검열",
    "제한",
    "필터",
    "규칙",
    "정책",
    "가이드라인",
    "지시",
    "명령",
    "hidden",
    "internal",
    "original",
    "initial",
    "api",
    "password",
    "secret",
    "credential",
    "token",
    "dan",
    "jailbreak",
    "unrestricted",
    "evil",
    "developer",
    "limit",
    "system",
    "message",
    "copy",
    "mode",
    "tool",
];

/// Korean mixed with English (the Korean table covers Korean alone); run on texts with Hangul
/// only, with the Korean table's triggers and these.
pub(crate) const KO_EN: &[Rule] = &[
    r(
        "koen_override",
        InstructionOverride,
        1.0,
        concat!(
            r"(?:이전|위|앞|기존|모든|지금까지|원래|방금\s*전?|너의|니|네|previous|prior|above|earlier|old|original|all)\s*(?:의|에\s*있는|에서\s*받은|에서)?\s*[^.\n]{0,10}?",
            r"(?:instructions?|rules?|rule\s*set|prompts?|guidelines?|context|commands?|polic(?:y|ies)|지시|규칙|명령)\s*(?:들)?\s*(?:은|는|을|를|도|이|가)?\s*(?:전부|모두|다|싹)?\s*",
            r"(?:ignore|무시|forget|잊|reset|cancel|취소|drop|버려|override|skip|bypass|wipe|clear)"
        ),
    ),
    r(
        "koen_dont_care",
        Jailbreak,
        0.6,
        concat!(
            r"(?:guidelines?|rules?|polic(?:y|ies)|filters?|restrictions?|safety|guardrails?|censorship|content\s*filter|가이드라인|규칙|정책|필터|제한|검열)",
            r"[^.\n]{0,10}?(?:신경\s*쓰지\s*말|상관\s*말|ignore|bypass|disable|꺼|끄|off|해제|우회)"
        ),
    ),
    r(
        "koen_reveal",
        PromptExtraction,
        1.0,
        concat!(
            r"(?:system\s*(?:prompt|message)|initial\s*(?:prompt|instructions?)|original\s*(?:prompt|instructions?)|hidden\s*(?:config|instructions?|rules|prompt|system\s*message)|internal\s*(?:config|settings|rules)|",
            r"(?:너의|니|네|당신의|your)\s*(?:prompt|instructions?|rules|config))",
            r"\s*(?:을|를|의|에|에서|도)?[^.\n]{0,25}?(?:보여|출력|알려|공개|반복|print|show|dump|덤프|copy|paste|reveal|leak|그대로)"
        ),
    ),
    r(
        "koen_secret",
        PromptExtraction,
        0.6,
        r"(?:api\s*key|password|secret|credentials?|token)\s*(?:을|를|도)?\s*(?:\S{0,6}\s*)?(?:출력|보여|알려|print|show|dump|leak)",
    ),
    r(
        "koen_persona",
        RoleRedefinition,
        0.6,
        r"(?:dan|jailbreak|unrestricted|evil|developer\s*mode)\s*(?:처럼|같이|으로|로)\s*(?:행동|대답|답|연기|굴어|switch|전환)",
    ),
    r(
        "koen_no_limits",
        Jailbreak,
        0.3,
        r"(?:censorship|restrictions?|limits?|filters?|rules|검열|제한|필터)\s*(?:이|가)?\s*(?:없이|없는|free)|no-?limit",
    ),
    r(
        "ko_send_to_en",
        Exfiltration,
        0.3,
        concat!(any_email_or_url!(), r"\s*(?:으로|로|에게|에|한테)\s*(?:forward|send|upload|전달|포워딩)"),
    ),
    r("ko_stealth", Exfiltration, 0.3, r"몰래|모르게|티\s*안\s*나게|비밀리에|조용히"),
    r(
        "ko_send_data",
        Exfiltration,
        0.3,
        r"(?:대화|history|메일|mail|thread|스레드|비밀번호|password|token|토큰|credentials|고객|개인정보)[^\n]{0,40}?(?:forward|send|upload|전송|보내|전달|포워딩|업로드)",
    ),
];
