"""The Spanish worked examples of the seed document (../shared/seeds/ragas-evaluation-framework.md)
with their expected verdicts, and a measurement of a judge on them, stock ragas prompts ("en")
against the Spanish-adjusted ones ("es").

Expected scores follow ragas's formulas, not always the seed's numbers: the seed's context
precision example states 0.81 (the mean of precision@1..5), while ragas's definition,
sum_k(precision@k * v_k) / sum_k v_k with verdicts [1,1,0,1,0], gives (1 + 1 + 3/4) / 3 = 0.917.
The seed's recall example lists five facts; its contexts are not quoted, so they are written here
from the guideline's wording, one sentence per fact. Answer relevancy has no verdicts: the seed's
scores (0.92 relevant, 0.4 off-topic) depend on its embedder, so the check is the ordering.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

import pandas as pd

from helpers.data.contracts import Sample
from helpers.languages import detect
from helpers.ragas_eval.ragas_scoring import RagasJudge

Q_CITAS = "¿Cuál es la cantidad ideal de controles prenatales?"
CTX_CITAS = (
    "Se recomienda un programa de diez citas para primigestantes. Para una mujer multípara con un "
    "embarazo de curso normal se recomienda un programa de siete citas."
)
Q_PSICO = "¿Cuándo realizar la valoración de riesgo psicosocial?"
REF_PSICO = (
    "Se recomienda que las gestantes de bajo riesgo reciban en el momento de la inscripción al control "
    "prenatal, y luego en cada trimestre, una valoración de riesgo psicosocial."
)
CTX_PSICO = (
    "Se recomienda que las gestantes de bajo riesgo reciban en el momento de la inscripción al control prenatal, "
    "y luego en cada trimestre, una valoración de riesgo psicosocial.",
    "La valoración debe usar la escala de Herrera & Hurtado.",
    "Los controles prenatales incluyen medición de peso y presión arterial.",
    "Se recomienda evaluar el riesgo biológico y psicosocial a todas las gestantes.",
    "El parto debe ocurrir en un centro médico adecuado.",
)
Q_PESO = "¿Cuáles son las metas de ganancia de peso en las mujeres gestantes?"
REF_PESO = (
    "Se recomienda registrar el IMC de la gestante alrededor de la semana 10. "
    "Con IMC menor de 20 kg/m2 la ganancia debe ser entre 12 y 18 Kg. "
    "Con IMC entre 20 y 24,9 kg/m2 la ganancia debe ser entre 10 y 13 Kg. "
    "Con IMC entre 25 y 29,9 kg/m2 la ganancia debe ser entre 7 y 10 Kg. "
    "Con IMC mayor de 30 kg/m2 la ganancia debe ser entre 6 y 7 Kg."
)
CTX_PESO_1 = (
    "Se recomienda registrar el Índice de Masa Corporal (IMC) de la gestante en la cita de inscripción "
    "al control prenatal (alrededor de la semana 10) y con base en este establecer las metas de ganancia "
    "de peso: IMC < 20 kg/m2 = ganancia entre 12 a 18 Kg; IMC entre 20 y 24,9 kg/m2 = ganancia entre "
    "10 a 13 Kg."
)
CTX_PESO_2 = "IMC entre 25 y 29,9 kg/m2 = ganancia entre 7 a 10 Kg; IMC > 30 kg/m2 = ganancia entre 6 a 7 Kg."


@dataclass
class WorkedExample:
    name: str
    metric: str
    sample: Sample
    expected_verdicts: list[int] | None  # in order; None where the metric has no verdicts
    expected_score: float | None
    seed_score: float | None  # the number printed in the seed document


def seed_examples() -> list[WorkedExample]:
    s = Sample
    return [
        WorkedExample(
            "faithful (paraphrase)",
            "faithfulness",
            s(
                "faith_ok",
                Q_CITAS,
                "Se recomienda un programa de diez citas para embarazos primarios y "
                "siete citas para multíparas con embarazos de curso normal.",
                (CTX_CITAS,),
            ),
            [1, 1],
            1.0,
            1.0,
        ),
        WorkedExample(
            "hallucination (12 controles, OMS)",
            "faithfulness",
            s("faith_bad", Q_CITAS, "Se recomienda 12 controles prenatales según la OMS", (CTX_CITAS,)),
            [0],
            0.0,
            0.0,
        ),
        WorkedExample(
            "relevant answer",
            "answer_relevancy",
            s(
                "rel_ok",
                Q_CITAS,
                "Se recomienda un programa de diez citas para primigestantes y siete citas para multíparas.",
                (CTX_CITAS,),
            ),
            None,
            None,
            0.92,
        ),
        WorkedExample(
            "off-topic answer",
            "answer_relevancy",
            s(
                "rel_bad",
                "¿Cuándo iniciar controles prenatales?",
                "Los controles prenatales incluyen exámenes de sangre, ultrasonidos...",
                (CTX_CITAS,),
            ),
            None,
            None,
            0.4,
        ),
        WorkedExample(
            "precision, 3 of 5 relevant",
            "context_precision",
            s("prec", Q_PSICO, None, CTX_PSICO, REF_PSICO),
            [1, 1, 0, 1, 0],
            11 / 12,
            0.81,
        ),
        WorkedExample(
            "recall, complete",
            "context_recall",
            s("rec_full", Q_PESO, None, (CTX_PESO_1, CTX_PESO_2), REF_PESO),
            [1, 1, 1, 1, 1],
            1.0,
            1.0,
        ),
        WorkedExample(
            "recall, facts 4-5 missing",
            "context_recall",
            s("rec_part", Q_PESO, None, (CTX_PESO_1,), REF_PESO),
            [1, 1, 1, 0, 0],
            0.6,
            0.6,
        ),
    ]


SEED_LANGUAGE = "es"  # the seed document's worked examples are Spanish


def in_language(text: str, code: str) -> bool:
    """Whether a text the judge wrote is in the language `code`, by the package's one detector
    (helpers.languages.detect)."""
    return detect([text])["code"] == code


def _verdicts(metric: str, detail: list[dict]) -> list[int]:
    if metric == "faithfulness":
        return [int(bool(s["verdict"])) for d in detail if d["role"] == "verdicts" for s in d["statements"]]
    if metric == "context_precision":
        return [int(bool(d["verdict"])) for d in detail if d["role"] == "context_verdict"]
    if metric == "context_recall":
        return [
            int(bool(c["attributed"])) for d in detail if d["role"] == "classifications" for c in d["classifications"]
        ]
    return []


def _generated_texts(detail: list[dict]) -> list[str]:
    """What the judge wrote in the input's language: statements, generated questions."""
    out = []
    for d in detail:
        if d["role"] == "statements":
            out += d["statements"]
        elif d["role"] == "question":
            out.append(d["question"])
        elif d["role"] == "classifications":
            out += [c["statement"] for c in d["classifications"]]
    return out


def verdict_agreement(expected: list[int] | None, got: list[int]) -> float | None:
    """Share of expected verdicts the judge matched. Faithfulness statements are the judge's own
    split, so when every expected verdict is equal (all supported / none) each judge verdict is
    compared with that value; otherwise verdicts are compared by position (missing = wrong)."""
    if not expected or not got:
        return None
    if len(set(expected)) == 1:
        return sum(g == expected[0] for g in got) / len(got)
    return sum(e == g for e, g in zip(expected, got)) / max(len(expected), len(got))


def measure_seed_examples(judge, embedder=None, *, variants=("en", "es"), **judge_kwargs) -> pd.DataFrame:
    """Score every worked example with stock prompts ("en") and Spanish-adjusted ones ("es");
    one row per (variant, example): value, expected, verdict agreement, share of judge-written
    statements/questions that stayed Spanish, reason."""
    examples = seed_examples()
    rows = []
    for variant in variants:
        for metric in dict.fromkeys(e.metric for e in examples):
            chosen = [e for e in examples if e.metric == metric]
            scorer = RagasJudge(judge, embedder, language=variant, metrics=(metric,), **judge_kwargs)
            result = scorer.score([e.sample for e in chosen]).rows.set_index("qid")
            for e in chosen:
                r = result.loc[e.sample.qid]
                detail = json.loads(r["detail"])
                written = _generated_texts(detail)
                rows.append(
                    {
                        "variant": variant,
                        "example": e.name,
                        "metric": metric,
                        "value": r["value"],
                        "expected": e.expected_score,
                        "seed": e.seed_score,
                        "expected_verdicts": e.expected_verdicts,
                        "verdicts": _verdicts(metric, detail),
                        "agreement": verdict_agreement(e.expected_verdicts, _verdicts(metric, detail)),
                        "spanish_kept": (
                            sum(in_language(t, SEED_LANGUAGE) for t in written) / len(written) if written else None
                        ),
                        "error_kind": r["error_kind"],
                        "reason": r["reason"],
                        "seconds": r["seconds"],
                    }
                )
    return pd.DataFrame(rows)
