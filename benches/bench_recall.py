"""Recall on public long-conversation benchmarks, against the BM25 baselines
a user would try, side by side in one run (§15).

    pip install -e '.[bench]'             # rank_bm25, snowballstemmer
    python benches/bench_recall.py                       # REALTALK (default)
    python benches/bench_recall.py --dataset locomo
    python benches/bench_recall.py --dataset realtalk --data DIR --keys speaker
    python benches/bench_recall.py --dataset locomo --embedder model2vec:DIR  # §15.4

Data (downloaded on first use into ``$MEMBOLT_BENCH_CACHE``, default
``/tmp/membolt-bench-cache``, unless ``--data`` names a local copy; neither
is part of this repository):
* ``realtalk``: REALTALK (Lee et al., 2025), 10 real 21-day messaging-app
  conversations between people, 728 memory-probing questions each with the
  turns that answer it (``data/Chat_*.json`` of github.com/danny911kr/REALTALK);
* ``locomo``: LoCoMo (Maharana et al., 2024), 10 LLM-generated long
  conversations (``data/locomo10.json`` of github.com/snap-research/locomo);
  questions of categories 1 to 4 (the adversarial category 5 has no answer in
  the conversation).

Each conversation goes into a fresh store as an agent would log it: every
turn one entry, key = its turn id (``D3:12``) or, as a logger filing turns
by who said them would, the speaker and the id (``Caroline:D3:12``; both
are run by default), value = ``<speaker>: <text>`` (plus the shared photo's
caption when there is one), each turn a child of the one before (the long
chain that made 0.2's block overshoot its budget). The baselines index the
same ``key + " " + value`` text.
Evidence ids that name no turn are dropped, and questions left without
evidence are skipped.

For every question, the ranked lists compared are:
* ``memory_search``: the keys of the tool's text lines, as the model reads
  them (substring hits first, else the ranked search, 20 lines at most);
* ``search_words``: ``store.search_words(question, limit=20)``;
* ``rank_bm25``: ``BM25Okapi`` over ``key + " " + value`` split into
  lowered ``\\w+`` words (the plain baseline);
* ``stemmed BM25``: the same over Snowball-stemmed words without English
  stopwords, in documents and questions (the strong baseline);
and, for the block, ``render(question, 500)``: whether an evidence turn is
among the entries it shows, and what its entry lines cost against the
2,000-byte budget. recall@k: the share of questions with an evidence turn in
the first k; "none": the share with an empty answer.

With ``--embedder NAME`` (a §15.4 setting, e.g. ``model2vec:DIR``) the
stores are given that embedder, and three rows are added:
* ``vector-only``: the entries ranked by the cosine of their stored vector
  with the question's (numpy over ``store.vectors_of``), first 20;
* ``hybrid``: ``store.search_words(question, limit=20)`` with the embedder
  (reciprocal rank fusion of the word and vector rankings);
* ``memory_search + vectors``: the tool on the store with the embedder;
and the block is rendered with the embedder (its focus fused too). The
``memory_search`` and ``search_words`` rows stay words alone. The embedding
of the turns (the embedder's own time) is reported apart.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import sys
import tempfile
import time
import urllib.request
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import membolt
from membolt import AgentMemory, MemoryStore

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
from support import reference_render as ref

CACHE = Path(os.environ.get("MEMBOLT_BENCH_CACHE", "/tmp/membolt-bench-cache"))
REALTALK_FILES = [
    "Chat_1_Emi_Elise.json",
    "Chat_2_Kevin_Elise.json",
    "Chat_3_Kevin_Paola.json",
    "Chat_4_Emi_Paola.json",
    "Chat_5_Nicolas_Nebraas.json",
    "Chat_6_Vanessa_Nicolas.json",
    "Chat_7_Nebraas_Vanessa.json",
    "Chat_8_Akib_Muhhamed.json",
    "Chat_9_Fahim_Akib.json",
    "Chat_10_Fahim_Muhhamed.json",
]
REALTALK_URL = "https://raw.githubusercontent.com/danny911kr/REALTALK/main/data/{name}"
LOCOMO_URL = "https://raw.githubusercontent.com/snap-research/locomo/main/data/locomo10.json"
KS = (1, 5, 20)
BLOCK_TOKENS = 500

#: The English stopwords of the stemmed baseline (NLTK's list, the one
#: most BM25 pipelines use).
BASELINE_STOPWORDS = frozenset(
    """i me my myself we our ours ourselves you your yours yourself yourselves he him his
    himself she her hers herself it its itself they them their theirs themselves what which
    who whom this that these those am is are was were be been being have has had having do
    does did doing a an the and but if or because as until while of at by for with about
    against between into through during before after above below to from up down in out on
    off over under again further then once here there when where why how all any both each
    few more most other some such no nor not only own same so than too very s t can will just
    don should now d ll m o re ve y ain aren couldn didn doesn hadn hasn haven isn ma mightn
    mustn needn shan shouldn wasn weren won wouldn""".split()  # noqa: SIM905 (a word list)
)


@dataclass
class Conversation:
    name: str
    turns: list[tuple[str, str]]  # (key, value), in order
    questions: list[tuple[str, frozenset[str]]] = field(default_factory=list)


# ---------------------------------------------------------------------------
# Data
# ---------------------------------------------------------------------------


def fetch(url: str, target: Path) -> Path:
    if not target.exists():
        target.parent.mkdir(parents=True, exist_ok=True)
        print(f"downloading {url}", file=sys.stderr)
        with urllib.request.urlopen(url, timeout=60) as response:
            data = response.read()
        partial = target.with_suffix(".partial")
        partial.write_bytes(data)
        partial.replace(target)
    return target


def turn_value(speaker: str, text: str, caption: str | None) -> str:
    value = f"{speaker}: {text}"
    return f"{value} [shares a photo: {caption}]" if caption else value


def sessions(holder: dict[str, object]) -> Iterator[list[dict[str, object]]]:
    numbers = sorted(
        int(m.group(1)) for key in holder if (m := re.fullmatch(r"session_(\d+)", key))
    )
    for number in numbers:
        session = holder[f"session_{number}"]
        if isinstance(session, list):
            yield session


def turn_key(keys: str, speaker: str, turn_id: str) -> str:
    """The key of a turn: its id (``D3:12``), or with ``--keys speaker`` the
    speaker's name before it (``Caroline:D3:12``), as a logger that files
    turns by who said them would."""
    return f"{speaker}:{turn_id}" if keys == "speaker" else turn_id


def conversation_of(
    name: str, holder: dict[str, object], qa: list[dict[str, object]], keys: str
) -> Conversation:
    turns: list[tuple[str, str]] = []
    key_of: dict[str, str] = {}
    for session in sessions(holder):
        for turn in session:
            turn_id, speaker = str(turn["dia_id"]), str(turn["speaker"])
            if turn_id in key_of:
                continue
            key_of[turn_id] = turn_key(keys, speaker, turn_id)
            text = str(turn.get("clean_text", turn.get("text", "")))
            caption = turn.get("blip_caption")
            turns.append((key_of[turn_id], turn_value(speaker, text, caption and str(caption))))
    conversation = Conversation(name, turns)
    for item in qa:
        if item.get("category") == 5:
            continue
        evidence = frozenset(key_of[str(e)] for e in item.get("evidence", []) if str(e) in key_of)
        if evidence:
            conversation.questions.append((str(item["question"]), evidence))
    return conversation


def load(dataset: str, data: Path | None, keys: str) -> list[Conversation]:
    if dataset == "locomo":
        path = data or fetch(LOCOMO_URL, CACHE / "locomo10.json")
        return [
            conversation_of(item["sample_id"], item["conversation"], item["qa"], keys)
            for item in json.loads(path.read_text())
        ]
    directory = data or CACHE / "realtalk"
    conversations = []
    for name in REALTALK_FILES:
        path = directory / name
        if data is None:
            fetch(REALTALK_URL.format(name=name), path)
        item = json.loads(path.read_text())
        conversations.append(conversation_of(name.removesuffix(".json"), item, item["qa"], keys))
    return conversations


# ---------------------------------------------------------------------------
# Methods: each answers a question with a ranked list of keys
# ---------------------------------------------------------------------------


def tool_keys(memory: AgentMemory, question: str) -> list[str]:
    text = memory.call_tool("memory_search", {"query": question})
    return [line[2:].split(": ", 1)[0] for line in text.splitlines() if line.startswith("- ")]


class Bm25Baseline:
    """rank_bm25's BM25Okapi over a tokeniser; the first 20 positive scores."""

    def __init__(self, documents: Sequence[str], tokenise: Callable[[str], list[str]]) -> None:
        from rank_bm25 import BM25Okapi

        self.tokenise = tokenise
        self.index = BM25Okapi([tokenise(text) or [""] for text in documents])

    def ranked(self, keys: Sequence[str], question: str) -> list[str]:
        scores = self.index.get_scores(self.tokenise(question))
        order = sorted(range(len(keys)), key=lambda i: -scores[i])
        return [keys[i] for i in order[:20] if scores[i] > 0]


def plain_words(text: str) -> list[str]:
    return re.findall(r"\w+", text.lower())


def stemmed_words(text: str) -> list[str]:
    import snowballstemmer

    stem = stemmed_words.__dict__.setdefault("stemmer", snowballstemmer.stemmer("english"))
    return [stem.stemWord(w) for w in plain_words(text) if w not in BASELINE_STOPWORDS]


def block_keys(block: str) -> list[str]:
    """The keys a block shows."""
    return [
        line.split(" [", 1)[0].split(": ", 1)[0]
        for line in block.split("\n")[3:-1]
        if not line.startswith("downstream of ")
    ]


def block_cost(entries: list[ref.Entry], store: MemoryStore, question: str) -> tuple[set[str], int]:
    """What the block's entry lines cost (§5.1: the raw value, or for a cut
    entry the value shown), from the plain-Python model's selection (which
    the tests hold equal to the renderer's): the keys and the cost."""
    by_key = {entry.key: entry for entry in entries}
    matches = [by_key[hit.key] for hit in store.search_words(question, limit=5)]
    resume, error = ref.resume_point(entries), ref.newest_unresolved_error(entries)
    anchors = [a for a in [resume, *matches, error] if a is not None]
    shown = ref.select_shown(entries, anchors, resume, BLOCK_TOKENS)
    return set(shown), sum(len(k.encode()) + len(v.encode()) + 30 for k, v in shown.items())


# ---------------------------------------------------------------------------
# The run
# ---------------------------------------------------------------------------


@dataclass
class Tally:
    hits: dict[int, int] = field(default_factory=lambda: dict.fromkeys(KS, 0))
    none: int = 0
    times: list[float] = field(default_factory=list)

    def add(self, ranked: Sequence[str], evidence: frozenset[str], seconds: float) -> None:
        self.times.append(seconds)
        if not ranked:
            self.none += 1
        for k in KS:
            if evidence.intersection(ranked[:k]):
                self.hits[k] += 1


WORD_METHODS = ("memory_search", "search_words", "rank_bm25", "stemmed BM25")
VECTOR_METHODS = ("vector-only", "hybrid", "memory_search + vectors")
METHODS = WORD_METHODS + VECTOR_METHODS


@dataclass
class Results:
    tallies: dict[str, Tally] = field(default_factory=lambda: {m: Tally() for m in METHODS})
    block: Tally = field(default_factory=Tally)
    block_costs: list[int] = field(default_factory=list)
    questions: int = 0
    embed_seconds: float = 0.0


def answerers(
    store: MemoryStore, conversation: Conversation
) -> dict[str, Callable[[str], list[str]]]:
    """Each method as question -> ranked keys, over one conversation's store."""
    words_only = MemoryStore(store.path or store.location)
    memory = AgentMemory(words_only)
    keys = [key for key, _ in conversation.turns]
    documents = [f"{key} {value}" for key, value in conversation.turns]
    plain = Bm25Baseline(documents, plain_words)
    stemmed = Bm25Baseline(documents, stemmed_words)
    methods: dict[str, Callable[[str], list[str]]] = {
        "memory_search": lambda q: tool_keys(memory, q),
        "search_words": lambda q: [e.key for e in words_only.search_words(q, limit=20)],
        "rank_bm25": lambda q: plain.ranked(keys, q),
        "stemmed BM25": lambda q: stemmed.ranked(keys, q),
    }
    if store.embedder is not None:
        nearest = VectorOnly(store)
        hybrid_memory = AgentMemory(store)
        methods["vector-only"] = nearest.ranked
        methods["hybrid"] = lambda q: [e.key for e in store.search_words(q, limit=20)]
        methods["memory_search + vectors"] = lambda q: tool_keys(hybrid_memory, q)
    return methods


class VectorOnly:
    """The cosine ranking alone: the stored (normalised) vectors against the
    question's, first 20 above 0."""

    def __init__(self, store: MemoryStore) -> None:
        import numpy as np

        self.np = np
        entries = store.entries()
        vectors = store.vectors_of(entries)
        assert store.embedding is not None
        self.embedding = store.embedding
        self.keys = [e.key for e, v in zip(entries, vectors, strict=True) if v is not None]
        rows = [np.frombuffer(v, dtype="<f4") for v in vectors if v is not None]
        self.matrix = np.stack(rows) if rows else np.zeros((0, self.embedding.dims), "f4")

    def ranked(self, question: str) -> list[str]:
        query = self.embedding.embed([question])
        if query is None:
            return []
        vector = self.np.frombuffer(query, dtype="<f4")
        scores = self.matrix @ (vector / (self.np.linalg.norm(vector) or 1.0))
        order = self.np.argsort(-scores, kind="stable")[:20]
        return [self.keys[i] for i in order if scores[i] > 0]


def evaluate(
    conversation: Conversation, path: Path, results: Results, embedder: object | None
) -> None:
    with MemoryStore(path, embedder=embedder, embed_timeout=None) as store:  # type: ignore[arg-type]
        items = []
        previous: list[str] = []
        for key, value in conversation.turns:
            items.append((key, value, "note", previous))
            previous = [key]
        started = time.perf_counter()
        store.save_many(items)
        if embedder is not None:
            store.embed_missing()
            results.embed_seconds += time.perf_counter() - started
            status = store.vector_status()
            if status["without_vector"]:
                raise SystemExit(f"{status['without_vector']} turns not embedded: {status}")
        answer = answerers(store, conversation)
        model_entries = [
            ref.Entry(e.key, e.value, e.type, "", list(e.references), e.created_at, e.updated_at)
            for e in store.entries()
        ]
        for question, evidence in conversation.questions:
            results.questions += 1
            for name in answer:
                started = time.perf_counter()
                ranked = answer[name](question)
                results.tallies[name].add(ranked, evidence, time.perf_counter() - started)
            started = time.perf_counter()
            text = store.render(question, BLOCK_TOKENS, now_ms=0)
            results.block.times.append(time.perf_counter() - started)
            shown = block_keys(text)
            modelled, cost = block_cost(model_entries, store, question)
            if modelled != set(shown):
                raise AssertionError(f"the block and the model differ for {question!r}")
            results.block_costs.append(cost)
            if evidence.intersection(shown):
                results.block.hits[5] += 1


def run(conversations: list[Conversation], directory: Path, embedder: object | None) -> None:
    results = Results()
    for conversation in conversations:
        evaluate(conversation, directory / f"{conversation.name}.redb", results, embedder)
    turns = sum(len(c.turns) for c in conversations)
    questions = results.questions
    print(f"{len(conversations)} conversations, {turns} turns, {questions} questions\n")

    def share(count: int) -> str:
        return f"{100 * count / questions:.1f} %"

    print("| method | recall@1 | recall@5 | recall@20 | none | p50 ms |")
    print("|---|---:|---:|---:|---:|---:|")
    for name in METHODS:
        tally = results.tallies[name]
        if not tally.times:
            continue
        print(
            f"| {name} | {share(tally.hits[1])} | {share(tally.hits[5])} | "
            f"{share(tally.hits[20])} | {share(tally.none)} | "
            f"{statistics.median(tally.times) * 1e3:.2f} |"
        )
    costs = results.block_costs
    print(
        f"\n`render(question, {BLOCK_TOKENS})`: an evidence turn in the block for "
        f"{share(results.block.hits[5])} of the questions; entry lines "
        f"p50 {statistics.median(costs)} / max {max(costs)} bytes "
        f"(budget {BLOCK_TOKENS * 4}); p50 {statistics.median(results.block.times) * 1e3:.2f} ms"
    )
    if embedder is not None:
        print(
            f"\nembedder {getattr(embedder, 'name', '?')}: {results.embed_seconds:.1f} s to "
            f"embed the {turns} turns (saves included); the block above is rendered with it"
        )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--dataset", choices=["realtalk", "locomo"], default="realtalk")
    parser.add_argument(
        "--data", type=Path, help="a local copy (file for locomo, folder for realtalk)"
    )
    parser.add_argument(
        "--keys",
        default="turn,speaker",
        help="how turns are keyed: turn (D3:12), speaker (Caroline:D3:12), or both",
    )
    parser.add_argument(
        "--embedder",
        metavar="NAME",
        help="a §15.4 setting (model2vec:DIR, openai:URL#MODEL, module:attr): adds "
        "vector-only and hybrid rows",
    )
    args = parser.parse_args(argv)
    embedder = None
    if args.embedder:
        from membolt import embedders

        embedder = embedders.resolve(args.embedder)
    if membolt._core.DEBUG_BUILD:
        print("note: a debug build; the timings mean little (quality is the same)", file=sys.stderr)
    for keys in args.keys.split(","):
        if keys not in ("turn", "speaker"):
            parser.error(f"--keys: turn or speaker, not {keys!r}")
        print(f"\n### {args.dataset}, turns keyed by {keys}\n")
        conversations = load(args.dataset, args.data, keys)
        with tempfile.TemporaryDirectory() as directory:
            run(conversations, Path(directory), embedder)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
