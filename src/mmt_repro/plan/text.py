"""The inputs of the text stage (text.smk): each paper's recipe (tokenisation chains, WordPiece,
per-paper BPE codes and vocabularies learnt on every corpus its systems train on) and the
vocabulary report."""

from __future__ import annotations

from ..text.wordpiece import WORDPIECE_VOCAB_INPUT
from .lookup import Lookup, is_captioning
from .paths import path


class TextInputs:
    def __init__(self, look: Lookup):
        self.look = look

    def recipe_targets(self) -> list:
        """Every corpus of `data.corpora` through the text chain of each paper that reads it
        (`data.recipes`), e.g. text/multi30k/val.lc.norm.tok.en."""
        targets = set()
        for paper, datasets in self.look.config["data"].get("recipes", {}).items():
            if paper not in self.look.settings:
                raise ValueError(
                    f"data.recipes names paper {paper!r}, which is not under `papers`; valid: {', '.join(self.look.settings)}"
                )
            rec = self.look.recipe(paper)
            for ds in datasets:
                if ds not in self.look.config["data"]["corpora"]:
                    continue
                for key in self.look.corpus_text_files(ds):
                    split, lang = key.split("|")
                    if lang in rec.langs:
                        targets.add(path("text", dataset=ds, split=split, chain=rec.chain_for(lang), lang=lang))
        return sorted(targets)

    def tokenize_inputs(self, wildcards) -> dict:
        """The prepared text (caption k of each image for tokenize_captions), plus the WordPiece
        vocabulary for chains with the wp step."""
        k = getattr(wildcards, "k", None)
        split = wildcards.split if k is None else f"{wildcards.split}.{k}"
        inputs = {"text": path("corpus", dataset=wildcards.dataset, split=split, lang=wildcards.lang)}
        if wildcards.chain.endswith("wp"):
            inputs["wordpiece_vocab"] = self.wordpiece_vocab_file()
        return inputs

    # ------------------------------------------------------------------ WordPiece
    def wordpiece_vocab_file(self) -> str:
        """The vocab.txt of the wp step: the recipe's ``wordpiece_vocab`` (the manifest input
        bertgen_vocab, or one learnt by learn_wordpiece); every paper with wp must agree, since
        the tokenised text is shared."""
        files = {s.recipe.wordpiece_vocab for s in self.look.settings.values() if s.recipe.subword == "wordpiece"}
        if len(files) > 1:
            raise ValueError(f"papers with the wp step name different WordPiece vocabularies: {sorted(files)}; use one")
        return files.pop() if files else f"resources/{WORDPIECE_VOCAB_INPUT}/vocab.txt"

    def wordpiece_training_text(self, wildcards) -> list:
        """What learn_wordpiece learns on: the lowercased training split of the corpus, in every
        language of the wp recipes that the corpus has."""
        ds = wildcards.corpus
        langs = {lang for s in self.look.settings.values() if s.recipe.subword == "wordpiece" for lang in s.recipe.langs}
        train = self.look.dataset_config(ds)["train"]
        return [path("text", dataset=ds, split=train, chain="lc", lang=lang)
                for lang in self.look.dataset_langs(ds) if lang in langs]

    def vocab_is_wordpiece(self, wildcards) -> bool:
        """Whether build_vocab reads the WordPiece vocab.txt (the recipe's wp step) as it is."""
        return self.look.recipe(wildcards.paper).subword == "wordpiece"

    # ------------------------------------------------------------------ BPE and vocabularies
    def vocabulary_corpora(self, paper, ds, pair) -> list:
        """The real text a paper's systems train on for `pair` on dataset `ds` (either direction):
        every system of its enabled tables there and what they start from or back-translate with
        (mmt_repro.settings.PaperSettings.vocabulary_corpora). Codes and vocabularies are learnt
        on all of it, so every system of the paper on `ds` shares them."""
        rev = "-".join(reversed(pair.split("-")))
        train = self.look.dataset_config(ds)["train"]
        by_pair = {}
        for p, _, t in self.look.enabled:
            if p == paper and t["dataset"] == ds and t["pair"] in (pair, rev):
                by_pair.setdefault(t["pair"], []).extend(t["systems"])
        parts = []
        for table_pair, systems in by_pair.items() or [(pair, [])]:
            for part in self.look.settings[paper].vocabulary_corpora(systems, train, table_pair):
                if part not in parts:
                    parts.append(part)
        return parts

    def vocabulary_scope(self, paper, ds, pair) -> str:
        """How the codes and vocabulary of (ds, pair) differ from the paper's: the corpora of the
        recipe's ``vocabulary_corpora`` that no planned system of the paper trains on there
        ("" when none is missing, or the recipe declares none)."""
        rec = self.look.recipe(paper)
        have = {part.corpus for part in self.vocabulary_corpora(paper, ds, pair)}
        missing = [c for c in rec.vocabulary_corpora if c not in have]
        if not missing:
            return ""
        what = "BPE codes and vocabulary" if rec.subword == "bpe" else "vocabulary"
        return (f"vocabulary: {what} learnt on {', '.join(sorted(have))} only; the paper's cover "
                f"{', '.join(rec.vocabulary_corpora)} (no system here trains on {', '.join(missing)})")

    def bpe_training_text(self, wildcards) -> list:
        """The real text of every language these codes cover, in the paper's chain, from every
        corpus the paper's systems train on: both BPE sides for joint codes, else the one language."""
        paper, ds = wildcards.paper, wildcards.dataset
        rec = self.look.recipe(paper)
        langs = [lang for lang in wildcards.pair.split("-") if rec.subword_for(lang) == "bpe"]
        if wildcards.side != "joint":
            langs = [wildcards.side]
        return [
            path("text", dataset=part.dataset or ds, split=part.split, chain=rec.chain_for(lang), lang=lang)
            for part in self.vocabulary_corpora(paper, ds, wildcards.pair)
            for lang in part.langs
            if lang in langs
        ]

    def bpe_symbols(self, wildcards) -> int:
        return self.look.recipe(wildcards.paper).bpe_symbols

    def vocab_min_freq(self, wildcards) -> int:
        return self.look.recipe(wildcards.paper).min_freq

    def vocab_max_size(self, wildcards):
        return self.look.recipe(wildcards.paper).vocab_size

    def recipe_max_len(self, wildcards):
        return self.look.recipe(wildcards.paper).max_len

    def bpe_codes(self, wildcards) -> str:
        return path("bpe_codes", paper=wildcards.paper, dataset=wildcards.dataset, pair=wildcards.pair,
                    side=self.look.bpe_side(wildcards.paper, wildcards.lang))

    def train_text(self, wildcards) -> list:
        """The training text a vocabulary is built on: one side, or both for a joint vocabulary;
        for a WordPiece recipe the vocab.txt itself (the pre-trained model's rows)."""
        paper, ds, pair = wildcards.paper, wildcards.dataset, wildcards.pair
        if self.vocab_is_wordpiece(wildcards):
            return [self.wordpiece_vocab_file()]
        langs = pair.split("-") if wildcards.side == "joint" else [wildcards.side]
        return [
            (self.look.model_text(paper, ds, pair, part.split, lang) if part.dataset is None
             else self.look.corpus_text(paper, ds, pair, part.corpus, lang))
            for part in self.vocabulary_corpora(paper, ds, pair)
            for lang in part.langs
            if lang in langs
        ]

    # ------------------------------------------------------------------ the vocabulary report
    def vocab_report_targets(self) -> list:
        """results/data/vocab/{paper}.tsv of every paper with an enabled table."""
        return [path("vocab_report", paper=p) for p in sorted({p for p, _, _ in self.look.enabled})]

    def vocab_report_rows(self, wildcards) -> list:
        """For results/data/vocab/{paper}.tsv: one row per vocabulary side and corpus it serves
        (every corpus of vocabulary_corpora, plus the synthetic back-translated pairs), on each
        (dataset, pair) of the paper's enabled tables."""
        paper = wildcards.paper
        rec = self.look.recipe(paper)
        published = dict(rec.published_vocab)
        rows = []
        # the vocabularies the paper's models are trained with: a table's own (dataset, pair), or
        # a `train_on` system's one training run; captioning pairs (im-<lang>) have no source side
        runs = []
        for p, _, t in self.look.enabled:
            if p != paper:
                continue
            for system in t["systems"]:
                ds, pair = self.look.model_location(paper, system, t["dataset"], t["pair"])
                if not is_captioning(pair) and (ds, pair, t) not in runs:
                    runs.append((ds, pair, t))
        # one vocabulary per (dataset, pair), whatever the order of the tables that use it: it
        # serves the back-translated pairs of every table whose systems train on them
        groups: dict[tuple, list] = {}
        for ds, table_pair, t in runs:
            groups.setdefault((ds, self.look.canonical_pair(paper, ds, table_pair)), []).append(t)
        for (ds, pair), tables in groups.items():
            bt_pairs = list(dict.fromkeys(
                t["pair"] for t in tables
                if any(self.look.system_settings(paper, s).corpus == "backtranslated"
                       for s in self.look.settings[paper].systems_needed(t["systems"]))))
            for lang in pair.split("-"):
                base = dict(
                    dataset=ds, pair=pair, lang=lang, vocab=self.look.vocab_file(paper, ds, pair, lang),
                    published_size=published.get(lang),
                    codes=(path("bpe_codes", paper=paper, dataset=ds, pair=pair, side=self.look.bpe_side(paper, lang))
                           if rec.subword_for(lang) == "bpe" else None),
                )
                for part in self.vocabulary_corpora(paper, ds, pair):
                    if lang in part.langs:
                        own = part.dataset is None
                        rows.append(dict(
                            base, corpus=part.corpus, split=part.split,
                            text=(self.look.model_text(paper, ds, pair, part.split, lang) if own
                                  else self.look.corpus_text(paper, ds, pair, part.corpus, lang)),
                            words=path("text", dataset=part.dataset or ds, split=part.split,
                                       chain=rec.chain_for(lang), lang=lang),
                        ))
                for bt_pair in bt_pairs:
                    stem = path("backtranslation", paper=paper, dataset=ds, pair=bt_pair)
                    side = "src" if lang == bt_pair.split("-")[0] else "tgt"
                    rows.append(dict(base, corpus="backtranslated", split=f"synthetic.{side}",
                                     text=f"{stem}/synthetic.{side}"))
        return rows

    def vocab_report_inputs(self, wildcards) -> list:
        files = []
        for row in self.vocab_report_rows(wildcards):
            for key in ("vocab", "codes", "text", "words"):
                if row.get(key) and row[key] not in files:
                    files.append(row[key])
        return files
