"""The source-degradation probe (Caglayan et al., 2019; :mod:`mmt_repro.metrics.masked_words`):
which runs a table's ``masked_words`` adds, the files they read, and the inputs of its rules
(``workflow/rules/masking.smk``: list_masked_words, mask_source, apply_bpe_masked).

A table with ``masked_words: colours`` adds, per system, test set and seed, condition ``masked``
(the masked source with each sentence's own images; the only one a text-only system has) and,
for multimodal systems, ``masked_shuffled`` (the masked source with the images deranged as
condition ``shuffled`` deranges them, ``scoring.shuffle_seed``). Those runs are not the table's
``table_runs`` (protocol grids and significance tests stay on the unmasked runs); the table
reads their scores (:meth:`mmt_repro.plan.build.table.TableJobs.scores`)."""

from __future__ import annotations

from .lookup import Lookup, is_captioning
from .paths import path

MASKED = ("masked", "masked_shuffled")


def masked_runs(look: Lookup, paper: str, table: str) -> list:
    """(system, test_set, seed, condition) of the masked runs a table asks for (none without
    ``masked_words``)."""
    t = look.table(paper, table)
    if not t.get("masked_words"):
        return []
    if is_captioning(t["pair"]):
        raise ValueError(f"papers.{paper}.tables.{table}: masked_words masks the source text; {t['pair']} has none")
    runs = []
    for system in t["systems"]:
        conditions = ["masked", "masked_shuffled"] if look.multimodal(paper, system) else ["masked"]
        runs += [(system, ts, seed, c) for ts in t["test_sets"] for seed in t["seeds"] for c in conditions]
    return runs


def masked_words_of(look: Lookup, paper: str, dataset: str, pair: str) -> str:
    """The word kind (``masked_words``) the paper's tables ask for on a dataset and pair: one."""
    kinds = {t["masked_words"] for p, _, t in look.enabled
             if p == paper and t["dataset"] == dataset and t["pair"] == pair and t.get("masked_words")}
    if len(kinds) != 1:
        raise ValueError(f"{paper} on {dataset} {pair}: the masked conditions need exactly one `masked_words` among "
                         f"its tables there; found {sorted(kinds) or 'none'}")
    return kinds.pop()


def word_list_file(dataset: str, pair: str, split: str, words: str) -> str:
    return path("masked_words", dataset=dataset, pair=pair, split=split, words=words)


def masked_source(look: Lookup, paper: str, dataset: str, pair: str, split: str) -> str:
    """The masked source a run of ``paper`` reads, in the model's form: the recipe's chain with
    the colour words replaced, then the paper's BPE where it has BPE (codes of the canonical pair)."""
    src = pair.split("-")[0]
    rec = look.recipe(paper)
    words = masked_words_of(look, paper, dataset, pair)
    chain = rec.chain_for(src)
    if rec.subword_for(src) == "bpe":
        return path("masked_bpe_text", paper=paper, dataset=dataset, pair=pair, split=split, chain=chain,
                    words=words, lang=src)
    return path("masked_text", dataset=dataset, pair=pair, split=split, chain=chain, words=words, lang=src)


def unmasked_source(look: Lookup, paper: str, dataset: str, pair: str, split: str) -> str:
    """The source in the recipe's chain before masking (and before BPE): where the score job
    finds which words were masked."""
    src = pair.split("-")[0]
    return path("text", dataset=dataset, split=split, chain=look.recipe(paper).chain_for(src), lang=src)


class MaskingInputs:
    """Inputs and params of the probe's rules (masking.smk)."""

    def __init__(self, look: Lookup):
        self.look = look

    def word_list_source(self, wildcards) -> str:
        """The prepared source text of the split (words found in it are listed)."""
        return path("corpus", dataset=wildcards.dataset, split=wildcards.split, lang=wildcards.pair.split("-")[0])

    def lexicon(self, wildcards) -> str:
        """``grounded`` (the generator's colour words) on a grounded set, else ``basic_colour_terms``."""
        from ..corpora.masked_words import LEXICON_OF_SOURCE

        source = self.look.dataset_config(wildcards.dataset)["source"]
        return LEXICON_OF_SOURCE.get(source, "basic_colour_terms")

    def mask_inputs(self, wildcards) -> dict:
        return {"text": path("text", dataset=wildcards.dataset, split=wildcards.split, chain=wildcards.chain,
                             lang=wildcards.lang),
                "words": word_list_file(wildcards.dataset, wildcards.pair, wildcards.split, wildcards.words)}

    def wordpiece(self, wildcards) -> bool:
        """Whether the chain's text is WordPiece pieces (a word is masked whole)."""
        return wildcards.chain.endswith("wp")

    def bpe_inputs(self, wildcards) -> dict:
        """The masked text and the paper's BPE codes of the pair (as its runs read them)."""
        look = self.look
        pair = look.canonical_pair(wildcards.paper, wildcards.dataset, wildcards.pair)
        return {"codes": path("bpe_codes", paper=wildcards.paper, dataset=wildcards.dataset, pair=pair,
                              side=look.bpe_side(wildcards.paper, wildcards.lang)),
                "text": path("masked_text", dataset=wildcards.dataset, pair=wildcards.pair, split=wildcards.split,
                             chain=wildcards.chain, words=wildcards.words, lang=wildcards.lang)}
