"""Spanish: the obstetrics guideline's language, and the one the prompts were first written and
measured in (docs/measurements/answers-labelled-by-hand.md)."""

from __future__ import annotations

from helpers.languages.language import AnswerTexts, Language

NO_ANSWER = "No encuentro la respuesta en los documentos proporcionados."

# cite-sentences: full sentences, each ending with its citation. An earlier wording ("breve y
# precisa; cita los contextos con su número") made Qwen2.5-Coder-1.5B answer "[1]" alone (q3) or a
# bare "30 minutos" (q4); with this one, none of 6 BM25 answers tried was a bare citation or figure.
CITE = (
    "Eres un asistente clínico que responde preguntas usando solo los contextos "
    "numerados que se te dan. Responde en español con una o dos frases completas que den "
    "el dato pedido, y cita al final de cada frase el número del contexto que la respalda "
    "entre corchetes, por ejemplo: «Se recomienda ... [2].» Si los contextos no contienen "
    'la respuesta, responde: "No encuentro la respuesta en los documentos '
    'proporcionados." No inventes datos.'
)
CONTEXTS_FIRST = "Contextos:\n{contexts}\n\nPregunta: {question}\nRespuesta:"

ANSWER_PROMPTS = {
    "cite-sentences": AnswerTexts(CITE, CONTEXTS_FIRST, (NO_ANSWER,)),
    "quote-then-answer": AnswerTexts(
        CITE + " Primero copia, palabra por palabra, la frase de un contexto que responde a ESTA pregunta "
        '(no otra que comparta sus palabras), así: «Cita: "..." [n]». Después escribe «Respuesta:» '
        "y responde a partir de esa frase.",
        "Contextos:\n{contexts}\n\nPregunta: {question}\nCita:",
        (NO_ANSWER,),
        answer_label="Respuesta:",
    ),
    "question-first": AnswerTexts(
        CITE,
        "Pregunta: {question}\n\nContextos:\n{contexts}\n\nResponde a la pregunta: {question}\nRespuesta:",
        (NO_ANSWER,),
    ),
    "say-no-se": AnswerTexts(
        CITE.replace(
            'Si los contextos no contienen la respuesta, responde: "No encuentro la respuesta en los '
            'documentos proporcionados."',
            'Si ningún contexto responde a esta pregunta, responde solo: "No sé."',
        ),
        CONTEXTS_FIRST,
        ("No sé", "No lo sé"),
    ),
}

TESTSET = {
    "system": "Eres un experto que escribe preguntas de examen sobre documentos. Responde solo con JSON.",
    "single": "Pasaje:\n{passages}\n\nEscribe UNA pregunta concreta, con tus propias palabras (sin copiar "
    "frases del pasaje ni mencionarlo), que el pasaje responde, y su respuesta breve tomada del pasaje. "
    'JSON: {{"question": "...", "answer": "..."}}',
    "two": "Pasaje A:\n{passage_a}\n\nPasaje B:\n{passage_b}\n\nEscribe UNA pregunta, con tus propias palabras, "
    "cuya respuesta necesite información de los DOS pasajes, y su respuesta breve. "
    'JSON: {{"question": "...", "answer": "..."}}',
    "unanswerable": "Pasaje:\n{passages}\n\nEscribe UNA pregunta sobre el mismo tema que un lector podría hacer "
    "pero que el pasaje NO responde (por ejemplo, un dato que no aparece). "
    'JSON: {{"question": "...", "answer": "no consta"}}',
    "check": "Pasajes:\n{passages}\n\nPregunta: {question}\n\n¿Responden los pasajes a la pregunta? Si la "
    "responden, da la respuesta breve tomada de ellos. "
    'JSON: {{"answered": true, "answer": "..."}} o {{"answered": false, "answer": ""}}',
}

# RAGAS with Spanish inputs (helpers.ragas_eval.prompts says why): per role, one sentence added to
# the instruction and one hand-written Spanish example (general medicine, deliberately not taken
# from the obstetrics guideline or the seed document's worked examples, the measurement set)
RAGAS: dict[str, tuple[str, dict, dict]] = {
    "statements": (
        "The question and answer may be in Spanish: write every statement in the language of the "
        "answer, without translating it.",
        {
            "question": "¿Qué es la hipertensión arterial y cómo se diagnostica?",
            "answer": "Es la elevación persistente de la presión arterial. Se diagnostica cuando la presión es "
            "de 140/90 mmHg o más en dos tomas separadas.",
        },
        {
            "statements": [
                "La hipertensión arterial es la elevación persistente de la presión arterial.",
                "La hipertensión arterial se diagnostica cuando la presión es de 140/90 mmHg o más en dos "
                "tomas separadas.",
            ]
        },
    ),
    "verdicts": (
        "The context and statements may be in Spanish: copy each statement word for word in its own "
        "language, and judge meaning, not wording: a statement that says what the context says in "
        "other words (synonyms, paraphrase, another word order) gets 1; one the context does not "
        "support or contradicts gets 0.",
        {
            "context": "La vacuna contra la influenza se aplica cada año a partir de los 6 meses de edad. Está "
            "contraindicada en personas con alergia grave a una dosis previa.",
            "statements": [
                "La vacuna contra la influenza se aplica anualmente.",
                "La vacuna contra la influenza se aplica desde el nacimiento.",
                "Quien tuvo una reacción alérgica grave a una dosis previa no debe recibir la vacuna.",
            ],
        },
        {
            "statements": [
                {
                    "statement": "La vacuna contra la influenza se aplica anualmente.",
                    "reason": "'Cada año' significa lo mismo que 'anualmente'.",
                    "verdict": 1,
                },
                {
                    "statement": "La vacuna contra la influenza se aplica desde el nacimiento.",
                    "reason": "El contexto dice a partir de los 6 meses, no desde el nacimiento.",
                    "verdict": 0,
                },
                {
                    "statement": "Quien tuvo una reacción alérgica grave a una dosis previa no debe recibir la vacuna.",
                    "reason": "'Contraindicada' dice lo mismo con otras palabras.",
                    "verdict": 1,
                },
            ]
        },
    ),
    "question": (
        "The answer may be in Spanish: write the question in the same language as the answer. An answer "
        "saying that the information was not found in the documents is noncommittal.",
        {"response": "La vacuna contra la influenza se aplica cada año a partir de los 6 meses de edad."},
        {
            "question": "¿Con qué frecuencia y desde qué edad se aplica la vacuna contra la influenza?",
            "noncommittal": 0,
        },
    ),
    "context_verdict": (
        "The question, context and answer may be in Spanish: judge by meaning, whatever the wording, "
        "whether the context was useful in arriving at the answer.",
        {
            "question": "¿Desde qué edad se aplica la vacuna contra la influenza?",
            "context": "La vacuna contra la influenza se aplica cada año a partir de los 6 meses de edad.",
            "answer": "A partir de los 6 meses de edad.",
        },
        {"reason": "El contexto da la edad de inicio que está en la respuesta.", "verdict": 1},
    ),
    "correctness": (
        "The question, answer and ground truth may be in Spanish: keep every statement in its own "
        "language (do not translate it) and judge meaning, not wording: an answer statement that "
        "says what a ground-truth statement says in other words is TP; one that gives another "
        "number, time or thing than the ground truth is FP.",
        {
            "question": "¿Desde qué edad se aplica la vacuna contra la influenza?",
            "answer": ["La vacuna se aplica desde el nacimiento.", "Se aplica cada año."],
            "ground_truth": [
                "La vacuna se aplica a partir de los 6 meses de edad.",
                "La vacuna se aplica anualmente.",
            ],
        },
        {
            "TP": [{"statement": "Se aplica cada año.", "reason": "'Cada año' dice lo mismo que 'anualmente'."}],
            "FP": [
                {
                    "statement": "La vacuna se aplica desde el nacimiento.",
                    "reason": "La verdad de referencia dice a partir de los 6 meses, no desde el nacimiento.",
                }
            ],
            "FN": [
                {
                    "statement": "La vacuna se aplica a partir de los 6 meses de edad.",
                    "reason": "La respuesta no da la edad de inicio correcta.",
                }
            ],
        },
    ),
    "classifications": (
        "The context and answer may be in Spanish: keep each sentence of the answer in its own language "
        "(do not translate it) and judge by meaning: a sentence is attributed when the context states "
        "the same facts, even in other words.",
        {
            "question": "¿Cómo se diagnostica la hipertensión arterial?",
            "context": "La hipertensión se diagnostica con cifras de 140/90 mmHg o más en dos tomas separadas.",
            "answer": "Se diagnostica con 140/90 mmHg o más en dos tomas. Debe confirmarse con un monitoreo "
            "ambulatorio de 24 horas.",
        },
        {
            "classifications": [
                {
                    "statement": "Se diagnostica con 140/90 mmHg o más en dos tomas.",
                    "reason": "El contexto da el mismo umbral y las dos tomas.",
                    "attributed": 1,
                },
                {
                    "statement": "Debe confirmarse con un monitoreo ambulatorio de 24 horas.",
                    "reason": "El contexto no menciona el monitoreo ambulatorio.",
                    "attributed": 0,
                },
            ]
        },
    ),
}

LANGUAGE = Language(
    code="es",
    name="spanish",
    stemmer="spanish",
    stop_words="SPANISH",
    embedder="e5",  # multilingual e5 (MiniLM is English-only)
    # measured with SmolLM2's tokenizer (the bundled model; 49k-token BPE) on 175 guideline chunks;
    # larger-vocabulary tokenizers (Llama 3, GPT-4o) split Spanish into fewer tokens, so this
    # over-estimates for them: the budget errs on the safe side
    chars_per_token=2.7,
    no_answer=NO_ANSWER,
    answer_prompts=ANSWER_PROMPTS,
    answer_stops=("\nPregunta:", "\nContextos:"),
    no_context="(no se recuperó ningún contexto)",
    hyde="Escribe un pasaje breve (3-4 frases) de una guía clínica que responda a la pregunta.\n"
    "Pregunta: {query}\nPasaje:",
    multi_query="Reescribe la pregunta de {n} formas distintas, con otras palabras, para buscar en documentos. "
    "Escribe una pregunta por línea, sin numerar y sin nada más.\nPregunta: {query}",
    condense=(
        "Reescribe la pregunta de seguimiento como una pregunta independiente, que se entienda sin la "
        "conversación. Responde solo con la pregunta.\n\nConversación:\n{history}\n\n"
        "Pregunta de seguimiento: {question}\nPregunta independiente:"
    ),
    speakers=("Usuario", "Asistente"),
    testset=TESTSET,
    not_in_documents="Los documentos no contienen esta información.",
    unanswered_reference=(
        r"(los |el |la |las )?(documentos?|textos?|fuentes?|guias?|manual|contextos?|pasajes?)"
        r"( proporcionados?)? no (lo |la |los |las |se )?(dicen?|responden?|contienen?|mencionan?|especifican?|incluyen?|indican?|tratan?)"
        r"|no (esta|aparece|figura|se menciona|se encuentra|se indica) en (los|el|la|las) "
        r"(documentos?|textos?|fuentes?|guias?|manual)"
        r"|(sin respuesta|no tiene respuesta|no se puede responder|desconocido)$"
    ),
    judge_refusal=r"lo siento|no puedo (?:ayudar|responder|hacer)",
    # the negation goes before the verb ("no se recomienda", "no debe")
    negatable=r"\b(se recomienda|es|son|debe|deben|puede|pueden|est[aá]n?|fue|tiene|tienen|hay)\b",
    negated=r"\bno (se recomienda|es|son|debe|deben|puede|pueden|est[aá]n?|fue|tiene|tienen|hay)\b",
    negate="no {}",
    ragas=RAGAS,
    abstention=(
        r"no (?:se )?(?:menciona|proporciona|especifica|indica|encuentra)|no hay informaci[oó]n|"
        r"no contiene|no es posible determinar"
    ),
    number_words={
        **dict(zip("dos tres cuatro cinco seis siete ocho nueve diez".split(), range(2, 11))),
        **dict(zip("once doce trece catorce quince dieciséis diecisiete dieciocho diecinueve".split(), range(11, 20))),
        "dieciseis": 16,
        **dict(zip("veinte treinta cuarenta cincuenta sesenta setenta ochenta noventa".split(), range(20, 91, 10))),
        "cien": 100,
        "ciento": 100,
    },
)
