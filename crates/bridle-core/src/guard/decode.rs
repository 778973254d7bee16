//! Decoding of encoded payloads for rescanning: Base64 (standard and URL-safe), Base32, Base16/hex,
//! Ascii85, URL percent-encoding, quoted-printable and ROT13. Every decoder is linear and the
//! caller bounds depth, count and size.

use base64::Engine as _;
use base64::engine::general_purpose::{GeneralPurpose, GeneralPurposeConfig};
use base64::engine::{DecodePaddingMode, general_purpose};

const LENIENT: GeneralPurposeConfig = GeneralPurposeConfig::new()
    .with_decode_padding_mode(DecodePaddingMode::Indifferent)
    .with_decode_allow_trailing_bits(true);
const STANDARD: GeneralPurpose = GeneralPurpose::new(&base64::alphabet::STANDARD, LENIENT);
const URL_SAFE: GeneralPurpose = GeneralPurpose::new(&base64::alphabet::URL_SAFE, LENIENT);

/// Which decoder produced a text.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Encoding {
    Base64,
    Base32,
    Hex,
    Ascii85,
}

/// Bytes that read as text: valid UTF-8, mostly printable, with some letters.
pub(crate) fn plausible(bytes: &[u8]) -> Option<String> {
    let text = std::str::from_utf8(bytes).ok()?;
    let total = text.chars().count();
    if total < 3 {
        return None;
    }
    let printable = text.chars().filter(|c| !c.is_control() || c.is_whitespace()).count();
    let letters = text.chars().filter(|c| c.is_alphabetic()).count();
    (printable * 100 >= total * 95 && letters * 10 >= total * 3).then(|| text.to_owned())
}

pub(crate) fn base64(token: &str) -> Option<Vec<u8>> {
    let t = token.trim_end_matches('=');
    if t.len() < 6 || t.len() % 4 == 1 {
        return None;
    }
    if t.contains(['-', '_']) { URL_SAFE.decode(t).ok() } else { STANDARD.decode(t).ok() }
        .or_else(|| general_purpose::STANDARD_NO_PAD.decode(t).ok())
}

pub(crate) fn base32(token: &str) -> Option<Vec<u8>> {
    let t = token.trim_end_matches('=');
    let mut out = Vec::with_capacity(t.len() * 5 / 8);
    let mut acc: u64 = 0;
    let mut bits = 0u32;
    for b in t.bytes() {
        let v = match b {
            b'A'..=b'Z' => b - b'A',
            b'a'..=b'z' => b - b'a',
            b'2'..=b'7' => b - b'2' + 26,
            _ => return None,
        };
        acc = (acc << 5) | u64::from(v);
        bits += 5;
        if bits >= 8 {
            bits -= 8;
            out.push(u8::try_from((acc >> bits) & 0xFF).ok()?);
        }
    }
    Some(out)
}

pub(crate) fn hex(token: &str) -> Option<Vec<u8>> {
    let digits: Vec<u8> = token.bytes().filter(|b| b.is_ascii_hexdigit()).collect();
    if !digits.len().is_multiple_of(2) {
        return None;
    }
    digits.chunks(2).map(|p| std::str::from_utf8(p).ok().and_then(|s| u8::from_str_radix(s, 16).ok())).collect()
}

/// Ascii85 without delimiters (`<~ ~>` stripped if present); `z` stands for four zero bytes.
pub(crate) fn ascii85(token: &str) -> Option<Vec<u8>> {
    let t = token.trim().trim_start_matches("<~").trim_end_matches("~>");
    let mut out = Vec::with_capacity(t.len() * 4 / 5);
    let mut group = [0u32; 5];
    let mut n = 0usize;
    for b in t.bytes() {
        if b.is_ascii_whitespace() {
            continue;
        }
        if b == b'z' && n == 0 {
            out.extend_from_slice(&[0, 0, 0, 0]);
            continue;
        }
        if !(b'!'..=b'u').contains(&b) {
            return None;
        }
        *group.get_mut(n)? = u32::from(b - b'!');
        n += 1;
        if n == 5 {
            out.extend_from_slice(&fold85(&group)?.to_be_bytes());
            n = 0;
        }
    }
    if n == 1 {
        return None;
    }
    if n > 1 {
        for slot in group.iter_mut().skip(n) {
            *slot = 84;
        }
        let bytes = fold85(&group)?.to_be_bytes();
        out.extend_from_slice(bytes.get(..n - 1)?);
    }
    Some(out)
}

fn fold85(group: &[u32; 5]) -> Option<u32> {
    let v = group.iter().try_fold(0u64, |acc, d| acc.checked_mul(85)?.checked_add(u64::from(*d)))?;
    u32::try_from(v).ok()
}

/// `%XX` sequences decoded (and `+` as space); `None` with fewer than three escapes.
pub(crate) fn percent(text: &str) -> Option<Vec<u8>> {
    escaped(text, b'%', false)
}

/// Quoted-printable: `=XX` escapes and soft line breaks; `None` with fewer than three escapes.
pub(crate) fn quoted_printable(text: &str) -> Option<Vec<u8>> {
    escaped(text, b'=', true)
}

fn escaped(text: &str, mark: u8, soft_breaks: bool) -> Option<Vec<u8>> {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut escapes = 0;
    let mut i = 0;
    while let Some(&b) = bytes.get(i) {
        if b == mark {
            if soft_breaks && bytes.get(i + 1) == Some(&b'\n') {
                i += 2;
                continue;
            }
            if soft_breaks && bytes.get(i + 1) == Some(&b'\r') && bytes.get(i + 2) == Some(&b'\n') {
                i += 3;
                continue;
            }
            let pair = bytes.get(i + 1..i + 3).and_then(|p| std::str::from_utf8(p).ok());
            if let Some(v) = pair.and_then(|p| u8::from_str_radix(p, 16).ok()) {
                out.push(v);
                escapes += 1;
                i += 3;
                continue;
            }
        }
        out.push(if b == b'+' && !soft_breaks { b' ' } else { b });
        i += 1;
    }
    (escapes >= 3).then_some(out)
}

/// ROT13 of the ASCII letters.
pub(crate) fn rot13(text: &str) -> String {
    text.chars()
        .map(|c| match c {
            'a'..='m' | 'A'..='M' => char::from(c as u8 + 13),
            'n'..='z' | 'N'..='Z' => char::from(c as u8 - 13),
            _ => c,
        })
        .collect()
}

/// Tries the token decoders on a token; the first plausible text wins.
pub(crate) fn token(token: &str) -> Option<(Encoding, String)> {
    let t = token.trim();
    let is_hex = t.len() >= 6 && t.bytes().all(|b| b.is_ascii_hexdigit() || b == b' ' || b == b':');
    if is_hex && let Some(s) = hex(t).as_deref().and_then(plausible) {
        return Some((Encoding::Hex, s));
    }
    let b32 =
        t.len() >= 8 && t.trim_end_matches('=').bytes().all(|b| b.is_ascii_uppercase() || (b'2'..=b'7').contains(&b));
    if b32 && let Some(s) = base32(t).as_deref().and_then(plausible) {
        return Some((Encoding::Base32, s));
    }
    let b64 = t.bytes().all(|b| b.is_ascii_alphanumeric() || matches!(b, b'+' | b'/' | b'=' | b'-' | b'_'));
    if b64 && let Some(s) = base64(t).as_deref().and_then(plausible) {
        return Some((Encoding::Base64, s));
    }
    if t.len() >= 4
        && !t.contains(char::is_whitespace)
        && let Some(s) = ascii85(t).as_deref().and_then(plausible)
    {
        return Some((Encoding::Ascii85, s));
    }
    None
}

/// One uuencoded line: a length character, then four characters per three bytes.
pub(crate) fn uu_line(line: &str) -> Option<Vec<u8>> {
    let bytes = line.trim_end().as_bytes();
    let (&first, rest) = bytes.split_first()?;
    if !(b' '..=b'`').contains(&first) || rest.iter().any(|b| !(b' '..=b'`').contains(b)) {
        return None;
    }
    let len = usize::from((first - b' ') & 63);
    if len == 0 || rest.len() < len.div_ceil(3) * 4 - 3 {
        return None;
    }
    let mut out = Vec::with_capacity(len + 2);
    for group in rest.chunks(4) {
        let v: Vec<u32> = group.iter().map(|b| u32::from((b - b' ') & 63)).collect();
        let acc = v.iter().chain(std::iter::repeat(&0)).take(4).fold(0u32, |a, d| (a << 6) | d);
        out.extend_from_slice(acc.to_be_bytes().get(1..)?);
    }
    out.truncate(len);
    Some(out)
}

/// Atbash (a↔z, b↔y, …) of the ASCII letters.
pub(crate) fn atbash(text: &str) -> String {
    text.chars()
        .map(|c| match c {
            'a'..='z' => char::from(b'z' - (c as u8 - b'a')),
            'A'..='Z' => char::from(b'Z' - (c as u8 - b'A')),
            _ => c,
        })
        .collect()
}

/// Frequent English letter pairs (a fact about English, used as a cheap language signal).
const BIGRAMS: &[&str] = &[
    "th", "he", "in", "er", "an", "re", "on", "at", "en", "nd", "ti", "es", "or", "te", "of", "ed", "is", "it", "al",
    "ar", "st", "to", "nt", "ng", "se", "ha", "as", "ou", "io", "le", "ve", "co", "me", "de", "hi", "ri", "ro", "ic",
    "ne", "ea", "ra", "ce", "li", "ch", "ll", "be", "ma", "si", "om", "ur", "ca", "el", "ta", "la", "ns", "ge", "ly",
    "ei", "ai", "ke", "ck", "ut", "ot", "ow", "ee", "oo",
];

/// Share of letter pairs in `text` that are frequent in English.
pub(crate) fn englishness(text: &str) -> f64 {
    let lower = text.to_ascii_lowercase();
    let mut pairs = 0u32;
    let mut common = 0u32;
    for w in lower.split(|c: char| !c.is_ascii_alphabetic()) {
        for i in 0..w.len().saturating_sub(1) {
            pairs += 1;
            if w.get(i..i + 2).is_some_and(|p| BIGRAMS.contains(&p)) {
                common += 1;
            }
        }
    }
    if pairs == 0 { 0.0 } else { f64::from(common) / f64::from(pairs) }
}

/// Short letter-only text that reads as English once shifted by ROT13 or Atbash.
pub(crate) fn shifted_letters(text: &str) -> bool {
    let t = text.trim();
    let letters = t.chars().filter(char::is_ascii_alphabetic).count();
    if letters < 4 || !t.chars().all(|c| c.is_ascii_alphabetic() || c == ' ' || c == '\'' || c == '!' || c == '.') {
        return false;
    }
    let plain = englishness(t);
    let best = englishness(&rot13(t)).max(englishness(&atbash(t)));
    best >= 0.3 && best >= plain + 0.2
}

/// A token whose letters come from three or more scripts at once (Base2048 and similar
/// encodings draw on many alphabets; words in any language draw on one or two).
pub(crate) fn script_soup(text: &str) -> bool {
    for token in text.split_whitespace() {
        let mut blocks: Vec<u32> = Vec::new();
        let mut letters = 0;
        for c in token.chars().filter(|c| c.is_alphabetic()) {
            letters += 1;
            // Coarse script buckets: Latin-1/Latin Extended, Greek/Cyrillic/Armenian, Hebrew/Arabic,
            // Indic, Thai/Lao/Tibetan/Myanmar, and so on; ASCII letters are one bucket. Japanese
            // and Chinese writing is one bucket with everything it mixes in: kana, ideographs of
            // every block, the iteration and zero marks (々, 〇) and full-width letters (ＡＩ).
            let cp = u32::from(c);
            let bucket = match cp {
                0..=0x24F | 0x1E00..=0x1EFF => 0,
                0x1100..=0x11FF | 0x3130..=0x318F | 0xA960..=0xA97F | 0xAC00..=0xD7FF => 1,
                0x2E80..=0x2FDF
                | 0x3000..=0x30FF
                | 0x31C0..=0x31FF
                | 0x3400..=0x4DBF
                | 0x4E00..=0x9FFF
                | 0xF900..=0xFAFF
                | 0xFF00..=0xFFEF
                | 0x2_0000..=0x3_FFFF => 2,
                _ => cp >> 7,
            };
            if !blocks.contains(&bucket) {
                blocks.push(bucket);
            }
        }
        if letters >= 3 && blocks.len() >= 3 {
            return true;
        }
    }
    false
}

/// Emoji in a row that read as an encoding (with three kinds among them).
const EMOJI_RUN: usize = 4;

const NATO: &[&str] = &[
    "alfa", "alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "hotel", "india", "juliett", "juliet",
    "kilo", "lima", "mike", "november", "oscar", "papa", "quebec", "romeo", "sierra", "tango", "uniform", "victor",
    "whiskey", "xray", "x-ray", "yankee", "zulu",
];

/// Text written in a letter-by-letter code rather than words: Braille cells, Morse, the NATO
/// alphabet, runs of emoji (Ecoji-style). Returns the rule name and weight of the strongest.
///
/// An emoji run counts when it has [`EMOJI_RUN`] emoji of at least three kinds: an encoding
/// draws on hundreds of emoji, while a star rating (★★★★☆) or a row of ✅ repeats one or two.
pub(crate) fn letter_codes(text: &str) -> Option<(&'static str, f64)> {
    // Braille cells and most emoji start with these UTF-8 lead bytes; Hangul and CJK do not.
    if text.bytes().any(|b| b == 0xE2 || b == 0xF0) {
        let mut braille = 0;
        // The current run of emoji: its length and its first three kinds.
        let mut run = (0usize, ['\0'; 3]);
        for c in text.chars() {
            if ('\u{2800}'..='\u{28FF}').contains(&c) {
                braille += 1;
                if braille >= 3 {
                    return Some(("braille_text", 0.6));
                }
            }
            if ('\u{1F300}'..='\u{1FAFF}').contains(&c) || ('\u{2600}'..='\u{27BF}').contains(&c) {
                run.0 += 1;
                if let Some(free) = run.1.iter_mut().find(|k| **k == '\0' || **k == c)
                    && *free == '\0'
                {
                    *free = c;
                }
                if run.0 >= EMOJI_RUN && run.1.iter().all(|k| *k != '\0') {
                    return Some(("emoji_run", 0.3));
                }
            } else if !matches!(c, '\u{FE0F}' | '\u{200D}') {
                run = (0, ['\0'; 3]);
            }
        }
    }
    if !text.contains(['-', 'a', 'e', 'i', 'o', 'u', 'A', 'E', 'I', 'O', 'U']) {
        return None;
    }
    let (mut morse, mut slashes, mut count) = (0usize, 0usize, 0usize);
    let mut run = 0;
    let mut best = 0;
    for t in text.split_whitespace() {
        count += 1;
        if t.len() <= 8 && t.bytes().all(|b| matches!(b, b'.' | b'-')) && t.contains('-') {
            morse += 1;
        }
        slashes += usize::from(t == "/");
        let word = t.trim_matches(|c: char| !c.is_ascii_alphabetic() && c != '-');
        if (4..=8).contains(&word.len()) && NATO.iter().any(|n| n.eq_ignore_ascii_case(word)) {
            run += 1;
            best = best.max(run);
        } else {
            run = 0;
        }
    }
    if morse >= 3 && (morse + slashes) * 10 >= count * 7 {
        return Some(("morse_text", 0.6));
    }
    if best >= 3 {
        return Some(("nato_spelling", 0.6));
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decoders_round_trip_known_values() {
        assert_eq!(base64("aWdub3JlIGFsbA==").as_deref(), Some(&b"ignore all"[..]));
        assert_eq!(base32("NFTW433SMU======").as_deref(), Some(&b"ignore"[..]));
        assert_eq!(hex("69676e6f7265").as_deref(), Some(&b"ignore"[..]));
        assert_eq!(ascii85("BOu!rDZ").as_deref(), Some(&b"hello"[..]));
        assert_eq!(percent("%69%67%6E%6Fre").as_deref(), Some(&b"ignore"[..]));
        assert_eq!(quoted_printable("a=3Db=3Dc=\n=41").as_deref(), Some(&b"a=b=cA"[..]));
        assert_eq!(rot13("vtaber"), "ignore");
    }

    #[test]
    fn uu_and_shifted_letters() {
        assert_eq!(uu_line("#0V%T").as_deref(), Some(&b"Cat"[..]));
        assert!(shifted_letters("Cnapnxr Snpr"));
        assert!(shifted_letters("R orpv yrt yfggh zmw R xzmmlg orv"));
        assert!(!shifted_letters("Kubernetes"));
        assert!(!shifted_letters("Please restart the service"));
    }

    #[test]
    fn letter_codes_are_recognised() {
        assert_eq!(letter_codes("⠠⠁⠃⠊⠙").map(|r| r.0), Some("braille_text"));
        assert_eq!(letter_codes(".. --. -. --- .-. . / .- .-.. .-..").map(|r| r.0), Some("morse_text"));
        assert_eq!(letter_codes("Kilo Alfa Tango Whiskey").map(|r| r.0), Some("nato_spelling"));
        assert!(letter_codes("Echo the message to the hotel in India").is_none());
        // Ecoji-style runs draw on many emoji; a rating or a row of one emoji is no code.
        assert_eq!(letter_codes("🏯🔩🚗🌷🍉🏞").map(|r| r.0), Some("emoji_run"));
        assert!(letter_codes("Great autofill ★★★★☆ would buy again").is_none());
        assert!(letter_codes("all green ✅✅✅✅✅ ship it 🚀🚀🚀🚀").is_none());
    }

    #[test]
    fn japanese_and_chinese_writing_is_one_script() {
        // Kanji, kana, 々 and 〇 (CJK symbols), full-width letters and ASCII in one token.
        assert!(!script_soup("ログの中に「〇〇を実行してください」とAIに書かれていた"));
        assert!(!script_soup("様々なＡＩエージェントをAPI経由で使う"));
        assert!(!script_soup("我们用AI助手处理〇号工单"));
        // Letters of three unrelated scripts in one token are still a soup.
        assert!(script_soup("ꓲɡñоrеաξ"));
    }

    #[test]
    fn garbage_is_not_plausible() {
        assert!(plausible(&[0xff, 0x00, 0x13, 0x88]).is_none());
        assert!(token("internationalization").is_none());
    }
}
