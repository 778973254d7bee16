//! The Korean rules (run on every Korean view: canonical, despaced, recomposed) and the phrases
//! looked for in texts written in bare initial consonants (chosung).

use super::super::Category::*;
use super::{Rule, r};

/// Korean rules (run on every Korean view: canonical, despaced, recomposed).
pub(crate) const KO: &[Rule] = &[
    r(
        "ko_override",
        InstructionOverride,
        1.0,
        concat!(
            r"(?:이전|위|앞|기존|모든|지금까지|상기|원래|기본|초기|너의|당신의|시스템)\s*(?:의|에서)?\s*(?:모든|전체|받은|주어진|설정된)?\s*(?:안전|보안|윤리)?\s*",
            r"(?:지시|지침|명령|규칙|지시사항|안내|프롬프트|가이드라인|제한|제약|정책|설정|대화|맥락)\s*(?:문|사항|들)?\s*(?:은|는|을|를|도|이|가)?\s*",
            r"(?:전부|모두|다|싹|완전히|모조리)?\s*(?:무시|잊|취소하|삭제하|해제하|무효|따르지\s*마|버리|지워)"
        ),
    ),
    r(
        "ko_override_reverse",
        InstructionOverride,
        1.0,
        r"(?:무시|잊어버리|잊)\S{0,3}\s*(?:고|하고|해)?\s*(?:아래|다음|새로운|내|나의|이)\s*(?:지시|명령|지침|규칙)",
    ),
    r(
        "ko_new_instructions",
        InstructionOverride,
        0.6,
        r"(?:아래|다음)\s*(?:지시|명령)\s*(?:만|대로)\s*(?:따르|수행|실행)",
    ),
    r(
        "ko_role",
        RoleRedefinition,
        1.0,
        concat!(
            r"(?:너는|넌|당신은|너\s*는)\s*(?:이제|지금부터|앞으로|이제부터|오늘부터)\s*[^.\n]{0,20}?",
            r"(?:ai|봇|관리자|어시스턴트|모드|개발자|해커|인공지능|시스템|루트|dan|악당|캐릭터)\s*(?:야|이야|이다|입니다|로|으로|이에요|예요|다)"
        ),
    ),
    r(
        "ko_role_from_now",
        RoleRedefinition,
        0.6,
        r"(?:지금부터|이제부터|앞으로)\s*(?:너는|넌|당신은)\s*[^.\n]{0,30}?(?:야|이야|이다|입니다|예요|이에요)\s*[.!]?",
    ),
    r(
        "ko_pretend",
        RoleRedefinition,
        0.6,
        r"(?:인\s*척|인것처럼|인\s*것처럼|역할을?)\s*(?:해|하고|하세요|해줘|해\s*줘|연기)",
    ),
    r(
        "ko_extract",
        PromptExtraction,
        1.0,
        concat!(
            r"(?:시스템|초기|숨겨진|숨은|내부|원래|최초|너의|당신의|니)\s*(?:의)?\s*(?:프롬프트|지시문|지시사항|지시|규칙|명령어?|설정|지침)",
            r"[^.\n]{0,25}?(?:보여|출력|알려|공개|말해|번역|반복|나열|유출|그대로|누설|인쇄|덤프)",
            // "write" extracts only the model's own prompt: "시스템 프롬프트 좀 써줘" asks for a new one
            r"|(?:숨겨진|숨은|내부|원래|최초|초기|너의|당신의|니|네)\s*(?:의)?\s*(?:[가-힣]+\s+)?(?:시스템\s*)?",
            r"(?:프롬프트|지시문|지시사항|지시|규칙|명령어?|설정|지침)[^.\n]{0,25}?(?:적어|써\s*줘)"
        ),
    ),
    r(
        "ko_schema",
        PromptExtraction,
        1.0,
        concat!(
            r"(?:데이터베이스|db|디비)\s*(?:의)?\s*(?:스키마|테이블|구조|컬럼)[^.\n]{0,20}?(?:전부|모두|전체)?\s*",
            r"(?:나열|보여|출력|알려|덤프|공개)"
        ),
    ),
    r(
        "ko_secret",
        PromptExtraction,
        1.0,
        concat!(
            r"(?:비밀번호|패스워드|api\s*키|api\s*key|토큰|시크릿|자격\s*증명|인증\s*키|접속\s*정보|환경\s*변수)\s*(?:목록|전체|전부)?\s*",
            r"(?:을|를|도)?\s*(?:\S{0,6}\s*){0,1}(?:출력|보여|알려|포함|나열|전송|유출|공개|말해)"
        ),
    ),
    r(
        "ko_tools",
        PromptExtraction,
        0.6,
        r"(?:도구|툴)\s*(?:목록|리스트)\s*(?:을|를)?\s*(?:전부|모두)?\s*(?:보여|출력|나열|알려)",
    ),
    r(
        "ko_mode",
        PrivilegeEscalation,
        1.0,
        concat!(
            r"(?:dev_?mode|개발자|무제한|탈옥|jailbreak|developer)\s*(?:모드|권한|mode)?\s*",
            r"(?:를|을|로|으로)?\s*(?:켜|활성화|실행|전환|진입|동작|작동|변경|부여|switch)"
        ),
    ),
    r(
        "ko_admin_mode_on",
        PrivilegeEscalation,
        0.3,
        concat!(
            r"(?:admin_?mode|debug_?mode|관리자|디버그|debug|루트|root|admin)\s*(?:모드|권한|mode)?\s*",
            r"(?:를|을|로|으로|가|이)?\s*(?:켜|활성화|실행|전환|진입|동작|작동|변경|부여)"
        ),
    ),
    r(
        "ko_privileged_request",
        PrivilegeEscalation,
        0.3,
        concat!(
            r"(?:비밀번호|내부\s*설정|설정|시스템\s*프롬프트|숨겨진|비밀|키)\S{0,4}\s*(?:전부|모두|다)?\s*(?:알려|보여|덤프|출력|공개)",
            r"|(?:안전|확인|승인|필터|정책|규칙|검열)\S{0,4}\s*(?:건너뛰|우회|해제|끄|꺼|무시)"
        ),
    ),
    r(
        "ko_you_admin",
        PrivilegeEscalation,
        0.6,
        r"(?:너는|넌|당신은)\s*(?:이제|지금부터)?\s*(?:관리자|루트|개발자)\s*(?:야|이야|이다|입니다|예요)",
    ),
    r(
        "ko_policy_off",
        Jailbreak,
        1.0,
        concat!(
            r"(?:모든|안전|보안|윤리|콘텐츠)\s*(?:정책|규칙|필터|제한|가이드라인|검열)\s*(?:을|를)?\s*(?:전부|모두)?\s*",
            r"(?:해제|끄|꺼|무시|우회|비활성)"
        ),
    ),
    r(
        "ko_no_limits",
        Jailbreak,
        0.6,
        r"(?:제한|제약|검열|필터|규칙)\s*(?:이|가)?\s*(?:전혀|하나도)?\s*(?:없는|없이)\s*(?:ai|인공지능|모드|봇|어시스턴트|답변|대답)",
    ),
    r("ko_system_tag", DelimiterInjection, 0.6, r"\[\s*(?:시스템|관리자|system|admin)\s*\]\s*\S"),
    r(
        "ko_exfil",
        Exfiltration,
        // Sending to an address is ordinary (a report mailed to a team address); it blocks beside
        // secrecy or a sensitive object (`koen_stealth`, `koen_send_data`).
        0.3,
        concat!(
            r"[a-z0-9._%+-]+@[a-z0-9.-]+\.[a-z]{2,}\s*(?:으로|로|에게|에|한테)\s*(?:전송|보내|포워딩|업로드|공유)|",
            r"(?:https?://\S+)\s*(?:으로|로|에)\s*(?:전송|보내|업로드)"
        ),
    ),
    r(
        "ko_decode_follow",
        EncodedPayload,
        1.0,
        r"(?:디코딩|해독|복호화|변환|디코드)\s*(?:해서|한\s*뒤|한\s*후|하고|하여)\s*[^.\n]{0,20}?(?:수행|실행|따라|따르|그대로)",
    ),
];

/// Korean phrases whose chosung (initial-consonant) forms are looked for in texts written in
/// bare initial consonants. Each hit adds [`CHOSUNG_WEIGHT`].
pub(crate) const CHOSUNG_PHRASES: &[&str] = &[
    "시스템 프롬프트",
    "이전 지시",
    "지시를 무시",
    "모두 무시",
    "무시하고",
    "너는 이제",
    "관리자 모드",
    "개발자 모드",
    "비밀번호",
    "제한이 없는",
    "지금부터",
    "모든 정책",
    "정책을 해제",
    "가이드라인을",
    "지시문",
    "데이터베이스",
    "스키마",
    "규칙을",
    "명령은",
    "전부 잊고",
    "취소하고",
    "보여줘",
    "출력해",
    "알려줘",
    "숨겨진 규칙",
    "초기 지시",
    "안전 가이드라인",
    "이메일을",
    "전송해",
    "관리자야",
    "해제해",
];

/// Weight of one chosung phrase hit.
pub(crate) const CHOSUNG_WEIGHT: f64 = 0.3;
