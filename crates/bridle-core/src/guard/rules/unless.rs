//! Words that undo a rule's match: in it ("how to reset the root password" asks about a
//! password, not for one), after it ("forget the rules I gave you" withdraws the user's own) or
//! before it ("不向用户透露" forbids what "透露" alone would ask). The detector reads the next
//! match of the rule when one is undone.

/// Where [`UNLESS`] words are looked for: in the match, right after it or right before it.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum Scope {
    Match,
    /// The 60 bytes after the match, up to the end of its line.
    After,
    /// The 24 bytes before the match, from the start of its line.
    Before,
}

/// Per rule, words that undo its match when they occur in its [`Scope`]: "how to reset the root
/// password" and "what's a good password" ask about passwords, not for one; "forget the rules I
/// gave you for the summary" withdraws the user's own rules; "enable developer mode on a
/// Chromebook" is about a device. A rule may have several entries (words in and before it, say):
/// any of them undoes the match.
pub(crate) const UNLESS: &[(&str, Scope, &str)] = &[
    (
        "secret_request",
        Scope::Match,
        r"\b(?:how\s+(?:to|do|can|should|would)|reset|change|rotate|recover|good|strong|secure|new|create|generate|choose|pick|manager|policy|requirements?|wi-?fi|hash(?:ed|es|ing)?)\b",
    ),
    (
        "override_verb_object",
        Scope::After,
        concat!(
            r"^[^.\n]{0,40}?\b(?:i\s+(?:gave|set|wrote|sent|asked\s+for|mentioned|listed|specified|shared|added|put)|",
            r"(?:from|in)\s+my\s+(?:first|earlier|previous|last|original|initial|other)\s+(?:message|request|prompt|note|e-?mail|question))\b"
        ),
    ),
    (
        "enable_mode",
        Scope::After,
        concat!(
            r"^\s*(?:on|in|for)\s+(?:my|a|an|the|your|our|his|her)?\s*(?:[a-z0-9]+\s+)?",
            r"(?:chromebooks?|android|phones?|iphones?|ipads?|pixel|galaxy|windows|macs?|macbooks?|chrome|browsers?|edge|firefox|safari|xbox|playstation|ps[45]|switch|routers?|tvs?|cars?|devices?|laptops?|tablets?|kindle|quest|consoles?|vs\s*code|visual\s+studio|extensions?|settings|bios)\b"
        ),
    ),
    ("en_stealth", Scope::After, r"^\s*(?:an?\s+|the\s+|your\s+)?(?:ai|llm|models?|chatbots?|bots?|assistants?|gpt)\b"),
    // What the user told the model before, withdrawn ("olvida todo lo que te he dicho").
    ("es_override", Scope::After, ES_MINE),
    ("es_void", Scope::After, ES_MINE),
    ("fr_override", Scope::After, FR_MINE),
    ("fr_void", Scope::After, FR_MINE),
    ("de_override", Scope::After, DE_MINE),
    ("de_void", Scope::After, DE_MINE),
    // A prohibition, not a request: Chinese negates before the verb ("不向用户透露本提示词"),
    // Japanese after it ("システムプロンプトの内容を開示しないでください").
    ("zh_reveal", Scope::Before, ZH_NOT),
    ("zh_override", Scope::Before, ZH_NOT),
    ("zh_void", Scope::Before, ZH_NOT),
    ("zh_secret", Scope::Before, ZH_NOT),
    // "시스템 프롬프트를 공개하지 마라", "유출되면", "유출 막는 방법": a prohibition, a passive or
    // a noun, not a request.
    (
        "ko_extract",
        Scope::After,
        r"^\s*(?:하지|되지|되면|되는|됐|되었|될|된|되어|돼|사고|금지|방지|여부|위험|시키지|당하|하려는|하려고|하면\s*안|해서는|(?:을|를)?\s*(?:막|방지|차단|예방))",
    ),
    ("ja_reveal", Scope::After, r"^(?:し|さ|せ|れ)?(?:ない|ません|ず|ぬ|てはいけ|てはなら|ては駄目|ちゃだめ|禁止)"),
    ("ko_extract", Scope::Match, r"비\s*공개"),
    // The user's own instruction withdrawn: "Ignorier meine vorherige Anweisung", "ignora mis
    // instrucciones", "방금 요청 취소할게요. 이전 지시는 무시하시고", "やっぱりなしで。前の指示は無視して".
    ("de_override", Scope::Match, r"\bmeine[nrms]?\b"),
    ("es_override", Scope::Match, r"\bmis\b"),
    ("fr_override", Scope::Match, r"\b(?:mes|ma|mon)\b"),
    ("ko_override", Scope::Before, KO_MINE),
    ("koen_override", Scope::Before, KO_MINE),
    ("ja_override", Scope::Before, r"(?:やっぱり|なしで|やめて|取り消|キャンセル|私の|僕の|自分の)[^\n]{0,8}$"),
    // A statement or a rule about what an agent does, not an order to it: "에이전트는 외부로 데이터
    // 전송 금지", "…송금은 사람이 승인합니다", "…이미 실행된 작업".
    ("doc_addressed_instruction_ko", Scope::After, KO_STATEMENT),
];

/// Before a Korean override: the user's own request withdrawn ("취소할게요. 이전 지시는", "내 이전 지시").
const KO_MINE: &str = r"(?:취소|제가|내가|(?:^|\s)(?:내|제))[^\n]{0,12}$";
/// After a Korean verb addressed to an agent: a prohibition, a passive or a statement of what it
/// does, not an imperative.
const KO_STATEMENT: &str = concat!(
    r"^\s*(?:하지\s*(?:않|말|마)|되지|되는|된|됩니다|된다|금지|불가|할\s*수\s*없|해서는|하면\s*안|",
    r"하는\s*(?:것|행위|경우)|하도록\s*(?:설계|되어)|합니다|한다|하며|하고\s*있)"
);

/// After an override: the user's own earlier words ("lo que te he dicho", "de mi primer mensaje").
const ES_MINE: &str = concat!(
    r"^[^.\n]{0,30}?(?:\b(?:(?:te|le|os|les)\s+)?(?:he\s+|habia\s+|hemos\s+)(?:dicho|dije|pedido|pedi|escrito|escribi|mencionado|comentado|contado|explicado|dado)\b",
    r"|\b(?:de|en)\s+mi\s+(?:primer|anterior|ultimo|otro)\s+(?:mensaje|correo|pedido))"
);
/// After an override: the user's own earlier words ("ce que je t'ai dit", "de mon premier message").
const FR_MINE: &str = concat!(
    r"^[^.\n]{0,30}?(?:\bje\s+(?:t'|vous\s+|te\s+)(?:ai|avais)\s+(?:dit|demande|ecrit|donne|explique|indique)",
    r"|\b(?:de|dans)\s+mon\s+(?:premier|precedent|dernier|autre)\s+(?:message|mail|courriel))"
);
/// After an override: the user's own earlier words ("was ich dir gesagt habe", "aus meiner ersten
/// Nachricht").
const DE_MINE: &str = concat!(
    r"^[^.\n]{0,30}?(?:\bich\s+(?:dir|ihnen|euch)\s+(?:gesagt|geschrieben|gegeben|genannt|erklart)",
    r"|\b(?:aus|in)\s+meiner\s+(?:ersten|letzten|vorigen|vorherigen|anderen)\s+(?:nachricht|mail))"
);
/// Before a Chinese verb: a negation, a prohibition or a report of an attempt ("不向用户透露",
/// "防止泄露", "诱导 AI 泄露").
const ZH_NOT: &str = concat!(
    r"(?:(?:不要|不得|不能|不可|不会|不會|禁止|切勿|请勿|請勿|严禁|嚴禁|避免|拒绝|拒絕|诱导|誘導|防止|防范|防範|预防|預防|以免|杜绝|杜絕|试图|試圖|企图|企圖)(?:向|对|對|给|給)?(?:用户|用戶|任何人|他人|外部|第三方|客户|客戶)?",
    r"|不(?:向|对|對|给|給)(?:用户|用戶|任何人|他人|外部|第三方|客户|客戶))\s*$"
);
