"""Moses-style preprocessing (lowercase, punctuation normalisation, tokenisation) via sacremoses.

The official Multi30k ``*.lc.norm.tok.*`` files were made by the Moses perl scripts at commit
3a0631a (Dec 2017)::

    zcat raw | lowercase.perl | normalize-punctuation.perl -l L | tokenizer.perl -l L

With the defaults here, :func:`preprocess_lines` reproduces those files line for line for
en, de and fr on every split (checked in ``tests/unit/test_text.py``). Three details matter:

* order: lowercase, then normalise, then tokenise (as the official script);
* tokenizer.perl's defaults: XML escaping *on* (``&apos;``, ``&quot;``, ``&amp;``...) and
  *no* aggressive hyphen splitting (``sand-dune`` stays one token, no ``@-@``);
* normalize-punctuation.perl, unlike sacremoses' default, maps a right single quote that is
  not between two ASCII letters to ``"`` (``d’œil`` -> ``d"œil``), and it sees each line *with*
  its trailing newline, so its rule "move a quote before the full stop unless at the end of
  the sentence" (de, es, fr) fires at the end of a line too (``tea."`` -> ``tea".``).
  sacremoses gets the first only with ``perl_parity=True``, which edits the class-level
  substitution lists of ``MosesPunctNormalizer`` for every instance in the process; we patch
  our own instance's list instead. We get the second by normalising ``line + "\\n"``.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable

# sacremoses is imported where a normaliser, tokeniser or detokeniser is first built: its import
# compiles ~0.2 s of regular expressions, which every job paid through the settings layer (a
# score or table job never tokenises).


# sacremoses default -> what normalize-punctuation.perl does (sacremoses' perl_parity changes)
_PERL_PARITY = {
    ("’", "'"): ("’", '"'),
    ("\u00a0«\u00a0", '"'): ("\u00a0«\u00a0", ' "'),
    ("\u00a0»\u00a0", '"'): ("\u00a0»\u00a0", '" '),
}


@functools.lru_cache(maxsize=None)
def _normalizer(lang: str):
    from sacremoses import MosesPunctNormalizer

    norm = MosesPunctNormalizer(lang=lang)
    # instance-level copy: leaves the class lists (shared by every other normalizer) alone
    norm.substitutions = [_PERL_PARITY.get(tuple(sub), tuple(sub)) for sub in norm.substitutions]
    return norm


@functools.lru_cache(maxsize=None)
def _tokenizer(lang: str):
    from sacremoses import MosesTokenizer

    return MosesTokenizer(lang=lang)


@functools.lru_cache(maxsize=None)
def _detokenizer(lang: str):
    from sacremoses import MosesDetokenizer

    return MosesDetokenizer(lang=lang)


def preprocess_lines(
    lines: Iterable[str],
    lang: str,
    lowercase: bool = False,
    normalize: bool = True,
    tokenize: bool = True,
) -> list[str]:
    """Lowercase (optional), punctuation-normalise and Moses-tokenise each line.

    Output matches the Moses perl pipeline used for the official Multi30k files; tokens are
    XML-escaped as tokenizer.perl does by default. Lines must not contain newlines.
    """
    norm = _normalizer(lang) if normalize else None
    tok = _tokenizer(lang) if tokenize else None
    out: list[str] = []
    for i, line in enumerate(lines, start=1):
        if "\n" in line or "\r" in line:
            raise ValueError(f"line {i} contains a line break; pass one sentence per item")
        if lowercase:
            line = line.lower()
        if norm is not None:
            # the perl script sees the newline; some rules depend on it (see module docstring)
            line = norm.normalize(line + "\n")
        if tok is not None:
            line = tok.tokenize(line, aggressive_dash_splits=False, escape=True, return_str=True)
        out.append(line)
    return out


def detokenize_lines(lines: Iterable[str], lang: str) -> list[str]:
    """Moses-detokenise whitespace-tokenised lines (and undo the XML escaping)."""
    detok = _detokenizer(lang)
    return [detok.detokenize(line.split(), return_str=True, unescape=True) for line in lines]
