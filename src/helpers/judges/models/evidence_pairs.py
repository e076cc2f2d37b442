"""Training pairs for the evidence model: (claim, evidence, label) with label 1 = supported.

- `nli_pairs`: English entailment pairs from data/raw/nli (MultiNLI dev-matched, Breaking NLI,
  FEVER-Symmetric dev, WiCE dev; all permissively licensed, see ../shared/data/nli/README.md).
  Entailment / SUPPORTS / supported -> 1; contradiction, neutral, REFUTES, (partially) not
  supported -> 0. Duplicate (premise, hypothesis) pairs are dropped; XNLI (CC BY-NC) is not used.
- `support_pairs`: one pair per RAGBench response sentence (label from
  `unsupported_response_sentence_keys`, which agrees exactly with `adherence_score`), its evidence
  the few document sentences that share the most rare words with it (`select_evidence`).
- `perturb`: synthetic hard negatives from supported sentences, as FactCC (Kryscinski et al.
  2020) builds them: a number swapped for another number of the same documents, a name swapped
  for a name of another document (the wrong bridge: hotpotqa's failure), a negation, and a
  sentence taken from another example's answer.
"""

from __future__ import annotations

import csv
import hashlib
import json
import random
import re
from pathlib import Path

from helpers import paths
from helpers.data import DataError
from helpers.finetune import Pair
from helpers.judges.models.trace_features import content, names, tokens
from helpers.languages import corpus_language
from helpers.trace.sentence_keys import as_documents_sentences, as_response_sentences, normalize_key, split_sentences

NLI_DIR = paths.RAW_DIR / "nli"
EVIDENCE_SENTENCES = 3  # top-3 by rare-word overlap hold 67-84% of the gold support (offline-stack notes)


# ---- evidence selection
def evidence_selector(documents, question: str = ""):
    """`pick(claim, k=EVIDENCE_SENTENCES) -> str`: the k document sentences sharing the most
    IDF-weighted content words with the claim (and, more weakly, the question), joined in
    document order. The documents are tokenised once, however many claims are checked against
    them; IDF is computed within the example."""
    sentences = [s for doc in as_documents_sentences(documents) for _, s in doc]
    token_sets = [set(content(tokens(s))) for s in sentences]
    df: dict[str, int] = {}
    for toks in token_sets:
        for t in toks:
            df[t] = df.get(t, 0) + 1
    n = len(sentences)
    idf = {t: 1.0 + (n / c) ** 0.5 for t, c in df.items()}
    question_toks = set(content(tokens(question)))

    def pick(claim: str, k: int = EVIDENCE_SENTENCES) -> str:
        claim_toks = set(content(tokens(claim)))
        # summed in sorted order: a set's order changes with PYTHONHASHSEED, and float sums with it,
        # which flipped near-ties between processes (the pairs, and so the training, must not)
        scores = [
            sum(idf[t] for t in sorted(toks & claim_toks)) + 0.25 * sum(idf[t] for t in sorted(toks & question_toks))
            for toks in token_sets
        ]
        best = sorted(range(n), key=lambda i: (-scores[i], i))[:k]
        return " ".join(sentences[i].strip() for i in sorted(best))

    return pick


def select_evidence(claim: str, documents, k: int = EVIDENCE_SENTENCES, question: str = "") -> str:
    """One claim's evidence (`evidence_selector`); "" when there are no document sentences."""
    return evidence_selector(documents, question)(claim, k)


# ---- NLI
def _binary(label: str) -> int | None:
    label = (label or "").strip().lower()
    if label in {"entailment", "supports", "supported"}:
        return 1
    if label in {"contradiction", "neutral", "refutes", "not_supported", "partially_supported"}:
        return 0
    return None


def _jsonl(path: Path):
    with path.open(encoding="utf-8") as handle:
        for line in handle:
            if line.strip():
                yield json.loads(line)


def nli_pairs(nli_dir: str | Path | None = None) -> list[Pair]:
    """English entailment pairs, deduplicated, in a fixed order. Missing sources are skipped;
    none at all is an error naming the folder."""
    root = Path(nli_dir or NLI_DIR)
    raw: list[tuple[str, str, str, str]] = []  # premise, hypothesis, label, source
    mnli = root / "mnli_dev_matched" / "mnli_dev_matched_with_bert_correct_counts.tsv"
    if mnli.exists():
        with mnli.open(encoding="utf-8") as handle:
            for row in csv.DictReader(handle, delimiter="\t", quoting=csv.QUOTE_NONE):
                raw.append((row["premise"], row["hypothesis"], row["gold_label"], "mnli"))
    breaking = root / "breaking_nli" / "dataset.jsonl"
    if breaking.exists():
        raw += [(r["sentence1"], r["sentence2"], r["gold_label"], "breaking_nli") for r in _jsonl(breaking)]
    fever = root / "fever_symmetric" / "fever_symmetric_dev.jsonl"
    if fever.exists():
        raw += [(r["evidence"], r["claim"], r["label"], "fever_symmetric") for r in _jsonl(fever)]
    wice = root / "wice" / "oracle_chunks_claim_dev.jsonl"
    if wice.exists():
        raw += [(" ".join(r["evidence"]), r["claim"], r["label"], "wice") for r in _jsonl(wice)]
    if not raw:
        raise DataError(str(root), "no NLI file found", fix="run `python -m helpers prepare-data nli`")
    seen, pairs = set(), []
    for premise, hypothesis, label, source in raw:
        y, key = _binary(label), (premise.strip(), hypothesis.strip())
        if y is None or key in seen or not all(key):
            continue
        seen.add(key)
        pairs.append(Pair(hypothesis.strip(), premise.strip(), y, source))
    return pairs


# ---- RAGBench support pairs and synthetic negatives
_NUMBER = re.compile(r"\b\d+(?:[.,]\d+)*\b")
_NAME = re.compile(r"(?<!^)(?<![.!?]\s)\b[A-Z][a-z][\w-]+")


def _rng(*parts) -> random.Random:
    """A generator seeded by the content, so a pair's perturbation never depends on data order."""
    return random.Random(hashlib.sha256("|".join(map(str, parts)).encode()).hexdigest())


def perturb(
    sentence: str, documents, other_sentence: str, seed: int = 0, language: str = "en"
) -> tuple[str, str] | None:
    """(perturbed sentence, kind) that the documents no longer support, or None when no
    perturbation applies. Kinds: number, name (a name from another document), negation, and,
    only where none of those applies, other (another answer's sentence)."""
    docs = as_documents_sentences(documents)
    rng = _rng(seed, sentence)
    options: dict[str, tuple[str, list[str]]] = {}  # kind -> (what to replace, candidates)
    numbers_here = sorted(set(_NUMBER.findall(sentence)))
    doc_numbers = sorted(set(_NUMBER.findall(" ".join(s for doc in docs for _, s in doc))) - set(numbers_here))
    if numbers_here and doc_numbers:
        options["number"] = (rng.choice(numbers_here), doc_numbers)
    names_here = sorted(set(_NAME.findall(sentence)))
    if names_here:
        old = rng.choice(names_here)
        home = {i for i, doc in enumerate(docs) if any(old in s for _, s in doc)}
        elsewhere = sorted(
            {m for i, doc in enumerate(docs) if i not in home for _, s in doc for m in _NAME.findall(s)}
            - set(names_here)
            - names(sentence)
        )
        if elsewhere:
            options["name"] = (old, elsewhere)
    # the language's verbs and where its negation goes (helpers.languages: `negatable`, `negated`, `negate`)
    lang = corpus_language(language)
    negatable, negated = re.compile(lang.negatable), re.compile(lang.negated)
    if negatable.search(sentence):
        options["negation"] = ("", [])
    if not options and other_sentence and other_sentence != sentence:
        return other_sentence, "other"  # the easy negative, only where no hard one applies
    if not options:
        return None
    kind = rng.choice(sorted(options))
    old, candidates = options[kind]
    if kind == "number":
        return re.sub(rf"\b{re.escape(old)}\b", rng.choice(candidates), sentence, count=1), kind
    if kind == "name":
        return sentence.replace(old, rng.choice(candidates), 1), kind
    if negated.search(sentence):
        return negated.sub(lambda m: m.group(1), sentence, count=1), kind
    return negatable.sub(lambda m: lang.negate.format(m.group(1)), sentence, count=1), kind


def support_pairs(frame, *, synthetic: bool = True, seed: int = 0) -> list[Pair]:
    """Pairs from RAGBench rows (any non-test split): every response sentence with its selected
    evidence, plus one synthetic negative per supported sentence where a perturbation applies."""
    pairs: list[Pair] = []
    rows = list(frame.itertuples(index=False))
    for position, row in enumerate(rows):
        docs = as_documents_sentences(row.documents_sentences)
        unsupported = {normalize_key(k) for k in row.unsupported_response_sentence_keys}
        source = f"ragbench/{getattr(row, 'subset', 'unknown')}"
        other_row = rows[(position + 1 + _rng(seed, row.id).randrange(max(len(rows) - 1, 1))) % len(rows)]
        others = [s for _, s in as_response_sentences(other_row.response_sentences)] or [""]
        pick = evidence_selector(docs, row.question)
        for index, (key, sentence) in enumerate(as_response_sentences(row.response_sentences)):
            if len(content(tokens(sentence))) < 2:  # "Yes.", list bullets: no claim to check
                continue
            label = int(normalize_key(key) not in unsupported)
            pairs.append(Pair(sentence, pick(sentence), label, source))
            if synthetic and label:
                made = perturb(sentence, docs, others[index % len(others)], seed)
                if made:
                    fake, kind = made
                    pairs.append(Pair(fake, pick(fake), 0, f"synthetic/{kind}"))
    return pairs


def maternaqa_pairs(records: list[dict], seed: int = 0) -> list[Pair]:
    """Spanish pairs from MaternaQA-es records (`pregunta`, `respuesta`, `contexto_fuente`): each
    answer sentence with its gold passage (1), with another record's passage (0), and perturbed
    against its own passage (0)."""
    pairs: list[Pair] = []
    for position, record in enumerate(records):
        passage = [[["0a", s] for s in split_sentences(record["contexto_fuente"].strip('"'))]]
        other = records[(position + 1 + _rng(seed, record["qa_id"]).randrange(max(len(records) - 1, 1))) % len(records)]
        other_passage = [[["0a", s] for s in split_sentences(other["contexto_fuente"].strip('"'))]]
        gold, other = (evidence_selector(p, record["pregunta"]) for p in (passage, other_passage))
        for sentence in split_sentences(record["respuesta"]):
            if len(content(tokens(sentence))) < 2:
                continue
            pairs.append(Pair(sentence, gold(sentence), 1, "maternaqa/gold"))
            pairs.append(Pair(sentence, other(sentence), 0, "maternaqa/other_passage"))
            made = perturb(sentence, passage, "", seed, language="es")
            if made:
                pairs.append(Pair(made[0], gold(made[0]), 0, f"maternaqa/{made[1]}"))
    return pairs
