"""METEOR 1.5 (Denkowski & Lavie 2014) through the official Java jar.

Every paper here that reports METEOR used Meteor 1.5 through a wrapper around its jar
(nmtpytorch, coco-caption, MultEval); we do the same and record exactly how it ran.

One call = one JVM: the jar runs in ``-stdio`` mode, every segment is sent as
``SCORE ||| ref_1 ||| ... ||| ref_k ||| hyp`` (answered by its sufficient statistics), and one
``EVAL ||| stats_1 ||| ... ||| stats_N`` line returns the segment scores and the corpus score
computed from the summed statistics, the same number as the jar's ``Final score`` in file mode
(checked on Meteor's own ``example/xray`` files). Several systems can share a JVM through
:func:`meteor_scores` (the JVM start and paraphrase-table load, several seconds, dominate).

Where the jar comes from (first hit wins): the ``jar`` argument (config key ``meteor_jar``),
``$MMT_REPRO_METEOR_JAR``, then the copy inside the PyPI package ``pycocoevalcap==1.2``. That
wheel ships ``meteor-1.5.jar`` and ``data/paraphrase-en.gz`` only, so English is the official
METEOR, while German, French, Czech, Spanish and Russian lack their paraphrase module. For
those we run the language's remaining default modules and weights with the official
``alpha beta gamma delta`` parameters and say so in the signature
(``paraphrase:missing|official:no``), never silently. The official numbers need the full
release: download :data:`METEOR_RELEASE_URL`, unpack it and set ``meteor_jar:
/path/to/meteor-1.5/meteor-1.5.jar`` (its ``data/paraphrase-<lang>.gz`` files must sit in
``data/`` next to the jar, which is where the jar looks for them).

Per-language defaults (Meteor 1.5, task ``rank``, read off the jar's own header; see
:func:`jar_defaults`): :data:`LANGUAGES`. Languages Meteor has no normaliser for (the
"language-independent" ones and ``other``) accept ``-lower`` but not ``-norm``; with
``norm=True`` they run with ``-lower`` and the signature says ``norm:lower-only``. A language
Meteor does not know (e.g. ``zh``) runs as ``other``: exact matching only, on whitespace tokens.

Score entry (the format of :func:`mmt_repro.metrics.mt.corpus_scores`)::

    {"value": 100 * final_score, "signature": "meteor-1.5|lang:en|...",
     "details": {"raw": final_score, "modules": [...], "weights": [...], ...}}
"""

from __future__ import annotations

import importlib.util
import logging
import os
import shlex
import shutil
import subprocess
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from mmt_repro.io import DataError

log = logging.getLogger(__name__)

#: The full Meteor 1.5 release (jar plus paraphrase tables for en, cz, de, es, fr, ar).
METEOR_RELEASE_URL = "http://www.cs.cmu.edu/~alavie/METEOR/download/meteor-1.5.tar.gz"
#: Source and documentation of the same release.
METEOR_SOURCE_URL = "https://github.com/cmu-mtlab/meteor"
#: Environment variable naming a ``meteor-1.5.jar`` to use instead of pycocoevalcap's copy.
JAR_ENV = "MMT_REPRO_METEOR_JAR"
#: Maximum JVM heap; the English paraphrase table needs about 1.5 GB.
JVM_HEAP = "-Xmx2G"

_FULL_RELEASE_HINT = (
    f"download the full Meteor 1.5 release ({METEOR_RELEASE_URL}), unpack it and set the config key "
    f"meteor_jar (or ${JAR_ENV}) to .../meteor-1.5/meteor-1.5.jar; the data/ folder with "
    "paraphrase-<lang>.gz must stay next to the jar"
)


@dataclass(frozen=True)
class MeteorLanguage:
    """Meteor 1.5's defaults for one language (``-l <code>``, ranking task)."""

    code: str  # what the jar is given after -l
    modules: tuple[str, ...]
    weights: tuple[float, ...]
    params: tuple[float, ...]  # alpha beta gamma delta
    normaliser: bool  # whether -norm is supported (else only -lower)


_LI_PARAMS = (0.75, 1.4, 0.7, 0.5)  # Meteor's language-independent parameters


def _li(code: str) -> MeteorLanguage:
    return MeteorLanguage(code, ("exact", "stem"), (1.0, 0.5), _LI_PARAMS, False)


#: Our language code -> Meteor 1.5 defaults. Verified against the jar by tests/unit/test_meteor.py.
LANGUAGES: dict[str, MeteorLanguage] = {
    "en": MeteorLanguage("en", ("exact", "stem", "synonym", "paraphrase"), (1.0, 0.6, 0.8, 0.6), (0.85, 0.2, 0.6, 0.75), True),
    "cs": MeteorLanguage("cz", ("exact", "paraphrase"), (1.0, 0.4), (0.95, 0.2, 0.6, 0.8), True),
    "de": MeteorLanguage("de", ("exact", "stem", "paraphrase"), (1.0, 0.8, 0.2), (0.95, 1.0, 0.55, 0.55), True),
    "es": MeteorLanguage("es", ("exact", "stem", "paraphrase"), (1.0, 0.8, 0.6), (0.65, 1.3, 0.5, 0.8), True),
    "fr": MeteorLanguage("fr", ("exact", "stem", "paraphrase"), (1.0, 0.2, 0.4), (0.9, 1.4, 0.6, 0.65), True),
    "ru": MeteorLanguage("ru", ("exact", "stem", "paraphrase"), (1.0, 0.5, 0.5), _LI_PARAMS, True),
    **{c: _li(c) for c in ("da", "fi", "hu", "it", "nl", "no", "pt", "ro", "tr")},
    "sv": _li("se"),
    "other": MeteorLanguage("other", ("exact",), (1.0,), _LI_PARAMS, False),
}
_ALIASES = {"cz": "cs", "se": "sv"}


def meteor_language(lang: str) -> tuple[str, MeteorLanguage]:
    """``(our code, defaults)`` for a language code such as ``de`` or ``en``; unknown -> ``other``."""
    key = lang.lower().replace("_", "-")
    key = _ALIASES.get(key, key)
    if key not in LANGUAGES:
        key = key.split("-")[0]
        key = _ALIASES.get(key, key)
    if key in LANGUAGES:
        return key, LANGUAGES[key]
    return lang, LANGUAGES["other"]


def find_java(java: str | os.PathLike | None = None) -> str:
    """The ``java`` executable: explicit path, ``$JAVA_HOME/bin/java``, or ``java`` on ``PATH``."""
    fix = "install a Java runtime >= 8 (apt-get install default-jre-headless, or conda install openjdk) or set JAVA_HOME"
    if java is not None:
        if not Path(java).exists():
            raise DataError(java, "Java executable does not exist", fix)
        return str(java)
    home = os.environ.get("JAVA_HOME")
    if home and (Path(home) / "bin" / "java").exists():
        return str(Path(home) / "bin" / "java")
    found = shutil.which("java")
    if found is None:
        raise DataError(None, "METEOR needs Java, but no java executable is on PATH and JAVA_HOME is not set", fix)
    return found


def bundled_jar() -> Path | None:
    """``meteor-1.5.jar`` inside an installed ``pycocoevalcap``, or None."""
    try:
        spec = importlib.util.find_spec("pycocoevalcap")
    except (ImportError, ValueError):
        return None
    if spec is None or not spec.submodule_search_locations:
        return None
    for root in spec.submodule_search_locations:
        jar = Path(root) / "meteor" / "meteor-1.5.jar"
        if jar.exists():
            return jar
    return None


def find_meteor_jar(jar: str | os.PathLike | None = None) -> tuple[Path, str]:
    """``(jar path, where it came from)``: the argument, ``$MMT_REPRO_METEOR_JAR``, or pycocoevalcap."""
    if jar is not None:
        if not Path(jar).is_file():
            raise DataError(jar, "Meteor jar does not exist", _FULL_RELEASE_HINT)
        return Path(jar), "config"
    env = os.environ.get(JAR_ENV)
    if env:
        if not Path(env).is_file():
            raise DataError(env, f"${JAR_ENV} names a Meteor jar that does not exist", _FULL_RELEASE_HINT)
        return Path(env), "env"
    found = bundled_jar()
    if found is None:
        raise DataError(
            None,
            "no Meteor 1.5 jar found (no meteor_jar given, $MMT_REPRO_METEOR_JAR unset, pycocoevalcap not installed)",
            "pip install pycocoevalcap==1.2 (official for English only), or " + _FULL_RELEASE_HINT,
        )
    return found, "pycocoevalcap"


def paraphrase_file(jar: Path, meteor_code: str) -> Path:
    """Where the jar looks for its paraphrase table: ``<jar dir>/data/paraphrase-<code>.gz``."""
    return Path(jar).resolve().parent / "data" / f"paraphrase-{meteor_code}.gz"


def _fmt(values: Sequence[float]) -> str:
    return ",".join(f"{v:g}" if float(v) != int(v) else f"{float(v):.1f}" for v in values)


def _plan(lang: str, norm: bool, jar: Path, extra_args: Sequence[str]) -> dict:
    """Which options the jar gets and what the signature says about them."""
    key, spec = meteor_language(lang)
    extra = [str(a) for a in extra_args]
    for banned in ("-stdio", "-sgml", "-r", "-q", "-l", "-t", "-norm", "-lower"):
        if banned in extra:
            raise ValueError(f"extra_args may not contain {banned}: meteor_score sets it (use lang= / norm=)")
    user_modules = extra[extra.index("-m") + 1].split() if "-m" in extra else None
    user_weights = [float(w) for w in extra[extra.index("-w") + 1].split()] if "-w" in extra else None
    para_path = Path(extra[extra.index("-a") + 1]) if "-a" in extra else paraphrase_file(jar, spec.code)
    para_ok = para_path.exists()
    args = ["-l", spec.code]
    if not norm:
        norm_tag = "no"
    elif spec.normaliser:
        args.append("-norm")
        norm_tag = "yes"
    else:
        args.append("-lower")  # the jar has no normaliser (tokeniser) for this language
        norm_tag = "lower-only"
    modules, weights = list(spec.modules), list(spec.weights)
    if user_modules is None and "paraphrase" in modules and not para_ok:
        i = modules.index("paraphrase")
        del modules[i], weights[i]
        args += ["-m", " ".join(modules), "-w", " ".join(f"{w:g}" for w in weights)]
        log.warning(
            "METEOR-%s: %s missing, scoring with modules %s only; this is NOT the official METEOR-%s (%s)",
            key, para_path, modules, key, _FULL_RELEASE_HINT,
        )
    if user_modules is not None:
        modules = user_modules
        weights = user_weights if user_weights is not None else weights[: len(modules)]
    elif user_weights is not None:
        weights = user_weights
    params = [float(p) for p in extra[extra.index("-p") + 1].split()] if "-p" in extra else list(spec.params)
    # official = the language's published defaults (modules, weights, parameters), nothing extra.
    # -norm is the scorer's text handling, a choice each paper's tool makes (nmtpytorch and
    # MultEval run without it): the signature's norm field records it apart, and the paper's
    # scoring config (meteor_norm) decides which one the paper used.
    official = (
        (tuple(modules), tuple(weights), tuple(params)) == (spec.modules, spec.weights, spec.params)
        and not extra
    )
    if "paraphrase" in spec.modules:
        para_tag = "yes" if para_ok and "paraphrase" in modules else "missing" if not para_ok else "off"
    else:
        para_tag = "n/a"
    return {
        "key": key,
        "code": spec.code,
        "args": args + extra,
        "modules": modules,
        "weights": weights,
        "params": params,
        "norm": norm_tag,
        "paraphrase": para_tag,
        "paraphrase_file": str(para_path) if "paraphrase" in spec.modules else None,
        "official": official,
        "extra": extra,
    }


def _signature(plan: dict, lang: str, nrefs: int) -> str:
    lang_tag = lang if plan["code"] == lang else f"{lang}->{plan['code']}"
    parts = [
        "meteor-1.5",
        f"lang:{lang_tag}",
        f"modules:{','.join(plan['modules'])}",
        f"weights:{_fmt(plan['weights'])}",
        f"params:{_fmt(plan['params'])}",
        f"paraphrase:{plan['paraphrase']}",
        f"norm:{plan['norm']}",
        f"nrefs:{nrefs}",
        f"official:{'yes' if plan['official'] else 'no'}",
    ]
    if plan["extra"]:
        parts.append("args:" + " ".join(plan["extra"]))
    return "|".join(parts)


def _clean(line: str) -> tuple[str, bool]:
    """One segment as the stdio protocol can carry it: no ``|||``, no line breaks."""
    new = " ".join(line.replace("|||", " ").split()) if ("|||" in line or "\n" in line or "\r" in line) else line
    return new, new != line


class _MeteorProcess:
    """The jar in ``-stdio`` mode; stderr is drained by a thread so it can never block."""

    def __init__(self, java: str, jar: Path, args: Sequence[str]):
        self.cmd = [java, JVM_HEAP, "-jar", str(jar), "-", "-", "-stdio", *args]
        self.jar = jar
        self.proc = subprocess.Popen(
            self.cmd,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            encoding="utf-8",
        )
        self._err: list[str] = []
        self._err_thread = threading.Thread(target=lambda: self._err.extend(self.proc.stderr), daemon=True)
        self._err_thread.start()

    def _fail(self, what: str) -> DataError:
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
        self._err_thread.join(timeout=5)
        err = "".join(self._err).strip()
        tail = "\n".join(err.splitlines()[-6:])
        fix = "check the Meteor installation"
        if "paraphrase" in err and "not found" in err:
            fix = _FULL_RELEASE_HINT
        elif "OutOfMemory" in err:
            fix = "give the JVM more memory (the job needs about 2 GB)"
        return DataError(self.jar, f"Meteor failed while {what} (exit {self.proc.returncode}): {tail}", fix)

    def _readline(self, what: str) -> str:
        line = self.proc.stdout.readline()
        if not line:
            raise self._fail(what)
        return line.strip()

    def stats(self, hyps: Sequence[str], refs_per_seg: Sequence[Sequence[str]]) -> list[str]:
        """Sufficient statistics per segment; lines are written by a thread while we read."""
        lines = [f"SCORE ||| {' ||| '.join(refs)} ||| {hyp}\n" for hyp, refs in zip(hyps, refs_per_seg)]
        write_error: list[BaseException] = []

        def write() -> None:
            try:
                for line in lines:
                    self.proc.stdin.write(line)
                self.proc.stdin.flush()
            except (BrokenPipeError, OSError) as err:  # the reader reports the JVM's own error
                write_error.append(err)

        writer = threading.Thread(target=write, daemon=True)
        writer.start()
        out = [self._readline(f"aligning segment {i + 1}") for i in range(len(lines))]
        writer.join()
        return out

    def evaluate(self, stats: Sequence[str]) -> tuple[list[float], float]:
        """Segment scores and the corpus score from summed statistics."""
        self.proc.stdin.write("EVAL ||| " + " ||| ".join(stats) + "\n")
        self.proc.stdin.flush()
        segs = [float(self._readline("scoring")) for _ in stats]
        return segs, float(self._readline("scoring the corpus"))

    def close(self) -> None:
        try:
            self.proc.stdin.close()
        except OSError:
            pass
        try:
            self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        if exc[0] is not None and self.proc.poll() is None:
            self.proc.kill()
        self.close()


def _refs_per_segment(hyps: Sequence[str], refs: Sequence[Sequence[str]]) -> list[list[str]]:
    if isinstance(refs, str) or (refs and isinstance(refs[0], str)):
        raise TypeError("refs must be a list of reference streams (a list of lists of lines), e.g. [ref_lines]")
    if not refs:
        raise DataError(None, "no reference stream given", "pass at least one reference file")
    for i, stream in enumerate(refs):
        if len(stream) != len(hyps):
            raise DataError(None, f"reference stream {i} has {len(stream)} lines but there are {len(hyps)} hypotheses",
                            "hypothesis and every reference must be line-parallel")
    return [list(seg) for seg in zip(*refs)]


def meteor_scores(
    systems: Mapping[str, Sequence[str]],
    refs: Sequence[Sequence[str]],
    lang: str,
    norm: bool = True,
    jar: str | os.PathLike | None = None,
    extra_args: Sequence[str] = (),
    java: str | os.PathLike | None = None,
    segments: bool = False,
) -> dict[str, dict]:
    """METEOR of several systems against the same reference streams, in one JVM.

    Returns ``{name: score entry}`` (see :func:`meteor_score`); with ``segments=True`` each
    entry's details also hold the segment scores (raw, 0-1).
    """
    if not systems:
        raise ValueError("no systems to score")
    java_exe = find_java(java)
    jar_path, origin = find_meteor_jar(jar)
    per_seg = {name: _refs_per_segment(hyps, refs) for name, hyps in systems.items()}
    plan = _plan(lang, norm, jar_path, extra_args)
    signature = _signature(plan, lang, len(refs))
    out: dict[str, dict] = {}
    with _MeteorProcess(java_exe, jar_path, plan["args"]) as proc:
        for name, hyps in systems.items():
            if len(hyps) == 0:
                raise DataError(None, f"system {name!r} has no hypotheses", "check the decode output")
            cleaned = [_clean(h) for h in hyps]
            seg_refs = [[_clean(r)[0] for r in seg] for seg in per_seg[name]]
            stats = proc.stats([c[0] for c in cleaned], seg_refs)
            seg_scores, final = proc.evaluate(stats)
            details = {
                "raw": final,
                "lang": lang,
                "meteor_lang": plan["code"],
                "modules": plan["modules"],
                "weights": plan["weights"],
                "params": plan["params"],
                "norm": plan["norm"],
                "paraphrase": plan["paraphrase"],
                "paraphrase_file": plan["paraphrase_file"],
                "official": plan["official"],
                "jar": str(jar_path),
                "jar_origin": origin,
                "command": shlex.join(proc.cmd),
                "n_cleaned_lines": sum(c[1] for c in cleaned),
            }
            if segments:
                details["segments"] = seg_scores
            out[name] = {"value": 100.0 * final, "signature": signature, "details": details}
    return out


def meteor_score(
    hyps: Sequence[str],
    refs: Sequence[Sequence[str]],
    lang: str,
    norm: bool = True,
    jar: str | os.PathLike | None = None,
    extra_args: Sequence[str] = (),
    java: str | os.PathLike | None = None,
) -> dict:
    """Corpus METEOR 1.5 of ``hyps`` against reference streams ``refs`` (each line-parallel).

    ``value`` is 100 x the jar's final score (papers print METEOR in percent); the raw score is
    ``details["raw"]``. ``lang`` is the target language (``en``, ``de``, ``fr``, ``cs``, ...);
    ``norm=True`` adds ``-norm`` (Meteor's tokeniser, punctuation normalisation and lowercasing),
    as every wrapper the papers used does. ``extra_args`` go to the jar verbatim (e.g.
    ``["-a", "paraphrase-de.gz"]``) and are recorded in the signature.
    """
    return meteor_scores({"hyp": hyps}, refs, lang, norm=norm, jar=jar, extra_args=extra_args, java=java)["hyp"]


def jar_defaults(lang: str, jar: str | os.PathLike | None = None, java: str | os.PathLike | None = None) -> dict:
    """The modules, weights and parameters the jar itself announces for ``-l <lang>``.

    Reads the header the jar prints in file mode and stops it there (before any table is
    loaded), so it costs one JVM start. Used to check :data:`LANGUAGES`.
    """
    java_exe = find_java(java)
    jar_path, _ = find_meteor_jar(jar)
    _, spec = meteor_language(lang)
    cmd = [java_exe, JVM_HEAP, "-jar", str(jar_path), os.devnull, os.devnull, "-l", spec.code]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, encoding="utf-8")
    found: dict[str, list] = {}
    try:
        for line in proc.stdout:
            label, _, value = line.partition(":")
            label = label.strip()
            if label == "Modules":
                found["modules"] = value.split()
            elif label == "Weights":
                found["weights"] = [float(v) for v in value.split()]
            elif label == "Parameters":
                found["params"] = [float(v) for v in value.split()]
                break
    finally:
        proc.kill()
        proc.wait()
    if "params" not in found:
        raise DataError(jar_path, f"could not read Meteor's header for -l {spec.code}", "check the jar")
    return found
