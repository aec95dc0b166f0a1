//! BERT's uncased tokenizer, as the model's `tokenizer.json` describes it: text cleaned,
//! Chinese characters spaced, lower-cased with accents stripped, split at whitespace and
//! punctuation, then each word cut into the longest pieces of the vocabulary (WordPiece,
//! `##` before a piece that continues a word), between `[CLS]` and `[SEP]`.
//!
//! Written here rather than taken from the `tokenizers` crate, which brings a C regex library
//! (`onig`) for the general case: a BERT tokenizer is this much.

use std::collections::HashMap;

use unicode_normalization::UnicodeNormalization;

/// A word longer than this (in characters) is one `[UNK]`, as BERT's tokenizer has it.
const MAX_WORD_CHARS: usize = 100;

/// The vocabulary and its special tokens.
#[derive(Debug)]
pub(crate) struct WordPiece {
    vocab: HashMap<String, u32>,
    unk: u32,
    cls: u32,
    sep: u32,
}

impl WordPiece {
    /// Reads the vocabulary of a `tokenizer.json` (its `model.vocab`, a WordPiece model).
    pub(crate) fn from_tokenizer_json(json: &str) -> Result<WordPiece, String> {
        let document: serde_json::Value =
            serde_json::from_str(json).map_err(|e| format!("not JSON: {e}"))?;
        let model = &document["model"];
        if model["type"] != "WordPiece" {
            return Err(format!("its model is not WordPiece but {}", model["type"]));
        }
        let vocab: HashMap<String, u32> = model["vocab"]
            .as_object()
            .ok_or("no model.vocab object")?
            .iter()
            .filter_map(|(piece, id)| Some((piece.clone(), u32::try_from(id.as_u64()?).ok()?)))
            .collect();
        let id = |token: &str| {
            vocab
                .get(token)
                .copied()
                .ok_or_else(|| format!("no {token} in the vocabulary"))
        };
        Ok(WordPiece {
            unk: id("[UNK]")?,
            cls: id("[CLS]")?,
            sep: id("[SEP]")?,
            vocab,
        })
    }

    /// The largest id the vocabulary gives.
    pub(crate) fn largest_id(&self) -> u32 {
        self.vocab.values().copied().max().unwrap_or(0)
    }

    /// The ids of `text`: `[CLS]`, at most `max - 2` pieces, `[SEP]`.
    pub(crate) fn encode(&self, text: &str, max: usize) -> Vec<u32> {
        let mut ids = vec![self.cls];
        let room = max.saturating_sub(2);
        for word in words(&normalise(text)) {
            if ids.len() > room {
                break;
            }
            self.pieces(&word, &mut ids);
        }
        ids.truncate(room + 1);
        ids.push(self.sep);
        ids
    }

    /// The longest-first pieces of `word`, or `[UNK]` when one part matches none.
    fn pieces(&self, word: &str, ids: &mut Vec<u32>) {
        let chars: Vec<char> = word.chars().collect();
        if chars.len() > MAX_WORD_CHARS {
            ids.push(self.unk);
            return;
        }
        let start_len = ids.len();
        let mut start = 0;
        let mut piece = String::new();
        while start < chars.len() {
            let mut end = chars.len();
            let mut found = None;
            while start < end {
                piece.clear();
                if start > 0 {
                    piece.push_str("##");
                }
                piece.extend(&chars[start..end]);
                if let Some(&id) = self.vocab.get(piece.as_str()) {
                    found = Some(id);
                    break;
                }
                end -= 1;
            }
            match found {
                Some(id) => {
                    ids.push(id);
                    start = end;
                }
                None => {
                    ids.truncate(start_len);
                    ids.push(self.unk);
                    return;
                }
            }
        }
    }
}

/// Cleaned (control characters dropped, whitespace made spaces), Chinese characters
/// spaced, lower-cased, accents stripped.
fn normalise(text: &str) -> String {
    let mut cleaned = String::with_capacity(text.len());
    for c in text.chars() {
        if c == '\0' || c == '\u{fffd}' || (c.is_control() && !c.is_whitespace()) {
            continue;
        }
        if c.is_whitespace() {
            cleaned.push(' ');
        } else if is_chinese(c) {
            cleaned.push(' ');
            cleaned.push(c);
            cleaned.push(' ');
        } else {
            cleaned.push(c);
        }
    }
    cleaned
        .to_lowercase()
        .nfd()
        .filter(|c| !is_mark(*c))
        .collect()
}

/// Whitespace-separated words, with each punctuation character a word of its own.
fn words(text: &str) -> Vec<String> {
    let mut words = Vec::new();
    for chunk in text.split_whitespace() {
        let mut word = String::new();
        for c in chunk.chars() {
            if is_punctuation(c) {
                if !word.is_empty() {
                    words.push(std::mem::take(&mut word));
                }
                words.push(c.to_string());
            } else {
                word.push(c);
            }
        }
        if !word.is_empty() {
            words.push(word);
        }
    }
    words
}

/// The CJK Unified Ideographs blocks, which BERT splits one character at a time.
fn is_chinese(c: char) -> bool {
    matches!(c as u32,
        0x4E00..=0x9FFF | 0x3400..=0x4DBF | 0x20000..=0x2A6DF | 0x2A700..=0x2B73F
        | 0x2B740..=0x2B81F | 0x2B820..=0x2CEAF | 0xF900..=0xFAFF | 0x2F800..=0x2FA1F)
}

/// A combining mark, what stripping accents removes after the NFD decomposition.
fn is_mark(c: char) -> bool {
    matches!(c as u32, 0x0300..=0x036F | 0x1AB0..=0x1AFF | 0x1DC0..=0x1DFF | 0x20D0..=0x20FF | 0xFE20..=0xFE2F)
}

/// BERT's punctuation: every non-alphanumeric ASCII symbol, and Unicode punctuation (the
/// Latin-1, general, CJK and full-width punctuation blocks stand for the `P*` categories).
fn is_punctuation(c: char) -> bool {
    if c.is_ascii() {
        return c.is_ascii_punctuation();
    }
    matches!(c as u32,
        0x00A1 | 0x00A7 | 0x00AB | 0x00B6 | 0x00B7 | 0x00BB | 0x00BF
        | 0x2010..=0x2027 | 0x2030..=0x205E | 0x3001..=0x3003 | 0x3008..=0x3011
        | 0x3014..=0x301F | 0xFF01..=0xFF0F | 0xFF1A..=0xFF20 | 0xFF3B..=0xFF40
        | 0xFF5B..=0xFF65)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn vocabulary() -> WordPiece {
        let pieces = [
            "[PAD]", "[UNK]", "[CLS]", "[SEP]", "git", "log", "who", "touched", "this", "file",
            "late", "##ly", "un", "##want", "##ed", ",", "'", "t", "don", "cafe", "!", "中",
        ];
        let vocab: serde_json::Map<String, serde_json::Value> = pieces
            .iter()
            .enumerate()
            .map(|(i, p)| (p.to_string(), serde_json::json!(i)))
            .collect();
        let json = serde_json::json!({"model": {"type": "WordPiece", "vocab": vocab}});
        WordPiece::from_tokenizer_json(&json.to_string()).unwrap()
    }

    fn pieces(wp: &WordPiece, text: &str) -> Vec<u32> {
        wp.encode(text, 64)
    }

    #[test]
    fn words_are_cut_into_the_longest_pieces_between_cls_and_sep() {
        let wp = vocabulary();
        // who touched this file lately → [CLS] who touched this file late ##ly [SEP]
        assert_eq!(
            pieces(&wp, "Who touched this file LATELY"),
            [2, 6, 7, 8, 9, 10, 11, 3]
        );
        assert_eq!(pieces(&wp, "unwanted"), [2, 12, 13, 14, 3]);
        // A word with a part no piece matches is one [UNK].
        assert_eq!(pieces(&wp, "git unknownword log"), [2, 4, 1, 5, 3]);
    }

    #[test]
    fn punctuation_splits_accents_go_and_chinese_is_spaced() {
        let wp = vocabulary();
        assert_eq!(pieces(&wp, "don't,git!"), [2, 18, 16, 17, 15, 4, 20, 3]);
        assert_eq!(pieces(&wp, "don’t"), [2, 18, 1, 17, 3]);
        assert_eq!(pieces(&wp, "Café"), [2, 19, 3]);
        assert_eq!(pieces(&wp, "git中log"), [2, 4, 21, 5, 3]);
        assert_eq!(pieces(&wp, "git\u{0}\tlog"), [2, 4, 5, 3]);
    }

    #[test]
    fn long_texts_are_cut_to_the_maximum() {
        let wp = vocabulary();
        let ids = wp.encode(&"git ".repeat(100), 8);
        assert_eq!(ids, [2, 4, 4, 4, 4, 4, 4, 3]);
    }

    #[test]
    fn a_tokenizer_json_of_another_model_is_refused() {
        let error = WordPiece::from_tokenizer_json(r#"{"model": {"type": "BPE"}}"#).unwrap_err();
        assert!(error.contains("BPE"), "{error}");
    }
}
