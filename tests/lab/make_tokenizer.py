"""Write a tiny word-level tokenizer and a small ShareGPT-format file (tests only).

sglang.bench_serving's random dataset needs the model's tokenizer and samples token ids from ShareGPT,
which it downloads from the Hub unless --dataset-path names a local copy; the lab reaches neither the
Hub's GLM-5.3 tokenizer nor ShareGPT. Run with a python that has `tokenizers` (the SGLang venv has it).
Usage: make_tokenizer.py DIR   (writes DIR/tokenizer.json, DIR/tokenizer_config.json, DIR/sharegpt.json)"""
import json
import sys
from pathlib import Path

from tokenizers import Tokenizer, models, pre_tokenizers, decoders


def main() -> int:
    out = Path(sys.argv[1])
    out.mkdir(parents=True, exist_ok=True)
    specials = ["<unk>", "<s>", "</s>"]
    vocab = {tok: i for i, tok in enumerate(specials + [f"w{i}" for i in range(4096)] + ["tok"])}
    tok = Tokenizer(models.WordLevel(vocab=vocab, unk_token="<unk>"))
    tok.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    tok.decoder = decoders.WordPiece(prefix="##")  # joins words with spaces
    tok.save(str(out / "tokenizer.json"))
    (out / "tokenizer_config.json").write_text(json.dumps({
        "tokenizer_class": "PreTrainedTokenizerFast", "model_max_length": 1048576, "bos_token": "<s>",
        "eos_token": "</s>", "unk_token": "<unk>", "comment": "test stand-in for the GLM-5.3 tokenizer"}))
    words = [f"w{i}" for i in range(4096)]
    convs = [{"id": str(n), "conversations": [
        {"from": "human", "value": " ".join(words[(n * 37 + k) % 4096] for k in range(200))},
        {"from": "gpt", "value": " ".join(words[(n * 53 + k) % 4096] for k in range(120))}]} for n in range(64)]
    (out / "sharegpt.json").write_text(json.dumps(convs))
    return 0


if __name__ == "__main__":
    sys.exit(main())
