"""A trained system's text recipe: raw text to the model's input, the model's output back to text.

The workflow's text stage prepares a system's text in steps named in its file names
(:mod:`mmt_repro.text.recipes`): a chain (``lc``, ``norm``, ``tok``, ``wp``, ``char``,
``jieba``), then the paper's BPE where the recipe has it. :func:`recipe_from_record` reads that
processing off the files a training job record names (``val_src`` ->
``results/text/doubly_attentive/grounded.en-de/val.norm.tok.bpe.en``: chain ``norm.tok``, BPE
with the ``bpe.joint.codes`` beside it), so an exported system carries exactly what its model
was trained on, overrides of the run's config included. :class:`SystemRecipe` is the
``recipe.json`` of an exported folder (``python -m mmt_repro export``):

* :meth:`SystemRecipe.prepare` applies one side's recipe to raw sentences:
  :func:`~mmt_repro.text.recipes.apply_chain` (sacremoses with the Moses perl scripts'
  settings: XML escaping on, no aggressive hyphen splitting, ``normalize-punctuation.perl``
  parity; BERT's WordPiece tokeniser on a ``vocab.txt``; Chinese characters), then subword-nmt's
  BPE with the folder's codes. It gives the workflow's prepared line for a raw sentence.
* :meth:`SystemRecipe.restore` turns the model's output back into plain text: BPE (``@@``) or
  WordPieces (``##``) merged, then sacremoses' detokeniser for the target language (Moses
  escapes such as ``&apos;`` undone, punctuation attached); Chinese characters are joined
  without spaces. Casing stays the recipe's: a lowercasing recipe gives lowercase output.

WordPiece output has every punctuation mark split off (BERT's basic tokeniser), also the
apostrophe inside a word (``dog ' s``); :meth:`SystemRecipe.restore` re-attaches an apostrophe
between two letters before the Moses detokeniser, which knows no such split.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from dataclasses import asdict, dataclass
from pathlib import Path

from mmt_repro.io import DataError, read_lines
from mmt_repro.text.bpe import apply_bpe_lines
from mmt_repro.text.moses import detokenize_lines
from mmt_repro.text.recipes import STEPS, apply_chain, merge_subwords, parse_chain, recipe_for
from mmt_repro.text.vocab import Vocab

#: The recipe file of an exported folder.
RECIPE_FILE = "recipe.json"
FORMAT = "mmt_repro.text_recipe"
FORMAT_VERSION = 1
#: How ``tok`` runs (:func:`mmt_repro.text.moses.preprocess_lines`), written into the recipe for
#: the reader: a recipe that states other settings is refused.
MOSES_SETTINGS = {"escape": True, "aggressive_dash_splits": False, "normalize_punctuation": "perl parity"}
#: The job record's inputs that name each side's prepared text, best first (the validation
#: split is always the recipe's own text; a training input may be back-translated or pre-training text).
_SIDE_INPUTS = {"src": ("val_src", "test_src", "train_src"), "tgt": ("val_tgt", "val_ref", "train_tgt")}
_APOSTROPHE = re.compile(r"(?<=\w) ' (?=\w)")


@dataclass(frozen=True)
class SideRecipe:
    """One language's processing: ``chain`` (dot-joined steps), ``subword`` (``bpe``,
    ``wordpiece``, ``char`` or ``none``) and the files it reads, named inside the exported folder."""

    lang: str
    chain: str
    subword: str = "none"
    bpe_codes: str | None = None
    wordpiece_vocab: str | None = None

    def __post_init__(self) -> None:
        steps = parse_chain(self.chain, self.lang)
        if (self.subword == "bpe") != (self.bpe_codes is not None):
            raise ValueError(f"{self.lang}: bpe_codes must be given exactly when subword is 'bpe'")
        if ("wp" in steps) != (self.wordpiece_vocab is not None):
            raise ValueError(f"{self.lang}: wordpiece_vocab must be given exactly when the chain has the wp step")
        want = "wordpiece" if "wp" in steps else "char" if "char" in steps else None
        if want is not None and self.subword != want:
            raise ValueError(f"{self.lang}: chain {self.chain!r} segments into {want}s, "
                             f"but subword is {self.subword!r}")

    @property
    def steps(self) -> tuple[str, ...]:
        return parse_chain(self.chain, self.lang)


@dataclass(frozen=True)
class SystemRecipe:
    """The text recipe of a trained system: its pair (``im-<lang>`` for captioning, no source)
    and the processing of each side; files are relative to ``folder`` (the exported folder)."""

    paper: str
    pair: str
    src: SideRecipe | None
    tgt: SideRecipe
    folder: Path | None = None

    def side(self, which: str) -> SideRecipe:
        side = self.src if which == "src" else self.tgt if which == "tgt" else None
        if side is None:
            raise ValueError(f"the {self.pair} system has no {which!r} text")
        return side

    def prepare(self, lines: Iterable[str], which: str = "src") -> list[str]:
        """Raw sentences (one per item) in the model's form on side ``which``: the workflow's
        prepared line for each (chain, then BPE)."""
        side = self.side(which)
        lines = [line.strip() for line in lines]
        wp = self._file(side.wordpiece_vocab) if side.wordpiece_vocab else None
        out = apply_chain(lines, side.chain, side.lang, wordpiece_vocab=wp)
        if side.subword == "bpe":
            out = apply_bpe_lines(self._file(side.bpe_codes), out)
        return out

    def restore(self, lines: Iterable[str], which: str = "tgt") -> list[str]:
        """Model output (tokens joined by spaces) as plain text: subwords merged, Moses
        escapes undone and punctuation attached for ``tok`` and ``wp`` chains, Chinese
        characters joined; the recipe's casing."""
        side = self.side(which)
        steps = side.steps
        out = merge_subwords(list(lines), "none" if side.subword == "char" else side.subword)
        if "wp" in steps:
            out = [_APOSTROPHE.sub("'", line) for line in out]
        if "tok" in steps or "wp" in steps:
            return detokenize_lines(out, side.lang)
        if "char" in steps or "jieba" in steps:
            return ["".join(line.split()) for line in out]
        return [" ".join(line.split()) for line in out]

    def _file(self, name: str) -> Path:
        if self.folder is None:
            raise ValueError("the recipe's files need its folder (SystemRecipe.load)")
        path = self.folder / name
        if not path.is_file():
            raise DataError(path, "missing from the exported system's folder", "export the system again")
        return path

    # --- the recipe.json of an exported folder -------------------------------------------------

    def to_dict(self) -> dict:
        def side(s: SideRecipe | None) -> dict | None:
            if s is None:
                return None
            d = {k: v for k, v in asdict(s).items() if v is not None}
            d["steps"] = {step: STEPS[step] for step in s.steps}
            if "tok" in s.steps:
                d["moses"] = dict(MOSES_SETTINGS, lang=s.lang)
            return d

        restore = {"merge": self.tgt.subword,
                   "detokenize": (f"sacremoses MosesDetokenizer(lang={self.tgt.lang!r}), escapes undone"
                                  if {"tok", "wp"} & set(self.tgt.steps) else
                                  "characters joined without spaces" if {"char", "jieba"} & set(self.tgt.steps)
                                  else "none"),
                   "casing": "lowercase" if "lc" in self.tgt.steps else "as the model writes it"}
        return {"format": FORMAT, "version": FORMAT_VERSION, "paper": self.paper, "pair": self.pair,
                "src": side(self.src), "tgt": side(self.tgt), "restore": restore}

    def save(self, folder: Path) -> Path:
        from mmt_repro.io import atomic_write

        path = Path(folder) / RECIPE_FILE
        with atomic_write(path) as fh:
            json.dump(self.to_dict(), fh, indent=1, ensure_ascii=False)
            fh.write("\n")
        return path

    @classmethod
    def load(cls, folder: Path) -> SystemRecipe:
        """The recipe of an exported folder; :class:`DataError` naming the file otherwise."""
        folder = Path(folder)
        path = folder / RECIPE_FILE
        fix = "export the system again with `python -m mmt_repro export <checkpoint> <folder>`"
        if not path.is_file():
            raise DataError(path, "the exported folder has no text recipe", fix)
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (UnicodeDecodeError, json.JSONDecodeError) as err:
            raise DataError(path, f"not valid UTF-8 JSON ({err})", fix) from err
        if not isinstance(data, dict) or data.get("format") != FORMAT or data.get("version") != FORMAT_VERSION:
            raise DataError(path, f"not a text recipe of format {FORMAT} version {FORMAT_VERSION}", fix)
        try:
            sides = {}
            for which in ("src", "tgt"):
                d = data.get(which)
                if d is not None:
                    if "moses" in d and {k: d["moses"].get(k) for k in MOSES_SETTINGS} != MOSES_SETTINGS:
                        raise ValueError(f"{which} asks for Moses settings {d['moses']}; this version applies "
                                         f"{MOSES_SETTINGS}")
                    d = {k: d.get(k) for k in ("lang", "chain", "subword", "bpe_codes", "wordpiece_vocab")}
                    sides[which] = SideRecipe(**{k: v for k, v in d.items() if v is not None})
            return cls(paper=data["paper"], pair=data["pair"], src=sides.get("src"), tgt=sides["tgt"], folder=folder)
        except (KeyError, TypeError, ValueError) as err:
            raise DataError(path, f"not a usable text recipe ({err})", fix) from err


# --- reading a trained system's recipe off its run ----------------------------------------------


def run_root(record: Path, job: dict) -> Path:
    """The run folder a job record's relative paths start from: the record's own location minus
    the path the record gives itself (``results/models/.../x.job.json``)."""
    record = Path(record).resolve()
    own = Path(job.get("record") or "")
    if own.parts and not own.is_absolute() and record.parts[-len(own.parts):] == own.parts:
        return Path(*record.parts[: -len(own.parts)]) if len(record.parts) > len(own.parts) else Path("/")
    return Path.cwd()


def parse_prepared_name(path: str | Path, lang: str) -> tuple[str, str, bool] | None:
    """``(split, chain, bpe)`` of a prepared text file name (``val.lc.norm.tok.bpe.en`` ->
    ``("val", "lc.norm.tok", True)``), or None when the name is not of that form."""
    parts = Path(path).name.split(".")
    if len(parts) < 3 or parts[-1] != lang:
        return None
    parts = parts[:-1]
    bpe = parts[-1] == "bpe"
    if bpe:
        parts = parts[:-1]
    steps = []
    while len(parts) > 1 and parts[-1] in STEPS:
        steps.insert(0, parts.pop())
    if not steps:
        return None
    return ".".join(parts), ".".join(steps), bpe


def _prepared_file(inputs: dict, which: str, lang: str) -> Path | None:
    for key in _SIDE_INPUTS[which]:
        value = inputs.get(key)
        for candidate in (value if isinstance(value, list) else [value]):
            if candidate and parse_prepared_name(candidate, lang) is not None:
                return Path(candidate)
    return None


def recipe_from_record(record: Path) -> tuple[SystemRecipe, dict[str, Path | str], dict[str, tuple[Path, Path]]]:
    """The text recipe of the system a training job record describes, read off the prepared
    files it names. Returns the recipe (files named as in the exported folder), the files to
    write there (name -> the path in the run to copy, or the text itself) and, per side, a raw
    corpus file and the workflow's prepared file of the same split (for :func:`check_recipe`),
    where the run has both."""
    record = Path(record)
    try:
        job = json.loads(record.read_text(encoding="utf-8"))["job"]
        paper, pair, dataset, inputs = job["paper"], job["pair"], job["dataset"], job["inputs"]
    except (OSError, ValueError, KeyError, TypeError) as err:
        raise DataError(record, f"not a readable training job record ({err})",
                        "give the <stem>.job.json written beside the checkpoint by the training") from err
    root = run_root(record, job)
    src_lang, tgt_lang = pair.split("-")
    files: dict[str, Path | str] = {}
    checks: dict[str, tuple[Path, Path]] = {}
    sides: dict[str, SideRecipe | None] = {"src": None}
    for which, lang in (("src", src_lang), ("tgt", tgt_lang)):
        if lang == "im":
            continue
        rel = _prepared_file(inputs, which, lang)
        if rel is None:
            raise DataError(record,
                            f"names no prepared {which} text of {lang!r} (inputs {', '.join(_SIDE_INPUTS[which])})",
                            "export a system trained by the workflow, whose job record names its text")
        split, chain, bpe = parse_prepared_name(rel, lang)
        prepared = root / rel
        steps = parse_chain(chain, lang)
        side = {"lang": lang, "chain": chain,
                "subword": "bpe" if bpe else "wordpiece" if "wp" in steps else "char" if "char" in steps else "none"}
        if bpe:
            codes = _codes_beside(prepared, paper, lang)
            side["bpe_codes"] = codes.name
            files[codes.name] = codes
        if "wp" in steps:
            vocab_rel = inputs.get(f"{which}_vocab")
            if not vocab_rel:
                raise DataError(record, f"names no {which}_vocab, which holds the WordPiece pieces",
                                "export a system trained by the workflow")
            side["wordpiece_vocab"] = "wordpiece_vocab.txt"
            files["wordpiece_vocab.txt"] = _wordpiece_txt(root / vocab_rel)
        sides[which] = SideRecipe(**side)
        raw = root / "results" / "data" / dataset / f"{split}.{lang}"
        if raw.is_file() and prepared.is_file():
            checks[which] = (raw, prepared)
    return SystemRecipe(paper=paper, pair=pair, src=sides["src"], tgt=sides["tgt"]), files, checks


def _codes_beside(prepared: Path, paper: str, lang: str) -> Path:
    """The BPE codes of a BPE-segmented file: ``bpe.joint.codes`` or ``bpe.<lang>.codes`` in its
    folder (where both exist, the paper's recipe says which: ``joint_bpe``)."""
    found = [c for c in (prepared.with_name("bpe.joint.codes"), prepared.with_name(f"bpe.{lang}.codes")) if c.is_file()]
    if not found:
        raise DataError(prepared.parent,
                        f"holds no BPE codes (bpe.joint.codes or bpe.{lang}.codes) for {prepared.name}",
                        "export from the run folder that trained the system (rule learn_bpe writes the codes)")
    if len(found) == 2:
        found = found[:1] if recipe_for(paper).joint_bpe else found[1:]
    return found[0]


def _wordpiece_txt(vocab_json: Path) -> str:
    """The text of the WordPiece ``vocab.txt`` a WordPiece vocabulary was built from: its tokens
    after our four specials, one a line (:meth:`Vocab.from_wordpiece` reads it back)."""
    vocab = Vocab.load(vocab_json)
    pieces = vocab.tokens[len(Vocab.SPECIALS):]
    if "[UNK]" not in pieces:
        raise DataError(vocab_json, "is not a WordPiece vocabulary (no [UNK] piece)",
                        "export a system whose recipe has the wp step with the vocabulary it was trained with")
    return "".join(f"{p}\n" for p in pieces)


def check_recipe(recipe: SystemRecipe, checks: dict[str, tuple[Path, Path]], n: int = 50) -> dict[str, int]:
    """Apply ``recipe`` to the first ``n`` sentences of each side's raw corpus and compare with the
    workflow's prepared file of the same split, line by line; :class:`DataError` at the first
    line that differs. Returns the lines compared per side."""
    compared = {}
    for which, (raw, prepared) in checks.items():
        raw_lines, want = read_lines(raw)[:n], read_lines(prepared)[:n]
        if len(raw_lines) != len(want):
            continue  # another split layout (e.g. a filtered training split): nothing to compare
        got = recipe.prepare(raw_lines, which)
        for i, (a, b) in enumerate(zip(got, want), start=1):
            if a != b:
                raise DataError(prepared, f"line {i} is {b!r}, but the exported recipe makes {a!r} of {raw}",
                                "re-run the workflow's text stage for this system, then export again")
        compared[which] = len(want)
    return compared
