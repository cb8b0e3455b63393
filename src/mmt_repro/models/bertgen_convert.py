"""BertGen's hybrid initialisation (Mitzalis et al. 2021, Figure 2): VL-BERT's and M-BERT's
released weights ported into :class:`mmt_repro.models.bertgen.BertGen` through key tables.

:func:`load_pretrained` reads VL-BERT base (``resources["vl_bert"]``) and, for ``hybrid``,
M-BERT cased (``resources["mbert"]``) (:func:`read_state_dict`: ``.safetensors`` or a
``torch.save`` file), maps every key of theirs to ours or to nothing (:data:`VLBERT_KEYS`,
:data:`MBERT_KEYS`, :func:`map_keys`), re-indexes M-BERT's word embeddings and output bias to
our vocabulary (:func:`vocab_rows`) and checks that every parameter gets at most one value
(for ``hybrid``: exactly one). Kept beside the model as Hugging Face keeps its ``convert_*``
scripts beside ``modeling_*``; it reads files and the model only.
"""

from __future__ import annotations

import fnmatch
import logging
from pathlib import Path

import torch

from .base import MMTModel, Vocabs

log = logging.getLogger(__name__)


#: VL-BERT base (``vl-bert-base-prec.model``, keys without DataParallel's ``module.``) -> ours.
#: ``source`` says where the value comes from in each initialisation: ``visual`` (VL-BERT in
#: both ``visual`` and ``hybrid``), ``vlbert`` (VL-BERT in ``hybrid`` only: BertGen's
#: ``smart_hybrid_partial_load_model_state_dict`` takes position and token-type embeddings from
#: VL-BERT), ``mbert`` (replaced by M-BERT's, Figure 2) or ``unused`` (BertGen has no such part).
VLBERT_KEYS: tuple[tuple[str, str | None, str, str], ...] = (
    ("image_feature_extractor.obj_downsample.1.weight", "obj_downsample.1.weight", "visual", "RoI + box projection"),
    ("image_feature_extractor.obj_downsample.1.bias", "obj_downsample.1.bias", "visual", ""),
    ("object_linguistic_embeddings.weight", "object_linguistic_embeddings.weight", "visual", "[IMG] word of regions"),
    ("vlbert.visual_ln_text.weight", "visual_ln_text.weight", "visual", ""),
    ("vlbert.visual_ln_text.bias", "visual_ln_text.bias", "visual", ""),
    ("vlbert.visual_ln_object.weight", "visual_ln_object.weight", "visual", ""),
    ("vlbert.visual_ln_object.bias", "visual_ln_object.bias", "visual", ""),
    ("vlbert.end_embedding.weight", "end_embedding.weight", "visual", "[END]"),
    ("vlbert.position_embeddings.weight", "position_embeddings.weight", "vlbert", "trainable (section 2.1)"),
    ("vlbert.token_type_embeddings.weight", "token_type_embeddings.weight", "vlbert", "0 text, 2 regions"),
    ("vlbert.word_embeddings.weight", None, "mbert", "English 30k WordPieces"),
    ("vlbert.embedding_LayerNorm.*", None, "mbert", ""),
    ("vlbert.encoder.layer.*", None, "mbert", "the Transformer"),
    ("vlbert.mlm_head.predictions.*", None, "mbert", "MLM head (English vocabulary)"),
    ("object_mask_visual_embedding.weight", None, "unused", "masked-region pre-training only"),
    ("object_mask_word_embedding.weight", None, "unused", "masked-region pre-training only"),
    ("aux_text_visual_embedding.weight", None, "unused", "VL-BERT's text-only corpora"),
    ("vlbert.mvrc_head.*", None, "unused", "no masked-region classification loss"),
    ("vlbert.relationsip_head.*", None, "unused", "no image-sentence matching loss"),
    ("vlbert.pooler.*", None, "unused", "no pooler (with_pooler: false)"),
)

#: M-BERT cased (Hugging Face ``bert-base-multilingual-cased``) -> ours. ``rows``: the word
#: embeddings and the output bias are re-indexed to our vocabulary (see :func:`vocab_rows`).
#: ``{i}`` stands for a layer number. LayerNorm ``gamma``/``beta`` (old TF ports) read as
#: ``weight``/``bias``.
MBERT_KEYS: tuple[tuple[str, str | None, str, str], ...] = (
    ("bert.embeddings.word_embeddings.weight", "word_embeddings.weight", "rows", "119,547 WordPieces"),
    ("bert.embeddings.LayerNorm.weight", "embedding_LayerNorm.weight", "mbert", ""),
    ("bert.embeddings.LayerNorm.bias", "embedding_LayerNorm.bias", "mbert", ""),
    ("bert.encoder.layer.*", "encoder.layer.*", "mbert", "the Transformer"),
    ("cls.predictions.transform.*", "mlm_transform.*", "mbert", "MLM head"),
    ("cls.predictions.bias", "mlm_bias", "rows", "MLM output bias"),
    ("cls.predictions.decoder.weight", None, "tied", "tied to the word embeddings"),
    ("cls.predictions.decoder.bias", None, "tied", "the same tensor as cls.predictions.bias"),
    ("bert.embeddings.position_embeddings.weight", None, "vlbert", "VL-BERT's are taken"),
    ("bert.embeddings.token_type_embeddings.weight", None, "vlbert", "VL-BERT's are taken (3 types)"),
    ("bert.embeddings.position_ids", None, "unused", "a buffer"),
    ("bert.pooler.*", None, "unused", "no pooler"),
    ("cls.seq_relationship.*", None, "unused", "no next-sentence head"),
)

#: VL-BERT sources taken by each initialisation.
INIT_SOURCES = {"visual": ("visual",), "hybrid": ("visual", "vlbert")}


def _normalise_key(key: str) -> str:
    key = key[len("module."):] if key.startswith("module.") else key
    return key.replace("LayerNorm.gamma", "LayerNorm.weight").replace("LayerNorm.beta", "LayerNorm.bias")


def map_keys(state: dict, table) -> dict[str, tuple[str | None, str]]:
    """``{their key: (our key or None, source)}`` for every key of ``state``; a key no entry of
    ``table`` matches, or that two entries match, raises ``KeyError`` naming it."""
    out = {}
    for raw in state:
        key = _normalise_key(raw)
        hits = [(pat, ours, src) for pat, ours, src, _ in table if fnmatch.fnmatchcase(key, pat)]
        if len(hits) != 1:
            raise KeyError(f"{raw}: {'no' if not hits else len(hits)} entries of the key table match it")
        pat, ours, src = hits[0]
        if ours is not None and "*" in pat:
            ours = ours.replace("*", key[len(pat.split("*")[0]):])
        out[raw] = (ours, src)
    return out


def vocab_rows(vocabs: Vocabs, n_rows: int) -> torch.Tensor:
    """For each of our target ids, its row in the pre-trained WordPiece matrix: our vocabulary is
    ``<pad> <bos> <eos> <unk>`` + the ``n_rows`` lines of vocab.txt (id ``4 + i`` = row ``i``), and
    the four specials take the rows of ``[PAD] [CLS] [STOP] [UNK]``."""
    size, res = vocabs.tgt.size, vocabs.tgt.reserved
    if size != n_rows + 4:
        raise ValueError(f"the vocabulary has {size} entries but the pre-trained word embeddings {n_rows} rows: build "
                         "the vocabulary from the same vocab.txt (Vocab.from_wordpiece: 4 specials + its lines)")
    missing = [t for t in ("[PAD]", "[CLS]", "[STOP]", "[UNK]") if t not in res]
    if missing:
        raise ValueError(f"the vocabulary lacks {missing}: use BertGen's vocab.txt")
    rows = torch.arange(-4, n_rows)
    rows[:4] = torch.tensor([res["[PAD]"] - 4, res["[CLS]"] - 4, res["[STOP]"] - 4, res["[UNK]"] - 4])
    return rows


def read_state_dict(path: Path) -> dict:
    """A checkpoint's tensors: ``.safetensors``, or a ``torch.save`` file (a state dict, or a dict
    holding it under ``state_dict``/``model``, as VL-BERT's ``.model`` files)."""
    path = Path(path)
    if path.suffix == ".safetensors":
        from safetensors.torch import load_file

        return load_file(str(path))
    obj = torch.load(path, map_location="cpu", weights_only=False)  # a manifest input (the authors' release)
    for key in ("state_dict", "model"):
        if isinstance(obj, dict) and isinstance(obj.get(key), dict):
            obj = obj[key]
    if not isinstance(obj, dict):
        raise ValueError(f"{path}: not a state dict")
    return {k: v for k, v in obj.items() if torch.is_tensor(v)}


def load_pretrained(model: MMTModel, init: str, resources: dict[str, Path]) -> dict[str, str]:
    """Initialise ``model`` (a :class:`~mmt_repro.models.bertgen.BertGen`) from VL-BERT (``resources["vl_bert"]``) and, for ``hybrid``, M-BERT
    (``resources["mbert"]``) through the key tables. Returns ``{our key: source file key}``; every
    parameter of ours gets at most one value and, for ``hybrid``, every one gets one."""
    own = model.state_dict()
    taken: dict[str, str] = {}

    def put(ours: str, theirs: str, value: torch.Tensor) -> None:
        if ours not in own:
            raise KeyError(f"key table maps {theirs} to {ours}, which the model does not have")
        if ours in taken:
            raise KeyError(f"{ours} would be set twice ({taken[ours]}, {theirs})")
        if tuple(own[ours].shape) != tuple(value.shape):
            raise ValueError(f"{theirs} has shape {tuple(value.shape)}, our {ours} {tuple(own[ours].shape)}")
        own[ours] = value.to(own[ours].dtype)
        taken[ours] = theirs

    for name in (["vl_bert"] + (["mbert"] if init == "hybrid" else [])):
        if name not in resources:
            raise ValueError(f"init={init!r} needs the resource {name!r} (declared by the system)")
    vl = read_state_dict(resources["vl_bert"])
    for theirs, (ours, src) in map_keys(vl, VLBERT_KEYS).items():
        if ours is not None and src in INIT_SOURCES[init]:
            put(ours, theirs, vl[theirs])
    if init == "hybrid":
        mb = read_state_dict(resources["mbert"])
        mapped = map_keys(mb, MBERT_KEYS)
        n_rows = next(v.shape[0] for k, v in mb.items() if _normalise_key(k) == "bert.embeddings.word_embeddings.weight")
        rows = vocab_rows(model.vocabs, n_rows)
        for theirs, (ours, src) in mapped.items():
            if ours is None:
                continue
            put(ours, theirs, mb[theirs][rows] if src == "rows" else mb[theirs])
        left = sorted(set(own) - set(taken))
        if left:
            raise KeyError(f"hybrid initialisation leaves {left} without a pre-trained value")
    model.load_state_dict(own)
    log.info("BertGen %s initialisation: %d of %d tensors from %s", init, len(taken), len(own),
             ", ".join(str(resources[k]) for k in ("vl_bert", "mbert") if k in resources))
    return taken
