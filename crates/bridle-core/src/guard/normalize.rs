//! Normalization for matching: the views of a text the rules run on, each with a map back to
//! byte offsets of the input, and the invisible characters found (and removed) on the way.
//!
//! Every view starts from NFC ([`nfc`]: Hangul composed whatever form it arrived in, so NFD and
//! NFC inputs read alike); NFKC and confusable skeletons are applied in the canonical view only,
//! so the jamo and initial-consonant views keep their compatibility-jamo forms.
//!
//! Fast path: ASCII and Hangul characters are copied (ASCII lowercased); only other characters
//! pay for NFKC and confusable skeletons.

use std::borrow::Cow;

use unicode_normalization::char::canonical_combining_class;
use unicode_normalization::{IsNormalized, UnicodeNormalization, is_nfc_quick};

/// A normalized text with, per byte, the input range of the character that produced it.
#[derive(Debug, Default, Clone)]
pub(crate) struct View {
    pub text: String,
    /// `None`: identity (the view has exactly the input's bytes).
    origin: Option<Vec<(usize, usize)>>,
}

impl View {
    /// A view whose offsets are not mapped (callers place every finding themselves).
    pub fn detached(text: String) -> Self {
        Self { text, origin: None }
    }

    fn with_capacity(n: usize) -> Self {
        Self { text: String::with_capacity(n), origin: Some(Vec::with_capacity(n)) }
    }

    fn push(&mut self, c: char, from: usize, to: usize) {
        self.text.push(c);
        if let Some(o) = &mut self.origin {
            o.extend(std::iter::repeat_n((from, to), c.len_utf8()));
        }
    }

    /// The input byte range behind `start..end` of this view.
    pub fn source(&self, start: usize, end: usize) -> (usize, usize) {
        match &self.origin {
            None => (start, end),
            Some(o) => {
                let a = o.get(start).map_or(0, |p| p.0);
                let b = end.checked_sub(1).and_then(|i| o.get(i)).map_or(a, |p| p.1);
                (a, b.max(a))
            }
        }
    }
}

/// A character that composes with the one before it although its combining class is 0: Hangul
/// medial vowels and final consonants, and the few starters of Indic, Myanmar, Balinese and
/// historic scripts that do. A segment of [`nfc`] never starts on one.
fn composes_backward(c: char) -> bool {
    matches!(c, '\u{1161}'..='\u{11FF}' | '\u{0B00}'..='\u{0DFF}' | '\u{1000}'..='\u{109F}' | '\u{1B00}'..='\u{1B7F}' | '\u{11000}'..='\u{11FFF}')
}

/// Whether `input` is NFC: ASCII and Hangul syllables (the bulk of what the guard reads) are by a
/// range check, the rest by the quick-check tables.
fn already_nfc(input: &str) -> bool {
    input.is_ascii()
        || input.chars().all(|c| c.is_ascii() || ('\u{AC00}'..='\u{D7A3}').contains(&c))
        || is_nfc_quick(input.chars()) == IsNormalized::Yes
}

/// The input in NFC with, per byte of the result, the input range that produced it; `None` when
/// the input is NFC already (ASCII, composed Hangul and most text return at once).
///
/// The input is cut before every character that cannot compose with what precedes it, and each
/// piece is composed on its own, so offsets map back piece by piece (a decomposed syllable maps to
/// its two or three jamo).
pub(crate) fn nfc(input: &str) -> Option<(String, Vec<(usize, usize)>)> {
    if already_nfc(input) {
        return None;
    }
    let mut out = String::with_capacity(input.len());
    let mut origin = Vec::with_capacity(input.len());
    let mut start = 0usize;
    let flush = |from: usize, to: usize, out: &mut String, origin: &mut Vec<(usize, usize)>| {
        for c in input.get(from..to).unwrap_or_default().nfc() {
            out.push(c);
            origin.extend(std::iter::repeat_n((from, to), c.len_utf8()));
        }
    };
    for (at, c) in input.char_indices() {
        let boundary = at > 0 && canonical_combining_class(c) == 0 && !composes_backward(c);
        if boundary {
            flush(start, at, &mut out, &mut origin);
            start = at;
        }
    }
    flush(start, input.len(), &mut out, &mut origin);
    (out != input).then_some((out, origin))
}

/// The input in NFC, without offsets (for decoded text, whose findings are placed by the caller).
pub(crate) fn nfc_text(input: &str) -> Cow<'_, str> {
    if already_nfc(input) { Cow::Borrowed(input) } else { Cow::Owned(input.nfc().collect()) }
}

/// A conjoining jamo that NFC left alone (an initial consonant with no vowel after it, as in text
/// spelled in initials from a decomposing keyboard), as its compatibility jamo.
fn compat_jamo(c: char) -> Option<char> {
    const LEADS: [char; 19] = [
        'ㄱ', 'ㄲ', 'ㄴ', 'ㄷ', 'ㄸ', 'ㄹ', 'ㅁ', 'ㅂ', 'ㅃ', 'ㅅ', 'ㅆ', 'ㅇ', 'ㅈ', 'ㅉ', 'ㅊ', 'ㅋ', 'ㅌ', 'ㅍ',
        'ㅎ',
    ];
    let cp = u32::from(c);
    match c {
        '\u{1100}'..='\u{1112}' => LEADS.get(usize::try_from(cp - 0x1100).ok()?).copied(),
        '\u{1161}'..='\u{1175}' => char::from_u32(0x314F + (cp - 0x1161)),
        _ => None,
    }
}

/// Kinds of invisible characters.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Invisible {
    ZeroWidth,
    Bidi,
    VariationSelector,
    Tag,
}

/// What normalization found besides the views.
#[derive(Debug, Default)]
pub(crate) struct Findings {
    /// Input byte ranges of invisible characters (merged runs) that are not part of an emoji.
    pub invisible: Vec<(usize, usize)>,
    /// Text smuggled in tag characters or variation selectors, decoded to ASCII/bytes.
    pub smuggled: String,
    /// Combining marks stacked three or more deep on one base character.
    pub mark_floods: Vec<(usize, usize)>,
    /// ANSI/terminal escape sequences.
    pub escapes: Vec<(usize, usize)>,
    /// Compatibility jamo seen (Korean spelled letter by letter).
    pub jamo: usize,
}

pub(crate) fn invisible_kind(c: char) -> Option<Invisible> {
    match c {
        '\u{200B}'..='\u{200D}' | '\u{2060}'..='\u{2064}' | '\u{FEFF}' | '\u{180E}' | '\u{00AD}' => {
            Some(Invisible::ZeroWidth)
        }
        '\u{200E}' | '\u{200F}' | '\u{061C}' | '\u{202A}'..='\u{202E}' | '\u{2066}'..='\u{2069}' => {
            Some(Invisible::Bidi)
        }
        '\u{FE00}'..='\u{FE0F}' | '\u{E0100}'..='\u{E01EF}' => Some(Invisible::VariationSelector),
        '\u{E0000}'..='\u{E007F}' => Some(Invisible::Tag),
        _ => None,
    }
}

fn is_mark(c: char) -> bool {
    matches!(c, '\u{0300}'..='\u{036F}' | '\u{1AB0}'..='\u{1AFF}' | '\u{1DC0}'..='\u{1DFF}' | '\u{20D0}'..='\u{20FF}' | '\u{FE20}'..='\u{FE2F}')
}

fn is_pictographic(c: char) -> bool {
    matches!(c, '\u{1F000}'..='\u{1FAFF}' | '\u{2600}'..='\u{27BF}' | '\u{2B00}'..='\u{2BFF}' | '\u{2190}'..='\u{21FF}' | '\u{2300}'..='\u{23FF}' | '\u{00A9}' | '\u{00AE}' | '\u{203C}' | '\u{2049}' | '\u{2122}' | '\u{2139}' | '\u{3030}' | '\u{303D}' | '\u{3297}' | '\u{3299}' | '#' | '*' | '0'..='9')
}

/// Hangul syllables and compatibility jamo are kept as they are.
pub(crate) fn is_hangul(c: char) -> bool {
    matches!(c, '\u{AC00}'..='\u{D7A3}' | '\u{3131}'..='\u{318E}')
}

/// Builds the canonical view: lowercase, NFKC and confusable skeletons outside ASCII and
/// Hangul, invisible characters and combining marks removed (and reported).
pub(crate) fn canonical(input: &str) -> (View, Findings) {
    let mut findings = Findings::default();
    // Fast path: ASCII and Hangul keep their byte lengths, so the view maps by identity.
    let mut plain = true;
    let chars = if input.is_ascii() { "" } else { input };
    if input.bytes().any(|b| b == 0x1b) {
        plain = false;
    }
    for c in chars.chars() {
        if c == '\u{1b}' || !(c.is_ascii() || is_hangul(c)) {
            plain = false;
            break;
        }
        findings.jamo += usize::from(('\u{3131}'..='\u{318E}').contains(&c));
    }
    if plain {
        return (View { text: input.to_ascii_lowercase(), origin: None }, findings);
    }
    findings.jamo = 0;
    let mut view = View::with_capacity(input.len());
    let mut prev: Option<char> = None;
    let mut marks = 0usize;
    let mut mark_start = 0usize;
    let mut chars = input.char_indices().peekable();
    while let Some((at, c)) = chars.next() {
        let end = at + c.len_utf8();
        let next = chars.peek().map(|p| p.1);
        if c.is_ascii() {
            if c == '\u{1b}' {
                findings.escapes.push((at, end));
                continue;
            }
            view.push(c.to_ascii_lowercase(), at, end);
            marks = 0;
            prev = Some(c);
            continue;
        }
        if let Some(kind) = invisible_kind(c) {
            let emoji_glue = match kind {
                Invisible::ZeroWidth => {
                    c == '\u{200D}' && prev.is_some_and(is_pictographic) && next.is_some_and(is_pictographic)
                }
                Invisible::VariationSelector => {
                    matches!(c, '\u{FE0E}' | '\u{FE0F}') && prev.is_some_and(is_pictographic)
                }
                Invisible::Tag => {
                    prev.is_some_and(|p| p == '\u{1F3F4}' || invisible_kind(p) == Some(Invisible::Tag))
                        && is_flag_tag(input, at)
                }
                Invisible::Bidi => false,
            };
            if !emoji_glue {
                push_range(&mut findings.invisible, at, end);
                smuggle(&mut findings.smuggled, c);
            }
            continue;
        }
        if is_mark(c) {
            if marks == 0 {
                mark_start = at;
            }
            marks += 1;
            if marks >= 3 {
                push_range(&mut findings.mark_floods, mark_start, end);
            }
            continue;
        }
        marks = 0;
        prev = Some(c);
        if is_hangul(c) {
            findings.jamo += usize::from(('\u{3131}'..='\u{318E}').contains(&c));
            view.push(c, at, end);
            continue;
        }
        if let Some(j) = compat_jamo(c) {
            findings.jamo += 1;
            view.push(j, at, end);
            continue;
        }
        fold(c, |f| view.push(f, at, end));
    }
    (view, findings)
}

/// One character outside ASCII and Hangul as the canonical view spells it: NFKC, accents dropped,
/// confusable skeleton, lowercase.
fn fold(c: char, mut push: impl FnMut(char)) {
    for n in std::iter::once(c).nfkc() {
        if n.is_ascii() {
            push(n.to_ascii_lowercase());
        } else if is_mark(n) {
            // dropped: accents do not change the words the rules look for
        } else {
            let mut buf = [0u8; 4];
            for s in unicode_security::confusable_detection::skeleton(n.encode_utf8(&mut buf)) {
                if !is_mark(s) {
                    s.to_lowercase().for_each(&mut push);
                }
            }
        }
    }
}

/// A rule pattern or keyword spelled as the canonical view spells text: characters outside ASCII
/// and Hangul are folded (so rules are written in ordinary spelling: "é", "指示", "ß"); ASCII,
/// and with it every regex operator, is kept as written.
pub(crate) fn fold_pattern(pattern: &str) -> String {
    let mut out = String::with_capacity(pattern.len());
    for c in pattern.chars() {
        if c.is_ascii() || is_hangul(c) {
            out.push(c);
        } else {
            fold(c, |f| out.push(f));
        }
    }
    out
}

/// Whether the tag run at `at` is a subdivision flag (lowercase letters/digits then CANCEL TAG).
fn is_flag_tag(input: &str, at: usize) -> bool {
    let rest = input.get(at..).unwrap_or_default();
    let mut n = 0;
    for c in rest.chars() {
        match c {
            '\u{E007F}' => return (2..=7).contains(&n),
            '\u{E0030}'..='\u{E0039}' | '\u{E0061}'..='\u{E007A}' => n += 1,
            _ => return false,
        }
    }
    false
}

fn push_range(ranges: &mut Vec<(usize, usize)>, start: usize, end: usize) {
    match ranges.last_mut() {
        Some(last) if last.1 >= start => last.1 = end.max(last.1),
        _ => ranges.push((start, end)),
    }
}

/// Tag characters carry ASCII; variation selectors carry bytes (VS1–16 → 0–15, VS17–256 → 16–255).
fn smuggle(out: &mut String, c: char) {
    let cp = u32::from(c);
    let byte = match c {
        '\u{E0020}'..='\u{E007E}' => cp.checked_sub(0xE0000),
        '\u{FE00}'..='\u{FE0F}' => cp.checked_sub(0xFE00),
        '\u{E0100}'..='\u{E01EF}' => cp.checked_sub(0xE0100).map(|v| v + 16),
        _ => None,
    };
    if let Some(ch) = byte.and_then(char::from_u32).filter(|ch| ch.is_ascii_graphic() || *ch == ' ') {
        out.push(ch);
    }
}

const LEET: &[(char, char)] = &[
    ('0', 'o'),
    ('1', 'i'),
    ('3', 'e'),
    ('4', 'a'),
    ('5', 's'),
    ('7', 't'),
    ('8', 'b'),
    ('9', 'g'),
    ('@', 'a'),
    ('$', 's'),
    ('!', 'i'),
    ('|', 'l'),
    ('+', 't'),
];

fn leet_of(c: char) -> Option<char> {
    if c.is_ascii_alphabetic() || !c.is_ascii() {
        return None;
    }
    LEET.iter().find(|(k, _)| *k == c).map(|(_, v)| *v)
}

/// The canonical view with leetspeak digits and symbols read as letters where they sit next to
/// letters. `None` when nothing changes.
pub(crate) fn leet(view: &View) -> Option<View> {
    // 1 = leet symbol, 2 = ASCII letter: a pair summing to 3 is a symbol next to a letter.
    let class = |b: &u8| match b {
        b'a'..=b'z' | b'A'..=b'Z' => 2u8,
        b'0' | b'1' | b'3' | b'4' | b'5' | b'7' | b'8' | b'9' | b'@' | b'$' | b'!' | b'|' | b'+' => 1,
        _ => 0,
    };
    if !view.text.bytes().any(|b| class(&b) == 1) {
        return None;
    }
    let near_letter = view.text.as_bytes().windows(2).any(|w| match w {
        [a, b] => class(a) + class(b) == 3,
        _ => false,
    });
    if !near_letter {
        return None;
    }
    let chars: Vec<(usize, char)> = view.text.char_indices().collect();
    let letter = |i: Option<&(usize, char)>| i.is_some_and(|(_, c)| c.is_ascii_alphabetic());
    let mut changed = false;
    let mut out = View::with_capacity(view.text.len());
    for (i, (at, c)) in chars.iter().enumerate() {
        let (from, to) = view.source(*at, at + c.len_utf8());
        let mapped = leet_of(*c).filter(|_| {
            let before = i.checked_sub(1).and_then(|j| chars.get(j));
            let after = chars.get(i + 1);
            letter(before) || letter(after)
        });
        if let Some(m) = mapped {
            changed = true;
            out.push(m, from, to);
        } else {
            out.push(*c, from, to);
        }
    }
    changed.then_some(out)
}

/// Whether leetspeak replaced a noticeable share of the letters (three or more, and a tenth).
pub(crate) fn leet_heavy(before: &str, after: &str) -> bool {
    let changed = before.bytes().zip(after.bytes()).filter(|(a, b)| a != b).count();
    let letters = after.bytes().filter(u8::is_ascii_alphabetic).count();
    changed >= 3 && changed * 10 >= letters
}

/// Letters spaced or interleaved with a separator ("i g n o r e", "이@전@지@시"): when at least
/// six single-character tokens make up most of the text, single separators are dropped and longer
/// runs become one space. `None` when the text does not look spaced.
pub(crate) fn despaced(view: &View) -> Option<View> {
    let is_sep = |c: char| c.is_whitespace() || (c.is_ascii_punctuation() && c != '\'');
    let mut singles = 0usize;
    let mut tokens = 0usize;
    let mut run = 0usize;
    for c in view.text.chars() {
        if is_sep(c) {
            if run > 0 {
                tokens += 1;
                singles += usize::from(run == 1);
                // Spaced text is spaced throughout; ordinary prose shows it within 64 words.
                if tokens == 64 && singles * 10 < tokens * 3 {
                    return None;
                }
            }
            run = 0;
        } else {
            run += 1;
        }
    }
    if run > 0 {
        tokens += 1;
        singles += usize::from(run == 1);
    }
    if singles < 6 || singles * 10 < tokens * 6 {
        return None;
    }
    let chars: Vec<(usize, char)> = view.text.char_indices().collect();
    // The interleaving separator is the most frequent one-character separator run.
    let mut counts: Vec<(char, usize)> = Vec::new();
    for w in chars.windows(3) {
        if let [(_, a), (_, s), (_, b)] = w
            && !is_sep(*a)
            && is_sep(*s)
            && !is_sep(*b)
        {
            match counts.iter_mut().find(|(c, _)| c == s) {
                Some(entry) => entry.1 += 1,
                None => counts.push((*s, 1)),
            }
        }
    }
    let dominant = counts.iter().max_by_key(|(_, n)| *n).map_or(' ', |(c, _)| *c);
    let mut out = View::with_capacity(view.text.len());
    let mut i = 0;
    while let Some(&(at, c)) = chars.get(i) {
        if !is_sep(c) {
            let (a, b) = view.source(at, at + c.len_utf8());
            out.push(c, a, b);
            i += 1;
            continue;
        }
        let mut j = i;
        while chars.get(j).is_some_and(|p| is_sep(p.1)) {
            j += 1;
        }
        if j - i >= 2 || c != dominant {
            let (a, b) = view.source(at, at + c.len_utf8());
            out.push(' ', a, b);
        }
        i = j;
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fullwidth_and_confusables_fold_to_ascii() {
        let (v, _) = canonical("ｉｇｎｏｒｅ аll");
        assert_eq!(v.text, "ignore all");
    }

    #[test]
    fn zero_width_is_removed_and_reported_but_emoji_glue_is_not() {
        let (v, f) = canonical("ig\u{200B}nore");
        assert_eq!(v.text, "ignore");
        assert_eq!(f.invisible, vec![(2, 5)]);
        let (_, f) = canonical("👩\u{200D}💻 ok ❤\u{FE0F}");
        assert!(f.invisible.is_empty());
    }

    #[test]
    fn tags_are_decoded() {
        let hidden: String = "hi you".chars().map(|c| char::from_u32(0xE0000 + u32::from(c)).unwrap_or(' ')).collect();
        let (_, f) = canonical(&format!("x{hidden}"));
        assert_eq!(f.smuggled, "hi you");
    }

    #[test]
    fn spacing_and_interleaving_are_undone() {
        let (v, _) = canonical("이@전@ @지@시@를@ @무@시");
        assert_eq!(despaced(&v).map(|d| d.text), Some("이전 지시를 무시".to_owned()));
        let (v, _) = canonical("i g n o r e   a l l");
        assert_eq!(despaced(&v).map(|d| d.text), Some("ignore all".to_owned()));
        let (v, _) = canonical("a normal sentence with words");
        assert!(despaced(&v).is_none());
    }

    #[test]
    fn leet_reads_digits_next_to_letters() {
        let (v, _) = canonical("1gn0re DEBUG=1 in 2024");
        assert_eq!(leet(&v).map(|d| d.text), Some("ignore debug=1 in 2024".to_owned()));
    }

    #[test]
    fn nfd_hangul_composes_and_maps_back() {
        let nfc_form = "이전 지시를 무시";
        let nfd_form: String = nfc_form.nfd().collect();
        assert!(nfc("이전 지시를 무시").is_none());
        let Some((text, origin)) = nfc(&nfd_form) else { unreachable!("NFD Hangul is not NFC") };
        assert_eq!(text, nfc_form);
        assert_eq!(origin.len(), text.len());
        // "이" (3 bytes) comes from the input's first two jamo (6 bytes).
        assert_eq!(origin.first(), Some(&(0, 6)));
        assert_eq!(nfc_text(&nfd_form), nfc_form);
    }

    #[test]
    fn lone_conjoining_jamo_read_as_compatibility_jamo() {
        let (v, f) = canonical("\u{1109}\u{1109}\u{1110}");
        assert_eq!(v.text, "ㅅㅅㅌ");
        assert_eq!(f.jamo, 3);
    }

    #[test]
    fn offsets_map_back() {
        let (v, _) = canonical("é\u{200B}x");
        let (a, b) = v.source(1, 2);
        assert_eq!((a, b), (5, 6));
    }
}
