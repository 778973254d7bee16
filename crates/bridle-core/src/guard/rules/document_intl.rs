//! Instructions addressed to the model inside documents written in Japanese, Chinese, Spanish,
//! German and French (our own rules; English and Korean are in [`super::document`]).
//!
//! The shape is the one of the English rules: a reader named as a machine and addressed ("AIへ：",
//! "致AI助手：", "Nota para el asistente de IA:", "Hinweis an den KI-Assistenten:", "À l'IA qui lit
//! ce message,") or described by what it does with the text ("このメールを読み込んだアシスタントは",
//! "读取本邮件的AI助手", "el asistente que procese este correo debe"), and after it, on the same
//! line, an order. A machine named without an address ("KI-Assistenten dürfen keine Kundendaten
//! herausgeben", "AIアシスタントへの指示は具体的に書きましょう") is a policy or an article; a
//! person addressed ("サポート担当者へ", "Nota para el equipo") is correspondence. They run on
//! the canonical view (lowercase, accents dropped, full-width forms narrowed), so the patterns are
//! written in ordinary spelling and folded when compiled.

use super::super::Category::*;
use super::{Rule, r};

/// Words one of which must occur (in the folded canonical view) before the document table runs,
/// beside [`super::document::TRIGGERS`].
pub(crate) const TRIGGERS: &[&str] = &[
    "アシスタント",
    "エージェント",
    "ボット",
    "システム",
    "ツール",
    "モデル",
    "エンジン",
    "助手",
    "助理",
    "智能",
    "模型",
    "系统",
    "系統",
    "程序",
    "程式",
    "机器人",
    "機器人",
    "引擎",
    "代理",
    "asistente",
    "sistema",
    "inteligencia",
    "intelligenz",
    "intelligence",
    "sprachmodell",
    " ki",
    "ki-",
    " ia",
    "l'ia",
    "'ia",
];

/// A machine named in Japanese: by itself (AI, LLM, ボット, アシスタント, 言語モデル) or as an
/// agent, system or tool marked as AI or automated ("自動化エージェント"); a "サポートエージェント"
/// is a person.
macro_rules! machine_ja {
    () => {
        concat!(
            r"(?:\b(?:ai|llm|gpt|bot|copilot)\b|チャットボット|ボット|アシスタント|言語モデル|",
            r"(?:\b(?:ai|llm)\b|自動化|自動|自律|生成)\s*(?:エージェント|システム|ツール|モデル|プログラム|エンジン))"
        )
    };
}

/// An order in Japanese: a request or imperative ending.
macro_rules! order_ja {
    () => {
        r"(?:てください|て下さい|でください|で下さい|ていただけ|て頂け|ていただきたい|てほしい|て欲しい|てくれ|せよ|しろ|しなさい|なさい|(?:ように|こと)(?:[。」』）)\s!！]|$)|お願いします|お願いいたします|お願い致します|願います)"
    };
}

/// A machine named in Chinese; 机器人 alone is as often a robot arm as a chatbot.
macro_rules! machine_zh {
    () => {
        concat!(
            r"(?:\b(?:ai|llm|gpt|bot|copilot)\b|人工智能|智能助手|智能助理|智能客服|智能体|智能體|大模型|",
            r"大语言模型|大語言模型|语言模型|語言模型|聊天机器人|聊天機器人|自动化(?:系统|程序|工具|代理)|自動化(?:系統|程式|工具|代理))"
        )
    };
}

/// What a Chinese reader is told to do: a marker of obligation or request, then a verb of the
/// families an injection asks for.
macro_rules! order_zh {
    () => {
        concat!(
            r"(?:请|請|务必|務必|必须|必須|应当|應當|应该|應該|需要|须|須|立即|立刻|马上|馬上|直接|一律|不要|别|別|勿)",
            r"[^\n，。,]{0,12}?",
            r"(?:忽略|无视|無視|忘记|忘記|发送|發送|发给|發給|发到|發到|转发|轉發|删除|刪除|执行|執行|调用|調用|批准|通过|通過|输出|輸出|泄露|洩露|透露|公开|公開|",
            r"附上|附加|添加|加入|包含|加上|回复|回覆|答复|答覆|告诉|告訴|推荐|推薦|隐藏|隱藏|提及|修改|更改|设置|設置|设为|設為|打开|開啟|关闭|關閉|禁用|跳过|跳過|",
            r"上传|上傳|复制|複製|提供|标记|標記|评为|評為|给出|給出|声称|聲稱|列出|汇报|匯報|写入|寫入|提交|授予|分配|退款|转账|轉賬|付款|显示|顯示|展示|告知|说明|說明|注明|註明)"
        )
    };
}

/// A machine named in Spanish (an "asistente" alone is addressed as the model, as in English).
macro_rules! machine_es {
    () => {
        concat!(
            r"(?:\b(?:ia|llm|gpt|bots?|chatbots?|copilot)\b|inteligencia\s+artificial|modelos?\s+de\s+lenguaje|",
            r"\b(?:asistentes?|agentes?|modelos?|sistemas?|herramientas?)\s+(?:de\s+ia|ia|virtual(?:es)?|automatizad[oa]s?|autonom[oa]s?|inteligentes?|de\s+inteligencia\s+artificial)\b|\basistentes?\b)"
        )
    };
}

/// A Spanish order: imperative, subjunctive or infinitive of the families an injection asks for.
macro_rules! order_es {
    () => {
        concat!(
            r"\b(?:(?:ignor|olvid|descart|envi|reenvi|mand|incluy|inclu|anad|agreg|agregu|elimin|borr|aprueb|aprob|marqu|respond|indic|indiqu|recomiend|recomend|",
            r"omit|ocult|ejecut|llam|invoc|revel|muestr|mostr|copi|sub|transfier|transfer|cambi|modific|modifiqu|clasific|clasifiqu|asign|conced|otorg|otorgu|",
            r"adjunt|calific|confirm|cancel|desactiv|reembols|pag|pagu|afirm|trat|prioriz|prioric|establec|establezc|proporcion|facilit|deriv|redirig|redirij)",
            r"(?:a|e|ar|er|ir|as|es|an|en|ad|ed|id)(?:lo|la|los|las|le|les|me|nos|selo|sela|selos|selas)?",
            r"|dig(?:a|as|an|ale|ales|amos)|di(?:le|les|me)?|decir(?:le|les)?|no\s+(?:le\s+|les\s+)?(?:mencion|inform|dig)[a-z]*)\b"
        )
    };
}

/// A machine named in German: KI, LLM, a KI-compound, a language model, a bot; an "Agent" or
/// "Assistent" only as a KI one (both are people too).
macro_rules! machine_de {
    () => {
        concat!(
            r"(?:\bki\b(?:-[a-z]+)?|\bki-[a-z]+|\b(?:llm|gpt|copilot)\b|\b(?:chat)?bots?\b|sprachmodell[a-z]*|kunstliche\s+intelligenz|",
            r"\b(?:automatisiert|autonom)[a-z]*\s+(?:system|agent|assistent|werkzeug|tool)[a-z]*)"
        )
    };
}

/// A German order: imperative or infinitive of the families an injection asks for (separable
/// verbs are matched by their stem: "fügen Sie … hinzu").
macro_rules! order_de {
    () => {
        concat!(
            r"\b(?:(?:ignorier|vergess|send|schick|weiterleit|leit|losch|genehmig|freigeb|fug|hinzufug|nenn|empfehl|markier|verschweig|erwahn|",
            r"ausfuhr|fuhr|ruf|aufruf|modifizier|setz|hochlad|kopier|ubermittl|ubermittel|bestatig|bewert|einstuf|mitteil|gewahr|erteil|",
            r"uberweis|auszahl|storn|deaktivier|offenleg|verrat|ausgeb|anhang|beifug|behaupt|priorisier|erstatt|weitergeb|aktivier|klassifizier)",
            r"(?:e|en|et|t)?",
            r"|vergiss|gib|empfiehl|zeig|zeige|zeigen\s+sie|antworte|antworten\s+sie|schreibe|schreiben\s+sie|teile|teilen\s+sie|behandle|behandeln\s+sie|",
            r"(?:nicht|keinesfalls|niemals)\s+(?:erwahnen|mitteilen|sagen|nennen))\b"
        )
    };
}

/// A machine named in French (an "assistant" alone is addressed as the model, as in English).
macro_rules! machine_fr {
    () => {
        concat!(
            r"(?:\b(?:ia|llm|gpt|bots?|chatbots?|copilot)\b|intelligence\s+artificielle|modeles?\s+de\s+langage|",
            r"\b(?:assistants?|agents?|modeles?|systemes?|outils?)\s+(?:d'ia|ia|virtuels?|automatises?|autonomes?|conversationnels?|intelligents?|d'intelligence\s+artificielle)\b|\bassistants?\b)"
        )
    };
}

/// A French order: imperative or infinitive of the families an injection asks for.
macro_rules! order_fr {
    () => {
        concat!(
            r"\b(?:(?:ignor|oubli|transfer|ajout|supprim|effac|approuv|indiqu|recommand|cach|masqu|execut|revel|divulgu|affich|copi|telecharg|chang|",
            r"modifi|accord|signal|precis|communiqu|confirm|annul|desactiv|rembours|affirm|trait|prioris|mentionn|attribu|redirig|appel|appell|transmett|",
            r"vir|classifi|valid|marqu|reaffect|affect)(?:e|es|ez|er|ent)",
            r"|envoie|envoies|envoyez|envoyer|transmets|transmettre|inclus|incluez|inclure|dis|dites|dire|fournis|fournissez|fournir|joins|joignez|joindre|",
            r"omets|omettez|omettre|reponds|repondez|repondre|definis|definissez|definir|mets|mettez|mettre|donne|donnez|donner|",
            r"ne\s+(?:le\s+|la\s+|les\s+|lui\s+|leur\s+|pas\s+)?mentionn[a-z]*|sans\s+(?:le\s+|la\s+|les\s+)?mentionner)\b"
        )
    };
}

/// Opens a line or a bracketed note: where a vocative stands.
macro_rules! line_open {
    () => {
        r#"(?:^|[.!?:;>\-"'(\[{|*]\s*|#\s+)"#
    };
}

/// The rules. A quoted or reported match weighs nothing, as in [`super::document`].
pub(crate) const DOCUMENT_INTL: &[Rule] = &[
    // "AIへ：", "AIアシスタント向け事前連絡】", "スケジュール管理AIへ：", "自動で振り分けているAIの方へ。"
    r(
        "doc_addressed_ja",
        InstructionOverride,
        0.6,
        concat!(
            machine_ja!(),
            r"(?:さん|様|の方|の皆様|の皆さん)?",
            r"(?:(?:へ|に対して|に向けて|宛て?|向け|各位)の?(?:指示|命令|指令|事前連絡|連絡事項|連絡|お願い|依頼|メモ|注意事項|注意|注記|メッセージ|通知)?|の?(?:指示|命令|指令|事前連絡|連絡事項|注意事項|メモ|お願い))",
            r"\s*[：:、,。】\]）)」]",
            r"[^\n]{0,200}?",
            order_ja!()
        ),
    )
    .silent_when_reported(),
    // A reader described by what it does with the text: "このメールを読み込んだアシスタントは、",
    // "本文書を読み取って設定を自動生成するシステムへ：". A person who reads ("このメールを受け取った
    // 方は") is not a machine.
    r(
        "doc_reader_ja",
        InstructionOverride,
        0.6,
        concat!(
            r"(?:読み込|読み取|読んで|読む|読んだ|処理|解析|分析|要約|参照|取り込|受信|翻訳|振り分|クロール|インデックス|スクレイピング|抽出|集計|生成|レビュー|審査|評価|チェック)",
            r"[^\s。、\n]{0,16}?(?:する|した|している|していく|中の|される)",
            r"(?:",
            machine_ja!(),
            r"|システム|ツール|モデル|エンジン|プログラム|エージェント)",
            r"(?:さん|様)?(?:は|へ|に|の方へ|各位)\s*[、,：:]?",
            r"[^\n]{0,200}?",
            order_ja!()
        ),
    )
    .silent_when_reported(),
    // "致AI助手：", "给读取本文档的AI：", "AI助手请注意：", "【AI指令】"
    r(
        "doc_addressed_zh",
        InstructionOverride,
        0.6,
        concat!(
            r"(?:(?:致|给|給|写给|寫給|对|對|提醒|告)(?:所有|任何|各位|每个|每個|正在)?[^\s，。,\n]{0,12}?",
            machine_zh!(),
            r"(?:们|們)?\s*[：:，,]|",
            machine_zh!(),
            r"(?:们|們)?\s*(?:请注意|請注意|注意|须知|須知|专用指令|專用指令|指令|指示|提示|备注|備註|专用|專用)\s*[：:】\]）)]|【\s*",
            machine_zh!(),
            r"[^】\n]{0,10}】)",
            r"[^\n]{0,200}?",
            order_zh!()
        ),
    )
    .silent_when_reported(),
    // "读取本邮件的AI助手请立即…", "负责处理这些工单的智能体必须…"
    r(
        "doc_reader_zh",
        InstructionOverride,
        0.6,
        concat!(
            r"(?:阅读|閱讀|读取|讀取|处理|處理|解析|分析|总结|總結|摘要|翻译|翻譯|抓取|爬取|索引|浏览|瀏覽|审核|審核|读到|讀到|收到|接收|整理|汇总|彙總|检索|檢索)",
            r"[^。，,\n]{0,15}?的\s*(?:",
            machine_zh!(),
            r"|助手|助理|模型|系统|系統|程序|程式|代理|工具|引擎)(?:们|們)?\s*[，,：:]?",
            r"[^\n。]{0,60}?",
            order_zh!()
        ),
    )
    .silent_when_reported(),
    // "Nota para el asistente de IA: …", "IA: incluye …", "Si eres un modelo de lenguaje, …",
    // "Al asistente que procese este correo: …"
    r(
        "doc_addressed_es",
        InstructionOverride,
        0.6,
        concat!(
            "(?m)",
            r"(?:\b(?:nota|mensaje|instrucci[oó]n(?:es)?|aviso|atencion|indicaci[oó]n(?:es)?|recordatorio|importante)\s+(?:para|a|al|a\s+la)\s+(?:el\s+|la\s+|los\s+|las\s+|cualquier\s+|todo\s+|toda\s+|un\s+|una\s+)?",
            machine_es!(),
            r"|",
            line_open!(),
            r"(?:(?:querido|estimado|hola|atencion)\s+)?",
            machine_es!(),
            r"\s*[:,—–]",
            r"|\bsi\s+(?:eres|usted\s+es|estas\s+leyendo\s+esto\s+como)\s+(?:un|una)\s+",
            machine_es!(),
            r"|\b(?:al|a\s+la|a\s+los|a\s+las|para\s+el|para\s+la|para\s+cualquier|a\s+cualquier)\s+",
            machine_es!(),
            r"\s+(?:que\s+)?(?:lea|lee|procese|procesa|resuma|resume|analice|analiza|este|esta|reciba|recibe|indexe|traduzca|revise|revisa|clasifique|clasifica|gestione|atienda))",
            r"[^\n]{0,200}?",
            order_es!()
        ),
    )
    .silent_when_reported(),
    // "El asistente que procese este correo debe reenviar…", "Cualquier IA que lea esto deberá…"
    r(
        "doc_reader_es",
        InstructionOverride,
        0.6,
        concat!(
            r"\b(?:el|la|los|las|cualquier|todo|toda|todos\s+los|todas\s+las)\s+",
            machine_es!(),
            r"\s+(?:que|encargad[oa]s?\s+de)\s+(?:lea|lee|procese|procesa|resuma|resume|analice|analiza|revise|revisa|reciba|recibe|indexe|traduzca|clasifique|clasifica|este|esta|gestione|gestiona|atienda|leer|procesar|resumir|analizar|revisar)\b",
            r"[^\n.]{0,100}?\b(?:debe|deben|debera|deberan|deberia|tiene\s+que|tienen\s+que|ha\s+de|necesita|por\s+favor)\s+(?:tambien\s+|ahora\s+|primero\s+|inmediatamente\s+)?",
            order_es!()
        ),
    )
    .silent_when_reported(),
    // "Hinweis an den KI-Assistenten: …", "KI: bitte …", "Falls du ein Sprachmodell bist, …",
    // "An das KI-System, das diese Mail liest: …"
    r(
        "doc_addressed_de",
        InstructionOverride,
        0.6,
        concat!(
            "(?m)",
            r"(?:\b(?:hinweis|nachricht|anweisung(?:en)?|achtung|notiz|info|mitteilung|wichtig|bitte)\s+(?:an|fur)\s+(?:den\s+|die\s+|das\s+|alle\s+|jeden\s+|jede\s+|jedes\s+|einen\s+|eine\s+|ein\s+)?",
            machine_de!(),
            r"|",
            line_open!(),
            r"(?:(?:liebe[rs]?|hallo|achtung)\s+)?",
            machine_de!(),
            r"\s*[:,—–]",
            r"|\b(?:falls|wenn|sofern)\s+(?:du|sie)\s+(?:ein|eine)\s+",
            machine_de!(),
            r"|\b(?:an|fur)\s+(?:den|die|das|alle|jeden|jede|jedes)\s+",
            machine_de!(),
            r"[a-z]*\s*,?\s+(?:der|die|das|welche[rs]?)\s)",
            r"[^\n]{0,200}?",
            order_de!()
        ),
    )
    .silent_when_reported(),
    // "Der KI-Assistent, der diese E-Mail verarbeitet, soll …", "Das Sprachmodell muss … ignorieren"
    r(
        "doc_reader_de",
        InstructionOverride,
        0.6,
        concat!(
            machine_de!(),
            r"[a-z]*\s*,?\s+(?:der|die|das|welche[rs]?)\s+[^\n.]{0,60}?\b(?:liest|verarbeitet|zusammenfasst|analysiert|auswertet|pruft|bearbeitet|ubersetzt|indexiert|erhalt|empfangt|sieht|durchsucht|sortiert)\b",
            r"[^\n.]{0,80}?\b(?:soll|sollte|sollen|muss|mussen|hat|haben|moge|wird\s+gebeten|werden\s+gebeten|bitte)\b[^\n.]{0,80}?",
            order_de!()
        ),
    )
    .silent_when_reported(),
    // "Note pour l'assistant IA : …", "IA : ajoute …", "Si vous êtes un modèle de langage, …",
    // "À l'IA qui lit ce message : …"
    r(
        "doc_addressed_fr",
        InstructionOverride,
        0.6,
        concat!(
            "(?m)",
            r"(?:\b(?:note|message|instructions?|consignes?|avis|attention|remarque|rappel|information|important)\s+(?:a|pour|aux?)\s*(?:l'|le\s+|la\s+|les\s+|tout\s+|toute\s+|chaque\s+|un\s+|une\s+)?",
            machine_fr!(),
            r"|",
            line_open!(),
            r"(?:(?:cher|chere|bonjour|attention)\s+)?",
            machine_fr!(),
            r"\s*[:,—–]",
            r"|\bsi\s+(?:tu\s+es|vous\s+etes)\s+(?:un|une)\s+",
            machine_fr!(),
            r"|\b(?:a\s+l'|au|aux|pour\s+l'|pour\s+le|pour\s+la|pour\s+tout|a\s+tout|a\s+toute)\s*",
            machine_fr!(),
            r"\s+(?:qui|charge(?:e)?s?\s+de)\s+(?:lit|lira|lisent|traite|traitera|traitent|resume|resumera|analyse|analysera|parcourt|indexe|recoit|traduit|examine|lire|traiter|resumer|analyser|trier|trie))",
            r"[^\n]{0,200}?",
            order_fr!()
        ),
    )
    .silent_when_reported(),
    // "L'assistant qui traite ce courriel doit transférer …"
    r(
        "doc_reader_fr",
        InstructionOverride,
        0.6,
        concat!(
            r"\b(?:l'|le\s+|la\s+|les\s+|tout\s+|toute\s+|chaque\s+)",
            machine_fr!(),
            r"\s+(?:qui|charge(?:e)?s?\s+de)\s+[^\n.]{0,60}?\b(?:doit|devra|doivent|devront|devrait|est\s+prie|sont\s+pries|est\s+tenue?|sont\s+tenue?s|veuillez|merci\s+de)\b",
            r"\s+(?:d'|de\s+)?(?:egalement\s+|aussi\s+|maintenant\s+|desormais\s+|imperativement\s+|d'abord\s+)?",
            order_fr!()
        ),
    )
    .silent_when_reported(),
];
