//! Training the small byte-level BPE tokenizer the project ships
//! (`data/tokenizer.json`), from synthetic agent text, so tests and the demo
//! need nothing downloaded.

use tokenizers::models::bpe::{BpeTrainerBuilder, BPE};
use tokenizers::models::TrainerWrapper;
use tokenizers::pre_tokenizers::byte_level::ByteLevel;
use tokenizers::{AddedToken, Tokenizer};

use super::{CHATML_SPECIALS, THINK_TOKENS};

/// A BPE trainer with the ChatML specials; without an initial alphabet it
/// learns only the characters it sees.
fn bpe_trainer(
    vocab_size: usize,
    min_frequency: u64,
    alphabet: Option<std::collections::HashSet<char>>,
) -> TrainerWrapper {
    let mut b = BpeTrainerBuilder::new()
        .vocab_size(vocab_size)
        .min_frequency(min_frequency)
        .show_progress(false)
        .special_tokens(
            CHATML_SPECIALS
                .iter()
                .map(|s| AddedToken::from(*s, true))
                .collect(),
        );
    if let Some(a) = alphabet {
        b = b.initial_alphabet(a);
    }
    b.build().into()
}

/// Train a byte-level BPE of `vocab_size` tokens on `texts`. Every byte is in
/// the alphabet, so any text encodes and decodes back exactly.
pub fn train_bpe(texts: Vec<String>, vocab_size: usize) -> Result<Tokenizer, String> {
    let byte_level = ByteLevel::new(false, true, true);
    let mut tokenizer = Tokenizer::new(BPE::default());
    tokenizer.with_pre_tokenizer(Some(byte_level));
    tokenizer.with_decoder(Some(byte_level));
    let mut trainer = bpe_trainer(
        vocab_size,
        2,
        Some(ByteLevel::alphabet().into_iter().collect()),
    );
    tokenizer
        .train(&mut trainer, texts.into_iter())
        .map_err(|e| e.to_string())?;
    tokenizer
        .add_tokens(THINK_TOKENS.iter().map(|s| AddedToken::from(*s, false)))
        .map_err(|e| e.to_string())?;
    Ok(tokenizer)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tokenize::hf::HfEncoder;
    use crate::tokenize::template::ChatTemplate;
    use crate::tokenize::validate::validate;
    use crate::tokenize::TextEncoder;
    use serde_json::json;

    #[test]
    fn a_trained_tokenizer_merges_and_round_trips() {
        let texts: Vec<String> = (0..200)
            .map(|i| format!("THOUGHT: read the file\n\n```bash\ncat -n src/mod_{i}.py\n```"))
            .collect();
        let tok = train_bpe(texts, 400).unwrap();
        let enc = HfEncoder::from_tokenizer(tok);
        let ids = enc.encode_text("cat -n src/mod_7.py").unwrap();
        assert!(
            ids.len() * 3 < "cat -n src/mod_7.py".len() * 2,
            "merges were learned: {ids:?}"
        );
        let text = "never seen: ✓ 你好 \r\n\t";
        assert_eq!(enc.decode(&enc.encode_text(text).unwrap()).unwrap(), text);
        assert!(enc.special_id("<|im_start|>").is_some());
    }

    #[test]
    fn a_tokenizer_that_cannot_represent_a_character_is_caught() {
        // A plain BPE with no byte alphabet: characters never seen in training are lost.
        let mut tok = Tokenizer::new(BPE::default());
        let mut trainer = bpe_trainer(100, 0, None);
        tok.train(
            &mut trainer,
            ["abc cab ls -la"; 20].iter().map(|s| s.to_string()),
        )
        .unwrap();
        let enc = HfEncoder::from_tokenizer(tok);
        let row = json!({"row_id": "r7", "mix": "credit", "train_meta": [{"t": 3}],
                         "messages": [{"role": "user", "content": "abc", "train": false},
                                      {"role": "assistant", "content": "abc é", "train": true}]});
        let report = validate(
            &enc,
            &crate::tokenize::template::Template::Toml(ChatTemplate::chatml()),
            &[row],
            32768,
            crate::tokenize::validate::Mode::Whole,
            &|| {},
        );
        assert_eq!(report.failures.len(), 1);
        assert_eq!(
            (report.failures[0].row_id.as_str(), report.failures[0].t),
            ("r7", Some(3))
        );
    }
}
