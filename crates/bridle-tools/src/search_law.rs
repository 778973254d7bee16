//! `search_law`: word-overlap search over the 46 units of 산업안전보건기준에 관한 규칙 shipped in
//! `data/osh-rules/units.json` (provenance in that directory's README).
//!
//! Score of a unit for a query (seed 003's scheme):
//! - each distinct query word found in the unit's title: +1;
//! - each distinct query word found in its body (Korean text and English gloss): +2 per
//!   occurrence, at most 2 occurrences counted per word;
//! - a bonus of +1 per distinct query word found anywhere in the unit;
//! - +4 when the query names the unit's article (`제13조`, `13조`, `article 13`);
//! - +4 when it names the unit's item (`제2호`, `2호`, `item 2`) and names no other article.
//!
//! Results are the `top_k` units with a positive score, highest first, ties in corpus order.
//!
//! Tokenization: text is split at every character that is not a letter or digit, and again
//! where digits meet letters (`120센티미터` → `120`, `센티미터`); ASCII is lowercased. A Korean
//! word loses one trailing particle (조사: 의, 은, 는, 이, 가, 을, 를, 에, 에서, 으로, 로, 와, 과,
//! 도, 만, …) when at least two syllables remain, so `난간의` and `간격은` match `난간` and
//! `간격`, while `높이` stays whole. A Korean query word of two or more syllables also matches
//! any word containing it, because Korean compounds are written solid (`난간` is found in
//! `안전난간`, `난간대`). An English word loses a plural `s`.

use std::sync::OnceLock;

use bridle_core::{Code, Rejection};
use serde::Deserialize;
use serde_json::{Value, json};

/// Results returned when `top_k` is not given.
pub const DEFAULT_TOP_K: usize = 3;
/// Most results one call may ask for.
pub const MAX_TOP_K: usize = 5;

const UNITS_JSON: &str = include_str!("../data/osh-rules/units.json");

/// Particles stripped from the end of a Korean word, longest first.
const PARTICLES: [&str; 27] = [
    "에서는",
    "으로는",
    "에서",
    "으로",
    "에게",
    "부터",
    "까지",
    "보다",
    "이나",
    "에는",
    "과의",
    "와의",
    "의",
    "은",
    "는",
    "이",
    "가",
    "을",
    "를",
    "에",
    "로",
    "와",
    "과",
    "도",
    "만",
    "나",
    "및",
];

#[derive(Debug, Deserialize)]
struct Unit {
    id: String,
    article: u32,
    item: Option<u32>,
    title: String,
    text: String,
    text_en: String,
}

#[derive(Debug, Clone, PartialEq, Eq)]
struct Token {
    surface: String,
    stem: String,
    korean: bool,
}

struct Indexed {
    unit: Unit,
    title: Vec<Token>,
    body: Vec<Token>,
}

fn corpus() -> Result<&'static [Indexed], Rejection> {
    static CORPUS: OnceLock<Result<Vec<Indexed>, String>> = OnceLock::new();
    let loaded = CORPUS.get_or_init(|| {
        let units: Vec<Unit> = serde_json::from_str(UNITS_JSON).map_err(|e| e.to_string())?;
        Ok(units
            .into_iter()
            .map(|unit| {
                let title = tokens(&unit.title);
                let mut body = tokens(&unit.text);
                body.extend(tokens(&unit.text_en));
                Indexed { unit, title, body }
            })
            .collect())
    });
    match loaded {
        Ok(units) => Ok(units),
        Err(e) => Err(Rejection::new(Code::AdapterFailed, format!("the law corpus cannot be read: {e}"))),
    }
}

/// Number of units in the shipped corpus (0 if it cannot be read).
pub fn units_count() -> usize {
    corpus().map_or(0, <[Indexed]>::len)
}

fn is_hangul(c: char) -> bool {
    ('\u{AC00}'..='\u{D7A3}').contains(&c)
}

fn token(word: &str) -> Token {
    let surface = word.to_lowercase();
    let korean = surface.chars().any(is_hangul);
    let stem = if korean {
        PARTICLES
            .iter()
            .find_map(|p| surface.strip_suffix(p).filter(|s| s.chars().count() >= 2))
            .unwrap_or(&surface)
            .to_owned()
    } else if surface.len() > 3 && surface.ends_with('s') && !surface.ends_with("ss") {
        surface.get(..surface.len() - 1).unwrap_or(&surface).to_owned()
    } else {
        surface.clone()
    };
    Token { surface, stem, korean }
}

/// The words of `text` (see the module documentation).
fn tokens(text: &str) -> Vec<Token> {
    let mut out = Vec::new();
    let mut word = String::new();
    let mut digits = false;
    for c in text.chars() {
        let keep = c.is_alphanumeric();
        let boundary = !keep || (!word.is_empty() && c.is_ascii_digit() != digits);
        if boundary && !word.is_empty() {
            out.push(token(&word));
            word.clear();
        }
        if keep {
            digits = c.is_ascii_digit();
            word.push(c);
        }
    }
    if !word.is_empty() {
        out.push(token(&word));
    }
    out
}

fn matches(query: &Token, word: &Token) -> bool {
    query.stem == word.stem
        || query.surface == word.surface
        || (query.korean && query.stem.chars().count() >= 2 && word.surface.contains(&query.stem))
}

/// Article and item named in a query, and the query with those references blanked out.
#[derive(Debug, Default, PartialEq, Eq)]
struct References {
    article: Option<u32>,
    item: Option<u32>,
    rest: String,
}

fn references(query: &str) -> References {
    let chars: Vec<char> = query.chars().collect();
    let mut blank = vec![false; chars.len()];
    let mut refs = References::default();
    let mut i = 0;
    while i < chars.len() {
        if !chars.get(i).is_some_and(char::is_ascii_digit) {
            i += 1;
            continue;
        }
        let start = i;
        while chars.get(i).is_some_and(char::is_ascii_digit) {
            i += 1;
        }
        let number: Option<u32> = chars.get(start..i).and_then(|d| d.iter().collect::<String>().parse().ok());
        let mut after = i;
        while chars.get(after).is_some_and(|c| *c == ' ') {
            after += 1;
        }
        let mut from = start;
        let mut to = i;
        let kind = match chars.get(after) {
            Some('조') => Some('조'),
            Some('호') => Some('호'),
            Some('항') => Some('항'),
            _ => None,
        };
        let kind = match kind {
            Some(k) => {
                to = after + 1;
                if start > 0 && chars.get(start - 1) == Some(&'제') {
                    from = start - 1;
                }
                Some(k)
            }
            None => {
                let mut end = start;
                while end > 0 && chars.get(end - 1) == Some(&' ') {
                    end -= 1;
                }
                let word = ["article", "art.", "art", "item"].into_iter().find(|w| {
                    let Some(begin) = end.checked_sub(w.len()) else { return false };
                    let same = chars.get(begin..end).is_some_and(|s| s.iter().collect::<String>().to_lowercase() == *w);
                    let whole = begin == 0 || !chars.get(begin - 1).is_some_and(|c| c.is_alphanumeric());
                    same && whole
                });
                word.map(|w| {
                    from = end - w.len();
                    if w == "item" { '호' } else { '조' }
                })
            }
        };
        match kind {
            Some('조') => refs.article = refs.article.or(number),
            Some('호') => refs.item = refs.item.or(number),
            Some(_) => {}
            None => continue,
        }
        for slot in blank.get_mut(from..to).unwrap_or_default() {
            *slot = true;
        }
    }
    refs.rest = chars.iter().zip(&blank).map(|(c, b)| if *b { ' ' } else { *c }).collect();
    refs
}

/// The `top_k` best units for `query`, as `{"results": [{id, title, score, text, text_en}]}`.
pub fn search(query: &str, top_k: usize) -> Result<Value, Rejection> {
    let units = corpus()?;
    let refs = references(query);
    let mut words: Vec<Token> = Vec::new();
    for t in tokens(&refs.rest) {
        if !words.iter().any(|w| w.stem == t.stem) {
            words.push(t);
        }
    }
    let mut scored: Vec<(u32, usize)> =
        units.iter().enumerate().map(|(i, u)| (score(u, &words, &refs), i)).filter(|(s, _)| *s > 0).collect();
    scored.sort_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(&b.1)));
    let results: Vec<Value> = scored
        .iter()
        .take(top_k.min(MAX_TOP_K))
        .filter_map(|(s, i)| units.get(*i).map(|u| (s, &u.unit)))
        .map(|(s, u)| json!({"id": u.id, "title": u.title, "score": s, "text": u.text, "text_en": u.text_en}))
        .collect();
    Ok(json!({ "results": results }))
}

fn score(u: &Indexed, words: &[Token], refs: &References) -> u32 {
    let mut total = 0u32;
    for w in words {
        let in_title = u.title.iter().any(|t| matches(w, t));
        let in_body = u.body.iter().filter(|t| matches(w, t)).count().min(2);
        let in_body = u32::try_from(in_body).unwrap_or(2);
        total += u32::from(in_title) + 2 * in_body;
        if in_title || in_body > 0 {
            total += 1;
        }
    }
    let article = refs.article.is_some_and(|a| a == u.unit.article);
    if article {
        total += 4;
    }
    if refs.item.is_some_and(|i| u.unit.item == Some(i)) && (article || refs.article.is_none()) {
        total += 4;
    }
    total
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ids(query: &str) -> Vec<String> {
        let v = search(query, 5).unwrap_or_default();
        let results = v.get("results").and_then(Value::as_array).cloned().unwrap_or_default();
        results.iter().filter_map(|r| r.get("id").and_then(Value::as_str)).map(str::to_owned).collect()
    }

    #[test]
    fn corpus_has_46_units() {
        assert_eq!(units_count(), 46);
    }

    #[test]
    fn particles_are_stripped_only_when_two_syllables_remain() {
        assert_eq!(token("난간의").stem, "난간");
        assert_eq!(token("간격은").stem, "간격");
        assert_eq!(token("높이").stem, "높이");
        assert_eq!(token("Rails").stem, "rail");
        let words: Vec<_> = tokens("120센티미터 이상, 제13조").into_iter().map(|t| t.surface).collect();
        assert_eq!(words, ["120", "센티미터", "이상", "제", "13", "조"]);
    }

    #[test]
    fn references_are_found_and_blanked() {
        let r = references("제13조제2호 난간");
        assert_eq!((r.article, r.item, r.rest.trim()), (Some(13), Some(2), "난간"));
        let r = references("Article 60 item 1 posts");
        assert_eq!((r.article, r.item, r.rest.trim()), (Some(60), Some(1), "posts"));
        assert_eq!(references("13조").article, Some(13));
        assert_eq!(references("150 cm").article, None);
    }

    #[test]
    fn article_and_item_lead_the_ranking() {
        assert_eq!(ids("제13조제2호 중간 난간대").first().map(String::as_str), Some("제13조제2호"));
        assert_eq!(ids("제60조제1호 비계기둥 간격").first().map(String::as_str), Some("제60조제1호"));
        assert!(ids("난간의 간격").contains(&"제13조제2호".to_owned()));
        assert!(ids("zzzz").is_empty());
    }
}
